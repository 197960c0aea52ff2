// SPDX-License-Identifier: MIT
/*
 * Helpers shared by the publishing targets: the atomic write with dry-run, the entry a process-wide stack setting
 * comes from, whether a decision is fit to configure a stack with, the host's DMI product name, and (weak) the names
 * of the calibration results the agent defines.
 */
#include "publish_util.h"

#include <rt_out.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * The agent defines rt_agent_cal_result_name() (agent/publish.c); this weak copy lets rtune_publish and its tests link
 * without the agent. The agent's strong definition wins wherever both are linked.
 */
__attribute__((weak)) const char *rt_agent_cal_result_name(enum rt_agent_cal_result r)
{
	switch (r) {
	case RT_AGENT_CAL_NONE: return "none";
	case RT_AGENT_CAL_OK: return "ok";
	case RT_AGENT_CAL_FAILED: return "failed";
	case RT_AGENT_CAL_INTERRUPTED: return "interrupted";
	case RT_AGENT_CAL_BUSY: return "busy";
	}
	return "unknown";
}

int rt_publish_write(const char *path, const struct rt_buf *b, bool dry_run, struct rt_error *err)
{
	if (b->oom)
		return rt_error_set(err, ENOMEM, "cannot write '%s': out of memory", path);
	if (dry_run)
		return 0;
	return rt_out_write_file(path, b->p ? b->p : "", b->len, 0644, err);
}

const struct rt_agent_decision *rt_publish_pick_rc(const struct rt_agent_publication *pub, enum rt_profile_opcode op)
{
	for (size_t i = 0; i < pub->n_decisions; i++) {
		const struct rt_agent_decision *d = &pub->decisions[i];

		if (d->qp_type == RT_PROFILE_QPT_RC && d->opcode == op && !d->app[0])
			return d;
	}
	return NULL;
}

/* Whether a verdict names an answer: a measured value a stack can be set to. */
static bool usable(bool pinned, const char *verdict, enum rt_profile_confidence conf, const char *what, char *why,
		   size_t why_len)
{
	if (pinned)
		return true;
	if (!strcmp(verdict, "indifferent")) {
		snprintf(why, why_len, "the %s does not matter here (flat curve): the stack keeps its default", what);
		return false;
	}
	if (!verdict[0] || !strcmp(verdict, "not_measured")) {
		snprintf(why, why_len, "the %s was not measured: the stack keeps its default", what);
		return false;
	}
	if (conf < RT_PROFILE_CONF_MEDIUM) {
		snprintf(why, why_len, "the %s has low confidence: the stack keeps its default", what);
		return false;
	}
	return true;
}

bool rt_publish_inline_usable(const struct rt_agent_decision *d, char *why, size_t why_len)
{
	return usable(d->pinned_inline, d->inline_verdict, d->inline_confidence, "inline threshold", why, why_len);
}

bool rt_publish_signal_usable(const struct rt_agent_decision *d, char *why, size_t why_len)
{
	return usable(d->pinned_signal, d->signal_verdict, d->signal_confidence, "signal interval", why, why_len);
}

void rt_publish_host_read(const char *root, struct rt_publish_host *h)
{
	char path[4096];
	FILE *f;
	size_t n, s = 0;

	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "%s/sys/devices/virtual/dmi/id/product_name", root && *root ? root : "");
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(h->dmi_product_name, 1, sizeof(h->dmi_product_name) - 1, f);
	fclose(f);
	h->dmi_product_name[n] = '\0';
	/* trimmed on both sides, as UCX's ucs_strtrim() does */
	while (n > 0 && isspace((unsigned char)h->dmi_product_name[n - 1]))
		h->dmi_product_name[--n] = '\0';
	while (h->dmi_product_name[s] && isspace((unsigned char)h->dmi_product_name[s]))
		s++;
	memmove(h->dmi_product_name, h->dmi_product_name + s, n - s + 1);
}
