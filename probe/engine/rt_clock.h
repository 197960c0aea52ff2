/* SPDX-License-Identifier: MIT */
/*
 * The engine's timestamp source. On x86 the TSC is used only when the CPU says it is invariant (both constant_tsc and
 * nonstop_tsc in /proc/cpuinfo) and a calibration against CLOCK_MONOTONIC is self-consistent, and every read is
 * serialised so that it cannot move across the code it times (rdtsc alone is not: the CPU may execute it before earlier
 * instructions finish or after later ones start, an error of tens of ns on a ~1 us half round trip): "rdtscp; lfence"
 * when the CPU has rdtscp, else "lfence; rdtsc; lfence". On aarch64 it is the virtual counter cntvct_el0 (between
 * isb barriers) at the frequency cntfrq_el0 reports, checked against CLOCK_MONOTONIC. Otherwise every timestamp is
 * clock_gettime(CLOCK_MONOTONIC). The choice, its reason, the tick and the measured resolution go into the run.
 */
#ifndef RT_CLOCK_H
#define RT_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum rt_clock_kind {
	RT_CLOCK_GETTIME = 0,  /* clock_gettime(CLOCK_MONOTONIC), ticks are ns */
	RT_CLOCK_RDTSCP,       /* x86: rdtscp; lfence */
	RT_CLOCK_LFENCE_RDTSC, /* x86 without rdtscp: lfence; rdtsc; lfence */
	RT_CLOCK_CNTVCT,       /* aarch64: isb; mrs cntvct_el0; isb */
};

struct rt_clock {
	enum rt_clock_kind kind;
	bool tsc;	      /* timestamps are counter ticks (TSC or cntvct), not ns */
	double ns_per_tick;   /* 1.0 for clock_gettime */
	double tsc_ghz;	      /* counter frequency (TSC or cntvct), 0 for clock_gettime */
	double resolution_ns; /* smallest non-zero step between two back-to-back reads (read cost included) */
	char name[32];	      /* "rdtscp", "lfence+rdtsc", "cntvct_el0" or "clock_gettime(CLOCK_MONOTONIC)" */
	char reason[128];     /* why this source was chosen */
};

/* True when the "flags" line of cpuinfo_text names both constant_tsc and nonstop_tsc as whole words. */
bool rt_clock_cpuinfo_has_invariant_tsc(const char *cpuinfo_text);
/* True when the first "flags" line of cpuinfo_text names flag as a whole word. */
bool rt_clock_cpuinfo_has_flag(const char *cpuinfo_text, const char *flag);

/*
 * Chooses and calibrates the clock and measures its resolution. cpuinfo_path NULL means /proc/cpuinfo; calib_ms is the
 * length of each of the two calibration windows (a counter is used only when both agree within 0.5 %). Never fails:
 * falls back to clock_gettime.
 */
void rt_clock_init(struct rt_clock *c, const char *cpuinfo_path, unsigned calib_ms);

/*
 * A raw tick counter for timing single verbs calls: rdtsc on x86 (whether or not the TSC is invariant: the rate loops
 * convert ticks with the rate they measure over their own repetition, each on its one pinned CPU), 0 elsewhere (no busy
 * time).
 */
static inline uint64_t rt_clock_raw_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

static inline uint64_t rt_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A raw timestamp (counter ticks or ns), serialised against the code before and after it (see the file comment). */
static inline uint64_t rt_clock_now(const struct rt_clock *c)
{
#if defined(__x86_64__) || defined(__i386__)
	if (c->kind == RT_CLOCK_RDTSCP) {
		uint32_t lo, hi, aux;

		__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
		(void)aux;
		return ((uint64_t)hi << 32) | lo;
	}
	if (c->kind == RT_CLOCK_LFENCE_RDTSC) {
		uint32_t lo, hi;

		__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
		return ((uint64_t)hi << 32) | lo;
	}
#elif defined(__aarch64__)
	if (c->kind == RT_CLOCK_CNTVCT) {
		uint64_t v;

		__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
		return v;
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
