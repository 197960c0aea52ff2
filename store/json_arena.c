// SPDX-License-Identifier: MIT
/*
 * A per-thread bump allocator for the jansson trees of documents read in bulk (rt_json_arena.h): a fleet report reads
 * 100,000 profile documents, an import tens of thousands, each parsed by json_loadb() into a tree of a few hundred
 * small objects that lives only until its fields are copied out; with malloc, building and freeing those trees cost
 * as much CPU as the parsing itself. jansson lets a program supply its allocator (json_set_alloc_funcs); this installs
 * one, once, that serves allocations from the calling thread's arena while one is active (rt_json_arena_begin ..
 * rt_json_arena_end) and passes every other allocation through to the allocator that was installed before (malloc by
 * default), so jansson used elsewhere in the process behaves as before. A tree in the arena is dropped by
 * rt_json_arena_reset(), without walking it.
 */
#include "rt_json_arena.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define RT_JSON_ARENA_CHUNK (256u << 10)

struct rt_json_arena_chunk {
	struct rt_json_arena_chunk *next;
	size_t cap, used;
	_Alignas(16) unsigned char data[];
};

static json_malloc_t prev_malloc;
static json_free_t prev_free;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static _Thread_local struct rt_json_arena *cur_arena;

static struct rt_json_arena_chunk *chunk_new(size_t min)
{
	size_t cap = min > RT_JSON_ARENA_CHUNK ? min : RT_JSON_ARENA_CHUNK;
	struct rt_json_arena_chunk *c = malloc(sizeof(*c) + cap);

	if (!c)
		return NULL;
	c->next = NULL;
	c->cap = cap;
	c->used = 0;
	return c;
}

/* jansson's allocation hook: from the thread's arena when one is active, else the previous allocator. */
static void *arena_malloc(size_t n)
{
	struct rt_json_arena *a = cur_arena;
	struct rt_json_arena_chunk *c;
	size_t need;

	if (!a)
		return prev_malloc(n);
	need = (n + 15) & ~(size_t)15;
	if (need < n)
		return NULL;
	c = a->head;
	if (!c || c->cap - c->used < need) {
		c = chunk_new(need);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
	}
	c->used += need;
	return c->data + c->used - need;
}

/* jansson's free hook: memory of the active arena is given back only by rt_json_arena_reset(); anything else goes to
 * the previous allocator. */
static void arena_free(void *p)
{
	struct rt_json_arena *a = cur_arena;

	if (!p)
		return;
	if (a)
		for (const struct rt_json_arena_chunk *c = a->head; c; c = c->next)
			if ((const unsigned char *)p >= c->data && (const unsigned char *)p < c->data + c->cap)
				return;
	prev_free(p);
}

static void install_hooks(void)
{
	json_get_alloc_funcs(&prev_malloc, &prev_free);
	if (!prev_malloc || !prev_free) {
		prev_malloc = malloc;
		prev_free = free;
	}
	json_set_alloc_funcs(arena_malloc, arena_free);
}

void rt_json_arena_begin(struct rt_json_arena *a)
{
	pthread_once(&hooks_once, install_hooks);
	cur_arena = a;
}

void rt_json_arena_reset(struct rt_json_arena *a)
{
	struct rt_json_arena_chunk *keep = NULL;

	/* keep one chunk of the usual size for the next document; release the others (an oversized one too: one huge
	 * document must not pin its memory for the rest of the run) */
	while (a->head) {
		struct rt_json_arena_chunk *n = a->head->next;

		if (!keep && a->head->cap == RT_JSON_ARENA_CHUNK) {
			keep = a->head;
			keep->next = NULL;
			keep->used = 0;
		} else {
			free(a->head);
		}
		a->head = n;
	}
	a->head = keep;
}

void rt_json_arena_leave(struct rt_json_arena *a)
{
	rt_json_arena_reset(a);
	if (cur_arena == a)
		cur_arena = NULL;
}

void rt_json_arena_end(struct rt_json_arena *a)
{
	while (a->head) {
		struct rt_json_arena_chunk *n = a->head->next;

		free(a->head);
		a->head = n;
	}
	if (cur_arena == a)
		cur_arena = NULL;
}
