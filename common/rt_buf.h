/* SPDX-License-Identifier: MIT */
/*
 * A growable text buffer for building documents (exports, reports) with printf-style appends. An allocation failure is
 * sticky: it sets oom, later appends do nothing, and the caller checks oom once at the end instead of after every call.
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

#endif
