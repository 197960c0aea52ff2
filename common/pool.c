// SPDX-License-Identifier: MIT
/*
 * The ordered parallel map (rt_pool.h): a ring of `window` result slots guarded by one mutex. Workers claim the next
 * index when its slot is free (the consumer is less than a window behind), produce outside the lock and publish; the
 * consumer waits for the slot of the index it needs, takes the result and frees the slot. Claim order equals index
 * order, so the consumer never waits on an item nobody has claimed.
 */
#include "rt_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define RT_POOL_MAX_WORKERS 64

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t ready; /* a result was published (the consumer waits on it) */
	pthread_cond_t room;  /* a slot was freed (workers wait on it) */
	size_t n, window;
	size_t next;	 /* next index to claim */
	size_t consumed; /* indexes below are consumed */
	void **result;	 /* [window] */
	bool *done;	 /* [window] */
	rt_pool_produce_fn produce;
	rt_pool_scratch_free_fn scratch_free;
	void *ctx;
};

static void scratch_release(rt_pool_scratch_free_fn scratch_free, void *scratch)
{
	if (scratch_free)
		scratch_free(scratch);
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	void *scratch = NULL;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		size_t i;
		void *r;

		while (p->next < p->n && p->next >= p->consumed + p->window)
			pthread_cond_wait(&p->room, &p->mu);
		if (p->next >= p->n)
			break;
		i = p->next++;
		pthread_mutex_unlock(&p->mu);
		r = p->produce(p->ctx, &scratch, i);
		pthread_mutex_lock(&p->mu);
		p->result[i % p->window] = r;
		p->done[i % p->window] = true;
		if (i == p->consumed)
			pthread_cond_signal(&p->ready);
	}
	pthread_mutex_unlock(&p->mu);
	scratch_release(p->scratch_free, scratch);
	return NULL;
}

static void run_inline(size_t n, rt_pool_produce_fn produce, rt_pool_consume_fn consume,
		       rt_pool_scratch_free_fn scratch_free, void *ctx)
{
	void *scratch = NULL;

	for (size_t i = 0; i < n; i++)
		consume(ctx, i, produce(ctx, &scratch, i));
	scratch_release(scratch_free, scratch);
}

int rt_pool_ordered(size_t n, unsigned workers, size_t window, rt_pool_produce_fn produce, rt_pool_consume_fn consume,
		    rt_pool_scratch_free_fn scratch_free, void *ctx)
{
	pthread_t tid[RT_POOL_MAX_WORKERS];
	struct pool p = { .n = n, .produce = produce, .scratch_free = scratch_free, .ctx = ctx };
	void *scratch = NULL; /* the calling thread's, when it produces (no worker started) */
	unsigned started = 0;
	int rc = 0;

	if (workers > RT_POOL_MAX_WORKERS)
		workers = RT_POOL_MAX_WORKERS;
	if (workers == 0 || n < 2) {
		run_inline(n, produce, consume, scratch_free, ctx);
		return 0;
	}
	p.window = window ? window : 64u * workers;
	p.result = calloc(p.window, sizeof(*p.result));
	p.done = calloc(p.window, sizeof(*p.done));
	if (!p.result || !p.done) {
		free(p.result);
		free(p.done);
		run_inline(n, produce, consume, scratch_free, ctx);
		return ENOMEM;
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.ready, NULL);
	pthread_cond_init(&p.room, NULL);
	for (; started < workers; started++) {
		int e = pthread_create(&tid[started], NULL, worker, &p);

		if (e) {
			rc = e;
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		void *r;

		pthread_mutex_lock(&p.mu);
		if (!started && p.next == i) {
			/* no worker at all: produce it here */
			p.next++;
			pthread_mutex_unlock(&p.mu);
			r = produce(ctx, &scratch, i);
			pthread_mutex_lock(&p.mu);
		} else {
			while (!p.done[i % p.window])
				pthread_cond_wait(&p.ready, &p.mu);
			r = p.result[i % p.window];
			p.done[i % p.window] = false;
		}
		p.consumed = i + 1;
		pthread_cond_broadcast(&p.room);
		pthread_mutex_unlock(&p.mu);
		consume(ctx, i, r);
	}
	for (unsigned t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	scratch_release(scratch_free, scratch);
	pthread_cond_destroy(&p.room);
	pthread_cond_destroy(&p.ready);
	pthread_mutex_destroy(&p.mu);
	free(p.result);
	free(p.done);
	return rc;
}

unsigned rt_pool_workers(unsigned max)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus <= 1)
		return 0;
	return (unsigned long)cpus < max ? (unsigned)cpus : max;
}
