/* SPDX-License-Identifier: MIT */
/*
 * A per-thread arena for jansson's allocations while a document is parsed and read (json_arena.c). Readers of many
 * documents (`rtune import`, `rtune report`) parse each into a tree of a few hundred small values that lives only until
 * its fields are copied out; from an arena those trees cost no malloc/free per value and are dropped without a walk.
 */
#ifndef RT_JSON_ARENA_H
#define RT_JSON_ARENA_H

#include <stddef.h>

#include <jansson.h>

struct rt_json_arena_chunk;
struct rt_json_arena {
	struct rt_json_arena_chunk *head;
};

/* Makes a (zero-initialised, or left with rt_json_arena_leave()) the calling thread's arena: jansson allocates from
 * it until rt_json_arena_leave() or rt_json_arena_end() (installs rtune's jansson allocation hooks once per process;
 * allocations on other threads, and after the arena is left or ended, go to the allocator that was installed
 * before). Never fails: when a chunk cannot be allocated, jansson sees an allocation failure.
 * Anything jansson hands out for the caller to free() (json_dumps' string) must not be made while the arena is
 * active: it would come from the arena. */
void rt_json_arena_begin(struct rt_json_arena *a);
/* Drops everything allocated from a (every jansson value built since the last reset, no json_decref needed), keeping
 * one chunk for reuse. Values from a must not be used afterwards. */
void rt_json_arena_reset(struct rt_json_arena *a);
/* Resets a and detaches it from the thread, keeping its chunk for the next rt_json_arena_begin() (on any thread). */
void rt_json_arena_leave(struct rt_json_arena *a);
/* Releases a and detaches it from the thread. */
void rt_json_arena_end(struct rt_json_arena *a);

/*
 * json_loadb() that survives allocation failure: jansson 2.14 aborts (an assert in its lexer) when an allocation fails
 * while it saves a string with escape sequences. Here an allocation that fails during the parse is served from a
 * per-thread reserve of 64 KB + 16 bytes per input byte (allocated on the first call, grown for a larger document,
 * released at thread exit; one above 1 MB after its parse), and the document is refused. Returns the tree as
 * json_loadb() would, with an arena active too; or NULL and error as json_loadb() gives them for a bad document; or
 * NULL, errno ENOMEM and error->text "out of memory" when an allocation failed (the partial tree is freed) or the
 * reserve cannot be had. rtune parses every JSON text through this or rt_json_loads() (NUL-terminated text).
 */
json_t *rt_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *error);
json_t *rt_json_loads(const char *text, size_t flags, json_error_t *error);

#endif
