// SPDX-License-Identifier: MIT
/*
 * librtune's single-pass reader of rtune-profile documents (profile_scan.h). The lexer (profile_lex.c) walks the text
 * once; the members the profile defines are captured per object (scalars by value, strings in place or decoded once)
 * and validated when their object closes, in the order the jansson reference (rt_profile_from_json in profile.c)
 * checks them, with its messages, so both readers accept the same documents, fill the same struct rt_profile and
 * name the same field. An error found inside the document is held until the document is read whole: text jansson
 * would refuse (a later syntax error, a duplicate key) is reported as such first, and of the field errors the one the
 * reference checks first wins. Unknown members are skipped (validated all the same); entries after the first invalid
 * one are only lexed.
 */
#include "profile_scan.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct kdef {
	const char *k;
	size_t n;
};
#define K(s)                     \
	{                        \
		s, sizeof(s) - 1 \
	}

/* ---- field readers over captured values: profile.c's get_* with the same messages ------------------------------ */

/* The JSON type of v in the reference's words ("an integer", "null"). */
static const char *type_name(const struct rt_jv *v)
{
	switch (v->t) {
	case RT_JV_OBJ: return "an object";
	case RT_JV_ARR: return "an array";
	case RT_JV_STR: return "a string";
	case RT_JV_INT: return "an integer";
	case RT_JV_REAL: return "a real number";
	case RT_JV_TRUE:
	case RT_JV_FALSE: return "a boolean";
	case RT_JV_NULL: return "null";
	case RT_JV_ABSENT: break;
	}
	return "unknown";
}

/* True when the member is missing or null. */
static bool absent_or_null(const struct rt_jv *v)
{
	return v->t == RT_JV_ABSENT || v->t == RT_JV_NULL;
}

/* Reads the integer member key (value v) in [lo, hi] into *out: an integral real counts (16.0); absent is EINVAL
 * ("missing") when required, else 0 with *out untouched. 0, or EINVAL naming where.key. */
static int get_int(struct rt_profile_ctx *c, const char *where, const struct rt_jv *v, const char *key, bool required,
		   long long lo, long long hi, long long *out)
{
	if (v->t == RT_JV_ABSENT) {
		if (required)
			return rt_profile_fail(c, EINVAL, "%s.%s: missing", where, key);
		return 0;
	}
	if (v->t == RT_JV_REAL) {
		double d = v->d;

		if (!(d >= -9e15 && d <= 9e15) || d != (double)(long long)d)
			return rt_profile_fail(c, EINVAL, "%s.%s: expected an integer, got %g", where, key, d);
		if ((long long)d < lo || (long long)d > hi)
			return rt_profile_fail(c, EINVAL, "%s.%s: %g is out of range %lld..%lld", where, key, d, lo,
					       hi);
		*out = (long long)d;
		return 0;
	}
	if (v->t != RT_JV_INT)
		return rt_profile_fail(c, EINVAL, "%s.%s: expected an integer, got %s", where, key, type_name(v));
	if (v->i < lo || v->i > hi)
		return rt_profile_fail(c, EINVAL, "%s.%s: %lld is out of range %lld..%lld", where, key, (long long)v->i,
				       lo, hi);
	*out = v->i;
	return 0;
}

/* get_int() into a uint32_t. */
static int get_u32(struct rt_profile_ctx *c, const char *where, const struct rt_jv *v, const char *key, bool required,
		   uint32_t lo, uint32_t hi, uint32_t *out)
{
	long long x = *out;
	int rc = get_int(c, where, v, key, required, lo, hi, &x);

	if (!rc)
		*out = (uint32_t)x;
	return rc;
}

/* Reads the string member key into buf[len]: too long is EINVAL unless truncate (then cut at a UTF-8 character
 * boundary); null reads as "" when nullable; absent leaves buf alone (EINVAL when required). 0 or EINVAL. */
static int get_str(struct rt_profile_ctx *c, const char *where, const struct rt_jv *v, const char *key, bool required,
		   bool nullable, bool truncate, char *buf, size_t len)
{
	size_t n;

	if (v->t == RT_JV_ABSENT || (nullable && v->t == RT_JV_NULL)) {
		if (v->t == RT_JV_ABSENT && required)
			return rt_profile_fail(c, EINVAL, "%s.%s: missing", where, key);
		if (v->t != RT_JV_ABSENT)
			buf[0] = '\0';
		return 0;
	}
	if (v->t != RT_JV_STR)
		return rt_profile_fail(c, EINVAL, "%s.%s: expected a string, got %s", where, key, type_name(v));
	n = v->n;
	if (n >= len && !truncate)
		return rt_profile_fail(c, EINVAL, "%s.%s: longer than %zu bytes", where, key, len - 1);
	n = rt_profile_utf8_fit(v->s, n, len);
	memcpy(buf, v->s, n);
	buf[n] = '\0';
	return 0;
}

/* Reads an optional number (absent or null: NAN) in [lo, hi] into *out. 0 or EINVAL. */
static int get_real(struct rt_profile_ctx *c, const char *where, const struct rt_jv *v, const char *key, double lo,
		    double hi, double *out)
{
	double x;

	*out = NAN;
	if (absent_or_null(v))
		return 0;
	if (v->t != RT_JV_INT && v->t != RT_JV_REAL)
		return rt_profile_fail(c, EINVAL, "%s.%s: expected a number or null, got %s", where, key, type_name(v));
	x = v->t == RT_JV_INT ? (double)v->i : v->d;
	if (!(x >= lo && x <= hi))
		return rt_profile_fail(c, EINVAL, "%s.%s: %g is out of range %g..%g", where, key, x, lo, hi);
	*out = x;
	return 0;
}

/* Index of s in names[0 .. n), or -1. */
static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

/* Reads an optional enum-named string member (null or absent: *out = -1) of names; EINVAL naming it otherwise. */
static int get_name_or_null(struct rt_profile_ctx *c, const char *where, const struct rt_jv *v, const char *key,
			    const char *const *names, size_t n, const char *expect, int *out)
{
	char tmp[32] = "";
	int rc;

	*out = -1;
	if ((rc = get_str(c, where, v, key, false, true, false, tmp, sizeof(tmp))))
		return rc;
	if (!tmp[0])
		return 0;
	if ((*out = name_index(names, n, tmp)) < 0)
		return rt_profile_fail(c, EINVAL, "%s.%s: '%s' is not %s", where, key, tmp, expect);
	return 0;
}

/* Writes a, b and, when idx is not SIZE_MAX, "[idx]" into buf[len], truncated as snprintf truncates: the field paths
 * of the messages, built for every entry without the cost of a printf. */
static void path(char *buf, size_t len, const char *a, const char *b, size_t idx)
{
	char num[24], *d = num + sizeof(num);
	size_t o = 0;

	for (const char *s = a; *s && o + 1 < len; s++)
		buf[o++] = *s;
	for (const char *s = b; *s && o + 1 < len; s++)
		buf[o++] = *s;
	if (idx != SIZE_MAX) {
		*--d = '\0';
		*--d = ']';
		do
			*--d = (char)('0' + idx % 10);
		while ((idx /= 10));
		*--d = '[';
		for (; *d && o + 1 < len; d++)
			buf[o++] = *d;
	}
	buf[o] = '\0';
}

/* ---- capture: the members of an object the profile defines ------------------------------------------------------ */

/* Index of the key k in t[0 .. n), or -1 when the profile does not define it there. */
static int key_index(const struct kdef *t, size_t n, const struct rt_jv *k)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].n == k->n && t[i].k[0] == k->s[0] && !memcmp(t[i].k, k->s, k->n))
			return (int)i;
	return -1;
}

/* Reads the object at the cursor, capturing the members named in t (n of them) into slots[] (containers by type and
 * text); the others are skipped. 0, or -1 on a lexer error. */
static int scan_flat(struct rt_jlex *l, const struct kdef *t, size_t n, struct rt_jv *slots)
{
	struct rt_jit it = { 0 };
	struct rt_jv k, skip;
	int r;

	memset(slots, 0, n * sizeof(*slots));
	if (rt_jlex_open(l, &it))
		return -1;
	while ((r = rt_jlex_next(l, &it, &k)) > 0) {
		int i = key_index(t, n, &k);

		if (rt_jlex_value(l, i >= 0 ? &slots[i] : &skip))
			return -1;
	}
	return r;
}

/* Reads the value at the cursor into *v: an object through scan_flat (t, n, slots; v gets its type and text), any
 * other value as rt_jlex_value does. 0 or -1. */
static int scan_sub(struct rt_jlex *l, struct rt_jv *v, const struct kdef *t, size_t n, struct rt_jv *slots)
{
	size_t off;

	memset(slots, 0, n * sizeof(*slots));
	if (rt_jlex_peek(l) != '{')
		return rt_jlex_value(l, v) ? -1 : 0;
	off = (size_t)(l->p - l->text);
	if (scan_flat(l, t, n, slots))
		return -1;
	memset(v, 0, sizeof(*v));
	v->t = RT_JV_OBJ;
	v->off = off;
	v->len = (size_t)(l->p - l->text) - off;
	return 0;
}

static const char *const op_names[] = { "send", "write" };
static const char *const qpt_names[] = { "rc", "ud", "srd" };
static const char *const conf_names[] = { "low", "medium", "high" };

enum { B_KIND, B_POST_LIST, B_LO, B_HI, B_SIGNAL, B_VERDICT, B_CONF, B_QPS, B_THREADS, B_N };
static const struct kdef band_keys[B_N] = {
	K("kind"),    K("post_list"),  K("msg_bytes_lo"), K("msg_bytes_hi"), K("signal_interval"),
	K("verdict"), K("confidence"), K("qps"),	  K("threads")
};

enum { M_KIND, M_BYTES, M_INL, M_NOINL, M_MOPS, M_MOPS1, M_NOISE, M_N };
static const struct kdef measured_keys[M_N] = { K("latency_kind"),	K("msg_bytes"),
						K("latency_inline_ns"), K("latency_noinline_ns"),
						K("mops_at_n"),		K("mops_at_n1"),
						K("noise_pct") };

enum {
	E_DEVICE,
	E_GUID,
	E_PORT,
	E_OPCODE,
	E_QP_TYPE,
	E_INLINE_THRESHOLD,
	E_MAX_INLINE,
	E_SIGNAL_INTERVAL,
	E_SQ_DEPTH,
	E_CQ_DEPTH,
	E_CQ_MOD,
	E_NUMA,
	E_CPUS,
	E_CONF,
	E_ICONF,
	E_SCONF,
	E_EVIDENCE,
	E_MEASURED,
	E_REASONS,
	E_MEASURED_AT,
	E_RUN_ID,
	E_APP,
	E_RTUNE_VERSION,
	E_BANDS,
	E_CALIBRATION,
	E_N
};
static const struct kdef entry_keys[E_N] = { K("device"),
					     K("guid"),
					     K("port"),
					     K("opcode"),
					     K("qp_type"),
					     K("inline_threshold"),
					     K("max_inline_data"),
					     K("signal_interval"),
					     K("sq_depth"),
					     K("cq_depth"),
					     K("cq_moderation"),
					     K("numa_node"),
					     K("cpus"),
					     K("confidence"),
					     K("inline_confidence"),
					     K("signal_confidence"),
					     K("evidence"),
					     K("measured"),
					     K("reasons"),
					     K("measured_at"),
					     K("run_id"),
					     K("app"),
					     K("rtune_version"),
					     K("bands"),
					     K("calibration") };

static const struct kdef cqm_keys[2] = { K("count"), K("period_us") };
static const struct kdef ev_keys[2] = { K("inline"), K("signal") };
static const struct kdef evd_keys[2] = { K("runs"), K("since_run") };
static const struct kdef reason_keys[2] = { K("code"), K("text") };

struct band_cap {
	struct rt_jv el, f[B_N];
};

/* One entry as read: its members, and those of its nested objects. */
struct entry_cap {
	struct rt_jv f[E_N];
	struct rt_jv cqm[2];
	struct rt_jv ev[2], evf[2][2]; /* evidence.inline / .signal, and their runs / since_run */
	struct rt_jv meas[M_N];
	struct rt_jv reason_el[RT_PROFILE_MAX_REASONS + 1]; /* the reference looks at no element past this one */
	struct rt_jv reason_f[RT_PROFILE_MAX_REASONS][2];
	size_t n_reason_el;
	size_t n_bands; /* in the reader's band_caps */
};

enum { S_DEVICE, S_PORT, S_WHAT, S_KIND, S_OPCODE, S_QP_TYPE, S_REASON, S_RUN_ID, S_N };
static const struct kdef skip_keys[S_N] = { K("device"), K("port"),    K("what"),   K("kind"),
					    K("opcode"), K("qp_type"), K("reason"), K("run_id") };

enum { N_HOSTNAME, N_MACHINE_ID, N_CPU_MODEL, N_KERNEL, N_HW_SIG, N_CPU_COUNT, N_NUMA_NODES, N_N };
static const struct kdef node_keys[N_N] = { K("hostname"),	     K("machine_id"), K("cpu_model"), K("kernel"),
					    K("hardware_signature"), K("cpu_count"),  K("numa_nodes") };

enum { R_SCHEMA, R_RTUNE_VERSION, R_NODE, R_GROUP, R_ENTRIES, R_SKIPPED, R_HARDWARE, R_N };
static const struct kdef root_keys[R_N] = { K("schema"),  K("rtune_version"), K("node"),    K("group"),
					    K("entries"), K("skipped"),	      K("hardware") };

static const struct kdef schema_keys[2] = { K("name"), K("version") };
static const struct kdef group_keys[1] = { K("node_count") };

/* The reader's state over one document. */
struct scan {
	struct rt_jlex l;
	struct rt_profile_ctx c;
	struct rt_profile *p;
	struct rt_profile_scan_extra *x;
	size_t cap_entries, cap_band_first, cap_band_n, cap_bands, cap_skips, cap_cal, cap_inherit;
	struct band_cap *band_caps; /* the current entry's bands */
	size_t cap_band_caps;
	size_t *inherit; /* entries without their own rtune_version: the document's, once it is known */
	size_t n_inherit;
	struct rt_error entries_err, skipped_err; /* the first invalid entry / skip (code 0: none yet) */
	bool nomem;
};

/* Grows *v (elements of size sz, *cap of them) to hold n. 0, or -1 (s->nomem). */
static int grow(struct scan *s, void **v, size_t *cap, size_t n, size_t sz)
{
	size_t nc;
	void *nv;

	if (n <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	while (nc < n)
		nc *= 2;
	if (!(nv = realloc(*v, nc * sz))) {
		s->nomem = true;
		return -1;
	}
	*v = nv;
	*cap = nc;
	return 0;
}

/* ---- validation in the reference's order ------------------------------------------------------------------------ */

/* The 1.2 fields of an entry (its confidence read already): each decision's confidence and the "evidence" object.
 * 0, or EINVAL naming the field (the reference's parse_decision_fields). */
static int check_decision_fields(struct rt_profile_ctx *c, const char *where, const struct entry_cap *ec,
				 struct rt_profile_entry *e)
{
	static const char *const keys[2] = { "inline", "signal" };
	char tmp[64], w2[80];
	int rc;

	e->inline_confidence = e->signal_confidence = e->confidence;
	for (int k = 0; k < 2; k++) {
		enum rt_profile_confidence *conf = k ? &e->signal_confidence : &e->inline_confidence;

		path(w2, sizeof(w2), keys[k], "_confidence", SIZE_MAX);
		tmp[0] = '\0';
		if ((rc = get_str(c, where, &ec->f[k ? E_SCONF : E_ICONF], w2, false, true, false, tmp, sizeof(tmp))))
			return rc;
		if (tmp[0] && rt_profile_confidence_parse(tmp, conf))
			return rt_profile_fail(c, EINVAL, "%s.%s: '%s' is not low, medium or high", where, w2, tmp);
	}
	e->inline_runs = e->signal_runs = 1;
	if (absent_or_null(&ec->f[E_EVIDENCE]))
		return 0;
	if (ec->f[E_EVIDENCE].t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "%s.evidence: expected an object or null, got %s", where,
				       type_name(&ec->f[E_EVIDENCE]));
	for (int k = 0; k < 2; k++) {
		const struct rt_jv *d = &ec->ev[k];

		path(w2, sizeof(w2), where, k ? ".evidence.signal" : ".evidence.inline", SIZE_MAX);
		if (absent_or_null(d))
			continue;
		if (d->t != RT_JV_OBJ)
			return rt_profile_fail(c, EINVAL, "%s: expected an object or null, got %s", w2, type_name(d));
		if ((rc = get_u32(c, w2, &ec->evf[k][0], "runs", false, 1, UINT32_MAX,
				  k ? &e->signal_runs : &e->inline_runs)) ||
		    (rc = get_str(c, w2, &ec->evf[k][1], "since_run", false, true, false,
				  k ? e->signal_since : e->inline_since, sizeof(e->inline_since))))
			return rc;
	}
	return 0;
}

/* The 1.3 "measured" object of an entry (absent or null: has_measured false, figures NAN). 0 or EINVAL. */
static int check_measured(struct rt_profile_ctx *c, const char *where, const struct entry_cap *ec,
			  struct rt_profile_entry *e)
{
	const struct rt_jv *m = &ec->f[E_MEASURED], *f = ec->meas;
	char w2[64];
	int rc;

	e->has_measured = false;
	e->lat_kind[0] = '\0';
	e->lat_bytes = 0;
	e->lat_inline_ns = e->lat_noinline_ns = e->mops_at_n = e->mops_at_n1 = e->noise_pct = NAN;
	if (absent_or_null(m))
		return 0;
	path(w2, sizeof(w2), where, ".measured", SIZE_MAX);
	if (m->t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "%s: expected an object or null, got %s", w2, type_name(m));
	if ((rc = get_str(c, w2, &f[M_KIND], "latency_kind", false, true, false, e->lat_kind, sizeof(e->lat_kind))))
		return rc;
	if (e->lat_kind[0] && strcmp(e->lat_kind, "pingpong") && strcmp(e->lat_kind, "post_cqe"))
		return rt_profile_fail(c, EINVAL, "%s.latency_kind: '%s' is not pingpong or post_cqe", w2, e->lat_kind);
	if ((rc = get_u32(c, w2, &f[M_BYTES], "msg_bytes", false, 0, RT_PROFILE_MAX_INLINE_BYTES, &e->lat_bytes)) ||
	    (rc = get_real(c, w2, &f[M_INL], "latency_inline_ns", 0, 1e12, &e->lat_inline_ns)) ||
	    (rc = get_real(c, w2, &f[M_NOINL], "latency_noinline_ns", 0, 1e12, &e->lat_noinline_ns)) ||
	    (rc = get_real(c, w2, &f[M_MOPS], "mops_at_n", 0, 1e6, &e->mops_at_n)) ||
	    (rc = get_real(c, w2, &f[M_MOPS1], "mops_at_n1", 0, 1e6, &e->mops_at_n1)) ||
	    (rc = get_real(c, w2, &f[M_NOISE], "noise_pct", 0, 1e6, &e->noise_pct)))
		return rc;
	e->has_measured = true;
	return 0;
}

/* One band (1.4) into b. 0, ENOENT (a kind this librtune does not know: passed over), or EINVAL naming the field (the
 * reference's parse_band). */
static int check_band(struct rt_profile_ctx *c, const char *where, const struct band_cap *bc, struct rt_profile_band *b)
{
	const struct rt_jv *f = bc->f;
	char tmp[32] = "";
	int rc, conf;

	memset(b, 0, sizeof(*b));
	b->post_list = 1;
	b->qps = b->threads = 1;
	if (bc->el.t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", where, type_name(&bc->el));
	if ((rc = get_str(c, where, &f[B_KIND], "kind", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (!strcmp(tmp, "large"))
		b->kind = RT_PROFILE_BAND_LARGE;
	else if (!strcmp(tmp, "post_list"))
		b->kind = RT_PROFILE_BAND_POST_LIST;
	else if (!strcmp(tmp, "concurrency"))
		b->kind = RT_PROFILE_BAND_CONCURRENCY;
	else
		return ENOENT; /* minor versions only add: a later kind is not this library's to answer */
	if (b->kind == RT_PROFILE_BAND_CONCURRENCY &&
	    ((rc = get_u32(c, where, &f[B_QPS], "qps", true, 2, RT_PROFILE_MAX_BAND_QPS, &b->qps)) ||
	     (rc = get_u32(c, where, &f[B_THREADS], "threads", true, 1, RT_PROFILE_MAX_BAND_QPS, &b->threads))))
		return rc;
	if (b->threads > b->qps)
		return rt_profile_fail(c, EINVAL, "%s.threads: %" PRIu32 " exceeds qps %" PRIu32, where, b->threads,
				       b->qps);
	if ((rc = get_u32(c, where, &f[B_POST_LIST], "post_list", false, 1, RT_PROFILE_MAX_POST_LIST, &b->post_list)) ||
	    (rc = get_u32(c, where, &f[B_LO], "msg_bytes_lo", true, 0, RT_PROFILE_MAX_BAND_BYTES, &b->msg_bytes_lo)) ||
	    (rc = get_u32(c, where, &f[B_HI], "msg_bytes_hi", true, 0, RT_PROFILE_MAX_BAND_BYTES, &b->msg_bytes_hi)) ||
	    (rc = get_u32(c, where, &f[B_SIGNAL], "signal_interval", true, 1, RT_PROFILE_MAX_SIGNAL_INTERVAL,
			  &b->signal_interval)) ||
	    (rc = get_str(c, where, &f[B_VERDICT], "verdict", false, true, true, b->verdict, sizeof(b->verdict))) ||
	    (rc = get_name_or_null(c, where, &f[B_CONF], "confidence", conf_names, N_OF(conf_names),
				   "low, medium or high", &conf)))
		return rc;
	if (b->msg_bytes_lo > b->msg_bytes_hi)
		return rt_profile_fail(c, EINVAL, "%s.msg_bytes_lo: %" PRIu32 " exceeds msg_bytes_hi %" PRIu32, where,
				       b->msg_bytes_lo, b->msg_bytes_hi);
	if (b->kind == RT_PROFILE_BAND_POST_LIST && b->post_list < 2)
		return rt_profile_fail(c, EINVAL, "%s.post_list: a post_list band needs at least 2 WRs, got %" PRIu32,
				       where, b->post_list);
	b->has_confidence = conf >= 0;
	b->confidence = conf >= 0 ? (enum rt_profile_confidence)conf : RT_PROFILE_CONF_LOW;
	return 0;
}

/* Validates entry idx (captured in ec, its bands in s->band_caps) into p->entries[idx] and appends its bands; the
 * reference's parse_entry + parse_bands. 0, or an errno with the message in s->c. */
static int check_entry(struct scan *s, const struct entry_cap *ec, size_t idx, bool *inherit)
{
	struct rt_profile_ctx *c = &s->c;
	struct rt_profile *p = s->p;
	struct rt_profile_entry *e = &p->entries[idx];
	const struct rt_jv *f = ec->f;
	char where[48], tmp[64];
	long long v;
	int rc;

	path(where, sizeof(where), "entries", "", idx);
	memset(e, 0, sizeof(*e));
	e->numa_node = -1;
	if ((rc = get_str(c, where, &f[E_DEVICE], "device", true, false, false, e->device, sizeof(e->device))) ||
	    (rc = get_str(c, where, &f[E_GUID], "guid", false, true, false, e->guid, sizeof(e->guid))))
		return rc;
	v = 0;
	if ((rc = get_int(c, where, &f[E_PORT], "port", true, 1, RT_PROFILE_MAX_PORT, &v)))
		return rc;
	e->port = (int)v;
	if ((rc = get_str(c, where, &f[E_OPCODE], "opcode", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_opcode_parse(tmp, &e->opcode))
		return rt_profile_fail(c, EINVAL, "%s.opcode: '%s' is not send or write", where, tmp);
	if ((rc = get_str(c, where, &f[E_QP_TYPE], "qp_type", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_qp_type_parse(tmp, &e->qp_type))
		return rt_profile_fail(c, EINVAL, "%s.qp_type: '%s' is not rc, ud or srd", where, tmp);
	if ((rc = get_u32(c, where, &f[E_INLINE_THRESHOLD], "inline_threshold", true, 0, RT_PROFILE_MAX_INLINE_BYTES,
			  &e->inline_threshold)) ||
	    (rc = get_u32(c, where, &f[E_MAX_INLINE], "max_inline_data", true, 0, RT_PROFILE_MAX_INLINE_BYTES,
			  &e->max_inline_data)) ||
	    (rc = get_u32(c, where, &f[E_SIGNAL_INTERVAL], "signal_interval", true, 1, RT_PROFILE_MAX_SIGNAL_INTERVAL,
			  &e->signal_interval)) ||
	    (rc = get_u32(c, where, &f[E_SQ_DEPTH], "sq_depth", true, 1, RT_PROFILE_MAX_SQ_DEPTH, &e->sq_depth)) ||
	    (rc = get_u32(c, where, &f[E_CQ_DEPTH], "cq_depth", true, 1, RT_PROFILE_MAX_CQ_DEPTH, &e->cq_depth)))
		return rc;
	if (!absent_or_null(&f[E_CQ_MOD])) {
		char w2[64];

		if (f[E_CQ_MOD].t != RT_JV_OBJ)
			return rt_profile_fail(c, EINVAL, "%s.cq_moderation: expected an object or null, got %s", where,
					       type_name(&f[E_CQ_MOD]));
		path(w2, sizeof(w2), where, ".cq_moderation", SIZE_MAX);
		if ((rc = get_u32(c, w2, &ec->cqm[0], "count", true, 0, RT_PROFILE_MAX_CQ_MOD_COUNT,
				  &e->cq_mod_count)) ||
		    (rc = get_u32(c, w2, &ec->cqm[1], "period_us", true, 0, RT_PROFILE_MAX_CQ_MOD_PERIOD_US,
				  &e->cq_mod_period_us)))
			return rc;
		e->cq_moderation = true;
	}
	v = -1;
	if ((rc = get_int(c, where, &f[E_NUMA], "numa_node", false, -1, RT_PROFILE_MAX_NUMA, &v)))
		return rc;
	e->numa_node = (int)v;
	if ((rc = get_str(c, where, &f[E_CPUS], "cpus", false, true, false, e->cpus, sizeof(e->cpus))))
		return rc;
	if ((rc = get_str(c, where, &f[E_CONF], "confidence", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_confidence_parse(tmp, &e->confidence))
		return rt_profile_fail(c, EINVAL, "%s.confidence: '%s' is not low, medium or high", where, tmp);
	if ((rc = check_decision_fields(c, where, ec, e)) || (rc = check_measured(c, where, ec, e)))
		return rc;
	if (f[E_REASONS].t != RT_JV_ABSENT && f[E_REASONS].t != RT_JV_ARR)
		return rt_profile_fail(c, EINVAL, "%s.reasons: expected an array, got %s", where,
				       type_name(&f[E_REASONS]));
	for (size_t i = 0; i < ec->n_reason_el; i++) {
		char w2[64];

		path(w2, sizeof(w2), where, ".reasons", i);
		if (ec->reason_el[i].t != RT_JV_OBJ)
			return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", w2,
					       type_name(&ec->reason_el[i]));
		if (e->n_reasons == RT_PROFILE_MAX_REASONS)
			break;
		if ((rc = get_str(c, w2, &ec->reason_f[i][0], "code", true, false, true, e->reasons[e->n_reasons].code,
				  sizeof(e->reasons[0].code))) ||
		    (rc = get_str(c, w2, &ec->reason_f[i][1], "text", true, false, true, e->reasons[e->n_reasons].text,
				  sizeof(e->reasons[0].text))))
			return rc;
		e->n_reasons++;
	}
	if ((rc = get_str(c, where, &f[E_MEASURED_AT], "measured_at", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_time_parse(tmp, &e->measured_at))
		return rt_profile_fail(c, EINVAL, "%s.measured_at: '%s' is not YYYY-MM-DDTHH:MM:SSZ", where, tmp);
	if ((rc = get_str(c, where, &f[E_RUN_ID], "run_id", true, false, false, e->run_id, sizeof(e->run_id))) ||
	    (rc = get_str(c, where, &f[E_APP], "app", false, true, false, e->app, sizeof(e->app))))
		return rc;
	/* absent: the document's, which may come after the entries (set once the document is read) */
	*inherit = f[E_RTUNE_VERSION].t == RT_JV_ABSENT;
	if ((rc = get_str(c, where, &f[E_RTUNE_VERSION], "rtune_version", false, false, true, e->rtune_version,
			  sizeof(e->rtune_version))))
		return rc;
	{
		struct rt_error e2;

		if (rt_profile_entry_check(e, where, &e2))
			return rt_profile_fail(c, EINVAL, "%s", e2.text);
	}
	rt_profile_entry_derive(e);
	/* the entry's bands (1.4) */
	p->band_first[idx] = p->n_bands;
	p->band_n[idx] = 0;
	if (absent_or_null(&f[E_BANDS]))
		return 0;
	path(tmp, sizeof(where), where, ".bands", SIZE_MAX);
	if (f[E_BANDS].t != RT_JV_ARR)
		return rt_profile_fail(c, EINVAL, "%s: expected an array, got %s", tmp, type_name(&f[E_BANDS]));
	if (grow(s, (void **)&p->bands, &s->cap_bands, p->n_bands + ec->n_bands, sizeof(*p->bands)))
		return rt_profile_fail(c, ENOMEM, "out of memory");
	for (size_t i = 0; i < ec->n_bands; i++) {
		char w2[64];

		path(w2, sizeof(w2), tmp, "", i);
		rc = check_band(c, w2, &s->band_caps[i], &p->bands[p->n_bands]);
		if (rc == ENOENT)
			continue;
		if (rc)
			return rc;
		p->n_bands++;
		p->band_n[idx]++;
	}
	return 0;
}

/* Reads the array at the cursor (its type and text in *v whatever it is), calling each(s, arg, i) for every element
 * (which must consume it). 0 or -1. */
static int scan_array(struct scan *s, struct rt_jv *v, int (*each)(struct scan *, void *, size_t), void *arg)
{
	struct rt_jit it = { 0 };
	size_t off, i = 0;
	int r;

	if (rt_jlex_peek(&s->l) != '[')
		return rt_jlex_value(&s->l, v) ? -1 : 0;
	off = (size_t)(s->l.p - s->l.text);
	if (rt_jlex_open(&s->l, &it))
		return -1;
	while ((r = rt_jlex_next(&s->l, &it, NULL)) > 0)
		if (each(s, arg, i++))
			return -1;
	if (r < 0)
		return -1;
	memset(v, 0, sizeof(*v));
	v->t = RT_JV_ARR;
	v->off = off;
	v->len = (size_t)(s->l.p - s->l.text) - off;
	return 0;
}

/* One element of an entry's "reasons": captured up to the one past the kept eight, later ones only lexed. 0 or -1. */
static int each_reason(struct scan *s, void *arg, size_t i)
{
	struct entry_cap *ec = arg;
	struct rt_jv skip;

	if (i > RT_PROFILE_MAX_REASONS)
		return rt_jlex_value(&s->l, &skip) ? -1 : 0;
	ec->n_reason_el = i + 1;
	if (i == RT_PROFILE_MAX_REASONS)
		return rt_jlex_value(&s->l, &ec->reason_el[i]) ? -1 : 0;
	return scan_sub(&s->l, &ec->reason_el[i], reason_keys, 2, ec->reason_f[i]);
}

/* One element of an entry's "bands": captured into s->band_caps. 0, or -1 (lexer error, out of memory). */
static int each_band(struct scan *s, void *arg, size_t i)
{
	struct entry_cap *ec = arg;

	if (grow(s, (void **)&s->band_caps, &s->cap_band_caps, i + 1, sizeof(*s->band_caps)))
		return -1;
	ec->n_bands = i + 1;
	return scan_sub(&s->l, &s->band_caps[i].el, band_keys, B_N, s->band_caps[i].f);
}

/* Reads the "evidence" value at the cursor into ec. 0 or -1. */
static int scan_evidence(struct scan *s, struct entry_cap *ec)
{
	struct rt_jit it = { 0 };
	struct rt_jv k, skip;
	size_t off;
	int r;

	if (rt_jlex_peek(&s->l) != '{')
		return rt_jlex_value(&s->l, &ec->f[E_EVIDENCE]) ? -1 : 0;
	off = (size_t)(s->l.p - s->l.text);
	if (rt_jlex_open(&s->l, &it))
		return -1;
	while ((r = rt_jlex_next(&s->l, &it, &k)) > 0) {
		int i = key_index(ev_keys, 2, &k);

		if (i < 0 ? rt_jlex_value(&s->l, &skip) : scan_sub(&s->l, &ec->ev[i], evd_keys, 2, ec->evf[i]))
			return -1;
	}
	if (r < 0)
		return -1;
	ec->f[E_EVIDENCE].t = RT_JV_OBJ;
	ec->f[E_EVIDENCE].off = off;
	ec->f[E_EVIDENCE].len = (size_t)(s->l.p - s->l.text) - off;
	return 0;
}

/* One element of "entries": captured, and validated unless an earlier entry was invalid. */
static int each_entry(struct scan *s, void *arg, size_t idx)
{
	struct rt_profile *p = s->p;
	struct entry_cap ec;
	struct rt_jv el;
	struct rt_jit it = { 0 };
	struct rt_jv k, skip;
	bool inherit = false;
	int r;

	(void)arg;
	if (s->entries_err.code || rt_jlex_peek(&s->l) != '{') {
		if (rt_jlex_value(&s->l, &el))
			return -1;
		if (!s->entries_err.code) {
			struct rt_profile_ctx c = { s->c.name, &s->entries_err };

			rt_profile_fail(&c, EINVAL, "entries[%zu]: expected an object, got %s", idx, type_name(&el));
		}
		return 0;
	}
	memset(&ec, 0, offsetof(struct entry_cap, reason_el));
	ec.n_reason_el = ec.n_bands = 0;
	if (rt_jlex_open(&s->l, &it))
		return -1;
	while ((r = rt_jlex_next(&s->l, &it, &k)) > 0) {
		int i = key_index(entry_keys, E_N, &k), rc;

		switch (i) {
		case -1: rc = rt_jlex_value(&s->l, &skip) ? -1 : 0; break;
		case E_CQ_MOD: rc = scan_sub(&s->l, &ec.f[i], cqm_keys, 2, ec.cqm); break;
		case E_MEASURED: rc = scan_sub(&s->l, &ec.f[i], measured_keys, M_N, ec.meas); break;
		case E_EVIDENCE: rc = scan_evidence(s, &ec); break;
		case E_REASONS:
			ec.n_reason_el = 0;
			rc = scan_array(s, &ec.f[i], each_reason, &ec);
			break;
		case E_BANDS:
			ec.n_bands = 0;
			rc = scan_array(s, &ec.f[i], each_band, &ec);
			break;
		default: rc = rt_jlex_value(&s->l, &ec.f[i]) ? -1 : 0; break;
		}
		if (rc)
			return -1;
	}
	if (r < 0)
		return -1;
	/* validated into p->entries[idx] */
	if (grow(s, (void **)&p->entries, &s->cap_entries, idx + 1, sizeof(*p->entries)) ||
	    grow(s, (void **)&p->band_first, &s->cap_band_first, idx + 1, sizeof(*p->band_first)) ||
	    grow(s, (void **)&p->band_n, &s->cap_band_n, idx + 1, sizeof(*p->band_n)))
		return -1;
	{
		struct rt_profile_ctx saved = s->c;
		int rc;

		s->c.err = &s->entries_err;
		rc = check_entry(s, &ec, idx, &inherit);
		s->c = saved;
		if (rc == ENOMEM) {
			s->nomem = true;
			return -1;
		}
		if (rc)
			return 0;
	}
	p->n_entries = idx + 1;
	if (inherit) {
		if (grow(s, (void **)&s->inherit, &s->cap_inherit, s->n_inherit + 1, sizeof(*s->inherit)))
			return -1;
		s->inherit[s->n_inherit++] = idx;
	}
	if (s->x) {
		if (grow(s, (void **)&s->x->calibration, &s->cap_cal, idx + 1, sizeof(*s->x->calibration)))
			return -1;
		s->x->calibration[idx] = ec.f[E_CALIBRATION];
		s->x->n_calibration = idx + 1;
	}
	return 0;
}

/* One element of "skipped": validated into p->skips unless an earlier one was invalid. */
static int each_skip(struct scan *s, void *arg, size_t i)
{
	struct rt_profile *p = s->p;
	struct rt_jv el, f[S_N];
	struct rt_profile_skip *k;
	struct rt_profile_ctx c = { s->c.name, &s->skipped_err };
	char where[32], kind[32] = "";
	long long port = 0;

	(void)arg;
	if (s->skipped_err.code)
		return rt_jlex_value(&s->l, &el) ? -1 : 0;
	if (scan_sub(&s->l, &el, skip_keys, S_N, f))
		return -1;
	snprintf(where, sizeof(where), "skipped[%zu]", i);
	if (el.t != RT_JV_OBJ) {
		rt_profile_fail(&c, EINVAL, "%s: expected an object, got %s", where, type_name(&el));
		return 0;
	}
	if (grow(s, (void **)&p->skips, &s->cap_skips, i + 1, sizeof(*p->skips)))
		return -1;
	k = &p->skips[i];
	memset(k, 0, sizeof(*k));
	if ((get_str(&c, where, &f[S_DEVICE], "device", true, false, false, k->device, sizeof(k->device))) ||
	    (get_int(&c, where, &f[S_PORT], "port", true, 1, RT_PROFILE_MAX_PORT, &port)) ||
	    (get_str(&c, where, &f[S_WHAT], "what", true, false, true, k->what, sizeof(k->what))) ||
	    (get_str(&c, where, &f[S_KIND], "kind", false, true, false, kind, sizeof(kind))) ||
	    (get_name_or_null(&c, where, &f[S_OPCODE], "opcode", op_names, N_OF(op_names), "send or write",
			      &k->opcode)) ||
	    (get_name_or_null(&c, where, &f[S_QP_TYPE], "qp_type", qpt_names, N_OF(qpt_names), "rc, ud or srd",
			      &k->qp_type)) ||
	    (get_str(&c, where, &f[S_REASON], "reason", true, false, true, k->reason, sizeof(k->reason))) ||
	    (get_str(&c, where, &f[S_RUN_ID], "run_id", false, true, false, k->run_id, sizeof(k->run_id))))
		return 0;
	if (!k->device[0]) {
		rt_profile_fail(&c, EINVAL, "%s.device: empty", where);
		return 0;
	}
	if (k->run_id[0] && !rt_profile_is_uuid(k->run_id)) {
		rt_profile_fail(&c, EINVAL, "%s.run_id: '%s' is not a uuid", where, k->run_id);
		return 0;
	}
	k->port = (int)port;
	if (rt_profile_skip_kind_parse(kind, &k->kind))
		k->kind = RT_PROFILE_SKIP_OTHER;
	p->n_skips = i + 1;
	return 0;
}

/* The document's members, as the reference checks them (rt_profile_from_json). */
struct root_cap {
	struct rt_jv f[R_N];
	struct rt_jv schema[2], node[N_N], group[1];
};

/* Validates the document's own members in the reference's order, then reports the first invalid entry or skip
 * found while reading; sets the inherited rtune_versions. 0, or an errno with err set. */
static int check_root(struct scan *s, const struct rt_jv *root, const struct root_cap *rc_)
{
	struct rt_profile_ctx *c = &s->c;
	struct rt_profile *p = s->p;
	const struct rt_jv *f = rc_->f;
	char sname[64], sver[32];
	int major, minor, rc;

	if (root->t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "document: expected an object, got %s", type_name(root));
	if (f[R_SCHEMA].t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "schema: missing or not an object (is this an rtune profile?)");
	if ((rc = get_str(c, "schema", &rc_->schema[0], "name", true, false, false, sname, sizeof(sname))) ||
	    (rc = get_str(c, "schema", &rc_->schema[1], "version", true, false, false, sver, sizeof(sver))))
		return rc;
	if (strcmp(sname, RT_PROFILE_SCHEMA_NAME) != 0)
		return rt_profile_fail(c, EINVAL, "schema.name: '%s' is not '%s'", sname, RT_PROFILE_SCHEMA_NAME);
	if (rt_profile_version_parse(sver, &major, &minor) || major < 0 || minor < 0)
		return rt_profile_fail(c, EINVAL, "schema.version: '%s' is not MAJOR.MINOR", sver);
	if (major != RT_PROFILE_SCHEMA_MAJOR)
		return rt_profile_fail(c, ENOTSUP,
				       "schema version %s is not supported (this librtune reads %d.x); upgrade rtune",
				       sver, RT_PROFILE_SCHEMA_MAJOR);
	p->schema_minor = minor;
	if ((rc = get_str(c, "document", &f[R_RTUNE_VERSION], "rtune_version", true, false, false, p->rtune_version,
			  sizeof(p->rtune_version))))
		return rc;
	if (f[R_NODE].t != RT_JV_OBJ)
		return rt_profile_fail(c, EINVAL, "node: missing or not an object");
	{
		const struct rt_jv *n = rc_->node;
		long long v = 0;

		if ((rc = get_str(c, "node", &n[N_HOSTNAME], "hostname", true, false, false, p->hostname,
				  sizeof(p->hostname))) ||
		    (rc = get_str(c, "node", &n[N_MACHINE_ID], "machine_id", false, true, false, p->machine_id,
				  sizeof(p->machine_id))) ||
		    (rc = get_str(c, "node", &n[N_CPU_MODEL], "cpu_model", false, true, true, p->cpu_model,
				  sizeof(p->cpu_model))) ||
		    (rc = get_str(c, "node", &n[N_KERNEL], "kernel", false, true, true, p->kernel,
				  sizeof(p->kernel))) ||
		    (rc = get_str(c, "node", &n[N_HW_SIG], "hardware_signature", false, true, false, p->hw_signature,
				  sizeof(p->hw_signature))))
			return rc;
		if ((rc = get_int(c, "node", &n[N_CPU_COUNT], "cpu_count", false, 0, 1 << 20, &v)))
			return rc;
		p->cpu_count = (int)v;
		v = 1;
		if ((rc = get_int(c, "node", &n[N_NUMA_NODES], "numa_nodes", false, 1, RT_PROFILE_MAX_NUMA + 1, &v)))
			return rc;
		p->numa_nodes = (int)v;
	}
	if (!p->hostname[0])
		return rt_profile_fail(c, EINVAL, "node.hostname: empty");
	if (!absent_or_null(&f[R_GROUP])) {
		uint32_t nodes = 0;

		if (f[R_GROUP].t != RT_JV_OBJ)
			return rt_profile_fail(c, EINVAL, "group: expected an object or null, got %s",
					       type_name(&f[R_GROUP]));
		if ((rc = get_u32(c, "group", &rc_->group[0], "node_count", true, 1, UINT32_MAX, &nodes)))
			return rc;
		p->group_nodes = nodes;
	}
	if (f[R_ENTRIES].t != RT_JV_ARR)
		return rt_profile_fail(c, EINVAL, "entries: missing or not an array");
	if (s->entries_err.code)
		return rt_error_set(c->err, s->entries_err.code, "%s", s->entries_err.text);
	for (size_t i = 0; i < s->n_inherit; i++)
		snprintf(p->entries[s->inherit[i]].rtune_version, sizeof(p->entries[0].rtune_version), "%s",
			 p->rtune_version);
	if (absent_or_null(&f[R_SKIPPED]))
		return 0;
	if (f[R_SKIPPED].t != RT_JV_ARR)
		return rt_profile_fail(c, EINVAL, "skipped: expected an array, got %s", type_name(&f[R_SKIPPED]));
	if (s->skipped_err.code)
		return rt_error_set(c->err, s->skipped_err.code, "%s", s->skipped_err.text);
	return 0;
}

/* Reads the top-level value (the document) into root and rc_. 0, or -1 on a lexer error or s->nomem. */
static int scan_root(struct scan *s, struct rt_jv *root, struct root_cap *rc_)
{
	struct rt_jit it = { 0 };
	struct rt_jv k, skip;
	int c = rt_jlex_peek(&s->l), r;

	memset(rc_, 0, sizeof(*rc_));
	if (rt_jlex_expect_container(&s->l))
		return -1;
	if (c != '{')
		return rt_jlex_value(&s->l, root) ? -1 : 0;
	root->t = RT_JV_OBJ;
	if (rt_jlex_open(&s->l, &it))
		return -1;
	while ((r = rt_jlex_next(&s->l, &it, &k)) > 0) {
		int i = key_index(root_keys, R_N, &k), rc;

		switch (i) {
		case -1: rc = rt_jlex_value(&s->l, &skip) ? -1 : 0; break;
		case R_SCHEMA: rc = scan_sub(&s->l, &rc_->f[i], schema_keys, 2, rc_->schema); break;
		case R_NODE: rc = scan_sub(&s->l, &rc_->f[i], node_keys, N_N, rc_->node); break;
		case R_GROUP: rc = scan_sub(&s->l, &rc_->f[i], group_keys, 1, rc_->group); break;
		case R_ENTRIES: rc = scan_array(s, &rc_->f[i], each_entry, NULL); break;
		case R_SKIPPED: rc = scan_array(s, &rc_->f[i], each_skip, NULL); break;
		default: rc = rt_jlex_value(&s->l, &rc_->f[i]) ? -1 : 0; break;
		}
		if (rc)
			return -1;
	}
	return r < 0 ? -1 : 0;
}

int rt_profile_scan(const char *text, size_t len, const char *name, struct rt_profile **out,
		    struct rt_profile_scan_extra *extra, struct rt_error *err)
{
	struct scan s;
	struct root_cap rc_;
	struct rt_jv root;
	int rc;

	*out = NULL;
	if (extra)
		memset(extra, 0, sizeof(*extra));
	memset(&s, 0, offsetof(struct scan, l));
	memset((char *)&s + offsetof(struct scan, c), 0, sizeof(s) - offsetof(struct scan, c));
	s.c.name = name;
	s.c.err = err;
	s.x = extra;
	if (len > RT_PROFILE_MAX_BYTES)
		return rt_profile_fail(&s.c, EFBIG, "larger than %u bytes", RT_PROFILE_MAX_BYTES);
	if (!(s.p = calloc(1, sizeof(*s.p))))
		return rt_profile_fail(&s.c, ENOMEM, "out of memory");
	rt_jlex_init(&s.l, text, len);
	memset(&root, 0, sizeof(root));
	if (scan_root(&s, &root, &rc_) || rt_jlex_end(&s.l)) {
		char why[RT_ERROR_TEXT_LEN];

		if (s.nomem || s.l.rc == ENOMEM) {
			rc = rt_profile_fail(&s.c, ENOMEM, "out of memory");
		} else {
			rt_jlex_error_text(&s.l, why, sizeof(why));
			rc = rt_profile_fail(&s.c, EINVAL, "%s", why);
		}
		goto out;
	}
	if ((rc = check_root(&s, &root, &rc_)))
		goto out;
	if (extra) {
		extra->node = rc_.f[R_NODE];
		extra->hardware = rc_.f[R_HARDWARE];
	}
	*out = s.p;
	s.p = NULL;
out:
	if (rc && extra)
		rt_profile_scan_extra_free(extra);
	rt_jlex_fini(&s.l);
	rt_profile_free(s.p);
	free(s.band_caps);
	free(s.inherit);
	return rc;
}

void rt_profile_scan_extra_free(struct rt_profile_scan_extra *x)
{
	if (!x)
		return;
	free(x->calibration);
	memset(x, 0, sizeof(*x));
}

int rt_profile_parse_jansson(const char *text, size_t len, const char *name, struct rt_profile **out,
			     struct rt_error *err)
{
	return rt_profile_parse_root(text, len, name, out, NULL, err);
}
