// SPDX-License-Identifier: MIT
/*
 * The safe-send bookkeeping of librtune (see rt_sendq in include/rtune/profile.h): which WR must be signaled and when
 * the send CQ must be polled before the next post, so that a send queue of sq_depth WRs signaled every
 * signal_interval never overflows. Invariant: the queue can only be full when at least one signaled WR is outstanding,
 * because a WR is forced signaled once signal_interval - 1 unsignaled ones precede it and signal_interval <= depth.
 */
#include <rtune/profile.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rt_sendq_init(struct rt_sendq *q, uint32_t sq_depth, uint32_t signal_interval)
{
	memset(q, 0, sizeof(*q));
	if (sq_depth < 1 || signal_interval < 1 || signal_interval > sq_depth)
		return EINVAL;
	q->batches = calloc(sq_depth, sizeof(*q->batches));
	if (!q->batches)
		return ENOMEM;
	q->depth = sq_depth;
	q->signal_interval = signal_interval;
	return 0;
}

void rt_sendq_fini(struct rt_sendq *q)
{
	if (!q)
		return;
	free(q->batches);
	memset(q, 0, sizeof(*q));
}

bool rt_sendq_must_poll(const struct rt_sendq *q)
{
	return q->outstanding >= q->depth;
}

bool rt_sendq_should_signal(const struct rt_sendq *q)
{
	/*
	 * With no signaled WR outstanding, the outstanding WRs are exactly the unsignaled run, so this signals before the
	 * run can fill the queue (signal_interval <= depth); extra voluntary signals only shorten runs.
	 */
	return q->unsignaled_run + 1 >= q->signal_interval;
}

int rt_sendq_posted(struct rt_sendq *q, bool signaled)
{
	if (q->outstanding >= q->depth)
		return ENOSPC;
	if (!signaled && rt_sendq_should_signal(q))
		return EINVAL;
	q->outstanding++;
	if (!signaled) {
		q->unsignaled_run++;
		return 0;
	}
	q->batches[(q->head + q->count) % q->depth] = q->unsignaled_run + 1;
	q->count++;
	q->unsignaled_run = 0;
	return 0;
}

int rt_sendq_completed(struct rt_sendq *q, uint32_t n)
{
	if (n > q->count)
		return EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		q->outstanding -= q->batches[q->head];
		q->head = (q->head + 1) % q->depth;
		q->count--;
	}
	return 0;
}

uint32_t rt_sendq_outstanding(const struct rt_sendq *q)
{
	return q->outstanding;
}

uint32_t rt_sendq_signaled_pending(const struct rt_sendq *q)
{
	return q->count;
}
