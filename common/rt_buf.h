/* SPDX-License-Identifier: MIT */
/*
 * A growable text buffer for building documents (exports, reports) with printf-style appends. An allocation failure is
 * sticky: it sets oom, later appends do nothing, and the caller checks oom once at the end instead of after every call.
 * Also the doubling growth of arrays read row by row (rt_array_reserve).
 */
#ifndef RT_BUF_H
#define RT_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise (struct rt_buf b = { 0 };); p is NUL-terminated whenever len > 0; release with free(b.p). */
struct rt_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Appends the formatted text; on allocation failure sets b->oom and leaves the text appended so far. */
void rt_buf_printf(struct rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s. */
void rt_buf_puts(struct rt_buf *b, const char *s);

/*
 * Growable arrays: makes room for element n of the array v (n elements in use, *cap allocated, elem_size bytes each),
 * doubling from 8. Returns the array (moved or not; *cap updated), or NULL when out of memory or the size would
 * overflow — then v and *cap are unchanged and still the caller's.
 */
void *rt_array_reserve(void *v, size_t n, size_t *cap, size_t elem_size);

#endif
