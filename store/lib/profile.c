// SPDX-License-Identifier: MIT
/*
 * librtune's profile loader: reads a JSON profile document (with the single-pass reader of profile_scan.c; the jansson
 * converter here, rt_profile_from_json, is its reference and the import's parser), checks its schema version (a major
 * it does not know is refused, a newer minor is read), validates every value against the ranges of
 * docs/profile-v1.schema.json (unknown fields are ignored), and answers lookups by device/GUID, port, opcode and QP
 * type. Also used by the store's import, so what the store accepts is exactly what applications accept.
 */
#include "profile_internal.h"
#include "profile_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const op_names[] = { "send", "write" };
static const char *const qpt_names[] = { "rc", "ud", "srd" };
static const char *const conf_names[] = { "low", "medium", "high" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *rt_profile_opcode_name(enum rt_profile_opcode op)
{
	return (unsigned)op < N_OF(op_names) ? op_names[op] : "unknown";
}

const char *rt_profile_qp_type_name(enum rt_profile_qp_type qpt)
{
	return (unsigned)qpt < N_OF(qpt_names) ? qpt_names[qpt] : "unknown";
}

const char *rt_profile_confidence_name(enum rt_profile_confidence c)
{
	return (unsigned)c < N_OF(conf_names) ? conf_names[c] : "unknown";
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

int rt_profile_opcode_parse(const char *s, enum rt_profile_opcode *out)
{
	int i = name_index(op_names, N_OF(op_names), s);

	if (i < 0)
		return EINVAL;
	*out = (enum rt_profile_opcode)i;
	return 0;
}

int rt_profile_qp_type_parse(const char *s, enum rt_profile_qp_type *out)
{
	int i = name_index(qpt_names, N_OF(qpt_names), s);

	if (i < 0)
		return EINVAL;
	*out = (enum rt_profile_qp_type)i;
	return 0;
}

int rt_profile_confidence_parse(const char *s, enum rt_profile_confidence *out)
{
	int i = name_index(conf_names, N_OF(conf_names), s);

	if (i < 0)
		return EINVAL;
	*out = (enum rt_profile_confidence)i;
	return 0;
}

void rt_profile_time_format(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int rt_profile_time_parse(const char *s, int64_t *out)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!end || strcmp(end, "Z") != 0)
		return EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

void rt_profile_entry_derive(struct rt_profile_entry *e)
{
	e->inline_limit_excl = e->inline_threshold ? e->inline_threshold + 1 : 0;
}

bool rt_profile_is_uuid(const char *s)
{
	static const char pat[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; pat[i]; i++) {
		char c = s[i];

		if (pat[i] == '-' ? c != '-'
				  : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

#define P(prefix) ((prefix) ? (prefix) : "entry")

int rt_profile_entry_check(const struct rt_profile_entry *e, const char *prefix, struct rt_error *err)
{
	if (!e->device[0])
		return rt_error_set(err, EINVAL, "%s.device: empty", P(prefix));
	if (e->port < 1 || e->port > RT_PROFILE_MAX_PORT)
		return rt_error_set(err, EINVAL, "%s.port: %d is out of range 1..%d", P(prefix), e->port,
				    RT_PROFILE_MAX_PORT);
	if ((unsigned)e->opcode >= N_OF(op_names))
		return rt_error_set(err, EINVAL, "%s.opcode: invalid", P(prefix));
	if ((unsigned)e->qp_type >= N_OF(qpt_names))
		return rt_error_set(err, EINVAL, "%s.qp_type: invalid", P(prefix));
	if ((unsigned)e->confidence >= N_OF(conf_names))
		return rt_error_set(err, EINVAL, "%s.confidence: invalid", P(prefix));
	if (e->max_inline_data > RT_PROFILE_MAX_INLINE_BYTES)
		return rt_error_set(err, EINVAL, "%s.max_inline_data: %" PRIu32 " is out of range 0..%u", P(prefix),
				    e->max_inline_data, RT_PROFILE_MAX_INLINE_BYTES);
	if (e->inline_threshold > e->max_inline_data)
		return rt_error_set(err, EINVAL, "%s.inline_threshold: %" PRIu32 " exceeds max_inline_data %" PRIu32,
				    P(prefix), e->inline_threshold, e->max_inline_data);
	if (e->sq_depth < 1 || e->sq_depth > RT_PROFILE_MAX_SQ_DEPTH)
		return rt_error_set(err, EINVAL, "%s.sq_depth: %" PRIu32 " is out of range 1..%u", P(prefix),
				    e->sq_depth, RT_PROFILE_MAX_SQ_DEPTH);
	if (e->signal_interval < 1 || e->signal_interval > RT_PROFILE_MAX_SIGNAL_INTERVAL)
		return rt_error_set(err, EINVAL, "%s.signal_interval: %" PRIu32 " is out of range 1..%u", P(prefix),
				    e->signal_interval, RT_PROFILE_MAX_SIGNAL_INTERVAL);
	if (e->signal_interval > e->sq_depth)
		return rt_error_set(err, EINVAL, "%s.signal_interval: %" PRIu32 " exceeds sq_depth %" PRIu32, P(prefix),
				    e->signal_interval, e->sq_depth);
	if (e->cq_depth < 1 || e->cq_depth > RT_PROFILE_MAX_CQ_DEPTH)
		return rt_error_set(err, EINVAL, "%s.cq_depth: %" PRIu32 " is out of range 1..%u", P(prefix),
				    e->cq_depth, RT_PROFILE_MAX_CQ_DEPTH);
	if (e->cq_moderation &&
	    (e->cq_mod_count > RT_PROFILE_MAX_CQ_MOD_COUNT || e->cq_mod_period_us > RT_PROFILE_MAX_CQ_MOD_PERIOD_US))
		return rt_error_set(err, EINVAL, "%s.cq_moderation: count/period_us out of range 0..65535", P(prefix));
	if (e->numa_node < -1 || e->numa_node > RT_PROFILE_MAX_NUMA)
		return rt_error_set(err, EINVAL, "%s.numa_node: %d is out of range -1..%d", P(prefix), e->numa_node,
				    RT_PROFILE_MAX_NUMA);
	if ((unsigned)e->inline_confidence >= N_OF(conf_names) || (unsigned)e->signal_confidence >= N_OF(conf_names))
		return rt_error_set(err, EINVAL, "%s.inline_confidence/signal_confidence: invalid", P(prefix));
	if ((e->inline_since[0] && !rt_profile_is_uuid(e->inline_since)) ||
	    (e->signal_since[0] && !rt_profile_is_uuid(e->signal_since)))
		return rt_error_set(err, EINVAL, "%s.evidence: since_run '%s' is not a uuid", P(prefix),
				    e->inline_since[0] && !rt_profile_is_uuid(e->inline_since) ? e->inline_since
											       : e->signal_since);
	if (e->n_reasons > RT_PROFILE_MAX_REASONS)
		return rt_error_set(err, EINVAL, "%s.reasons: more than %d", P(prefix), RT_PROFILE_MAX_REASONS);
	if (e->measured_at < 0)
		return rt_error_set(err, EINVAL, "%s.measured_at: before 1970", P(prefix));
	if (!rt_profile_is_uuid(e->run_id))
		return rt_error_set(err, EINVAL, "%s.run_id: '%s' is not a uuid", P(prefix), e->run_id);
	return 0;
}

/* ---- JSON field readers: each names the field on failure ---------------------------------------------------------- */

int rt_profile_fail(struct rt_profile_ctx *c, int code, const char *fmt, ...)
{
	char msg[RT_ERROR_TEXT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->name)
		return rt_error_set(c->err, code, "profile '%s': %s", c->name, msg);
	return rt_error_set(c->err, code, "profile: %s", msg);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

/* Reads an integer field in [lo, hi]; absent: ENOENT when required, else *out untouched and 0. */
static int get_int(struct rt_profile_ctx *c, const char *where, json_t *obj, const char *key, bool required,
		   json_int_t lo, json_int_t hi, json_int_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v) {
		if (required)
			return rt_profile_fail(c, EINVAL, "%s.%s: missing", where, key);
		return 0;
	}
	if (json_is_real(v)) {
		/* JSON has one number type: 16.0 is the integer 16 (as JSON Schema says); 16.5 is not an integer */
		double d = json_real_value(v);

		if (!(d >= -9e15 && d <= 9e15) || d != (double)(json_int_t)d)
			return rt_profile_fail(c, EINVAL, "%s.%s: expected an integer, got %g", where, key, d);
		if ((json_int_t)d < lo || (json_int_t)d > hi)
			return rt_profile_fail(
				c, EINVAL, "%s.%s: %g is out of range %" JSON_INTEGER_FORMAT "..%" JSON_INTEGER_FORMAT,
				where, key, d, lo, hi);
		*out = (json_int_t)d;
		return 0;
	}
	if (!json_is_integer(v))
		return rt_profile_fail(c, EINVAL, "%s.%s: expected an integer, got %s", where, key, type_name(v));
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return rt_profile_fail(c, EINVAL,
				       "%s.%s: %" JSON_INTEGER_FORMAT " is out of range %" JSON_INTEGER_FORMAT
				       "..%" JSON_INTEGER_FORMAT,
				       where, key, json_integer_value(v), lo, hi);
	*out = json_integer_value(v);
	return 0;
}

static int get_u32(struct rt_profile_ctx *c, const char *where, json_t *obj, const char *key, bool required,
		   uint32_t lo, uint32_t hi, uint32_t *out)
{
	json_int_t v = *out;
	int rc = get_int(c, where, obj, key, required, lo, hi, &v);

	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

int rt_profile_version_parse(const char *s, int *major, int *minor)
{
	char *end;
	long a, b;

	errno = 0;
	a = strtol(s, &end, 10);
	if (end == s || *end != '.' || errno || a < INT_MIN || a > INT_MAX)
		return -1;
	s = end + 1;
	b = strtol(s, &end, 10);
	if (end == s || *end || errno || b < INT_MIN || b > INT_MAX)
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

size_t rt_profile_utf8_fit(const char *s, size_t n, size_t cap)
{
	const unsigned char *t = (const unsigned char *)s;

	if (n < cap)
		return n;
	/* t[n] is the first byte left out: step back while it continues the character before it */
	n = cap - 1;
	while (n > 0 && (t[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Reads a string field into buf; too long is an error unless truncate (then cut at a UTF-8 character boundary); null
 * accepted (as "") when nullable. */
static int get_str(struct rt_profile_ctx *c, const char *where, json_t *obj, const char *key, bool required,
		   bool nullable, bool truncate, char *buf, size_t len)
{
	json_t *v = json_object_get(obj, key);
	size_t n;

	if (!v || (nullable && json_is_null(v))) {
		if (!v && required)
			return rt_profile_fail(c, EINVAL, "%s.%s: missing", where, key);
		if (v)
			buf[0] = '\0';
		return 0;
	}
	if (!json_is_string(v))
		return rt_profile_fail(c, EINVAL, "%s.%s: expected a string, got %s", where, key, type_name(v));
	n = json_string_length(v);
	if (n >= len && !truncate)
		return rt_profile_fail(c, EINVAL, "%s.%s: longer than %zu bytes", where, key, len - 1);
	n = rt_profile_utf8_fit(json_string_value(v), n, len);
	memcpy(buf, json_string_value(v), n);
	buf[n] = '\0';
	return 0;
}

/* Reads the 1.2 fields of entry je into e (whose confidence is read already): each decision's confidence
 * ("inline_confidence", "signal_confidence", optional: `confidence` when absent) and the "evidence" object
 * ({"inline": {"runs": n, "since_run": uuid}, "signal": {...}}, optional: one run; an absent since_run stays "",
 * meaning run_id). Returns 0, or EINVAL with the field named in c's error. */
static int parse_decision_fields(struct rt_profile_ctx *c, const char *where, json_t *je, struct rt_profile_entry *e)
{
	static const char *const keys[2] = { "inline", "signal" };
	char tmp[64], w2[80];
	json_t *ev;
	int rc;

	e->inline_confidence = e->signal_confidence = e->confidence;
	for (int k = 0; k < 2; k++) {
		enum rt_profile_confidence *conf = k ? &e->signal_confidence : &e->inline_confidence;

		snprintf(w2, sizeof(w2), "%s_confidence", keys[k]);
		tmp[0] = '\0'; /* get_str leaves buf alone when the key is absent */
		if ((rc = get_str(c, where, je, w2, false, true, false, tmp, sizeof(tmp))))
			return rc;
		if (tmp[0] && rt_profile_confidence_parse(tmp, conf))
			return rt_profile_fail(c, EINVAL, "%s.%s: '%s' is not low, medium or high", where, w2, tmp);
	}
	e->inline_runs = e->signal_runs = 1;
	ev = json_object_get(je, "evidence");
	if (!ev || json_is_null(ev))
		return 0;
	if (!json_is_object(ev))
		return rt_profile_fail(c, EINVAL, "%s.evidence: expected an object or null, got %s", where,
				       type_name(ev));
	for (int k = 0; k < 2; k++) {
		json_t *d = json_object_get(ev, keys[k]);

		snprintf(w2, sizeof(w2), "%s.evidence.%s", where, keys[k]);
		if (!d || json_is_null(d))
			continue;
		if (!json_is_object(d))
			return rt_profile_fail(c, EINVAL, "%s: expected an object or null, got %s", w2, type_name(d));
		if ((rc = get_u32(c, w2, d, "runs", false, 1, UINT32_MAX, k ? &e->signal_runs : &e->inline_runs)) ||
		    (rc = get_str(c, w2, d, "since_run", false, true, false, k ? e->signal_since : e->inline_since,
				  sizeof(e->inline_since))))
			return rc;
	}
	return 0;
}

/* Reads an optional number (null: unknown) in lo..hi into *out; absent or null leave NAN. 0 or EINVAL. */
static int get_real(struct rt_profile_ctx *c, const char *where, json_t *obj, const char *key, double lo, double hi,
		    double *out)
{
	json_t *v = json_object_get(obj, key);
	double x;

	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return rt_profile_fail(c, EINVAL, "%s.%s: expected a number or null, got %s", where, key, type_name(v));
	x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return rt_profile_fail(c, EINVAL, "%s.%s: %g is out of range %g..%g", where, key, x, lo, hi);
	*out = x;
	return 0;
}

/* Reads the 1.3 "measured" object of entry je into e (optional; absent or null: has_measured false, figures NAN).
 * Returns 0, or EINVAL with the field named in c's error. */
static int parse_measured(struct rt_profile_ctx *c, const char *where, json_t *je, struct rt_profile_entry *e)
{
	json_t *m = json_object_get(je, "measured");
	char w2[64];
	int rc;

	e->has_measured = false;
	e->lat_kind[0] = '\0';
	e->lat_bytes = 0;
	e->lat_inline_ns = e->lat_noinline_ns = e->mops_at_n = e->mops_at_n1 = e->noise_pct = NAN;
	if (!m || json_is_null(m))
		return 0;
	snprintf(w2, sizeof(w2), "%s.measured", where);
	if (!json_is_object(m))
		return rt_profile_fail(c, EINVAL, "%s: expected an object or null, got %s", w2, type_name(m));
	if ((rc = get_str(c, w2, m, "latency_kind", false, true, false, e->lat_kind, sizeof(e->lat_kind))))
		return rc;
	if (e->lat_kind[0] && strcmp(e->lat_kind, "pingpong") && strcmp(e->lat_kind, "post_cqe"))
		return rt_profile_fail(c, EINVAL, "%s.latency_kind: '%s' is not pingpong or post_cqe", w2, e->lat_kind);
	if ((rc = get_u32(c, w2, m, "msg_bytes", false, 0, RT_PROFILE_MAX_INLINE_BYTES, &e->lat_bytes)) ||
	    (rc = get_real(c, w2, m, "latency_inline_ns", 0, 1e12, &e->lat_inline_ns)) ||
	    (rc = get_real(c, w2, m, "latency_noinline_ns", 0, 1e12, &e->lat_noinline_ns)) ||
	    (rc = get_real(c, w2, m, "mops_at_n", 0, 1e6, &e->mops_at_n)) ||
	    (rc = get_real(c, w2, m, "mops_at_n1", 0, 1e6, &e->mops_at_n1)) ||
	    (rc = get_real(c, w2, m, "noise_pct", 0, 1e6, &e->noise_pct)))
		return rc;
	e->has_measured = true;
	return 0;
}

/* ---- 1.4: load bands of an entry, skipped measurements of the document ------------------------------------------ */

static const char *const band_kind_names[] = { "", "large", "post_list", "concurrency" };
static const char *const skip_kind_names[] = { "other", "inline", "qp_type", "opcode", "cq_moderation" };

const char *rt_profile_band_kind_name(enum rt_profile_band_kind k)
{
	return (unsigned)k < N_OF(band_kind_names) && k ? band_kind_names[k] : "unknown";
}

const char *rt_profile_skip_kind_name(enum rt_profile_skip_kind k)
{
	return (unsigned)k < N_OF(skip_kind_names) ? skip_kind_names[k] : "other";
}

int rt_profile_skip_kind_parse(const char *s, enum rt_profile_skip_kind *out)
{
	int i = name_index(skip_kind_names, N_OF(skip_kind_names), s);

	if (i < 0)
		return EINVAL;
	*out = (enum rt_profile_skip_kind)i;
	return 0;
}

/* Reads an optional enum-named string member (null or absent: *out = -1) of names; EINVAL naming it otherwise. */
static int get_name_or_null(struct rt_profile_ctx *c, const char *where, json_t *o, const char *key,
			    const char *const *names, size_t n, const char *expect, int *out)
{
	char tmp[32] = "";
	int rc;

	*out = -1;
	if ((rc = get_str(c, where, o, key, false, true, false, tmp, sizeof(tmp))))
		return rc;
	if (!tmp[0])
		return 0;
	if ((*out = name_index(names, n, tmp)) < 0)
		return rt_profile_fail(c, EINVAL, "%s.%s: '%s' is not %s", where, key, tmp, expect);
	return 0;
}

/* Reads one band object into b; 0, ENOENT (a kind this librtune does not know: passed over), or EINVAL naming the
 * field. */
static int parse_band(struct rt_profile_ctx *c, const char *where, json_t *o, struct rt_profile_band *b)
{
	char tmp[32] = "";
	int rc, conf;

	memset(b, 0, sizeof(*b));
	b->post_list = 1;
	b->qps = b->threads = 1;
	if (!json_is_object(o))
		return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", where, type_name(o));
	if ((rc = get_str(c, where, o, "kind", true, false, false, tmp, sizeof(tmp))))
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
	    ((rc = get_u32(c, where, o, "qps", true, 2, RT_PROFILE_MAX_BAND_QPS, &b->qps)) ||
	     (rc = get_u32(c, where, o, "threads", true, 1, RT_PROFILE_MAX_BAND_QPS, &b->threads))))
		return rc;
	if (b->threads > b->qps)
		return rt_profile_fail(c, EINVAL, "%s.threads: %" PRIu32 " exceeds qps %" PRIu32, where, b->threads,
				       b->qps);
	if ((rc = get_u32(c, where, o, "post_list", false, 1, RT_PROFILE_MAX_POST_LIST, &b->post_list)) ||
	    (rc = get_u32(c, where, o, "msg_bytes_lo", true, 0, RT_PROFILE_MAX_BAND_BYTES, &b->msg_bytes_lo)) ||
	    (rc = get_u32(c, where, o, "msg_bytes_hi", true, 0, RT_PROFILE_MAX_BAND_BYTES, &b->msg_bytes_hi)) ||
	    (rc = get_u32(c, where, o, "signal_interval", true, 1, RT_PROFILE_MAX_SIGNAL_INTERVAL,
			  &b->signal_interval)) ||
	    (rc = get_str(c, where, o, "verdict", false, true, true, b->verdict, sizeof(b->verdict))) ||
	    (rc = get_name_or_null(c, where, o, "confidence", conf_names, N_OF(conf_names), "low, medium or high",
				   &conf)))
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

/* Appends entry idx's optional "bands" array (1.4) to p->bands; 0, or EINVAL / ENOMEM. */
static int parse_bands(struct rt_profile_ctx *c, json_t *je, size_t idx, struct rt_profile *p)
{
	json_t *a = json_object_get(je, "bands");
	char where[48];
	size_t n;

	p->band_first[idx] = p->n_bands;
	p->band_n[idx] = 0;
	snprintf(where, sizeof(where), "entries[%zu].bands", idx);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return rt_profile_fail(c, EINVAL, "%s: expected an array, got %s", where, type_name(a));
	if (!(n = json_array_size(a)))
		return 0;
	{
		struct rt_profile_band *nv = realloc(p->bands, (p->n_bands + n) * sizeof(*nv));

		if (!nv)
			return rt_profile_fail(c, ENOMEM, "out of memory");
		p->bands = nv;
	}
	for (size_t i = 0; i < n; i++) {
		char w2[64];
		int rc;

		snprintf(w2, sizeof(w2), "%s[%zu]", where, i);
		rc = parse_band(c, w2, json_array_get(a, i), &p->bands[p->n_bands]);
		if (rc == ENOENT)
			continue;
		if (rc)
			return rc;
		p->n_bands++;
		p->band_n[idx]++;
	}
	return 0;
}

/* Reads the document's optional "skipped" array (1.4) into p->skips; 0, or EINVAL / ENOMEM. */
static int parse_skipped(struct rt_profile_ctx *c, json_t *root, struct rt_profile *p)
{
	json_t *a = json_object_get(root, "skipped");

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return rt_profile_fail(c, EINVAL, "skipped: expected an array, got %s", type_name(a));
	if (json_array_size(a) && !(p->skips = calloc(json_array_size(a), sizeof(*p->skips))))
		return rt_profile_fail(c, ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *o = json_array_get(a, i);
		struct rt_profile_skip *k = &p->skips[i];
		char where[32], kind[32] = "";
		json_int_t port = 0;
		int rc;

		snprintf(where, sizeof(where), "skipped[%zu]", i);
		if (!json_is_object(o))
			return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", where, type_name(o));
		if ((rc = get_str(c, where, o, "device", true, false, false, k->device, sizeof(k->device))) ||
		    (rc = get_int(c, where, o, "port", true, 1, RT_PROFILE_MAX_PORT, &port)) ||
		    (rc = get_str(c, where, o, "what", true, false, true, k->what, sizeof(k->what))) ||
		    (rc = get_str(c, where, o, "kind", false, true, false, kind, sizeof(kind))) ||
		    (rc = get_name_or_null(c, where, o, "opcode", op_names, N_OF(op_names), "send or write",
					   &k->opcode)) ||
		    (rc = get_name_or_null(c, where, o, "qp_type", qpt_names, N_OF(qpt_names), "rc, ud or srd",
					   &k->qp_type)) ||
		    (rc = get_str(c, where, o, "reason", true, false, true, k->reason, sizeof(k->reason))) ||
		    (rc = get_str(c, where, o, "run_id", false, true, false, k->run_id, sizeof(k->run_id))))
			return rc;
		if (!k->device[0])
			return rt_profile_fail(c, EINVAL, "%s.device: empty", where);
		if (k->run_id[0] && !rt_profile_is_uuid(k->run_id))
			return rt_profile_fail(c, EINVAL, "%s.run_id: '%s' is not a uuid", where, k->run_id);
		k->port = (int)port;
		/* a kind of a later minor version reads as "other": minor versions only add */
		if (rt_profile_skip_kind_parse(kind, &k->kind))
			k->kind = RT_PROFILE_SKIP_OTHER;
		p->n_skips++;
	}
	return 0;
}

static int parse_entry(struct rt_profile_ctx *c, json_t *je, size_t idx, const char *doc_version,
		       struct rt_profile_entry *e)
{
	char where[48], tmp[64];
	json_int_t v;
	json_t *cm, *reasons;
	int rc;

	snprintf(where, sizeof(where), "entries[%zu]", idx);
	memset(e, 0, sizeof(*e));
	e->numa_node = -1;
	if (!json_is_object(je))
		return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", where, type_name(je));
	if ((rc = get_str(c, where, je, "device", true, false, false, e->device, sizeof(e->device))) ||
	    (rc = get_str(c, where, je, "guid", false, true, false, e->guid, sizeof(e->guid))))
		return rc;
	v = 0;
	if ((rc = get_int(c, where, je, "port", true, 1, RT_PROFILE_MAX_PORT, &v)))
		return rc;
	e->port = (int)v;
	if ((rc = get_str(c, where, je, "opcode", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_opcode_parse(tmp, &e->opcode))
		return rt_profile_fail(c, EINVAL, "%s.opcode: '%s' is not send or write", where, tmp);
	if ((rc = get_str(c, where, je, "qp_type", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_qp_type_parse(tmp, &e->qp_type))
		return rt_profile_fail(c, EINVAL, "%s.qp_type: '%s' is not rc, ud or srd", where, tmp);
	if ((rc = get_u32(c, where, je, "inline_threshold", true, 0, RT_PROFILE_MAX_INLINE_BYTES,
			  &e->inline_threshold)) ||
	    (rc = get_u32(c, where, je, "max_inline_data", true, 0, RT_PROFILE_MAX_INLINE_BYTES,
			  &e->max_inline_data)) ||
	    (rc = get_u32(c, where, je, "signal_interval", true, 1, RT_PROFILE_MAX_SIGNAL_INTERVAL,
			  &e->signal_interval)) ||
	    (rc = get_u32(c, where, je, "sq_depth", true, 1, RT_PROFILE_MAX_SQ_DEPTH, &e->sq_depth)) ||
	    (rc = get_u32(c, where, je, "cq_depth", true, 1, RT_PROFILE_MAX_CQ_DEPTH, &e->cq_depth)))
		return rc;
	cm = json_object_get(je, "cq_moderation");
	if (cm && !json_is_null(cm)) {
		char w2[64];

		if (!json_is_object(cm))
			return rt_profile_fail(c, EINVAL, "%s.cq_moderation: expected an object or null, got %s", where,
					       type_name(cm));
		snprintf(w2, sizeof(w2), "%s.cq_moderation", where);
		if ((rc = get_u32(c, w2, cm, "count", true, 0, RT_PROFILE_MAX_CQ_MOD_COUNT, &e->cq_mod_count)) ||
		    (rc = get_u32(c, w2, cm, "period_us", true, 0, RT_PROFILE_MAX_CQ_MOD_PERIOD_US,
				  &e->cq_mod_period_us)))
			return rc;
		e->cq_moderation = true;
	}
	v = -1;
	if ((rc = get_int(c, where, je, "numa_node", false, -1, RT_PROFILE_MAX_NUMA, &v)))
		return rc;
	e->numa_node = (int)v;
	if ((rc = get_str(c, where, je, "cpus", false, true, false, e->cpus, sizeof(e->cpus))))
		return rc;
	if ((rc = get_str(c, where, je, "confidence", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_confidence_parse(tmp, &e->confidence))
		return rt_profile_fail(c, EINVAL, "%s.confidence: '%s' is not low, medium or high", where, tmp);
	if ((rc = parse_decision_fields(c, where, je, e)) || (rc = parse_measured(c, where, je, e)))
		return rc;
	reasons = json_object_get(je, "reasons");
	if (reasons && !json_is_array(reasons))
		return rt_profile_fail(c, EINVAL, "%s.reasons: expected an array, got %s", where, type_name(reasons));
	for (size_t i = 0; reasons && i < json_array_size(reasons); i++) {
		json_t *r = json_array_get(reasons, i);
		char w2[64];

		snprintf(w2, sizeof(w2), "%s.reasons[%zu]", where, i);
		if (!json_is_object(r))
			return rt_profile_fail(c, EINVAL, "%s: expected an object, got %s", w2, type_name(r));
		if (e->n_reasons == RT_PROFILE_MAX_REASONS)
			break; /* documented: the first RT_PROFILE_MAX_REASONS are kept */
		if ((rc = get_str(c, w2, r, "code", true, false, true, e->reasons[e->n_reasons].code,
				  sizeof(e->reasons[0].code))) ||
		    (rc = get_str(c, w2, r, "text", true, false, true, e->reasons[e->n_reasons].text,
				  sizeof(e->reasons[0].text))))
			return rc;
		e->n_reasons++;
	}
	if ((rc = get_str(c, where, je, "measured_at", true, false, false, tmp, sizeof(tmp))))
		return rc;
	if (rt_profile_time_parse(tmp, &e->measured_at))
		return rt_profile_fail(c, EINVAL, "%s.measured_at: '%s' is not YYYY-MM-DDTHH:MM:SSZ", where, tmp);
	if ((rc = get_str(c, where, je, "run_id", true, false, false, e->run_id, sizeof(e->run_id))) ||
	    (rc = get_str(c, where, je, "app", false, true, false, e->app, sizeof(e->app))))
		return rc;
	snprintf(e->rtune_version, sizeof(e->rtune_version), "%s", doc_version);
	if ((rc = get_str(c, where, je, "rtune_version", false, false, true, e->rtune_version,
			  sizeof(e->rtune_version))))
		return rc;
	{
		struct rt_error e2;

		if (rt_profile_entry_check(e, where, &e2))
			return rt_profile_fail(c, EINVAL, "%s", e2.text);
	}
	rt_profile_entry_derive(e);
	return 0;
}

int rt_profile_from_json(json_t *root, const char *name, struct rt_profile **out, struct rt_error *err)
{
	struct rt_profile_ctx c = { name, err };
	struct rt_profile *p = NULL;
	json_t *schema, *node, *entries;
	char sname[64], sver[32];
	int major, minor, rc;

	*out = NULL;
	if (!json_is_object(root))
		return rt_profile_fail(&c, EINVAL, "document: expected an object, got %s", type_name(root));
	schema = json_object_get(root, "schema");
	if (!json_is_object(schema))
		return rt_profile_fail(&c, EINVAL, "schema: missing or not an object (is this an rtune profile?)");
	if ((rc = get_str(&c, "schema", schema, "name", true, false, false, sname, sizeof(sname))) ||
	    (rc = get_str(&c, "schema", schema, "version", true, false, false, sver, sizeof(sver))))
		return rc;
	if (strcmp(sname, RT_PROFILE_SCHEMA_NAME) != 0)
		return rt_profile_fail(&c, EINVAL, "schema.name: '%s' is not '%s'", sname, RT_PROFILE_SCHEMA_NAME);
	if (rt_profile_version_parse(sver, &major, &minor) || major < 0 || minor < 0)
		return rt_profile_fail(&c, EINVAL, "schema.version: '%s' is not MAJOR.MINOR", sver);
	if (major != RT_PROFILE_SCHEMA_MAJOR)
		return rt_profile_fail(&c, ENOTSUP,
				       "schema version %s is not supported (this librtune reads %d.x); upgrade rtune",
				       sver, RT_PROFILE_SCHEMA_MAJOR);
	p = calloc(1, sizeof(*p));
	if (!p)
		return rt_profile_fail(&c, ENOMEM, "out of memory");
	p->schema_minor = minor;
	if ((rc = get_str(&c, "document", root, "rtune_version", true, false, false, p->rtune_version,
			  sizeof(p->rtune_version))))
		goto out;
	node = json_object_get(root, "node");
	if (!json_is_object(node)) {
		rc = rt_profile_fail(&c, EINVAL, "node: missing or not an object");
		goto out;
	}
	{
		json_int_t v = 0;

		if ((rc = get_str(&c, "node", node, "hostname", true, false, false, p->hostname,
				  sizeof(p->hostname))) ||
		    (rc = get_str(&c, "node", node, "machine_id", false, true, false, p->machine_id,
				  sizeof(p->machine_id))) ||
		    (rc = get_str(&c, "node", node, "cpu_model", false, true, true, p->cpu_model,
				  sizeof(p->cpu_model))) ||
		    (rc = get_str(&c, "node", node, "kernel", false, true, true, p->kernel, sizeof(p->kernel))) ||
		    (rc = get_str(&c, "node", node, "hardware_signature", false, true, false, p->hw_signature,
				  sizeof(p->hw_signature))))
			goto out;
		if ((rc = get_int(&c, "node", node, "cpu_count", false, 0, 1 << 20, &v)))
			goto out;
		p->cpu_count = (int)v;
		v = 1;
		if ((rc = get_int(&c, "node", node, "numa_nodes", false, 1, RT_PROFILE_MAX_NUMA + 1, &v)))
			goto out;
		p->numa_nodes = (int)v;
	}
	if (!p->hostname[0]) {
		rc = rt_profile_fail(&c, EINVAL, "node.hostname: empty");
		goto out;
	}
	{
		/* 1.3: a group profile says so, with the nodes it stands for (the rest of "group" is for people) */
		json_t *g = json_object_get(root, "group");
		uint32_t nodes = 0;

		if (g && !json_is_null(g)) {
			if (!json_is_object(g)) {
				rc = rt_profile_fail(&c, EINVAL, "group: expected an object or null, got %s",
						     type_name(g));
				goto out;
			}
			if ((rc = get_u32(&c, "group", g, "node_count", true, 1, UINT32_MAX, &nodes)))
				goto out;
		}
		p->group_nodes = nodes;
	}
	entries = json_object_get(root, "entries");
	if (!json_is_array(entries)) {
		rc = rt_profile_fail(&c, EINVAL, "entries: missing or not an array");
		goto out;
	}
	if (json_array_size(entries)) {
		p->entries = calloc(json_array_size(entries), sizeof(*p->entries));
		p->band_first = calloc(json_array_size(entries), sizeof(*p->band_first));
		p->band_n = calloc(json_array_size(entries), sizeof(*p->band_n));
		if (!p->entries || !p->band_first || !p->band_n) {
			rc = rt_profile_fail(&c, ENOMEM, "out of memory");
			goto out;
		}
	}
	for (size_t i = 0; i < json_array_size(entries); i++) {
		if ((rc = parse_entry(&c, json_array_get(entries, i), i, p->rtune_version, &p->entries[i])) ||
		    (rc = parse_bands(&c, json_array_get(entries, i), i, p)))
			goto out;
		p->n_entries++;
	}
	if ((rc = parse_skipped(&c, root, p)))
		goto out;
	*out = p;
	return 0;
out:
	rt_profile_free(p);
	return rc;
}

int rt_profile_parse_named(const char *text, size_t len, const char *name, struct rt_profile **out,
			   struct rt_error *err)
{
	/* the single-pass reader (profile_scan.c): the same acceptance and struct as the jansson path below, which
	 * stays the reference (and the import's parser, which needs the tree) */
	return rt_profile_scan(text, len, name, out, NULL, err);
}

int rt_profile_parse_root(const char *text, size_t len, const char *name, struct rt_profile **out, json_t **root_out,
			  struct rt_error *err)
{
	struct rt_profile_ctx c = { name, err };
	json_error_t jerr;
	json_t *root;
	int rc;

	*out = NULL;
	if (root_out)
		*root_out = NULL;
	if (len > RT_PROFILE_MAX_BYTES)
		return rt_profile_fail(&c, EFBIG, "larger than %u bytes", RT_PROFILE_MAX_BYTES);
	/* jansson bounds nesting itself (JSON_PARSER_MAX_DEPTH, 2048: "maximum parsing depth reached"), so hostile
	 * nesting cannot exhaust the stack */
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return rt_profile_fail(&c, EINVAL, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	rc = rt_profile_from_json(root, name, out, err);
	if (!rc && root_out)
		*root_out = root;
	else
		json_decref(root);
	return rc;
}

int rt_profile_parse(const char *text, size_t len, struct rt_profile **out, struct rt_error *err)
{
	if (!out)
		return rt_error_set(err, EINVAL, "profile: no output pointer");
	if (!text) {
		*out = NULL;
		return rt_error_set(err, EINVAL, "profile: no text");
	}
	return rt_profile_parse_named(text, len, NULL, out, err);
}

int rt_profile_read_file_into(const char *path, char **buf, size_t *cap, size_t *len_out, struct rt_error *err)
{
	struct stat sb;
	size_t got = 0, need;
	int fd, rc = 0;

	*len_out = 0;
	/* O_NONBLOCK: a FIFO must not block us (non-regular files are refused below) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return rt_error_set(err, errno, "cannot open profile '%s': %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0) {
		rc = rt_error_set(err, errno, "cannot read profile '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = rt_error_set(err, EINVAL, "cannot read profile '%s': not a regular file", path);
		goto out;
	}
	if ((uint64_t)sb.st_size > RT_PROFILE_MAX_BYTES) {
		rc = rt_error_set(err, EFBIG, "profile '%s': larger than %u bytes", path, RT_PROFILE_MAX_BYTES);
		goto out;
	}
	need = (size_t)sb.st_size + 1;
	if (!*buf || *cap < need) {
		char *n = realloc(*buf, need);

		if (!n) {
			rc = rt_error_set(err, ENOMEM, "profile '%s': out of memory", path);
			goto out;
		}
		*buf = n;
		*cap = need;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)sb.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = rt_error_set(err, errno, "cannot read profile '%s': %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	(*buf)[got] = '\0';
	*len_out = got;
out:
	close(fd);
	return rc;
}

int rt_profile_read_file(const char *path, char **buf_out, size_t *len_out, struct rt_error *err)
{
	size_t cap = 0;
	int rc;

	*buf_out = NULL;
	if ((rc = rt_profile_read_file_into(path, buf_out, &cap, len_out, err))) {
		free(*buf_out);
		*buf_out = NULL;
	}
	return rc;
}

int rt_profile_load(const char *path, struct rt_profile **out, struct rt_error *err)
{
	char *buf;
	size_t len;
	int rc;

	if (!out)
		return rt_error_set(err, EINVAL, "profile: no output pointer");
	*out = NULL;
	if (!path || !*path)
		return rt_error_set(err, EINVAL, "profile: no path");
	if ((rc = rt_profile_read_file(path, &buf, &len, err)))
		return rc;
	rc = rt_profile_parse_named(buf, len, path, out, err);
	free(buf);
	return rc;
}

int rt_profile_load_env(struct rt_profile **out, struct rt_error *err)
{
	/* secure_getenv: a set-user-ID program must not open whatever file its caller names */
	const char *path = secure_getenv("RTUNE_PROFILE");

	if (!out)
		return rt_error_set(err, EINVAL, "profile: no output pointer");
	*out = NULL;
	if (!path || !*path) {
		/* the well-known path `rtune agent` publishes to: fixed, so no caller can steer it */
		if (access(RT_PROFILE_DEFAULT_PATH, F_OK) != 0)
			return rt_error_set(err, ENOENT, "RTUNE_PROFILE is not set and there is no profile at '%s'",
					    RT_PROFILE_DEFAULT_PATH);
		path = RT_PROFILE_DEFAULT_PATH;
	}
	return rt_profile_load(path, out, err);
}

void rt_profile_free(struct rt_profile *p)
{
	if (!p)
		return;
	free(p->entries);
	free(p->bands);
	free(p->band_first);
	free(p->band_n);
	free(p->skips);
	free(p);
}

size_t rt_profile_entry_count(const struct rt_profile *p)
{
	return p ? p->n_entries : 0;
}

const struct rt_profile_entry *rt_profile_entry_at(const struct rt_profile *p, size_t i)
{
	return p && i < p->n_entries ? &p->entries[i] : NULL;
}

const struct rt_profile_entry *rt_profile_select(const struct rt_profile *p, const char *device_or_guid, int port,
						 enum rt_profile_opcode op, enum rt_profile_qp_type qpt)
{
	const struct rt_profile_entry *best = NULL;

	for (size_t i = 0; p && device_or_guid && i < p->n_entries; i++) {
		const struct rt_profile_entry *e = &p->entries[i];

		if (e->port != port || e->opcode != op || e->qp_type != qpt)
			continue;
		if (strcmp(e->device, device_or_guid) != 0 && (!e->guid[0] || strcasecmp(e->guid, device_or_guid) != 0))
			continue;
		if (!best || e->measured_at > best->measured_at)
			best = e;
	}
	if (!best)
		errno = ENOENT;
	return best;
}

const char *rt_profile_hostname(const struct rt_profile *p)
{
	return p->hostname;
}
const char *rt_profile_hw_signature(const struct rt_profile *p)
{
	return p->hw_signature;
}
const char *rt_profile_rtune_version(const struct rt_profile *p)
{
	return p->rtune_version;
}
int rt_profile_schema_minor(const struct rt_profile *p)
{
	return p->schema_minor;
}

unsigned rt_profile_group_nodes(const struct rt_profile *p)
{
	return p->group_nodes;
}

uint32_t rt_profile_inline_threshold(const struct rt_profile_entry *e)
{
	return e->inline_threshold;
}
uint32_t rt_profile_max_inline_data(const struct rt_profile_entry *e)
{
	return e->max_inline_data;
}
uint32_t rt_profile_signal_interval(const struct rt_profile_entry *e)
{
	return e->signal_interval;
}
uint32_t rt_profile_sq_depth(const struct rt_profile_entry *e)
{
	return e->sq_depth;
}
uint32_t rt_profile_cq_depth(const struct rt_profile_entry *e)
{
	return e->cq_depth;
}
enum rt_profile_confidence rt_profile_confidence(const struct rt_profile_entry *e)
{
	return e->confidence;
}
enum rt_profile_confidence rt_profile_inline_confidence(const struct rt_profile_entry *e)
{
	return e->inline_confidence;
}
enum rt_profile_confidence rt_profile_signal_confidence(const struct rt_profile_entry *e)
{
	return e->signal_confidence;
}

/* Index of e in p's entries, or -1 when e is not one of them. */
static ptrdiff_t entry_index(const struct rt_profile *p, const struct rt_profile_entry *e)
{
	if (!p || !e || !p->n_entries || e < p->entries || e >= p->entries + p->n_entries)
		return -1;
	return e - p->entries;
}

size_t rt_profile_band_count(const struct rt_profile *p, const struct rt_profile_entry *e)
{
	ptrdiff_t i = entry_index(p, e);

	return i < 0 ? 0 : p->band_n[i];
}

const struct rt_profile_band *rt_profile_band_at(const struct rt_profile *p, const struct rt_profile_entry *e, size_t k)
{
	ptrdiff_t i = entry_index(p, e);

	return i < 0 || k >= p->band_n[i] ? NULL : &p->bands[p->band_first[i] + k];
}

uint32_t rt_profile_signal_interval_for(const struct rt_profile *p, const struct rt_profile_entry *e,
					uint32_t msg_bytes, uint32_t post_list)
{
	return rt_profile_signal_interval_for_load(p, e, msg_bytes, post_list, 1, 1);
}

/* True when concurrency band b fits an application of qps QPs and threads threads better than best (NULL: none). */
static bool conc_better(const struct rt_profile_band *b, const struct rt_profile_band *best, uint32_t qps,
			uint32_t threads)
{
	bool fits = b->threads <= threads, best_fits;

	if (b->qps > qps)
		return false;
	if (!best || b->qps != best->qps)
		return !best || b->qps > best->qps;
	best_fits = best->threads <= threads;
	if (fits != best_fits)
		return fits;
	return fits ? b->threads > best->threads : b->threads < best->threads;
}

uint32_t rt_profile_signal_interval_for_load(const struct rt_profile *p, const struct rt_profile_entry *e,
					     uint32_t msg_bytes, uint32_t post_list, uint32_t qps, uint32_t threads)
{
	const struct rt_profile_band *list = NULL, *large = NULL, *conc = NULL;
	size_t n = rt_profile_band_count(p, e);

	if (!e)
		return 1;
	for (size_t k = 0; k < n; k++) {
		const struct rt_profile_band *b = rt_profile_band_at(p, e, k);

		if (b->kind == RT_PROFILE_BAND_POST_LIST && post_list >= b->post_list &&
		    (!list || b->post_list > list->post_list))
			list = b;
		else if (b->kind == RT_PROFILE_BAND_LARGE && msg_bytes >= b->msg_bytes_lo &&
			 (!large || b->msg_bytes_lo > large->msg_bytes_lo))
			large = b;
		else if (b->kind == RT_PROFILE_BAND_CONCURRENCY && qps >= 2 &&
			 conc_better(b, conc, qps, threads ? threads : 1))
			conc = b;
	}
	/* a large message is the large band's, one at a time or in a list (the list band measured small messages); a
	 * list is the list band's (it measured the batching, on one QP); one WR at a time on several QPs the
	 * concurrency band's */
	if (large)
		return large->signal_interval;
	if (list)
		return list->signal_interval;
	if (conc)
		return conc->signal_interval;
	return e->signal_interval ? e->signal_interval : 1;
}

size_t rt_profile_skip_count(const struct rt_profile *p)
{
	return p ? p->n_skips : 0;
}

const struct rt_profile_skip *rt_profile_skip_at(const struct rt_profile *p, size_t i)
{
	return p && i < p->n_skips ? &p->skips[i] : NULL;
}

const struct rt_profile_skip *rt_profile_entry_skip(const struct rt_profile *p, const struct rt_profile_entry *e,
						    size_t i)
{
	for (size_t k = 0; p && e && k < p->n_skips; k++) {
		const struct rt_profile_skip *s = &p->skips[k];

		if (strcmp(s->device, e->device) || s->port != e->port ||
		    (s->opcode >= 0 && s->opcode != (int)e->opcode) ||
		    (s->qp_type >= 0 && s->qp_type != (int)e->qp_type))
			continue;
		if (i-- == 0)
			return s;
	}
	return NULL;
}
