// SPDX-License-Identifier: MIT
/*
 * The rt_error helpers shared by every rtune library: format one line into a caller-owned struct rt_error.
 */
#include <rtune/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int rt_error_set(struct rt_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return code;
}

void rt_error_clear(struct rt_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->text[0] = '\0';
}
