// SPDX-License-Identifier: MIT
/*
 * The extended send API's wrappers: for a QP created with send_ops_flags, the ibv_qp_ex wr_* builders are replaced so
 * the WRs built between wr_start and wr_complete are held per thread (struct rtp_pending) and counted at wr_complete
 * like the post_send path counts a chain; apply mode sends a wr_set_sge of a WR flagged IBV_SEND_INLINE within the
 * QP's limit as wr_set_inline_data (x_wr_set_sge). Every wrapper forwards to the provider's function it replaced, with the same arguments, and
 * returns what it returned (wr_complete: errno preserved).
 */
#include "probe_int.h"

#include <errno.h>

/* q, and this thread's slab and entry for it (NULL when they cannot be had: then the call is only forwarded). */
static inline struct rtp_qp *ex_get(struct ibv_qp_ex *qx, struct rtp_slab **so, struct rtp_entry **eo)
{
	struct rtp_slab *s = tls_slab;
	struct rtp_qp *q;
	struct rtp_entry *e = NULL;

	if (likely(rtp_cache_hit(s, qx))) {
		*so = s;
		*eo = s->c_e;
		return s->c_q;
	}
	q = ht_get(&g_ht_qp, (uintptr_t)&qx->qp_base);
	if (!q)
		return NULL;
	if (!s)
		s = rtp_slab_attach();
	if (s) {
		e = rtp_entry_get(s, q);
		if (e)
			rtp_cache_fill(s, qx, q, e);
	}
	*so = s;
	*eo = e;
	return q;
}

/* Counts e's pending WRs as one post (wr_complete succeeded), with timing/t0 for the sampled ones; empties e. */
static void ex_commit(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s, bool timing, uint64_t t0)
{
	struct rtp_rec rc = { .timing = timing };

	for (unsigned i = 0; i < e->npend; i++) {
		struct rtp_pending *p = &e->pend[i];

		record_wr(q, e, s, p->op, p->bytes, p->inl, p->flags & IBV_SEND_SIGNALED, &rc, true);
		if (p->applied)
			CTR_ADD(e->st.apply_inline_set, 1);
	}
	record_batch(e, e->npend);
	if (rc.nsig && g_cfg.sample_every)
		finish_samples(q, s, &rc, t0);
	e->npend = 0;
}

/* Starts a pending WR of opcode class op (the builder call itself is forwarded by the caller). */
static inline struct rtp_pending *ex_begin(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
					   struct ibv_qp_ex *qx, unsigned op)
{
	struct rtp_pending *p;

	if (!e)
		return NULL;
	if (unlikely(e->npend == RTP_EX_PENDING)) {
		/* longer batch than we hold: count these as posted now */
		CTR_ADD(e->st.ex_early_commit, 1);
		ex_commit(q, e, s, false, 0);
	}
	p = &e->pend[e->npend++];
	p->wr_id = qx->wr_id;
	p->flags = qx->wr_flags;
	p->op = (uint8_t)op;
	p->bytes = 0;
	p->inl = 0;
	p->applied = 0;
	return p;
}

/* The WR being built (the last pending one), or NULL. */
static inline struct rtp_pending *ex_cur(struct rtp_entry *e)
{
	return e && e->npend ? &e->pend[e->npend - 1] : NULL;
}

/*
 * Every wr_* wrapper below starts here: q, this thread's slab s and entry e (e NULL: the call is only forwarded); an
 * untracked QP (unreachable: only hooked QPs carry these wrappers) is counted and the call dropped.
 */
#define EX_PROLOGUE(qx)                               \
	struct rtp_slab *s;                           \
	struct rtp_entry *e;                          \
	struct rtp_qp *q = ex_get((qx), &s, &e);      \
	if (unlikely(!q)) {                           \
		atomic_fetch_add(&g_ex_untracked, 1); \
		return;                               \
	}

/* wr_start: a new batch, its pending list starts empty. */
static void x_wr_start(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	q->xo.wr_start(qx);
	if (e)
		e->npend = 0;
}

/* wr_complete: posts the batch; on success counts it, else counts the failure by cause. Returns the provider's. */
static int x_wr_complete(struct ibv_qp_ex *qx)
{
	struct rtp_slab *s;
	struct rtp_entry *e;
	struct rtp_qp *q = ex_get(qx, &s, &e);
	bool timing = false;
	uint64_t t0 = 0;
	int ret, err;

	if (unlikely(!q)) {
		atomic_fetch_add(&g_ex_untracked, 1);
		return EINVAL; /* unreachable: only hooked QPs carry this wrapper */
	}
	if (e && g_cfg.sample_every) {
		unsigned nsig = 0;

		for (unsigned i = 0; i < e->npend; i++)
			if (q->sq_sig_all || (e->pend[i].flags & IBV_SEND_SIGNALED))
				nsig++;
		if (nsig && s->sample_ctr + nsig >= g_cfg.sample_every) {
			timing = true;
			t0 = now_ns();
		}
	}
	ret = q->xo.wr_complete(qx);
	err = errno;
	if (e) {
		if (ret == 0) {
			ex_commit(q, e, s, timing, t0);
		} else {
			bool too_big = false;

			for (unsigned i = 0; i < e->npend; i++)
				if (e->pend[i].inl && e->pend[i].bytes > q->max_inline_data)
					too_big = true;
			CTR_ADD(e->st.ex_complete_failed, 1);
			CTR_ADD(e->st.wrs_not_posted, e->npend);
			if ((ret < 0 ? -ret : ret) == ENOMEM)
				CTR_ADD(*(too_big ? &e->st.err_inline_too_big : &e->st.err_sq_full), 1);
			else
				rtp_classify_error(q, e, ret, NULL);
			e->npend = 0;
		}
	}
	errno = err;
	return ret;
}

/* wr_abort: the batch is dropped by the provider and here (counted as aborted). */
static void x_wr_abort(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	q->xo.wr_abort(qx);
	if (e) {
		CTR_ADD(e->st.ex_aborted, 1);
		e->npend = 0;
	}
}

/* The opcode builders: start a pending WR of their opcode class, then forward. */
static void x_wr_send(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND);
	q->xo.wr_send(qx);
}

static void x_wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND_IMM);
	q->xo.wr_send_imm(qx, imm);
}

static void x_wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND_INV);
	q->xo.wr_send_inv(qx, rkey);
}

static void x_wr_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_send_tso(qx, hdr, hdr_sz, mss);
}

static void x_wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_WRITE);
	q->xo.wr_rdma_write(qx, rkey, raddr);
}

static void x_wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_WRITE_IMM);
	q->xo.wr_rdma_write_imm(qx, rkey, raddr, imm);
}

static void x_wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_READ);
	q->xo.wr_rdma_read(qx, rkey, raddr);
}

static void x_wr_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, uint64_t cmp, uint64_t swp)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_cmp_swp(qx, rkey, raddr, cmp, swp);
}

static void x_wr_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_fetch_add(qx, rkey, raddr, add);
}

static void x_wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, const void *data)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_write(qx, rkey, raddr, data);
}

static void x_wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_local_inv(qx, rkey);
}

static void x_wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_bind_mw(qx, mw, rkey, bi);
}

/*
 * The data setters: record the pending WR's size (and inline). Apply mode turns a wr_set_sge within the QP's limit
 * into wr_set_inline_data only for a WR whose wr_flags had IBV_SEND_INLINE when its opcode was called: a provider may
 * take the flag there, before the size is known (rxe completes a WR inlined without it with a local QP operation
 * error), so the application's own flag decides on this API; it sees the raised max_inline_data for that
 * (w_create_qp_ex), and its flag with an SGE (ibv_rc_pingpong -N) is sent as wr_set_inline_data.
 */
static void x_wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		p->bytes = length;
		if (q->apply_limit && (p->flags & IBV_SEND_INLINE) && length && length <= apply_lim_of(q, p->op) &&
		    rtp_op_inlinable(p->op) && q->xo.wr_set_inline_data) {
			p->inl = 1;
			p->applied = 1;
			q->xo.wr_set_inline_data(qx, (void *)(uintptr_t)addr, length);
			return;
		}
	}
	q->xo.wr_set_sge(qx, lkey, addr, length);
}

static void x_wr_set_sge_list(struct ibv_qp_ex *qx, size_t num_sge, const struct ibv_sge *sg)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		uint64_t b = 0;

		for (size_t i = 0; i < num_sge; i++)
			b += sg[i].length;
		p->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	}
	q->xo.wr_set_sge_list(qx, num_sge, sg);
}

static void x_wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t length)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		p->bytes = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length;
		p->inl = 1;
	}
	q->xo.wr_set_inline_data(qx, addr, length);
}

static void x_wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t num_buf, const struct ibv_data_buf *buf)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		uint64_t b = 0;

		for (size_t i = 0; i < num_buf; i++)
			b += buf[i].length;
		p->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
		p->inl = 1;
	}
	q->xo.wr_set_inline_data_list(qx, num_buf, buf);
}

/* Installs the wr_* wrappers on qx, remembering any pointer that is not already ours (under g_lock). */
void rtp_qpx_wrap(struct rtp_qp *q, struct ibv_qp_ex *qx)
{
	q->qpx = qx;
#define WRAP(f)                                \
	do {                                   \
		if (qx->f && qx->f != x_##f) { \
			q->xo.f = qx->f;       \
			qx->f = x_##f;         \
		}                              \
	} while (0)
	WRAP(wr_atomic_cmp_swp);
	WRAP(wr_atomic_fetch_add);
	WRAP(wr_bind_mw);
	WRAP(wr_local_inv);
	WRAP(wr_rdma_read);
	WRAP(wr_rdma_write);
	WRAP(wr_rdma_write_imm);
	WRAP(wr_send);
	WRAP(wr_send_imm);
	WRAP(wr_send_inv);
	WRAP(wr_send_tso);
	WRAP(wr_set_inline_data);
	WRAP(wr_set_inline_data_list);
	WRAP(wr_set_sge);
	WRAP(wr_set_sge_list);
	WRAP(wr_start);
	WRAP(wr_complete);
	WRAP(wr_abort);
	WRAP(wr_atomic_write);
#undef WRAP
}
