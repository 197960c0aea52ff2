// SPDX-License-Identifier: MIT
/*
 * The ordered parallel map (rt_pool.h): a ring of `window` result slots. Workers claim the next index with an atomic
 * increment, wait only when it is a whole window ahead of the consumer, produce, and publish into its slot; the
 * consumer takes the slot of the index it needs. Claim order equals index order, so the consumer never waits on an item
 * nobody has claimed; while the slot it needs is not published, it claims and produces the next item itself (when
 * that one is within its window), so the calling thread's CPU is not left idle while a worker is preempted mid-item.
 *
 * The common case takes no lock and makes no system call: on a small VM a futex wake costs as much as parsing a
 * profile, and the first version (one mutex, a signal per item) spent a third of an import's CPU in them. A side
 * sleeps under the mutex after announcing itself (consumer_wants, room_waiters); the other side publishes with a
 * sequentially consistent store and then checks the announcement, so one of the two always sees the other (no lost
 * wake-up). Workers blocked on a full window are woken a quarter window at a time, not item by item.
 */
#include "rt_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define RT_POOL_MAX_WORKERS 64

struct slot {
	void *result;
	atomic_bool done; /* result published, not yet taken */
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t ready; /* the item the consumer wants was published */
	pthread_cond_t room;  /* the consumer advanced (workers blocked on a full window wait on it) */
	size_t n, window, wake_every;
	atomic_size_t next;	      /* next index to claim */
	atomic_size_t consumed;	      /* indexes below are consumed */
	atomic_size_t consumer_wants; /* index the consumer sleeps on, SIZE_MAX when it does not */
	atomic_uint room_waiters;     /* workers asleep on a full window */
	struct slot *slots;	      /* [window] */
	rt_pool_produce_fn produce;
	rt_pool_scratch_free_fn scratch_free;
	void *ctx;
};

static void scratch_release(rt_pool_scratch_free_fn scratch_free, void *scratch)
{
	if (scratch_free)
		scratch_free(scratch);
}

/* Blocks until index i is less than a window ahead of the consumer. */
static void wait_room(struct pool *p, size_t i)
{
	if (i < atomic_load(&p->consumed) + p->window)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add(&p->room_waiters, 1);
	while (i >= atomic_load(&p->consumed) + p->window)
		pthread_cond_wait(&p->room, &p->mu);
	atomic_fetch_sub(&p->room_waiters, 1);
	pthread_mutex_unlock(&p->mu);
}

/* Publishes item i's result, waking the consumer if it sleeps on exactly this item. */
static void publish(struct pool *p, size_t i, void *r)
{
	struct slot *s = &p->slots[i % p->window];

	s->result = r;
	atomic_store(&s->done, true);
	if (atomic_load(&p->consumer_wants) == i) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_signal(&p->ready);
		pthread_mutex_unlock(&p->mu);
	}
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	void *scratch = NULL;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		wait_room(p, i);
		publish(p, i, p->produce(p->ctx, &scratch, i));
	}
	scratch_release(p->scratch_free, scratch);
	return NULL;
}

/*
 * Takes item i's result. While it is not published the consumer helps rather than sleeps: it claims the next
 * unclaimed item, when that one is within a window of i (so it never waits for room itself), and produces it with its
 * own scratch. It sleeps only when every item it could claim is claimed, i included, so its CPU is never idle while a
 * worker is preempted mid-item or work remains that nobody has started.
 */
static void *take(struct pool *p, size_t i, void **scratch)
{
	struct slot *s = &p->slots[i % p->window];
	void *r;

	while (!atomic_load(&s->done)) {
		size_t j = atomic_load(&p->next);

		if (j < p->n && j < i + p->window) {
			if (atomic_compare_exchange_weak(&p->next, &j, j + 1))
				publish(p, j, p->produce(p->ctx, scratch, j));
			continue;
		}
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->consumer_wants, i);
		while (!atomic_load(&s->done))
			pthread_cond_wait(&p->ready, &p->mu);
		atomic_store(&p->consumer_wants, SIZE_MAX);
		pthread_mutex_unlock(&p->mu);
	}
	r = s->result;
	s->result = NULL;
	atomic_store(&s->done, false);
	/* the slot is free again: workers asleep on a full window go on once a quarter window is free (a sleeper's
	 * index is within a window of the consumer, so a multiple of wake_every is always reached on its way) */
	atomic_store(&p->consumed, i + 1);
	if (atomic_load(&p->room_waiters) && ((i + 1) % p->wake_every == 0 || i + 1 == p->n)) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->room);
		pthread_mutex_unlock(&p->mu);
	}
	return r;
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
	void *scratch = NULL; /* the calling thread's, for the items it produces while it waits */
	struct pool p = { .n = n, .produce = produce, .scratch_free = scratch_free, .ctx = ctx };
	unsigned started = 0;
	int rc = 0;

	if (workers > RT_POOL_MAX_WORKERS)
		workers = RT_POOL_MAX_WORKERS;
	if (workers == 0 || n < 2) {
		run_inline(n, produce, consume, scratch_free, ctx);
		return 0;
	}
	p.window = window ? window : 64u * workers;
	p.wake_every = p.window / 4 ? p.window / 4 : 1;
	p.slots = calloc(p.window, sizeof(*p.slots));
	if (!p.slots) {
		run_inline(n, produce, consume, scratch_free, ctx);
		return ENOMEM;
	}
	for (size_t k = 0; k < p.window; k++)
		atomic_init(&p.slots[k].done, false);
	atomic_init(&p.next, 0);
	atomic_init(&p.consumed, 0);
	atomic_init(&p.consumer_wants, SIZE_MAX);
	atomic_init(&p.room_waiters, 0);
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
	if (!started) {
		/* no worker at all: the calling thread does the work itself */
		pthread_cond_destroy(&p.room);
		pthread_cond_destroy(&p.ready);
		pthread_mutex_destroy(&p.mu);
		free(p.slots);
		run_inline(n, produce, consume, scratch_free, ctx);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		consume(ctx, i, take(&p, i, &scratch));
	for (unsigned t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	scratch_release(scratch_free, scratch);
	pthread_cond_destroy(&p.room);
	pthread_cond_destroy(&p.ready);
	pthread_mutex_destroy(&p.mu);
	free(p.slots);
	return rc;
}

unsigned rt_pool_workers(unsigned max)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/* the calling thread takes one CPU: it consumes, and produces whenever it would otherwise wait */
	if (cpus <= 1)
		return 0;
	return (unsigned long)(cpus - 1) < max ? (unsigned)(cpus - 1) : max;
}
