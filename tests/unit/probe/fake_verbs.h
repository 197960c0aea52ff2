/* SPDX-License-Identifier: MIT */
/*
 * A hand-built verbs "provider" for the probe's host tests and benchmark: a verbs_context whose ops.post_send,
 * ops.poll_cq and create_qp_ex are plain functions, QPs that are ibv_qp_ex with logging wr_* functions, and fakes of
 * the exported verbs installed as the probe's "real" functions. Header-only (static) so tests and bench share it.
 */
#ifndef RT_FAKE_VERBS_H
#define RT_FAKE_VERBS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "probe_core.h"

#define FAKE_MAX_INLINE 256u /* the fake device refuses larger max_inline_data */
#define FAKE_LOG 8192u
#define FAKE_ERRNO_MARK 4242 /* errno value the fake leaves behind, to check it survives the probe */

struct fake_state {
	struct verbs_context vctx; /* ends with the struct ibv_context the app sees */
	struct ibv_device dev;
	struct ibv_pd pd;
	uint32_t next_qpn;
	/* post_send behaviour */
	int fail_at; /* index in the chain where post_send fails, -1 = never */
	int fail_ret;
	int leave_bad_unset;
	/* log of what reached the "device" */
	unsigned n_log;
	unsigned log_flags[FAKE_LOG];
	uint32_t log_bytes[FAKE_LOG];
	struct ibv_send_wr *log_ptr[FAKE_LOG];
	struct ibv_send_wr last_wr; /* with keep_last_wr: a copy of the last WR that reached the "device" */
	bool keep_last_wr;	    /* set by a single-threaded test only: posting threads would race on it */
	/* extended API log */
	unsigned ex_sends, ex_writes, ex_inline, ex_sge, ex_complete, ex_complete2, ex_abort;
	/* completions handed out by poll_cq */
	unsigned n_wc;
	struct ibv_wc wc[256];
	int rewrite_on_rts;
	/* query_qp: the max_inline_data it reports in both caps, and its return value (nonzero: fails, writes nothing) */
	uint32_t query_inline;
	int query_ret;
	/* a cost model: post_send spins this long per WR (NULL = none), for the adaptive apply mode's test */
	uint64_t (*cost_ns)(uint32_t bytes, bool inlined);
};

static struct fake_state fk;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int i = 0;

	(void)qp;
	for (; wr; wr = wr->next, i++) {
		uint64_t b = 0;

		if (i == fk.fail_at) {
			if (!fk.leave_bad_unset)
				*bad = wr;
			errno = FAKE_ERRNO_MARK;
			return fk.fail_ret;
		}
		for (int k = 0; k < wr->num_sge; k++)
			b += wr->sg_list[k].length;
		unsigned idx = __atomic_fetch_add(&fk.n_log, 1, __ATOMIC_RELAXED); /* posting threads may run at once */

		if (idx < FAKE_LOG) {
			fk.log_flags[idx] = wr->send_flags;
			fk.log_bytes[idx] = (uint32_t)b;
			fk.log_ptr[idx] = wr;
			if (fk.keep_last_wr)
				fk.last_wr = *wr;
		}
		if (fk.cost_ns) {
			struct timespec t0, t;
			uint64_t ns = fk.cost_ns((uint32_t)b, wr->send_flags & IBV_SEND_INLINE), d;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			do {
				clock_gettime(CLOCK_MONOTONIC, &t);
				d = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec -
				    (uint64_t)t0.tv_nsec;
			} while (d < ns);
		}
	}
	errno = FAKE_ERRNO_MARK;
	return 0;
}

/* The cheapest possible provider, for the benchmark's bare baseline. */
static inline int fake_post_send_nop(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	__asm__ volatile("" : : "r"(wr) : "memory");
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;

	(void)cq;
	while (k < n && fk.n_wc) {
		wc[k++] = fk.wc[0];
		memmove(fk.wc, fk.wc + 1, (fk.n_wc - 1) * sizeof(fk.wc[0]));
		fk.n_wc--;
	}
	errno = FAKE_ERRNO_MARK;
	return k;
}

static inline void fx_send(struct ibv_qp_ex *qx)
{
	(void)qx;
	fk.ex_sends++;
}
static inline void fx_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t ra)
{
	(void)qx;
	(void)rkey;
	(void)ra;
	fk.ex_writes++;
}
static inline void fx_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t a, uint32_t l)
{
	(void)qx;
	(void)lkey;
	(void)a;
	(void)l;
	fk.ex_sge++;
}
static inline void fx_inline(struct ibv_qp_ex *qx, void *a, size_t l)
{
	(void)qx;
	(void)a;
	(void)l;
	fk.ex_inline++;
}
static inline void fx_start(struct ibv_qp_ex *qx)
{
	(void)qx;
}
static inline int fx_complete(struct ibv_qp_ex *qx)
{
	(void)qx;
	fk.ex_complete++;
	errno = FAKE_ERRNO_MARK;
	return fk.fail_ret;
}
static inline int fx_complete2(struct ibv_qp_ex *qx)
{
	(void)qx;
	fk.ex_complete2++;
	return 0;
}
static inline void fx_abort(struct ibv_qp_ex *qx)
{
	(void)qx;
	fk.ex_abort++;
}

static inline struct ibv_qp *fake_make_qp(struct ibv_context *ctx, struct ibv_pd *pd, enum ibv_qp_type t,
					  struct ibv_qp_cap *cap)
{
	struct ibv_qp_ex *qx;

	if (cap->max_inline_data > FAKE_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	qx = calloc(1, sizeof(*qx));
	if (!qx)
		return NULL;
	qx->qp_base.context = ctx;
	qx->qp_base.pd = pd;
	qx->qp_base.qp_num = fk.next_qpn++;
	qx->qp_base.qp_type = t;
	qx->qp_base.state = IBV_QPS_RESET;
	if (cap->max_inline_data < 16)
		cap->max_inline_data = 16; /* providers round up and write the real value back */
	if (!cap->max_send_sge)
		cap->max_send_sge = 1;
	qx->wr_send = fx_send;
	qx->wr_rdma_write = fx_write;
	qx->wr_set_sge = fx_sge;
	qx->wr_set_inline_data = fx_inline;
	qx->wr_start = fx_start;
	qx->wr_complete = fx_complete;
	qx->wr_abort = fx_abort;
	return &qx->qp_base;
}

static inline struct ibv_qp *fake_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	return fake_make_qp(ctx, attr->pd, attr->qp_type, &attr->cap);
}

static inline struct ibv_context *fake_open_device(struct ibv_device *dev)
{
	struct ibv_context *ctx = &fk.vctx.context;

	memset(&fk.vctx, 0, sizeof(fk.vctx));
	fk.vctx.sz = sizeof(fk.vctx);
	fk.vctx.create_qp_ex = fake_create_qp_ex;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->device = dev;
	ctx->ops.post_send = fake_post_send;
	ctx->ops.poll_cq = fake_poll_cq;
	fk.pd.context = ctx;
	errno = FAKE_ERRNO_MARK;
	return ctx;
}

static int fake_close_device(struct ibv_context *ctx)
{
	(void)ctx;
	return 0;
}

static inline struct ibv_qp *fake_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return fake_make_qp(pd->context, pd, attr->qp_type, &attr->cap);
}

static int fake_destroy_qp(struct ibv_qp *qp)
{
	free(qp);
	return 0;
}

static inline struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
					    struct ibv_comp_channel *ch, int vec)
{
	struct ibv_cq *cq = calloc(1, sizeof(*cq));

	(void)ch;
	(void)vec;
	if (cq) {
		cq->context = ctx;
		cq->cqe = cqe;
		cq->cq_context = cq_context;
	}
	return cq;
}

static int fake_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	return 0;
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTS && fk.rewrite_on_rts)
		((struct ibv_qp_ex *)qp)->wr_complete =
			fx_complete2; /* as providers that switch to a fast path at RTS */
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

static int fake_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	(void)qp;
	(void)mask;
	errno = FAKE_ERRNO_MARK;
	if (fk.query_ret)
		return fk.query_ret;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->cap.max_send_wr = init->cap.max_send_wr = 64;
	attr->cap.max_inline_data = init->cap.max_inline_data = fk.query_inline;
	return 0;
}

static inline struct ibv_qp_ex *fake_qp_to_qp_ex(struct ibv_qp *qp)
{
	return (struct ibv_qp_ex *)qp;
}

/* Installs the fakes as the probe's real functions and opens the fake device through the probe. */
static inline struct ibv_context *fake_setup(void)
{
	rt_probe_real = (struct rt_probe_real){
		.open_device = fake_open_device,
		.close_device = fake_close_device,
		.create_qp = fake_create_qp,
		.destroy_qp = fake_destroy_qp,
		.create_cq = fake_create_cq,
		.destroy_cq = fake_destroy_cq,
		.modify_qp = fake_modify_qp,
		.query_qp = fake_query_qp,
		.qp_to_qp_ex = fake_qp_to_qp_ex,
	};
	strcpy(fk.dev.name, "fake0");
	fk.next_qpn = 100;
	fk.fail_at = -1;
	return rt_probe_open_device(&fk.dev);
}

static inline struct ibv_qp *fake_rc_qp(uint32_t max_inline, int sq_sig_all)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = sq_sig_all,
		.cap = { .max_send_wr = 128,
			 .max_recv_wr = 128,
			 .max_send_sge = 2,
			 .max_recv_sge = 1,
			 .max_inline_data = max_inline },
	};

	return rt_probe_create_qp(&fk.pd, &a);
}

#endif
