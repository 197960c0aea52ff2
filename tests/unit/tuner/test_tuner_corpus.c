// SPDX-License-Identifier: MIT
/*
 * The tuner against ground truth (gen.c): on 1200 randomized seeded cases under every noise model it recovers the
 * planted threshold within one measured size step and the planted N within one power of two in >= 97 % of cases, and
 * beats a plain Kneedle-only baseline run on the same cases. Properties: the decisions do not change with the time
 * unit or a constant latency offset; more noise lowers the confidence rather than moving confident answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "gen.h"

#define CORPUS_CASES 1200
#define PROP_CASES 150

static void test_corpus_accuracy(void **state)
{
	struct corpus_score s;
	struct gen_opts go;
	double thr, n, bthr, bn;

	(void)state;
	gen_opts_default(&go);
	assert_int_equal(corpus_run(1, CORPUS_CASES, &go, NULL, &s), 0);
	assert_int_equal(s.cases, CORPUS_CASES);
	thr = (double)s.thr_ok / (double)s.cases;
	n = (double)s.n_ok / (double)s.cases;
	bthr = (double)s.base_thr_ok / (double)s.cases;
	bn = (double)s.base_n_ok / (double)s.cases;
	print_message(
		"corpus of %zu cases: threshold within one step %.1f %% (exact %.1f %%), N within one power of two "
		"%.1f %% (exact %.1f %%); Kneedle-only baseline %.1f %% / %.1f %%; confidence low/medium/high "
		"%zu/%zu/%zu; tuner %.2f ms per case\n",
		s.cases, 100 * thr, 100.0 * (double)s.thr_exact / (double)s.cases, 100 * n,
		100.0 * (double)s.n_exact / (double)s.cases, 100 * bthr, 100 * bn, s.conf[0], s.conf[1], s.conf[2],
		1e3 * s.tuner_s / (double)s.cases);
	assert_true(thr >= 0.97);
	assert_true(n >= 0.97);
	assert_true(thr > bthr);
	assert_true(n > bn);
}

/* Every noise model on its own still meets the bar (each is a sixth of a smaller corpus). */
static void test_each_noise_model(void **state)
{
	(void)state;
	for (int nz = 0; nz < GEN__COUNT; nz++) {
		struct corpus_score s;
		struct gen_opts go;

		gen_opts_default(&go);
		go.noise = nz;
		assert_int_equal(corpus_run(100000 + 1000 * (uint64_t)nz, 200, &go, NULL, &s), 0);
		print_message("noise model %d: threshold %.1f %%, N %.1f %% (baseline %.1f %% / %.1f %%)\n", nz,
			      100.0 * (double)s.thr_ok / 200, 100.0 * (double)s.n_ok / 200,
			      100.0 * (double)s.base_thr_ok / 200, 100.0 * (double)s.base_n_ok / 200);
		assert_true(s.thr_ok >= 194);
		assert_true(s.n_ok >= 194);
	}
}

/* Multiplies every time in a case by k (latencies, samples, CPU times; rates by 1/k). */
static void scale_case(struct gen_case *c, double k)
{
	for (size_t i = 0; i < c->n_lat; i++) {
		struct rt_lat_point *p = &c->lat[i];

		p->median_ns *= k;
		p->p99_ns *= k;
		p->p999_ns *= k;
		p->mean_ns *= k;
		p->min_ns *= k;
		p->ci_lo_ns *= k;
		p->ci_hi_ns *= k;
		p->cpu_ns_per_op *= k;
		for (uint32_t j = 0; j < p->n_kept; j++)
			p->samples_ns[j] = (float)(p->samples_ns[j] * k);
	}
	for (size_t i = 0; i < c->n_rate; i++) {
		struct rt_rate_point *p = &c->rate[i];

		p->mops /= k;
		p->mops_lo /= k;
		p->mops_hi /= k;
		p->cpu_ns_per_msg *= k;
	}
}

/* Adds off to every latency of a case, inline and not alike. */
static void offset_case(struct gen_case *c, double off)
{
	for (size_t i = 0; i < c->n_lat; i++) {
		struct rt_lat_point *p = &c->lat[i];

		p->median_ns += off;
		p->p99_ns += off;
		p->p999_ns += off;
		p->mean_ns += off;
		p->min_ns += off;
		p->ci_lo_ns += off;
		p->ci_hi_ns += off;
		for (uint32_t j = 0; j < p->n_kept; j++)
			p->samples_ns[j] = (float)(p->samples_ns[j] + off);
	}
}

static void same_decisions(const struct rt_tuner_decision *a, const struct rt_tuner_decision *b, uint64_t seed,
			   const char *what)
{
	if (a->inline_threshold != b->inline_threshold || a->max_inline_data != b->max_inline_data ||
	    a->signal_interval != b->signal_interval || a->sq_depth != b->sq_depth || a->cq_depth != b->cq_depth)
		fail_msg("case %llu, %s: threshold %u vs %u, N %u vs %u", (unsigned long long)seed, what,
			 a->inline_threshold, b->inline_threshold, a->signal_interval, b->signal_interval);
}

static void test_invariance_time_unit_and_offset(void **state)
{
	size_t conf_same_unit = 0, conf_same_off = 0, total = 0;

	(void)state;
	for (uint64_t seed = 5000; seed < 5000 + PROP_CASES; seed++) {
		static const double scales[] = { 1e-3, 4.0 };
		static const double offsets[] = { 250, 4000 };
		struct rt_tuner_result ref, res;
		struct rt_tuner_opts o;
		struct gen_case c;

		assert_int_equal(gen_make(seed, NULL, &c), 0);
		rt_tuner_opts_default(&o);
		assert_int_equal(rt_tuner_run(&c.in, &o, &ref, NULL), 0);
		for (int k = 0; k < 2; k++) {
			struct rt_tuner_opts os = o;

			/* a change of unit changes every time, the options' included */
			scale_case(&c, scales[k]);
			os.floor_abs_ns *= scales[k];
			os.implausible_gain_ns *= scales[k];
			assert_int_equal(rt_tuner_run(&c.in, &os, &res, NULL), 0);
			same_decisions(&ref.d[0], &res.d[0], seed, k ? "time x4" : "time in us");
			conf_same_unit += ref.d[0].confidence == res.d[0].confidence;
			total++;
			rt_tuner_result_free(&res);
			scale_case(&c, 1 / scales[k]);
		}
		/* an offset moves the relative part of the noise floor (1 % of the latency), and the floor decides
		   what is indifferent: with an absolute floor alone an offset must change nothing */
		o.floor_rel = 0;
		rt_tuner_result_free(&ref);
		assert_int_equal(rt_tuner_run(&c.in, &o, &ref, NULL), 0);
		for (int k = 0; k < 2; k++) {
			offset_case(&c, offsets[k]);
			assert_int_equal(rt_tuner_run(&c.in, &o, &res, NULL), 0);
			same_decisions(&ref.d[0], &res.d[0], seed, k ? "offset +4000 ns" : "offset +250 ns");
			conf_same_off += ref.d[0].confidence == res.d[0].confidence;
			rt_tuner_result_free(&res);
			offset_case(&c, -offsets[k]);
		}
		rt_tuner_result_free(&ref);
		gen_free(&c);
	}
	print_message("invariance: decisions identical in all %zu transformed runs; confidence identical in %zu of %zu "
		      "unit changes and %zu of %zu offsets\n",
		      2 * total, conf_same_unit, total, conf_same_off, total);
	assert_int_equal(conf_same_unit, total);
	assert_int_equal(conf_same_off, total);
}

static void test_noise_lowers_confidence(void **state)
{
	static const double mult[] = { 1, 3, 6, 12 };
	double mean_conf[4] = { 0 }, high_ok[4] = { 0 }, high[4] = { 0 };
	size_t far_confident = 0, far = 0;

	(void)state;
	for (int m = 0; m < 4; m++) {
		for (uint64_t seed = 9000; seed < 9000 + PROP_CASES; seed++) {
			struct gen_opts go;
			struct gen_case c;
			struct rt_tuner_result res;
			const struct rt_tuner_decision *d;
			int st;

			gen_opts_default(&go);
			go.noise_mult = mult[m];
			go.with_rate = 0;
			assert_int_equal(gen_make(seed, &go, &c), 0);
			assert_int_equal(rt_tuner_run(&c.in, NULL, &res, NULL), 0);
			d = &res.d[0];
			st = gen_thr_steps(&c, d->inline_threshold, c.true_threshold);
			mean_conf[m] += (double)d->inline_confidence / PROP_CASES;
			if (d->inline_confidence == RT_CONF_HIGH) {
				high[m]++;
				high_ok[m] += st <= 1;
			}
			if (st > 2) {
				far++;
				far_confident += d->inline_confidence == RT_CONF_HIGH;
			}
			rt_tuner_result_free(&res);
			gen_free(&c);
		}
		print_message(
			"noise x%-4g mean inline confidence %.2f (0 low .. 2 high); high-confidence answers %3.0f, "
			"%.1f %% of them within one step\n",
			mult[m], mean_conf[m], high[m], high[m] ? 100 * high_ok[m] / high[m] : 100.0);
	}
	print_message("answers more than two steps off: %zu, of which with high confidence: %zu\n", far, far_confident);
	for (int m = 1; m < 4; m++)
		assert_true(mean_conf[m] < mean_conf[m - 1]);
	for (int m = 0; m < 4; m++)
		assert_true(high_ok[m] >= 0.95 * high[m]);
	assert_true(far_confident * 10 <= far);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_accuracy),
		cmocka_unit_test(test_each_noise_model),
		cmocka_unit_test(test_invariance_time_unit_and_offset),
		cmocka_unit_test(test_noise_lowers_confidence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
