// SPDX-License-Identifier: MIT
/*
 * Host tests of the probe's wrapping logic against a hand-built verbs context (fake_verbs.h): exact counts and
 * histogram buckets, bad_wr handling (only WRs before bad_wr count), ENOMEM classification, errno and return values
 * passed through, apply mode inlining without the application seeing its WRs change, the extended QP API (including a
 * provider that swaps wr_complete at RTS), latency sampling and error completions, 8 threads x 4 QPs, fork, and the
 * output file (0600, O_EXCL, unwritable path). Results are read back through the JSON reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "fake_verbs.h"
#include "probe_int.h" /* the slots of this thread's entry (test_slots_hold_a_size_mix) */
#include "rt_probe_reader.h"

static struct ibv_context *ctx;
static struct rt_probe_summary *snap;
static char buf[1 << 16];

static void configure(uint32_t sample, uint32_t thr, uint32_t max_inline, const char *out)
{
	struct rt_probe_config c = { .sample_every = sample, .apply_threshold = thr, .apply_max_inline = max_inline };

	if (thr)
		snprintf(c.apply_source, sizeof(c.apply_source), "test");
	if (out)
		snprintf(c.out_pattern, sizeof(c.out_pattern), "%s", out);
	rt_probe_configure(&c);
}

/* The probe's current record of the QP with qp_num, through render + reader. */
static const struct rt_probe_qp_summary *qp_rec(uint32_t qpn)
{
	char *doc;
	size_t len;
	struct rt_error err;

	rt_probe_summary_free(snap);
	snap = NULL;
	assert_int_equal(rt_probe_render_json(false, &doc, &len), 0);
	if (rt_probe_parse(doc, len, &snap, &err))
		fail_msg("reader: %s", err.text);
	free(doc);
	for (size_t i = 0; i < snap->n_qps; i++)
		if (snap->qps[i].qp_num == qpn)
			return &snap->qps[i];
	fail_msg("qp %u not in the probe's output", qpn);
	return NULL;
}

static struct ibv_send_wr mkwr(struct ibv_sge *sge, int nsge, enum ibv_wr_opcode op, unsigned flags)
{
	return (struct ibv_send_wr){ .wr_id = 7, .sg_list = sge, .num_sge = nsge, .opcode = op, .send_flags = flags };
}

static void chain(struct ibv_send_wr *w, int n)
{
	for (int i = 0; i < n; i++)
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
}

static void test_counts_and_buckets(void **state)
{
	struct ibv_qp *qp = fake_rc_qp(64, 0);
	struct ibv_sge sge[2] = { { .addr = (uintptr_t)buf, .length = 60 }, { .addr = (uintptr_t)buf, .length = 40 } };
	struct ibv_sge big = { .addr = (uintptr_t)buf, .length = 4096 };
	struct ibv_send_wr w[5], *bad = (struct ibv_send_wr *)0x1234;
	const struct rt_probe_qp_summary *r;
	uint32_t qpn;

	(void)state;
	assert_non_null(qp);
	qpn = qp->qp_num;
	for (int i = 0; i < 10; i++) {
		struct ibv_send_wr one = mkwr(sge, 2, IBV_WR_SEND, i % 2 ? IBV_SEND_SIGNALED : 0);

		errno = 0;
		assert_int_equal(ibv_post_send(qp, &one, &bad), 0);
		assert_int_equal(errno, FAKE_ERRNO_MARK);
		assert_ptr_equal(bad, (void *)0x1234); /* untouched on success */
	}
	for (int i = 0; i < 5; i++)
		w[i] = mkwr(&big, 1, IBV_WR_RDMA_WRITE, 0);
	chain(w, 5);
	assert_int_equal(ibv_post_send(qp, w, &bad), 0);
	struct ibv_send_wr tiny = mkwr(sge, 1, IBV_WR_SEND_WITH_IMM, IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	assert_int_equal(ibv_post_send(qp, &tiny, &bad), 0);

	r = qp_rec(qp->qp_num);
	assert_string_equal(r->qp_type, "RC");
	assert_int_equal(r->max_inline_data, 64);
	assert_int_equal(r->max_send_wr, 128);
	assert_int_equal(r->post_calls, 12);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 10);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].bytes, 1000);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_wrs, 5);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_bytes, 500);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].inline_wrs, 0);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist[rt_hist_bucket(100)], 10);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist[rt_hist_bucket(100) + 1], 0);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].wrs, 5);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].bytes, 5 * 4096);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].hist[rt_hist_bucket(4096)], 5);
	assert_int_equal(r->op[RT_PROBE_OP_SEND_IMM].wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND_IMM].inline_wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND_IMM].inline_bytes, 60);
	assert_int_equal(r->op[RT_PROBE_OP_SEND_IMM].hist[rt_hist_bucket(60)], 1);
	assert_int_equal(r->sq_full + r->einval + r->enomem_other + r->other_errors, 0);

	/* sq_sig_all QPs count every WR as signaled */
	struct ibv_qp *qa = fake_rc_qp(0, 1);
	struct ibv_send_wr u = mkwr(sge, 1, IBV_WR_SEND, 0);
	assert_int_equal(ibv_post_send(qa, &u, &bad), 0);
	r = qp_rec(qa->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_wrs, 1);
	assert_true(r->sq_sig_all);
	assert_int_equal(rt_probe_destroy_qp(qa), 0);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	/* destroyed QPs keep their record */
	r = qp_rec(qpn);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 10);
}

/* Post one WR of bytes bytes (opcode SEND) on qp. */
static void post_size(struct ibv_qp *qp, uint32_t bytes)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = bytes };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;

	assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
}

/*
 * Each bucket keeps the largest size really sent, and each post-list bucket the largest batch: through the file
 * ([lo, hi, count] with hi = that size), the reader and the (opcode, QP type) class with its queue behaviour.
 */
static void test_size_and_batch_max(void **state)
{
	struct ibv_qp_init_attr ua = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1 } };
	struct ibv_qp *qp = fake_rc_qp(0, 0), *ud = rt_probe_create_qp(&fk.pd, &ua);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_send_wr w[6], *bad;
	const struct rt_probe_qp_summary *r;
	struct rt_probe_op_summary o;
	struct rt_probe_class_queue q;
	char *doc;
	size_t len;
	uint32_t qpn;
	static struct rt_probe_qp_summary mine[2];
	struct rt_probe_summary sub = { 0 };

	(void)state;
	assert_non_null(qp);
	assert_non_null(ud);
	for (int i = 0; i < 5; i++)
		post_size(qp, 64);
	post_size(qp, 97);
	post_size(qp, 100);
	post_size(qp, 98);
	for (int i = 0; i < 6; i++)
		w[i] = mkwr(&sge, 1, IBV_WR_SEND, 0);
	chain(w, 6);
	assert_int_equal(ibv_post_send(qp, w, &bad), 0);
	for (int i = 0; i < 3; i++)
		post_size(ud, 64);

	assert_int_equal(rt_probe_render_json(false, &doc, &len), 0);
	assert_non_null(strstr(doc, "[64,64,5]")); /* not the bucket's top, 71 */
	assert_non_null(strstr(doc, "[96,100,3]"));
	assert_non_null(strstr(doc, "[8,8,6]"));
	assert_non_null(strstr(doc, "[5,6,1]")); /* one post call of 6 WRs, in the 5..8 batch bucket */
	free(doc);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(64)], 64);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(100)], 100);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(72)], 0); /* empty bucket */
	assert_int_equal(r->batch[rt_batch_bucket(1)], 8);
	assert_int_equal(r->batch[rt_batch_bucket(6)], 1);
	assert_int_equal(r->batch_max[rt_batch_bucket(6)], 6);
	assert_int_equal(r->batch_max[rt_batch_bucket(1)], 1);

	/* the classes keep RC and UD apart, with the queue behaviour of the QPs that sent them (these two QPs only: the
	 * earlier tests' QPs are still in the probe's record) */
	mine[0] = *r;
	mine[1] = *qp_rec(ud->qp_num);
	sub.qps = mine;
	sub.n_qps = 2;
	assert_int_equal(rt_probe_summary_class_queue(&sub, RT_OP_SEND, RT_QPT_UD, &o, &q), 3);
	assert_int_equal(o.hist[rt_hist_bucket(64)], 3);
	assert_int_equal(o.hist_max[rt_hist_bucket(64)], 64);
	assert_int_equal(q.qps, 1);
	assert_int_equal(q.post_calls, 3);
	assert_int_equal(q.max_send_wr, 32);
	assert_int_equal(rt_probe_summary_class_queue(&sub, RT_OP_SEND, RT_QPT_RC, &o, &q), 14);
	assert_int_equal(q.post_calls, 9);
	assert_int_equal(q.batch_max[rt_batch_bucket(6)], 6);
	assert_int_equal(q.max_send_wr, 128);
	assert_int_equal(rt_probe_summary_class_queue(&sub, RT_OP_WRITE, RT_QPT_UD, &o, &q), 0);
	assert_int_equal(q.qps, 0);

	/* destroyed QPs keep their maxima (folded from the thread's entry) */
	qpn = qp->qp_num;
	assert_int_equal(rt_probe_destroy_qp(ud), 0);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	r = qp_rec(qpn);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(100)], 100);
	assert_int_equal(r->batch_max[rt_batch_bucket(6)], 6);
}

/*
 * One-WR posts are counted in a few exact-key slots per thread and QP, the rest directly: with more distinct (opcode,
 * flags, size) keys than slots, interleaved so slots collide, every counter is still exact, before and after the
 * QP is destroyed (its slots folded), and an sq_sig_all QP's slotted posts count as signaled.
 */
static void test_slots_exact(void **state)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_SEND_WITH_IMM };
	static const unsigned flags[] = { 0, IBV_SEND_SIGNALED, IBV_SEND_INLINE, IBV_SEND_INLINE | IBV_SEND_SIGNALED };
	static const int opi[] = { RT_PROBE_OP_SEND, RT_PROBE_OP_WRITE, RT_PROBE_OP_SEND_IMM };
	struct ibv_qp *qp = fake_rc_qp(256, 0), *qa = fake_rc_qp(0, 1);
	uint64_t wrs[3] = { 0 }, bytes[3] = { 0 }, inl[3] = { 0 }, sig[3] = { 0 }, sigb[3] = { 0 }, h64[3] = { 0 };
	const struct rt_probe_qp_summary *r;
	struct ibv_send_wr *bad;
	uint32_t qpn;

	(void)state;
	assert_non_null(qp);
	assert_non_null(qa);
	qpn = qp->qp_num;
	for (int round = 0; round < 50; round++) {
		for (unsigned k = 0; k < 36; k++) { /* 3 opcodes x 4 flag sets x 3 sizes = 36 keys */
			unsigned o = k % 3, f = (k / 3) % 4;
			uint32_t b = 64 + (k / 12) * 3 + (uint32_t)round % 2; /* 64..71: one bucket, 6 sizes */
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = b };
			struct ibv_send_wr w = mkwr(&sge, 1, ops[o], flags[f]);

			assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
			wrs[o]++;
			bytes[o] += b;
			h64[o]++;
			if (flags[f] & IBV_SEND_INLINE)
				inl[o]++;
			if (flags[f] & IBV_SEND_SIGNALED) {
				sig[o]++;
				sigb[o] += b;
			}
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		r = qp_rec(qpn);
		assert_int_equal(r->post_calls, 50 * 36);
		assert_int_equal(r->batch[0], 50 * 36);
		for (unsigned o = 0; o < 3; o++) {
			const struct rt_probe_op_summary *os = &r->op[opi[o]];

			assert_int_equal(os->wrs, wrs[o]);
			assert_int_equal(os->bytes, bytes[o]);
			assert_int_equal(os->inline_wrs, inl[o]);
			assert_int_equal(os->signaled_wrs, sig[o]);
			assert_int_equal(os->signaled_bytes, sigb[o]);
			assert_int_equal(os->hist[rt_hist_bucket(64)], h64[o]);
			assert_int_equal(os->hist_max[rt_hist_bucket(64)], 64 + 2 * 3 + 1);
		}
		if (pass == 0)
			assert_int_equal(rt_probe_destroy_qp(qp), 0);
	}

	for (int i = 0; i < 3; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16 };
		struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0);

		assert_int_equal(ibv_post_send(qa, &w, &bad), 0);
	}
	r = qp_rec(qa->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 3);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_wrs, 3);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_bytes, 48);
	assert_int_equal(rt_probe_destroy_qp(qa), 0);
}

/* A file written before the probe kept the largest size: hi is the bucket's top, out-of-bucket values are ignored. */
static void test_reader_hist_max(void **state)
{
	const char *doc = "{\"format\":\"rtune-probe\",\"version\":1,\"qps\":[{\"qp_type\":\"RC\","
			  "\"wrs_per_post\":[[1,1,4],[3,4,2]],\"ops\":{\"send\":{\"wrs\":8,"
			  "\"hist\":[[64,71,5],[96,9999,2],[128,130,1]]}}}]}";
	struct rt_probe_summary *s = NULL;
	struct rt_error err;

	(void)state;
	assert_int_equal(rt_probe_parse(doc, strlen(doc), &s, &err), 0);
	assert_int_equal(s->qps[0].op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(64)], 71);
	assert_int_equal(s->qps[0].op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(96)], 103);
	assert_int_equal(s->qps[0].op[RT_PROBE_OP_SEND].hist_max[rt_hist_bucket(128)], 130);
	assert_int_equal(s->qps[0].batch[0], 4);
	assert_int_equal(s->qps[0].batch[rt_batch_bucket(4)], 2);
	assert_int_equal(s->qps[0].batch_max[rt_batch_bucket(4)], 4);
	rt_probe_summary_free(s);
}

static void test_bad_wr_and_enomem(void **state)
{
	struct ibv_qp *qp = fake_rc_qp(64, 0);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 32 },
		       huge = { .addr = (uintptr_t)buf, .length = 1000 };
	struct ibv_send_wr w[5], *bad = NULL, *app_bad = (struct ibv_send_wr *)0x77;
	const struct rt_probe_qp_summary *r;

	(void)state;
	for (int i = 0; i < 5; i++)
		w[i] = mkwr(&sge, 1, IBV_WR_SEND, 0);
	chain(w, 5);
	/* SQ full at the third WR: exactly ENOMEM back, bad_wr the third, two WRs counted */
	fk.fail_at = 2;
	fk.fail_ret = ENOMEM;
	errno = 0;
	assert_int_equal(ibv_post_send(qp, w, &bad), ENOMEM);
	assert_int_equal(errno, FAKE_ERRNO_MARK);
	assert_ptr_equal(bad, &w[2]);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2);
	assert_int_equal(r->sq_full, 1);
	assert_int_equal(r->wrs_not_posted, 3);

	/* a provider returning -ENOMEM: passed through as is, still SQ full */
	fk.fail_at = 0;
	fk.fail_ret = -ENOMEM;
	assert_int_equal(ibv_post_send(qp, w, &bad), -ENOMEM);
	assert_ptr_equal(bad, &w[0]);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->sq_full, 2);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2);

	/* ENOMEM for an inline WR larger than the QP's max_inline_data is not an SQ-full event */
	struct ibv_send_wr inl = mkwr(&huge, 1, IBV_WR_SEND, IBV_SEND_INLINE);
	fk.fail_ret = ENOMEM;
	assert_int_equal(ibv_post_send(qp, &inl, &bad), ENOMEM);
	/* nor is one for too many SGEs */
	struct ibv_sge three[3] = { sge, sge, sge };
	struct ibv_send_wr many = mkwr(three, 3, IBV_WR_SEND, 0);
	assert_int_equal(ibv_post_send(qp, &many, &bad), ENOMEM);
	/* EINVAL and other codes are told apart */
	fk.fail_ret = EINVAL;
	assert_int_equal(ibv_post_send(qp, w, &bad), EINVAL);
	fk.fail_ret = EIO;
	assert_int_equal(ibv_post_send(qp, w, &bad), EIO);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->sq_full, 2);
	assert_int_equal(r->enomem_other, 2);
	assert_int_equal(r->einval, 1);
	assert_int_equal(r->other_errors, 1);

	/* a provider that fails without setting bad_wr: the app's variable is restored, nothing counted as posted */
	fk.fail_at = 3;
	fk.leave_bad_unset = 1;
	bad = app_bad;
	assert_int_equal(ibv_post_send(qp, w, &bad), EIO);
	assert_ptr_equal(bad, app_bad);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2);
	fk.leave_bad_unset = 0;
	fk.fail_at = -1;
	fk.fail_ret = 0;
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
}

static void test_apply_mode(void **state)
{
	struct ibv_sge s32 = { .addr = (uintptr_t)buf, .length = 32, .lkey = 5 };
	struct ibv_sge s100 = { .addr = (uintptr_t)buf, .length = 100, .lkey = 5 };
	struct ibv_sge s64 = { .addr = (uintptr_t)buf, .length = 64, .lkey = 5 };
	struct ibv_send_wr w[4], before[4], *bad = NULL;
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 64, .max_send_sge = 1 } };
	const struct rt_probe_qp_summary *r;
	struct ibv_qp *qp;
	unsigned first;

	(void)state;
	configure(0, 64, 128, NULL);
	qp = rt_probe_create_qp(&fk.pd, &a);
	assert_non_null(qp);
	/* raised to 128 at creation, but the application sees what it asked for (0), at creation and from ibv_query_qp */
	assert_int_equal(a.cap.max_inline_data, 0);
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		fk.query_inline = 128; /* what the provider reports */
		errno = 0;
		assert_int_equal(rt_probe_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
		assert_int_equal(errno, FAKE_ERRNO_MARK);
		assert_int_equal(qa.cap.max_inline_data, 0);
		assert_int_equal(qi.cap.max_inline_data, 0);
		assert_int_equal(qa.cap.max_send_wr, 64); /* the other caps as the provider said */
		/* a failing query: the provider's return value and errno, nothing written */
		fk.query_ret = EINVAL;
		memset(&qa, 0x5a, sizeof(qa));
		errno = 0;
		assert_int_equal(rt_probe_query_qp(qp, &qa, IBV_QP_CAP, &qi), EINVAL);
		assert_int_equal(errno, FAKE_ERRNO_MARK);
		assert_int_equal(qa.cap.max_inline_data, 0x5a5a5a5au);
		fk.query_ret = 0;
	}

	w[0] = mkwr(&s32, 1, IBV_WR_SEND, IBV_SEND_SIGNALED);
	w[1] = mkwr(&s100, 1, IBV_WR_SEND, 0);
	w[2] = mkwr(&s64, 1, IBV_WR_RDMA_WRITE, 0);
	w[3] = mkwr(&s32, 1, IBV_WR_RDMA_READ, 0);
	chain(w, 4);
	memcpy(before, w, sizeof(w));
	first = fk.n_log;
	assert_int_equal(ibv_post_send(qp, w, &bad), 0);
	assert_memory_equal(before, w, sizeof(w)); /* the application's WRs are untouched */
	assert_int_equal(fk.n_log - first, 4);
	assert_true(fk.log_flags[first] & IBV_SEND_INLINE);
	assert_int_equal(fk.log_flags[first] & IBV_SEND_SIGNALED, IBV_SEND_SIGNALED); /* signaling never changed */
	assert_false(fk.log_flags[first + 1] & IBV_SEND_INLINE);		      /* 100 > threshold */
	assert_true(fk.log_flags[first + 2] & IBV_SEND_INLINE);			      /* 64 <= threshold */
	assert_false(fk.log_flags[first + 3] & IBV_SEND_INLINE);		      /* RDMA READ never */
	assert_false(fk.log_flags[first + 3] & IBV_SEND_SIGNALED);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->apply_inline_set, 2);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].inline_wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].inline_wrs, 1);
	assert_true(r->inline_raised);
	assert_int_equal(r->requested_max_inline_data, 0);
	assert_int_equal(r->max_inline_data, 128); /* the probe's output keeps both */

	/* failure inside the copied chain: bad_wr names the application's WR, not the probe's copy */
	fk.fail_at = 2;
	fk.fail_ret = ENOMEM;
	assert_int_equal(ibv_post_send(qp, w, &bad), ENOMEM);
	assert_ptr_equal(bad, &w[2]);
	assert_memory_equal(before, w, sizeof(w));
	fk.fail_at = -1;
	fk.fail_ret = 0;

	/* a chain longer than the copy buffer passes through unchanged and is counted */
	static struct ibv_send_wr lng[100];
	for (int i = 0; i < 100; i++)
		lng[i] = mkwr(&s32, 1, IBV_WR_SEND, 0);
	chain(lng, 100);
	first = fk.n_log;
	assert_int_equal(ibv_post_send(qp, lng, &bad), 0);
	assert_false(fk.log_flags[first] & IBV_SEND_INLINE);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->apply_chain_too_long, 1);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);

	/* the same through create_qp_ex for the extended send API (send_ops_flags): raised to 128, and the application
	 * sees the 128 (its own IBV_SEND_INLINE works on every provider; the probe's wr_set_sge -> wr_set_inline_data
	 * does not on rxe, which takes IBV_SEND_INLINE from wr_flags at the opcode's call, before the size is known) */
	{
		struct ibv_qp_init_attr_ex ax = {
			.qp_type = IBV_QPT_RC,
			.pd = &fk.pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND,
			.cap = { .max_send_wr = 64, .max_send_sge = 1, .max_inline_data = 8 }
		};
		struct ibv_qp *qx = ibv_create_qp_ex(ctx, &ax);

		assert_non_null(qx);
		assert_int_equal(ax.cap.max_inline_data, 128);
		r = qp_rec(qx->qp_num);
		assert_true(r->inline_raised);
		assert_int_equal(r->requested_max_inline_data, 8);
		assert_int_equal(r->max_inline_data, 128);
		assert_int_equal(rt_probe_destroy_qp(qx), 0);
	}

	/* the device refuses the raised max_inline_data: retried with the app's attributes, limit = the QP's real one */
	configure(0, 200, 512, NULL);
	struct ibv_qp_init_attr b = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 64, .max_send_sge = 1, .max_inline_data = 0 } };
	qp = rt_probe_create_qp(&fk.pd, &b);
	assert_non_null(qp);
	assert_int_equal(b.cap.max_inline_data, 16);
	{
		/* not raised: ibv_query_qp reports exactly what the provider said */
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		fk.query_inline = 77;
		assert_int_equal(rt_probe_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
		assert_int_equal(qa.cap.max_inline_data, 77);
		assert_int_equal(qi.cap.max_inline_data, 77);
	}
	struct ibv_send_wr one = mkwr(&s32, 1, IBV_WR_SEND, 0);
	first = fk.n_log;
	assert_int_equal(ibv_post_send(qp, &one, &bad), 0);
	assert_false(fk.log_flags[first] & IBV_SEND_INLINE); /* 32 > the QP's 16 */
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

static void test_apply_profile(void **state)
{
	char path[] = "/tmp/rtune-probe-prof.XXXXXX";
	const char doc[] =
		"{\"schema\":{\"name\":\"rtune-profile\",\"version\":\"1.0\"},\"node\":{\"hostname\":\"h\"},\"entries\":[\n"
		" {\"device\":\"other0\",\"port\":1,\"opcode\":\"send\",\"qp_type\":\"rc\",\"inline_threshold\":220,"
		"\"max_inline_data\":220,\"reasons\":[{\"code\":\"x\",\"text\":\"a \\\"quoted\\\" } ] text\"}]},\n"
		" {\"device\":\"fake0\",\"port\":1,\"opcode\":\"send\",\"qp_type\":\"rc\",\"inline_threshold\":48,"
		"\"max_inline_data\":96,\"cq_moderation\":{\"count\":16,\"period_us\":8}},\n"
		" {\"device\":\"fake0\",\"port\":1,\"opcode\":\"write\",\"qp_type\":\"rc\",\"inline_threshold\":0,"
		"\"max_inline_data\":0}]}\n";
	struct ibv_sge s40 = { .addr = (uintptr_t)buf, .length = 40 }, s60 = { .addr = (uintptr_t)buf, .length = 60 };
	struct ibv_send_wr w[3], *bad;
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 64, .max_send_sge = 1 } };
	const struct rt_probe_qp_summary *r;
	struct ibv_qp *qp;
	unsigned first;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, sizeof(doc) - 1), (ssize_t)(sizeof(doc) - 1));
	close(fd);
	configure(0, 0, 0, NULL);
	assert_int_equal(rt_probe_load_profile(path), 0);
	qp = rt_probe_create_qp(&fk.pd, &a);
	assert_non_null(qp);
	/* fake0's send/rc entry: max_inline_data 96 (not other0's 220, which the fake device would refuse), raised by the
	 * probe: the application sees the 0 it asked for, the probe's record the 96 granted */
	assert_int_equal(a.cap.max_inline_data, 0);
	assert_int_equal(qp_rec(qp->qp_num)->max_inline_data, 96);
	w[0] = mkwr(&s40, 1, IBV_WR_SEND, 0);
	w[1] = mkwr(&s40, 1, IBV_WR_RDMA_WRITE, 0); /* write threshold 0: never */
	w[2] = mkwr(&s60, 1, IBV_WR_SEND, 0);	    /* 60 > 48 */
	chain(w, 3);
	first = fk.n_log;
	assert_int_equal(ibv_post_send(qp, w, &bad), 0);
	assert_true(fk.log_flags[first] & IBV_SEND_INLINE);
	assert_false(fk.log_flags[first + 1] & IBV_SEND_INLINE);
	assert_false(fk.log_flags[first + 2] & IBV_SEND_INLINE);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->apply_inline_set, 1);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	/* a UD QP: the profile has no ud entry for fake0, so nothing is applied */
	a.qp_type = IBV_QPT_UD;
	a.cap.max_inline_data = 0;
	qp = rt_probe_create_qp(&fk.pd, &a);
	assert_non_null(qp);
	assert_int_equal(a.cap.max_inline_data, 16);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	assert_int_equal(rt_probe_load_profile(NULL), 0);
	assert_int_equal(rt_probe_load_profile("/nonexistent/profile.json"), ENOENT);
	unlink(path);
	configure(0, 0, 0, NULL);
}

/* The fake device's planted crossover: inline 20 us per 64 B, a DMA read 50 us: inline wins up to 128 B. */
static uint64_t cost_x128(uint32_t bytes, bool inlined)
{
	return inlined ? 20000ull * ((bytes + 63) / 64) : 50000ull;
}

/* Bucket of b in the shared scheme (rt_hist.h). */
static int band_of(uint32_t b)
{
	return (int)rt_hist_bucket(b);
}

/*
 * Apply mode's adaptive threshold (RTUNE_APPLY_ADAPTIVE): an unmodified sender of 24 sizes from 34 to 248 B, every
 * WR signaled and its completion polled, on a device whose crossover is 128 B; apply mode starts at 32 B. Within
 * 20,000 posts the threshold is within one band of 128 B and its moves are in the probe's output; the application's
 * WRs are untouched, signaling is never changed, nothing above the granted max_inline_data goes inline.
 */
static void test_apply_adaptive(void **state)
{
	struct rt_probe_config c = {
		.sample_every = 0, .apply_threshold = 32, .apply_max_inline = 256, .apply_adaptive = true
	};
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .lkey = 5 };
	struct ibv_send_wr w, before, *bad = NULL;
	struct ibv_wc wc[4];
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	json_t *root, *q = NULL, *ctl;
	json_error_t jerr;
	char *doc;
	size_t len;
	unsigned first, over = 0, sig_changed = 0;
	int thr;

	(void)state;
	snprintf(c.apply_source, sizeof(c.apply_source), "test");
	rt_probe_configure(&c);
	qp = fake_rc_qp(0, 0);
	assert_non_null(qp);
	cq = rt_probe_create_cq(ctx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	fk.cost_ns = cost_x128;
	first = fk.n_log;
	for (unsigned i = 0; i < 20000; i++) {
		unsigned k = i % 24;

		sge.length = (1u << (5 + k / 8)) + (k % 8) * (1u << (2 + k / 8)) + 2; /* the middle-ish of 24 bands */
		w = mkwr(&sge, 1, IBV_WR_SEND, IBV_SEND_SIGNALED);
		before = w;
		assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
		assert_memory_equal(&before, &w, sizeof(w));
		fk.wc[fk.n_wc++] =
			(struct ibv_wc){ .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND, .qp_num = qp->qp_num };
		assert_int_equal(ibv_poll_cq(cq, 4, wc), 1);
	}
	fk.cost_ns = NULL;
	for (unsigned i = first; i < fk.n_log && i < FAKE_LOG; i++) {
		over += (fk.log_flags[i] & IBV_SEND_INLINE) && fk.log_bytes[i] > 256;
		sig_changed += !(fk.log_flags[i] & IBV_SEND_SIGNALED);
	}
	assert_int_equal(over, 0);
	assert_int_equal(sig_changed, 0);
	assert_int_equal(rt_probe_render_json(false, &doc, &len), 0);
	root = json_loadb(doc, len, 0, &jerr);
	free(doc);
	assert_non_null(root);
	for (size_t i = 0; i < json_array_size(json_object_get(root, "qps")); i++) {
		json_t *x = json_array_get(json_object_get(root, "qps"), i);

		if (json_integer_value(json_object_get(x, "qp_num")) == qp->qp_num)
			q = x;
	}
	assert_non_null(q);
	ctl = json_object_get(q, "inline_ctl");
	assert_non_null(ctl);
	thr = (int)json_integer_value(json_object_get(ctl, "threshold"));
	printf("apply mode adaptive: start %lld B, threshold %d B after 20000 posts, %lld moves up, %lld down\n",
	       json_integer_value(json_object_get(ctl, "start")), thr,
	       json_integer_value(json_object_get(ctl, "moves_up")),
	       json_integer_value(json_object_get(ctl, "moves_down")));
	assert_int_equal(json_integer_value(json_object_get(ctl, "start")), 32);
	assert_true(abs(band_of((uint32_t)thr) - band_of(128)) <= 1);
	assert_true(json_array_size(json_object_get(ctl, "moves")) > 0);
	{
		/* what the reader (`rtune probe`'s import) gets from the writer's document: every figure and move */
		struct rt_probe_summary *sum = NULL;
		const struct rt_probe_ctl_summary *rc = NULL;
		struct rt_error err;
		json_t *moves = json_object_get(ctl, "moves");

		assert_int_equal(rt_probe_render_json(false, &doc, &len), 0);
		assert_int_equal(rt_probe_parse(doc, len, &sum, &err), 0);
		free(doc);
		for (size_t i = 0; i < sum->n_qps; i++)
			if (sum->qps[i].qp_num == qp->qp_num)
				rc = &sum->qps[i].ctl;
		assert_non_null(rc);
		assert_true(rc->present && !rc->busy);
		assert_int_equal(rc->start_bytes, 32);
		assert_int_equal(rc->threshold_bytes, thr);
		assert_int_equal(rc->max_bytes, json_integer_value(json_object_get(ctl, "max")));
		assert_int_equal(rc->samples, json_integer_value(json_object_get(ctl, "samples")));
		assert_int_equal(rc->moves_up, json_integer_value(json_object_get(ctl, "moves_up")));
		assert_int_equal(rc->moves_down, json_integer_value(json_object_get(ctl, "moves_down")));
		assert_int_equal(rc->reverts, json_integer_value(json_object_get(ctl, "reverts")));
		assert_int_equal(rc->n_moves, json_array_size(moves));
		for (unsigned k = 0; k < rc->n_moves; k++) {
			json_t *m = json_array_get(moves, k);

			assert_int_equal(rc->moves[k].at_sample, json_integer_value(json_object_get(m, "at_sample")));
			assert_int_equal(rc->moves[k].from_bytes, json_integer_value(json_object_get(m, "from")));
			assert_int_equal(rc->moves[k].to_bytes, json_integer_value(json_object_get(m, "to")));
			assert_int_equal(rc->moves[k].inline_ns, json_integer_value(json_object_get(m, "inline_ns")));
			assert_int_equal(rc->moves[k].noinline_ns,
					 json_integer_value(json_object_get(m, "noinline_ns")));
			assert_int_equal(rc->moves[k].revert, json_is_true(json_object_get(m, "revert")));
		}
		rt_probe_summary_free(sum);
	}
	json_decref(root);
	assert_int_equal(rt_probe_destroy_cq(cq), 0);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

/*
 * The WR the "device" got is the application's w with IBV_SEND_INLINE added when inl, in every field a provider reads
 * for w's opcode on a QP of RC type: the id, SGE list and count, opcode, flags and immediate; the address union and
 * the XRC SRQ number for an RDMA WRITE. A WR not inlined is the application's own: every field.
 */
static void assert_same_wr(const struct ibv_send_wr *got, const struct ibv_send_wr *w, bool inl)
{
	bool write = w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;

	assert_int_equal(got->wr_id, w->wr_id);
	assert_ptr_equal(got->next, NULL);
	assert_ptr_equal(got->sg_list, w->sg_list);
	assert_int_equal(got->num_sge, w->num_sge);
	assert_int_equal(got->opcode, w->opcode);
	assert_int_equal(got->send_flags, w->send_flags | (inl ? IBV_SEND_INLINE : 0u));
	assert_int_equal(got->imm_data, w->imm_data);
	if (write || !inl) {
		assert_int_equal(got->wr.atomic.remote_addr, w->wr.atomic.remote_addr);
		assert_int_equal(got->wr.atomic.compare_add, w->wr.atomic.compare_add); /* rdma.rkey, ud.qpn/qkey */
		assert_int_equal(got->qp_type.xrc.remote_srqn, w->qp_type.xrc.remote_srqn);
	}
	if (inl)
		return;
	assert_int_equal(got->wr.atomic.swap, w->wr.atomic.swap);
	assert_int_equal(got->wr.atomic.rkey, w->wr.atomic.rkey);
	assert_ptr_equal(got->bind_mw.mw, w->bind_mw.mw);
	assert_int_equal(got->bind_mw.rkey, w->bind_mw.rkey);
	assert_ptr_equal(got->bind_mw.bind_info.mr, w->bind_mw.bind_info.mr);
	assert_int_equal(got->bind_mw.bind_info.addr, w->bind_mw.bind_info.addr);
	assert_int_equal(got->bind_mw.bind_info.length, w->bind_mw.bind_info.length);
	assert_int_equal(got->bind_mw.bind_info.mw_access_flags, w->bind_mw.bind_info.mw_access_flags);
}

/*
 * Apply mode's common path with the controller (one WR, one SGE, outside the watched bands, decided without the
 * controller's lock): the WR it inlines reaches the device as a copy equal to the application's WR in every field the
 * provider reads for its opcode but IBV_SEND_INLINE, one it leaves is posted as the application's own; a failed post of an inlined copy names the
 * application's WR in bad_wr and keeps the provider's return value and errno; the application's WR is never written.
 */
static void test_apply_ctl_common_path(void **state)
{
	struct rt_probe_config c = {
		.sample_every = 0, .apply_threshold = 128, .apply_max_inline = 256, .apply_adaptive = true
	};
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .lkey = 5 };
	struct ibv_send_wr w, before, *bad = NULL;
	struct ibv_qp *qp;
	unsigned n0;

	(void)state;
	snprintf(c.apply_source, sizeof(c.apply_source), "test");
	rt_probe_configure(&c);
	qp = fake_rc_qp(0, 0);
	assert_non_null(qp);
	fk.n_log = 0; /* the log holds the first FAKE_LOG WRs */
	fk.keep_last_wr = true;
	memset(&w, 0xa5, sizeof(w));
	w.next = NULL;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.bind_mw.mw = (struct ibv_mw *)(uintptr_t)0x1234;
	w.bind_mw.bind_info.mr = (struct ibv_mr *)(uintptr_t)0x5678;
	for (int op = 0; op < 2; op++) {
		w.opcode = op ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND;
		w.send_flags = op ? IBV_SEND_SOLICITED : 0;
		for (uint32_t len = 16; len <= 256; len += 16) {
			bool inl = len < 112; /* well below the bands around 128 B */

			if (len >= 112 && len <= 160)
				continue; /* the watched bands: the controller's own path */
			sge.length = len;
			w.wr_id = len * 7 + (unsigned)op;
			before = w;
			n0 = fk.n_log;
			assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
			assert_memory_equal(&before, &w, sizeof(w));
			assert_int_equal(fk.n_log, n0 + 1);
			assert_same_wr(&fk.last_wr, &w, inl);
			if (inl)
				assert_ptr_not_equal(fk.log_ptr[n0], &w);
			else
				assert_ptr_equal(fk.log_ptr[n0], &w);
		}
	}
	/* a failing provider: the copy it names is mapped back to the application's WR */
	sge.length = 32;
	before = w;
	fk.fail_at = 0;
	fk.fail_ret = ENOMEM;
	errno = 0;
	assert_int_equal(ibv_post_send(qp, &w, &bad), ENOMEM);
	assert_int_equal(errno, FAKE_ERRNO_MARK);
	assert_ptr_equal(bad, &w);
	assert_memory_equal(&before, &w, sizeof(w));
	fk.fail_at = -1;
	fk.fail_ret = 0;
	fk.keep_last_wr = false;
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

/*
 * Apply mode's looks outside the controller's bands follow the controller's rate (issue 18): with traffic in both
 * watched bands (124 B and 136 B around the start of 128 B) and sizes far outside (16 B, and 1000 B above the granted
 * 256 B), nothing changing, the looks shown to the controller fall to at most 1 in 512 sends (the first probe: one in
 * 8..23 of the sends outside) and never stop. Then, with the band below the threshold left without traffic (only 136 B
 * and 1000 B for a while: it goes quiet, the looks stay backed off), 40 B appears below the threshold, outside the
 * bands: its first send is looked at (a new key in the thread's slots), and within PROBE_NEW_SIZE_BUDGET sends the
 * controller watches 40 B's band.
 */
#define PROBE_NEW_SIZE_BUDGET 20000u
static void test_apply_ctl_looks_back_off(void **state)
{
	static const uint32_t steady[] = { 124, 136, 16, 1000 }, quiet[] = { 136, 1000 }, moved[] = { 136, 1000, 40 };
	struct rt_probe_config c = {
		.sample_every = 0, .apply_threshold = 128, .apply_max_inline = 256, .apply_adaptive = true
	};
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .lkey = 5 };
	struct ibv_send_wr w, *bad = NULL;
	struct rt_inline_ctl_state st;
	struct rtp_qp *q;
	struct ibv_qp *qp;
	uint32_t x = 99;
	uint64_t looks = 0, found = 0, before;
	unsigned first40 = 0; /* 1: the first 40 B send was looked at, 2: it was not */

	(void)state;
	snprintf(c.apply_source, sizeof(c.apply_source), "test");
	rt_probe_configure(&c);
	qp = fake_rc_qp(0, 0);
	assert_non_null(qp);
	q = ht_get(&g_ht_qp, (uintptr_t)qp);
	assert_non_null(q);
	assert_non_null(q->ctl);
	for (unsigned phase = 0; phase < 4; phase++) {
		const uint32_t *sizes = phase < 2 ? steady : phase == 2 ? quiet : moved;
		unsigned n = phase < 2 ? 4 : phase == 2 ? 2 : 3, sends = phase == 3 ? PROBE_NEW_SIZE_BUDGET : 100000;

		for (unsigned i = 0; i < sends && !found; i++) {
			uint64_t look;

			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			sge.length = sizes[x % n];
			w = mkwr(&sge, 1, IBV_WR_SEND, 0);
			before = atomic_load(&q->ctl_looks);
			assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
			look = atomic_load(&q->ctl_looks) - before;
			assert_true(look <= 1);
			looks += phase == 1 && look;
			if (phase == 3 && sge.length == 40 && !first40)
				first40 = look ? 1 : 2;
			if (phase == 3) {
				assert_int_equal(rt_inline_ctl_get_state(tls_slab->c_q->ctl, &st), 0);
				if (st.below_lo <= 40 && 40 <= st.below_hi)
					found = i + 1;
			}
		}
		if (phase == 1) {
			printf("apply mode: %llu looks outside the bands in 100,000 steady sends\n",
			       (unsigned long long)looks);
			assert_true(looks >= 1 && looks <= 100000 / 512);
		}
	}
	printf("apply mode: 40 B watched after %llu sends, its first send %slooked at\n", (unsigned long long)found,
	       first40 == 1 ? "" : "not ");
	assert_int_equal(first40, 1);
	assert_true(found >= 1 && found <= PROBE_NEW_SIZE_BUDGET);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

/*
 * An application's mix of one-WR posts, 16 sizes each sent signaled and not (32 keys), is counted entirely in the
 * entry's slots, none directly, and at most 4 of the keys sit away from their home slot (the send path's one compare
 * finds the rest): the slot hash spreads the flags as well as the sizes (it once gave a signaled and an unsignaled WR
 * of one size the same home, and 32 slots with 4 probes lost such keys to the slow count; then 64 slots, 12 of the 32
 * keys away from home).
 */
static void test_slots_hold_a_size_mix(void **state)
{
	static const uint32_t sizes[16] = { 16, 24, 32, 48, 64, 80, 96, 112, 124, 132, 160, 192, 256, 320, 384, 512 };
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .lkey = 1 } /* the file's buffer */;
	struct ibv_send_wr w = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad = NULL;
	const struct rtp_entry *e;
	struct ibv_qp *qp;
	uint64_t n = 0;
	unsigned away = 0;

	(void)state;
	configure(0, 0, 0, NULL);
	qp = fake_rc_qp(0, 0);
	assert_non_null(qp);
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < 32; i++) {
			sge.length = sizes[i % 16];
			w.send_flags = i < 16 ? 0 : IBV_SEND_SIGNALED;
			assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
		}
	assert_non_null(tls_slab);
	e = tls_slab->c_e; /* the cache holds this QP's entry after its posts */
	assert_non_null(e);
	for (unsigned k = 0; k < RTP_SLOTS; k++) {
		uint64_t key = atomic_load_explicit(&e->slots[k].key, memory_order_relaxed);

		n += CTR_GET(e->slots[k].n);
		/* the send path looks at the home only: a key away from it is counted out of line */
		if (CTR_GET(e->slots[k].n) && rtp_slot_home(key) != k)
			away++;
	}
	assert_int_equal(n, 96);
	assert_int_equal(CTR_GET(e->st.post_calls), 0); /* nothing counted directly */
	printf("slots: %u of 32 keys away from their home slot\n", away);
	assert_true(away <= 4); /* 1 in 8 (placing 32 keys at random in 128 slots leaves 3.6 away); 12 of 32 with
				   64 slots and the hash of the key's halves xor-ed */
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
}

/*
 * The send path's one-entry cache names its mode: the QP alone on the histogram-only path, RTP_CACHE_FULL added in
 * sampling mode (whose unsignaled one-WR posts are counted as on the histogram-only path, signaled ones advance the
 * sampling); destroying the QP drops the cache in either mode. The counts are the same through every path.
 */
static void test_cache_modes(void **state)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 100, .lkey = 1 };
	struct ibv_send_wr u = mkwr(&sge, 1, IBV_WR_SEND, 0), g = mkwr(&sge, 1, IBV_WR_SEND, IBV_SEND_SIGNALED), *bad;
	const struct rt_probe_qp_summary *r;
	struct ibv_qp *qp;
	uint32_t qpn;

	(void)state;
	configure(0, 0, 0, NULL);
	qp = fake_rc_qp(0, 0);
	assert_non_null(qp);
	qpn = qp->qp_num;
	assert_int_equal(ibv_post_send(qp, &u, &bad), 0);
	assert_non_null(tls_slab);
	assert_true(atomic_load(&tls_slab->c_key) == (uintptr_t)qp);
	configure(4, 0, 0, NULL); /* drops every cache: the next post fills it in sampling mode */
	assert_true(atomic_load(&tls_slab->c_key) == 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(ibv_post_send(qp, i & 1 ? &g : &u, &bad), 0);
	assert_true(atomic_load(&tls_slab->c_key) == ((uintptr_t)qp | RTP_CACHE_FULL));
	r = qp_rec(qpn);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 21);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_wrs, 10);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist[rt_hist_bucket(100)], 21);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	assert_true(atomic_load(&tls_slab->c_key) == 0); /* the tagged key was dropped too */
	configure(0, 0, 0, NULL);
}

static void test_ex_api(void **state)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC,
		.pd = &fk.pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
		.cap = { .max_send_wr = 64, .max_send_sge = 1, .max_inline_data = 64 },
	};
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	const struct rt_probe_qp_summary *r;
	struct ibv_qp_ex *qx;
	struct ibv_qp *qp;

	(void)state;
	qp = ibv_create_qp_ex(ctx, &a); /* the inline verbs.h path: through the hooked verbs_context */
	assert_non_null(qp);
	qx = rt_probe_qp_to_qp_ex(qp);
	assert_non_null(qx);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 200);
	qx->wr_flags = 0;
	ibv_wr_rdma_write(qx, 2, 0x1000);
	ibv_wr_set_inline_data(qx, buf, 50);
	errno = 0;
	assert_int_equal(ibv_wr_complete(qx), 0);
	assert_int_equal(errno, FAKE_ERRNO_MARK);
	assert_int_equal(fk.ex_sends, 1);
	assert_int_equal(fk.ex_writes, 1);
	assert_int_equal(fk.ex_sge, 1);
	assert_int_equal(fk.ex_inline, 1);
	assert_int_equal(fk.ex_complete, 1);
	/* aborted and failed batches are not counted as sent */
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 999);
	ibv_wr_abort(qx);
	assert_int_equal(fk.ex_abort, 1);
	fk.fail_ret = ENOMEM;
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 999);
	assert_int_equal(ibv_wr_complete(qx), ENOMEM);
	fk.fail_ret = 0;
	r = qp_rec(qp->qp_num);
	assert_true(r->ex_api);
	assert_int_equal(r->post_calls, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].bytes, 200);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].signaled_wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].inline_wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_WRITE].hist[rt_hist_bucket(50)], 1);
	assert_int_equal(r->sq_full, 1);
	assert_int_equal(r->wrs_not_posted, 1);

	/* the provider swaps wr_complete at RTS: the probe re-wraps and still counts */
	fk.rewrite_on_rts = 1;
	assert_int_equal(rt_probe_modify_qp(qp, &rts, IBV_QP_STATE), 0);
	fk.rewrite_on_rts = 0;
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 8);
	assert_int_equal(ibv_wr_complete(qx), 0);
	assert_int_equal(fk.ex_complete2, 1);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].hist[rt_hist_bucket(8)], 1);

	/* apply mode on the extended API: wr_set_sge of a small SEND flagged IBV_SEND_INLINE becomes wr_set_inline_data;
	 * one without the flag stays wr_set_sge (rxe takes the flag at the opcode's call: inlined without it, ibv_rc_pingpong
	 * -N's WRs failed there), as does one above the limit */
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 64, 64, NULL);
	qp = ibv_create_qp_ex(ctx, &a);
	assert_non_null(qp);
	qx = rt_probe_qp_to_qp_ex(qp);
	unsigned inl0 = fk.ex_inline, sge0 = fk.ex_sge;
	ibv_wr_start(qx);
	qx->wr_flags = IBV_SEND_INLINE;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 40);
	qx->wr_flags = 0;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 40);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, 1, (uintptr_t)buf, 400);
	assert_int_equal(ibv_wr_complete(qx), 0);
	assert_int_equal(fk.ex_inline - inl0, 1);
	assert_int_equal(fk.ex_sge - sge0, 2);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->apply_inline_set, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].inline_wrs, 1);
	assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 3);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

static void test_latency_and_wc_errors(void **state)
{
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, IBV_SEND_SIGNALED), *bad;
	struct ibv_wc wc[8];
	const struct rt_probe_qp_summary *r;

	(void)state;
	configure(1, 0, 0, NULL);
	qp = fake_rc_qp(0, 0);
	cq = rt_probe_create_cq(ctx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
	for (int i = 0; i < 3; i++)
		fk.wc[fk.n_wc++] = (struct ibv_wc){
			.wr_id = 7, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND, .qp_num = qp->qp_num
		};
	fk.wc[fk.n_wc++] =
		(struct ibv_wc){ .wr_id = 9, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .qp_num = qp->qp_num };
	fk.wc[fk.n_wc++] = (struct ibv_wc){ .status = IBV_WC_REM_ACCESS_ERR, .qp_num = qp->qp_num };
	errno = 0;
	assert_int_equal(ibv_poll_cq(cq, 8, wc), 5);
	assert_int_equal(errno, FAKE_ERRNO_MARK);
	assert_int_equal(wc[4].status, IBV_WC_REM_ACCESS_ERR);
	r = qp_rec(qp->qp_num);
	assert_int_equal(r->lat_samples, 3);
	assert_true(r->lat_max_ns >= r->lat_min_ns);
	assert_int_equal(r->wc_errors, 1);
	assert_int_equal(rt_probe_destroy_cq(cq), 0);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
	configure(0, 0, 0, NULL);
}

#define NTHREADS 8
#define NQPS 4
#define NPOSTS 20000

static struct ibv_qp *tqp[NQPS];
static pthread_barrier_t wave_bar; /* the threads of a wave post at the same time: none exits before all posted */

static void *poster(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct ibv_sge sge = { .addr = (uintptr_t)buf };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
	void *ret = NULL;

	pthread_barrier_wait(&wave_bar);
	for (unsigned i = 0; i < NPOSTS && !ret; i++) {
		sge.length = (i * 7 + seed) % 300;
		if (ibv_post_send(tqp[i % NQPS], &w, &bad))
			ret = (void *)1;
	}
	pthread_barrier_wait(&wave_bar);
	return ret;
}

static void test_threads(void **state)
{
	pthread_t th[NTHREADS];
	uint64_t want_bytes[NQPS] = { 0 }, want_small[NQPS] = { 0 };
	uint32_t want_max[NQPS][RT_HIST_BUCKETS] = { { 0 } };

	(void)state;
	for (int q = 0; q < NQPS; q++)
		tqp[q] = fake_rc_qp(0, 0);
	assert_int_equal(pthread_barrier_init(&wave_bar, NULL, NTHREADS), 0);
	/* two waves: the second wave's threads inherit released slabs, nothing recorded by the first may be lost */
	for (int wave = 0; wave < 2; wave++) {
		for (int t = 0; t < NTHREADS; t++)
			assert_int_equal(pthread_create(&th[t], NULL, poster, (void *)(uintptr_t)(t + wave * 8)), 0);
		for (int t = 0; t < NTHREADS; t++) {
			void *ret;

			assert_int_equal(pthread_join(th[t], &ret), 0);
			assert_null(ret);
		}
		/* the first wave's 8 threads posted on every QP at once: 8 posters each */
		for (int q = 0; wave == 0 && q < NQPS; q++)
			assert_int_equal(qp_rec(tqp[q]->qp_num)->posting_threads, NTHREADS);
		for (int t = 0; t < NTHREADS; t++)
			for (unsigned i = 0; i < NPOSTS; i++) {
				uint32_t len = (i * 7 + (unsigned)(t + wave * 8)) % 300;

				want_bytes[i % NQPS] += len;
				want_small[i % NQPS] += rt_hist_bucket(len) == rt_hist_bucket(5);
				if (len > want_max[i % NQPS][rt_hist_bucket(len)])
					want_max[i % NQPS][rt_hist_bucket(len)] = len;
			}
	}
	for (int q = 0; q < NQPS; q++) {
		const struct rt_probe_qp_summary *r = qp_rec(tqp[q]->qp_num);
		uint64_t hsum = 0;

		assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2 * NTHREADS * NPOSTS / NQPS);
		assert_int_equal(r->op[RT_PROBE_OP_SEND].bytes, want_bytes[q]);
		assert_int_equal(r->op[RT_PROBE_OP_SEND].hist[rt_hist_bucket(5)], want_small[q]);
		for (unsigned b = 0; b < RT_HIST_BUCKETS; b++) {
			hsum += r->op[RT_PROBE_OP_SEND].hist[b];
			/* the largest size of each bucket, over every thread and both waves */
			assert_int_equal(r->op[RT_PROBE_OP_SEND].hist_max[b], want_max[q][b]);
		}
		assert_int_equal(hsum, 2 * NTHREADS * NPOSTS / NQPS);
		assert_int_equal(r->post_calls, 2 * NTHREADS * NPOSTS / NQPS);
		/* the second wave's threads took released slabs (the first wave's or spare ones): a slab is one thread
		 * at a time, so threads that followed one another may count once */
		assert_true(r->posting_threads >= NTHREADS && r->posting_threads <= 2 * NTHREADS);
		assert_int_equal(__builtin_popcountll(r->posters), r->posting_threads);
	}
	assert_int_equal(snap->drops, 0);
	/* a QP only this thread posted on: one poster, also after its records are folded at destruction */
	{
		struct ibv_qp *one = fake_rc_qp(0, 0);
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
		struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
		uint32_t qpn = one->qp_num;

		assert_int_equal(qp_rec(qpn)->posting_threads, 0); /* none yet */
		assert_int_equal(ibv_post_send(one, &w, &bad), 0);
		assert_int_equal(qp_rec(qpn)->posting_threads, 1);
		assert_int_equal(rt_probe_destroy_qp(one), 0);
		assert_int_equal(qp_rec(qpn)->posting_threads, 1);
	}
	for (int q = 0; q < NQPS; q++)
		assert_int_equal(rt_probe_destroy_qp(tqp[q]), 0);
	pthread_barrier_destroy(&wave_bar);
}

/* The reader's class threads: per process the union of its QPs' posters; processes add up; unrecorded is 0. */
static void test_reader_class_threads(void **state)
{
	const char *a =
		"{\"format\":\"rtune-probe\",\"version\":1,\"pid\":10,\"qps\":["
		"{\"qp_type\":\"RC\",\"posting_threads\":2,\"posters\":[0,1],\"ops\":{\"send\":{\"wrs\":4}}},"
		"{\"qp_type\":\"RC\",\"posting_threads\":2,\"posters\":[1,2],\"ops\":{\"send\":{\"wrs\":4}}},"
		"{\"qp_type\":\"RC\",\"posting_threads\":1,\"posters\":[5],\"ops\":{\"rdma_write\":{\"wrs\":4}}}]}";
	const char *b = "{\"format\":\"rtune-probe\",\"version\":1,\"pid\":11,\"qps\":["
			"{\"qp_type\":\"RC\",\"posting_threads\":1,\"posters\":[0],\"ops\":{\"send\":{\"wrs\":4}}}]}";
	const char *old = "{\"format\":\"rtune-probe\",\"version\":1,\"qps\":["
			  "{\"qp_type\":\"RC\",\"ops\":{\"send\":{\"wrs\":4}}}]}";
	struct rt_probe_summary *s = NULL, *t = NULL;
	struct rt_probe_op_summary o;
	struct rt_probe_class_queue q;
	struct rt_error err;

	(void)state;
	assert_int_equal(rt_probe_parse(a, strlen(a), &s, &err), 0);
	assert_int_equal(rt_probe_parse(b, strlen(b), &t, &err), 0);
	assert_int_equal(rt_probe_summary_class_queue(s, RT_OP_SEND, RT_QPT_RC, &o, &q), 8);
	assert_int_equal(q.qps, 2);
	assert_int_equal(q.threads, 3); /* slabs 0, 1, 2 of pid 10 */
	assert_int_equal(rt_probe_summary_merge(s, t), 0);
	rt_probe_summary_class_queue(s, RT_OP_SEND, RT_QPT_RC, &o, &q);
	assert_int_equal(q.qps, 3);
	assert_int_equal(q.threads, 4); /* + slab 0 of pid 11: another process's thread */
	rt_probe_summary_class_queue(s, RT_OP_WRITE, RT_QPT_RC, &o, &q);
	assert_int_equal(q.qps, 1);
	assert_int_equal(q.threads, 1);
	rt_probe_summary_free(s);
	rt_probe_summary_free(t);
	assert_int_equal(rt_probe_parse(old, strlen(old), &s, &err), 0);
	rt_probe_summary_class_queue(s, RT_OP_SEND, RT_QPT_RC, &o, &q);
	assert_int_equal(q.qps, 1);
	assert_int_equal(q.threads, 0); /* a probe that did not record its posters */
	rt_probe_summary_free(s);
}

static void test_fork(void **state)
{
	struct ibv_qp *qp = fake_rc_qp(0, 0);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 10 };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
	int status;
	pid_t pid;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(ibv_post_send(qp, &w, &bad), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child starts from zero and records its own sends */
		const struct rt_probe_qp_summary *r = qp_rec(qp->qp_num);
		int ok = r->op[RT_PROBE_OP_SEND].wrs == 0;

		for (int i = 0; i < 3; i++)
			ok &= ibv_post_send(qp, &w, &bad) == 0;
		r = qp_rec(qp->qp_num);
		ok &= r->op[RT_PROBE_OP_SEND].wrs == 3;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(qp_rec(qp->qp_num)->op[RT_PROBE_OP_SEND].wrs, 4);
	assert_int_equal(rt_probe_destroy_qp(qp), 0);
}

static void test_output_file(void **state)
{
	char dir[] = "/tmp/rtune-probe-test.XXXXXX", pat[256], path[256], target[256];
	struct rt_probe_summary *s;
	struct rt_error err;
	struct stat st;
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pat, sizeof(pat), "%s/out.%%p.json", dir);
	pid = fork();
	if (pid == 0) {
		char got[256];
		struct ibv_qp *cq = fake_rc_qp(0, 0);

		configure(0, 0, 0, pat);
		if (!cq)
			_exit(2);
		int wret = rt_probe_write_now(true, got, sizeof(got));
		if (wret)
			fprintf(stderr, "write_now: %s\n", strerror(wret));
		_exit(wret ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	snprintf(path, sizeof(path), "%s/out.%ld.json", dir, (long)pid);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(rt_probe_read_file(path, &s, &err), 0);
	assert_int_equal(s->version, 1);
	assert_true(s->n_qps > 0);
	rt_probe_summary_free(s);
	unlink(path);

	/* an existing name (here a symlink) is never followed nor overwritten: the write fails, the process goes on */
	snprintf(pat, sizeof(pat), "%s/fixed.json", dir);
	snprintf(target, sizeof(target), "%s/victim", dir);
	close(open(target, O_WRONLY | O_CREAT, 0644));
	pid = fork();
	if (pid == 0) {
		/* a forked child without %p in the pattern writes <pattern>.<pid>: plant the symlink there */
		snprintf(path, sizeof(path), "%s.%ld", pat, (long)getpid());
		if (!fake_rc_qp(0, 0) || symlink(target, path))
			_exit(2);
		configure(0, 0, 0, pat);
		int ret = rt_probe_write_now(true, NULL, 0);
		rt_probe_fini(); /* prints the one line on stderr */
		_exit(ret == EEXIST ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	snprintf(path, sizeof(path), "%s.%ld", pat, (long)pid);
	assert_int_equal(unlink(path), 0);
	unlink(target);
	rmdir(dir);
}

/*
 * Stress (run under TSan by `make hardening`'s tsan step, where any data race fails the test): posting threads on
 * shared QPs while another thread creates, posts to and destroys QPs, another renders the JSON snapshot, and another
 * posts signaled sends on its own QP and polls their completions (latency sampling). The shared QPs' counts must come
 * out exact and every snapshot must parse.
 */
#define SNPOSTERS 4
#define SNPOSTS 20000
#define SCHURN 200

static _Atomic int stress_running;

static void *stress_poster(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct ibv_sge sge = { .addr = (uintptr_t)buf };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;

	for (unsigned i = 0; i < SNPOSTS; i++) {
		sge.length = (i + seed) % 500;
		if (ibv_post_send(tqp[i % NQPS], &w, &bad))
			return (void *)1;
	}
	return NULL;
}

static void *stress_churn(void *arg)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_RDMA_WRITE, 0), *bad;

	(void)arg;
	for (int i = 0; i < SCHURN; i++) {
		struct ibv_qp *qp = fake_rc_qp(0, 0);

		if (!qp)
			return (void *)1;
		for (int k = 0; k < 10; k++)
			if (ibv_post_send(qp, &w, &bad))
				return (void *)2;
		if (rt_probe_destroy_qp(qp))
			return (void *)3;
	}
	return NULL;
}

static void *stress_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 40 || atomic_load(&stress_running); i++) {
		struct rt_probe_summary *s = NULL;
		struct rt_error err;
		char *doc;
		size_t len;

		if (rt_probe_render_json(false, &doc, &len))
			return (void *)1;
		if (rt_probe_parse(doc, len, &s, &err)) {
			free(doc);
			return (void *)2;
		}
		rt_probe_summary_free(s);
		free(doc);
		if (i > 100000)
			return (void *)3; /* bounded: the posters are long done */
	}
	return NULL;
}

static void *stress_signaled(void *arg)
{
	struct ibv_qp *qp = arg;
	struct ibv_cq *cq = rt_probe_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 32 };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, IBV_SEND_SIGNALED), *bad;
	struct ibv_wc wc[8];

	if (!cq)
		return (void *)1;
	for (int i = 0; i < 2000; i++) {
		if (ibv_post_send(qp, &w, &bad))
			return (void *)2;
		fk.wc[0] = (struct ibv_wc){
			.wr_id = 7, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND, .qp_num = qp->qp_num
		};
		fk.n_wc = 1;
		if (ibv_poll_cq(cq, 8, wc) != 1)
			return (void *)3;
	}
	return rt_probe_destroy_cq(cq) ? (void *)4 : NULL;
}

static void test_stress_churn(void **state)
{
	pthread_t th[SNPOSTERS], churn, writer, sig;
	uint64_t want_bytes[NQPS] = { 0 };
	struct ibv_qp *sqp;
	void *ret;

	(void)state;
	configure(1, 0, 0, NULL);
	for (int q = 0; q < NQPS; q++)
		assert_non_null(tqp[q] = fake_rc_qp(0, 0));
	assert_non_null(sqp = fake_rc_qp(0, 0));
	atomic_store(&stress_running, 1);
	assert_int_equal(pthread_create(&writer, NULL, stress_writer, NULL), 0);
	assert_int_equal(pthread_create(&churn, NULL, stress_churn, NULL), 0);
	assert_int_equal(pthread_create(&sig, NULL, stress_signaled, sqp), 0);
	for (int t = 0; t < SNPOSTERS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, stress_poster, (void *)(uintptr_t)t), 0);
	for (int t = 0; t < SNPOSTERS; t++) {
		assert_int_equal(pthread_join(th[t], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(pthread_join(churn, &ret), 0);
	assert_null(ret);
	assert_int_equal(pthread_join(sig, &ret), 0);
	assert_null(ret);
	atomic_store(&stress_running, 0);
	assert_int_equal(pthread_join(writer, &ret), 0);
	assert_null(ret);
	for (int t = 0; t < SNPOSTERS; t++)
		for (unsigned i = 0; i < SNPOSTS; i++)
			want_bytes[i % NQPS] += (i + (unsigned)t) % 500;
	for (int q = 0; q < NQPS; q++) {
		const struct rt_probe_qp_summary *r = qp_rec(tqp[q]->qp_num);

		assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, SNPOSTERS * SNPOSTS / NQPS);
		assert_int_equal(r->op[RT_PROBE_OP_SEND].bytes, want_bytes[q]);
	}
	{
		const struct rt_probe_qp_summary *r = qp_rec(sqp->qp_num);

		assert_int_equal(r->op[RT_PROBE_OP_SEND].wrs, 2000);
		assert_int_equal(r->lat_samples, 2000);
	}
	for (int q = 0; q < NQPS; q++)
		assert_int_equal(rt_probe_destroy_qp(tqp[q]), 0);
	assert_int_equal(rt_probe_destroy_qp(sqp), 0);
	configure(0, 0, 0, NULL);
}

#if defined(__SANITIZE_THREAD__)
#define RT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RT_TSAN 1
#endif
#endif

/* Threads of this process (entries of /proc/self/task). */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static _Atomic int detached_done;

static void *fork_poster(void *arg)
{
	void *ret = stress_poster((void *)(uintptr_t)7);

	if (arg)
		atomic_store_explicit(&detached_done, 1, memory_order_release); /* its last use of the QPs */
	return ret;
}

/*
 * fork() after a detached thread posted and exited (never joined): the child takes over the released slab. Under TSan
 * this checks that the child's reset synchronizes with the thread's release of its slab.
 */
static void test_fork_after_detached_thread(void **state)
{
	pthread_t th;
	int status, n0 = task_count();
	pid_t pid;

	(void)state;
	for (int q = 0; q < NQPS; q++)
		assert_non_null(tqp[q] = fake_rc_qp(0, 0));
	assert_int_equal(pthread_create(&th, NULL, fork_poster, &detached_done), 0);
	assert_int_equal(pthread_detach(th), 0);
	/* until it has posted (acquire: its reads of the QPs happen before their destruction below) and is gone */
	for (int i = 0; i < 10000 && (!atomic_load_explicit(&detached_done, memory_order_acquire) || task_count() > n0);
	     i++) /* bounded: 10 s */
		usleep(1000);
	assert_int_equal(task_count(), n0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 10 };
		struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
		int ok = qp_rec(tqp[1]->qp_num)->op[RT_PROBE_OP_SEND].wrs == 0;

		/* a new thread in the child takes a slab the dead thread left */
		ok &= pthread_create(&th, NULL, fork_poster, NULL) == 0 && pthread_join(th, NULL) == 0;
		ok &= ibv_post_send(tqp[1], &w, &bad) == 0;
		ok &= qp_rec(tqp[1]->qp_num)->op[RT_PROBE_OP_SEND].wrs == SNPOSTS / NQPS + 1;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(qp_rec(tqp[1]->qp_num)->op[RT_PROBE_OP_SEND].wrs, SNPOSTS / NQPS);
	for (int q = 0; q < NQPS; q++)
		assert_int_equal(rt_probe_destroy_qp(tqp[q]), 0);
}

/*
 * fork() while other threads post: each child starts from zero and counts its own sends exactly (no deadlock on the
 * probe's lock), and the parent's counts stay exact. Not under TSan: a child forked from a multi-threaded process
 * runs its atfork handlers before TSan's fork support, so TSan reports the child's reset of slabs the parent's still
 * running threads wrote (threads the child does not have); TSan documents it cannot check such a child.
 */
static void test_fork_while_posting(void **state)
{
	pthread_t th[2];
	void *ret;
	int children = 0;

	(void)state;
#ifdef RT_TSAN
	skip();
#endif
	for (int q = 0; q < NQPS; q++)
		assert_non_null(tqp[q] = fake_rc_qp(0, 0));
	for (int t = 0; t < 2; t++)
		assert_int_equal(pthread_create(&th[t], NULL, fork_poster, NULL), 0);
	for (int i = 0; i < 8; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 10 };
			struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
			const struct rt_probe_qp_summary *r;
			int ok;

			r = qp_rec(tqp[0]->qp_num);
			ok = r->op[RT_PROBE_OP_SEND].wrs == 0;
			for (int k = 0; k < 3; k++)
				ok &= ibv_post_send(tqp[0], &w, &bad) == 0;
			r = qp_rec(tqp[0]->qp_num);
			ok &= r->op[RT_PROBE_OP_SEND].wrs == 3 && r->op[RT_PROBE_OP_SEND].bytes == 30;
			_exit(ok ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		children++;
	}
	for (int t = 0; t < 2; t++) {
		assert_int_equal(pthread_join(th[t], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(children, 8);
	for (int q = 0; q < NQPS; q++) {
		assert_int_equal(qp_rec(tqp[q]->qp_num)->op[RT_PROBE_OP_SEND].wrs, 2 * SNPOSTS / NQPS);
		assert_int_equal(rt_probe_destroy_qp(tqp[q]), 0);
	}
}

/*
 * Early exit: a process whose threads are still posting calls exit(); the final write (the library destructor,
 * here an atexit handler) runs while they post. The process must exit with its own status, the file must be a
 * complete document; with an unwritable output the process still exits normally and says so in one line.
 */
static _Atomic unsigned forever_started; /* posters that have posted once */

static void *forever_poster(void *arg)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16 };
	struct ibv_send_wr w = mkwr(&sge, 1, IBV_WR_SEND, 0), *bad;
	struct ibv_qp *qp = arg;

	for (unsigned long i = 0; i < 4000000000UL; i++) { /* bounded; exit() ends it long before */
		if (ibv_post_send(qp, &w, &bad))
			return (void *)1;
		if (!i)
			atomic_fetch_add(&forever_started, 1);
	}
	return NULL;
}

static pid_t early_exit_child(const char *pattern, const char *errpath)
{
	pid_t pid;

	fflush(NULL); /* the child's exit() flushes stdio: not the parent's pending output a second time */
	pid = fork();

	if (pid != 0)
		return pid;
	{
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		pthread_t t;
		struct ibv_qp *qp[2];

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(2);
		configure(0, 0, 0, pattern);
		for (int i = 0; i < 2; i++)
			if (!(qp[i] = fake_rc_qp(0, 0)) || pthread_create(&t, NULL, forever_poster, qp[i]))
				_exit(3);
		atexit(rt_probe_fini);
		/* both threads posting (a loaded machine may not have run one yet), then a while longer */
		for (int i = 0; i < 10000 && atomic_load(&forever_started) < 2; i++)
			usleep(1000);
		usleep(20000);
		exit(17);
	}
}

static size_t file_lines(const char *path, char *first, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t n = 0;

	first[0] = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (n++ == 0)
			snprintf(first, len, "%s", line);
	fclose(f);
	return n;
}

static void test_early_exit(void **state)
{
	char dir[] = "/tmp/rtune-probe-exit.XXXXXX", pat[256], path[256], errp[256], first[1024];
	struct rt_probe_summary *s;
	struct rt_error err;
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pat, sizeof(pat), "%s/out.%%p.json", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	pid = early_exit_child(pat, errp);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 17);
	snprintf(path, sizeof(path), "%s/out.%ld.json", dir, (long)pid);
	assert_int_equal(rt_probe_read_file(path, &s, &err), 0);
	{
		size_t busy =
			0; /* the child's two QPs (it also knows the parent's, with nothing recorded since the fork) */

		for (size_t i = 0; i < s->n_qps; i++)
			busy += s->qps[i].op[RT_PROBE_OP_SEND].wrs > 0;
		assert_int_equal(busy, 2);
	}
	rt_probe_summary_free(s);
	assert_int_equal(file_lines(errp, first, sizeof(first)), 0);
	unlink(path);

	/* the same with an output that cannot be written: still the application's exit status, one line */
	snprintf(pat, sizeof(pat), "%s/missing/out.%%p.json", dir);
	pid = early_exit_child(pat, errp);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 17);
	assert_int_equal(file_lines(errp, first, sizeof(first)), 1);
	assert_non_null(strstr(first, "rtune-probe: cannot write '"));
	assert_non_null(strstr(first, "(the application was not affected)"));
	unlink(errp);
	assert_int_equal(rmdir(dir), 0); /* nothing else was created */
}

/* A process (here a forked child of a verbs process, which starts from zero) that makes no verbs call writes nothing
 * and prints nothing at exit. */
static void test_no_verbs(void **state)
{
	char dir[] = "/tmp/rtune-probe-noverbs.XXXXXX", pat[256], errp[256], first[1024];
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pat, sizeof(pat), "%s/out.%%p.json", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(2);
		configure(0, 0, 0, pat);
		rt_probe_init();
		rt_probe_fini();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(file_lines(errp, first, sizeof(first)), 0);
	assert_int_equal(unlink(errp), 0);
	assert_int_equal(rmdir(dir), 0); /* no output file */
}

/*
 * The real librtune_probe.so (LD_PRELOAD glue: symbol resolution once across threads, the destructor's final write)
 * in a multi-threaded application on the hardening tests' software device (fakedev.so): exact counts with threads,
 * the file written while threads still post at exit(), nothing at all for an application without verbs calls. The
 * application is built like this test, so in the tsan job any race reported in it fails it. Not with ASan, whose
 * runtime must come before every preloaded library.
 */
#if defined(__SANITIZE_ADDRESS__)
#define RT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RT_ASAN 1
#endif
#endif

static int run_app(const char *mode, const char *dir, char *out, size_t out_len, char *err, size_t err_len,
		   pid_t *pid_out)
{
	char outp[300], errp[300], pat[300];
	int status;
	pid_t pid;

	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	snprintf(pat, sizeof(pat), "%s/p.%%p.json", dir);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600),
		    e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(120);
		setenv("LD_PRELOAD", RT_PROBE_SO " " RT_FAKEDEV_SO, 1);
		setenv("RTUNE_PROBE_OUT", pat, 1);
		setenv("RTUNE_PROBE_SAMPLE", "16", 1);
		execl(RT_STRESS_APP, RT_STRESS_APP, mode, "4", (char *)NULL);
		_exit(121);
	}
	*pid_out = pid;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	file_lines(outp, out, out_len);
	file_lines(errp, err, err_len);
	unlink(outp);
	unlink(errp);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static uint64_t file_send_wrs(const char *dir, pid_t pid)
{
	struct rt_probe_summary *s;
	struct rt_error err;
	char path[300];
	uint64_t n = 0;

	snprintf(path, sizeof(path), "%s/p.%ld.json", dir, (long)pid);
	if (rt_probe_read_file(path, &s, &err)) {
		print_message("reading '%s': %s\n", path, err.text);
		return UINT64_MAX;
	}
	for (size_t i = 0; i < s->n_qps; i++)
		n += s->qps[i].op[RT_PROBE_OP_SEND].wrs;
	rt_probe_summary_free(s);
	unlink(path);
	return n;
}

static void test_preload_app(void **state)
{
	char dir[] = "/tmp/rtune-probe-app.XXXXXX", out[1024] = "", err[1024] = "";
	unsigned long sent = 0;
	pid_t pid = 0;
	int rc;

	(void)state;
#ifdef RT_ASAN
	skip();
#endif
	assert_non_null(mkdtemp(dir));
	/* 4 threads x 5000 sends: the file counts exactly what the application sent */
	rc = run_app("threads", dir, out, sizeof(out), err, sizeof(err), &pid);
	if (rc || err[0])
		print_message("threads: exit %d, stderr: %s\n", rc, err);
	assert_int_equal(rc, 0);
	assert_int_equal(strncmp(out, "sent ", 5), 0);
	sent = strtoul(out + 5, NULL, 10);
	assert_int_equal(sent, 20000);
	assert_int_equal(file_send_wrs(dir, pid), sent);
	assert_string_equal(err, "");

	/* exit() while the threads post: a complete file, the application's exit status */
	rc = run_app("early", dir, out, sizeof(out), err, sizeof(err), &pid);
	if (rc || err[0])
		print_message("early: exit %d, stderr: %s\n", rc, err);
	assert_int_equal(rc, 0);
	sent = file_send_wrs(dir, pid);
	assert_true(sent > 0 && sent != UINT64_MAX);
	assert_string_equal(err, "");

	/* threads but no verbs call: no file, nothing printed */
	rc = run_app("noverbs", dir, out, sizeof(out), err, sizeof(err), &pid);
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	assert_int_equal(rmdir(dir), 0); /* no probe file was written */
}

/*
 * A QP's "inline_ctl" as the reader takes it: the figures, the last RT_INLINE_CTL_MOVES of more moves (oldest first),
 * {"busy": true} as present without figures, a QP without it as no controller (an older probe); a move without its
 * sizes, or inline_ctl not an object, is refused.
 */
static void test_reader_inline_ctl(void **state)
{
	char doc[4096], bad[512];
	struct rt_probe_summary *s = NULL;
	struct rt_error err;
	int n;

	(void)state;
	n = snprintf(doc, sizeof(doc),
		     "{\"schema\":{\"name\":\"rtune-probe\",\"version\":\"1.1\"},\"pid\":77,\"qps\":["
		     "{\"qp_num\":1,\"qp_type\":\"RC\",\"inline_ctl\":{\"start\":32,\"threshold\":96,\"min\":8,"
		     "\"max\":200,\"parked\":true,\"samples\":50,\"explored\":5,\"dropped\":1,\"rounds\":6,"
		     "\"moves_up\":7,\"moves_down\":3,\"reverts\":2,\"moves\":[");
	for (int k = 1; k <= 10; k++)
		n += snprintf(doc + n, sizeof(doc) - (size_t)n,
			      "%s{\"at_sample\":%d,\"from\":%d,\"to\":%d,\"inline_ns\":%d,\"noinline_ns\":%d,"
			      "\"revert\":%s}",
			      k > 1 ? "," : "", k * 10, k, k + 1, 1000 + k, 2000 + k, k == 10 ? "true" : "false");
	snprintf(doc + n, sizeof(doc) - (size_t)n,
		 "]}},{\"qp_num\":2,\"qp_type\":\"UD\",\"inline_ctl\":{\"busy\":true}},{\"qp_num\":3}]}");
	assert_int_equal(rt_probe_parse(doc, strlen(doc), &s, &err), 0);
	assert_int_equal(s->n_qps, 3);
	{
		const struct rt_probe_ctl_summary *c = &s->qps[0].ctl;

		assert_true(c->present && !c->busy && c->parked);
		assert_int_equal(c->start_bytes, 32);
		assert_int_equal(c->threshold_bytes, 96);
		assert_int_equal(c->min_bytes, 8);
		assert_int_equal(c->max_bytes, 200);
		assert_int_equal(c->samples + c->explored + c->dropped + c->rounds, 62);
		assert_int_equal(c->moves_up * 100 + c->moves_down * 10 + c->reverts, 732);
		assert_int_equal(c->n_moves, RT_INLINE_CTL_MOVES);
		for (unsigned k = 0; k < RT_INLINE_CTL_MOVES; k++) { /* moves 3..10 */
			assert_int_equal(c->moves[k].at_sample, (k + 3) * 10);
			assert_int_equal(c->moves[k].from_bytes, k + 3);
			assert_int_equal(c->moves[k].to_bytes, k + 4);
			assert_int_equal(c->moves[k].inline_ns, 1003 + k);
			assert_int_equal(c->moves[k].noinline_ns, 2003 + k);
			assert_int_equal(c->moves[k].revert, k == RT_INLINE_CTL_MOVES - 1);
		}
	}
	assert_int_equal(s->qps[0].pid, 77);
	assert_true(s->qps[1].ctl.present && s->qps[1].ctl.busy);
	assert_int_equal(s->qps[1].ctl.threshold_bytes + s->qps[1].ctl.n_moves, 0);
	assert_false(s->qps[2].ctl.present);
	rt_probe_summary_free(s);

	snprintf(bad, sizeof(bad),
		 "{\"format\":\"rtune-probe\",\"version\":1,\"qps\":[{\"inline_ctl\":{\"moves\":[{\"to\":4}]}}]}");
	assert_int_equal(rt_probe_parse(bad, strlen(bad), &s, &err), EINVAL);
	assert_non_null(strstr(err.text, "inline_ctl.moves"));
	snprintf(bad, sizeof(bad), "{\"format\":\"rtune-probe\",\"version\":1,\"qps\":[{\"inline_ctl\":3}]}");
	assert_int_equal(rt_probe_parse(bad, strlen(bad), &s, &err), EINVAL);
	assert_non_null(strstr(err.text, "'inline_ctl' is not an object"));
}

static void test_reader_rejects(void **state)
{
	struct rt_probe_summary *s;
	struct rt_error err;
	const char *newer = "{\"format\":\"rtune-probe\",\"version\":99,\"qps\":[]}";
	const char *newer2 = "{\"schema\":{\"name\":\"rtune-probe\",\"version\":\"2.0\"},\"qps\":[]}";
	const char *cur = "{\"schema\":{\"name\":\"rtune-probe\",\"version\":\"1.3\"},\"qps\":[]}";
	const char *other = "{\"format\":\"something\",\"version\":1}";
	const char *broken = "{\"format\":\"rtune-probe\",";
	const char *badhist =
		"{\"format\":\"rtune-probe\",\"version\":1,\"qps\":[{\"ops\":{\"send\":{\"hist\":[[1]]}}}]}";

	(void)state;
	assert_int_equal(rt_probe_parse(newer, strlen(newer), &s, &err), ENOTSUP);
	assert_null(s);
	assert_int_equal(rt_probe_parse(newer2, strlen(newer2), &s, &err), ENOTSUP);
	assert_null(s);
	/* the schema convention, a newer minor version: read */
	assert_int_equal(rt_probe_parse(cur, strlen(cur), &s, &err), 0);
	rt_probe_summary_free(s);
	assert_int_equal(rt_probe_parse(other, strlen(other), &s, &err), EINVAL);
	assert_int_equal(rt_probe_parse(broken, strlen(broken), &s, &err), EINVAL);
	assert_non_null(strstr(err.text, "line"));
	assert_int_equal(rt_probe_parse(badhist, strlen(badhist), &s, &err), EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_buckets),
		cmocka_unit_test(test_size_and_batch_max),
		cmocka_unit_test(test_reader_hist_max),
		cmocka_unit_test(test_reader_class_threads),
		cmocka_unit_test(test_slots_exact),
		cmocka_unit_test(test_bad_wr_and_enomem),
		cmocka_unit_test(test_slots_hold_a_size_mix),
		cmocka_unit_test(test_apply_mode),
		cmocka_unit_test(test_apply_profile),
		cmocka_unit_test(test_apply_adaptive),
		cmocka_unit_test(test_apply_ctl_common_path),
		cmocka_unit_test(test_apply_ctl_looks_back_off),
		cmocka_unit_test(test_reader_inline_ctl),
		cmocka_unit_test(test_cache_modes),
		cmocka_unit_test(test_ex_api),
		cmocka_unit_test(test_latency_and_wc_errors),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_output_file),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_stress_churn),
		cmocka_unit_test(test_fork_after_detached_thread),
		cmocka_unit_test(test_fork_while_posting),
		cmocka_unit_test(test_early_exit),
		cmocka_unit_test(test_no_verbs),
		cmocka_unit_test(test_preload_app),
	};
	int ret;

	configure(0, 0, 0, NULL);
	ctx = fake_setup();
	if (!ctx || ctx->ops.post_send == fake_post_send) {
		fprintf(stderr, "the probe did not hook the fake context\n");
		return 1;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rt_probe_summary_free(snap);
	return ret;
}
