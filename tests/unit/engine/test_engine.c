// SPDX-License-Identifier: MIT
/*
 * Unit tests of the calibration engine's device-free parts: order statistics and the binomial CI of the median
 * (exact ranks against known tables, coverage by simulation), the stopping rule, the point scheduler on synthetic
 * curves with a planted crossover and a fake clock (coverage of the plan, refinement where the inline advantage ends,
 * more samples near the crossover, deadline, seeded block order, error propagation), the clock choice and its
 * fallback, and the run's JSON shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_engine.h"
#include "rt_sched.h"
#include "rt_stats.h"

/* ---- statistics ------------------------------------------------------------------------------------------------ */

static void test_quantiles(void **state)
{
	double v[] = { 5, 1, 4, 2, 3 };
	struct rt_summary s;

	(void)state;
	rt_stats_summarize(v, 5, 0.95, &s);
	assert_int_equal(s.n, 5);
	assert_true(v[0] == 1 && v[4] == 5); /* sorted in place */
	assert_true(fabs(s.median - 3) < 1e-12);
	assert_true(fabs(s.mean - 3) < 1e-12);
	assert_true(fabs(rt_stats_quantile_sorted(v, 5, 0.25) - 2) < 1e-12);
	assert_true(fabs(rt_stats_quantile_sorted(v, 5, 0.99) - 4.96) < 1e-12);
	assert_true(s.min == 1 && s.max == 5);
	/* n = 5 is too small for a 95 % CI: the whole range */
	assert_true(s.ci_lo == 1 && s.ci_hi == 5);
	rt_stats_summarize(v, 0, 0.95, &s);
	assert_int_equal(s.n, 0);
	assert_true(isnan(s.median) && isnan(s.ci_lo));
	assert_true(isinf(rt_stats_ci_rel_width(&s)));
}

static void test_median_ci_ranks(void **state)
{
	size_t lo, hi;

	(void)state;
	assert_false(rt_stats_median_ci_ranks(5, 0.95, &lo, &hi));
	assert_true(rt_stats_median_ci_ranks(6, 0.95, &lo, &hi));
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 5);
	/* n = 10: P(X<=1) = 11/1024 <= 0.025 < P(X<=2) = 56/1024 -> 1-based ranks 2 and 9 */
	assert_true(rt_stats_median_ci_ranks(10, 0.95, &lo, &hi));
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 8);
	/* n = 100: the textbook 95 % interval is X(40)..X(61) */
	assert_true(rt_stats_median_ci_ranks(100, 0.95, &lo, &hi));
	assert_int_equal(lo, 39);
	assert_int_equal(hi, 60);
	/* large n: normal approximation, width ~ 1.96 sqrt(n) ranks */
	assert_true(rt_stats_median_ci_ranks(40000, 0.95, &lo, &hi));
	assert_true(hi - lo >= 390 && hi - lo <= 396);
	assert_int_equal(lo + hi, 39999);
	/* exact/normal switch point does not jump */
	{
		size_t l1, h1, l2, h2;

		rt_stats_median_ci_ranks(5000, 0.95, &l1, &h1);
		rt_stats_median_ci_ranks(5001, 0.95, &l2, &h2);
		assert_true(l2 + 2 >= l1 && l2 <= l1 + 2);
	}
}

static double rng_unit(struct rt_rng *r)
{
	return (double)(rt_rng_next(r) >> 11) / 9007199254740992.0;
}

static double rng_gauss(struct rt_rng *r)
{
	double u = rng_unit(r), v = rng_unit(r);

	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static void test_median_ci_coverage(void **state)
{
	struct rt_rng r;
	int covered = 0, trials = 2000;
	double v[60];

	(void)state;
	rt_rng_seed(&r, 42);
	for (int t = 0; t < trials; t++) {
		struct rt_summary s;

		/* skewed (exponential) samples, true median ln 2 */
		for (int i = 0; i < 60; i++)
			v[i] = -log(1 - rng_unit(&r));
		rt_stats_summarize(v, 60, 0.95, &s);
		covered += s.ci_lo <= M_LN2 && M_LN2 <= s.ci_hi;
	}
	/* exact order-statistic intervals are conservative: coverage >= 95 %, and not absurdly wide */
	assert_true(covered >= (int)(0.94 * trials));
	assert_true(covered <= (int)(0.995 * trials));
}

static void test_stop_rule(void **state)
{
	struct rt_stop_rule r = { .min_samples = 10,
				  .max_samples = 100,
				  .rel_tight = 0.02,
				  .rel_loose = 0.10,
				  .abs_floor_ns = 20,
				  .level = 0.95 };
	struct rt_summary a = { .n = 50, .median = 1000, .ci_lo = 995, .ci_hi = 1005 };
	struct rt_summary b = { .n = 50, .median = 1000, .ci_lo = 955, .ci_hi = 1050 };
	struct rt_summary c = { .n = 50, .median = 1500, .ci_lo = 1460, .ci_hi = 1540 };
	struct rt_summary few = { .n = 5, .median = 1000, .ci_lo = 999, .ci_hi = 1001 };
	struct rt_summary cap = { .n = 100, .median = 1000, .ci_lo = 500, .ci_hi = 1500 };
	struct rt_summary tiny = { .n = 50, .median = 100, .ci_lo = 90, .ci_hi = 105 };

	(void)state;
	assert_int_equal(rt_stop_point(&r, &a), RT_STOP_TIGHT);
	assert_int_equal(rt_stop_point(&r, &b), RT_STOP_CONTINUE);
	assert_int_equal(rt_stop_point(&r, &few), RT_STOP_CONTINUE); /* below min_samples */
	assert_int_equal(rt_stop_point(&r, &cap), RT_STOP_CAPPED);
	assert_int_equal(rt_stop_point(&r, &tiny), RT_STOP_TIGHT); /* 15 ns wide < 20 ns floor */
	/* disjoint and each within 10 %: the decision is clear even though neither is tight */
	assert_int_equal(rt_stop_pair(&r, &b, &c), RT_STOP_CLEAR);
	/* overlapping: keep going until both are tight */
	assert_int_equal(rt_stop_pair(&r, &a, &b), RT_STOP_CONTINUE);
	assert_int_equal(rt_stop_pair(&r, &a, &a), RT_STOP_TIGHT);
	assert_int_equal(rt_stop_pair(&r, &cap, &a), RT_STOP_CAPPED);
	assert_true(rt_stats_ci_disjoint(&a, &c));
	assert_false(rt_stats_ci_disjoint(&a, &b));
	assert_string_equal(rt_stop_name(RT_STOP_CLEAR), "clear");
}

/* ---- scheduler ------------------------------------------------------------------------------------------------- */

static void test_sizes(void **state)
{
	uint32_t s[64];

	(void)state;
	assert_int_equal(rt_sched_pow2_sizes(512, s, 64), 10);
	assert_int_equal(s[0], 1);
	assert_int_equal(s[9], 512);
	assert_int_equal(rt_sched_pow2_sizes(1000, s, 64), 10);
	assert_int_equal(rt_sched_pow2_sizes(1, s, 64), 1);
	assert_int_equal(rt_sched_pow2_sizes(0, s, 64), 0);
	assert_int_equal(rt_sched_pow2_sizes(1u << 20, s, 4), 4);
	assert_int_equal(rt_sched_refine_sizes(64, 128, s, 4), 3);
	assert_int_equal(s[0], 80);
	assert_int_equal(s[1], 96);
	assert_int_equal(s[2], 112);
	assert_int_equal(rt_sched_refine_sizes(1, 2, s, 4), 0);
	assert_int_equal(rt_sched_refine_sizes(2, 4, s, 4), 1);
	assert_int_equal(s[0], 3);
	assert_int_equal(rt_sched_refine_sizes(4, 8, s, 4), 3); /* 5, 6, 7 */
	assert_int_equal(s[2], 7);
}

static void test_inline_end(void **state)
{
	struct rt_summary inl[4], non[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		inl[i] = (struct rt_summary){ .n = 10, .median = 100, .ci_lo = 95, .ci_hi = 105 };
		non[i] = (struct rt_summary){ .n = 10, .median = 120, .ci_lo = 115, .ci_hi = 125 };
	}
	assert_int_equal(rt_sched_inline_end(inl, non, 4), -1); /* better all the way */
	non[2] = inl[2];
	assert_int_equal(rt_sched_inline_end(inl, non, 4), 1); /* advantage ends between sizes 1 and 2 */
	for (int i = 0; i < 4; i++)
		non[i] = inl[i];
	assert_int_equal(rt_sched_inline_end(inl, non, 4), -1); /* never different */
	non[3] = (struct rt_summary){ .n = 10, .median = 80, .ci_lo = 75, .ci_hi = 85 };
	assert_int_equal(rt_sched_inline_end(inl, non, 4), 2); /* becomes a loss after size 2 */
}

/* Synthetic device: inline = 1000 + s ns, non-inline = 1100 + s/2 ns: inline wins below 200 bytes, loses above. */
struct fake {
	uint64_t now;
	double noise;
	struct rt_rng rng;
	unsigned calls;
	int fail_at;	  /* return EINTR on this call (0 = never) */
	char order[4096]; /* 'I'/'N' per call, for the block-order checks */
};

static int fake_measure(void *ctx, const struct rt_sched_cell *c, size_t n, double *out, double *cpu)
{
	struct fake *f = ctx;
	double base = c->inl ? 1000 + c->msg_bytes : 1100 + c->msg_bytes / 2.0;

	if (f->fail_at && (int)++f->calls >= f->fail_at)
		return EINTR;
	if (!f->fail_at)
		f->calls++;
	if (f->calls < sizeof(f->order))
		f->order[f->calls - 1] = c->inl ? 'I' : 'N';
	for (size_t i = 0; i < n; i++) {
		out[i] = base + f->noise * rng_gauss(&f->rng);
		f->now += (uint64_t)out[i] * 2;
	}
	*cpu += (double)n * 500;
	return 0;
}

static uint64_t fake_clock(void *ctx)
{
	return ((struct fake *)ctx)->now;
}

static const struct rt_stop_rule rule = {
	.min_samples = 40, .max_samples = 2000, .rel_tight = 0.01, .rel_loose = 0.10, .abs_floor_ns = 5, .level = 0.95
};

static void plan(struct rt_sched *s, uint64_t seed)
{
	uint32_t sizes[16];
	size_t n = rt_sched_pow2_sizes(512, sizes, 16);

	rt_sched_init(s, &rule, seed);
	s->first_batch = 16;
	s->batch = 32;
	s->max_refine_bytes = 512;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rt_sched_add_pair(s, RT_OP_SEND, RT_QPT_RC, RT_LAT_PINGPONG, sizes[i], false), 0);
}

static const struct rt_sched_point *find(const struct rt_sched *s, uint32_t size, bool inl)
{
	for (size_t i = 0; i < s->n_pts; i++)
		if (s->pts[i].cell.msg_bytes == size && s->pts[i].cell.inl == inl)
			return &s->pts[i];
	return NULL;
}

static void test_sched_run(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30 };
	int rc;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	rc = rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f);
	assert_int_equal(rc, 0);
	assert_false(s.deadline_hit);
	/* every planned point measured at least min_samples, every pair stopped, each summary consistent */
	for (size_t i = 0; i < s.n_pts; i++) {
		const struct rt_sched_point *p = &s.pts[i];

		assert_true(p->n >= rule.min_samples);
		assert_true(p->sum.n == p->n);
		assert_true(p->sum.p99 >= p->sum.median && p->sum.p999 >= p->sum.p99);
		assert_true(p->sum.ci_lo <= p->sum.median && p->sum.median <= p->sum.ci_hi);
		assert_true(fabs(p->cpu_ns / (double)p->n - 500) < 1e-9);
	}
	for (size_t i = 0; i < s.n_pairs; i++)
		assert_int_not_equal(s.pairs[i].state, RT_STOP_CONTINUE);
	/* refinement between 128 and 256, where the planted crossover (200 bytes) is */
	assert_non_null(find(&s, 160, true));
	assert_non_null(find(&s, 192, false));
	assert_non_null(find(&s, 224, true));
	assert_true(find(&s, 160, true)->refined);
	assert_null(find(&s, 96, true)); /* nowhere else */
	/* medians recovered */
	assert_true(fabs(find(&s, 8, true)->sum.median - 1008) < 15);
	assert_true(fabs(find(&s, 8, false)->sum.median - 1104) < 15);
	/* far from the crossover the answer is clear early; at the crossover (192: 1192 vs 1196) it takes far more */
	assert_true(find(&s, 192, true)->n >= 4 * find(&s, 1, true)->n);
	assert_true(find(&s, 1, true)->n <= 2 * rule.min_samples);
	rt_sched_free(&s);
}

static void test_sched_order_seeded(void **state)
{
	struct fake f1 = { .noise = 30 }, f2 = { .noise = 30 }, f3 = { .noise = 30 };
	struct rt_sched s;
	int inl_first = 0, non_first = 0;

	(void)state;
	rt_rng_seed(&f1.rng, 7);
	rt_rng_seed(&f2.rng, 7);
	rt_rng_seed(&f3.rng, 7);
	plan(&s, 11);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f1), 0);
	rt_sched_free(&s);
	plan(&s, 11);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f2), 0);
	rt_sched_free(&s);
	plan(&s, 12);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f3), 0);
	rt_sched_free(&s);
	/* same seed, same order; another seed, another order */
	assert_int_equal(f1.calls, f2.calls);
	assert_memory_equal(f1.order, f2.order, f1.calls);
	assert_true(f1.calls != f3.calls || memcmp(f1.order, f3.order, f1.calls) != 0);
	/* inline and non-inline blocks alternate pairwise, in both orders */
	for (unsigned i = 0; i + 1 < f1.calls && i + 1 < sizeof(f1.order); i += 2) {
		assert_true(f1.order[i] != f1.order[i + 1]);
		inl_first += f1.order[i] == 'I';
		non_first += f1.order[i] == 'N';
	}
	assert_true(inl_first > 3 && non_first > 3);
}

static void test_sched_deadline(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30 };

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	/* a deadline already passed: round 0 still completes, nothing more */
	assert_int_equal(rt_sched_run(&s, 1, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	for (size_t i = 0; i < s.n_pts; i++)
		assert_int_equal(s.pts[i].n, 16);
	rt_sched_free(&s);
	/* a budget of about 3 rounds: stops close to it */
	memset(&f, 0, sizeof(f));
	f.noise = 30;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	assert_int_equal(rt_sched_run(&s, 2000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	assert_true(f.now >= 2000000ull && f.now < 2000000ull + 2 * 32 * 2 * 1700);
	rt_sched_free(&s);
	/* a hard deadline stops even round 0: the points not reached have no samples, the others a full batch */
	memset(&f, 0, sizeof(f));
	f.noise = 30;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	s.hard_deadline_ns = 150000;
	assert_int_equal(rt_sched_run(&s, 1, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	{
		size_t zero = 0, full = 0;

		for (size_t i = 0; i < s.n_pts; i++) {
			zero += s.pts[i].n == 0;
			full += s.pts[i].n == 16;
		}
		assert_int_equal(zero + full, s.n_pts);
		assert_true(zero > 0 && full > 0);
		assert_true(f.now < 150000 + 2 * 16 * 2 * 1700);
	}
	rt_sched_free(&s);
}

static void test_sched_error(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30, .fail_at = 5 };
	size_t measured = 0;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), EINTR);
	for (size_t i = 0; i < s.n_pts; i++)
		measured += s.pts[i].n;
	assert_int_equal(measured, 4 * 16); /* what was measured before the failure is kept */
	rt_sched_free(&s);
}

/* ---- clock ----------------------------------------------------------------------------------------------------- */

static void test_clock_flags(void **state)
{
	(void)state;
	assert_true(rt_clock_cpuinfo_has_invariant_tsc("processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc "
						       "pni\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: fpu tsc constant_tsc pni\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: fpu nonstop_tsc_x constant_tsc\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("model name\t: constant_tsc nonstop_tsc\n"));
	assert_true(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: nonstop_tsc constant_tsc"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc(""));
}

static void test_clock_fallback(void **state)
{
	char path[] = "/tmp/rtune-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	struct rt_clock c;
	uint64_t t0, t1;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "flags\t\t: fpu tsc pni\n", 21) == 21);
	close(fd);
	rt_clock_init(&c, path, 5);
	unlink(path);
	assert_false(c.tsc);
	assert_string_equal(c.name, "clock_gettime(CLOCK_MONOTONIC)");
	assert_true(c.ns_per_tick == 1.0 && c.tsc_ghz == 0);
	assert_non_null(strstr(c.reason, "not invariant"));
	t0 = rt_clock_now(&c);
	usleep(20000);
	t1 = rt_clock_now(&c);
	assert_true(rt_clock_ns(&c, t0, t1) >= 20e6);
	/* no cpuinfo at all: the same fallback */
	rt_clock_init(&c, "/nonexistent/cpuinfo", 5);
	assert_false(c.tsc);
}

static void test_clock_tsc(void **state)
{
	char path[] = "/tmp/rtune-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	struct rt_clock c;
	uint64_t t0, t1, m0, m1;
	double a, b;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "flags\t\t: fpu tsc constant_tsc nonstop_tsc\n", 42) == 42);
	close(fd);
	rt_clock_init(&c, path, 10);
	unlink(path);
#if defined(__x86_64__) || defined(__i386__)
	/* invariant TSC claimed: either calibrated (and then consistent with CLOCK_MONOTONIC) or refused with a reason */
	if (c.tsc) {
		assert_true(strcmp(c.name, "rdtscp") == 0 ||
			    strcmp(c.name, "lfence+rdtsc") == 0); /* serialised reads */
		assert_true(c.tsc_ghz > 0.05 && c.tsc_ghz < 20);
		m0 = rt_clock_mono_ns();
		t0 = rt_clock_now(&c);
		usleep(30000);
		t1 = rt_clock_now(&c);
		m1 = rt_clock_mono_ns();
		a = rt_clock_ns(&c, t0, t1);
		b = (double)(m1 - m0);
		assert_true(fabs(a - b) / b < 0.02);
	} else {
		assert_non_null(strstr(c.reason, "disagree"));
	}
#else
	assert_false(c.tsc);
#endif
	(void)t0;
	(void)t1;
	(void)m0;
	(void)m1;
	(void)a;
	(void)b;
}

/* ---- JSON ------------------------------------------------------------------------------------------------------ */

static void test_run_json(void **state)
{
	struct rt_run run;
	struct rt_lat_point lat[1];
	struct rt_rate_point rate[1];
	float samples[3] = { 1.5f, 2.5f, 3.5f };
	json_error_t je;
	json_t *doc, *l;
	char *text;

	(void)state;
	memset(&run, 0, sizeof(run));
	memset(lat, 0, sizeof(lat));
	memset(rate, 0, sizeof(rate));
	snprintf(run.dev.name, sizeof(run.dev.name), "rxe0");
	snprintf(run.params, sizeof(run.params), "{\"quick\":true}");
	run.status = RT_RUN_INTERRUPTED;
	lat[0] = (struct rt_lat_point){ .op = RT_OP_WRITE,
					.qpt = RT_QPT_RC,
					.kind = RT_LAT_POST_CQE,
					.msg_bytes = 64,
					.inl = true,
					.n_samples = 3,
					.median_ns = 2.5,
					.p99_ns = 3.5,
					.p999_ns = NAN,
					.n_kept = 3,
					.samples_ns = samples };
	rate[0] = (struct rt_rate_point){
		.op = RT_OP_SEND, .msg_bytes = 8, .signal_interval = 16, .reps = 3, .mops = 1.25, .msgs = 1000
	};
	run.lat = lat;
	run.n_lat = 1;
	run.rate = rate;
	run.n_rate = 1;
	run.cqmod[RT_OP_SEND] = (struct rt_cq_moderation){ .measured = true, .supported = false };
	snprintf(run.cqmod[RT_OP_SEND].reason, sizeof(run.cqmod[0].reason), "refused: Operation not supported");
	text = rt_engine_run_json(&run, true);
	assert_non_null(text);
	doc = json_loads(text, 0, &je);
	free(text);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "status")), "interrupted");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "device"), "name")), "rxe0");
	assert_true(json_is_true(json_object_get(json_object_get(doc, "params"), "quick")));
	l = json_array_get(json_object_get(doc, "latency"), 0);
	assert_string_equal(json_string_value(json_object_get(l, "op")), "write");
	assert_string_equal(json_string_value(json_object_get(l, "kind")), "post_cqe");
	assert_true(json_is_true(json_object_get(l, "inline")));
	assert_int_equal(json_integer_value(json_object_get(l, "msg_bytes")), 64);
	assert_true(json_is_null(json_object_get(l, "p999_ns")));
	assert_int_equal(json_array_size(json_object_get(l, "samples_ns")), 3);
	assert_true(fabs(json_real_value(json_array_get(json_object_get(l, "samples_ns"), 1)) - 2.5) < 1e-6);
	l = json_array_get(json_object_get(doc, "rate"), 0);
	assert_int_equal(json_integer_value(json_object_get(l, "signal_interval")), 16);
	l = json_object_get(json_object_get(doc, "cq_moderation"), "send");
	assert_true(json_is_false(json_object_get(l, "supported")));
	assert_null(json_object_get(json_object_get(doc, "cq_moderation"), "write"));
	json_decref(doc);
	/* without samples */
	text = rt_engine_run_json(&run, false);
	doc = json_loads(text, 0, &je);
	free(text);
	assert_null(json_object_get(json_array_get(json_object_get(doc, "latency"), 0), "samples_ns"));
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_median_ci_ranks),
		cmocka_unit_test(test_median_ci_coverage),
		cmocka_unit_test(test_stop_rule),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_inline_end),
		cmocka_unit_test(test_sched_run),
		cmocka_unit_test(test_sched_order_seeded),
		cmocka_unit_test(test_sched_deadline),
		cmocka_unit_test(test_sched_error),
		cmocka_unit_test(test_clock_flags),
		cmocka_unit_test(test_clock_fallback),
		cmocka_unit_test(test_clock_tsc),
		cmocka_unit_test(test_run_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
