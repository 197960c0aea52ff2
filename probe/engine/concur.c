// SPDX-License-Identifier: MIT
/*
 * The concurrency band of the loopback rate sweep (see rt_concur.h): Q RC QP pairs sharing the loopback endpoints'
 * PDs and buffers, T sending threads each with its own send CQ and its own QPs (no lock on the data path: a thread
 * touches only its QPs, its CQ and its counters), and the responder's shared receive CQ refilled by the loopback
 * responder thread. Every wait is bounded (timeout without a completion, stop flag, responder failure, another thread's
 * failure).
 */
#include "rt_clock.h"
#include "rt_concur.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct conc_qp {
	struct ibv_qp *sqp, *rqp; /* sender side (a thread's send CQ), responder side (the shared receive CQ) */
	uint32_t sq_out;	  /* WRs posted and not yet retired by a signaled completion */
	uint32_t since;		  /* unsignaled WRs since the last signaled one */
	bool done;		  /* stopped posting (time up, on a signaled WR) */
};

struct conc_thr {
	struct rt_conc *c;
	uint32_t idx;
	struct ibv_cq *scq;
	pthread_t thr;
	bool started;
	/* one repetition's results */
	uint64_t msgs, enomem, post_ticks, reap_ticks, k0, k1, t_first, t_end, cpu_ns;
	int rc;
	struct rt_error err;
};

struct rt_conc {
	struct rt_conc_setup s;
	int cpus[RT_CONC_MAX_THREADS];
	struct ibv_cq *rcq; /* responder: receive CQ of every responder QP */
	struct ibv_cq *xcq; /* the CQ no WR ever completes on: senders' receives, responders' sends */
	struct conc_qp qp[RT_CONC_MAX_QPS];
	struct conc_thr thr[RT_CONC_MAX_THREADS];
	bool pin_refused;
	/* the repetition in progress */
	enum rt_opcode op;
	uint32_t size, n_sig;
	bool inl;
	double duration_ns;
	uint64_t t0;
	atomic_int go, abort;
};

static int post_recv(struct rt_conc *c, uint32_t q)
{
	struct ibv_sge sge = { .addr = rt_ep_data_addr(c->s.rep),
			       .length = c->s.msg_bytes ? c->s.msg_bytes : 1,
			       .lkey = c->s.rep->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = q, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	return ibv_post_recv(c->qp[q].rqp, &wr, &bad);
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t send_wr,
				uint32_t recv_wr, uint32_t max_inline)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = max_inline;
	return ibv_create_qp(pd, &a);
}

int rt_conc_create(const struct rt_conc_setup *s, struct rt_conc **out, struct rt_error *err)
{
	struct ibv_context *ctx = s->cep->ctx;
	struct rt_conc *c;
	int rc = 0;

	*out = NULL;
	if (s->threads < 1 || s->threads > s->qps || s->qps > RT_CONC_MAX_QPS || s->threads > RT_CONC_MAX_THREADS)
		return rt_error_set(err, EINVAL, "concurrency %ux%u outside 1 <= threads <= qps <= %u", s->qps,
				    s->threads, RT_CONC_MAX_QPS);
	c = calloc(1, sizeof(*c));
	if (!c)
		return rt_error_set(err, ENOMEM, "out of memory");
	c->s = *s;
	for (uint32_t t = 0; t < s->threads; t++)
		c->cpus[t] = s->cpus ? s->cpus[t] : -1;
	c->s.cpus = c->cpus;
	c->rcq = ibv_create_cq(ctx, (int)(s->qps * s->sq_depth) + 16, NULL, NULL, 0);
	c->xcq = ibv_create_cq(ctx, (int)(2 * s->qps) + 16, NULL, NULL, 0);
	if (!c->rcq || !c->xcq) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "concurrency band: cannot create a cq: %s", strerror(rc));
		goto fail;
	}
	for (uint32_t t = 0; t < s->threads; t++) {
		uint32_t mine = (s->qps - t + s->threads - 1) / s->threads;

		c->thr[t].c = c;
		c->thr[t].idx = t;
		c->thr[t].scq = ibv_create_cq(ctx, (int)(mine * s->sq_depth) + 16, NULL, NULL, 0);
		if (!c->thr[t].scq) {
			rc = errno ? errno : ENOMEM;
			rt_error_set(err, rc, "concurrency band: cannot create the send cq of thread %u: %s", t,
				     strerror(rc));
			goto fail;
		}
	}
	for (uint32_t q = 0; q < s->qps; q++) {
		struct conc_qp *x = &c->qp[q];
		struct rt_ep tmp;

		x->sqp = create_qp(s->cep->pd, c->thr[q % s->threads].scq, c->xcq, s->sq_depth, 1, s->max_inline);
		x->rqp = x->sqp ? create_qp(s->rep->pd, c->xcq, c->rcq, 1, s->sq_depth, 0) : NULL;
		if (!x->sqp || !x->rqp) {
			rc = errno ? errno : ENOMEM;
			rt_error_set(err, rc, "concurrency band: cannot create qp pair %u of %u: %s", q + 1, s->qps,
				     strerror(rc));
			goto fail;
		}
		memset(&tmp, 0, sizeof(tmp));
		tmp.qp = x->sqp;
		rc = rt_ep_rc_connect(&tmp, s->addr, x->rqp->qp_num, err);
		tmp.qp = x->rqp;
		if (!rc)
			rc = rt_ep_rc_connect(&tmp, s->addr, x->sqp->qp_num, err);
		for (uint32_t k = 0; !rc && k < s->sq_depth; k++)
			if ((rc = post_recv(c, q)))
				rt_error_set(err, rc, "concurrency band: cannot post a receive on qp %u: %s", q + 1,
					     strerror(rc));
		if (rc)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	rt_conc_destroy(c);
	return rc;
}

void rt_conc_destroy(struct rt_conc *c)
{
	if (!c)
		return;
	for (uint32_t q = 0; q < RT_CONC_MAX_QPS; q++) {
		if (c->qp[q].sqp)
			ibv_destroy_qp(c->qp[q].sqp);
		if (c->qp[q].rqp)
			ibv_destroy_qp(c->qp[q].rqp);
	}
	for (uint32_t t = 0; t < RT_CONC_MAX_THREADS; t++)
		if (c->thr[t].scq)
			ibv_destroy_cq(c->thr[t].scq);
	if (c->rcq)
		ibv_destroy_cq(c->rcq);
	if (c->xcq)
		ibv_destroy_cq(c->xcq);
	free(c);
}

int rt_conc_resp_step(struct rt_conc *c, struct rt_error *err)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(c->rcq, 32, wc);

	if (n < 0)
		return rt_error_set(err, EIO, "concurrency band: cannot poll the responder's receive cq");
	for (int i = 0; i < n; i++) {
		int rc;

		if (wc[i].status != IBV_WC_SUCCESS)
			return rt_wc_error(&wc[i], "concurrency band's receive queue", err);
		if (wc[i].wr_id >= c->s.qps)
			return rt_error_set(err, EIO, "concurrency band: receive completion of unknown qp %llu",
					    (unsigned long long)wc[i].wr_id);
		rc = post_recv(c, (uint32_t)wc[i].wr_id);
		if (rc)
			return rt_error_set(err, rc, "concurrency band: cannot repost a receive: %s", strerror(rc));
	}
	return 0;
}

bool rt_conc_pin_refused(const struct rt_conc *c)
{
	return c->pin_refused;
}

/* Posts one WR on QP q; wr_id carries the QP and how many WRs its completion retires. */
static int post_one(struct rt_conc *c, uint32_t q, bool sig)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rt_ep_send_area(c->s.cep),
			       .length = c->size,
			       .lkey = c->s.cep->mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = ((uint64_t)q << 32) | (sig ? c->n_sig : 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = c->op == RT_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
	wr.send_flags = (sig ? IBV_SEND_SIGNALED : 0) | (c->inl ? IBV_SEND_INLINE : 0);
	if (c->op == RT_OP_WRITE) {
		wr.wr.rdma.remote_addr = c->s.cep->raddr;
		wr.wr.rdma.rkey = c->s.cep->rkey;
	}
	return ibv_post_send(c->qp[q].sqp, &wr, &bad);
}

/* Thread t's share of a repetition: its QPs round robin, its CQ; results in c->thr[t]. */
static void run_share(struct conc_thr *th)
{
	struct rt_conc *c = th->c;
	uint32_t T = c->s.threads, depth = c->s.sq_depth;
	uint64_t last_progress, cpu0;
	bool time_up = false;
	unsigned long spins = 0;

	while (!atomic_load_explicit(&c->go, memory_order_acquire))
		if (c->s.yield)
			sched_yield();
	cpu0 = rt_clock_thread_cpu_ns();
	th->k0 = rt_clock_raw_ticks();
	th->t_first = last_progress = rt_clock_mono_ns();
	for (;;) {
		bool busy = false;
		struct ibv_wc wc[16];
		uint64_t a;
		int n;

		for (uint32_t q = th->idx; q < c->s.qps; q += T) {
			struct conc_qp *x = &c->qp[q];
			bool sig = x->since + 1 == c->n_sig;
			int rc;

			if (x->done)
				continue;
			busy = true;
			if (x->sq_out >= depth)
				continue;
			a = rt_clock_raw_ticks();
			rc = post_one(c, q, sig);
			th->post_ticks += rt_clock_raw_ticks() - a;
			if (rc == ENOMEM && x->sq_out > x->since) {
				th->enomem++; /* the provider counted the queue full before we did */
				continue;
			}
			if (rc) {
				th->rc = rt_error_set(&th->err, rc,
						      "concurrency band: ibv_post_send on qp %u failed: %s", q + 1,
						      strerror(rc));
				goto out;
			}
			th->msgs++;
			x->sq_out++;
			x->since = sig ? 0 : x->since + 1;
			if (time_up && x->since == 0)
				x->done = true;
		}
		a = rt_clock_raw_ticks();
		n = ibv_poll_cq(th->scq, 16, wc);
		if (n > 0)
			th->reap_ticks += rt_clock_raw_ticks() - a;
		if (n < 0) {
			th->rc = rt_error_set(&th->err, EIO, "concurrency band: cannot poll the send cq of thread %u",
					      th->idx);
			goto out;
		}
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id >> 32), retire = (uint32_t)wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS) {
				th->rc = rt_wc_error(&wc[i], "concurrency band's send queue", &th->err);
				goto out;
			}
			if (q < c->s.qps)
				c->qp[q].sq_out = retire > c->qp[q].sq_out ? 0 : c->qp[q].sq_out - retire;
		}
		if (n > 0)
			last_progress = rt_clock_mono_ns();
		if (!busy) {
			bool drained = true;

			for (uint32_t q = th->idx; q < c->s.qps; q += T)
				drained = drained && c->qp[q].sq_out == 0;
			if (drained)
				break;
		}
		spins++;
		if (!time_up && (spins & 63) == 0 && (double)(rt_clock_mono_ns() - c->t0) >= c->duration_ns) {
			time_up = true;
			for (uint32_t q = th->idx; q < c->s.qps; q += T)
				c->qp[q].done = c->qp[q].since == 0;
		}
		if (c->s.yield && n == 0)
			sched_yield();
		if ((spins & 1023) == 0) {
			if (c->s.stop && *c->s.stop) {
				th->rc = rt_error_set(&th->err, EINTR, "interrupted");
				goto out;
			}
			if (c->s.peer_dead && *c->s.peer_dead) {
				th->rc = rt_error_set(&th->err, ECONNRESET, "the responder failed");
				goto out;
			}
			if (atomic_load_explicit(&c->abort, memory_order_relaxed)) {
				th->rc = ECANCELED; /* another thread failed: its error is the one reported */
				goto out;
			}
			if ((double)(rt_clock_mono_ns() - last_progress) > c->s.timeout_ns) {
				th->rc = rt_error_set(&th->err, ETIMEDOUT,
						      "concurrency band: no send completion within %.1f s",
						      c->s.timeout_ns / 1e9);
				goto out;
			}
		}
	}
out:
	if (th->rc)
		atomic_store(&c->abort, 1);
	th->k1 = rt_clock_raw_ticks();
	th->t_end = rt_clock_mono_ns();
	th->cpu_ns = rt_clock_thread_cpu_ns() - cpu0;
}

static void *share_thread(void *arg)
{
	run_share(arg);
	return NULL;
}

/* Starts sending thread t pinned to its CPU (a refused CPU: unpinned, remembered). Returns 0 or pthread's errno. */
static int start_share(struct rt_conc *c, uint32_t t)
{
	struct conc_thr *th = &c->thr[t];
	pthread_attr_t at;
	int rc, pin = -1;

	if (c->cpus[t] >= 0 && c->cpus[t] < CPU_SETSIZE) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(c->cpus[t], &set);
		if ((rc = pthread_attr_init(&at)))
			return rc;
		pin = pthread_attr_setaffinity_np(&at, sizeof(set), &set);
		rc = pin ? pin : pthread_create(&th->thr, &at, share_thread, th);
		pthread_attr_destroy(&at);
		if (rc != EINVAL && rc != EPERM) {
			th->started = rc == 0;
			return rc;
		}
		c->pin_refused = true;
	}
	rc = pthread_create(&th->thr, NULL, share_thread, th);
	th->started = rc == 0;
	return rc;
}

int rt_conc_rate(struct rt_conc *c, enum rt_opcode op, uint32_t size, bool inl, uint32_t n_sig, double duration_ns,
		 struct rt_rate_rep *out, struct rt_error *err)
{
	uint32_t T = c->s.threads;
	uint64_t t_last = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (n_sig == 0 || n_sig > c->s.sq_depth)
		return rt_error_set(err, EINVAL, "signaling interval %u outside 1..%u", n_sig, c->s.sq_depth);
	c->op = op;
	c->size = size;
	c->inl = inl;
	c->n_sig = n_sig;
	c->duration_ns = duration_ns;
	atomic_store(&c->go, 0);
	atomic_store(&c->abort, 0);
	for (uint32_t q = 0; q < c->s.qps; q++) {
		c->qp[q].since = 0;
		c->qp[q].done = false;
	}
	for (uint32_t t = 0; t < T; t++) {
		struct conc_thr *th = &c->thr[t];

		th->msgs = th->enomem = th->post_ticks = th->reap_ticks = th->k0 = th->k1 = 0;
		th->t_first = th->t_end = th->cpu_ns = 0;
		th->rc = 0;
		memset(&th->err, 0, sizeof(th->err));
	}
	for (uint32_t t = 1; !rc && t < T; t++)
		if ((rc = start_share(c, t)))
			rt_error_set(err, rc, "concurrency band: cannot start sending thread %u: %s", t, strerror(rc));
	c->t0 = rt_clock_mono_ns();
	atomic_store_explicit(&c->abort, rc ? 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&c->go, 1, memory_order_release);
	if (!rc)
		run_share(&c->thr[0]);
	for (uint32_t t = 1; t < T; t++)
		if (c->thr[t].started) {
			pthread_join(c->thr[t].thr, NULL);
			c->thr[t].started = false;
		}
	if (rc)
		return rc;
	out->busy_timed = true;
	for (uint32_t t = 0; t < T; t++) {
		struct conc_thr *th = &c->thr[t];

		if (th->rc && th->rc != ECANCELED && !rc) {
			*err = th->err;
			rc = th->rc;
		}
		out->msgs += th->msgs;
		out->enomem += th->enomem;
		out->cpu_ns += (double)th->cpu_ns;
		if (th->t_end > t_last)
			t_last = th->t_end;
		if (th->k1 > th->k0 && th->t_end > th->t_first) {
			double ns_per_tick = (double)(th->t_end - th->t_first) / (double)(th->k1 - th->k0);

			out->post_ns += (double)th->post_ticks * ns_per_tick;
			out->reap_ns += (double)th->reap_ticks * ns_per_tick;
		} else {
			out->busy_timed = false;
		}
	}
	if (rc)
		return rc;
	out->wall_ns = t_last > c->t0 ? (double)(t_last - c->t0) : 1;
	if (!out->busy_timed)
		out->post_ns = out->reap_ns = 0;
	return 0;
}
