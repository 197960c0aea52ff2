// SPDX-License-Identifier: MIT
/* The agent's one-line log (agent_log.h): formats into a bounded buffer and writes it with one write(2). */
#include "agent_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rt_agent_log(enum rt_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "", "", "", "error: ", "warning: ", "", "", "debug: " };
	char line[1024];
	int n;
	va_list ap;

	if (getenv("JOURNAL_STREAM"))
		n = snprintf(line, sizeof(line), "<%d>", (int)level);
	else
		n = snprintf(line, sizeof(line), "rtune agent: %s", names[level & 7]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	n = (int)strlen(line);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
