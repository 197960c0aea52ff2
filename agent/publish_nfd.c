// SPDX-License-Identifier: MIT
/*
 * The Node Feature Discovery target: a feature file (features.d/rtune) NFD's `local` source turns into node labels,
 * so a scheduler can place workloads by profile (nodeSelector / nodeAffinity on, e.g.,
 * rtune.feature.node.kubernetes.io/mlx5_0-p1.rc-send.inline-bytes). The format is NFD's (source/local/local.go,
 * docs/usage/customization-guide.md): one `<prefix>/<name>=<value>` per line, `#` comments, and the directive
 * `# +expiry-time=<RFC 3339>` which applies to the lines after it, so it is the first line: labels of an agent that
 * stopped publishing disappear. NFD ignores dot files (the temporary file of the atomic write) and a file over 64 KiB
 * (refused here). Names and values keep Kubernetes' limits (k8s.io/apimachinery validation IsQualifiedName,
 * IsValidLabelValue, applied by NFD's pkg/apis/nfd/validate): the name part at most 63 characters of [A-Za-z0-9-_.]
 * beginning and ending alphanumeric, the prefix a DNS subdomain of at most 253 characters, the value empty or at most
 * 63 of the same set. The default prefix is a sub-namespace of feature.node.kubernetes.io, which NFD allows without
 * configuration (its validate.Label refuses other *.kubernetes.io namespaces).
 */
#include "publish_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME_MAX_CHARS 63

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       c == '.';
}

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A DNS subdomain (RFC 1123) of at most 253 characters: lowercase labels of [a-z0-9-] joined by dots. */
static bool valid_prefix(const char *p)
{
	size_t n = strlen(p), lab = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char c = p[i];

		if (c == '.' || c == '\0') {
			if (lab == 0 || lab > 63 || p[i - 1] == '-')
				return false;
			lab = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && lab > 0)) {
			lab++;
		} else {
			return false;
		}
	}
	return true;
}

static uint32_t fnv1a32(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/*
 * The device part of a label name: the device name when it is made of allowed characters, else (or when too long to
 * leave room for the rest) a cut, cleaned copy with an 8-hex hash of the full name appended, so two devices never
 * share a label. room: characters available.
 */
static void device_part(const char *dev, size_t room, char *out, size_t out_len)
{
	size_t n = strlen(dev), k = 0;
	bool clean = n > 0 && alnum(dev[0]);

	for (size_t i = 0; i < n; i++)
		clean = clean && name_char(dev[i]);
	if (clean && n <= room && n < out_len) {
		memcpy(out, dev, n + 1);
		return;
	}
	/* keep <= room - 9 cleaned characters, then "-xxxxxxxx" */
	for (size_t i = 0; i < n && k + 9 < room && k + 10 < out_len; i++)
		if (name_char(dev[i]) && (k > 0 || alnum(dev[i])))
			out[k++] = dev[i];
	snprintf(out + k, out_len - k, "%s%08" PRIx32, k ? "-" : "d", fnv1a32(dev));
}

static const char *conf_word(enum rt_profile_confidence c)
{
	return rt_profile_confidence_name(c);
}

/* A label value: only [A-Za-z0-9-_.], alphanumeric at both ends, at most 63; anything else becomes "unknown". */
static const char *value_or_unknown(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > NAME_MAX_CHARS || !alnum(v[0]) || !alnum(v[n - 1]))
		return "unknown";
	for (size_t i = 0; i < n; i++)
		if (!name_char(v[i]))
			return "unknown";
	return v;
}

static void entry_labels(struct rt_buf *b, const char *prefix, const struct rt_agent_decision *d)
{
	static const char *const suffixes[] = { "inline-bytes", "inline-verdict", "signal-interval", "signal-verdict",
						"confidence" };
	/* "-p<port>.<qpt>-<op>." + the longest suffix */
	char base[NAME_MAX_CHARS + 1], dev[NAME_MAX_CHARS + 1], tail[40];
	size_t longest = strlen("signal-interval");
	int tl;

	tl = snprintf(tail, sizeof(tail), "-p%d.%s-%s.", d->port, rt_profile_qp_type_name(d->qp_type),
		      rt_profile_opcode_name(d->opcode));
	device_part(d->device, NAME_MAX_CHARS - (size_t)tl - longest, dev, sizeof(dev));
	snprintf(base, sizeof(base), "%s%s", dev, tail);
	for (size_t s = 0; s < sizeof(suffixes) / sizeof(suffixes[0]); s++) {
		rt_buf_printf(b, "%s/%s%s=", prefix, base, suffixes[s]);
		switch (s) {
		case 0: rt_buf_printf(b, "%" PRIu32 "\n", d->inline_threshold); break;
		case 1:
			rt_buf_printf(b, "%s\n", value_or_unknown(d->pinned_inline ? "pinned" : d->inline_verdict));
			break;
		case 2: rt_buf_printf(b, "%" PRIu32 "\n", d->signal_interval); break;
		case 3:
			rt_buf_printf(b, "%s\n", value_or_unknown(d->pinned_signal ? "pinned" : d->signal_verdict));
			break;
		default: rt_buf_printf(b, "%s\n", conf_word(d->confidence)); break;
		}
	}
}

int rt_publish_nfd_render(const struct rt_agent_publication *pub, const char *prefix, uint32_t expiry_s,
			  struct rt_buf *b, struct rt_error *err)
{
	enum rt_profile_confidence lowest = RT_PROFILE_CONF_HIGH;
	time_t exp = (time_t)(pub->generated_at + (expiry_s ? expiry_s : RT_PUBLISH_NFD_EXPIRY_S));
	size_t generic = 0;
	char when[32];
	struct tm tm;

	if (!prefix)
		prefix = RT_PUBLISH_NFD_PREFIX;
	if (!valid_prefix(prefix))
		return rt_error_set(err, EINVAL, "invalid NFD label prefix '%s': not a DNS subdomain", prefix);
	if (!gmtime_r(&exp, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return rt_error_set(err, EINVAL, "invalid NFD expiry time %" PRId64, (int64_t)exp);
	/* the directive first: NFD applies it to the lines that follow it */
	rt_buf_printf(b, "# +expiry-time=%s\n", when);
	rt_buf_printf(b,
		      "# rtune agent %s: Node Feature Discovery labels of this node's RDMA profile; "
		      "written atomically, do not edit\n",
		      pub->rtune_version);
	for (size_t i = 0; i < pub->n_decisions; i++) {
		const struct rt_agent_decision *d = &pub->decisions[i];

		/* application entries are not labels: a scheduler places by what the device does for everyone */
		if (d->app[0])
			continue;
		entry_labels(b, prefix, d);
		if (d->confidence < lowest)
			lowest = d->confidence;
		generic++;
	}
	rt_buf_printf(b, "%s/profile=%s\n", prefix, generic ? "true" : "false");
	if (generic)
		rt_buf_printf(b, "%s/confidence=%s\n", prefix, conf_word(lowest));
	if (!b->oom && b->len > RT_PUBLISH_NFD_MAX_BYTES)
		return rt_error_set(err, EFBIG, "NFD feature file would be %zu bytes: over NFD's %u-byte limit", b->len,
				    RT_PUBLISH_NFD_MAX_BYTES);
	return 0;
}

int rt_agent_publish_nfd(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			 struct rt_error *err)
{
	struct rt_error why = { 0 };
	struct rt_buf b = { 0 };
	int rc;

	if (!t->nfd_features[0])
		return 0;
	rc = rt_publish_nfd_render(pub, NULL, t->nfd_expiry_s, &b, &why);
	if (rc)
		rt_error_set(err, rc, "cannot write '%s': %s", t->nfd_features, why.text);
	else
		rc = rt_publish_write(t->nfd_features, &b, t->dry_run, err);
	free(b.p);
	return rc;
}
