// SPDX-License-Identifier: MIT
/*
 * rtune's jansson allocation hooks (rt_json_arena.h), installed once per process. Two uses:
 * - A per-thread bump allocator for the jansson trees of documents read in bulk: a fleet report reads 100,000 profile
 *   documents, an import tens of thousands, each parsed into a tree of a few hundred small objects that lives only
 *   until its fields are copied out; with malloc, building and freeing those trees cost as much CPU as the parsing
 *   itself. Allocations are served from the calling thread's arena while one is active (rt_json_arena_begin ..
 *   rt_json_arena_end) and a tree is dropped by rt_json_arena_reset(), without walking it.
 * - A parse that survives allocation failure (rt_json_loadb): jansson 2.14's lexer ignores a failed allocation while
 *   it saves a string's text and later asserts on the escape sequence it lost (load.c, lex_scan_string: the process
 *   aborts). Once an allocation fails during such a parse, the rest of the parse is served from a per-thread reserve
 *   and the document is refused as out of memory.
 * Every other allocation passes through to the allocator that was installed before (malloc by default), so jansson
 * used elsewhere in the process behaves as before.
 */
#include "rt_json_arena.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The reserve of rt_json_loadb(): used only after an allocation failed during that thread's parse. */
#define RT_JSON_RESERVE_MIN (64u << 10)
#define RT_JSON_RESERVE_KEEP (1u << 20) /* a larger reserve is released after its parse */
static _Thread_local struct {
	unsigned char *base;
	size_t cap, used;
	bool parsing, failed;
} rsv;
static pthread_key_t rsv_key; /* frees a thread's reserve when it exits */

static void rsv_release(void *p)
{
	free(p);
}

/* An allocation failed: during rt_json_loadb(), note it and serve n from the reserve (NULL when it is used up). */
static void *rsv_malloc(size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;

	if (!rsv.parsing || need < n)
		return NULL;
	rsv.failed = true;
	if (rsv.cap - rsv.used < need)
		return NULL;
	rsv.used += need;
	return rsv.base + rsv.used - need;
}

static bool in_reserve(const void *p)
{
	return rsv.base && (const unsigned char *)p >= rsv.base && (const unsigned char *)p < rsv.base + rsv.cap;
}

static struct rt_json_arena_chunk *chunk_new(size_t min)
{
	size_t cap = min > RT_JSON_ARENA_CHUNK ? min : RT_JSON_ARENA_CHUNK;
	struct rt_json_arena_chunk *c = prev_malloc(sizeof(*c) + cap);

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

	if (!a) {
		void *p = prev_malloc(n);

		return p ? p : rsv_malloc(n);
	}
	need = (n + 15) & ~(size_t)15;
	if (need < n)
		return NULL;
	c = a->head;
	if (!c || c->cap - c->used < need) {
		c = chunk_new(need);
		if (!c)
			return rsv_malloc(n);
		c->next = a->head;
		a->head = c;
	}
	c->used += need;
	return c->data + c->used - need;
}

/* jansson's free hook: memory of the active arena is given back only by rt_json_arena_reset(), the reserve's when its
 * parse ends; anything else goes to the previous allocator. */
static void arena_free(void *p)
{
	struct rt_json_arena *a = cur_arena;

	if (!p || in_reserve(p))
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
	(void)pthread_key_create(&rsv_key, rsv_release);
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
			prev_free(a->head);
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

		prev_free(a->head);
		a->head = n;
	}
	if (cur_arena == a)
		cur_arena = NULL;
}

json_t *rt_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *error)
{
	size_t want = len > (SIZE_MAX - RT_JSON_RESERVE_MIN) / 16 ? SIZE_MAX : RT_JSON_RESERVE_MIN + 16 * len;
	json_t *root;

	pthread_once(&hooks_once, install_hooks);
	if (rsv.cap < want) {
		unsigned char *b = malloc(want);

		if (!b)
			goto oom;
		free(rsv.base);
		rsv.base = b;
		rsv.cap = want;
		(void)pthread_setspecific(rsv_key, b);
	}
	rsv.used = 0;
	rsv.failed = false;
	rsv.parsing = true;
	root = json_loadb(buf, len, flags, error);
	rsv.parsing = false;
	if (rsv.failed) {
		json_decref(root); /* frees of reserve memory are ignored */
		root = NULL;
	}
	rsv.used = 0;
	if (rsv.cap > RT_JSON_RESERVE_KEEP) {
		free(rsv.base);
		rsv.base = NULL;
		rsv.cap = 0;
		(void)pthread_setspecific(rsv_key, NULL);
	}
	if (root || !rsv.failed)
		return root;
oom:
	if (error) {
		memset(error, 0, sizeof(*error));
		snprintf(error->text, sizeof(error->text), "out of memory");
	}
	errno = ENOMEM;
	return NULL;
}

json_t *rt_json_loads(const char *text, size_t flags, json_error_t *error)
{
	return rt_json_loadb(text, strlen(text), flags, error);
}
