/* SPDX-License-Identifier: MIT */
/*
 * The engine's timestamp source. rdtsc is used only when the CPU says its TSC is invariant (both constant_tsc and
 * nonstop_tsc in /proc/cpuinfo) and a calibration against CLOCK_MONOTONIC is self-consistent; otherwise every timestamp
 * is clock_gettime(CLOCK_MONOTONIC). The choice and its reason are recorded in the run's environment.
 */
#ifndef RT_CLOCK_H
#define RT_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct rt_clock {
	bool tsc;	    /* timestamps are TSC ticks */
	double ns_per_tick; /* 1.0 when !tsc (ticks are ns) */
	double tsc_ghz;	    /* 0 when !tsc */
	char name[32];	    /* "rdtsc" or "clock_gettime(CLOCK_MONOTONIC)" */
	char reason[96];    /* why this source was chosen */
};

/* True when the "flags" line of cpuinfo_text names both constant_tsc and nonstop_tsc as whole words. */
bool rt_clock_cpuinfo_has_invariant_tsc(const char *cpuinfo_text);

/*
 * Chooses and calibrates the clock. cpuinfo_path NULL means /proc/cpuinfo; calib_ms is the length of each of the two
 * calibration windows (the TSC is used only when both agree within 0.5 %). Never fails: falls back to clock_gettime.
 */
void rt_clock_init(struct rt_clock *c, const char *cpuinfo_path, unsigned calib_ms);

static inline uint64_t rt_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A raw timestamp (TSC ticks or ns). */
static inline uint64_t rt_clock_now(const struct rt_clock *c)
{
#if defined(__x86_64__) || defined(__i386__)
	if (c->tsc) {
		uint32_t lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	(void)c;
	return rt_clock_mono_ns();
}

/* Difference of two raw timestamps in ns. */
static inline double rt_clock_ns(const struct rt_clock *c, uint64_t t0, uint64_t t1)
{
	return (double)(t1 - t0) * c->ns_per_tick;
}

/* This thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t rt_clock_thread_cpu_ns(void);

#endif
