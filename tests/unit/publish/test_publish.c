// SPDX-License-Identifier: MIT
/*
 * Unit tests of the agent's publishing targets on the fixture publication: the Prometheus textfile (names, units,
 * escaping, one HELP/TYPE per family, the calibration state set), the NFD feature file (expiry directive first and
 * right, every label within Kubernetes' limits checked by an independent regex, long and odd device names, the
 * 64 KiB limit), the stacks' files (UCX section filter, escaping, line length, splicing into an operator's file;
 * libfabric's 0; NCCL's inline switch; what is left at the stack's default and why), and the writes themselves
 * (atomic, no dot file left, a directory or a bad file never replaced, dry run writes nothing).
 */
#include "pub_fixture.h"
#include "publish_util.h"

#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

static char *render_prom(const struct pub_fixture *f)
{
	struct rt_buf b = { 0 };

	rt_publish_prom_render(&f->pub, &b);
	assert_false(b.oom);
	return b.p;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Every non-comment line is `name{labels} value` or `name value` with name in the given family set once declared. */
static void test_prom_format(void **state)
{
	struct pub_fixture f;
	char *t, *save = NULL, *line;
	regex_t sample;

	(void)state;
	pub_fixture_init(&f);
	t = render_prom(&f);
	/* a metric name, optional labels with escaped values, a number */
	assert_int_equal(
		regcomp(&sample,
			"^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-z_]+=\"([^\"\\\\]|\\\\.)*\",?)*\\})? -?[0-9.]+(e[0-9]+)?$",
			REG_EXTENDED | REG_NOSUB),
		0);
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7))
			continue;
		if (regexec(&sample, line, 0, NULL, 0))
			fail_msg("not a sample line: %s", line);
	}
	regfree(&sample);
	free(t);
}

static void test_prom_content(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	t = render_prom(&f);
	/* each family declared once */
	assert_int_equal(count(t, "# TYPE rtune_inline_threshold_bytes gauge\n"), 1);
	assert_int_equal(count(t, "# TYPE "), count(t, "# HELP "));
	assert_int_equal(count(t, "# TYPE "), 22);
	/* identity as an _info gauge */
	assert_non_null(strstr(t,
			       "rtune_node_info{hostname=\"node-07\",machine_id=\"0123456789abcdef0123456789abcdef\","
			       "hw_signature=\"fnv1a64:9f86d081884c7d65\",rtune_version=\"0.1.0\"} 1\n"));
	assert_non_null(strstr(t, "rtune_publication_timestamp_seconds 1764590400\n"));
	/* per entry, base units, the app label */
	assert_non_null(strstr(t, "rtune_inline_threshold_bytes{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
				  "qp_type=\"rc\",app=\"\"} 256\n"));
	assert_non_null(strstr(t, "rtune_inline_threshold_bytes{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
				  "qp_type=\"rc\",app=\"redis-rdma\"} 512\n"));
	assert_non_null(strstr(t, "rtune_signal_interval{device=\"mlx5_0\",port=\"1\",opcode=\"write\",qp_type=\"rc\","
				  "app=\"\"} 8\n"));
	assert_non_null(strstr(t, "rtune_profile_age_seconds{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
				  "qp_type=\"rc\",app=\"\"} 3600\n"));
	assert_non_null(strstr(t, "rtune_profile_measured_timestamp_seconds{device=\"mlx5_0\",port=\"1\","
				  "opcode=\"send\",qp_type=\"rc\",app=\"\"} 1764586800\n"));
	/* escaping: rxe"0\x */
	assert_non_null(strstr(t, "rtune_profile_confidence{device=\"rxe\\\"0\\\\x\",port=\"1\",opcode=\"send\","
				  "qp_type=\"rc\",app=\"\"} 0\n"));
	/* the device's class, once per port though the port has three entries */
	assert_int_equal(count(t, "rtune_device_info{device=\"mlx5_0\""), 1);
	assert_non_null(strstr(t, "hw_class=\"mellanox:mt4123:20.31.1014\",numa_node=\"0\"} 1\n"));
	/* the state set: exactly one 1 per port */
	assert_non_null(strstr(t, "rtune_last_calibration_result{device=\"mlx5_0\",port=\"1\",result=\"ok\"} 1\n"));
	assert_non_null(strstr(t, "rtune_last_calibration_result{device=\"mlx5_0\",port=\"1\",result=\"failed\"} 0\n"));
	assert_non_null(strstr(t, "result=\"failed\"} 1\n"));
	assert_int_equal(count(t, "rtune_last_calibration_result{"), 10);
	assert_int_equal(count(t, "result=\"busy\"} 0\n"), 2);
	assert_non_null(strstr(t, "rtune_last_calibration_duration_seconds{device=\"mlx5_0\",port=\"1\"} 18.250\n"));
	/* verdicts and sources */
	assert_non_null(strstr(t, "signal_verdict=\"pinned\",inline_source=\"measured\",signal_source=\"pinned\","
				  "change=\"first\""));
	assert_non_null(strstr(t, "signal_verdict=\"indifferent\""));
	free(t);
}

/* The published document's load bands and skips, through the writer `rtune export --format prometheus` uses too: a
 * gauge per band (no confidence sample where the document has none), an info series per skip; none for "{}". */
static void test_prom_bands(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	t = render_prom(&f);
	assert_non_null(strstr(t,
			       "rtune_band_signal_interval{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
			       "qp_type=\"rc\",app=\"\",band=\"large\",post_list=\"1\",qps=\"1\",threads=\"1\"} 64\n"));
	assert_non_null(
		strstr(t, "rtune_band_signal_interval{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
			  "qp_type=\"rc\",app=\"\",band=\"post_list\",post_list=\"8\",qps=\"1\",threads=\"1\"} 32\n"));
	assert_non_null(strstr(t,
			       "rtune_band_confidence{device=\"mlx5_0\",port=\"1\",opcode=\"send\","
			       "qp_type=\"rc\",app=\"\",band=\"large\",post_list=\"1\",qps=\"1\",threads=\"1\"} 2\n"));
	assert_int_equal(count(t, "rtune_band_confidence{"), 1);
	assert_non_null(strstr(
		t,
		"band=\"large\",post_list=\"1\",qps=\"1\",threads=\"1\",msg_bytes_lo=\"4096\",msg_bytes_hi=\"65536\","
		"verdict=\"indifferent\"} 1\n"));
	assert_non_null(strstr(t, "rtune_skipped_measurement_info{device=\"mlx5_0\",port=\"1\",what=\"cq moderation\","
				  "kind=\"cq_moderation\",opcode=\"\",qp_type=\"\",reason=\"ibv_modify_cq refused it\","
				  "run_id=\"\"} 1\n"));
	free(t);
	f.pub.profile_json = "{}";
	f.pub.profile_json_len = 2;
	t = render_prom(&f);
	assert_int_equal(count(t, "rtune_band_"), 6); /* HELP and TYPE of three families, no sample */
	assert_null(strstr(t, "rtune_skipped_measurement_info{"));
	free(t);
}

/* A port the agent never calibrated has its result "none" and no duration or timestamp (0 would read as 1970). */
static void test_prom_never_calibrated(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	for (size_t i = 0; i < f.pub.n_decisions; i++)
		f.d[i].last_cal_result = RT_AGENT_CAL_NONE;
	t = render_prom(&f);
	assert_non_null(strstr(t, "rtune_last_calibration_result{device=\"mlx5_0\",port=\"1\",result=\"none\"} 1\n"));
	assert_null(strstr(t, "rtune_last_calibration_duration_seconds{"));
	assert_null(strstr(t, "rtune_last_calibration_timestamp_seconds{"));
	free(t);
	assert_string_equal(rt_agent_cal_result_name(RT_AGENT_CAL_INTERRUPTED), "interrupted");
	assert_string_equal(rt_agent_cal_result_name((enum rt_agent_cal_result)99), "unknown");
}

/* ---- NFD ------------------------------------------------------------------------------------------------------- */

static char *render_nfd(const struct pub_fixture *f, const char *prefix, uint32_t expiry, int want_rc)
{
	struct rt_error err = { 0 };
	struct rt_buf b = { 0 };

	assert_int_equal(rt_publish_nfd_render(&f->pub, prefix, expiry, &b, &err), want_rc);
	assert_false(b.oom);
	if (want_rc) {
		assert_true(err.text[0] != '\0');
		free(b.p);
		return NULL;
	}
	return b.p;
}

/*
 * Kubernetes' label rules, written independently of publish_nfd.c (k8s.io/apimachinery/pkg/util/validation:
 * IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain), plus NFD's namespace rule (pkg/apis/nfd/validate).
 */
static void check_label(const char *line)
{
	regex_t name_re, value_re, prefix_re;
	const char *slash = strchr(line, '/'), *eq = strchr(line, '=');
	char prefix[300], name[300], value[300];

	assert_non_null(slash);
	assert_non_null(eq);
	assert_true(slash < eq);
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - line), line);
	snprintf(name, sizeof(name), "%.*s", (int)(eq - slash - 1), slash + 1);
	snprintf(value, sizeof(value), "%s", eq + 1);
	assert_int_equal(regcomp(&name_re, "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regcomp(&value_re, "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", REG_EXTENDED | REG_NOSUB),
			 0);
	assert_int_equal(regcomp(&prefix_re, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
				 REG_EXTENDED | REG_NOSUB),
			 0);
	if (strlen(name) > 63 || regexec(&name_re, name, 0, NULL, 0))
		fail_msg("label name '%s' is not a Kubernetes name", name);
	if (strlen(value) > 63 || regexec(&value_re, value, 0, NULL, 0))
		fail_msg("label value '%s' is not a Kubernetes label value", value);
	if (strlen(prefix) > 253 || regexec(&prefix_re, prefix, 0, NULL, 0))
		fail_msg("label prefix '%s' is not a DNS subdomain", prefix);
	/* NFD refuses *.kubernetes.io namespaces other than (sub-namespaces of) feature.node.kubernetes.io */
	if (strstr(prefix, "kubernetes.io"))
		assert_non_null(strstr(prefix, "feature.node.kubernetes.io"));
	regfree(&name_re);
	regfree(&value_re);
	regfree(&prefix_re);
}

static void check_nfd_file(char *t)
{
	char *save = NULL, *line;
	int n = 0;

	assert_true(strlen(t) <= RT_PUBLISH_NFD_MAX_BYTES);
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#') {
			/* a comment must not look like an NFD directive, except the expiry */
			if (!strncmp(line, "# +", 3))
				assert_int_equal(strncmp(line, "# +expiry-time=", 15), 0);
			assert_true(n == 0 || strncmp(line, "# +", 3));
			continue;
		}
		check_label(line);
		n++;
	}
	assert_true(n > 0);
}

static void test_nfd_file(void **state)
{
	struct pub_fixture f;
	struct tm tm = { 0 };
	char *t, *end;

	(void)state;
	pub_fixture_init(&f);
	t = render_nfd(&f, NULL, 0, 0);
	/* the directive applies to the lines after it: it is the first line; RFC 3339, default expiry one day */
	assert_int_equal(strncmp(t, "# +expiry-time=2025-12-02T12:00:00Z\n", 36), 0);
	end = strptime(t + 15, "%Y-%m-%dT%H:%M:%SZ", &tm);
	assert_non_null(end);
	assert_int_equal((int64_t)timegm(&tm), f.pub.generated_at + RT_PUBLISH_NFD_EXPIRY_S);
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/mlx5_0-p1.rc-send.inline-bytes=256\n"));
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/mlx5_0-p1.rc-send.signal-interval=16\n"));
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/mlx5_0-p1.rc-write.signal-verdict=pinned\n"));
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/mlx5_0-p1.rc-send.confidence=high\n"));
	/* the node's lowest confidence, application entries are not labels */
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/confidence=low\n"));
	assert_non_null(strstr(t, "\nrtune.feature.node.kubernetes.io/profile=true\n"));
	assert_null(strstr(t, "=512\n"));
	check_nfd_file(t);
	free(t);
	t = render_nfd(&f, NULL, 3600, 0);
	assert_int_equal(strncmp(t, "# +expiry-time=2025-12-01T13:00:00Z\n", 36), 0);
	free(t);
}

/* Device names that are too long or hold characters labels cannot: shortened with a hash, distinct, valid. */
static void test_nfd_odd_devices(void **state)
{
	struct pub_fixture f;
	char *t, *a, *b;

	(void)state;
	pub_fixture_init(&f);
	snprintf(f.d[0].device, sizeof(f.d[0].device), "%s", "a_very_long_rdma_device_name_that_goes_on_and_on_0");
	snprintf(f.d[1].device, sizeof(f.d[1].device), "%s", "a_very_long_rdma_device_name_that_goes_on_and_on_1");
	f.d[1].opcode = RT_PROFILE_OP_SEND;
	snprintf(f.d[3].device, sizeof(f.d[3].device), "%s", "_weird dev!");
	t = render_nfd(&f, NULL, 0, 0);
	/* two different devices, two different label names */
	a = strstr(t, "inline-bytes=256\n");
	b = strstr(t, "inline-bytes=128\n");
	assert_non_null(a);
	assert_non_null(b);
	while (a > t && a[-1] != '\n')
		a--;
	while (b > t && b[-1] != '\n')
		b--;
	assert_int_not_equal(strncmp(a, b, (size_t)(strchr(a, '=') - a)), 0);
	check_nfd_file(t);
	free(t);
}

static void test_nfd_limits(void **state)
{
	struct pub_fixture f;
	struct rt_agent_decision many[400];

	(void)state;
	pub_fixture_init(&f);
	/* Kubernetes would refuse these prefixes */
	assert_null(render_nfd(&f, "Rtune.example.com", 0, EINVAL));
	assert_null(render_nfd(&f, "rtune..example.com", 0, EINVAL));
	assert_null(render_nfd(&f, "-rtune.example.com", 0, EINVAL));
	free(render_nfd(&f, "rtune.example.com", 0, 0));
	/* NFD ignores a file over 64 KiB entirely: refused rather than published */
	for (size_t i = 0; i < 400; i++) {
		many[i] = f.d[0];
		snprintf(many[i].device, sizeof(many[i].device), "mlx5_%zu", i);
	}
	f.pub.decisions = many;
	f.pub.n_decisions = 400;
	assert_null(render_nfd(&f, NULL, 0, EFBIG));
}

/* ---- stacks ---------------------------------------------------------------------------------------------------- */

static char *render_ucx(const struct pub_fixture *f, const char *product, const char *existing, int want_rc)
{
	struct rt_publish_host h = { 0 };
	struct rt_buf b = { 0 };

	snprintf(h.dmi_product_name, sizeof(h.dmi_product_name), "%s", product);
	assert_int_equal(rt_publish_ucx_render(&f->pub, &h, existing, existing ? strlen(existing) : 0, &b), want_rc);
	assert_false(b.oom);
	if (want_rc) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* UCX reads at most 199 characters a line (INI_MAX_LINE 200, src/ucs/config/ini.h). */
static void check_line_lengths(const char *t)
{
	for (const char *p = t; *p;) {
		const char *nl = strchr(p, '\n');

		assert_non_null(nl);
		assert_true(nl - p < 199);
		p = nl + 1;
	}
}

static void test_ucx_section(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	t = render_ucx(&f, "PowerEdge R750", NULL, 0);
	assert_int_equal(strncmp(t, RT_PUBLISH_BEGIN "\n", strlen(RT_PUBLISH_BEGIN) + 1), 0);
	/* the filter first in the section: UCX skips the rest of a section from a filter line that does not match */
	assert_non_null(strstr(t, "\n[rtune-agent]\nProduct name=PowerEdge R750\n"));
	/* max_inline_data (256) and signal interval 16 -> moderation 15, from mlx5_0's send entry */
	assert_non_null(strstr(t, "\nUCX_RC_TX_MIN_INLINE=256\n"));
	assert_non_null(strstr(t, "\nUCX_RC_TX_CQ_MODERATION=15\n"));
	assert_non_null(strstr(t, "\n" RT_PUBLISH_END "\n"));
	assert_int_equal(strcmp(t + strlen(t) - strlen(RT_PUBLISH_END) - 1, RT_PUBLISH_END "\n"), 0);
	check_line_lengths(t);
	free(t);
	/* glob characters escaped, ';' (an inline comment) matched by '?', a long name cut with '*' */
	t = render_ucx(&f, "X*[1]?;y\\z", NULL, 0);
	assert_non_null(strstr(t, "\nProduct name=X\\*\\[1\\]\\??y\\\\z\n"));
	free(t);
	{
		char longname[128];

		memset(longname, 'q', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		for (int i = 0; i < 60; i++)
			longname[i] = '*';
		t = render_ucx(&f, longname, NULL, 0);
		check_line_lengths(t);
		assert_non_null(strstr(t, "*\n"));
		free(t);
	}
	/* no product name: no filter, said so */
	t = render_ucx(&f, "", NULL, 0);
	assert_null(strstr(t, "\nProduct name="));
	assert_non_null(strstr(t, "not filtered"));
	free(t);
}

/* What is not an answer stays at UCX's default, with the reason in a comment; a pin always is one. */
static void test_ucx_defaults_kept(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	snprintf(f.d[0].signal_verdict, sizeof(f.d[0].signal_verdict), "indifferent");
	f.d[0].inline_confidence = RT_PROFILE_CONF_LOW;
	t = render_ucx(&f, "p", NULL, 0);
	assert_null(strstr(t, "\nUCX_RC_TX_CQ_MODERATION="));
	assert_null(strstr(t, "\nUCX_RC_TX_MIN_INLINE="));
	assert_non_null(strstr(t, "# UCX_RC_TX_CQ_MODERATION not set: the signal interval does not matter here"));
	assert_non_null(strstr(t, "# UCX_RC_TX_MIN_INLINE not set: the inline threshold has low confidence"));
	free(t);
	f.d[0].pinned_inline = true;
	f.d[0].pinned_signal = true;
	f.d[0].signal_interval = 1;
	t = render_ucx(&f, "p", NULL, 0);
	assert_non_null(strstr(t, "\nUCX_RC_TX_MIN_INLINE=256\n"));
	/* N = 1: every WQE signaled, moderation 0 */
	assert_non_null(strstr(t, "\nUCX_RC_TX_CQ_MODERATION=0\n"));
	free(t);
	/* no send entry: the write entry; no generic entry at all: nothing set */
	f.d[0].opcode = RT_PROFILE_OP_WRITE;
	snprintf(f.d[0].app, sizeof(f.d[0].app), "x");
	snprintf(f.d[3].app, sizeof(f.d[3].app), "x");
	t = render_ucx(&f, "p", NULL, 0);
	assert_non_null(strstr(t, "(RC write)"));
	assert_non_null(strstr(t, "\nUCX_RC_TX_MIN_INLINE=128\n"));
	free(t);
	f.pub.n_decisions = 1;
	t = render_ucx(&f, "p", NULL, 0);
	assert_null(strstr(t, "\nUCX_"));
	assert_non_null(strstr(t, "no generic RC entry"));
	free(t);
}

/* An operator's lines are kept, rtune's block replaced and always last; a broken block is never guessed at. */
static void test_splice(void **state)
{
	struct pub_fixture f;
	const char *op = "UCX_TLS=rc,sm\n[cluster]\nCPU model=Icelake\nUCX_IB_SL=3\n";
	char *first, *second, *third, *edited;

	(void)state;
	pub_fixture_init(&f);
	first = render_ucx(&f, "p", op, 0);
	assert_int_equal(strncmp(first, op, strlen(op)), 0);
	f.d[0].max_inline_data = 512;
	/* the operator appends a line after rtune's block */
	edited = malloc(strlen(first) + 32);
	sprintf(edited, "%sUCX_LOG_LEVEL=info\n", first);
	second = render_ucx(&f, "p", edited, 0);
	assert_int_equal(count(second, RT_PUBLISH_BEGIN), 1);
	assert_int_equal(count(second, RT_PUBLISH_END), 1);
	assert_int_equal(strncmp(second, op, strlen(op)), 0);
	assert_non_null(strstr(second, "UCX_IB_SL=3\nUCX_LOG_LEVEL=info\n" RT_PUBLISH_BEGIN));
	assert_non_null(strstr(second, "\nUCX_RC_TX_MIN_INLINE=512\n"));
	assert_null(strstr(second, "UCX_RC_TX_MIN_INLINE=256"));
	/* republishing the same is the same file */
	third = render_ucx(&f, "p", second, 0);
	assert_string_equal(second, third);
	free(third);
	/* a begin marker whose end marker was deleted */
	second[strlen(second) - strlen(RT_PUBLISH_END) - 1] = '\0';
	assert_null(render_ucx(&f, "p", second, EINVAL));
	free(first);
	free(second);
	free(edited);
}

static void test_libfabric(void **state)
{
	struct pub_fixture f;
	struct rt_buf b = { 0 };

	(void)state;
	pub_fixture_init(&f);
	rt_publish_libfabric_render(&f.pub, &b);
	assert_false(b.oom);
	assert_non_null(strstr(b.p, "\nFI_VERBS_INLINE_SIZE=256\n"));
	/* no signal knob: said, not invented */
	assert_non_null(strstr(b.p, "no libfabric knob"));
	assert_int_equal(count(b.p, "\nFI_"), 1);
	free(b.p);
	/* never inline: libfabric reads 0 as the device's maximum, so nothing is set */
	memset(&b, 0, sizeof(b));
	f.d[0].inline_threshold = 0;
	snprintf(f.d[0].inline_verdict, sizeof(f.d[0].inline_verdict), "never");
	rt_publish_libfabric_render(&f.pub, &b);
	assert_null(strstr(b.p, "\nFI_VERBS_INLINE_SIZE="));
	assert_non_null(strstr(b.p, "reads 0 as the device's maximum"));
	free(b.p);
}

static char *render_nccl(const struct pub_fixture *f)
{
	struct rt_buf b = { 0 };

	assert_int_equal(rt_publish_nccl_render(&f->pub, NULL, 0, &b), 0);
	assert_false(b.oom);
	return b.p;
}

static void test_nccl(void **state)
{
	struct pub_fixture f;
	char *t;

	(void)state;
	pub_fixture_init(&f);
	/* the write entry (128 B >= the 64-byte clear-to-send write): inline on */
	t = render_nccl(&f);
	assert_non_null(strstr(t, "(RC write)"));
	assert_non_null(strstr(t, "\nNCCL_IB_USE_INLINE=1\n"));
	assert_non_null(strstr(t, "no NCCL knob"));
	assert_int_equal(count(t, "\nNCCL_"), 1);
	free(t);
	f.d[1].inline_threshold = 32;
	t = render_nccl(&f);
	assert_non_null(strstr(t, "\nNCCL_IB_USE_INLINE=0\n"));
	free(t);
	snprintf(f.d[1].inline_verdict, sizeof(f.d[1].inline_verdict), "indifferent");
	t = render_nccl(&f);
	assert_null(strstr(t, "\nNCCL_IB_USE_INLINE="));
	free(t);
}

/* ---- writing --------------------------------------------------------------------------------------------------- */

static char dir[64];

static void targets(struct rt_agent_publish_targets *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->prom_textfile, sizeof(t->prom_textfile), "%s/rtune.prom", dir);
	snprintf(t->nfd_features, sizeof(t->nfd_features), "%s/rtune", dir);
	snprintf(t->ucx_conf, sizeof(t->ucx_conf), "%s/ucx.conf", dir);
	snprintf(t->libfabric_env, sizeof(t->libfabric_env), "%s/libfabric.env", dir);
	snprintf(t->nccl_env, sizeof(t->nccl_env), "%s/nccl.conf", dir);
}

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			assert_true(e->d_name[0] != '.'); /* no temporary file left */
			n++;
		}
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "re");
	char *buf = calloc(1, 1 << 16);

	assert_non_null(fp);
	assert_non_null(buf);
	assert_true(fread(buf, 1, (1 << 16) - 1, fp) > 0);
	fclose(fp);
	return buf;
}

static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rt-publish-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_write_all(void **state)
{
	struct rt_agent_publish_targets t;
	struct rt_error err = { 0 };
	struct pub_fixture f;
	char path[128], *s;
	FILE *fp;

	(void)state;
	pub_fixture_init(&f);
	targets(&t);
	/* dry run: nothing written */
	t.dry_run = true;
	assert_int_equal(rt_agent_publish_prom(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_nfd(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_stacks(&f.pub, &t, &err), 0);
	assert_int_equal(entries(), 0);
	/* an operator's nccl.conf is kept around the block */
	snprintf(path, sizeof(path), "%s/nccl.conf", dir);
	fp = fopen(path, "we");
	assert_non_null(fp);
	fputs("NCCL_DEBUG=WARN\n", fp);
	fclose(fp);
	t.dry_run = false;
	assert_int_equal(rt_agent_publish_prom(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_nfd(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_stacks(&f.pub, &t, &err), 0);
	assert_int_equal(entries(), 5);
	s = slurp(path);
	assert_int_equal(strncmp(s, "NCCL_DEBUG=WARN\n" RT_PUBLISH_BEGIN, 16 + strlen(RT_PUBLISH_BEGIN)), 0);
	free(s);
	/* a second publication replaces, leaves no temporary file */
	assert_int_equal(rt_agent_publish_stacks(&f.pub, &t, &err), 0);
	assert_int_equal(entries(), 5);
	s = slurp(path);
	assert_int_equal(count(s, RT_PUBLISH_BEGIN), 1);
	free(s);
	/* an empty path: that target is off */
	memset(&t, 0, sizeof(t));
	assert_int_equal(rt_agent_publish_prom(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_nfd(&f.pub, &t, &err), 0);
	assert_int_equal(rt_agent_publish_stacks(&f.pub, &t, &err), 0);
}

/* A directory where the file should be is never replaced; the error names it; the other stack files are written. */
static void test_write_refused(void **state)
{
	struct rt_agent_publish_targets t;
	struct rt_error err = { 0 };
	struct pub_fixture f;
	struct stat st;
	char path[128];
	FILE *fp;

	(void)state;
	pub_fixture_init(&f);
	targets(&t);
	/* node_exporter would never read it */
	snprintf(path, sizeof(path), "%s/rtune.txt", dir);
	snprintf(t.prom_textfile, sizeof(t.prom_textfile), "%s", path);
	assert_int_equal(rt_agent_publish_prom(&f.pub, &t, &err), EINVAL);
	assert_non_null(strstr(err.text, "*.prom"));
	assert_int_equal(stat(path, &st), -1);
	targets(&t);
	assert_int_equal(mkdir(t.prom_textfile, 0755), 0);
	assert_int_not_equal(rt_agent_publish_prom(&f.pub, &t, &err), 0);
	assert_non_null(strstr(err.text, t.prom_textfile));
	assert_int_equal(stat(t.prom_textfile, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* ucx.conf with a broken block: refused, left as it was; libfabric and NCCL still written */
	snprintf(path, sizeof(path), "%s/ucx.conf", dir);
	fp = fopen(path, "we");
	assert_non_null(fp);
	fputs("UCX_TLS=rc\n" RT_PUBLISH_BEGIN "\nUCX_RC_TX_MIN_INLINE=1\n", fp);
	fclose(fp);
	assert_int_equal(rt_agent_publish_stacks(&f.pub, &t, &err), EINVAL);
	assert_non_null(strstr(err.text, "ucx.conf"));
	assert_int_equal(stat(t.libfabric_env, &st), 0);
	assert_int_equal(stat(t.nccl_env, &st), 0);
	{
		char *s = slurp(path);

		assert_string_equal(s, "UCX_TLS=rc\n" RT_PUBLISH_BEGIN "\nUCX_RC_TX_MIN_INLINE=1\n");
		free(s);
	}
}

static void test_host_read(void **state)
{
	struct rt_publish_host h;
	char path[192];
	FILE *fp;

	(void)state;
	snprintf(path, sizeof(path), "%s/sys/devices/virtual/dmi/id", dir);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/product_name");
	fp = fopen(path, "we");
	assert_non_null(fp);
	fputs("  ProLiant DL380 Gen10 \n", fp);
	fclose(fp);
	rt_publish_host_read(dir, &h);
	assert_string_equal(h.dmi_product_name, "ProLiant DL380 Gen10");
	rt_publish_host_read("/nonexistent-root", &h);
	assert_string_equal(h.dmi_product_name, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prom_format),
		cmocka_unit_test(test_prom_content),
		cmocka_unit_test(test_prom_bands),
		cmocka_unit_test(test_prom_never_calibrated),
		cmocka_unit_test(test_nfd_file),
		cmocka_unit_test(test_nfd_odd_devices),
		cmocka_unit_test(test_nfd_limits),
		cmocka_unit_test(test_ucx_section),
		cmocka_unit_test(test_ucx_defaults_kept),
		cmocka_unit_test(test_splice),
		cmocka_unit_test(test_libfabric),
		cmocka_unit_test(test_nccl),
		cmocka_unit_test_setup_teardown(test_write_all, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_write_refused, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_host_read, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
