// SPDX-License-Identifier: MIT
/*
 * The stacks' own configuration: the settings UCX, libfabric's verbs provider and NCCL already read, so applications
 * that never heard of rtune run with the node's profile. Each stack takes one value per process, so each file is
 * taken from the first generic (app "") RC entry of the publication (send, else write; write first for NCCL, whose
 * tuned traffic is RDMA writes), the choice `rtune export --format env` makes. A value is written only when it is an
 * answer: pinned, or measured with at least medium confidence and a verdict other than "does not matter here" or
 * "not measured"; otherwise a comment says why and the stack keeps its default. A decision a stack has no knob for is
 * a comment too. Names and semantics are checked against the stacks' sources (cited at each line below and in
 * docs/agent-publish.md):
 *  - UCX (openucx/ucx): ucx.conf is an INI file read from /etc/ucx, then <libdir>/../etc/ucx, $HOME, $UCX_CONFIG_DIR
 *    and "." (ucs_config_parse_config_files(), src/ucs/config/parser.c), each later file overriding; keys are the
 *    full variable names; the environment wins over every file (ucs_config_apply_config_vars()). A section is skipped
 *    from a "CPU vendor", "CPU model" or "Product name" line whose fnmatch(3) pattern does not match the host
 *    (ucs_config_parse_check_filter()); lines are at most 199 characters (INI_MAX_LINE, src/ucs/config/ini.h).
 *  - libfabric: FI_<PROV>_<PARAM> upper-cased (fi_param_define(), src/var.c); libfabric has no config file.
 *  - NCCL (NVIDIA/nccl): NCCL_<NAME> (NCCL_PARAM, src/include/param.h); NCCL_CONF_FILE, else ~/.nccl.conf, then
 *    /etc/nccl.conf hold NAME=VALUE lines, '#' in column 1 a comment, and never override a variable already set
 *    (setEnvFile() in src/misc/param.cc, ncclOsSetEnv() = setenv(..., 0) in src/os/linux.cc).
 */
#include "publish_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* UCX reads lines of at most INI_MAX_LINE - 1 = 199 characters (src/ucs/config/ini.h): a longer comment would be
 * split by fgets() and its tail parsed as a setting. Every line written to ucx.conf stays below this. */
#define UCX_LINE_MAX 190
/* sizeof(struct ncclIbSendFifo) (src/transport/net_ib/common.h): 8 + 8 + 4 * NCCL_NET_MAX_DEVS_PER_NIC (8 in net
 * API v12, 4 in v11: 48 bytes) + 4 + 4 + 8; the RDMA write NCCL_IB_USE_INLINE inlines carries one or more. */
#define NCCL_CTS_BYTES 64u
#define EXISTING_MAX (1u << 20)

/* One '#' comment line of at most UCX_LINE_MAX characters, newlines flattened. */
static void comment(struct rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void comment(struct rt_buf *b, const char *fmt, ...)
{
	char line[UCX_LINE_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 2, fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	rt_buf_printf(b, "# %s\n", line);
}

static void header(struct rt_buf *b, const struct rt_agent_publication *pub, const char *what)
{
	time_t at = (time_t)pub->generated_at;
	char when[32] = "?";
	struct tm tm;

	if (gmtime_r(&at, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	comment(b, "rtune agent %s for %s, published %s: %s", pub->rtune_version, pub->hostname, when, what);
}

static const struct rt_agent_decision *pick(const struct rt_agent_publication *pub, enum rt_profile_opcode first)
{
	const struct rt_agent_decision *d = rt_publish_pick_rc(pub, first);

	return d ? d : rt_publish_pick_rc(pub, first == RT_PROFILE_OP_SEND ? RT_PROFILE_OP_WRITE : RT_PROFILE_OP_SEND);
}

static void source_line(struct rt_buf *b, const struct rt_agent_decision *d)
{
	comment(b, "process-wide value from %s port %d (RC %s): inline %s (%s), signal %s (%s), run %s", d->device,
		d->port, rt_profile_opcode_name(d->opcode), d->pinned_inline ? "pinned" : d->inline_verdict,
		rt_profile_confidence_name(d->inline_confidence), d->pinned_signal ? "pinned" : d->signal_verdict,
		rt_profile_confidence_name(d->signal_confidence), d->run_id[0] ? d->run_id : "none");
}

int rt_publish_splice(const char *text, size_t len, const char *block, struct rt_buf *out)
{
	const char *p = text, *end = text ? text + len : NULL;
	bool inside = false;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		bool begin = n >= strlen(RT_PUBLISH_BEGIN) && !strncmp(p, RT_PUBLISH_BEGIN, strlen(RT_PUBLISH_BEGIN));
		bool stop = n == strlen(RT_PUBLISH_END) && !strncmp(p, RT_PUBLISH_END, n);

		if (!inside && begin)
			inside = true;
		else if (inside && stop)
			inside = false;
		else if (!inside)
			rt_buf_printf(out, "%.*s\n", (int)n, p);
		p += n + (nl ? 1 : 0);
	}
	if (inside)
		return EINVAL;
	rt_buf_puts(out, block);
	return 0;
}

/* value as a fnmatch(3) pattern matching exactly it: * ? [ ] \ escaped, ';' (an INI inline comment) as '?'; cut
 * to fit the line with a trailing '*'. */
static void ucx_pattern(struct rt_buf *b, const char *v, size_t room)
{
	size_t used = 0;

	for (; *v; v++) {
		size_t need = strchr("*?[]\\", *v) ? 2 : 1;

		if (used + need + 1 > room) {
			rt_buf_puts(b, "*");
			return;
		}
		if (need == 2)
			rt_buf_printf(b, "\\%c", *v);
		else
			rt_buf_printf(b, "%c", *v == ';' ? '?' : *v);
		used += need;
	}
}

int rt_publish_ucx_render(const struct rt_agent_publication *pub, const struct rt_publish_host *h, const char *existing,
			  size_t existing_len, struct rt_buf *out)
{
	const struct rt_agent_decision *d = pick(pub, RT_PROFILE_OP_SEND);
	struct rt_buf b = { 0 };
	char why[160];
	int rc;

	rt_buf_printf(&b, "%s\n", RT_PUBLISH_BEGIN);
	header(&b, pub, "UCX settings (the environment wins over this file)");
	/* the section name is ours; a "Product name" line skips the rest of the section on any other product */
	rt_buf_puts(&b, "[rtune-agent]\n");
	if (h->dmi_product_name[0]) {
		rt_buf_puts(&b, "Product name=");
		ucx_pattern(&b, h->dmi_product_name, UCX_LINE_MAX - strlen("Product name="));
		rt_buf_puts(&b, "\n");
	} else {
		comment(&b, "no DMI product name on this host: the section is not filtered");
	}
	comment(&b, "/proc/cpuinfo model: %s (not a UCX 'CPU model' value: UCX names models itself)", pub->cpu_model);
	if (!d) {
		comment(&b, "no generic RC entry in the profile: UCX keeps its defaults");
	} else {
		source_line(&b, d);
		/* TX_MIN_INLINE: "Bytes to reserve in send WQE for inline data. Messages which are small enough will be
		 * sent inline." (src/uct/ib/base/ib_iface.c, the IB table nested under RC_ by rc_verbs and rc_mlx5) */
		if (rt_publish_inline_usable(d, why, sizeof(why)))
			rt_buf_printf(&b, "UCX_RC_TX_MIN_INLINE=%" PRIu32 "\n", d->max_inline_data);
		else
			comment(&b, "UCX_RC_TX_MIN_INLINE not set: %s", why);
		/* TX_CQ_MODERATION: a completion is requested once `unsignaled >= tx_moderation`
		 * (uct_rc_iface_tx_moderation(), src/uct/ib/rc/base/rc_ep.h): one signaled WQE in M + 1 */
		if (rt_publish_signal_usable(d, why, sizeof(why)))
			rt_buf_printf(&b, "UCX_RC_TX_CQ_MODERATION=%" PRIu32 "\n",
				      d->signal_interval ? d->signal_interval - 1 : 0);
		else
			comment(&b, "UCX_RC_TX_CQ_MODERATION not set: %s", why);
	}
	rt_buf_printf(&b, "%s\n", RT_PUBLISH_END);
	if (b.oom) {
		free(b.p);
		out->oom = true;
		return 0;
	}
	rc = rt_publish_splice(existing, existing_len, b.p, out);
	free(b.p);
	return rc;
}

void rt_publish_libfabric_render(const struct rt_agent_publication *pub, struct rt_buf *out)
{
	const struct rt_agent_decision *d = pick(pub, RT_PROFILE_OP_SEND);
	char why[160];

	header(out, pub, "libfabric verbs provider (an EnvironmentFile=, or `set -a; . FILE; set +a`)");
	if (!d) {
		comment(out, "no generic RC entry in the profile: libfabric keeps its defaults");
		return;
	}
	source_line(out, d);
	/* inline_size caps a MSG endpoint's inject_size unless the application's hints set one, is requested as the
	 * QP's max_inline_data and sets IBV_SEND_INLINE up to it (prov/verbs/src/verbs_init.c, verbs_info.c,
	 * verbs_ep.c, VERBS_INJECT in verbs_ofi.h). 0 means "the maximum device inline size", not "never". */
	if (!rt_publish_inline_usable(d, why, sizeof(why)))
		comment(out, "FI_VERBS_INLINE_SIZE not set: %s", why);
	else if (!d->inline_threshold)
		comment(out, "FI_VERBS_INLINE_SIZE not set: the profile never inlines and libfabric reads 0 as the "
			     "device's maximum");
	else
		rt_buf_printf(out, "FI_VERBS_INLINE_SIZE=%" PRIu32 "\n", d->inline_threshold);
	comment(out,
		"signal interval %" PRIu32 ": no libfabric knob: the verbs provider creates its QPs with "
		"sq_sig_all = 1 (prov/verbs/src/verbs_ep.c)",
		d->signal_interval);
	comment(out, "FI_VERBS_TX_SIZE not set: rtune sizes the send queue for its signal interval, which libfabric "
		     "does not use");
}

int rt_publish_nccl_render(const struct rt_agent_publication *pub, const char *existing, size_t existing_len,
			   struct rt_buf *out)
{
	const struct rt_agent_decision *d = pick(pub, RT_PROFILE_OP_WRITE);
	struct rt_buf b = { 0 };
	char why[160];
	int rc;

	rt_buf_printf(&b, "%s\n", RT_PUBLISH_BEGIN);
	header(&b, pub, "NCCL settings (NCCL_CONF_FILE or /etc/nccl.conf; a variable already set wins)");
	if (!d) {
		comment(&b, "no generic RC entry in the profile: NCCL keeps its defaults");
	} else {
		source_line(&b, d);
		/* IB_USE_INLINE (src/transport/net_ib/connect.cc): max_inline_data = sizeof(struct ncclIbSendFifo) and
		 * IBV_SEND_INLINE on the clear-to-send RDMA write (p2p.cc); NCCL has no inline size knob */
		if (!rt_publish_inline_usable(d, why, sizeof(why)))
			comment(&b, "NCCL_IB_USE_INLINE not set: %s", why);
		else
			rt_buf_printf(&b, "NCCL_IB_USE_INLINE=%d\n", d->inline_threshold >= NCCL_CTS_BYTES);
		comment(&b,
			"signal interval %" PRIu32 ": no NCCL knob: NCCL signals the last WR of each post and "
			"chooses which clear-to-send writes to signal itself (src/transport/net_ib/p2p.cc)",
			d->signal_interval);
	}
	rt_buf_printf(&b, "%s\n", RT_PUBLISH_END);
	if (b.oom) {
		free(b.p);
		out->oom = true;
		return 0;
	}
	rc = rt_publish_splice(existing, existing_len, b.p, out);
	free(b.p);
	return rc;
}

/*
 * The current text of a regular file at path into *text (NULL and 0 when there is none, or it is not a regular
 * file: rt_out decides what happens to those). Returns 0 or an errno with err naming path.
 */
static int read_existing(const char *path, char **text, size_t *len, struct rt_error *err)
{
	struct stat st;
	ssize_t got;
	int fd;

	*text = NULL;
	*len = 0;
	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return rt_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : rt_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	if ((size_t)st.st_size > EXISTING_MAX) {
		close(fd);
		return rt_error_set(err, EFBIG, "cannot update '%s': larger than %u bytes", path, EXISTING_MAX);
	}
	*text = malloc((size_t)st.st_size + 1);
	if (!*text) {
		close(fd);
		return rt_error_set(err, ENOMEM, "cannot read '%s': out of memory", path);
	}
	while (*len < (size_t)st.st_size && (got = read(fd, *text + *len, (size_t)st.st_size - *len)) > 0)
		*len += (size_t)got;
	close(fd);
	(*text)[*len] = '\0';
	return 0;
}

/* Renders one file that keeps an operator's lines around rtune's block, and writes it. */
static int spliced(const char *path, const struct rt_agent_publication *pub, const struct rt_publish_host *h,
		   bool dry_run, struct rt_error *err)
{
	struct rt_buf b = { 0 };
	size_t len;
	char *old;
	int rc;

	if (!path[0])
		return 0;
	if ((rc = read_existing(path, &old, &len, err)))
		return rc;
	rc = h ? rt_publish_ucx_render(pub, h, old, len, &b) : rt_publish_nccl_render(pub, old, len, &b);
	free(old);
	if (rc)
		rc = rt_error_set(err, rc, "cannot update '%s': it has rtune's begin marker without its end marker",
				  path);
	else
		rc = rt_publish_write(path, &b, dry_run, err);
	free(b.p);
	return rc;
}

int rt_agent_publish_stacks(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			    struct rt_error *err)
{
	struct rt_error first = { 0 }, e = { 0 };
	struct rt_publish_host h;
	struct rt_buf b = { 0 };
	int rc, ret = 0;

	/* each file on its own: one failing does not keep the others from being written */
	rt_publish_host_read(NULL, &h);
	if ((rc = spliced(t->ucx_conf, pub, &h, t->dry_run, &e)) && !ret) {
		ret = rc;
		first = e;
	}
	if (t->libfabric_env[0]) {
		rt_publish_libfabric_render(pub, &b);
		if ((rc = rt_publish_write(t->libfabric_env, &b, t->dry_run, &e)) && !ret) {
			ret = rc;
			first = e;
		}
		free(b.p);
	}
	if ((rc = spliced(t->nccl_env, pub, NULL, t->dry_run, &e)) && !ret) {
		ret = rc;
		first = e;
	}
	if (ret)
		rt_error_set(err, ret, "%s", first.text);
	return ret;
}
