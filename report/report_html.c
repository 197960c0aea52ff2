// SPDX-License-Identifier: MIT
/*
 * The fleet report as one self-contained HTML page: inline CSS and inline SVG charts, no script, nothing fetched from
 * the network, well-formed XML (every element closed, every attribute quoted and escaped) so it can be checked with an
 * XML parser. Charts: per group and slot the fleet's distribution of inline_threshold and signal_interval (histograms
 * on a log2 axis, outliers in red, the group median marked), and for nodes whose store holds the calibration run the
 * latency vs message size (inline and not, the chosen threshold marked) and the message rate vs signaling interval N
 * (the chosen N, the knee, marked).
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rtune/profile.h>

#define W 520
#define H 220
#define ML 56
#define MR 16
#define MT 24
#define MB 40
#define MAX_CURVE_CHARTS 24
#define BINS 40

struct axis {
	double lo, hi;
};

static const char *slot_name_html(const struct rp_slot *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u %s %s", s->device, s->port, rt_profile_opcode_name((enum rt_profile_opcode)s->opcode),
		 rt_profile_qp_type_name((enum rt_profile_qp_type)s->qp_type));
	return buf;
}

/* The smallest 4 * step >= v with step 1, 2, 2.5 or 5 times a power of ten: y axes with round tick labels. */
static double nice_max(double v)
{
	double mag, step;

	if (!(v > 0))
		return 1;
	mag = pow(10, floor(log10(v / 4)));
	step = v / 4 / mag;
	step = step <= 1 ? 1 : step <= 2 ? 2 : step <= 2.5 ? 2.5 : step <= 5 ? 5 : 10;
	return 4 * step * mag;
}

static double px(const struct axis *a, double v)
{
	return ML + (v - a->lo) / (a->hi - a->lo) * (W - ML - MR);
}

static double py(const struct axis *a, double v)
{
	return H - MB - (v - a->lo) / (a->hi - a->lo) * (H - MT - MB);
}

static void svg_open(struct rt_buf *b, const char *title)
{
	rt_buf_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>", W, H, W, H);
	rp_bescape(b, title);
	rt_buf_printf(b,
		      "</title><rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#cccccc\"/>"
		      "<text x=\"%d\" y=\"16\" class=\"t\">",
		      W, H, ML);
	rp_bescape(b, title);
	rt_buf_puts(b, "</text>");
}

/* Axes with a log2 x axis (ticks at powers of two) and a linear y axis; labels escaped. */
static void svg_axes(struct rt_buf *b, const struct axis *x, const struct axis *y, const char *xlabel,
		     const char *ylabel, double x_offset)
{
	rt_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\"/>", ML, H - MB, W - MR,
		      H - MB);
	rt_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\"/>", ML, MT, ML, H - MB);
	for (int e = x_offset > 0 ? 3 : (int)ceil(x->lo); e <= (int)floor(x->hi); e++) {
		/* with an offset (threshold + 8, so that 0 fits a log axis) ticks sit at 0 and powers of two from 16 */
		double v = x_offset > 0 ? (e == 3 ? 0 : pow(2, e)) : pow(2, e);
		double xx = px(x, x_offset > 0 ? log2(v + x_offset) : e);

		if (xx < ML || xx > W - MR)
			continue;
		rt_buf_printf(b,
			      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333333\"/>"
			      "<text x=\"%.1f\" y=\"%d\" class=\"a\" text-anchor=\"middle\">%.0f</text>",
			      xx, H - MB, xx, H - MB + 4, xx, H - MB + 15, v);
	}
	for (int i = 0; i <= 4; i++) {
		double v = y->lo + (y->hi - y->lo) * i / 4, yy = py(y, v);

		rt_buf_printf(b,
			      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eeeeee\"/>"
			      "<text x=\"%d\" y=\"%.1f\" class=\"a\" text-anchor=\"end\">%.4g</text>",
			      ML, yy, W - MR, yy, ML - 4, yy + 4, v);
	}
	rt_buf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"middle\">", (ML + W - MR) / 2, H - 6);
	rp_bescape(b, xlabel);
	rt_buf_printf(
		b, "</text><text x=\"12\" y=\"%d\" class=\"a\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">",
		(MT + H - MB) / 2, (MT + H - MB) / 2);
	rp_bescape(b, ylabel);
	rt_buf_puts(b, "</text>");
}

/* Histogram of one metric over a slot's entries (log2 bins; outliers stacked in red; median marked). */
static void distribution(struct rt_buf *b, const struct rt_report *r, const struct rp_group *g, const struct rp_slot *s,
			 enum rp_metric m)
{
	double off = m == RP_M_THRESHOLD ? 8 : 0, lo = INFINITY, hi = -INFINITY, med;
	size_t all[BINS] = { 0 }, bad[BINS] = { 0 }, peak = 1;
	struct axis x, y;
	char title[256], name[96];

	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *nd = &r->nodes[g->nodes[k]];

		for (int i = 0; i < nd->n_entries; i++) {
			const struct rp_entry *e = &nd->entries[i];
			double v;

			if (e->port != s->port || e->opcode != s->opcode || e->qp_type != s->qp_type ||
			    strcmp(e->device, s->device))
				continue;
			v = log2((m == RP_M_THRESHOLD ? e->inline_threshold : e->signal_interval) + off);
			lo = fmin(lo, v);
			hi = fmax(hi, v);
		}
	}
	if (!isfinite(lo))
		return;
	x.lo = floor(lo) - 0.5;
	x.hi = ceil(hi) + 0.5;
	if (x.hi - x.lo < 3)
		x.hi = x.lo + 3;
	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *nd = &r->nodes[g->nodes[k]];

		for (int i = 0; i < nd->n_entries; i++) {
			const struct rp_entry *e = &nd->entries[i];
			double v;
			int bin;

			if (e->port != s->port || e->opcode != s->opcode || e->qp_type != s->qp_type ||
			    strcmp(e->device, s->device))
				continue;
			v = log2((m == RP_M_THRESHOLD ? e->inline_threshold : e->signal_interval) + off);
			bin = (int)((v - x.lo) / (x.hi - x.lo) * BINS);
			bin = bin < 0 ? 0 : bin >= BINS ? BINS - 1 : bin;
			all[bin]++;
			if (e->outlier_mask & (1u << m))
				bad[bin]++;
		}
	}
	for (int i = 0; i < BINS; i++)
		if (all[i] > peak)
			peak = all[i];
	y.lo = 0;
	y.hi = (double)((peak + 3) / 4 * 4); /* integer ticks */
	snprintf(title, sizeof(title), "%s: %s across %zu nodes", slot_name_html(s, name, sizeof(name)),
		 rp_metric_name(m), s->n);
	svg_open(b, title);
	svg_axes(b, &x, &y,
		 m == RP_M_THRESHOLD ? "inline_threshold (bytes, log scale)" : "signal_interval N (log scale)", "nodes",
		 off);
	for (int i = 0; i < BINS; i++) {
		double x0 = ML + (double)i / BINS * (W - ML - MR), bw = (double)(W - ML - MR) / BINS - 1;

		if (!all[i])
			continue;
		rt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4a7ab5\"/>", x0,
			      py(&y, (double)all[i]), bw, py(&y, 0) - py(&y, (double)all[i]));
		if (bad[i])
			rt_buf_printf(b,
				      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#d62728\"/>",
				      x0, py(&y, (double)bad[i]), bw, py(&y, 0) - py(&y, (double)bad[i]));
	}
	med = log2(s->st[m].median + off);
	rt_buf_printf(
		b,
		"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#2ca02c\" stroke-width=\"2\" "
		"stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" class=\"a\" fill=\"#2ca02c\">median %.0f</text>",
		px(&x, med), MT, px(&x, med), H - MB, px(&x, med) + 4, MT + 10, s->st[m].median);
	rt_buf_puts(b, "</svg>\n");
}

static void latency_chart(struct rt_buf *b, const struct rp_node *nd, const struct rp_entry *e)
{
	const struct rp_curve *c = e->curve;
	struct axis x = { INFINITY, -INFINITY }, y = { 0, 0 };
	char title[256];

	for (int i = 0; i < c->n_lat; i++) {
		double v = log2(c->lat[i].bytes ? c->lat[i].bytes : 1);

		x.lo = fmin(x.lo, v);
		x.hi = fmax(x.hi, v);
		if (!isnan(c->lat[i].inl_ns))
			y.hi = fmax(y.hi, c->lat[i].inl_ns);
		if (!isnan(c->lat[i].noinl_ns))
			y.hi = fmax(y.hi, c->lat[i].noinl_ns);
	}
	if (!isfinite(x.lo) || y.hi <= 0)
		return;
	x.lo = floor(x.lo) - 0.25;
	x.hi = ceil(x.hi) + 0.25;
	y.hi = nice_max(y.hi * 1.05);
	snprintf(title, sizeof(title), "%s %s/%u %s: latency vs size, threshold %" PRIu32 " B", nd->hostname, e->device,
		 e->port, rt_profile_opcode_name((enum rt_profile_opcode)e->opcode), e->inline_threshold);
	svg_open(b, title);
	svg_axes(b, &x, &y, "message size (bytes, log scale)", "median latency (ns)", 0);
	for (int pass = 0; pass < 2; pass++) {
		bool first = true;

		rt_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			      pass ? "#ff7f0e" : "#1f77b4");
		/* points in size order */
		for (int done = 0, last = -1; done < c->n_lat; done++) {
			int k = -1;

			for (int i = 0; i < c->n_lat; i++)
				if ((int64_t)c->lat[i].bytes > last && (k < 0 || c->lat[i].bytes < c->lat[k].bytes))
					k = i;
			if (k < 0)
				break;
			last = (int)c->lat[k].bytes;
			{
				float v = pass ? c->lat[k].noinl_ns : c->lat[k].inl_ns;

				if (isnan(v))
					continue;
				rt_buf_printf(b, "%s%.1f,%.1f", first ? "" : " ",
					      px(&x, log2(c->lat[k].bytes ? c->lat[k].bytes : 1)), py(&y, v));
				first = false;
			}
		}
		rt_buf_puts(b, "\"/>");
	}
	if (e->inline_threshold > 0) {
		double tx = px(&x, log2(e->inline_threshold));

		rt_buf_printf(
			b,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" stroke-width=\"2\" "
			"stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%d\" class=\"a\" fill=\"#d62728\">threshold %" PRIu32
			" B</text>",
			tx, MT, tx, H - MB, tx + 4, MT + 10, e->inline_threshold);
	}
	rt_buf_printf(b,
		      "<text x=\"%d\" y=\"%d\" class=\"a\" fill=\"#1f77b4\">inline</text>"
		      "<text x=\"%d\" y=\"%d\" class=\"a\" fill=\"#ff7f0e\">not inline</text>",
		      W - MR - 110, H - MB - 22, W - MR - 110, H - MB - 10);
	rt_buf_puts(b, "</svg>\n");
}

static void rate_chart(struct rt_buf *b, const struct rp_node *nd, const struct rp_entry *e)
{
	const struct rp_curve *c = e->curve;
	struct axis x = { INFINITY, -INFINITY }, y = { 0, 0 };
	char title[256];
	bool first = true;

	for (int i = 0; i < c->n_rate; i++) {
		x.lo = fmin(x.lo, log2(c->rate[i].n));
		x.hi = fmax(x.hi, log2(c->rate[i].n));
		y.hi = fmax(y.hi, c->rate[i].mops);
	}
	if (!isfinite(x.lo) || y.hi <= 0)
		return;
	x.lo = floor(x.lo) - 0.25;
	x.hi = ceil(x.hi) + 0.25;
	y.hi = nice_max(y.hi * 1.05);
	snprintf(title, sizeof(title), "%s %s/%u %s: rate vs N, knee at N=%" PRIu32, nd->hostname, e->device, e->port,
		 rt_profile_opcode_name((enum rt_profile_opcode)e->opcode), e->signal_interval);
	svg_open(b, title);
	svg_axes(b, &x, &y, "signal interval N (log scale)", "message rate (Mops)", 0);
	rt_buf_puts(b, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"");
	for (int done = 0, last = 0; done < c->n_rate; done++) {
		int k = -1;

		for (int i = 0; i < c->n_rate; i++)
			if ((int)c->rate[i].n > last && (k < 0 || c->rate[i].n < c->rate[k].n))
				k = i;
		if (k < 0)
			break;
		last = (int)c->rate[k].n;
		rt_buf_printf(b, "%s%.1f,%.1f", first ? "" : " ", px(&x, log2(c->rate[k].n)), py(&y, c->rate[k].mops));
		first = false;
	}
	rt_buf_puts(b, "\"/>");
	{
		double kx = px(&x, log2(e->signal_interval));

		rt_buf_printf(
			b,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" stroke-width=\"2\" "
			"stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%d\" class=\"a\" fill=\"#d62728\">knee N=%" PRIu32
			"</text>",
			kx, MT, kx, H - MB, kx + 4, MT + 10, e->signal_interval);
		if (!isnan(e->mops))
			rt_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#d62728\"/>", kx,
				      py(&y, e->mops));
	}
	rt_buf_puts(b, "</svg>\n");
}

static void stat_cell(struct rt_buf *b, const struct rp_stat *s, int dec)
{
	char m[32], lo[32], hi[32];

	if (!s->n)
		rt_buf_puts(b, "<td>-</td>");
	else
		rt_buf_printf(b, "<td>%s <span class=\"s\">[%s..%s]</span></td>", rp_fmt(m, sizeof(m), s->median, dec),
			      rp_fmt(lo, sizeof(lo), s->p10, dec), rp_fmt(hi, sizeof(hi), s->p90, dec));
}

static const char *pl(size_t n)
{
	return n == 1 ? "" : "s";
}

int rt_report_render_html(const struct rt_report *r, char **out, size_t *len)
{
	struct rt_buf b = { 0 };
	char now[32];
	int curves = 0;

	*out = NULL;
	*len = 0;
	rt_buf_puts(
		&b,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>rtune fleet report</title>"
		"<style>body{font-family:sans-serif;margin:16px;color:#222;background:#fafafa}"
		"table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
		"th{background:#e8eef6}.s{color:#777}.bad{background:#fde2e2}svg{margin:4px}.t{font-size:13px;"
		"font-weight:bold}.a{font-size:10px}h2{margin-top:28px}.p{color:#a00}</style></head><body>\n");
	rt_buf_printf(
		&b,
		"<h1>rtune fleet report</h1><p>%zu node%s in %zu group%s; %zu outlier node%s (%zu outlying entr%s);"
		" %zu drift%s; %zu stale or missing profile%s; %zu input problem%s. Generated %s by rtune %s",
		r->n_nodes, pl(r->n_nodes), r->n_groups, pl(r->n_groups), r->n_onodes, pl(r->n_onodes), r->n_outliers,
		r->n_outliers == 1 ? "y" : "ies", r->n_drifts, pl(r->n_drifts), r->n_stale, pl(r->n_stale),
		r->n_problems, pl(r->n_problems), rp_time(r->generated_at, now), RTUNE_VERSION);
	if (r->opts.now != r->generated_at)
		rt_buf_printf(&b, "; ages judged as of %s", rp_time(r->opts.now, now));
	rt_buf_puts(&b, ".</p>\n");
	if (r->n_problems) {
		rt_buf_puts(&b, "<h3>Inputs skipped</h3><ul>");
		for (size_t i = 0; i < r->n_problems; i++) {
			rt_buf_puts(&b, "<li class=\"p\">");
			rp_bescape(&b, r->problems[i]);
			rt_buf_puts(&b, "</li>");
		}
		rt_buf_puts(&b, "</ul>\n");
	}
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];

		rt_buf_printf(&b, "<h2>Group %s: %zu node%s</h2><p>", g->id, g->n_nodes, g->n_nodes == 1 ? "" : "s");
		rp_bescape(&b, g->label);
		rt_buf_puts(
			&b,
			"</p><table><tr><th>slot</th><th>nodes</th><th>inline_threshold B</th><th>signal_interval</th>"
			"<th>latency ns</th><th>Mops</th><th>recommended</th></tr>\n");
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			char name[96];

			rt_buf_puts(&b, "<tr><td>");
			rp_bescape(&b, slot_name_html(s, name, sizeof(name)));
			rt_buf_printf(&b, "</td><td>%zu</td>", s->n);
			stat_cell(&b, &s->st[RP_M_THRESHOLD], 0);
			stat_cell(&b, &s->st[RP_M_INTERVAL], 0);
			stat_cell(&b, &s->st[RP_M_LAT], 0);
			stat_cell(&b, &s->st[RP_M_MOPS], -1);
			if (s->has_rec)
				rt_buf_printf(&b,
					      "<td>inline &#8804; %" PRIu32 " B (max_inline_data %" PRIu32
					      "), signal every %" PRIu32 ", sq %" PRIu32 ", cq %" PRIu32
					      " &#8212; %s, %zu nodes</td></tr>\n",
					      s->rec_threshold, s->rec_max_inline, s->rec_interval, s->rec_sq_depth,
					      s->rec_cq_depth, s->rec_confidence, s->rec_basis);
			else
				rt_buf_puts(&b, "<td>-</td></tr>\n");
		}
		rt_buf_puts(&b, "</table>\n<div>");
		for (size_t si = 0; si < g->n_slots && si < 4; si++) {
			distribution(&b, r, g, &g->slots[si], RP_M_THRESHOLD);
			distribution(&b, r, g, &g->slots[si], RP_M_INTERVAL);
		}
		rt_buf_puts(&b, "</div>\n");
		{
			bool any = false;

			/* nodes first: one row per node, its causes and the entries affected */
			for (size_t i = 0; i < r->n_onodes; i++) {
				const struct rp_onode *on = &r->onodes[i];
				const struct rp_node *nd = &r->nodes[on->node];
				size_t last = SIZE_MAX;

				if ((size_t)nd->group != gi)
					continue;
				if (!any)
					rt_buf_puts(&b, "<h3>Outlier nodes</h3><table><tr><th>node</th><th>causes</th>"
							"<th>entries affected</th></tr>\n");
				any = true;
				rt_buf_puts(&b, "<tr class=\"bad\"><td>");
				rp_bescape(&b, nd->hostname);
				rt_buf_puts(&b, "</td><td>");
				for (size_t k = 0; k < on->count; k++) {
					const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];

					/* the causes of the node's outliers, each once */
					if (k == 0 ||
					    strcmp(o->causes, r->outliers[r->by_node[on->first + k - 1]].causes)) {
						rt_buf_puts(&b, k ? "; " : "");
						rp_bescape(&b, o->causes);
					}
				}
				rt_buf_puts(&b, "</td><td>");
				for (size_t k = 0; k < on->count; k++) {
					const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];
					const struct rp_entry *e = &nd->entries[o->entry];

					if (o->entry == last)
						continue;
					rt_buf_puts(&b, last == SIZE_MAX ? "" : ", ");
					last = o->entry;
					rp_bescape(&b, e->device);
					rt_buf_printf(&b, "/%u %s %s", e->port,
						      rt_profile_opcode_name((enum rt_profile_opcode)e->opcode),
						      rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type));
				}
				rt_buf_puts(&b, "</td></tr>\n");
			}
			if (any)
				rt_buf_puts(&b, "</table>\n");
			any = false;
			for (size_t i = 0; i < r->n_outliers; i++) {
				const struct rp_outlier *o = &r->outliers[i];
				const struct rp_entry *e = &r->nodes[o->node].entries[o->entry];
				char v[32], m[32];

				if (o->group != gi)
					continue;
				if (!any)
					rt_buf_puts(
						&b,
						"<h3>Outlying entries</h3><table><tr><th>node</th><th>entry</th><th>metric</th>"
						"<th>value</th><th>group median</th><th>robust z</th><th>likely cause</th>"
						"<th>evidence</th></tr>\n");
				any = true;
				rt_buf_puts(&b, "<tr class=\"bad\"><td>");
				rp_bescape(&b, r->nodes[o->node].hostname);
				rt_buf_puts(&b, "</td><td>");
				rp_bescape(&b, e->device);
				rt_buf_printf(&b, "/%u %s %s</td><td>%s</td><td>%s</td><td>%s</td><td>%+.1f</td><td>",
					      e->port, rt_profile_opcode_name((enum rt_profile_opcode)e->opcode),
					      rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type),
					      rp_metric_name(o->metric),
					      rp_fmt(v, sizeof(v), o->value, o->metric == RP_M_MOPS ? -1 : 0),
					      rp_fmt(m, sizeof(m), o->median, o->metric == RP_M_MOPS ? -1 : 0), o->z);
				rp_bescape(&b, o->causes);
				rt_buf_puts(&b, "</td><td>");
				rp_bescape(&b, o->evidence);
				rt_buf_puts(&b, "</td></tr>\n");
			}
			if (any)
				rt_buf_puts(&b, "</table>\n");
		}
		/* curves of nodes whose store holds the run (bounded) */
		for (size_t k = 0; k < g->n_nodes && curves < MAX_CURVE_CHARTS; k++) {
			const struct rp_node *nd = &r->nodes[g->nodes[k]];

			for (int i = 0; i < nd->n_entries && curves < MAX_CURVE_CHARTS; i++) {
				const struct rp_entry *e = &nd->entries[i];

				if (!e->curve)
					continue;
				if (!curves)
					rt_buf_puts(&b, "<h3>Calibration curves</h3>");
				rt_buf_puts(&b, "<div>");
				if (e->curve->n_lat)
					latency_chart(&b, nd, e);
				if (e->curve->n_rate)
					rate_chart(&b, nd, e);
				rt_buf_puts(&b, "</div>\n");
				curves++;
			}
		}
	}
	if (r->n_stale) {
		rt_buf_puts(&b, "<h2>Stale or missing profiles</h2><table><tr><th>node</th><th>group</th><th>what</th>"
				"<th>newest profile</th><th>source</th></tr>\n");
		for (size_t i = 0; i < r->n_stale; i++) {
			const struct rp_stale *st = &r->stale[i];
			const struct rp_node *nd = &r->nodes[st->node];

			rt_buf_puts(&b, "<tr class=\"bad\"><td>");
			rp_bescape(&b, nd->hostname);
			rt_buf_printf(&b, "</td><td>%s</td><td>", r->groups[nd->group].id);
			if (st->missing_device) {
				rt_buf_puts(&b, "no profile for device ");
				rp_bescape(&b, st->device);
			} else {
				rt_buf_printf(&b, "stale: %" PRId64 " days old", (r->opts.now - nd->newest) / 86400);
			}
			rt_buf_printf(&b, "</td><td>%s</td><td>", rp_time(nd->newest, now));
			rp_bescape(&b, nd->source);
			rt_buf_puts(&b, "</td></tr>\n");
		}
		rt_buf_puts(&b, "</table>\n");
	}
	if (r->n_drifts) {
		rt_buf_puts(&b,
			    "<h2>Drift</h2><table><tr><th>node</th><th>device/port</th><th>metric</th><th>latest</th>"
			    "<th>history median</th><th>runs</th><th>store</th></tr>\n");
		for (size_t i = 0; i < r->n_drifts; i++) {
			const struct rp_drift *d = &r->drifts[i];

			rt_buf_puts(&b, "<tr class=\"bad\"><td>");
			rp_bescape(&b, d->hostname);
			rt_buf_puts(&b, "</td><td>");
			rp_bescape(&b, d->device);
			rt_buf_printf(&b, "/%d</td><td>%s</td><td>%.0f</td><td>%.0f</td><td>%zu</td><td>", d->port,
				      rp_metric_name(d->metric), d->latest, d->hist_median, d->hist_runs);
			rp_bescape(&b, d->source);
			rt_buf_puts(&b, "</td></tr>\n");
		}
		rt_buf_puts(&b, "</table>\n");
	}
	rt_buf_puts(&b, "</body></html>\n");
	if (b.oom) {
		free(b.p);
		return ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
