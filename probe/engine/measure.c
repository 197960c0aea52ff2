// SPDX-License-Identifier: MIT
/*
 * The client's measuring loops (see rt_link.h): phase control, ping-pong and post->completion latency samples,
 * throughput at a signaling interval without ever overflowing the send queue, and CQ moderation in event mode.
 * Every wait is bounded (timeout, stop flag, peer disconnect).
 */
#include "rt_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

/* Called while spinning: every 1024 spins checks the stop flag, the timeout and (two-node) the CM channel. */
static int wait_check(struct rt_client *c, uint64_t t_start, unsigned long spins, const char *what,
		      struct rt_error *err)
{
	if (c->yield)
		sched_yield();
	if (spins & 1023)
		return 0;
	if (c->stop && *c->stop)
		return rt_error_set(err, EINTR, "interrupted");
	if (c->peer_dead && *c->peer_dead)
		return rt_error_set(err, ECONNRESET, "the responder failed");
	if ((double)(rt_clock_mono_ns() - t_start) > c->timeout_ns)
		return rt_error_set(err, ETIMEDOUT, "peer did not answer within %.1f s while waiting for %s",
				    c->timeout_ns / 1e9, what);
	if (c->cm_ch && (spins & 65535) == 0) {
		struct pollfd p = { .fd = c->cm_ch->fd, .events = POLLIN };

		if (poll(&p, 1, 0) > 0) {
			struct rdma_cm_event *ev;

			if (rdma_get_cm_event(c->cm_ch, &ev) == 0) {
				enum rdma_cm_event_type t = ev->event;

				rdma_ack_cm_event(ev);
				if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
				    t == RDMA_CM_EVENT_TIMEWAIT_EXIT)
					return rt_error_set(err, ECONNRESET, "peer disconnected (%s)",
							    rdma_event_str(t));
			}
		}
	}
	return 0;
}

/* Waits until the send queue has no more than keep WRs outstanding. */
static int drain_send(struct rt_client *c, bool ud, uint32_t keep, struct rt_error *err)
{
	uint64_t t0 = rt_clock_mono_ns();

	for (unsigned long spins = 1; (ud ? c->ep->ud_sq_out : c->ep->sq_out) > keep; spins++) {
		int rc = rt_ep_poll_send(c->ep, ud, err);

		if (rc < 0)
			return -rc;
		if (rc > 0)
			t0 = rt_clock_mono_ns();
		rc = wait_check(c, t0, spins, "send completions", err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Waits for one receive completion on the RC (or UD) receive CQ; *imm = its control word or 0. */
static int wait_recv(struct rt_client *c, bool ud, uint32_t *imm, struct rt_error *err)
{
	struct rt_ep *ep = c->ep;
	struct ibv_cq *cq = ud ? ep->ud_rcq : ep->rcq;
	uint64_t t0 = 0;
	struct ibv_wc wc;

	for (unsigned long spins = 1;; spins++) {
		int n = ibv_poll_cq(cq, 1, &wc), rc;

		if (n < 0)
			return rt_error_set(err, EIO, "cannot poll the receive cq");
		if (n == 1)
			break;
		if (c->yield)
			sched_yield();
		if (spins == 1024)
			t0 = rt_clock_mono_ns();
		if (spins > 1024) {
			/* a send that failed (RNR or transport retries exceeded) is why no reply comes: say so */
			if ((spins & 1023) == 0 && rt_ep_poll_send(ep, ud, err) < 0)
				return EIO;
			rc = wait_check(c, t0, spins, "a reply", err);
			if (rc)
				return rc;
		}
	}
	if (wc.status != IBV_WC_SUCCESS)
		return rt_wc_error(&wc, ud ? (ep->dg_srd ? "srd receive queue" : "ud receive queue") : "receive queue",
				   err);
	(*(ud ? &ep->ud_rq_posted : &ep->rq_posted))--;
	*imm = (!ud && (wc.wc_flags & IBV_WC_WITH_IMM)) ? ntohl(wc.imm_data) : 0;
	return 0;
}

static int refill(struct rt_client *c, bool ud, struct rt_error *err)
{
	if ((ud ? c->ep->ud_rq_posted : c->ep->rq_posted) < c->ep->cfg.rq_depth / 2)
		return rt_ep_fill_recv(c->ep, ud, err);
	return 0;
}

static int post_checked(struct rt_client *c, bool ud, enum rt_opcode op, uint32_t size, bool inl, bool sig,
			uint64_t retires, uint32_t imm, struct rt_error *err)
{
	int rc;

	rc = drain_send(c, ud, c->ep->cfg.sq_depth - 1, err);
	if (rc)
		return rc;
	rc = rt_ep_post(c->ep, ud, op, size, inl, sig, retires, imm);
	if (rc)
		return rt_post_error(c->ep, ud, rc, op, size, inl && !imm, err);
	return 0;
}

/* A control word through memory (no RC QP): posted, then waited for until the responder has applied it. */
static int local_ctl(struct rt_client *c, uint32_t word, bool wait, struct rt_error *err)
{
	uint32_t seq = c->ctl->seq + 1;
	uint64_t t0 = rt_clock_mono_ns();

	c->ctl->word = word;
	c->ctl->seq = seq;
	for (unsigned long spins = 1; wait && c->ctl->ack != seq; spins++) {
		int rc = wait_check(c, t0, spins, "the responder", err);

		if (rc)
			return rc;
	}
	return 0;
}

int rt_client_phase(struct rt_client *c, enum rt_resp_mode mode, bool ud, bool inl, uint32_t size, struct rt_error *err)
{
	uint32_t imm;
	int rc;

	c->in_sink = false;
	/* the datagram QP of the new phase: the old one's sends drained first, then switched here and, by the word's
	 * RT_CTL_SRD, at the responder before it acknowledges */
	uint32_t word = rt_ctl_pack(RT_CMD_PHASE, mode, ud, inl, size) | (c->dg_srd ? RT_CTL_SRD : 0);

	if (c->ctl) {
		rc = c->ep->ud_qp ? drain_send(c, true, 0, err) : 0;
		rt_ep_dgram_use(c->ep, c->dg_srd);
		if (!rc)
			rc = local_ctl(c, word, true, err);
		c->in_sink = !rc && mode == RT_MODE_SINK;
		return rc;
	}
	rc = drain_send(c, false, 0, err);
	if (!rc && c->ep->ud_qp)
		rc = drain_send(c, true, 0, err);
	if (rc)
		return rc;
	rt_ep_dgram_use(c->ep, c->dg_srd);
	memset(rt_ep_data(c->ep), 0, c->ep->cfg.max_msg);
	rc = post_checked(c, false, RT_OP_SEND, 0, false, true, 1, word, err);
	if (rc)
		return rc;
	for (;;) {
		rc = wait_recv(c, false, &imm, err);
		if (rc)
			return rc;
		rc = refill(c, false, err);
		if (rc)
			return rc;
		if ((imm >> 28) == RT_CMD_ACK) {
			rc = drain_send(c, false, 0, err);
			c->in_sink = !rc && mode == RT_MODE_SINK;
			return rc;
		}
		if (imm)
			return rt_error_set(err, EPROTO, "unexpected control word 0x%08x from the peer", imm);
		/* a late data message of the previous phase: ignore */
	}
}

int rt_client_end(struct rt_client *c, struct rt_error *err)
{
	int rc;

	if (c->ctl) {
		rc = c->ep->ud_qp ? drain_send(c, true, 0, err) : 0;
		return rc ? rc : local_ctl(c, rt_ctl_pack(RT_CMD_END, 0, 0, 0, 0), false, err);
	}
	rc = drain_send(c, false, 0, err);

	if (rc)
		return rc;
	rc = post_checked(c, false, RT_OP_SEND, 0, false, true, 1, rt_ctl_pack(RT_CMD_END, 0, 0, 0, 0), err);
	if (rc)
		return rc;
	return drain_send(c, false, 0, err);
}

static int lat_pingpong_send(struct rt_client *c, bool ud, uint32_t size, bool inl, size_t n, double *out,
			     struct rt_error *err)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t0, t1;
		uint32_t imm;
		int rc;

		rc = drain_send(c, ud, c->ep->cfg.sq_depth / 2, err);
		if (rc)
			return rc;
		t0 = rt_clock_now(c->clk);
		rc = rt_ep_post(c->ep, ud, RT_OP_SEND, size, inl, true, 1, 0);
		if (rc)
			return rt_post_error(c->ep, ud, rc, RT_OP_SEND, size, inl, err);
		rc = wait_recv(c, ud, &imm, err);
		t1 = rt_clock_now(c->clk);
		if (rc)
			return rc;
		if (imm)
			return rt_error_set(err, EPROTO, "unexpected control word 0x%08x from the peer", imm);
		out[i] = rt_clock_ns(c->clk, t0, t1) / 2;
		rc = refill(c, ud, err);
		if (!rc)
			rc = rt_ep_poll_send(c->ep, ud, err) < 0 ? EIO : 0;
		if (rc)
			return rc;
	}
	return 0;
}

static int lat_pingpong_write(struct rt_client *c, uint32_t size, bool inl, size_t n, double *out, struct rt_error *err)
{
	volatile uint8_t *flag = rt_ep_data(c->ep) + size - 1;

	for (size_t i = 0; i < n; i++) {
		uint8_t v = (uint8_t)(i % 255 + 1);
		uint64_t t0, t1, w0 = 0;
		int rc;

		rc = drain_send(c, false, c->ep->cfg.sq_depth / 2, err);
		if (rc)
			return rc;
		rt_ep_send_area(c->ep)[size - 1] = v;
		t0 = rt_clock_now(c->clk);
		rc = rt_ep_post(c->ep, false, RT_OP_WRITE, size, inl, true, 1, 0);
		if (rc)
			return rt_post_error(c->ep, false, rc, RT_OP_WRITE, size, inl, err);
		for (unsigned long spins = 1; *flag != v; spins++) {
			if (spins == 1024)
				w0 = rt_clock_mono_ns();
			if (spins >= 1024) {
				if ((spins & 1023) == 0 && rt_ep_poll_send(c->ep, false, err) < 0)
					return EIO;
				rc = wait_check(c, w0, spins, "a write reply", err);
				if (rc)
					return rc;
			}
		}
		t1 = rt_clock_now(c->clk);
		out[i] = rt_clock_ns(c->clk, t0, t1) / 2;
		if (rt_ep_poll_send(c->ep, false, err) < 0)
			return EIO;
	}
	return 0;
}

static int lat_post_cqe(struct rt_client *c, bool ud, enum rt_opcode op, uint32_t size, bool inl, size_t n, double *out,
			struct rt_error *err)
{
	struct ibv_cq *cq = ud ? c->ep->ud_scq : c->ep->scq;

	for (size_t i = 0; i < n; i++) {
		uint64_t t0, t1, w0 = 0;
		struct ibv_wc wc;
		int rc, got;

		rc = drain_send(c, ud, 0, err);
		if (rc)
			return rc;
		t0 = rt_clock_now(c->clk);
		rc = rt_ep_post(c->ep, ud, op, size, inl, true, 1, 0);
		if (rc)
			return rt_post_error(c->ep, ud, rc, op, size, inl, err);
		for (unsigned long spins = 1; (got = ibv_poll_cq(cq, 1, &wc)) == 0; spins++) {
			if (spins == 1024)
				w0 = rt_clock_mono_ns();
			if (spins >= 1024) {
				rc = wait_check(c, w0, spins, "a send completion", err);
				if (rc)
					return rc;
			}
		}
		t1 = rt_clock_now(c->clk);
		if (got < 0)
			return rt_error_set(err, EIO, "cannot poll the send cq");
		if (wc.status != IBV_WC_SUCCESS)
			return rt_wc_error(
				&wc, ud ? (c->ep->dg_srd ? "srd send queue" : "ud send queue") : "send queue", err);
		(*(ud ? &c->ep->ud_sq_out : &c->ep->sq_out))--;
		out[i] = rt_clock_ns(c->clk, t0, t1);
	}
	return 0;
}

int rt_client_lat(struct rt_client *c, enum rt_opcode op, enum rt_qp_type qpt, enum rt_lat_kind kind, uint32_t size,
		  bool inl, size_t n, double *out, double *cpu_ns, struct rt_error *err)
{
	bool ud = qpt == RT_QPT_UD || qpt == RT_QPT_SRD, srd = qpt == RT_QPT_SRD, other = ud && srd != c->ep->dg_srd;
	enum rt_resp_mode mode = kind == RT_LAT_POST_CQE ? RT_MODE_SINK
				 : op == RT_OP_WRITE	 ? RT_MODE_PP_WRITE
							 : RT_MODE_PP_SEND;
	uint32_t dg_max_inline = other ? c->ep->dg_other.max_inline : c->ep->cfg.ud_max_inline;
	uint64_t cpu0;
	int rc;

	if (size == 0 || size > c->ep->cfg.max_msg || (ud && (!rt_ep_dgram_qp(c->ep, srd) || op != RT_OP_SEND)) ||
	    (inl && size > (ud ? dg_max_inline : c->ep->cfg.max_inline)))
		return rt_error_set(err, EINVAL, "cannot measure %s %s %u bytes%s on this link", rt_opcode_name(op),
				    rt_qp_type_name(qpt), size, inl ? " inline" : "");
	if (ud)
		c->dg_srd = srd;
	/* the alternating blocks of a pair switch cells often: a SINK responder needs no phase change (a round trip),
	 * unless the cell is on the other datagram QP (UD <-> SRD), which both sides switch to in a phase */
	if (!(mode == RT_MODE_SINK && c->in_sink && !other)) {
		rc = rt_client_phase(c, mode, ud, inl, size, err);
		if (rc)
			return rc;
	}
	cpu0 = rt_clock_thread_cpu_ns();
	if (kind == RT_LAT_POST_CQE)
		rc = lat_post_cqe(c, ud, op, size, inl, n, out, err);
	else if (op == RT_OP_WRITE)
		rc = lat_pingpong_write(c, size, inl, n, out, err);
	else
		rc = lat_pingpong_send(c, ud, size, inl, n, out, err);
	*cpu_ns += (double)(rt_clock_thread_cpu_ns() - cpu0);
	return rc;
}

int rt_client_rate(struct rt_client *c, enum rt_opcode op, uint32_t size, bool inl, uint32_t n_sig, double duration_ns,
		   struct rt_rate_rep *out, struct rt_error *err)
{
	struct rt_ep *ep = c->ep;
	bool ud = c->rate_ud;
	uint32_t depth = ep->cfg.sq_depth, since = 0, *sq_out = ud ? &ep->ud_sq_out : &ep->sq_out;
	uint64_t t0, cpu0, last_progress, k0, k1, post_ticks = 0, reap_ticks = 0;
	bool stop_posting = false, time_up = false;
	unsigned long spins = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (n_sig == 0 || n_sig > depth)
		return rt_error_set(err, EINVAL, "signaling interval %u outside 1..%u", n_sig, depth);
	rc = drain_send(c, ud, 0, err);
	if (rc)
		return rc;
	cpu0 = rt_clock_thread_cpu_ns();
	t0 = last_progress = rt_clock_mono_ns();
	k0 = rt_clock_raw_ticks();
	for (;;) {
		/* post while the queue has room: sq_out counts every WR not yet retired by a signaled completion */
		while (!stop_posting && *sq_out < depth) {
			bool sig = since + 1 == n_sig;
			uint64_t a = rt_clock_raw_ticks();

			if (c->post_list > 1) {
				uint64_t before = ep->sq_out;
				uint32_t k = c->post_list;

				/* A list the provider took only in part (ENOMEM at its k-th WR, as a queue full
				 * mid-list) leaves the signaling position off the list grid: since is then never 0
				 * between lists, so neither could the run stop on a signaled WR (it posted forever) nor,
				 * with no signaled WR in flight and no room for a whole list, could the queue drain.
				 * Then, and when the time is up, the list ends at the next signaled WR. */
				if (time_up || (ep->sq_out + k > depth && ep->sq_out == since))
					k = k < n_sig - since ? k : n_sig - since;
				/* a whole list or nothing: a real batching sender waits for room for its batch */
				if (ep->sq_out + k > depth)
					break;
				rc = rt_ep_post_list(ep, op, size, inl, k, n_sig, &since);
				post_ticks += rt_clock_raw_ticks() - a;
				out->msgs += ep->sq_out - before;
				if (rc == ENOMEM) {
					out->enomem++;
					break;
				}
				if (rc)
					return rt_error_set(err, rc, "ibv_post_send of a %u-WR list failed: %s", k,
							    strerror(rc));
				time_up = time_up || (double)(rt_clock_mono_ns() - t0) >= duration_ns;
				if (time_up && since == 0)
					stop_posting = true;
				continue;
			}
			rc = rt_ep_post(ep, ud, op, size, inl, sig, sig ? n_sig : 0, 0);
			post_ticks += rt_clock_raw_ticks() - a;
			if (rc == ENOMEM && *sq_out > since) {
				/* signaled WRs in flight: the provider may count the queue full before we do */
				out->enomem++;
				break;
			}
			/* ENOMEM with no signaled WR in flight cannot be a full queue: nothing would ever free it
			 * (it would end as "peer did not answer"); name it */
			if (rc)
				return rt_post_error(ep, ud, rc, op, size, inl, err);
			out->msgs++;
			since = sig ? 0 : since + 1;
			if (since == 0 && (out->msgs & 63) < (uint64_t)n_sig &&
			    (double)(rt_clock_mono_ns() - t0) >= duration_ns)
				stop_posting = true;
		}
		{
			uint64_t a = rt_clock_raw_ticks();

			rc = rt_ep_poll_send(ep, ud, err);
			/* only polls that reaped count: an empty poll is the spinning a real sender would not do */
			if (rc > 0)
				reap_ticks += rt_clock_raw_ticks() - a;
		}
		if (rc < 0)
			return -rc;
		if (rc > 0)
			last_progress = rt_clock_mono_ns();
		if (stop_posting && *sq_out == 0)
			break;
		if (!stop_posting && since == 0 && (++spins & 255) == 0 &&
		    (double)(rt_clock_mono_ns() - t0) >= duration_ns)
			stop_posting = true;
		rc = wait_check(c, last_progress, ++spins, "send completions", err);
		if (rc)
			return rc;
	}
	k1 = rt_clock_raw_ticks();
	out->wall_ns = (double)(rt_clock_mono_ns() - t0);
	out->cpu_ns = (double)(rt_clock_thread_cpu_ns() - cpu0);
	if (k1 > k0 && out->wall_ns > 0) {
		double ns_per_tick = out->wall_ns / (double)(k1 - k0);

		out->post_ns = (double)post_ticks * ns_per_tick;
		out->reap_ns = (double)reap_ticks * ns_per_tick;
		out->busy_timed = true;
	}
	return 0;
}

/* Event-driven throughput with one signaled WR per message, so the CQ's moderation decides how often we wake up. */
static int rate_events(struct rt_client *c, enum rt_opcode op, double duration_ns, double *mops, struct rt_error *err)
{
	struct rt_ep *ep = c->ep;
	uint64_t t0 = rt_clock_mono_ns(), msgs = 0;
	bool stop_posting = false;

	while (!(stop_posting && ep->sq_out == 0)) {
		struct pollfd p = { .fd = ep->chan->fd, .events = POLLIN };
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int rc;

		while (!stop_posting && ep->sq_out < ep->cfg.sq_depth) {
			rc = rt_ep_post(ep, false, op, 8, false, true, 1, 0);
			if (rc)
				return rt_post_error(ep, false, rc, op, 8, false, err);
			msgs++;
		}
		if ((double)(rt_clock_mono_ns() - t0) >= duration_ns)
			stop_posting = true;
		if (ibv_req_notify_cq(ep->scq, 0))
			return rt_error_set(err, EIO, "cannot arm the send cq");
		rc = rt_ep_poll_send(ep, false, err); /* completions that raced with arming */
		if (rc < 0)
			return -rc;
		if (rc > 0)
			continue;
		if (c->stop && *c->stop)
			return rt_error_set(err, EINTR, "interrupted");
		rc = poll(&p, 1, (int)(c->timeout_ns / 1e6));
		if (rc == 0)
			return rt_error_set(err, ETIMEDOUT, "no completion event within %.1f s", c->timeout_ns / 1e9);
		if (rc < 0)
			continue;
		if (ibv_get_cq_event(ep->chan, &ev_cq, &ev_ctx))
			return rt_error_set(err, EIO, "cannot read a completion event");
		ibv_ack_cq_events(ev_cq, 1);
		while ((rc = rt_ep_poll_send(ep, false, err)) > 0)
			;
		if (rc < 0)
			return -rc;
	}
	*mops = (double)msgs / ((double)(rt_clock_mono_ns() - t0) / 1e3);
	return 0;
}

int rt_client_cqmod(struct rt_client *c, enum rt_opcode op, double duration_ns, struct rt_cq_moderation *m,
		    struct rt_error *err)
{
	static const uint16_t counts[] = { 4, 16, 64 };
	struct ibv_modify_cq_attr a;
	int rc;

	memset(m, 0, sizeof(*m));
	m->measured = true;
	memset(&a, 0, sizeof(a));
	a.attr_mask = IBV_CQ_ATTR_MODERATE;
	a.moderate.cq_count = 1;
	a.moderate.cq_period = 0;
	rc = ibv_modify_cq(c->ep->scq, &a);
	if (rc) {
		m->supported = false;
		snprintf(m->reason, sizeof(m->reason), "ibv_modify_cq(IBV_CQ_MODERATE) refused: %s", strerror(rc));
		return 0;
	}
	m->supported = true;
	rc = rt_client_phase(c, RT_MODE_SINK, false, false, 8, err);
	if (!rc)
		rc = rate_events(c, op, duration_ns, &m->mops_off, err);
	if (rc)
		return rc;
	m->mops_best = m->mops_off;
	m->best_count = 1;
	m->best_period_us = 0;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		double mops = 0;

		a.moderate.cq_count = counts[i];
		a.moderate.cq_period = 16;
		rc = ibv_modify_cq(c->ep->scq, &a);
		if (rc) {
			snprintf(m->reason, sizeof(m->reason), "ibv_modify_cq count %u period 16 us refused: %s",
				 counts[i], strerror(rc));
			break;
		}
		rc = rate_events(c, op, duration_ns, &mops, err);
		if (rc)
			return rc;
		if (mops > m->mops_best) {
			m->mops_best = mops;
			m->best_count = counts[i];
			m->best_period_us = 16;
		}
	}
	a.moderate.cq_count = 1;
	a.moderate.cq_period = 0;
	ibv_modify_cq(c->ep->scq, &a);
	return 0;
}
