// SPDX-License-Identifier: MIT
/*
 * The growable text buffer (rt_buf.h): doubling growth, vsnprintf straight into the free space.
 */
#include "rt_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

void rt_buf_printf(struct rt_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
			char *np = realloc(b->p, cap);

			if (!np) {
				b->oom = true;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

void rt_buf_puts(struct rt_buf *b, const char *s)
{
	rt_buf_printf(b, "%s", s);
}

void *rt_array_reserve(void *v, size_t n, size_t *cap, size_t elem_size)
{
	size_t nc;
	void *nv;

	if (n < *cap)
		return v;
	nc = *cap ? *cap * 2 : 8;
	if (nc < *cap || (elem_size && nc > SIZE_MAX / elem_size))
		return NULL;
	nv = realloc(v, nc * elem_size);
	if (nv)
		*cap = nc;
	return nv;
}
