/* SPDX-License-Identifier: MIT */
/*
 * An ordered parallel map for pipelines whose items are prepared independently (read and parse a file) but must be
 * consumed one at a time, in order, by one thread (written to a store, printed). Worker threads run produce() ahead of
 * the consumer, at most a window of results ahead so memory stays bounded; the calling thread runs consume() on each
 * result in index order and, rather than wait for a result that is not ready, produces the next unclaimed item itself.
 * Results are handed over, never shared: whatever produce() returns, consume() owns.
 */
#ifndef RT_POOL_H
#define RT_POOL_H

#include <stddef.h>

/* Prepares item i; returns its result (may be NULL) for consume(). Runs on any thread, the caller's included:
 * thread-safe. *scratch is the producing thread's own slot (NULL before its first item) for state reused from item to
 * item (buffers, an arena); the pool hands it to scratch_free() once the thread has produced its last item. */
typedef void *(*rt_pool_produce_fn)(void *ctx, void **scratch, size_t i);
/* Releases a producing thread's scratch (called with NULL too). */
typedef void (*rt_pool_scratch_free_fn)(void *scratch);
/* Takes item i's result, on the calling thread, in order of i. */
typedef void (*rt_pool_consume_fn)(void *ctx, size_t i, void *result);

/*
 * Runs produce(ctx, i) for every i in [0, n) on `workers` threads and consume(ctx, i, result) on the calling thread in
 * order of i, with at most `window` (>= 1; 0 means 64 per worker) results produced and not yet consumed. The calling
 * thread never idles while an item within its window is unclaimed: it produces it (with a scratch of its own), and
 * sleeps only when every such item is claimed. A window that covers the consumer's longest stalls (a commit that waits
 * on fsync) lets the workers run on through them. workers == 0, or n < 2, runs everything on the calling thread
 * (produce then consume, item by item). Every item is produced and consumed exactly once whatever happens: if no
 * thread can be started the calling thread does the work itself.
 * Returns 0, or the errno of a failed pthread_create (the work is still complete: fewer threads did it).
 */
int rt_pool_ordered(size_t n, unsigned workers, size_t window, rt_pool_produce_fn produce, rt_pool_consume_fn consume,
		    rt_pool_scratch_free_fn scratch_free, void *ctx);

/* Worker threads worth starting beside the calling thread, which consumes and produces too: one fewer than the online
 * CPUs, at most max; 0 on one CPU. */
unsigned rt_pool_workers(unsigned max);

#endif
