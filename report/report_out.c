// SPDX-License-Identifier: MIT
/*
 * The fleet report's text, JSON and CSV writers, and the small text helpers the HTML writer shares. The terminal table
 * is for people; JSON (schema "rtune-report" 1.0) and CSV (one row per node entry, RFC 4180 quoting) are for tools.
 * Field meanings are in docs/report.md. All three are streamed through a fixed buffer (a fleet's JSON or CSV is tens of
 * MB): the JSON is written as it is walked, in exactly the layout jansson's json_dumpf(JSON_INDENT(2)) gives, instead
 * of building a jansson tree of every node first.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rtune/profile.h>

/* The JSON report's schema version: 2.0 made "causes" an array and added "outlier_nodes", "stale", "judged_at". */
#define RP_JSON_VERSION "2.0"

/* ---- the streamed output buffer --------------------------------------------------------------------------------- */

int rp_out_open(struct rp_out *o, FILE *f)
{
	o->f = f;
	o->err = 0;
	o->len = 0;
	o->buf = malloc(RP_OUT_BUF);
	return o->buf ? 0 : ENOMEM;
}

static void out_drain(struct rp_out *o)
{
	if (o->len && !o->err && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->err = EIO;
	o->len = 0;
}

int rp_out_close(struct rp_out *o)
{
	out_drain(o);
	if (!o->err && fflush(o->f))
		o->err = EIO;
	free(o->buf);
	o->buf = NULL;
	return o->err;
}

void rp_out_write(struct rp_out *o, const char *p, size_t n)
{
	if (o->err)
		return;
	if (n > RP_OUT_BUF - o->len) {
		out_drain(o);
		if (n > RP_OUT_BUF) {
			if (!o->err && fwrite(p, 1, n, o->f) != n)
				o->err = EIO;
			return;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

void rp_out_puts(struct rp_out *o, const char *s)
{
	rp_out_write(o, s, strlen(s));
}

void rp_out_printf(struct rp_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, RP_OUT_BUF - o->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->err = EIO;
		return;
	}
	if ((size_t)n < RP_OUT_BUF - o->len) {
		o->len += (size_t)n;
		return;
	}
	/* did not fit: the stream takes what is buffered, then the text is formatted again */
	out_drain(o);
	if ((size_t)n < RP_OUT_BUF) {
		va_start(ap, fmt);
		vsnprintf(o->buf, RP_OUT_BUF, fmt, ap);
		va_end(ap);
		o->len = (size_t)n;
	} else {
		char *t = malloc((size_t)n + 1);

		if (!t) {
			o->err = ENOMEM;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(t, (size_t)n + 1, fmt, ap);
		va_end(ap);
		rp_out_write(o, t, (size_t)n);
		free(t);
	}
}

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

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

/* "entry name" of an entry: "mlx5_0/1 send rc". */
static const char *entry_name(const struct rp_entry *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u %s %s", e->device, e->port, rt_profile_opcode_name((enum rt_profile_opcode)e->opcode),
		 rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type));
	return buf;
}

#define RP_NAMED_MAX 12

/* "  3 nodes calibrated from a CPU remote to the device's NUMA node: a, b, c" (the first RP_NAMED_MAX named). */
static void text_remote(struct rp_out *b, const struct rt_report *r, const struct rp_group *g, size_t remote)
{
	size_t named = 0;

	rp_out_printf(b, "  %zu node%s calibrated from a CPU remote to the device's NUMA node:", remote,
		      plural(remote));
	for (size_t k = 0; k < g->n_nodes && named < RP_NAMED_MAX; k++) {
		const struct rp_node *nd = &r->nodes[g->nodes[k]];

		for (int i = 0; i < nd->n_entries; i++)
			if (nd->entries[i].cal_local == 0) {
				rp_out_printf(b, "%s %s", named ? "," : "", nd->hostname);
				named++;
				break;
			}
	}
	if (remote > named)
		rp_out_printf(b, " and %zu more (--json lists them all)", remote - named);
	rp_out_puts(b, "\n");
}

/* The union of the causes of one node's outliers, in order of first appearance, into codes (max entries). */
static size_t node_causes(const struct rt_report *r, const struct rp_onode *on, char (*buf)[48], size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k < on->count; k++) {
		const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];
		char tmp[sizeof(o->causes)];
		const char *codes[8];
		size_t nc = rp_outlier_causes(o, tmp, sizeof(tmp), codes, 8);

		for (size_t c = 0; c < nc; c++) {
			size_t j;

			for (j = 0; j < n && strcmp(buf[j], codes[c]); j++)
				;
			if (j == n && n < max)
				snprintf(buf[n++], 48, "%s", codes[c]);
		}
	}
	return n;
}

static void text_outlier_node(struct rp_out *b, const struct rt_report *r, const struct rp_onode *on)
{
	const struct rp_node *nd = &r->nodes[on->node];
	char causes[16][48], name[96];
	size_t nc = node_causes(r, on, causes, 16), last_entry = SIZE_MAX;
	const char *last_ev = NULL;

	rp_out_printf(b, "  OUTLIER NODE %s: ", nd->hostname);
	for (size_t c = 0; c < nc; c++)
		rp_out_printf(b, "%s%s", c ? ", " : "", causes[c]);
	rp_out_puts(b, "; entries:");
	for (size_t k = 0; k < on->count; k++) {
		const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];

		if (o->entry != last_entry)
			rp_out_printf(b, "%s %s", k ? "," : "", entry_name(&nd->entries[o->entry], name, sizeof(name)));
		last_entry = o->entry;
	}
	rp_out_puts(b, "\n");
	for (size_t k = 0; k < on->count; k++) {
		const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];
		char v[32], m[32];

		rp_out_printf(b, "    %s: %s %s (group median %s, robust z %+.1f)\n",
			      entry_name(&nd->entries[o->entry], name, sizeof(name)), rp_metric_name(o->metric),
			      rp_fmt(v, sizeof(v), o->value, o->metric == RP_M_MOPS ? -1 : 0),
			      rp_fmt(m, sizeof(m), o->median, o->metric == RP_M_MOPS ? -1 : 0), o->z);
		/* the same evidence for several entries of the node is said once */
		if (!last_ev || strcmp(last_ev, o->evidence))
			rp_out_printf(b, "      evidence: %s\n", o->evidence);
		last_ev = o->evidence;
	}
}

static void text_stat(struct rp_out *b, const struct rp_stat *s, int dec)
{
	char m[32], lo[32], hi[32], cell[128];

	if (!s->n) {
		rp_out_printf(b, "  %-24s", "-");
		return;
	}
	snprintf(cell, sizeof(cell), "%s [%s..%s]", rp_fmt(m, sizeof(m), s->median, dec),
		 rp_fmt(lo, sizeof(lo), s->p10, dec), rp_fmt(hi, sizeof(hi), s->p90, dec));
	rp_out_printf(b, "  %-24s", cell);
}

int rt_report_write_text(const struct rt_report *r, FILE *f)
{
	struct rp_out out, *b = &out;
	size_t oi = 0;

	if (rp_out_open(b, f))
		return ENOMEM;
	rp_out_printf(b,
		      "rtune report: %zu node%s in %zu group%s; %zu outlier node%s (%zu outlying entr%s); %zu drift%s; "
		      "%zu stale or missing profile%s; %zu input problem%s\n",
		      r->n_nodes, plural(r->n_nodes), r->n_groups, plural(r->n_groups), r->n_onodes,
		      plural(r->n_onodes), r->n_outliers, r->n_outliers == 1 ? "y" : "ies", r->n_drifts,
		      plural(r->n_drifts), r->n_stale, plural(r->n_stale), r->n_problems, plural(r->n_problems));
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];
		size_t remote = remote_calibrations(r, g);

		rp_out_printf(b, "\ngroup %s: %zu node%s: %s\n", g->id, g->n_nodes, g->n_nodes == 1 ? "" : "s",
			      g->label);
		if (remote)
			text_remote(b, r, g, remote);
		rp_out_printf(b, "  %-24s %5s  %-24s  %-24s  %-24s  %-24s\n", "slot", "nodes", "inline_threshold B",
			      "signal_interval", "latency_ns", "mops");
		rp_out_printf(b, "  %-24s %5s  %-24s  %-24s  %-24s  %-24s\n", "", "", "median [p10..p90]",
			      "median [p10..p90]", "median [p10..p90]", "median [p10..p90]");
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			char name[96];

			rp_out_printf(b, "  %-24s %5zu", slot_name(s, name, sizeof(name)), s->n);
			text_stat(b, &s->st[RP_M_THRESHOLD], 0);
			text_stat(b, &s->st[RP_M_INTERVAL], 0);
			text_stat(b, &s->st[RP_M_LAT], 0);
			text_stat(b, &s->st[RP_M_MOPS], -1);
			rp_out_puts(b, "\n");
		}
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			char name[96];

			if (!s->has_rec)
				continue;
			rp_out_printf(b,
				      "  recommended %s: inline_threshold %" PRIu32 ", max_inline_data %" PRIu32
				      ", signal_interval %" PRIu32 ", sq_depth %" PRIu32 ", cq_depth %" PRIu32
				      " (%s confidence, from %zu node%s)\n",
				      slot_name(s, name, sizeof(name)), s->rec_threshold, s->rec_max_inline,
				      s->rec_interval, s->rec_sq_depth, s->rec_cq_depth, s->rec_confidence,
				      s->rec_basis, s->rec_basis == 1 ? "" : "s");
		}
		if (g->n_nodes < (size_t)r->opts.min_group)
			rp_out_printf(b, "  outliers not judged: fewer than %d nodes\n", r->opts.min_group);
		/* one line per outlier node (its causes, the entries affected), then each outlying entry */
		for (; oi < r->n_onodes && r->outliers[r->by_node[r->onodes[oi].first]].group == gi; oi++)
			text_outlier_node(b, r, &r->onodes[oi]);
	}
	if (r->n_stale) {
		char when[32];

		rp_out_puts(b, "\nstale or missing profiles (recalibrate these nodes):\n");
		for (size_t i = 0; i < r->n_stale; i++) {
			const struct rp_stale *st = &r->stale[i];
			const struct rp_node *nd = &r->nodes[st->node];

			if (st->missing_device)
				rp_out_printf(b, "  NO PROFILE %s: device %s has no profile entry (group %s) [%s]\n",
					      nd->hostname, st->device, r->groups[nd->group].id, nd->source);
			else
				rp_out_printf(b,
					      "  STALE %s: newest profile measured %s, %" PRId64
					      " days before now (group %s) [%s]\n",
					      nd->hostname, rp_time(nd->newest, when),
					      (r->opts.now - nd->newest) / 86400, r->groups[nd->group].id, nd->source);
		}
	}
	if (r->n_drifts) {
		rp_out_puts(b, "\ndrift (a node's latest run moved away from its own history):\n");
		for (size_t i = 0; i < r->n_drifts; i++) {
			const struct rp_drift *d = &r->drifts[i];

			rp_out_printf(b, "  DRIFT %s %s/%d %s: %.0f now, %.0f before (median of %zu runs) [%s]\n",
				      d->hostname, d->device, d->port, rp_metric_name(d->metric), d->latest,
				      d->hist_median, d->hist_runs, d->source);
		}
	}
	return rp_out_close(b);
}

/* ---- JSON ---------------------------------------------------------------------------------------------------------- */

/* A JSON writer with jansson's JSON_INDENT(2) layout: containers open with their first member on a new line indented
 * by two spaces per level, members separated by ",\n", keys followed by ": ", empty containers as {} and []. */
struct jw {
	struct rp_out *o;
	int depth;
	bool first[16];
};

static void jw_newline(struct jw *w, int depth)
{
	static const char spaces[] = "\n                                ";

	rp_out_write(w->o, spaces, 1 + 2 * (size_t)(depth < 16 ? depth : 16));
}

static void jw_open(struct jw *w, char c)
{
	rp_out_write(w->o, &c, 1);
	w->first[++w->depth] = true;
}

static void jw_close(struct jw *w, char c)
{
	if (!w->first[w->depth])
		jw_newline(w, w->depth - 1);
	w->depth--;
	rp_out_write(w->o, &c, 1);
}

/* Starts the next member of the open container. */
static void jw_item(struct jw *w)
{
	if (!w->first[w->depth])
		rp_out_write(w->o, ",", 1);
	w->first[w->depth] = false;
	jw_newline(w, w->depth);
}

/* Length of the valid UTF-8 sequence at s (as jansson checks it: no overlong forms, no surrogates, at most
 * U+10FFFF), 0 when invalid. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0], cp, n;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	cp = c & (0x7f >> n);
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* A JSON string as jansson writes it: \" \\ \b \f \n \r \t, other control characters as \u00XX, UTF-8 as is. A byte
 * that is not valid UTF-8 (a file name can hold one) is written as U+FFFD (jansson would refuse the string). */
static void jw_str(struct jw *w, const char *str)
{
	const unsigned char *s = (const unsigned char *)str, *run = s;

	rp_out_write(w->o, "\"", 1);
	while (*s) {
		size_t n = utf8_seq(s);
		char esc[8];

		if (n && *s >= 0x20 && *s != '"' && *s != '\\') {
			s += n;
			continue;
		}
		rp_out_write(w->o, (const char *)run, (size_t)(s - run));
		if (!n) {
			rp_out_write(w->o, "\xef\xbf\xbd", 3);
		} else {
			switch (*s) {
			case '"': rp_out_write(w->o, "\\\"", 2); break;
			case '\\': rp_out_write(w->o, "\\\\", 2); break;
			case '\b': rp_out_write(w->o, "\\b", 2); break;
			case '\f': rp_out_write(w->o, "\\f", 2); break;
			case '\n': rp_out_write(w->o, "\\n", 2); break;
			case '\r': rp_out_write(w->o, "\\r", 2); break;
			case '\t': rp_out_write(w->o, "\\t", 2); break;
			default: snprintf(esc, sizeof(esc), "\\u%04X", *s); rp_out_write(w->o, esc, 6);
			}
		}
		run = ++s;
	}
	rp_out_write(w->o, (const char *)run, (size_t)(s - run));
	rp_out_write(w->o, "\"", 1);
}

static void jw_key(struct jw *w, const char *key)
{
	jw_item(w);
	jw_str(w, key);
	rp_out_write(w->o, ": ", 2);
}

static void jw_kstr(struct jw *w, const char *key, const char *v)
{
	jw_key(w, key);
	jw_str(w, v);
}

static void jw_kint(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	rp_out_printf(w->o, "%lld", v);
}

static void jw_kbool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	rp_out_puts(w->o, v ? "true" : "false");
}

/* A real as jansson writes it (%.17g, ".0" added to integral values, exponent without '+' and leading zeros); null
 * for NAN and infinities, which JSON cannot hold. */
static void jw_kreal(struct jw *w, const char *key, double v)
{
	char buf[40], *e;
	int n;

	jw_key(w, key);
	if (!isfinite(v)) {
		rp_out_puts(w->o, "null");
		return;
	}
	n = snprintf(buf, sizeof(buf) - 2, "%.17g", v);
	if (n < 0 || (size_t)n >= sizeof(buf) - 2) {
		rp_out_puts(w->o, "null");
		return;
	}
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	e = strchr(buf, 'e');
	if (e) {
		char *start = e + 1, *end = e + 2;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, (size_t)(buf + n - end) + 1);
			n -= (int)(end - start);
		}
	}
	rp_out_write(w->o, buf, (size_t)n);
}

static void jw_stat(struct jw *w, const char *key, const struct rp_stat *s)
{
	if (!s->n) {
		jw_key(w, key);
		rp_out_puts(w->o, "null");
		return;
	}
	jw_key(w, key);
	jw_open(w, '{');
	jw_kint(w, "n", (long long)s->n);
	jw_kreal(w, "median", s->median);
	jw_kreal(w, "mad", s->mad);
	jw_kreal(w, "min", s->min);
	jw_kreal(w, "max", s->max);
	jw_kreal(w, "p10", s->p10);
	jw_kreal(w, "p90", s->p90);
	jw_close(w, '}');
}

static void json_slot(struct jw *w, const struct rp_slot *s)
{
	jw_item(w);
	jw_open(w, '{');
	jw_kstr(w, "device", s->device);
	jw_kint(w, "port", s->port);
	jw_kstr(w, "opcode", rt_profile_opcode_name((enum rt_profile_opcode)s->opcode));
	jw_kstr(w, "qp_type", rt_profile_qp_type_name((enum rt_profile_qp_type)s->qp_type));
	jw_kint(w, "entries", (long long)s->n);
	jw_stat(w, "inline_threshold", &s->st[RP_M_THRESHOLD]);
	jw_stat(w, "signal_interval", &s->st[RP_M_INTERVAL]);
	jw_stat(w, "latency_ns", &s->st[RP_M_LAT]);
	jw_stat(w, "mops", &s->st[RP_M_MOPS]);
	jw_key(w, "recommended");
	if (!s->has_rec) {
		rp_out_puts(w->o, "null");
	} else {
		jw_open(w, '{');
		jw_kint(w, "inline_threshold", s->rec_threshold);
		jw_kint(w, "max_inline_data", s->rec_max_inline);
		jw_kint(w, "signal_interval", s->rec_interval);
		jw_kint(w, "sq_depth", s->rec_sq_depth);
		jw_kint(w, "cq_depth", s->rec_cq_depth);
		jw_kstr(w, "confidence", s->rec_confidence);
		jw_kint(w, "basis_nodes", (long long)s->rec_basis);
		jw_close(w, '}');
	}
	jw_close(w, '}');
}

static void json_group(struct jw *w, const struct rt_report *r, const struct rp_group *g)
{
	jw_item(w);
	jw_open(w, '{');
	jw_kstr(w, "id", g->id);
	jw_kstr(w, "label", g->label);
	jw_kbool(w, "from_hardware", g->from_hw);
	jw_kint(w, "node_count", (long long)g->n_nodes);
	jw_kint(w, "remote_numa_calibrations", (long long)remote_calibrations(r, g));
	jw_key(w, "slots");
	jw_open(w, '[');
	for (size_t si = 0; si < g->n_slots; si++)
		json_slot(w, &g->slots[si]);
	jw_close(w, ']');
	jw_key(w, "nodes");
	jw_open(w, '[');
	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *nd = &r->nodes[g->nodes[k]];
		bool remote = false;

		for (int i = 0; i < nd->n_entries; i++)
			remote |= nd->entries[i].cal_local == 0;
		jw_item(w);
		jw_open(w, '{');
		jw_kstr(w, "hostname", nd->hostname);
		jw_kstr(w, "hw_signature", nd->hw_sig);
		jw_kstr(w, "source", nd->source);
		jw_kbool(w, "remote_numa_calibration", remote);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	jw_close(w, '}');
}

/* "causes": the outlier's cause codes as an array. */
static void json_causes(struct jw *w, const struct rp_outlier *o)
{
	char tmp[sizeof(o->causes)];
	const char *codes[16];
	size_t n = rp_outlier_causes(o, tmp, sizeof(tmp), codes, 16);

	jw_key(w, "causes");
	jw_open(w, '[');
	for (size_t c = 0; c < n; c++) {
		jw_item(w);
		jw_str(w, codes[c]);
	}
	jw_close(w, ']');
}

/* "measured": the entry's evidence (profile 1.3 "measured" or its run in a store), null when unknown. */
static void json_measured(struct jw *w, const struct rp_entry *e)
{
	static const char *const kinds[] = { "unknown", "pingpong", "post_cqe" };

	jw_key(w, "measured");
	if (isnan(e->lat_inl_ns) && isnan(e->lat_noinl_ns) && isnan(e->mops) && isnan(e->mops_n1)) {
		rp_out_puts(w->o, "null");
		return;
	}
	jw_open(w, '{');
	jw_kstr(w, "latency_kind", kinds[e->lat_kind < 3 ? e->lat_kind : 0]);
	jw_kint(w, "msg_bytes", e->lat_bytes);
	jw_kreal(w, "latency_inline_ns", e->lat_inl_ns);
	jw_kreal(w, "latency_noinline_ns", e->lat_noinl_ns);
	jw_kreal(w, "mops_at_n", e->mops);
	jw_kreal(w, "mops_at_n1", e->mops_n1);
	jw_kreal(w, "noise_pct", e->noise_pct);
	jw_close(w, '}');
}

static void json_outlier_node(struct jw *w, const struct rt_report *r, const struct rp_onode *on)
{
	const struct rp_node *nd = &r->nodes[on->node];
	char causes[16][48];
	size_t nc = node_causes(r, on, causes, 16);

	jw_item(w);
	jw_open(w, '{');
	jw_kstr(w, "group", r->groups[nd->group].id);
	jw_kstr(w, "hostname", nd->hostname);
	jw_kstr(w, "source", nd->source);
	jw_key(w, "causes");
	jw_open(w, '[');
	for (size_t c = 0; c < nc; c++) {
		jw_item(w);
		jw_str(w, causes[c]);
	}
	jw_close(w, ']');
	jw_key(w, "entries");
	jw_open(w, '[');
	for (size_t k = 0; k < on->count;) {
		const struct rp_outlier *o = &r->outliers[r->by_node[on->first + k]];
		const struct rp_entry *e = &nd->entries[o->entry];

		jw_item(w);
		jw_open(w, '{');
		jw_kstr(w, "device", e->device);
		jw_kint(w, "port", e->port);
		jw_kstr(w, "opcode", rt_profile_opcode_name((enum rt_profile_opcode)e->opcode));
		jw_kstr(w, "qp_type", rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type));
		jw_key(w, "metrics");
		jw_open(w, '[');
		for (; k < on->count && r->outliers[r->by_node[on->first + k]].entry == o->entry; k++) {
			jw_item(w);
			jw_str(w, rp_metric_name(r->outliers[r->by_node[on->first + k]].metric));
		}
		jw_close(w, ']');
		jw_close(w, '}');
	}
	jw_close(w, ']');
	jw_close(w, '}');
}

int rt_report_write_json(const struct rt_report *r, FILE *f)
{
	struct rp_out out;
	struct jw w = { .o = &out };
	char now[32];

	if (rp_out_open(&out, f))
		return ENOMEM;
	jw_open(&w, '{');
	jw_key(&w, "schema");
	jw_open(&w, '{');
	jw_kstr(&w, "name", "rtune-report");
	jw_kstr(&w, "version", RP_JSON_VERSION);
	jw_close(&w, '}');
	jw_kstr(&w, "rtune_version", RTUNE_VERSION);
	jw_kstr(&w, "generated_at", rp_time(r->generated_at, now));
	jw_kstr(&w, "judged_at", rp_time(r->opts.now, now));
	jw_kint(&w, "stale_days", r->opts.stale_days);
	jw_kint(&w, "node_count", (long long)r->n_nodes);
	jw_kint(&w, "outlier_node_count", (long long)r->n_onodes);
	jw_kint(&w, "outlier_entry_count", (long long)r->n_outliers);
	jw_key(&w, "problems");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->n_problems; i++) {
		jw_item(&w);
		jw_str(&w, r->problems[i]);
	}
	jw_close(&w, ']');
	jw_key(&w, "groups");
	jw_open(&w, '[');
	for (size_t gi = 0; gi < r->n_groups; gi++)
		json_group(&w, r, &r->groups[gi]);
	jw_close(&w, ']');
	jw_key(&w, "outliers");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->n_outliers; i++) {
		struct rt_report_outlier_view v;

		rt_report_outlier_at(r, i, &v);
		jw_item(&w);
		jw_open(&w, '{');
		jw_kstr(&w, "group", v.group);
		jw_kstr(&w, "hostname", v.hostname);
		jw_kstr(&w, "device", v.device);
		jw_kint(&w, "port", v.port);
		jw_kstr(&w, "opcode", v.opcode);
		jw_kstr(&w, "qp_type", v.qp_type);
		jw_kstr(&w, "metric", v.metric);
		jw_kreal(&w, "value", v.value);
		jw_kreal(&w, "group_median", v.group_median);
		jw_kreal(&w, "robust_z", v.robust_z);
		jw_kstr(&w, "cause", v.cause);
		json_causes(&w, &r->outliers[i]);
		jw_kstr(&w, "evidence", v.evidence);
		json_measured(&w, &r->nodes[r->outliers[i].node].entries[r->outliers[i].entry]);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_key(&w, "outlier_nodes");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->n_onodes; i++)
		json_outlier_node(&w, r, &r->onodes[i]);
	jw_close(&w, ']');
	jw_key(&w, "stale");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->n_stale; i++) {
		const struct rp_stale *st = &r->stale[i];
		const struct rp_node *nd = &r->nodes[st->node];

		jw_item(&w);
		jw_open(&w, '{');
		jw_kstr(&w, "hostname", nd->hostname);
		jw_kstr(&w, "group", r->groups[nd->group].id);
		jw_kstr(&w, "source", nd->source);
		jw_kstr(&w, "kind", st->missing_device ? "no_profile_for_device" : "stale");
		jw_key(&w, "device");
		if (st->missing_device)
			jw_str(&w, st->device);
		else
			rp_out_puts(w.o, "null");
		jw_kstr(&w, "newest_measured_at", rp_time(nd->newest, now));
		jw_kint(&w, "age_days", (long long)((r->opts.now - nd->newest) / 86400));
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_key(&w, "drift");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->n_drifts; i++) {
		const struct rp_drift *d = &r->drifts[i];

		jw_item(&w);
		jw_open(&w, '{');
		jw_kstr(&w, "hostname", d->hostname);
		jw_kstr(&w, "device", d->device);
		jw_kint(&w, "port", d->port);
		jw_kstr(&w, "metric", rp_metric_name(d->metric));
		jw_kreal(&w, "latest", d->latest);
		jw_kreal(&w, "history_median", d->hist_median);
		jw_kint(&w, "history_runs", (long long)d->hist_runs);
		jw_kstr(&w, "source", d->source);
		jw_kstr(&w, "evidence", d->evidence);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	rp_out_write(&out, "\n", 1);
	return rp_out_close(&out);
}

/* ---- CSV ------------------------------------------------------------------------------------------------------------ */

static void csv_field(struct rp_out *b, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) {
		rp_out_write(b, "\"", 1);
		for (const char *q; (q = strchr(s, '"')); s = q + 1) {
			rp_out_write(b, s, (size_t)(q - s));
			rp_out_write(b, "\"\"", 2);
		}
		rp_out_puts(b, s);
		rp_out_write(b, "\"", 1);
	} else {
		rp_out_puts(b, s);
	}
	rp_out_write(b, last ? "\r\n" : ",", last ? 2 : 1);
}

/* Orders outlier indices by (node, entry, index) (qsort_r): an entry's outliers are then found by binary search. */
static int cmp_outlier_ref(const void *a, const void *b, void *arg)
{
	const struct rt_report *r = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct rp_outlier *x = &r->outliers[i], *y = &r->outliers[j];

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	return i < j ? -1 : i > j;
}

int rt_report_write_csv(const struct rt_report *r, FILE *f)
{
	static const char *const head[] = { "group",
					    "hostname",
					    "source",
					    "device",
					    "port",
					    "opcode",
					    "qp_type",
					    "inline_threshold",
					    "max_inline_data",
					    "signal_interval",
					    "latency_ns",
					    "mops",
					    "latency_kind",
					    "latency_inline_ns",
					    "latency_noinline_ns",
					    "mops_at_n1",
					    "noise_pct",
					    "confidence",
					    "measured_at",
					    "calibration_cpu_numa_node",
					    "calibration_numa_local",
					    "outlier_metrics",
					    "cause",
					    "evidence" };
	const size_t nh = sizeof(head) / sizeof(head[0]);
	struct rp_out out, *b = &out;
	size_t *by_entry = NULL;

	if (r->n_outliers) {
		by_entry = malloc(r->n_outliers * sizeof(*by_entry));
		if (!by_entry)
			return ENOMEM;
		for (size_t i = 0; i < r->n_outliers; i++)
			by_entry[i] = i;
		qsort_r(by_entry, r->n_outliers, sizeof(*by_entry), cmp_outlier_ref, (void *)r);
	}
	if (rp_out_open(b, f)) {
		free(by_entry);
		return ENOMEM;
	}
	for (size_t i = 0; i < nh; i++)
		csv_field(b, head[i], i + 1 == nh);
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];

		for (size_t k = 0; k < g->n_nodes; k++) {
			const struct rp_node *nd = &r->nodes[g->nodes[k]];

			for (int i = 0; i < nd->n_entries; i++) {
				const struct rp_entry *e = &nd->entries[i];
				const struct rp_outlier *first = NULL;
				char num[32], metrics[96] = "";

				if (e->outlier_mask) {
					/* the first of this entry's outliers in by_entry */
					size_t lo = 0, hi = r->n_outliers;

					while (lo < hi) {
						size_t mid = lo + (hi - lo) / 2;
						const struct rp_outlier *o = &r->outliers[by_entry[mid]];

						if (o->node < g->nodes[k] ||
						    (o->node == g->nodes[k] && o->entry < (size_t)i))
							lo = mid + 1;
						else
							hi = mid;
					}
					for (; lo < r->n_outliers; lo++) {
						const struct rp_outlier *o = &r->outliers[by_entry[lo]];

						if (o->node != g->nodes[k] || o->entry != (size_t)i)
							break;
						if (!first)
							first = o;
						snprintf(metrics + strlen(metrics), sizeof(metrics) - strlen(metrics),
							 "%s%s", metrics[0] ? ";" : "", rp_metric_name(o->metric));
					}
				}
				csv_field(b, g->id, false);
				csv_field(b, nd->hostname, false);
				csv_field(b, nd->source, false);
				csv_field(b, e->device, false);
				snprintf(num, sizeof(num), "%u", e->port);
				csv_field(b, num, false);
				csv_field(b, rt_profile_opcode_name((enum rt_profile_opcode)e->opcode), false);
				csv_field(b, rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type), false);
				snprintf(num, sizeof(num), "%" PRIu32, e->inline_threshold);
				csv_field(b, num, false);
				snprintf(num, sizeof(num), "%" PRIu32, e->max_inline_data);
				csv_field(b, num, false);
				snprintf(num, sizeof(num), "%" PRIu32, e->signal_interval);
				csv_field(b, num, false);
				csv_field(b, isnan(e->lat_ns) ? "" : rp_fmt(num, sizeof(num), e->lat_ns, 1), false);
				csv_field(b, isnan(e->mops) ? "" : rp_fmt(num, sizeof(num), e->mops, 3), false);
				csv_field(b, e->lat_kind == 1 ? "pingpong" : e->lat_kind == 2 ? "post_cqe" : "", false);
				csv_field(b, isnan(e->lat_inl_ns) ? "" : rp_fmt(num, sizeof(num), e->lat_inl_ns, 1),
					  false);
				csv_field(b, isnan(e->lat_noinl_ns) ? "" : rp_fmt(num, sizeof(num), e->lat_noinl_ns, 1),
					  false);
				csv_field(b, isnan(e->mops_n1) ? "" : rp_fmt(num, sizeof(num), e->mops_n1, 3), false);
				csv_field(b, isnan(e->noise_pct) ? "" : rp_fmt(num, sizeof(num), e->noise_pct, 2),
					  false);
				csv_field(b, rt_profile_confidence_name((enum rt_profile_confidence)e->confidence),
					  false);
				csv_field(b, rp_time(e->measured_at, num), false);
				snprintf(num, sizeof(num), "%d", e->cal_cpu_numa);
				csv_field(b, e->cal_cpu_numa < 0 ? "" : num, false);
				csv_field(b, e->cal_local < 0 ? "" : e->cal_local ? "true" : "false", false);
				csv_field(b, metrics, false);
				csv_field(b, first ? first->cause : "", false);
				csv_field(b, first ? first->evidence : "", true);
			}
		}
	}
	free(by_entry);
	return rp_out_close(b);
}
