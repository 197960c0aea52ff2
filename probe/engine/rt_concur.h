/* SPDX-License-Identifier: MIT */
/*
 * Internal to the engine: the concurrency band of the loopback rate sweep. Q extra RC QP pairs on the loopback
 * endpoints' PDs and buffers, driven by T sending threads (thread t owns the QPs t, t + T, ...; T <= Q), each thread with
 * one send CQ shared by its QPs (as UCX workers, NCCL proxies and perftest -q do: one CQ per polling context, never a CQ
 * shared between threads, so the data path takes no lock), and on the responder side one receive CQ shared by the Q
 * responder QPs, polled and refilled by the loopback responder thread (rt_conc_resp_step). A repetition runs the T
 * threads at the same signaling interval for the same time and reports the aggregate message rate and the busy CPU
 * per message summed over the threads.
 */
#ifndef RT_CONCUR_H
#define RT_CONCUR_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rtune/error.h>
#include "rt_link.h"

#define RT_CONC_MAX_QPS 64u
#define RT_CONC_MAX_THREADS 16u

struct rt_conc_setup {
	struct rt_ep *cep, *rep;     /* the loopback endpoints: their PDs, MRs and buffers are shared (borrowed) */
	const struct rt_addr *addr;  /* loopback addressing (path attributes included) */
	uint32_t qps, threads;	     /* Q and T, 1 <= T <= Q <= RT_CONC_MAX_QPS, T <= RT_CONC_MAX_THREADS */
	uint32_t sq_depth;	     /* per QP */
	uint32_t max_inline;	     /* max_inline_data of the QPs */
	uint32_t msg_bytes;	     /* largest message of the band (receive buffer length) */
	const int *cpus;	     /* cpus[t]: the CPU sending thread t is pinned to, -1 = not pinned; cpus[0] is the
					caller's (the measuring thread runs thread 0's share itself) */
	bool yield;		     /* sched_yield() while waiting (threads share CPUs with the responder) */
	volatile sig_atomic_t *stop; /* set asynchronously: EINTR */
	volatile sig_atomic_t *peer_dead; /* set by the responder thread when it fails */
	double timeout_ns;		  /* longest wait without a completion */
};

struct rt_conc;

/*
 * Creates the T send CQs, the shared receive CQ and the Q connected QP pairs, and posts the responder's receives.
 * Returns 0 with *out, or an errno + err naming the object that could not be created (everything created released).
 */
int rt_conc_create(const struct rt_conc_setup *s, struct rt_conc **out, struct rt_error *err);
/* Destroys QPs, then CQs; NULL is a no-op. Only when no thread uses it (the responder joined). */
void rt_conc_destroy(struct rt_conc *c);
/* Responder side, one non-blocking step: reaps the shared receive CQ and reposts each QP's receives. Returns 0, or EIO
 * with err on a completion error. Called by the responder thread only. */
int rt_conc_resp_step(struct rt_conc *c, struct rt_error *err);
/* Whether a sending thread's CPU was refused (it then ran unpinned); false before the first repetition. */
bool rt_conc_pin_refused(const struct rt_conc *c);

/*
 * One throughput repetition: T threads post op of size bytes (inline or not), one signaled WR every n_sig per QP,
 * round robin over their QPs, for about duration_ns each, then drain. out: messages of all threads, the wall time from
 * the common start to the last thread's drained queue, busy ns (post + reaping polls, summed over threads; rdtsc
 * converted per thread), ENOMEM count. Returns 0, or an errno + err (the first thread's failure: EIO completion error,
 * ETIMEDOUT no progress, EINTR stop, ECONNRESET responder failed, or ibv_post_send's errno); every thread is joined.
 */
int rt_conc_rate(struct rt_conc *c, enum rt_opcode op, uint32_t size, bool inl, uint32_t n_sig, double duration_ns,
		 struct rt_rate_rep *out, struct rt_error *err);

#endif
