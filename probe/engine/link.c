// SPDX-License-Identifier: MIT
/*
 * One side of a calibration link (see rt_link.h): creating and connecting its QPs, posting, polling, the responder
 * state machine shared by the loopback thread and `rtune serve`, and the bounded rdma_cm helpers.
 */
#include "rt_link.h"
#include "rt_efa.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rt_ep_qp_init_attr(const struct rt_ep *ep, struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->send_cq = ep->scq;
	a->recv_cq = ep->rcq;
	a->qp_type = IBV_QPT_RC;
	a->sq_sig_all = 0;
	a->cap.max_send_wr = ep->cfg.sq_depth;
	a->cap.max_recv_wr = ep->cfg.rq_depth;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->cap.max_inline_data = ep->cfg.max_inline;
}

int rt_ep_create_ud(struct rt_ep *ep, const struct rt_ep_cfg *cfg, uint32_t ud_max_inline, struct rt_error *err)
{
	struct ibv_qp_init_attr a;
	int rc;

	ep->cfg.ud = true;
	ep->cfg.ud_max_inline = ud_max_inline;
	ep->ud_scq = ibv_create_cq(ep->ctx, (int)cfg->sq_depth + 16, NULL, NULL, 0);
	ep->ud_rcq = ibv_create_cq(ep->ctx, (int)cfg->rq_depth + 16, NULL, NULL, 0);
	if (!ep->ud_scq || !ep->ud_rcq) {
		rc = errno ? errno : ENOMEM;
		return rt_error_set(err, rc, "cannot create a ud cq: %s", strerror(rc));
	}
	memset(&a, 0, sizeof(a));
	a.send_cq = ep->ud_scq;
	a.recv_cq = ep->ud_rcq;
	a.qp_type = IBV_QPT_UD;
	a.cap.max_send_wr = cfg->sq_depth;
	a.cap.max_recv_wr = cfg->rq_depth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = ud_max_inline;
	ep->ud_qp = ibv_create_qp(ep->pd, &a);
	if (!ep->ud_qp) {
		rc = errno ? errno : ENOMEM;
		return rt_error_set(err, rc, "cannot create a ud qp (max inline %u): %s", ud_max_inline, strerror(rc));
	}
	return 0;
}

void rt_ep_dgram_use(struct rt_ep *ep, bool srd)
{
	struct rt_dgram cur = { .scq = ep->ud_scq,
				.rcq = ep->ud_rcq,
				.qp = ep->ud_qp,
				.ah = ep->ud_ah,
				.rqpn = ep->ud_rqpn,
				.max_inline = ep->cfg.ud_max_inline,
				.sq_out = ep->ud_sq_out,
				.rq_posted = ep->ud_rq_posted };

	if (ep->dg_srd == srd)
		return;
	ep->ud_scq = ep->dg_other.scq;
	ep->ud_rcq = ep->dg_other.rcq;
	ep->ud_qp = ep->dg_other.qp;
	ep->ud_ah = ep->dg_other.ah;
	ep->ud_rqpn = ep->dg_other.rqpn;
	ep->cfg.ud_max_inline = ep->dg_other.max_inline;
	ep->ud_sq_out = ep->dg_other.sq_out;
	ep->ud_rq_posted = ep->dg_other.rq_posted;
	ep->dg_other = cur;
	ep->dg_srd = srd;
}

struct ibv_qp *rt_ep_dgram_qp(const struct rt_ep *ep, bool srd)
{
	return ep->dg_srd == srd ? ep->ud_qp : ep->dg_other.qp;
}

const char *rt_ep_dgram_name(const struct rt_ep *ep)
{
	return ep->dg_srd ? "srd" : "ud";
}

int rt_ep_create_srd(struct rt_ep *ep, const struct rt_ep_cfg *cfg, uint32_t max_inline, bool rnr_retry,
		     struct rt_error *err)
{
	struct ibv_qp_init_attr a;
	int rc = 0;

	/* created in the ud_* fields, then swapped out again: the UD QP stays the one in use */
	rt_ep_dgram_use(ep, true);
	ep->srd_rnr_retry = rnr_retry;
	ep->cfg.ud_max_inline = max_inline;
	ep->ud_scq = ibv_create_cq(ep->ctx, (int)cfg->sq_depth + 16, NULL, NULL, 0);
	ep->ud_rcq = ibv_create_cq(ep->ctx, (int)cfg->rq_depth + 16, NULL, NULL, 0);
	if (!ep->ud_scq || !ep->ud_rcq) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot create an srd cq: %s", strerror(rc));
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.send_cq = ep->ud_scq;
	a.recv_cq = ep->ud_rcq;
	a.cap.max_send_wr = cfg->sq_depth;
	a.cap.max_recv_wr = cfg->rq_depth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = max_inline;
	ep->ud_qp = rt_efa_create_srd_qp(ep->pd, &a);
	if (!ep->ud_qp) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot create an srd qp (efadv_create_qp_ex, max inline %u): %s", max_inline,
			     rc == ENOENT ? "no efadv (libefa.so.1)" : strerror(rc));
	}
out:
	rt_ep_dgram_use(ep, false);
	return rc;
}

int rt_ep_create(struct rt_ep *ep, struct ibv_context *ctx, const struct rt_ep_cfg *cfg, struct rt_error *err)
{
	struct ibv_qp_init_attr a;
	long pg = sysconf(_SC_PAGESIZE);
	int rc;

	memset(ep, 0, sizeof(*ep));
	ep->ctx = ctx;
	ep->cfg = *cfg;
	ep->pd = ibv_alloc_pd(ctx);
	if (!ep->pd) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot allocate a protection domain: %s", strerror(rc));
		goto fail;
	}
	ep->chan = ibv_create_comp_channel(ctx);
	if (!ep->chan) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot create a completion channel: %s", strerror(rc));
		goto fail;
	}
	ep->scq = ibv_create_cq(ctx, (int)cfg->sq_depth + 16, NULL, ep->chan, 0);
	if (!ep->scq) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot create the send cq of %u entries: %s", cfg->sq_depth + 16, strerror(rc));
		goto fail;
	}
	ep->rcq = ibv_create_cq(ctx, (int)cfg->rq_depth + 16, NULL, NULL, 0);
	if (!ep->rcq) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot create the receive cq of %u entries: %s", cfg->rq_depth + 16,
			     strerror(rc));
		goto fail;
	}
	ep->buf_len = ((size_t)cfg->max_msg * 2 + RT_DATA_OFF + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	if (posix_memalign((void **)&ep->buf, (size_t)pg, ep->buf_len)) {
		ep->buf = NULL;
		rc = ENOMEM;
		rt_error_set(err, rc, "cannot allocate a %zu-byte buffer", ep->buf_len);
		goto fail;
	}
	memset(ep->buf, 0, ep->buf_len);
	ep->mr = ibv_reg_mr(ep->pd, ep->buf, ep->buf_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!ep->mr) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot register a %zu-byte memory region: %s", ep->buf_len, strerror(rc));
		goto fail;
	}
	if (cfg->rc_qp) {
		rt_ep_qp_init_attr(ep, &a);
		ep->qp = ibv_create_qp(ep->pd, &a);
		if (!ep->qp) {
			rc = errno ? errno : ENOMEM;
			rt_error_set(err, rc, "cannot create an rc qp (send queue %u, max inline %u): %s",
				     cfg->sq_depth, cfg->max_inline, strerror(rc));
			goto fail;
		}
	}
	if (cfg->ud) {
		rc = rt_ep_create_ud(ep, cfg, cfg->ud_max_inline, err);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	rt_ep_destroy(ep);
	return rc;
}

void rt_ep_destroy(struct rt_ep *ep)
{
	/* the datagram QP not in use (SRD beside UD) first */
	if (ep->dg_other.ah)
		ibv_destroy_ah(ep->dg_other.ah);
	if (ep->dg_other.qp)
		ibv_destroy_qp(ep->dg_other.qp);
	if (ep->dg_other.scq)
		ibv_destroy_cq(ep->dg_other.scq);
	if (ep->dg_other.rcq)
		ibv_destroy_cq(ep->dg_other.rcq);
	if (ep->ud_ah)
		ibv_destroy_ah(ep->ud_ah);
	if (ep->ud_qp)
		ibv_destroy_qp(ep->ud_qp);
	if (ep->qp) {
		if (ep->cm_id)
			rdma_destroy_qp(ep->cm_id);
		else
			ibv_destroy_qp(ep->qp);
	}
	if (ep->ud_scq)
		ibv_destroy_cq(ep->ud_scq);
	if (ep->ud_rcq)
		ibv_destroy_cq(ep->ud_rcq);
	if (ep->scq)
		ibv_destroy_cq(ep->scq);
	if (ep->rcq)
		ibv_destroy_cq(ep->rcq);
	if (ep->chan)
		ibv_destroy_comp_channel(ep->chan);
	if (ep->mr)
		ibv_dereg_mr(ep->mr);
	free(ep->buf);
	if (ep->pd)
		ibv_dealloc_pd(ep->pd);
	memset(ep, 0, sizeof(*ep));
}

static void fill_ah(struct ibv_ah_attr *ah, const struct rt_addr *addr)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = (uint8_t)addr->port;
	ah->dlid = addr->lid;
	ah->sl = addr->sl;
	if (addr->gid_index >= 0) {
		ah->is_global = 1;
		ah->grh.dgid = addr->gid;
		ah->grh.sgid_index = (uint8_t)addr->gid_index;
		ah->grh.hop_limit = 64;
		ah->grh.traffic_class = addr->tclass;
	}
}

int rt_ep_rc_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err)
{
	struct ibv_qp_attr at;
	int rc;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.pkey_index = addr->pkey_index;
	at.port_num = (uint8_t)addr->port;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	rc = ibv_modify_qp(ep->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rt_error_set(err, rc, "cannot move the rc qp to INIT (pkey index %u): %s", addr->pkey_index,
				    strerror(rc));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = addr->mtu;
	at.dest_qp_num = rqpn;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 1; /* 0.01 ms */
	fill_ah(&at.ah_attr, addr);
	rc = ibv_modify_qp(ep->qp, &at,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rt_error_set(err, rc, "cannot move the rc qp to RTR (gid index %d): %s", addr->gid_index,
				    strerror(rc));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	at.timeout = 14; /* 4.096 us * 2^14 = 67 ms per try */
	at.retry_cnt = 7;
	at.rnr_retry = 7; /* infinite: a sink that lags behind slows the sender, never fails it */
	at.max_rd_atomic = 1;
	rc = ibv_modify_qp(ep->qp, &at,
			   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		return rt_error_set(err, rc, "cannot move the rc qp to RTS: %s", strerror(rc));
	return 0;
}

int rt_ep_ud_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err)
{
	struct ibv_qp_attr at;
	struct ibv_ah_attr ah;
	int rc;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.pkey_index = addr->pkey_index;
	at.port_num = (uint8_t)addr->port;
	at.qkey = RT_QKEY;
	rc = ibv_modify_qp(ep->ud_qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (rc)
		return rt_error_set(err, rc, "cannot move the %s qp to INIT (pkey index %u): %s", rt_ep_dgram_name(ep),
				    addr->pkey_index, strerror(rc));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(ep->ud_qp, &at, IBV_QP_STATE);
	if (rc)
		return rt_error_set(err, rc, "cannot move the %s qp to RTR: %s", rt_ep_dgram_name(ep), strerror(rc));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	/* SRD is reliable: a send the receiver has no buffer for is retried; 7 = without limit, like the RC QPs */
	at.rnr_retry = 7;
	rc = ibv_modify_qp(ep->ud_qp, &at,
			   IBV_QP_STATE | IBV_QP_SQ_PSN | (ep->dg_srd && ep->srd_rnr_retry ? IBV_QP_RNR_RETRY : 0));
	if (rc)
		return rt_error_set(err, rc, "cannot move the %s qp to RTS: %s", rt_ep_dgram_name(ep), strerror(rc));
	fill_ah(&ah, addr);
	ep->ud_ah = ibv_create_ah(ep->pd, &ah);
	if (!ep->ud_ah) {
		rc = errno ? errno : EINVAL;
		return rt_error_set(err, rc, "cannot create an address handle (gid index %d): %s", addr->gid_index,
				    strerror(rc));
	}
	ep->ud_rqpn = rqpn;
	return 0;
}

int rt_ep_srd_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err)
{
	int rc;

	rt_ep_dgram_use(ep, true);
	rc = ep->ud_qp ? rt_ep_ud_connect(ep, addr, rqpn, err) : rt_error_set(err, EINVAL, "no srd qp to connect");
	if (!rc)
		rc = rt_ep_fill_recv(ep, true, err);
	rt_ep_dgram_use(ep, false);
	return rc;
}

int rt_ep_fill_recv(struct rt_ep *ep, bool ud, struct rt_error *err)
{
	uint32_t *posted = ud ? &ep->ud_rq_posted : &ep->rq_posted;
	struct ibv_qp *qp = ud ? ep->ud_qp : ep->qp;

	if (!qp)
		return 0; /* no such QP (a device without RC): nothing to receive on */
	while (*posted < ep->cfg.rq_depth) {
		struct ibv_recv_wr wr[32], *bad;
		struct ibv_sge sge[32];
		uint32_t n = ep->cfg.rq_depth - *posted;
		int rc;

		if (n > 32)
			n = 32;
		for (uint32_t i = 0; i < n; i++) {
			/* UD receives start with the 40-byte GRH; SRD's carry the payload alone */
			uint32_t grh = ud && !ep->dg_srd ? RT_GRH_BYTES : 0;

			sge[i].addr = rt_ep_data_addr(ep) - grh;
			sge[i].length = ep->cfg.max_msg + grh;
			sge[i].lkey = ep->mr->lkey;
			wr[i].wr_id = 0;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		}
		rc = ibv_post_recv(qp, wr, &bad);
		if (rc)
			return rt_error_set(err, rc, "cannot post receives: %s", strerror(rc));
		*posted += n;
	}
	return 0;
}

int rt_ep_post(struct rt_ep *ep, bool ud, enum rt_opcode op, uint32_t size, bool inl, bool signaled, uint64_t retires,
	       uint32_t imm_cmd)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int rc;

	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)rt_ep_send_area(ep);
	sge.length = size;
	sge.lkey = ep->mr->lkey;
	wr.wr_id = retires;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (inl ? IBV_SEND_INLINE : 0);
	if (imm_cmd) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(imm_cmd);
		wr.num_sge = 0;
		wr.send_flags &= ~(unsigned)IBV_SEND_INLINE;
	} else if (op == RT_OP_WRITE) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = ep->raddr;
		wr.wr.rdma.rkey = ep->rkey;
	} else {
		wr.opcode = IBV_WR_SEND;
	}
	if (ud) {
		wr.wr.ud.ah = ep->ud_ah;
		wr.wr.ud.remote_qpn = ep->ud_rqpn;
		wr.wr.ud.remote_qkey = RT_QKEY;
	}
	rc = ibv_post_send(ud ? ep->ud_qp : ep->qp, &wr, &bad);
	if (rc == 0)
		(*(ud ? &ep->ud_sq_out : &ep->sq_out))++;
	return rc;
}

int rt_ep_post_list(struct rt_ep *ep, enum rt_opcode op, uint32_t size, bool inl, uint32_t k, uint32_t n_sig,
		    uint32_t *since)
{
	struct ibv_send_wr wr[RT_POST_LIST_MAX], *bad = NULL;
	struct ibv_sge sge;
	int rc;

	if (k == 0 || k > RT_POST_LIST_MAX)
		return EINVAL;
	sge.addr = (uintptr_t)rt_ep_send_area(ep);
	sge.length = size;
	sge.lkey = ep->mr->lkey;
	memset(wr, 0, k * sizeof(wr[0]));
	for (uint32_t i = 0, s = *since; i < k; i++) {
		bool sig = s + 1 == n_sig;

		wr[i].wr_id = sig ? n_sig : 0;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = op == RT_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
		wr[i].send_flags = (sig ? IBV_SEND_SIGNALED : 0) | (inl ? IBV_SEND_INLINE : 0);
		wr[i].wr.rdma.remote_addr = op == RT_OP_WRITE ? ep->raddr : 0;
		wr[i].wr.rdma.rkey = op == RT_OP_WRITE ? ep->rkey : 0;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		s = sig ? 0 : s + 1;
	}
	rc = ibv_post_send(ep->qp, wr, &bad);
	/* the WRs before *bad were posted: count them (and their signaling position) even when the list failed */
	for (uint32_t i = 0; i < k && &wr[i] != bad; i++) {
		ep->sq_out++;
		*since = wr[i].send_flags & IBV_SEND_SIGNALED ? 0 : *since + 1;
	}
	return rc;
}

int rt_wc_error(const struct ibv_wc *wc, const char *what, struct rt_error *err)
{
	const char *why = wc->status == IBV_WC_RNR_RETRY_EXC_ERR
				  ? ": receiver not ready, the peer had no receive posted and the RNR retries ran out"
			  : wc->status == IBV_WC_RETRY_EXC_ERR
				  ? ": the peer did not acknowledge within the transport retries"
				  : "";

	return rt_error_set(err, EIO, "completion error on the %s: %s (status %d, vendor error 0x%x)%s", what,
			    ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err, why);
}

int rt_post_error(struct rt_ep *ep, bool ud, int rc, enum rt_opcode op, uint32_t size, bool inl, struct rt_error *err)
{
	uint32_t out = ud ? ep->ud_sq_out : ep->sq_out, lim = ud ? ep->cfg.ud_max_inline : ep->cfg.max_inline;
	char hint[160] = "";

	/* a refused post after a failed WR (the QP is in error): the error completion is the cause */
	if (rc != ENOMEM && rt_ep_poll_send(ep, ud, err) < 0)
		return EIO;
	if (rc != ENOMEM || out >= ep->cfg.sq_depth)
		return rt_error_set(err, rc, "ibv_post_send failed for %s %s %u bytes%s: %s", rt_opcode_name(op),
				    ud ? rt_ep_dgram_name(ep) : "rc", size, inl ? " inline" : "", strerror(rc));
	if (inl)
		snprintf(hint, sizeof(hint),
			 " (the qp was created with max inline data %u; mlx5 answers ENOMEM to an inline size its WQE "
			 "cannot hold)",
			 lim);
	return rt_error_set(
		err, ENOMEM,
		"ibv_post_send refused %s %s %u bytes%s with ENOMEM while %u of %u send WRs were outstanding: "
		"not a full send queue%s",
		rt_opcode_name(op), ud ? rt_ep_dgram_name(ep) : "rc", size, inl ? " inline" : "", out, ep->cfg.sq_depth,
		hint);
}

int rt_ep_poll_send(struct rt_ep *ep, bool ud, struct rt_error *err)
{
	struct ibv_wc wc[16];
	uint32_t *out = ud ? &ep->ud_sq_out : &ep->sq_out;
	int n = ibv_poll_cq(ud ? ep->ud_scq : ep->scq, 16, wc);

	if (n < 0)
		return -rt_error_set(err, EIO, "cannot poll the send cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return -rt_wc_error(&wc[i],
					    ud ? (ep->dg_srd ? "srd send queue" : "ud send queue") : "send queue", err);
		*out = wc[i].wr_id > *out ? 0 : *out - (uint32_t)wc[i].wr_id;
	}
	return n;
}

/* responder: room for one more signaled send (bounded spin; the peer acks quickly or the QP errs) */
static int resp_room(struct rt_ep *ep, bool ud, struct rt_error *err)
{
	uint64_t t0 = rt_clock_mono_ns();

	if (!(ud ? ep->ud_qp : ep->qp)) {
		rt_error_set(err, EINVAL, "no %s qp to send on", ud ? rt_ep_dgram_name(ep) : "rc");
		return EINVAL;
	}
	while ((ud ? ep->ud_sq_out : ep->sq_out) + 1 >= ep->cfg.sq_depth) {
		int n = rt_ep_poll_send(ep, ud, err);

		if (n < 0)
			return -n;
		if (n > 0)
			t0 = rt_clock_mono_ns();
		else if (rt_clock_mono_ns() - t0 > 10000000000ull)
			return rt_error_set(err, ETIMEDOUT, "send queue did not drain within 10 s");
	}
	return 0;
}

static int resp_send(struct rt_resp *r, bool ud, enum rt_opcode op, uint32_t size, bool inl, uint32_t imm,
		     struct rt_error *err)
{
	int rc = resp_room(r->ep, ud, err);

	if (rc)
		return rc;
	rc = rt_ep_post(r->ep, ud, op, size, inl, true, 1, imm);
	if (rc)
		return rt_post_error(r->ep, ud, rc, op, size, inl && !imm, err);
	return 0;
}

/*
 * Before a phase change takes effect: the UD messages of the previous phase still in the receive CQ are sunk, so they
 * are not answered as ping-pongs of the new one (a flood of replies the client never asked for, which fills both
 * queues). Returns 0 or an errno with err.
 */
static int resp_sink_ud(struct rt_resp *r, struct rt_error *err)
{
	struct rt_ep *ep = r->ep;
	struct ibv_wc wc[16];
	int n;

	if (!ep->ud_qp)
		return 0;
	while ((n = ibv_poll_cq(ep->ud_rcq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return rt_wc_error(&wc[i], ep->dg_srd ? "srd receive queue" : "ud receive queue", err);
			ep->ud_rq_posted--;
			r->events++;
		}
	if (n < 0)
		return rt_error_set(err, EIO, "cannot poll the %s receive cq", rt_ep_dgram_name(ep));
	return rt_ep_fill_recv(ep, true, err);
}

/* Applies a control word (PHASE or END) to the responder; the caller acknowledges a PHASE. 0 or an errno + err. */
static int resp_apply(struct rt_resp *r, uint32_t w, struct rt_error *err)
{
	struct rt_ep *ep = r->ep;
	int rc;

	switch (w >> 28) {
	case RT_CMD_PHASE:
		rc = resp_sink_ud(r, err);
		if (rc)
			return rc;
		/* the datagram QP of the new phase (both sides switch between phases, never within one); what reached
		 * it after its last phase ended is sunk too, not answered as a ping of this one */
		if (((w & RT_CTL_SRD) != 0) != ep->dg_srd) {
			rt_ep_dgram_use(ep, (w & RT_CTL_SRD) != 0);
			rc = resp_sink_ud(r, err);
			if (rc)
				return rc;
		}
		r->mode = (enum rt_resp_mode)((w >> 24) & 0x7);
		r->ud = (w >> 23) & 1;
		r->inl = (w >> 22) & 1;
		r->size = w & 0x3fffff;
		r->seq = 0;
		if (r->size > ep->cfg.max_msg || r->size == 0 || (r->ud && !ep->ud_qp) ||
		    (r->mode != RT_MODE_SINK && !r->ud && !ep->qp))
			return rt_error_set(err, EPROTO, "peer asked for an impossible phase (size %u)", r->size);
		memset(rt_ep_data(ep), 0, ep->cfg.max_msg);
		return 0;
	case RT_CMD_END: r->ended = true; return 0;
	default: return rt_error_set(err, EPROTO, "unknown control word 0x%08x from the peer", w);
	}
}

static int resp_recv(struct rt_resp *r, bool ud, struct rt_error *err)
{
	struct rt_ep *ep = r->ep;
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(ud ? ep->ud_rcq : ep->rcq, 16, wc), rc;

	if (n < 0)
		return rt_error_set(err, EIO, "cannot poll the receive cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return rt_wc_error(
				&wc[i], ud ? (ep->dg_srd ? "srd receive queue" : "ud receive queue") : "receive queue",
				err);
		(*(ud ? &ep->ud_rq_posted : &ep->rq_posted))--;
		r->events++;
		if (!ud && (wc[i].wc_flags & IBV_WC_WITH_IMM)) {
			uint32_t w = ntohl(wc[i].imm_data);

			rc = resp_apply(r, w, err);
			if (rc || r->ended)
				return rc;
			rc = resp_send(r, false, RT_OP_SEND, 0, false, rt_ctl_pack(RT_CMD_ACK, 0, 0, 0, 0), err);
			if (rc)
				return rc;
			continue;
		}
		if (r->mode == RT_MODE_PP_SEND && r->ud == ud) {
			rc = resp_send(r, ud, RT_OP_SEND, r->size, r->inl, 0, err);
			if (rc)
				return rc;
		}
	}
	if ((ud ? ep->ud_rq_posted : ep->rq_posted) < ep->cfg.rq_depth / 2)
		return rt_ep_fill_recv(ep, ud, err);
	return 0;
}

/*
 * Reaps the responder's own send completions when half of a send queue is posted (its sends are all signaled):
 * outside the spin that waits for the peer, which then does not pay a send CQ poll per iteration. Returns 0 or an errno.
 */
static int resp_reap(struct rt_ep *ep, bool ud, struct rt_error *err)
{
	while ((ud ? ep->ud_sq_out : ep->sq_out) >= ep->cfg.sq_depth / 2) {
		int n = rt_ep_poll_send(ep, ud, err);

		if (n < 0)
			return -n;
		if (n == 0)
			break; /* not completed yet: resp_room waits (bounded) when the queue is really full */
	}
	return 0;
}

/* The responder's write ping-pong: answers when the flag byte of the current sequence number has landed. */
static int resp_write_flag(struct rt_resp *r, struct rt_error *err)
{
	struct rt_ep *ep = r->ep;
	volatile uint8_t *flag = rt_ep_data(ep) + r->size - 1;
	uint8_t v = (uint8_t)(r->seq % 255 + 1);
	int rc;

	if (*flag != v)
		return 0;
	rt_ep_send_area(ep)[r->size - 1] = v;
	rc = resp_send(r, false, RT_OP_WRITE, r->size, r->inl, 0, err);
	if (rc)
		return rc;
	r->seq++;
	r->events++;
	return 0;
}

int rt_resp_step(struct rt_resp *r, struct rt_error *err)
{
	struct rt_ep *ep = r->ep;
	bool hot_rc, hot_ud;
	int rc;

	if (r->ctl) {
		uint32_t seq = r->ctl->seq;

		if (seq != r->ctl_seen) {
			rc = resp_apply(r, r->ctl->word, err);
			r->ctl_seen = seq;
			r->ctl->ack = seq;
			r->events++;
			if (rc || r->ended)
				return rc;
		}
	}
	/* what this mode waits for is polled on every step; the RC receive CQ (control words) otherwise only every
	 * RT_RESP_CTL_EVERY steps: a phase change waits a few polls more, a ping-pong never waits for a stray poll */
	hot_rc = r->mode == RT_MODE_SINK || (r->mode == RT_MODE_PP_SEND && !r->ud);
	hot_ud = ep->ud_qp && (r->mode == RT_MODE_SINK || (r->mode == RT_MODE_PP_SEND && r->ud));
	if (ep->qp && (hot_rc || ++r->idle_steps >= RT_RESP_CTL_EVERY)) {
		r->idle_steps = 0;
		rc = resp_recv(r, false, err);
		if (rc || r->ended)
			return rc;
	}
	if (hot_ud) {
		rc = resp_recv(r, true, err);
		if (rc)
			return rc;
	}
	if (r->mode == RT_MODE_PP_WRITE) {
		rc = resp_write_flag(r, err);
		if (rc)
			return rc;
	}
	rc = ep->qp ? resp_reap(ep, false, err) : 0; /* no RC QP (EFA-like): nothing posted there */
	if (!rc && ep->ud_qp)
		rc = resp_reap(ep, true, err);
	return rc;
}

/* ---- rdma_cm helpers ------------------------------------------------------------------------------------------ */

int rt_cm_next(struct rdma_event_channel *ch, int timeout_ms, volatile sig_atomic_t *stop, struct rdma_cm_event **ev,
	       struct rt_error *err)
{
	int waited = 0;

	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int slice = timeout_ms - waited < 100 ? timeout_ms - waited : 100, rc;

		if (stop && *stop)
			return rt_error_set(err, EINTR, "interrupted");
		if (slice <= 0)
			return rt_error_set(err, ETIMEDOUT, "no connection event within %d ms", timeout_ms);
		rc = poll(&p, 1, slice);
		if (rc < 0 && errno != EINTR)
			return rt_error_set(err, errno, "poll: %s", strerror(errno));
		if (rc > 0) {
			int fl = fcntl(ch->fd, F_GETFL);

			if (!(fl & O_NONBLOCK))
				fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
			if (rdma_get_cm_event(ch, ev) == 0)
				return 0;
			if (errno != EAGAIN && errno != EINTR)
				return rt_error_set(err, errno, "rdma_get_cm_event: %s", strerror(errno));
		}
		waited += slice;
	}
}

int rt_resolve(const char *spec, int default_port, bool passive, struct addrinfo **ai, struct rt_error *err)
{
	char host[256] = "", port[16];
	const char *colon;
	struct addrinfo hints;
	int rc;

	snprintf(port, sizeof(port), "%d", default_port);
	if (spec && spec[0] == '[') {
		const char *end = strchr(spec, ']');

		if (!end || (size_t)(end - spec - 1) >= sizeof(host))
			return rt_error_set(err, EINVAL, "bad address '%s'", spec);
		memcpy(host, spec + 1, (size_t)(end - spec - 1));
		host[end - spec - 1] = '\0';
		if (end[1] == ':')
			snprintf(port, sizeof(port), "%s", end + 2);
	} else if (spec) {
		colon = strrchr(spec, ':');
		if (colon && strchr(spec, ':') == colon) {
			if ((size_t)(colon - spec) >= sizeof(host))
				return rt_error_set(err, EINVAL, "bad address '%s'", spec);
			memcpy(host, spec, (size_t)(colon - spec));
			host[colon - spec] = '\0';
			snprintf(port, sizeof(port), "%s", colon + 1);
		} else {
			snprintf(host, sizeof(host), "%s", spec);
		}
	}
	{
		char *end;
		long p = strtol(port, &end, 10);

		if (*end || p <= 0 || p > 65535)
			return rt_error_set(err, EINVAL, "bad port '%s' in '%s'", port, spec ? spec : "");
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, ai);
	if (rc)
		return rt_error_set(err, EHOSTUNREACH, "cannot resolve '%s': %s", host[0] ? host : "(any)",
				    gai_strerror(rc));
	return 0;
}
