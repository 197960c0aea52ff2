// SPDX-License-Identifier: MIT
/*
 * Unit tests of the engine's clock: the choice (a serialised TSC read -- rdtscp when the CPU has it, else
 * lfence+rdtsc, never a bare rdtsc -- or clock_gettime when the TSC is not invariant; cntvct_el0 on aarch64), reads
 * that never go backwards on one CPU, a tick and a measured resolution that are plausible, and both recorded in the
 * run's JSON environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_engine.h"

/* Writes a cpuinfo with this flags line to a temporary file; returns its path (static). */
static const char *cpuinfo(const char *flags)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/rtune-cpuinfo-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "processor\t: 0\nmodel name\t: test\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: fpu\n", flags);
	fclose(f);
	return path;
}

static bool real_cpu_has(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[8192];
	bool has = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "flags", 5) == 0) {
			has = rt_clock_cpuinfo_has_flag(line, flag);
			break;
		}
	fclose(f);
	return has;
}

/* Reads on one CPU never go backwards, and the resolution is what it claims: positive, at least one tick, well
 * under a microsecond. */
static void check_reads(const struct rt_clock *c)
{
	uint64_t prev = rt_clock_now(c);
	double min_step = 1e30;

	for (int i = 0; i < 200000; i++) {
		uint64_t t = rt_clock_now(c);

		assert_true(t >= prev);
		if (t > prev && rt_clock_ns(c, prev, t) < min_step)
			min_step = rt_clock_ns(c, prev, t);
		prev = t;
	}
	assert_true(c->resolution_ns > 0);
	assert_true(c->resolution_ns >= c->ns_per_tick * 0.999);
	assert_true(c->resolution_ns < 100000); /* 100 us: a syscall clock in a TCG guest steps ~1.8 us */
	/* the recorded resolution is the smallest step seen, so no step seen here is much smaller */
	assert_true(min_step >= c->resolution_ns * 0.5 || min_step >= c->ns_per_tick * 0.999);
}

static void test_flags(void **state)
{
	(void)state;
	assert_true(rt_clock_cpuinfo_has_flag("flags\t: fpu rdtscp constant_tsc\n", "rdtscp"));
	assert_false(rt_clock_cpuinfo_has_flag("flags\t: fpu rdtscpx constant_tsc\n", "rdtscp"));
	assert_false(rt_clock_cpuinfo_has_flag("model name\t: rdtscp\nflags\t: fpu\n", "rdtscp"));
	assert_true(rt_clock_cpuinfo_has_invariant_tsc("flags\t: constant_tsc nonstop_tsc\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("flags\t: constant_tsc\n"));
}

static void test_choice(void **state)
{
	struct rt_clock c;
	const char *p;
	cpu_set_t one;

	(void)state;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one); /* one CPU: "never backwards" needs no cross-CPU TSC sync */

	p = cpuinfo("fpu tsc pni");
	rt_clock_init(&c, p, 5);
	unlink(p);
#if defined(__aarch64__)
	/* the cpuinfo does not matter: the virtual counter, unless cntfrq_el0 or its calibration is implausible */
	assert_true(c.kind == RT_CLOCK_CNTVCT || c.kind == RT_CLOCK_GETTIME);
	if (c.kind == RT_CLOCK_CNTVCT) {
		assert_string_equal(c.name, "cntvct_el0");
		assert_true(c.tsc_ghz > 0.0005 && c.tsc_ghz < 20);
	}
#else
	assert_int_equal(c.kind, RT_CLOCK_GETTIME);
	assert_string_equal(c.name, "clock_gettime(CLOCK_MONOTONIC)");
	assert_true(c.ns_per_tick == 1.0);
#endif
	check_reads(&c);

#if defined(__x86_64__) || defined(__i386__)
	/* invariant TSC: read serialised, rdtscp when the CPU has it (claimed only when this CPU really has it) */
	p = cpuinfo("fpu tsc constant_tsc nonstop_tsc");
	rt_clock_init(&c, p, 10);
	unlink(p);
	if (c.tsc) {
		assert_int_equal(c.kind, RT_CLOCK_LFENCE_RDTSC);
		assert_string_equal(c.name, "lfence+rdtsc");
		assert_non_null(strstr(c.reason, "lfence; rdtsc; lfence"));
		check_reads(&c);
	} else {
		assert_non_null(strstr(c.reason, "disagree"));
	}
	if (real_cpu_has("rdtscp")) {
		p = cpuinfo("fpu tsc rdtscp constant_tsc nonstop_tsc");
		rt_clock_init(&c, p, 10);
		unlink(p);
		if (c.tsc) {
			assert_int_equal(c.kind, RT_CLOCK_RDTSCP);
			assert_string_equal(c.name, "rdtscp");
			assert_true(c.tsc_ghz > 0.05 && c.tsc_ghz < 20);
			assert_true(c.ns_per_tick > 0 && c.ns_per_tick < 20);
			check_reads(&c);
		} else {
			assert_non_null(strstr(c.reason, "disagree"));
		}
	}
#endif
}

/* The run's JSON environment carries the clock, its tick and its resolution. */
static void test_run_json_env(void **state)
{
	struct rt_run run;
	json_t *j, *env;
	char *text;

	(void)state;
	memset(&run, 0, sizeof(run));
	snprintf(run.env.clock, sizeof(run.env.clock), "rdtscp");
	run.env.tsc_ghz = 2.5;
	run.env.clock_tick_ns = 0.4;
	run.env.clock_resolution_ns = 11.2;
	text = rt_engine_run_json(&run, false);
	assert_non_null(text);
	j = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(j);
	env = json_object_get(j, "env");
	assert_string_equal(json_string_value(json_object_get(env, "clock")), "rdtscp");
	assert_true(json_number_value(json_object_get(env, "clock_tick_ns")) == 0.4);
	assert_true(json_number_value(json_object_get(env, "clock_resolution_ns")) == 11.2);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_run_json_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
