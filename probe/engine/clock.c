// SPDX-License-Identifier: MIT
/*
 * Clock selection, counter calibration against CLOCK_MONOTONIC and the resolution measurement (see rt_clock.h).
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

/* The first "flags" line of text (its length in *len), or NULL. */
static const char *flags_line(const char *text, size_t *len)
{
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');

		*len = eol ? (size_t)(eol - p) : strlen(p);
		if (strncmp(p, "flags", 5) == 0 && memchr(p, ':', *len))
			return p;
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

bool rt_clock_cpuinfo_has_flag(const char *text, const char *flag)
{
	size_t len = 0;
	const char *l = flags_line(text, &len);

	return l && has_word(l, len, flag);
}

bool rt_clock_cpuinfo_has_invariant_tsc(const char *text)
{
	return rt_clock_cpuinfo_has_flag(text, "constant_tsc") && rt_clock_cpuinfo_has_flag(text, "nonstop_tsc");
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
	c->kind = RT_CLOCK_GETTIME;
	c->tsc = false;
	c->ns_per_tick = 1.0;
	c->tsc_ghz = 0;
	snprintf(c->name, sizeof(c->name), "clock_gettime(CLOCK_MONOTONIC)");
	snprintf(c->reason, sizeof(c->reason), "%s", why);
}

/* Counter ticks per ns over one window of ms milliseconds of busy waiting, read through c's kind. */
static double counter_window(const struct rt_clock *c, unsigned ms)
{
	uint64_t n0 = rt_clock_mono_ns(), t0 = rt_clock_now(c), n1, t1;

	do
		n1 = rt_clock_mono_ns();
	while (n1 - n0 < (uint64_t)ms * 1000000ull);
	t1 = rt_clock_now(c);
	return (double)(t1 - t0) / (double)(n1 - n0);
}

/* Calibrates counter kind against CLOCK_MONOTONIC in two windows; true (c filled) when they agree within 0.5 %. */
static bool use_counter(struct rt_clock *c, enum rt_clock_kind kind, const char *name, unsigned ms)
{
	struct rt_clock raw = { .kind = kind, .tsc = true, .ns_per_tick = 1 };
	double a = counter_window(&raw, ms), b = counter_window(&raw, ms);

	if (!(a > 0.0005 && b > 0.0005 && fabs(a - b) / a < 0.005))
		return false;
	c->kind = kind;
	c->tsc = true;
	c->tsc_ghz = (a + b) / 2;
	c->ns_per_tick = 1.0 / c->tsc_ghz;
	snprintf(c->name, sizeof(c->name), "%s", name);
	return true;
}

/* The smallest non-zero step between two back-to-back reads of c, in ns (bounded: at most 20 ms of reading). */
static double measure_resolution(const struct rt_clock *c)
{
	uint64_t best = UINT64_MAX, start = rt_clock_mono_ns();

	for (int i = 0; i < 20000 || best == UINT64_MAX; i++) {
		uint64_t t0 = rt_clock_now(c), t1 = rt_clock_now(c);

		if (t1 > t0 && t1 - t0 < best)
			best = t1 - t0;
		if ((i & 1023) == 0 && rt_clock_mono_ns() - start > 20000000ull)
			break;
	}
	return best == UINT64_MAX ? 0 : (double)best * c->ns_per_tick;
}

#if defined(__aarch64__)
static uint64_t read_cntfrq(void)
{
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}
#endif

static void choose(struct rt_clock *c, const char *cpuinfo_path, unsigned ms)
{
#if defined(__x86_64__) || defined(__i386__)
	char *text = read_text(cpuinfo_path ? cpuinfo_path : "/proc/cpuinfo");
	bool inv = text && rt_clock_cpuinfo_has_invariant_tsc(text);
	bool rdtscp = text && rt_clock_cpuinfo_has_flag(text, "rdtscp");

	free(text);
	if (!inv) {
		use_gettime(c, "TSC not invariant (constant_tsc and nonstop_tsc not both present)");
		return;
	}
	if (!use_counter(c, rdtscp ? RT_CLOCK_RDTSCP : RT_CLOCK_LFENCE_RDTSC, rdtscp ? "rdtscp" : "lfence+rdtsc", ms)) {
		use_gettime(c, "TSC calibration windows disagree by more than 0.5 %");
		return;
	}
	snprintf(c->reason, sizeof(c->reason),
		 "invariant TSC, calibrated against CLOCK_MONOTONIC (%.4f GHz), read serialised (%s)", c->tsc_ghz,
		 rdtscp ? "rdtscp; lfence" : "no rdtscp: lfence; rdtsc; lfence");
#elif defined(__aarch64__)
	double frq_ghz = (double)read_cntfrq() / 1e9;

	(void)cpuinfo_path;
	if (!(frq_ghz > 0.0005 && frq_ghz < 20)) {
		use_gettime(c, "cntfrq_el0 reports no plausible counter frequency");
		return;
	}
	if (!use_counter(c, RT_CLOCK_CNTVCT, "cntvct_el0", ms)) {
		use_gettime(c, "cntvct_el0 calibration windows disagree by more than 0.5 %");
		return;
	}
	if (fabs(c->tsc_ghz - frq_ghz) / frq_ghz < 0.01) {
		/* the architected frequency is exact where it is right: use it rather than the measured estimate */
		c->tsc_ghz = frq_ghz;
		c->ns_per_tick = 1.0 / frq_ghz;
		snprintf(c->reason, sizeof(c->reason),
			 "virtual counter at cntfrq_el0 %.3f MHz (checked against "
			 "CLOCK_MONOTONIC)",
			 frq_ghz * 1e3);
	} else {
		snprintf(c->reason, sizeof(c->reason),
			 "virtual counter; cntfrq_el0 says %.3f MHz but it runs at "
			 "%.3f MHz against CLOCK_MONOTONIC: the measured rate is used",
			 frq_ghz * 1e3, c->tsc_ghz * 1e3);
	}
#else
	(void)cpuinfo_path;
	(void)ms;
	use_gettime(c, "no usable cycle counter on this architecture");
#endif
}

void rt_clock_init(struct rt_clock *c, const char *cpuinfo_path, unsigned calib_ms)
{
	memset(c, 0, sizeof(*c));
	choose(c, cpuinfo_path, calib_ms ? calib_ms : 20);
	c->resolution_ns = measure_resolution(c);
}
