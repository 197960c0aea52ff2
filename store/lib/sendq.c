// SPDX-License-Identifier: MIT
/*
 * The safe-send bookkeeping of librtune (see rt_sendq in include/rtune/profile.h): which WR must be signaled and when
 * the send CQ must be polled before the next post, so that a send queue of sq_depth slots signaled every
 * signal_interval never overflows. Invariant: the queue can only be full when at least one signaled WR is outstanding,
 * because a WR is forced signaled once its slots would bring the unsignaled run to signal_interval, and
 * signal_interval <= depth (<= depth / 2 once WRs of several slots or adaptation come in). Also the burst tail, the
 * shared-CQ guard, the failed state and the adaptive N (a DIM-like step: decide per window, > 10 % or stay, go back
 * on a worse rate, park when stable; every division guarded).
 */
#include <rtune/profile.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_INTERVALS 8u /* an adaptation window retires this many times N WRs */
#define PARK_WINDOWS 3u

int rt_sendq_init(struct rt_sendq *q, uint32_t sq_depth, uint32_t signal_interval)
{
	memset(q, 0, sizeof(*q));
	if (sq_depth < 1 || signal_interval < 1)
		return EINVAL;
	/* the application's own queue depth wins: a profile's N larger than it becomes half of it */
	if (signal_interval > sq_depth)
		signal_interval = sq_depth > 1 ? sq_depth / 2 : 1;
	q->batches = calloc(sq_depth, sizeof(*q->batches));
	if (!q->batches)
		return ENOMEM;
	q->depth = sq_depth;
	q->signal_interval = signal_interval;
	q->min_interval = q->max_interval = signal_interval;
	return 0;
}

void rt_sendq_fini(struct rt_sendq *q)
{
	if (!q)
		return;
	if (q->cq) {
		rt_sendq_failed(q); /* its share of the CQ's counters goes with it */
		q->cq->n_qps--;
	}
	free(q->batches);
	memset(q, 0, sizeof(*q));
}

static uint32_t max_slots(const struct rt_sendq *q)
{
	return q->depth > 1 ? q->depth / 2 : 1;
}

bool rt_sendq_must_poll_slots(const struct rt_sendq *q, uint32_t slots)
{
	if (q->outstanding + slots > q->depth)
		return true;
	return q->cq && q->cq->pending_cqes >= q->cq->cq_depth;
}

bool rt_sendq_must_poll(const struct rt_sendq *q)
{
	return rt_sendq_must_poll_slots(q, 1);
}

static bool signal_needed(const struct rt_sendq *q, uint32_t slots)
{
	/*
	 * With no signaled WR outstanding, the outstanding slots are exactly the unsignaled run, so this signals before the
	 * run can fill the queue; extra voluntary signals only shorten runs. On a shared CQ each QP's run is also bounded
	 * by its share of the CQ's unsignaled limit, so the unsignaled WRs of all QPs together stay under the limit and a
	 * QP that alone never reaches N (its own credits run out first) still gets its WRs retired.
	 */
	uint32_t n = q->signal_interval;

	if (q->cq && q->cq->n_qps) {
		uint32_t share = q->cq->unsignaled_limit / q->cq->n_qps;

		if (share < 1)
			share = 1;
		if (share < n)
			n = share;
	}
	return q->unsignaled_run + slots >= n;
}

bool rt_sendq_should_signal(const struct rt_sendq *q)
{
	return signal_needed(q, 1);
}

bool rt_sendq_should_signal_burst(const struct rt_sendq *q, uint32_t slots, bool more)
{
	return signal_needed(q, slots) || !more;
}

int rt_sendq_posted_slots(struct rt_sendq *q, bool signaled, uint32_t slots, uint64_t now_ns)
{
	if (q->failed)
		return EIO;
	if (slots < 1 || slots > max_slots(q))
		return EINVAL;
	if (q->outstanding + slots > q->depth)
		return ENOSPC;
	if (!signaled && signal_needed(q, slots))
		return EINVAL;
	q->outstanding += slots;
	if (q->outstanding > q->win_peak)
		q->win_peak = q->outstanding;
	if (!signaled) {
		if (!q->unsignaled_run)
			q->run_start_ns = now_ns;
		q->unsignaled_run += slots;
		if (q->cq)
			q->cq->unsignaled += slots;
		return 0;
	}
	q->batches[(q->head + q->count) % q->depth] = q->unsignaled_run + slots;
	q->count++;
	if (q->cq) {
		q->cq->unsignaled -= q->unsignaled_run;
		q->cq->pending_cqes++;
	}
	q->unsignaled_run = 0;
	q->run_start_ns = 0;
	if (now_ns && !q->win_start_ns)
		q->win_start_ns = now_ns;
	return 0;
}

int rt_sendq_posted(struct rt_sendq *q, bool signaled)
{
	return rt_sendq_posted_slots(q, signaled, 1, 0);
}

static uint32_t clamp_interval(const struct rt_sendq *q, uint64_t n)
{
	uint32_t lo = q->min_interval, hi = q->max_interval;

	return n < lo ? lo : n > hi ? hi : (uint32_t)n;
}

/* The end of an adaptation window of wrs WRs over dt_ns: one step of N at most. */
static void adapt(struct rt_sendq *q, uint64_t wrs, uint64_t dt_ns)
{
	uint64_t rate;
	bool short_headroom = (uint64_t)q->win_peak * 4u > (uint64_t)q->depth * 3u;
	uint32_t n = q->signal_interval;
	int step = 0;

	if (dt_ns == 0) /* guard: no time passed (or an untimed caller) */
		return;
	rate = wrs * 1000000000ull / dt_ns;
	if (short_headroom) {
		/* the queue ran nearly full: smaller N, and never this large again (until re-enabled) */
		step = -1;
		if (n > q->min_interval)
			q->max_interval = n / 2u > q->min_interval ? n / 2u : q->min_interval;
	} else if (!q->prev_rate) {
		step = 1; /* the first window: try a larger N */
	} else if (rate * 10u > q->prev_rate * 11u) {
		/* better by more than 10 %: keep going the same way (up the first time) */
		step = q->dir ? q->dir : 1;
	} else if (rate * 10u < q->prev_rate * 9u) {
		step = q->dir ? -q->dir : -1; /* worse: go back */
	}
	if (step == 0 && ++q->stable >= PARK_WINDOWS)
		q->stable = PARK_WINDOWS; /* parked: rate kept as reference until it moves by > 10 % */
	else if (step)
		q->stable = 0;
	if (step || q->stable < PARK_WINDOWS || !q->prev_rate)
		q->prev_rate = rate;
	if (step) {
		uint32_t to = clamp_interval(q, step > 0 ? (uint64_t)n * 2u : n / 2u);

		if (to != n) {
			q->signal_interval = to;
			q->changes++;
		}
		q->dir = to != n ? step : 0;
	}
}

int rt_sendq_completed_at(struct rt_sendq *q, uint32_t n, uint64_t now_ns)
{
	uint32_t wrs = 0;

	if (q->failed)
		return 0;
	if (n > q->count)
		return EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		wrs += q->batches[q->head];
		q->outstanding -= q->batches[q->head];
		q->head = (q->head + 1) % q->depth;
		q->count--;
	}
	if (q->cq)
		q->cq->pending_cqes -= n;
	if (q->adaptive && now_ns && q->win_start_ns) {
		q->win_wrs += wrs;
		if (q->win_wrs >= WINDOW_INTERVALS * q->signal_interval) {
			adapt(q, q->win_wrs, now_ns > q->win_start_ns ? now_ns - q->win_start_ns : 0);
			q->win_start_ns = now_ns;
			q->win_wrs = 0;
			q->win_peak = q->outstanding;
		}
	}
	return 0;
}

int rt_sendq_completed(struct rt_sendq *q, uint32_t n)
{
	return rt_sendq_completed_at(q, n, 0);
}

uint32_t rt_sendq_failed(struct rt_sendq *q)
{
	uint32_t was = q->outstanding;

	if (q->cq && !q->failed) {
		q->cq->unsignaled -= q->unsignaled_run;
		q->cq->pending_cqes -= q->count;
	}
	q->failed = true;
	q->outstanding = q->unsignaled_run = q->head = q->count = 0;
	q->run_start_ns = 0;
	return was;
}

void rt_sendq_reset(struct rt_sendq *q)
{
	rt_sendq_failed(q);
	q->failed = false;
	q->win_start_ns = 0;
	q->win_wrs = q->win_peak = 0;
}

uint32_t rt_sendq_outstanding(const struct rt_sendq *q)
{
	return q->outstanding;
}

uint32_t rt_sendq_signaled_pending(const struct rt_sendq *q)
{
	return q->count;
}

uint64_t rt_sendq_unsignaled_age_ns(const struct rt_sendq *q, uint64_t now_ns)
{
	if (!q->unsignaled_run || !q->run_start_ns || now_ns < q->run_start_ns)
		return 0;
	return now_ns - q->run_start_ns;
}

uint32_t rt_sendq_interval(const struct rt_sendq *q)
{
	return q->signal_interval;
}

int rt_sendq_enable_adaptive(struct rt_sendq *q, uint32_t min_interval, uint32_t max_interval)
{
	uint32_t cap = max_slots(q);

	if (min_interval > max_interval)
		return EINVAL;
	q->min_interval = min_interval < 1 ? 1 : min_interval > cap ? cap : min_interval;
	q->max_interval = max_interval < q->min_interval ? q->min_interval : max_interval > cap ? cap : max_interval;
	q->signal_interval = clamp_interval(q, q->signal_interval);
	q->adaptive = true;
	q->prev_rate = 0;
	q->dir = 0;
	q->stable = 0;
	return 0;
}

int rt_sendq_cq_init(struct rt_sendq_cq *cq, uint32_t cq_depth, uint32_t unsignaled_limit)
{
	memset(cq, 0, sizeof(*cq));
	if (cq_depth < 1)
		return EINVAL;
	cq->cq_depth = cq_depth;
	cq->unsignaled_limit = unsignaled_limit ? unsignaled_limit : (cq_depth > 1 ? cq_depth / 2 : 1);
	return 0;
}

int rt_sendq_attach(struct rt_sendq *q, struct rt_sendq_cq *cq)
{
	if (q->outstanding || q->count || q->cq)
		return EINVAL;
	q->cq = cq;
	cq->n_qps++;
	return 0;
}
