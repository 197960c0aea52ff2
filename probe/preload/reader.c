// SPDX-License-Identifier: MIT
/*
 * Reader of the probe's JSON (see rt_probe_reader.h and docs/probe.md), with jansson.
 */
#include "rt_probe_reader.h"
#include "rt_json_arena.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const op_names[RT_PROBE_OP__COUNT] = {
	"send", "send_imm", "rdma_write", "rdma_write_imm", "rdma_read", "atomic", "send_inv", "other",
};

const char *rt_probe_op_name(enum rt_probe_op op)
{
	return (unsigned)op < RT_PROBE_OP__COUNT ? op_names[op] : "?";
}

static uint64_t u64_of(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void str_of(json_t *obj, const char *key, char *buf, size_t len)
{
	json_t *v = json_object_get(obj, key);

	snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/*
 * Reads [[lo, hi, count], ...] into hist by lo's bucket, and hi, the largest size the probe saw in the bucket, into
 * hist_max (kept when it lies in the bucket, else the bucket's top: an older probe wrote the top). EINVAL on a
 * malformed triple.
 */
static int read_hist(json_t *arr, uint64_t *hist, uint32_t *hist_max, struct rt_error *err, const char *what)
{
	size_t i;
	json_t *t;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return rt_error_set(err, EINVAL, "probe file: '%s' histogram is not an array", what);
	json_array_foreach(arr, i, t)
	{
		json_t *lo = json_array_get(t, 0), *hi = json_array_get(t, 1), *n = json_array_get(t, 2);
		unsigned b;
		json_int_t h;

		if (!json_is_array(t) || !json_is_integer(lo) || !json_is_integer(n) || json_integer_value(lo) < 0 ||
		    json_integer_value(lo) > UINT32_MAX || json_integer_value(n) < 0)
			return rt_error_set(err, EINVAL, "probe file: bad entry %zu in the '%s' histogram", i, what);
		b = rt_hist_bucket((uint32_t)json_integer_value(lo));
		hist[b] += (uint64_t)json_integer_value(n);
		h = json_is_integer(hi) ? json_integer_value(hi) : -1;
		if (h < (json_int_t)rt_hist_bucket_lo(b) || h > (json_int_t)rt_hist_bucket_hi(b))
			h = rt_hist_bucket_hi(b);
		if (json_integer_value(n) > 0 && (uint32_t)h > hist_max[b])
			hist_max[b] = (uint32_t)h;
	}
	return 0;
}

/* Reads the QP's "wrs_per_post" [[min, max seen, post calls], ...] into batch/batch_max (same rules as read_hist). */
static int read_batch(json_t *arr, struct rt_probe_qp_summary *q, struct rt_error *err)
{
	size_t i;
	json_t *t;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return rt_error_set(err, EINVAL, "probe file: 'wrs_per_post' is not an array");
	json_array_foreach(arr, i, t)
	{
		json_t *lo = json_array_get(t, 0), *hi = json_array_get(t, 1), *n = json_array_get(t, 2);
		unsigned b;
		json_int_t h;

		if (!json_is_array(t) || !json_is_integer(lo) || !json_is_integer(n) || json_integer_value(lo) < 0 ||
		    json_integer_value(lo) > UINT32_MAX || json_integer_value(n) < 0)
			return rt_error_set(err, EINVAL, "probe file: bad entry %zu in 'wrs_per_post'", i);
		b = rt_batch_bucket((uint32_t)json_integer_value(lo));
		q->batch[b] += (uint64_t)json_integer_value(n);
		h = json_is_integer(hi) ? json_integer_value(hi) : -1;
		if (h < (json_int_t)rt_batch_bucket_lo(b) || h > (json_int_t)rt_batch_bucket_hi(b))
			h = rt_batch_bucket_hi(b);
		if (json_integer_value(n) > 0 && (uint32_t)h > q->batch_max[b])
			q->batch_max[b] = (uint32_t)h;
	}
	return 0;
}

static int read_ops(json_t *ops, struct rt_probe_op_summary *out, struct rt_error *err)
{
	if (!ops)
		return 0;
	if (!json_is_object(ops))
		return rt_error_set(err, EINVAL, "probe file: 'ops' is not an object");
	for (unsigned o = 0; o < RT_PROBE_OP__COUNT; o++) {
		json_t *v = json_object_get(ops, op_names[o]);
		int ret;

		if (!v)
			continue;
		if (!json_is_object(v))
			return rt_error_set(err, EINVAL, "probe file: op '%s' is not an object", op_names[o]);
		out[o].wrs = u64_of(v, "wrs");
		out[o].bytes = u64_of(v, "bytes");
		out[o].inline_wrs = u64_of(v, "inline_wrs");
		out[o].inline_bytes = u64_of(v, "inline_bytes");
		out[o].signaled_wrs = u64_of(v, "signaled_wrs");
		out[o].signaled_bytes = u64_of(v, "signaled_bytes");
		ret = read_hist(json_object_get(v, "hist"), out[o].hist, out[o].hist_max, err, op_names[o]);
		if (ret)
			return ret;
	}
	return 0;
}

static uint64_t sum_values(json_t *obj)
{
	const char *k;
	json_t *v;
	uint64_t s = 0;

	json_object_foreach(obj, k, v) if (json_is_integer(v) && json_integer_value(v) > 0) s +=
		(uint64_t)json_integer_value(v);
	return s;
}

/*
 * Reads a QP's "inline_ctl" into c (absent: c->present false, an older probe or no controller). {"busy": true} is a
 * controller the probe could not read. Of more than RT_INLINE_CTL_MOVES moves the last ones are kept. EINVAL when it
 * or its moves are not objects, or a move lacks its sizes.
 */
static int read_ctl(json_t *j, struct rt_probe_ctl_summary *c, struct rt_error *err)
{
	json_t *moves, *m;
	size_t i, n, skip;

	if (!j)
		return 0;
	if (!json_is_object(j))
		return rt_error_set(err, EINVAL, "probe file: 'inline_ctl' is not an object");
	c->present = true;
	if (json_is_true(json_object_get(j, "busy"))) {
		c->busy = true;
		return 0;
	}
	c->start_bytes = (uint32_t)u64_of(j, "start");
	c->threshold_bytes = (uint32_t)u64_of(j, "threshold");
	c->min_bytes = (uint32_t)u64_of(j, "min");
	c->max_bytes = (uint32_t)u64_of(j, "max");
	c->parked = json_is_true(json_object_get(j, "parked"));
	c->samples = u64_of(j, "samples");
	c->explored = u64_of(j, "explored");
	c->dropped = u64_of(j, "dropped");
	c->rounds = u64_of(j, "rounds");
	c->moves_up = u64_of(j, "moves_up");
	c->moves_down = u64_of(j, "moves_down");
	c->reverts = u64_of(j, "reverts");
	moves = json_object_get(j, "moves");
	if (moves && !json_is_array(moves))
		return rt_error_set(err, EINVAL, "probe file: 'inline_ctl.moves' is not an array");
	n = json_array_size(moves);
	skip = n > RT_INLINE_CTL_MOVES ? n - RT_INLINE_CTL_MOVES : 0;
	json_array_foreach(moves, i, m)
	{
		struct rt_inline_ctl_move *mv;

		if (!json_is_object(m) || !json_is_integer(json_object_get(m, "from")) ||
		    !json_is_integer(json_object_get(m, "to")))
			return rt_error_set(err, EINVAL, "probe file: bad entry %zu in 'inline_ctl.moves'", i);
		if (i < skip)
			continue;
		mv = &c->moves[c->n_moves++];
		mv->at_sample = u64_of(m, "at_sample");
		mv->from_bytes = (uint32_t)u64_of(m, "from");
		mv->to_bytes = (uint32_t)u64_of(m, "to");
		mv->inline_ns = u64_of(m, "inline_ns");
		mv->noinline_ns = u64_of(m, "noinline_ns");
		mv->revert = json_is_true(json_object_get(m, "revert"));
	}
	return 0;
}

static int read_qp(json_t *j, struct rt_probe_qp_summary *q, struct rt_error *err)
{
	json_t *e = json_object_get(j, "errors"), *a = json_object_get(j, "apply"), *l = json_object_get(j, "latency");
	int ret;

	if (!json_is_object(j))
		return rt_error_set(err, EINVAL, "probe file: a 'qps' entry is not an object");
	str_of(j, "device", q->device, sizeof(q->device));
	str_of(j, "qp_type", q->qp_type, sizeof(q->qp_type));
	q->qp_num = (uint32_t)u64_of(j, "qp_num");
	q->max_inline_data = (uint32_t)u64_of(j, "max_inline_data");
	q->requested_max_inline_data = (uint32_t)u64_of(j, "requested_max_inline_data");
	q->max_send_wr = (uint32_t)u64_of(j, "max_send_wr");
	q->sq_sig_all = json_is_true(json_object_get(j, "sq_sig_all"));
	q->inline_raised = json_is_true(json_object_get(j, "inline_raised"));
	q->ex_api = json_is_true(json_object_get(j, "ex_api"));
	q->post_calls = u64_of(j, "post_calls");
	q->posting_threads = (uint32_t)u64_of(j, "posting_threads");
	{
		json_t *ps = json_object_get(j, "posters");

		for (size_t k = 0; k < json_array_size(ps); k++) {
			json_int_t v = json_integer_value(json_array_get(ps, k));

			if (json_is_integer(json_array_get(ps, k)) && v >= 0 && v < 64)
				q->posters |= 1ull << v;
		}
	}
	if (json_is_object(e)) {
		q->sq_full = u64_of(e, "sq_full");
		q->enomem_other = u64_of(e, "enomem_inline_too_big") + u64_of(e, "enomem_too_many_sge") +
				  u64_of(e, "enomem_other");
		q->einval = u64_of(e, "einval");
		q->other_errors = u64_of(e, "other");
		q->wrs_not_posted = u64_of(e, "wrs_not_posted");
	}
	if (json_is_object(a)) {
		q->apply_inline_set = u64_of(a, "inline_set");
		q->apply_chain_too_long = u64_of(a, "chain_too_long");
	}
	if (json_is_object(l)) {
		q->lat_samples = u64_of(l, "samples");
		q->lat_sum_ns = u64_of(l, "sum_ns");
		q->lat_min_ns = u64_of(l, "min_ns");
		q->lat_max_ns = u64_of(l, "max_ns");
	}
	if (json_is_object(json_object_get(j, "wc_errors")))
		q->wc_errors = sum_values(json_object_get(j, "wc_errors"));
	if ((ret = read_batch(json_object_get(j, "wrs_per_post"), q, err)))
		return ret;
	if ((ret = read_ctl(json_object_get(j, "inline_ctl"), &q->ctl, err)))
		return ret;
	return read_ops(json_object_get(j, "ops"), q->op, err);
}

int rt_probe_parse(const char *text, size_t len, struct rt_probe_summary **out, struct rt_error *err)
{
	json_error_t je;
	json_t *root = rt_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *qps, *fmt, *ver, *ap, *v;
	struct rt_probe_summary *s = NULL;
	long long major;
	int ret = 0;
	size_t i;

	*out = NULL;
	if (!root)
		return rt_error_set(err, EINVAL, "probe file: %s at line %d column %d", je.text, je.line, je.column);
	/* {"schema": {"name": "rtune-probe", "version": "MAJOR.MINOR"}} (docs/json-formats.md); files of rtune before
	 * that convention carry {"format": "rtune-probe", "version": MAJOR} and are read alike */
	fmt = json_object_get(json_object_get(root, "schema"), "name");
	ver = json_object_get(json_object_get(root, "schema"), "version");
	if (!fmt) {
		fmt = json_object_get(root, "format");
		ver = json_object_get(root, "version");
	}
	if (!json_is_object(root) || !json_is_string(fmt) || strcmp(json_string_value(fmt), RT_PROBE_FORMAT) ||
	    !(json_is_integer(ver) || (json_is_string(ver) && isdigit((unsigned char)json_string_value(ver)[0])))) {
		ret = rt_error_set(err, EINVAL, "probe file: not an rtune-probe document");
		goto out;
	}
	major = json_is_integer(ver) ? json_integer_value(ver) : strtoll(json_string_value(ver), NULL, 10);
	if (major > RT_PROBE_FORMAT_VERSION || major < 1) {
		ret = rt_error_set(err, ENOTSUP,
				   "probe file: format version %lld is not supported (this rtune reads %d.x)",
				   (long long)major, RT_PROBE_FORMAT_VERSION);
		goto out;
	}
	qps = json_object_get(root, "qps");
	if (qps && !json_is_array(qps)) {
		ret = rt_error_set(err, EINVAL, "probe file: 'qps' is not an array");
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s || (json_array_size(qps) && !(s->qps = calloc(json_array_size(qps), sizeof(*s->qps))))) {
		ret = rt_error_set(err, ENOMEM, "probe file: out of memory");
		goto out;
	}
	s->version = (int)major;
	s->pid = (long)u64_of(root, "pid");
	s->n_files = 1;
	s->sample_every = (uint32_t)u64_of(root, "sample_every");
	str_of(root, "exe", s->exe, sizeof(s->exe));
	ap = json_object_get(root, "apply");
	if (json_is_object(ap)) {
		s->apply_enabled = json_is_true(json_object_get(ap, "enabled"));
		s->apply_threshold = (uint32_t)u64_of(ap, "inline_threshold");
	}
	if (json_is_object((v = json_object_get(root, "drops"))))
		s->drops = sum_values(v);
	json_array_foreach(qps, i, v)
	{
		ret = read_qp(v, &s->qps[i], err);
		if (ret)
			goto out;
		s->qps[i].pid = s->pid;
		s->n_qps++;
	}
out:
	json_decref(root);
	if (ret)
		rt_probe_summary_free(s);
	else
		*out = s;
	return ret;
}

int rt_probe_read_file(const char *path, struct rt_probe_summary **out, struct rt_error *err)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret;

	*out = NULL;
	if (!f)
		return rt_error_set(err, errno, "cannot open probe file '%s': %s", path, strerror(errno));
	for (;;) {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 1 << 17);

			if (!nb) {
				free(buf);
				fclose(f);
				return rt_error_set(err, ENOMEM, "cannot read probe file '%s': out of memory", path);
			}
			buf = nb;
			cap = cap ? cap * 2 : 1 << 17;
		}
		size_t n = fread(buf + len, 1, cap - len, f);

		len += n;
		if (n == 0)
			break;
	}
	ret = ferror(f) ? EIO : 0;
	fclose(f);
	if (ret) {
		free(buf);
		return rt_error_set(err, EIO, "cannot read probe file '%s'", path);
	}
	ret = rt_probe_parse(buf, len, out, err);
	free(buf);
	if (ret && err) {
		char text[RT_ERROR_TEXT_LEN];

		snprintf(text, sizeof(text), "%s", err->text);
		rt_error_set(err, ret, "'%s': %s", path, text);
	}
	return ret;
}

void rt_probe_summary_free(struct rt_probe_summary *s)
{
	if (!s)
		return;
	free(s->qps);
	free(s);
}

int rt_probe_summary_merge(struct rt_probe_summary *dst, const struct rt_probe_summary *src)
{
	struct rt_probe_qp_summary *q;

	if (src->n_qps) {
		q = realloc(dst->qps, (dst->n_qps + src->n_qps) * sizeof(*q));
		if (!q)
			return ENOMEM;
		memcpy(q + dst->n_qps, src->qps, src->n_qps * sizeof(*q));
		dst->qps = q;
		dst->n_qps += src->n_qps;
	}
	dst->n_files += src->n_files;
	dst->drops += src->drops;
	dst->apply_enabled |= src->apply_enabled;
	return 0;
}

static void op_add(struct rt_probe_op_summary *d, const struct rt_probe_op_summary *s)
{
	d->wrs += s->wrs;
	d->bytes += s->bytes;
	d->inline_wrs += s->inline_wrs;
	d->inline_bytes += s->inline_bytes;
	d->signaled_wrs += s->signaled_wrs;
	d->signaled_bytes += s->signaled_bytes;
	for (unsigned b = 0; b < RT_HIST_BUCKETS; b++) {
		d->hist[b] += s->hist[b];
		d->hist_max[b] = s->hist_max[b] > d->hist_max[b] ? s->hist_max[b] : d->hist_max[b];
	}
}

/* True when q (of type want) sent WRs of the class op. */
static bool in_class(const struct rt_probe_qp_summary *q, enum rt_opcode op, const char *want)
{
	if (strcmp(q->qp_type, want))
		return false;
	if (op == RT_OP_SEND)
		return q->op[RT_PROBE_OP_SEND].wrs || q->op[RT_PROBE_OP_SEND_IMM].wrs ||
		       q->op[RT_PROBE_OP_SEND_INV].wrs;
	return q->op[RT_PROBE_OP_WRITE].wrs || q->op[RT_PROBE_OP_WRITE_IMM].wrs;
}

/*
 * The distinct threads that posted on the class's QPs: per process, the union of the QPs' poster slabs, plus the most
 * posters a QP of it had beyond those told apart (slab ids of 64 and more); 0 when no QP recorded its posters.
 */
static uint32_t class_threads(const struct rt_probe_summary *s, enum rt_opcode op, const char *want)
{
	uint32_t n = 0;

	for (size_t i = 0; i < s->n_qps; i++) {
		uint64_t mask = 0;
		uint32_t over = 0;
		bool first = true;

		if (!in_class(&s->qps[i], op, want) || !s->qps[i].posting_threads)
			continue;
		/* the first class QP of its process sums the process */
		for (size_t j = 0; j < i && first; j++)
			first = !(in_class(&s->qps[j], op, want) && s->qps[j].posting_threads &&
				  s->qps[j].pid == s->qps[i].pid);
		if (!first)
			continue;
		for (size_t j = i; j < s->n_qps; j++) {
			const struct rt_probe_qp_summary *q = &s->qps[j];
			uint32_t told = (uint32_t)__builtin_popcountll(q->posters);

			if (!in_class(q, op, want) || !q->posting_threads || q->pid != s->qps[i].pid)
				continue;
			mask |= q->posters;
			if (q->posting_threads > told && q->posting_threads - told > over)
				over = q->posting_threads - told;
		}
		n += (uint32_t)__builtin_popcountll(mask) + over;
	}
	return n;
}

uint64_t rt_probe_summary_class_queue(const struct rt_probe_summary *s, enum rt_opcode op, enum rt_qp_type qpt,
				      struct rt_probe_op_summary *out, struct rt_probe_class_queue *qq)
{
	/* the probe names QP types as verbs does; EFA's SRD QPs are verbs' DRIVER type */
	const char *want = qpt == RT_QPT_UD ? "UD" : qpt == RT_QPT_SRD ? "DRIVER" : "RC";

	memset(out, 0, sizeof(*out));
	if (qq)
		memset(qq, 0, sizeof(*qq));
	for (size_t i = 0; i < s->n_qps; i++) {
		const struct rt_probe_qp_summary *q = &s->qps[i];
		uint64_t before = out->wrs;

		if (strcmp(q->qp_type, want))
			continue;
		if (op == RT_OP_SEND) {
			op_add(out, &q->op[RT_PROBE_OP_SEND]);
			op_add(out, &q->op[RT_PROBE_OP_SEND_IMM]);
			op_add(out, &q->op[RT_PROBE_OP_SEND_INV]);
		} else {
			op_add(out, &q->op[RT_PROBE_OP_WRITE]);
			op_add(out, &q->op[RT_PROBE_OP_WRITE_IMM]);
		}
		if (!qq || out->wrs == before)
			continue;
		qq->qps++;
		qq->post_calls += q->post_calls;
		qq->sq_full += q->sq_full;
		for (unsigned b = 0; b < RT_BATCH_BUCKETS; b++) {
			qq->batch[b] += q->batch[b];
			qq->batch_max[b] = q->batch_max[b] > qq->batch_max[b] ? q->batch_max[b] : qq->batch_max[b];
		}
		if (q->max_send_wr && (!qq->max_send_wr || q->max_send_wr < qq->max_send_wr))
			qq->max_send_wr = q->max_send_wr;
	}
	if (qq)
		qq->threads = class_threads(s, op, want);
	return out->wrs;
}

uint64_t rt_probe_summary_class(const struct rt_probe_summary *s, enum rt_opcode op, enum rt_qp_type qpt,
				struct rt_probe_op_summary *out, uint64_t *sq_full)
{
	struct rt_probe_class_queue q;
	uint64_t n = rt_probe_summary_class_queue(s, op, qpt, out, &q);

	if (sq_full)
		*sq_full = q.sq_full;
	return n;
}
