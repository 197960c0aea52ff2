// SPDX-License-Identifier: MIT
/*
 * The fleet report's text, JSON and CSV writers, and the small text buffer the HTML writer shares. The terminal table
 * is for people; JSON (schema "rtune-report" 1.0, built with jansson) and CSV (one row per node entry, RFC 4180
 * quoting) are for tools. Field meanings are in docs/report.md.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rtune/profile.h>

void rp_bescape(struct rt_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': rt_buf_puts(b, "&amp;"); break;
		case '<': rt_buf_puts(b, "&lt;"); break;
		case '>': rt_buf_puts(b, "&gt;"); break;
		case '"': rt_buf_puts(b, "&quot;"); break;
		case '\'': rt_buf_puts(b, "&#39;"); break;
		default:
			/* control characters are not allowed in XML 1.0 text */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				rt_buf_puts(b, " ");
			else
				rt_buf_printf(b, "%c", *s);
		}
	}
}

const char *rp_fmt(char *buf, size_t len, double v, int decimals)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (decimals < 0) /* three significant digits: message rates from 0.002 (Soft-RoCE) to 150 Mops */
		snprintf(buf, len, "%.3g", v);
	else
		snprintf(buf, len, "%.*f", decimals, v);
	return buf;
}

const char *rp_time(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return out;
}

static const char *slot_name(const struct rp_slot *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u %s %s", s->device, s->port, rt_profile_opcode_name((enum rt_profile_opcode)s->opcode),
		 rt_profile_qp_type_name((enum rt_profile_qp_type)s->qp_type));
	return buf;
}

static size_t remote_calibrations(const struct rt_report *r, const struct rp_group *g)
{
	size_t n = 0;

	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *nd = &r->nodes[g->nodes[k]];

		for (int i = 0; i < nd->n_entries; i++)
			if (nd->entries[i].cal_local == 0) {
				n++;
				break;
			}
	}
	return n;
}

/* ---- terminal table --------------------------------------------------------------------------------------------- */

static void text_stat(struct rt_buf *b, const struct rp_stat *s, int dec)
{
	char m[32], lo[32], hi[32], cell[128];

	if (!s->n) {
		rt_buf_printf(b, "  %-24s", "-");
		return;
	}
	snprintf(cell, sizeof(cell), "%s [%s..%s]", rp_fmt(m, sizeof(m), s->median, dec),
		 rp_fmt(lo, sizeof(lo), s->p10, dec), rp_fmt(hi, sizeof(hi), s->p90, dec));
	rt_buf_printf(b, "  %-24s", cell);
}

int rt_report_write_text(const struct rt_report *r, FILE *f)
{
	struct rt_buf b = { 0 };
	int rc = 0;

	rt_buf_printf(&b, "rtune report: %zu node%s in %zu group%s; %zu outlier%s; %zu drift%s; %zu input problem%s\n",
		   r->n_nodes, r->n_nodes == 1 ? "" : "s", r->n_groups, r->n_groups == 1 ? "" : "s", r->n_outliers,
		   r->n_outliers == 1 ? "" : "s", r->n_drifts, r->n_drifts == 1 ? "" : "s", r->n_problems,
		   r->n_problems == 1 ? "" : "s");
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];
		size_t remote = remote_calibrations(r, g);

		rt_buf_printf(&b, "\ngroup %s: %zu node%s: %s\n", g->id, g->n_nodes, g->n_nodes == 1 ? "" : "s", g->label);
		if (remote)
			rt_buf_printf(&b, "  %zu node%s calibrated from a CPU remote to the device's NUMA node\n", remote,
				   remote == 1 ? "" : "s");
		rt_buf_printf(&b, "  %-24s %5s  %-24s  %-24s  %-24s  %-24s\n", "slot", "nodes", "inline_threshold B",
			   "signal_interval", "latency_ns", "mops");
		rt_buf_printf(&b, "  %-24s %5s  %-24s  %-24s  %-24s  %-24s\n", "", "", "median [p10..p90]",
			   "median [p10..p90]", "median [p10..p90]", "median [p10..p90]");
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			char name[96];

			rt_buf_printf(&b, "  %-24s %5zu", slot_name(s, name, sizeof(name)), s->n);
			text_stat(&b, &s->st[RP_M_THRESHOLD], 0);
			text_stat(&b, &s->st[RP_M_INTERVAL], 0);
			text_stat(&b, &s->st[RP_M_LAT], 0);
			text_stat(&b, &s->st[RP_M_MOPS], -1);
			rt_buf_puts(&b, "\n");
		}
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			char name[96];

			if (!s->has_rec)
				continue;
			rt_buf_printf(&b, "  recommended %s: inline_threshold %" PRIu32 ", max_inline_data %" PRIu32
				   ", signal_interval %" PRIu32 ", sq_depth %" PRIu32 ", cq_depth %" PRIu32
				   " (%s confidence, from %zu node%s)\n", slot_name(s, name, sizeof(name)), s->rec_threshold,
				   s->rec_max_inline, s->rec_interval, s->rec_sq_depth, s->rec_cq_depth, s->rec_confidence,
				   s->rec_basis, s->rec_basis == 1 ? "" : "s");
		}
		if (g->n_nodes < (size_t)r->opts.min_group)
			rt_buf_printf(&b, "  outliers not judged: fewer than %d nodes\n", r->opts.min_group);
		for (size_t i = 0; i < r->n_outliers; i++) {
			const struct rp_outlier *o = &r->outliers[i];
			const struct rp_entry *e = &r->nodes[o->node].entries[o->entry];
			char v[32], m[32];

			if (o->group != gi)
				continue;
			rt_buf_printf(&b, "  OUTLIER %s %s/%u %s %s: %s %s (group median %s, robust z %+.1f)\n    cause: %s\n"
				   "    evidence: %s\n", r->nodes[o->node].hostname, e->device, e->port,
				   rt_profile_opcode_name((enum rt_profile_opcode)e->opcode),
				   rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type), rp_metric_name(o->metric),
				   rp_fmt(v, sizeof(v), o->value, o->metric == RP_M_MOPS ? -1 : 0),
				   rp_fmt(m, sizeof(m), o->median, o->metric == RP_M_MOPS ? -1 : 0), o->z, o->causes,
				   o->evidence);
		}
	}
	if (r->n_drifts) {
		rt_buf_puts(&b, "\ndrift (a node's latest run moved away from its own history):\n");
		for (size_t i = 0; i < r->n_drifts; i++) {
			const struct rp_drift *d = &r->drifts[i];

			rt_buf_printf(&b, "  DRIFT %s %s/%d %s: %.0f now, %.0f before (median of %zu runs) [%s]\n", d->hostname,
				   d->device, d->port, rp_metric_name(d->metric), d->latest, d->hist_median, d->hist_runs,
				   d->source);
		}
	}
	if (b.oom)
		rc = ENOMEM;
	else if (fwrite(b.p, 1, b.len, f) != b.len || fflush(f))
		rc = EIO;
	free(b.p);
	return rc;
}

/* ---- JSON ---------------------------------------------------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *stat_json(const struct rp_stat *s)
{
	if (!s->n)
		return json_null();
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "n", (json_int_t)s->n, "median", num_or_null(s->median),
			 "mad", num_or_null(s->mad), "min", num_or_null(s->min), "max", num_or_null(s->max), "p10",
			 num_or_null(s->p10), "p90", num_or_null(s->p90));
}

static json_t *report_json(const struct rt_report *r)
{
	json_t *doc = json_object(), *groups = json_array(), *outl = json_array(), *drift = json_array(),
	       *probs = json_array();
	char now[32];

	if (!doc || !groups || !outl || !drift || !probs)
		goto oom;
	for (size_t i = 0; i < r->n_problems; i++)
		json_array_append_new(probs, json_string(r->problems[i]));
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];
		json_t *nodes = json_array(), *slots = json_array(), *jg;

		for (size_t k = 0; nodes && k < g->n_nodes; k++) {
			const struct rp_node *nd = &r->nodes[g->nodes[k]];
			bool remote = false;

			for (int i = 0; i < nd->n_entries; i++)
				remote |= nd->entries[i].cal_local == 0;
			json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:b}", "hostname", nd->hostname,
							       "hw_signature", nd->hw_sig, "source", nd->source,
							       "remote_numa_calibration", remote));
		}
		for (size_t si = 0; slots && si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			json_t *rec = s->has_rec ?
				json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "inline_threshold",
					  (json_int_t)s->rec_threshold, "max_inline_data", (json_int_t)s->rec_max_inline,
					  "signal_interval", (json_int_t)s->rec_interval, "sq_depth",
					  (json_int_t)s->rec_sq_depth, "cq_depth", (json_int_t)s->rec_cq_depth, "confidence",
					  s->rec_confidence, "basis_nodes", (json_int_t)s->rec_basis) : json_null();

			json_array_append_new(slots, json_pack("{s:s, s:i, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o}",
				"device", s->device, "port", s->port,
				"opcode", rt_profile_opcode_name((enum rt_profile_opcode)s->opcode),
				"qp_type", rt_profile_qp_type_name((enum rt_profile_qp_type)s->qp_type),
				"entries", (json_int_t)s->n, "inline_threshold", stat_json(&s->st[RP_M_THRESHOLD]),
				"signal_interval", stat_json(&s->st[RP_M_INTERVAL]), "latency_ns",
				stat_json(&s->st[RP_M_LAT]), "mops", stat_json(&s->st[RP_M_MOPS]), "recommended", rec));
		}
		jg = json_pack("{s:s, s:s, s:b, s:I, s:I, s:o, s:o}", "id", g->id, "label", g->label, "from_hardware",
			       g->from_hw, "node_count", (json_int_t)g->n_nodes, "remote_numa_calibrations",
			       (json_int_t)remote_calibrations(r, g), "slots", slots ? slots : json_null(), "nodes",
			       nodes ? nodes : json_null());
		if (!jg || json_array_append_new(groups, jg))
			goto oom;
	}
	for (size_t i = 0; i < r->n_outliers; i++) {
		struct rt_report_outlier_view v;

		rt_report_outlier_at(r, i, &v);
		json_array_append_new(outl, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:f, s:f, s:f, s:s, s:o, s:s}",
			"group", v.group, "hostname", v.hostname, "device", v.device, "port", v.port, "opcode", v.opcode,
			"qp_type", v.qp_type, "metric", v.metric, "value", v.value, "group_median", v.group_median,
			"robust_z", v.robust_z, "cause", v.cause, "causes", json_string(v.causes), "evidence", v.evidence));
	}
	for (size_t i = 0; i < r->n_drifts; i++) {
		const struct rp_drift *d = &r->drifts[i];

		json_array_append_new(drift, json_pack("{s:s, s:s, s:i, s:s, s:f, s:f, s:I, s:s, s:s}", "hostname",
			d->hostname, "device", d->device, "port", d->port, "metric", rp_metric_name(d->metric), "latest",
			d->latest, "history_median", d->hist_median, "history_runs", (json_int_t)d->hist_runs, "source",
			d->source, "evidence", d->evidence));
	}
	json_object_set_new(doc, "schema", json_pack("{s:s, s:s}", "name", "rtune-report", "version", "1.0"));
	json_object_set_new(doc, "rtune_version", json_string(RTUNE_VERSION));
	json_object_set_new(doc, "generated_at", json_string(rp_time(r->opts.now, now)));
	json_object_set_new(doc, "node_count", json_integer((json_int_t)r->n_nodes));
	json_object_set_new(doc, "problems", probs);
	json_object_set_new(doc, "groups", groups);
	json_object_set_new(doc, "outliers", outl);
	json_object_set_new(doc, "drift", drift);
	return doc;
oom:
	json_decref(doc);
	json_decref(groups);
	json_decref(outl);
	json_decref(drift);
	json_decref(probs);
	return NULL;
}

int rt_report_write_json(const struct rt_report *r, FILE *f)
{
	json_t *doc = report_json(r);
	int rc;

	if (!doc)
		return ENOMEM;
	rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? EIO : 0;
	if (!rc && (fputc('\n', f) == EOF || fflush(f)))
		rc = EIO;
	json_decref(doc);
	return rc;
}

/* ---- CSV ------------------------------------------------------------------------------------------------------------ */

static void csv_field(struct rt_buf *b, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) {
		rt_buf_puts(b, "\"");
		for (; *s; s++)
			rt_buf_printf(b, *s == '"' ? "\"\"" : "%c", *s);
		rt_buf_puts(b, "\"");
	} else {
		rt_buf_puts(b, s);
	}
	rt_buf_puts(b, last ? "\r\n" : ",");
}

int rt_report_write_csv(const struct rt_report *r, FILE *f)
{
	static const char *const head[] = { "group", "hostname", "source", "device", "port", "opcode", "qp_type",
		"inline_threshold", "max_inline_data", "signal_interval", "latency_ns", "mops", "confidence", "measured_at",
		"calibration_cpu_numa_node", "calibration_numa_local", "outlier_metrics", "cause", "evidence" };
	const size_t nh = sizeof(head) / sizeof(head[0]);
	struct rt_buf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < nh; i++)
		csv_field(&b, head[i], i + 1 == nh);
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];

		for (size_t k = 0; k < g->n_nodes; k++) {
			const struct rp_node *nd = &r->nodes[g->nodes[k]];

			for (int i = 0; i < nd->n_entries; i++) {
				const struct rp_entry *e = &nd->entries[i];
				const struct rp_outlier *first = NULL;
				char num[32], metrics[96] = "";

				for (size_t oi = 0; e->outlier_mask && oi < r->n_outliers; oi++) {
					const struct rp_outlier *o = &r->outliers[oi];

					if (o->node != g->nodes[k] || o->entry != (size_t)i)
						continue;
					if (!first)
						first = o;
					snprintf(metrics + strlen(metrics), sizeof(metrics) - strlen(metrics), "%s%s",
						 metrics[0] ? ";" : "", rp_metric_name(o->metric));
				}
				csv_field(&b, g->id, false);
				csv_field(&b, nd->hostname, false);
				csv_field(&b, nd->source, false);
				csv_field(&b, e->device, false);
				snprintf(num, sizeof(num), "%u", e->port);
				csv_field(&b, num, false);
				csv_field(&b, rt_profile_opcode_name((enum rt_profile_opcode)e->opcode), false);
				csv_field(&b, rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type), false);
				snprintf(num, sizeof(num), "%" PRIu32, e->inline_threshold);
				csv_field(&b, num, false);
				snprintf(num, sizeof(num), "%" PRIu32, e->max_inline_data);
				csv_field(&b, num, false);
				snprintf(num, sizeof(num), "%" PRIu32, e->signal_interval);
				csv_field(&b, num, false);
				csv_field(&b, isnan(e->lat_ns) ? "" : rp_fmt(num, sizeof(num), e->lat_ns, 1), false);
				csv_field(&b, isnan(e->mops) ? "" : rp_fmt(num, sizeof(num), e->mops, 3), false);
				csv_field(&b, rt_profile_confidence_name((enum rt_profile_confidence)e->confidence), false);
				csv_field(&b, rp_time(e->measured_at, num), false);
				snprintf(num, sizeof(num), "%d", e->cal_cpu_numa);
				csv_field(&b, e->cal_cpu_numa < 0 ? "" : num, false);
				csv_field(&b, e->cal_local < 0 ? "" : e->cal_local ? "true" : "false", false);
				csv_field(&b, metrics, false);
				csv_field(&b, first ? first->cause : "", false);
				csv_field(&b, first ? first->evidence : "", true);
			}
		}
	}
	if (b.oom)
		rc = ENOMEM;
	else if (fwrite(b.p, 1, b.len, f) != b.len || fflush(f))
		rc = EIO;
	free(b.p);
	return rc;
}
