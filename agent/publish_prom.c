// SPDX-License-Identifier: MIT
/*
 * The Prometheus target: a node_exporter textfile-collector file (text exposition format 0.0.4) describing the
 * published profile. Names follow Prometheus' naming rules: base units in the name (_bytes, _seconds,
 * _timestamp_seconds), gauges only, identity and verdicts as `_info` gauges of value 1 whose labels carry the text,
 * the last calibration's result as a state set (one series per result, 1 for the current one). The per-entry gauge
 * names are those of `rtune export --format prometheus` (store/store_profile.c), so one dashboard reads both; the
 * agent's file has no `node` label (the scrape's instance names the node; rtune_node_info carries the hostname).
 * The load-band and skipped-measurement families come from the one writer both files use (rt_store_prom_bands(),
 * store/store_bands_out.c), fed the published document. Checked by `promtool check metrics` (tests/unit/publish) and
 * read by deploy/prometheus/rtune-rules.yml.
 */
#include "publish_util.h"
#include "rt_store_json.h"
#include "rt_json_arena.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void family(struct rt_buf *b, const char *name, const char *help)
{
	rt_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* device="",port="" */
static void port_labels(struct rt_buf *b, const struct rt_agent_decision *d)
{
	char port[16];

	snprintf(port, sizeof(port), "%d", d->port);
	rt_store_prom_label(b, "device", d->device, true);
	rt_store_prom_label(b, "port", port, false);
}

/* device, port, opcode, qp_type, app: what identifies one entry of the profile */
static void entry_labels(struct rt_buf *b, const struct rt_agent_decision *d)
{
	port_labels(b, d);
	rt_store_prom_label(b, "opcode", rt_profile_opcode_name(d->opcode), false);
	rt_store_prom_label(b, "qp_type", rt_profile_qp_type_name(d->qp_type), false);
	rt_store_prom_label(b, "app", d->app, false);
}

/* The first decision of each device/port: the per-port series are written once. */
static bool first_of_port(const struct rt_agent_publication *pub, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (pub->decisions[j].port == pub->decisions[i].port &&
		    !strcmp(pub->decisions[j].device, pub->decisions[i].device))
			return false;
	return true;
}

enum entry_metric {
	M_INLINE,
	M_MAX_INLINE,
	M_SIGNAL,
	M_SQ,
	M_CQ,
	M_CONF,
	M_INLINE_CONF,
	M_SIGNAL_CONF,
	M_MEASURED,
	M_AGE,
	M_COUNT
};

static const struct {
	const char *name, *help;
} entry_metrics[M_COUNT] = {
	[M_INLINE] = { "rtune_inline_threshold_bytes",
		       "Largest message size rtune recommends to post with IBV_SEND_INLINE (0: never inline)." },
	[M_MAX_INLINE] = { "rtune_max_inline_data_bytes", "max_inline_data rtune recommends at QP creation." },
	[M_SIGNAL] = { "rtune_signal_interval",
		       "rtune recommends one IBV_SEND_SIGNALED work request every this many." },
	[M_SQ] = { "rtune_sq_depth", "Send queue depth rtune recommends (work requests)." },
	[M_CQ] = { "rtune_cq_depth", "Send completion queue depth rtune recommends (entries)." },
	[M_CONF] = { "rtune_profile_confidence", "Confidence of the profile entry: 0 low, 1 medium, 2 high." },
	[M_INLINE_CONF] = { "rtune_inline_confidence", "Confidence of the inline threshold: 0 low, 1 medium, 2 high." },
	[M_SIGNAL_CONF] = { "rtune_signal_confidence", "Confidence of the signal interval: 0 low, 1 medium, 2 high." },
	[M_MEASURED] = { "rtune_profile_measured_timestamp_seconds",
			 "When the calibration run the entry comes from was measured (unix time)." },
	[M_AGE] = { "rtune_profile_age_seconds",
		    "Age of the entry's measurement when the agent published it (time() - the measured timestamp "
		    "is its age now)." },
};

static int64_t entry_value(const struct rt_agent_decision *d, enum entry_metric m)
{
	switch (m) {
	case M_INLINE: return d->inline_threshold;
	case M_MAX_INLINE: return d->max_inline_data;
	case M_SIGNAL: return d->signal_interval;
	case M_SQ: return d->sq_depth;
	case M_CQ: return d->cq_depth;
	case M_CONF: return d->confidence;
	case M_INLINE_CONF: return d->inline_confidence;
	case M_SIGNAL_CONF: return d->signal_confidence;
	case M_MEASURED: return d->measured_at;
	case M_AGE: return d->age_s > 0 ? d->age_s : 0;
	case M_COUNT: break;
	}
	return 0;
}

static void node_part(struct rt_buf *b, const struct rt_agent_publication *pub)
{
	family(b, "rtune_node_info",
	       "The node the rtune agent publishes for (value 1; the labels carry the identity).");
	rt_buf_puts(b, "rtune_node_info{");
	rt_store_prom_label(b, "hostname", pub->hostname, true);
	rt_store_prom_label(b, "machine_id", pub->machine_id, false);
	rt_store_prom_label(b, "hw_signature", pub->hw_signature, false);
	rt_store_prom_label(b, "rtune_version", pub->rtune_version, false);
	rt_buf_puts(b, "} 1\n");
	family(b, "rtune_publication_timestamp_seconds", "When the rtune agent made this publication (unix time).");
	rt_buf_printf(b, "rtune_publication_timestamp_seconds %" PRId64 "\n", pub->generated_at);
	family(b, "rtune_profile_entries", "Entries in the published profile.");
	rt_buf_printf(b, "rtune_profile_entries %zu\n", pub->n_decisions);
}

static void device_part(struct rt_buf *b, const struct rt_agent_publication *pub)
{
	static const enum rt_agent_cal_result results[] = { RT_AGENT_CAL_NONE, RT_AGENT_CAL_OK, RT_AGENT_CAL_FAILED,
							    RT_AGENT_CAL_INTERRUPTED, RT_AGENT_CAL_BUSY };

	family(b, "rtune_device_info",
	       "An RDMA device port in the profile (value 1): its node GUID, hardware class (devices whose answers "
	       "should agree) and NUMA node.");
	for (size_t i = 0; i < pub->n_decisions; i++) {
		const struct rt_agent_decision *d = &pub->decisions[i];
		char numa[16];

		if (!first_of_port(pub, i))
			continue;
		snprintf(numa, sizeof(numa), "%d", d->numa_node);
		rt_buf_puts(b, "rtune_device_info{");
		port_labels(b, d);
		rt_store_prom_label(b, "guid", d->guid, false);
		rt_store_prom_label(b, "hw_class", d->hw_class, false);
		rt_store_prom_label(b, "numa_node", numa, false);
		rt_buf_puts(b, "} 1\n");
	}
	family(b, "rtune_last_calibration_result",
	       "Result of the device port's last calibration by the agent: 1 for the current result, 0 for the others.");
	for (size_t i = 0; i < pub->n_decisions; i++) {
		for (size_t r = 0; first_of_port(pub, i) && r < sizeof(results) / sizeof(results[0]); r++) {
			rt_buf_puts(b, "rtune_last_calibration_result{");
			port_labels(b, &pub->decisions[i]);
			rt_store_prom_label(b, "result", rt_agent_cal_result_name(results[r]), false);
			rt_buf_printf(b, "} %d\n", pub->decisions[i].last_cal_result == results[r]);
		}
	}
	/* no duration or timestamp for a port the agent never calibrated: 0 would read as 1970 */
	family(b, "rtune_last_calibration_duration_seconds",
	       "Wall time of the device port's last calibration by the agent, tuning included.");
	for (size_t i = 0; i < pub->n_decisions; i++) {
		if (!first_of_port(pub, i) || pub->decisions[i].last_cal_result == RT_AGENT_CAL_NONE)
			continue;
		rt_buf_puts(b, "rtune_last_calibration_duration_seconds{");
		port_labels(b, &pub->decisions[i]);
		rt_buf_printf(b, "} %.3f\n", pub->decisions[i].last_cal_duration_s);
	}
	family(b, "rtune_last_calibration_timestamp_seconds",
	       "When the device port's last calibration by the agent ended (unix time).");
	for (size_t i = 0; i < pub->n_decisions; i++) {
		if (!first_of_port(pub, i) || pub->decisions[i].last_cal_result == RT_AGENT_CAL_NONE)
			continue;
		rt_buf_puts(b, "rtune_last_calibration_timestamp_seconds{");
		port_labels(b, &pub->decisions[i]);
		rt_buf_printf(b, "} %" PRId64 "\n", pub->decisions[i].last_cal_at);
	}
}

static void entry_part(struct rt_buf *b, const struct rt_agent_publication *pub)
{
	for (int m = 0; m < M_COUNT; m++) {
		family(b, entry_metrics[m].name, entry_metrics[m].help);
		for (size_t i = 0; i < pub->n_decisions; i++) {
			rt_buf_printf(b, "%s{", entry_metrics[m].name);
			entry_labels(b, &pub->decisions[i]);
			rt_buf_printf(b, "} %" PRId64 "\n", entry_value(&pub->decisions[i], (enum entry_metric)m));
		}
	}
	family(b, "rtune_decision_info",
	       "What kind of answer each value of the entry is (value 1): verdicts, pinned or measured, why it was "
	       "published.");
	for (size_t i = 0; i < pub->n_decisions; i++) {
		const struct rt_agent_decision *d = &pub->decisions[i];

		rt_buf_puts(b, "rtune_decision_info{");
		entry_labels(b, d);
		rt_store_prom_label(b, "inline_verdict", d->inline_verdict, false);
		rt_store_prom_label(b, "signal_verdict", d->signal_verdict, false);
		rt_store_prom_label(b, "inline_source", d->pinned_inline ? "pinned" : "measured", false);
		rt_store_prom_label(b, "signal_source", d->pinned_signal ? "pinned" : "measured", false);
		rt_store_prom_label(b, "change", d->change, false);
		rt_store_prom_label(b, "run_id", d->run_id, false);
		rt_buf_puts(b, "} 1\n");
	}
}

void rt_publish_prom_render(const struct rt_agent_publication *pub, struct rt_buf *b)
{
	/* the load bands and skips are read from the published document itself: what librtune loads is what is shown */
	json_t *doc = pub->profile_json ? rt_json_loadb(pub->profile_json, pub->profile_json_len, 0, NULL) : NULL;

	node_part(b, pub);
	device_part(b, pub);
	entry_part(b, pub);
	rt_store_prom_bands(b, doc, NULL);
	json_decref(doc);
}

int rt_agent_publish_prom(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			  struct rt_error *err)
{
	struct rt_buf b = { 0 };
	size_t n;
	int rc;

	if (!t->prom_textfile[0])
		return 0;
	n = strlen(t->prom_textfile);
	/* node_exporter's textfile collector reads only *.prom files (its temporary .X.tmp is ignored for that reason) */
	if (n < 5 || strcmp(t->prom_textfile + n - 5, ".prom"))
		return rt_error_set(err, EINVAL,
				    "cannot write '%s': node_exporter's textfile collector reads only *.prom",
				    t->prom_textfile);
	rt_publish_prom_render(pub, &b);
	rc = rt_publish_write(t->prom_textfile, &b, t->dry_run, err);
	free(b.p);
	return rc;
}
