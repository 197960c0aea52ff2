// SPDX-License-Identifier: MIT
/*
 * Clock selection and TSC calibration (see rt_clock.h).
 */
#include "rt_clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_word(const char *line, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++) {
		if (memcmp(line + i, word, wl) != 0)
			continue;
		if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t' || line[i - 1] == ':') &&
		    (i + wl == len || line[i + wl] == ' ' || line[i + wl] == '\t' || line[i + wl] == '\n'))
			return true;
	}
	return false;
}

bool rt_clock_cpuinfo_has_invariant_tsc(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (strncmp(p, "flags", 5) == 0 && memchr(p, ':', len))
			return has_word(p, len, "constant_tsc") && has_word(p, len, "nonstop_tsc");
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		got = fread(buf + len, 1, 4096, f);
		len += got;
		if (got == 0)
			break;
		/* the first CPU's block is enough */
		if (len > 16384)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

uint64_t rt_clock_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void use_gettime(struct rt_clock *c, const char *why)
{
	c->tsc = false;
	c->ns_per_tick = 1.0;
	c->tsc_ghz = 0;
	snprintf(c->name, sizeof(c->name), "clock_gettime(CLOCK_MONOTONIC)");
	snprintf(c->reason, sizeof(c->reason), "%s", why);
}

#if defined(__x86_64__) || defined(__i386__)
/* ticks per ns over one window of ms milliseconds of busy waiting */
static double tsc_window(unsigned ms)
{
	struct rt_clock raw = { .tsc = true, .ns_per_tick = 1 };
	uint64_t n0 = rt_clock_mono_ns(), t0 = rt_clock_now(&raw), n1, t1;

	do
		n1 = rt_clock_mono_ns();
	while (n1 - n0 < (uint64_t)ms * 1000000ull);
	t1 = rt_clock_now(&raw);
	return (double)(t1 - t0) / (double)(n1 - n0);
}
#endif

void rt_clock_init(struct rt_clock *c, const char *cpuinfo_path, unsigned calib_ms)
{
	char *text = read_text(cpuinfo_path ? cpuinfo_path : "/proc/cpuinfo");
	bool inv = text && rt_clock_cpuinfo_has_invariant_tsc(text);

	free(text);
	memset(c, 0, sizeof(*c));
#if defined(__x86_64__) || defined(__i386__)
	if (inv) {
		double a = tsc_window(calib_ms ? calib_ms : 20), b = tsc_window(calib_ms ? calib_ms : 20);

		if (a > 0.05 && b > 0.05 && fabs(a - b) / a < 0.005) {
			c->tsc = true;
			c->tsc_ghz = (a + b) / 2;
			c->ns_per_tick = 1.0 / c->tsc_ghz;
			snprintf(c->name, sizeof(c->name), "rdtsc");
			snprintf(c->reason, sizeof(c->reason),
				 "invariant TSC, calibrated against CLOCK_MONOTONIC (%.4f GHz)", c->tsc_ghz);
			return;
		}
		use_gettime(c, "TSC calibration windows disagree by more than 0.5 %");
		return;
	}
	use_gettime(c, "TSC not invariant (constant_tsc and nonstop_tsc not both present)");
#else
	(void)inv;
	(void)calib_ms;
	use_gettime(c, "no TSC on this architecture");
#endif
}
