// SPDX-License-Identifier: MIT
/*
 * Answers that hold: the tuner's verdicts on curves that do not move, or move by less than the practical floor, must
 * repeat from one noisy draw of the same node to the next (a flat rate is "N does not matter", never a drifting N;
 * inline winning by a few % everywhere is the device max every time), sizes within the floor are "indifferent" and do
 * not end the inline range, the signaling knee comes from the physics 1/rate = t_post + t_cqe / N (also when a rate
 * floor hides part of it), and a point's own CI (widened by calibrate for correlated samples) widens the bootstrap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_rng.h"
#include "rt_tuner.h"

#define MAXP 96
#define KEEP 256
#define DRAWS 60

struct run {
	struct rt_lat_point lat[MAXP];
	struct rt_rate_point rate[MAXP];
	float smp[MAXP][KEEP];
	struct rt_tuner_input in;
	struct rt_rng rng;
};

static void run_init(struct run *r, uint64_t seed, int max_inline)
{
	memset(r, 0, sizeof(*r));
	r->in.lat = r->lat;
	r->in.rate = r->rate;
	r->in.limits.max_inline[RT_QPT_RC] = max_inline;
	r->in.limits.max_inline[RT_QPT_UD] = -1;
	r->in.limits.max_qp_wr = 16384;
	r->in.limits.max_cqe = 65536;
	rt_rng_seed(&r->rng, seed);
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* One latency point of KEEP raw samples around mu (gaussian, relative sigma rel), its CI widened by ci_mult. */
static void add_point(struct run *r, uint32_t bytes, bool inl, double mu, double rel, double ci_mult)
{
	size_t k = r->in.n_lat;
	struct rt_lat_point *p = &r->lat[r->in.n_lat++];
	float sorted[KEEP];
	double h = 1.96 * sqrt(KEEP) / 2;

	for (size_t i = 0; i < KEEP; i++)
		r->smp[k][i] = (float)(mu * (1 + rel * rt_rng_normal(&r->rng)));
	memcpy(sorted, r->smp[k], sizeof(sorted));
	qsort(sorted, KEEP, sizeof(float), cmp_f);
	p->op = RT_OP_SEND;
	p->qpt = RT_QPT_RC;
	p->kind = RT_LAT_PINGPONG;
	p->msg_bytes = bytes;
	p->inl = inl;
	p->n_samples = KEEP;
	p->n_kept = KEEP;
	p->samples_ns = r->smp[k];
	p->median_ns = (sorted[KEEP / 2 - 1] + sorted[KEEP / 2]) / 2.0;
	p->ci_lo_ns = p->median_ns - ci_mult * (p->median_ns - sorted[(size_t)floor(KEEP / 2.0 - h)]);
	p->ci_hi_ns = p->median_ns + ci_mult * (sorted[(size_t)ceil(KEEP / 2.0 + h)] - p->median_ns);
	p->p99_ns = sorted[KEEP * 99 / 100];
	p->min_ns = sorted[0];
	p->mean_ns = p->median_ns;
}

/* A rate series with true time per message a + b/N (ns), floored at c, measured in 5 repetitions of relative noise
 * rel, one repetition in six slowed by 20 % (an interrupt). */
static void add_series(struct run *r, uint32_t bytes, bool inl, double a, double b, double c, double rel)
{
	for (uint32_t n = 1; n <= 64; n *= 2) {
		struct rt_rate_point *p = &r->rate[r->in.n_rate++];
		double t = fmax(a + b / n, c), reps[5];

		for (int k = 0; k < 5; k++) {
			reps[k] = 1000 / t * (1 + rel * rt_rng_normal(&r->rng));
			if (rt_rng_below(&r->rng, 6) == 0)
				reps[k] *= 0.8;
		}
		for (int i = 1; i < 5; i++)
			for (int j = i; j > 0 && reps[j] < reps[j - 1]; j--) {
				double x = reps[j];

				reps[j] = reps[j - 1];
				reps[j - 1] = x;
			}
		p->op = RT_OP_SEND;
		p->qpt = RT_QPT_RC;
		p->msg_bytes = bytes;
		p->inl = inl;
		p->signal_interval = n;
		p->sq_depth = 128;
		p->reps = 5;
		p->mops = reps[2];
		p->mops_lo = reps[0];
		p->mops_hi = reps[4];
		p->cpu_ns_per_msg = t / 2;
		p->msgs = 5 * 2000;
	}
}

/* The sweep most cases use: 8 B and 64 B, inline and not, each series t_post = a0 + a_per_byte * size (+ dma_extra
   when not inline), t_cqe b, rel noise per repetition. */
static void add_four_series(struct run *r, double a0, double a_per_byte, double dma_extra, double b, double rel)
{
	for (uint32_t s = 8; s <= 256; s *= 8)
		for (int inl = 0; inl < 2; inl++)
			add_series(r, s, inl, a0 + a_per_byte * s + (inl ? 0 : dma_extra), b, 0, rel);
}

static const struct rt_tuner_decision *tune(struct run *r, struct rt_tuner_result *res)
{
	struct rt_error err;

	assert_int_equal(rt_tuner_run(&r->in, NULL, res, &err), 0);
	assert_int_equal(res->n, 1);
	return &res->d[0];
}

static int has(const struct rt_tuner_decision *d, const char *code)
{
	for (size_t i = 0; i < d->n_reasons; i++)
		if (!strcmp(rt_reason_code_name(d->reasons[i].code), code))
			return 1;
	return 0;
}

/* Soft-RoCE: every post is a system call, the rate does not depend on N; 3 % noise per repetition. */
static void test_flat_rate_is_indifferent_every_time(void **state)
{
	size_t flat = 0, high_off = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed, 512);
		add_four_series(r, 33000, 40, 500, 0, 0.03);
		d = tune(r, &res);
		flat += d->signal_verdict == RT_SIGNAL_INDIFFERENT && d->signal_interval == 16 &&
			has(d, "signal_indifferent");
		high_off += d->signal_confidence == RT_CONF_HIGH && d->signal_interval != 16;
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("flat rate: %zu of %d draws 'N does not matter' (N = 16)\n", flat, DRAWS);
	assert_int_equal(flat, DRAWS);
	assert_int_equal(high_off, 0);
}

/* A flat sweep where one point stalled (every repetition of N = 1 in one series 25 % slow): one point is no knee. */
static void test_one_stalled_point_is_no_knee(void **state)
{
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	assert_non_null(r);
	run_init(r, 3, 512);
	add_four_series(r, 33000, 0, 0, 0, 0.01);
	r->rate[0].mops *= 0.75;
	r->rate[0].mops_lo *= 0.75;
	r->rate[0].mops_hi *= 0.75;
	d = tune(r, &res);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_INDIFFERENT);
	assert_int_equal(d->signal_interval, 16);
	assert_true(has(d, "non_monotone"));
	assert_true(d->signal_confidence <= RT_CONF_MEDIUM);
	rt_tuner_result_free(&res);
	free(r);
}

/* Planted knees: t_post = 33 us; N >= t_cqe (1 - 1.5 %) / (1.5 % t_post): t_cqe = 8 us needs N = 16, 3.8 us N = 8,
   1.8 us N = 4 (N = 1 then loses 5 %: under 3 % noise per repetition that is not always shown, and the verdict may
   be "N does not matter" with the stated N = 16, which still gets the rate within the tolerance; under 1 % it is). */
static void test_knee_from_the_physics(void **state)
{
	static const double tcqe[] = { 8000, 3800, 1800, 1800 }, noise[] = { 0.03, 0.03, 0.03, 0.01 };
	static const uint32_t want[] = { 16, 8, 4, 4 };

	(void)state;
	for (int m = 0; m < 4; m++) {
		size_t near = 0, high_far = 0;

		for (uint64_t seed = 1; seed <= DRAWS; seed++) {
			struct run *r = malloc(sizeof(*r));
			struct rt_tuner_result res;
			const struct rt_tuner_decision *d;

			assert_non_null(r);
			run_init(r, seed + 100, 512);
			add_four_series(r, 33000, 10, 0, tcqe[m], noise[m]);
			d = tune(r, &res);
			/* a knee within a factor of two; for the weak knee also "does not matter" with a stated N that is
			   enough, as long as that verdict does not claim high confidence */
			bool knee_near = d->signal_verdict == RT_SIGNAL_KNEE && d->signal_interval >= want[m] / 2 &&
					 d->signal_interval <= want[m] * 2;
			bool flat_enough = m == 2 && d->signal_verdict == RT_SIGNAL_INDIFFERENT &&
					   d->signal_interval >= want[m] && d->signal_confidence < RT_CONF_HIGH;

			if (knee_near || flat_enough)
				near++;
			else if (d->signal_confidence == RT_CONF_HIGH)
				high_far++;
			rt_tuner_result_free(&res);
			free(r);
		}
		print_message("knee at N = %u: %zu of %d draws within a factor of two\n", want[m], near, DRAWS);
		assert_true(near >= DRAWS * 95 / 100);
		assert_int_equal(high_far, 0);
	}
}

/* A knee as the emulated x256_n16 shows it on a slow TCG host (t_post 130 us, t_cqe 30 us: N = 16; 8 % noise per
   repetition) with one point against it: N = 4 of one series 30 % fast, so that series fits a much smaller t_cqe
   than the other three. Leaving out a point whose removal raises its series' t_cqe cannot show that the knee rests
   on it (it only narrowed the series' disagreement, which widens the pooled CI): such points are not left out. A run
   of 2026-12-02 (t_cqe 36.7 us, 95 % CI 21.4..52.1) was called "indifferent: rests on one point" that way. Without
   the fast point every draw is a knee at 16; with it 44 of 60 were within a factor of two before, 50 now (the point
   itself still widens the pooled CI). */
static void test_a_point_against_the_knee_keeps_it(void **state)
{
	size_t near = 0, flat = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed + 2600, 512);
		add_four_series(r, 130000, 0, 0, 30000, 0.08);
		assert_int_equal(r->rate[23].signal_interval, 4); /* 64 B inline, N = 4 */
		r->rate[23].mops /= 0.7;
		r->rate[23].mops_lo /= 0.7;
		r->rate[23].mops_hi /= 0.7;
		d = tune(r, &res);
		near += d->signal_verdict == RT_SIGNAL_KNEE && d->signal_interval >= 8 && d->signal_interval <= 32;
		flat += d->signal_verdict == RT_SIGNAL_INDIFFERENT;
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("a point against the knee: %zu of %d draws a knee within a factor of two, %zu indifferent\n",
		      near, DRAWS, flat);
	assert_true(near >= DRAWS * 8 / 10);
	assert_true(flat <= DRAWS / 6);
}

/* A completion cost that makes only N = 1 slower (t_cqe 900 ns against t_post 33 us: 2.7 % at N = 1, within the
   tolerance from N = 2): the same verdict as a flat curve, so the borderline between "knee at 2" and "does not
   matter" cannot flip the answer from run to run (Soft-RoCE sits there). */
static void test_knee_at_two_is_does_not_matter(void **state)
{
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	int said = 0;

	(void)state;
	assert_non_null(r);
	run_init(r, 21, 512);
	add_four_series(r, 33000, 0, 0, 900, 0.002);
	d = tune(r, &res);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_INDIFFERENT);
	assert_int_equal(d->signal_interval, 16);
	for (size_t i = 0; i < d->n_reasons; i++)
		said |= d->reasons[i].code == RT_R_SIGNAL_INDIFFERENT &&
			strstr(d->reasons[i].text, "the only N measurably slower") != NULL;
	assert_true(said);
	rt_tuner_result_free(&res);
	free(r);
}

/* A rate floor (the wire) from N = 4 on hides t_cqe in one series and the whole of another: the line before it still
   says what N buys, and a series entirely on its floor does not pull t_cqe to 0. */
static void test_knee_under_a_rate_floor(void **state)
{
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	assert_non_null(r);
	run_init(r, 5, 512);
	add_series(r, 8, true, 1000, 1000, 1300, 0.002);  /* 2000, 1500, 1300 (floor: a + b/4 = 1250) ... */
	add_series(r, 8, false, 1000, 1000, 2500, 0.002); /* on its floor at every N */
	d = tune(r, &res);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_KNEE);
	/* with the floor at 1300 ns N = 4 is within 1.5 %; without the floor 1000 ns/(N 1000 ns) would ask for 128 */
	assert_true(d->signal_interval >= 4 && d->signal_interval <= 8);
	assert_true(d->t_cqe_lo_ns < 1000 && d->t_cqe_hi_ns > 1000);
	rt_tuner_result_free(&res);
	free(r);
}

/* A knee only a minority of the series show (2026-12-03, always_flat write/rc under rxe: two of six series fit 4.9 and
   6.2 us, four 0.6..1.2 us, the pooled t_cqe not significant, "knee N = 8, high" for a model without a completion
   cost): one t_cqe for every series is the physics, so such a knee is not high when the pooled t_cqe does not show it
   or the series disagree beyond their noise (before: 38 of 60 draws a high knee; now 2, where neither test at 1 %
   sees the disagreement); with half the series showing it (a rate floor hides it in the others) it may be. */
static void test_minority_knee_is_not_high(void **state)
{
	size_t knees = 0, high_knees = 0, said = 0, half_high = 0, half_said = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		for (int half = 0; half < 2; half++) {
			struct run *r = malloc(sizeof(*r));
			struct rt_tuner_result res;
			const struct rt_tuner_decision *d;

			assert_non_null(r);
			run_init(r, seed + 3100, 512);
			for (int k = 0; k < 3; k++)
				for (int inl = 0; inl < 2; inl++) {
					/* inline 8 B and 256 B slowed at small N (and 64 B inline too for "half") */
					uint32_t sz = k == 0 ? 8 : k == 1 ? 64 : 256;
					bool slow = inl && (sz != 64 || half);

					add_series(r, sz, inl, 60000 + 10.0 * sz - 4000 * inl, slow ? 6000 : 0, 0,
						   0.02);
				}
			d = tune(r, &res);
			if (!half) {
				knees += d->signal_verdict == RT_SIGNAL_KNEE;
				high_knees +=
					d->signal_verdict == RT_SIGNAL_KNEE && d->signal_confidence == RT_CONF_HIGH;
				said += has(d, "series_disagree");
			} else {
				half_high +=
					d->signal_verdict == RT_SIGNAL_KNEE && d->signal_confidence == RT_CONF_HIGH;
				half_said += has(d, "series_disagree");
			}
			rt_tuner_result_free(&res);
			free(r);
		}
	}
	print_message("a knee in 2 of 6 series: %zu of %d draws a knee, %zu of them high, %zu said series_disagree; "
		      "in 3 of 6: %zu high knees, %zu said series_disagree\n",
		      knees, DRAWS, high_knees, said, half_high, half_said);
	assert_true(high_knees <= DRAWS / 20);
	assert_true(2 * said >= knees);
	assert_true(half_high > 0);
}

/* A rate point of a stored run: size, inline, N, and the rate in Mops (median, min, max of 5 repetitions). */
struct stored_pt {
	uint32_t bytes, inl, n;
	double mops, lo, hi;
};

/* Tunes the rate points pts[0..n) of a stored run (opcode op, RC, send queue 256) into res. */
static const struct rt_tuner_decision *tune_stored(struct run *r, enum rt_opcode op, const struct stored_pt *pts,
						   size_t n, struct rt_tuner_result *res)
{
	run_init(r, 1, 512);
	for (size_t i = 0; i < n; i++) {
		struct rt_rate_point *p = &r->rate[r->in.n_rate++];

		p->op = op;
		p->qpt = RT_QPT_RC;
		p->msg_bytes = pts[i].bytes;
		p->inl = pts[i].inl;
		p->signal_interval = pts[i].n;
		p->sq_depth = 256;
		p->reps = 5;
		p->mops = pts[i].mops;
		p->mops_lo = pts[i].lo;
		p->mops_hi = pts[i].hi;
		p->cpu_ns_per_msg = 1000 / pts[i].mops;
		p->msgs = 1300;
	}
	return tune(r, res);
}

/* The run behind it (rxe_emulated, always_flat, write/rc, CI of 2026-12-03): its 48 rate points (Mops: median, min, max
   of 5 repetitions). Before: "knee N = 8, high", t_cqe 6248 ns from the 8 B inline series alone. */
static void test_minority_knee_of_a_stored_run(void **state)
{
	static const struct stored_pt pts[] = {
		{ 8, 0, 1, 0.0155507958, 0.0143669936, 0.0157373824 },
		{ 8, 0, 2, 0.0156346858, 0.0110073676, 0.0159183983 },
		{ 8, 0, 4, 0.0156051412, 0.0128182789, 0.0157386789 },
		{ 8, 0, 8, 0.0157651291, 0.0131404696, 0.0159017826 },
		{ 8, 0, 16, 0.0158830058, 0.0155277431, 0.0160956484 },
		{ 8, 0, 32, 0.0157332042, 0.0151404125, 0.0159622791 },
		{ 8, 0, 64, 0.0158006647, 0.0147268153, 0.0159725173 },
		{ 8, 0, 128, 0.0156237158, 0.0131620079, 0.0158569603 },
		{ 8, 1, 1, 0.0151867424, 0.0136819865, 0.0170583763 },
		{ 8, 1, 2, 0.016293559, 0.0135502789, 0.0169004228 },
		{ 8, 1, 4, 0.0162122487, 0.015474898, 0.0168272928 },
		{ 8, 1, 8, 0.0166407522, 0.0162521315, 0.0168704743 },
		{ 8, 1, 16, 0.0171026506, 0.0165091632, 0.0172127038 },
		{ 8, 1, 32, 0.0166133331, 0.0165065531, 0.0169890155 },
		{ 8, 1, 64, 0.0166704349, 0.013539004, 0.0169133192 },
		{ 8, 1, 128, 0.0169921279, 0.0159551759, 0.0171854641 },
		{ 64, 0, 1, 0.0153161529, 0.0122966805, 0.0154126249 },
		{ 64, 0, 2, 0.0152749187, 0.014979529, 0.0156822098 },
		{ 64, 0, 4, 0.0153600891, 0.0129454028, 0.0158597797 },
		{ 64, 0, 8, 0.0151916161, 0.0128708239, 0.015747334 },
		{ 64, 0, 16, 0.0155931646, 0.0146410456, 0.0157841225 },
		{ 64, 0, 32, 0.0152672757, 0.01288065, 0.0156479505 },
		{ 64, 0, 64, 0.0156127358, 0.0127211543, 0.0158633767 },
		{ 64, 0, 128, 0.0155428209, 0.0149476395, 0.0155872781 },
		{ 64, 1, 1, 0.0164025493, 0.0134589974, 0.0166025157 },
		{ 64, 1, 2, 0.0163434473, 0.0154935638, 0.0168433131 },
		{ 64, 1, 4, 0.0162825635, 0.0133576182, 0.0166470825 },
		{ 64, 1, 8, 0.0165471223, 0.0153535761, 0.0168328804 },
		{ 64, 1, 16, 0.0165667227, 0.013484969, 0.0169416934 },
		{ 64, 1, 32, 0.0164621756, 0.0135195653, 0.0168786275 },
		{ 64, 1, 64, 0.0164991913, 0.0162098261, 0.0167160094 },
		{ 64, 1, 128, 0.0165493559, 0.0124766489, 0.0169514084 },
		{ 256, 0, 1, 0.0144026393, 0.00856112846, 0.0145886901 },
		{ 256, 0, 2, 0.0141058645, 0.0109930928, 0.0144004032 },
		{ 256, 0, 4, 0.0145980407, 0.0143291255, 0.0146898491 },
		{ 256, 0, 8, 0.0147277947, 0.011996506, 0.0149047088 },
		{ 256, 0, 16, 0.0146008965, 0.0137935122, 0.0147088059 },
		{ 256, 0, 32, 0.0143511594, 0.0120062958, 0.0144640532 },
		{ 256, 0, 64, 0.0144491542, 0.012169938, 0.0145920247 },
		{ 256, 0, 128, 0.0146372367, 0.0113540554, 0.0147026729 },
		{ 256, 1, 1, 0.0144786144, 0.0126632287, 0.0152473162 },
		{ 256, 1, 2, 0.0146330199, 0.0124779767, 0.0155605317 },
		{ 256, 1, 4, 0.015213482, 0.0122662622, 0.0155279691 },
		{ 256, 1, 8, 0.0152231077, 0.014674887, 0.0158055327 },
		{ 256, 1, 16, 0.0153523975, 0.012700059, 0.0157568424 },
		{ 256, 1, 32, 0.015510692, 0.0152111588, 0.0156971047 },
		{ 256, 1, 64, 0.0153758113, 0.013345365, 0.0157240334 },
		{ 256, 1, 128, 0.0155446864, 0.0138179325, 0.0158162449 },
	};
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	assert_non_null(r);
	d = tune_stored(r, RT_OP_WRITE, pts, sizeof(pts) / sizeof(pts[0]), &res);
	print_message("stored always_flat write/rc: %s N = %u (%s), t_cqe %.0f ns\n",
		      rt_signal_verdict_name(d->signal_verdict), d->signal_interval,
		      rt_confidence_name(d->signal_confidence), d->t_cqe_ns);
	assert_false(d->signal_verdict == RT_SIGNAL_KNEE && d->signal_confidence == RT_CONF_HIGH);
	assert_true(d->signal_verdict != RT_SIGNAL_KNEE || has(d, "series_disagree"));
	rt_tuner_result_free(&res);
	free(r);
}

/* One point dipping is no drop (rxe_emulated, x256_n16 send/rc, 2026-12-03, one run of ten): 8 B non-inline 23 % slower
   at N = 32 only, the larger N back at the best; it capped the knee at 32 at medium ("the rate drops at larger N ...
   from N = 32") where the other runs said high. A drop has to stay down at most of the N from there on. */
static void test_a_dip_is_no_drop(void **state)
{
	static const struct stored_pt pts[] = {
		{ 8, 0, 1, 0.00903626366, 0.00806128254, 0.00944535126 },
		{ 8, 0, 2, 0.00953151842, 0.00938648332, 0.0107566325 },
		{ 8, 0, 4, 0.010930455, 0.010056667, 0.0114607075 },
		{ 8, 0, 8, 0.0108763999, 0.00890638829, 0.0122881258 },
		{ 8, 0, 16, 0.0122654884, 0.00658037014, 0.0125277409 },
		{ 8, 0, 32, 0.00996223302, 0.00905517289, 0.0125281394 },
		{ 8, 0, 64, 0.0119902729, 0.0108456286, 0.0126045439 },
		{ 8, 0, 128, 0.0120376723, 0.00984401845, 0.0125447642 },
		{ 8, 1, 1, 0.0101984312, 0.00903086581, 0.0109484103 },
		{ 8, 1, 2, 0.0121389608, 0.0109214877, 0.0124435362 },
		{ 8, 1, 4, 0.0134124163, 0.0115442874, 0.0137217445 },
		{ 8, 1, 8, 0.0132200158, 0.0120813482, 0.0145928082 },
		{ 8, 1, 16, 0.0142552755, 0.0125728192, 0.0148190067 },
		{ 8, 1, 32, 0.0137564236, 0.0102044916, 0.0150392619 },
		{ 8, 1, 64, 0.0137858956, 0.0121664029, 0.0149489051 },
		{ 8, 1, 128, 0.0146306114, 0.0127570852, 0.0151442729 },
		{ 64, 0, 1, 0.00897779819, 0.0068001479, 0.00937603466 },
		{ 64, 0, 2, 0.0103747766, 0.008990033, 0.0106930607 },
		{ 64, 0, 4, 0.0105056156, 0.00924986821, 0.0114625959 },
		{ 64, 0, 8, 0.0106666578, 0.0095629686, 0.0120179443 },
		{ 64, 0, 16, 0.0115017151, 0.0104323092, 0.0120782577 },
		{ 64, 0, 32, 0.0121380917, 0.00800818503, 0.0125115952 },
		{ 64, 0, 64, 0.0120830521, 0.00939727494, 0.012270168 },
		{ 64, 0, 128, 0.0119178414, 0.0086533934, 0.0123503068 },
		{ 64, 1, 1, 0.00983169369, 0.00677508209, 0.0109055714 },
		{ 64, 1, 2, 0.011536905, 0.010870156, 0.0125495487 },
		{ 64, 1, 4, 0.0122430104, 0.011901325, 0.0135377992 },
		{ 64, 1, 8, 0.0131118845, 0.012389055, 0.0143204478 },
		{ 64, 1, 16, 0.0138566529, 0.0115646157, 0.0146349941 },
		{ 64, 1, 32, 0.0143628634, 0.0112610314, 0.0148339341 },
		{ 64, 1, 64, 0.0132120958, 0.0115789583, 0.0151830819 },
		{ 64, 1, 128, 0.0146194767, 0.0132268389, 0.0148585305 },
		{ 256, 0, 1, 0.0085102837, 0.00542635002, 0.00886046157 },
		{ 256, 0, 2, 0.00963723708, 0.00715902621, 0.0100906105 },
		{ 256, 0, 4, 0.0100553792, 0.00719720838, 0.0104932655 },
		{ 256, 0, 8, 0.00973152398, 0.00867870355, 0.0114640178 },
		{ 256, 0, 16, 0.0105670022, 0.00875497726, 0.0115836108 },
		{ 256, 0, 32, 0.010223438, 0.00963421229, 0.0117893302 },
		{ 256, 0, 64, 0.0112774386, 0.011110031, 0.0116374533 },
		{ 256, 0, 128, 0.0103753275, 0.00943747489, 0.0118011833 },
		{ 256, 1, 1, 0.00878511472, 0.00642847601, 0.00920376415 },
		{ 256, 1, 2, 0.00942266659, 0.00835674691, 0.0105098078 },
		{ 256, 1, 4, 0.00952195685, 0.00703243638, 0.0114163702 },
		{ 256, 1, 8, 0.0111789612, 0.0101435872, 0.0116722984 },
		{ 256, 1, 16, 0.0115778848, 0.00938790493, 0.0120432163 },
		{ 256, 1, 32, 0.0112150499, 0.0103867481, 0.0120808682 },
		{ 256, 1, 64, 0.0111910856, 0.0093504061, 0.011825103 },
		{ 256, 1, 128, 0.0118438518, 0.0104515221, 0.012082556 },
	};
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	assert_non_null(r);
	d = tune_stored(r, RT_OP_SEND, pts, sizeof(pts) / sizeof(pts[0]), &res);
	print_message("stored x256_n16 send/rc: %s N = %u (%s)\n", rt_signal_verdict_name(d->signal_verdict),
		      d->signal_interval, rt_confidence_name(d->signal_confidence));
	assert_int_equal(d->signal_verdict, RT_SIGNAL_KNEE);
	assert_int_equal(d->signal_interval, 32);
	assert_int_equal(d->signal_confidence, RT_CONF_HIGH);
	assert_false(has(d, "non_monotone"));
	rt_tuner_result_free(&res);
	free(r);
}

/* Soft-RoCE: inline wins by 2-4 % at every size up to the device's 512 B, in noise of 5 % per sample. */
static void test_small_uniform_win_is_device_max(void **state)
{
	size_t at_max = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed + 1000, 512);
		for (uint32_t s = 1; s <= 512; s *= 2) {
			double ln = 15000 + 2.0 * s, gain = ln * (0.02 + 0.02 * rt_rng_uniform(&r->rng));

			add_point(r, s, false, ln, 0.05, 1);
			add_point(r, s, true, ln - gain, 0.05, 1);
		}
		d = tune(r, &res);
		at_max += d->inline_threshold == 512;
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("uniform small win: threshold 512 B (the device max) in %zu of %d draws\n", at_max, DRAWS);
	assert_true(at_max >= DRAWS - 1);
}

/* Inline wins 2 us at every size up to the device's 512 B, but the largest size is measured noisily (its CI crosses 0):
   the range often ends on an inconclusive size. The physics fit over all sizes places the same threshold, so that
   size's noise does not lower the label when the fit agrees in 90 % of its bootstrap fits (before: medium in every
   such draw; in the stored emulated runs 42 answers at the planted threshold were medium on that edge alone, high in
   the other runs of their model; 2026-12-03). */
static void test_edge_held_by_the_fit_is_high(void **state)
{
	size_t at_max = 0, high = 0, edge = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed + 4200, 512);
		for (uint32_t s = 1; s <= 512; s *= 2) {
			double ln = 60000 + 4.0 * s, rel = s == 512 ? 0.25 : 0.04;

			add_point(r, s, false, ln, rel, 1);
			add_point(r, s, true, ln - 2000, rel, 1);
		}
		d = tune(r, &res);
		at_max += d->inline_threshold == 512;
		if (d->sizes[d->n_sizes - 1].cls == RT_SIZE_INCONCLUSIVE) {
			edge++;
			high += d->inline_threshold == 512 && d->inline_confidence == RT_CONF_HIGH;
		}
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("edge on an inconclusive 512 B: threshold 512 B in %zu of %d draws; of the %zu with 512 B "
		      "inconclusive, %zu at 512 B with high confidence\n",
		      at_max, DRAWS, edge, high);
	assert_true(at_max >= DRAWS - 1);
	assert_true(edge >= DRAWS / 3);
	assert_true(high * 10 >= edge * 9);
}

/* Wins up to 8 B, then sizes where the difference is within the 1 % floor, then a material loss: the indifferent
   sizes are classed so and do not end the range; the loss does. */
static void test_indifferent_sizes_do_not_end_the_range(void **state)
{
	static const double gain_pct[] = { 5, 5, 4, 4, 0.2, -0.2, 0.1, -5, -8, -10 };
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	size_t n_ind = 0;

	(void)state;
	assert_non_null(r);
	run_init(r, 9, 512);
	for (uint32_t i = 0, s = 1; s <= 512; s *= 2, i++) {
		double ln = 10000;

		add_point(r, s, false, ln, 0.002, 1);
		add_point(r, s, true, ln * (1 - gain_pct[i] / 100), 0.002, 1);
	}
	d = tune(r, &res);
	for (size_t i = 0; i < d->n_sizes; i++)
		if (d->sizes[i].msg_bytes >= 16 && d->sizes[i].msg_bytes <= 64)
			n_ind += d->sizes[i].cls == RT_SIZE_INDIFFERENT;
	assert_int_equal(n_ind, 3);
	assert_string_equal(rt_size_class_name(RT_SIZE_INDIFFERENT), "indifferent");
	assert_int_equal(d->inline_threshold, 64);
	assert_int_equal(d->crossover_bytes, 64);
	rt_tuner_result_free(&res);
	free(r);
}

/* The same samples with a stored CI three times wider (calibrate's block medians disagreed): the d CI widens. */
static void test_stored_ci_widens_the_bootstrap(void **state)
{
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	double w1, w3;

	(void)state;
	assert_non_null(r);
	run_init(r, 11, 512);
	for (uint32_t s = 1; s <= 16; s *= 2) {
		add_point(r, s, false, 10000, 0.05, 1);
		add_point(r, s, true, 9700, 0.05, 1);
	}
	d = tune(r, &res);
	w1 = d->sizes[2].d_hi_ns - d->sizes[2].d_lo_ns;
	rt_tuner_result_free(&res);
	for (size_t i = 0; i < r->in.n_lat; i++) {
		struct rt_lat_point *p = &r->lat[i];

		p->ci_lo_ns = p->median_ns - 3 * (p->median_ns - p->ci_lo_ns);
		p->ci_hi_ns = p->median_ns + 3 * (p->ci_hi_ns - p->median_ns);
	}
	d = tune(r, &res);
	w3 = d->sizes[2].d_hi_ns - d->sizes[2].d_lo_ns;
	print_message("d CI width %.1f ns with the iid CI, %.1f ns with a 3x stored CI\n", w1, w3);
	assert_true(w3 > 2.4 * w1 && w3 < 3.6 * w1);
	rt_tuner_result_free(&res);
	free(r);
}

/* t_cqe is one completion's cost, the same for every series: the reported t_cqe is estimated from all rate points
   (x64_n8 on rxe: six series, true 13 us; the slope of the one series needing the largest N said 22 us, CI
   18.8..25.3 us, not covering the truth). Over the draws the estimate is unbiased within 8 % and its 95 % CI covers
   the truth in at least 85 % of them. */
static void test_t_cqe_from_all_series(void **state)
{
	const double truth = 13000;
	size_t cover = 0, knee = 0;
	double sum = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed + 700, 512);
		for (uint32_t s = 8; s <= 256; s *= 4)
			for (int inl = 0; inl < 2; inl++)
				add_series(r, s, inl, 100000 + 40.0 * s - 1500.0 * inl, truth, 0, 0.03);
		d = tune(r, &res);
		if (d->signal_verdict == RT_SIGNAL_KNEE) {
			knee++;
			sum += d->t_cqe_ns;
			cover += d->t_cqe_lo_ns <= truth && truth <= d->t_cqe_hi_ns;
		}
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("t_cqe %.0f ns planted: mean estimate %.0f ns over %zu knees, CI covers it in %zu of %d draws\n",
		      truth, knee ? sum / (double)knee : 0, knee, cover, DRAWS);
	assert_true(knee >= DRAWS * 95 / 100);
	assert_true(fabs(sum / (double)knee - truth) <= 0.08 * truth);
	assert_true(cover >= DRAWS * 85 / 100);
}

/* Calibrate measures both latency kinds and refines whichever brackets a crossover, so the counts of sizes differ
   from run to run: the tuner must use the same kind every time (post -> completion when it has enough sizes), not
   the one that happened to get more sizes. Here ping-pong has more sizes but is noisy and flat; post -> completion
   is clean with inline winning up to 64 B. */
static void test_latency_kind_does_not_follow_refinement(void **state)
{
	size_t right = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		run_init(r, seed + 900, 512);
		for (uint32_t s = 1; s <= 512; s *= 2) {
			for (int inl = 0; inl < 2; inl++) {
				add_point(r, s, inl, 300000, 0.2, 1);
				if (s == 64 || s == 128) { /* refined ping-pong sizes */
					add_point(r, s + s / 4, inl, 300000, 0.2, 1);
					add_point(r, s + s / 2, inl, 300000, 0.2, 1);
				}
				add_point(r, s, inl, 100000 + (inl ? (s <= 64 ? -2000 : 2000 + 60.0 * s) : 0), 0.02, 1);
				r->lat[r->in.n_lat - 1].kind = RT_LAT_POST_CQE;
			}
		}
		d = tune(r, &res);
		right += d->kind == RT_LAT_POST_CQE && d->inline_threshold == 64;
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("post -> completion used, threshold 64 B, in %zu of %d draws\n", right, DRAWS);
	assert_true(right >= DRAWS * 95 / 100);
}

/* Tunes one draw of the curve of the next two tests: inline 2 us better up to 64 B, 6 us x size/128 worse above,
   around a non-inline latency of lat0_ns + 10 ns/B with relative noise rel per sample, drawn from seed. */
static const struct rt_tuner_decision *tune_floor_curve(struct run *r, uint64_t seed, double lat0_ns, double rel,
							struct rt_tuner_result *res)
{
	run_init(r, seed, 512);
	for (uint32_t s = 1; s <= 512; s *= 2) {
		double ln = lat0_ns + 10.0 * s, gain = s <= 64 ? 2000 : -6000.0 * s / 128;

		add_point(r, s, false, ln, rel, 1);
		add_point(r, s, true, ln - gain, rel, 1);
	}
	return tune(r, res);
}

/* A gain about as large as the practical floor below a clear loss: 2 us on a 178 us round trip (a 1.8 us floor), each
   size's median measured to +-2.5 us (UD post -> completion under the x64_n8 model on rxe). No size's win is
   significant in some draws and one is in others; the answer must not flip between 0 ("never") and 64 B with it:
   inline does not matter up to 64 B and loses 6 us from 128 B, so the threshold is 64 B every time (medium at best when no
   gain is shown), never 0 and never a high-confidence answer more than a size step off. Before the harmless range:
   64 B in 44 of 60 draws, 0 in 13 (now 55 and 0). */
static void test_gain_at_the_floor_gives_one_answer(void **state)
{
	size_t at64 = 0, near = 0, never = 0, harmless = 0, high_off = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		d = tune_floor_curve(r, seed + 1300, 178000, 0.09, &res);
		at64 += d->inline_threshold == 64;
		near += d->inline_threshold >= 32 && d->inline_threshold <= 128;
		never += d->inline_threshold == 0;
		high_off +=
			(d->inline_threshold < 32 || d->inline_threshold > 128) && d->inline_confidence == RT_CONF_HIGH;
		for (size_t i = 0; i < d->n_reasons; i++)
			harmless += d->reasons[i].code == RT_R_INLINE_THRESHOLD &&
				    strstr(d->reasons[i].text, "where it does not matter") != NULL;
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("gain at the floor: threshold 64 B in %zu of %d draws (%zu by the harmless range), within one "
		      "size step in %zu, 0 in %zu, high more than a step off in %zu\n",
		      at64, DRAWS, harmless, near, never, high_off);
	assert_true(at64 >= DRAWS * 85 / 100);
	assert_true(near >= DRAWS * 90 / 100);
	assert_int_equal(never, 0);
	assert_int_equal(high_off, 0);
	assert_true(harmless > 0); /* the draws without a significant win are there, and answered the same */
}

/* The same curve under three times the noise (a disturbed guest: every size inconclusive): the data cannot place the
   threshold (insufficient_data, low confidence), and the answer is the best estimate, the physics fit over all sizes,
   not "never": a noisy run then answers near where a clean one does. At a noise this large (each size's d to +-10 us
   for a 2 us effect) not all of them can be near: before, 2 of the 30 insufficient draws
   were within one size step of 64 B and 28 answered 0; with the antitonic fit 15 and 3; with the physics fit over all
   sizes (physics_threshold() in tuner/inline.c) 28 of 32 and 4. */
static void test_insufficient_data_answers_the_estimate(void **state)
{
	size_t insufficient = 0, near = 0, never = 0, high_off = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		d = tune_floor_curve(r, seed + 1400, 165000, 0.27, &res);
		if (has(d, "insufficient_data")) {
			/* every reason is whole (a 320-byte buffer cut this one's estimate at "is not") */
			for (size_t i = 0; i < d->n_reasons; i++) {
				size_t len = strlen(d->reasons[i].text);

				assert_false(len >= 3 && !strcmp(d->reasons[i].text + len - 3, "..."));
			}
			insufficient++;
			near += d->inline_threshold >= 32 && d->inline_threshold <= 128;
			never += d->inline_threshold == 0;
		}
		high_off +=
			d->inline_confidence == RT_CONF_HIGH && (d->inline_threshold < 32 || d->inline_threshold > 128);
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message("three times the noise: insufficient data in %zu of %d draws, of those within one size step of "
		      "64 B %zu, 0 %zu; %zu high-confidence answers more than a step off\n",
		      insufficient, DRAWS, near, never, high_off);
	assert_true(insufficient >= DRAWS / 3); /* the case is there */
	assert_true(near >= insufficient * 4 / 10);
	assert_true(never <= insufficient / 5);
	assert_int_equal(high_off, 0);
}

/* Tunes one draw of a physics truth: the non-inline latency lat0_ns + 10 ns/B, inline faster by alpha_ns (the DMA
   read it avoids) minus beta_ns per 64 B chunk copied into the WQE, relative noise rel per sample, from seed. */
static const struct rt_tuner_decision *tune_chunk_curve(struct run *r, uint64_t seed, double alpha_ns, double beta_ns,
							double rel, struct rt_tuner_result *res)
{
	run_init(r, seed, 512);
	for (uint32_t s = 1; s <= 512; s *= 2) {
		double ln = 165000 + 10.0 * s, gain = alpha_ns - beta_ns * ceil(s / 64.0);

		add_point(r, s, false, ln, rel, 1);
		add_point(r, s, true, ln - gain, rel, 1);
	}
	return tune(r, res);
}

/* Index of bytes on the grid 0, 1, 2, 4, ..., 512 (a value between two sizes counts as the one above). */
static int grid_step(uint32_t bytes)
{
	int i = 0;

	while (i < 10 && (i ? 1u << (i - 1) : 0) < bytes)
		i++;
	return i;
}

/* The threshold repeats when the per-size data cannot place it: DRAWS noisy draws of one physics truth (inline 2 us
   faster at one 64 B chunk, 2 us slower at two, 4 us more per chunk: x64_n8 under a disturbed guest, each size's d to
   +-7 us) answer within one size step of each other whenever the answer is low confidence (the physics fit's), and a
   flat truth (inline changes nothing) gives one answer, the largest size (inline is shown to lose nowhere: it does
   not matter), whenever the physics fit answers, but for its false alarms (a loss shown at the 95 % level at some
   size). Before the physics fit: the sloped truth's low-confidence answers spread over 0..128 B (of 23: 1 at 0, 8
   at 1..16, 2 at 32, 3 at 64 and 9 at 128 B), and the flat truth answered 0 in 8 draws and a size in the other 52;
   now 64 B in all 23, and the flat truth 512 B in 57 of 60: one physics false alarm (128 B, low) and two
   medium answers of the per-size rule (32 and 4 B; unchanged by the fit, which answers only for low ones). */
static void test_unplaced_threshold_repeats(void **state)
{
	int lo = 99, hi = -1, flat_max = 0, flat_low_other = 0, low = 0, flat_line = 0;
	size_t seen[11] = { 0 };

	(void)state;
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct run *r = malloc(sizeof(*r));
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d;

		assert_non_null(r);
		d = tune_chunk_curve(r, seed + 1500, 6000, 4000, 0.18, &res);
		if (d->inline_confidence == RT_CONF_LOW) {
			int g = grid_step(d->inline_threshold);

			low++;
			lo = g < lo ? g : lo;
			hi = g > hi ? g : hi;
			seen[g]++;
		}
		assert_false(d->inline_confidence == RT_CONF_HIGH && d->inline_threshold != 64);
		rt_tuner_result_free(&res);
		d = tune_chunk_curve(r, seed + 1600, 0, 0, 0.18, &res);
		for (size_t i = 0; i < d->n_reasons; i++) {
			const char *t = d->reasons[i].text, *line = strstr(t, "d = ");

			/* the fitted line with one sign per term (a slope below 0 printed "- -25 ns per 64 B chunk") */
			if (line && strstr(t, "physics fit")) {
				flat_line++;
				assert_null(strstr(line, "- -"));
				assert_null(strstr(line, "+ -"));
			}
		}
		flat_max += d->inline_threshold == 512;
		flat_low_other += d->inline_threshold != 512 && d->inline_confidence == RT_CONF_LOW;
		if (d->inline_threshold != 512)
			print_message("flat truth, draw %d: %u B at %s confidence\n", (int)seed, d->inline_threshold,
				      rt_confidence_name(d->inline_confidence));
		rt_tuner_result_free(&res);
		free(r);
	}
	print_message(
		"physics truth 64 B: %d low-confidence answers of %d draws, grid steps %d..%d (0 B %zu, 32 B %zu, "
		"64 B %zu, 128 B %zu); flat truth: 512 B in %d of %d draws\n",
		low, DRAWS, lo, hi, seen[0], seen[6], seen[7], seen[8], flat_max, DRAWS);
	assert_true(low >= DRAWS / 4); /* the case is there */
	assert_true(hi - lo <= 1);
	assert_true(flat_max >= DRAWS - 4);
	assert_true(flat_low_other <= 1);
	assert_true(flat_line >= DRAWS / 2); /* the fit's line was read */
}

/* The threshold repeats when the per-size rule's boundary rests on noise: DRAWS draws of a truth whose crossover is
   a measured size (inline 8 us faster at 128 B, even at 256 B, 16 us slower at 512 B: x256_n16 of the emulated NIC,
   each size's d to +-4 us). 256 B is inconclusive in most draws, so the per-size rule ended the range at 128 B in
   some and at 256 B in others (the emulated NIC's x256_n16 send/rc: 128 B in 2 of 9 runs); where the size at the
   threshold or the next one is inconclusive, the physics fit over all sizes answers unless it agrees, and its line
   puts the crossover at 256 B, the last whole chunk before it 192 or 256 B. Counted: the answers in 192..256 B. */
static void test_boundary_threshold_repeats(void **state)
{
	int in_band = 0, at128 = 0, other = 0, at256 = 0;
	struct run *r = malloc(sizeof(*r));

	(void)state;
	assert_non_null(r);
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		struct rt_tuner_result res;
		const struct rt_tuner_decision *d = tune_chunk_curve(r, seed + 1700, 16000, 4000, 0.10, &res);
		uint32_t t = d->inline_threshold;

		at256 += t == 256;
		in_band += t >= 192 && t <= 256;
		at128 += t == 128;
		other += t != 128 && (t < 192 || t > 256);
		if (t < 192 || t > 256)
			print_message("boundary truth, draw %d: %u B at %s confidence\n", (int)seed, t,
				      rt_confidence_name(d->inline_confidence));
		rt_tuner_result_free(&res);
	}
	free(r);
	print_message("boundary truth 256 B: 192..256 B in %d of %d draws (256 B in %d), 128 B in %d, other %d\n",
		      in_band, DRAWS, at256, at128, other);
	assert_true(in_band >= DRAWS - 3);
}

/* The non_monotone reason says what it saw: a dip at a small size followed by wins is "d rises", not "inline wins
   again after a significant loss" (x64_n8 on rxe: an indifferent 2 B between wins, every loss above the threshold). */
static void test_non_monotone_says_what_it_saw(void **state)
{
	struct run *r = malloc(sizeof(*r));
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	const char *text = NULL;

	(void)state;
	assert_non_null(r);
	run_init(r, 77, 512);
	for (uint32_t s = 1; s <= 512; s *= 2)
		for (int inl = 0; inl < 2; inl++)
			add_point(r, s, inl,
				  100000 + (inl ? (s == 2    ? 0
						   : s <= 64 ? -3000
							     : 3000.0 + 40 * s)
						: 0),
				  0.02, 1);
	d = tune(r, &res);
	for (size_t i = 0; i < d->n_reasons; i++)
		if (!strcmp(rt_reason_code_name(d->reasons[i].code), "non_monotone"))
			text = d->reasons[i].text;
	assert_non_null(text);
	print_message("%s\n", text ? text : "(none)"); /* gcc does not see assert_non_null end the test */
	assert_non_null(strstr(text, "d rises beyond its CIs and floor at 4 B"));
	assert_null(strstr(text, "after a significant loss"));
	rt_tuner_result_free(&res);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_rate_is_indifferent_every_time),
		cmocka_unit_test(test_one_stalled_point_is_no_knee),
		cmocka_unit_test(test_knee_from_the_physics),
		cmocka_unit_test(test_a_point_against_the_knee_keeps_it),
		cmocka_unit_test(test_knee_at_two_is_does_not_matter),
		cmocka_unit_test(test_knee_under_a_rate_floor),
		cmocka_unit_test(test_minority_knee_is_not_high),
		cmocka_unit_test(test_minority_knee_of_a_stored_run),
		cmocka_unit_test(test_a_dip_is_no_drop),
		cmocka_unit_test(test_small_uniform_win_is_device_max),
		cmocka_unit_test(test_edge_held_by_the_fit_is_high),
		cmocka_unit_test(test_indifferent_sizes_do_not_end_the_range),
		cmocka_unit_test(test_stored_ci_widens_the_bootstrap),
		cmocka_unit_test(test_t_cqe_from_all_series),
		cmocka_unit_test(test_latency_kind_does_not_follow_refinement),
		cmocka_unit_test(test_non_monotone_says_what_it_saw),
		cmocka_unit_test(test_gain_at_the_floor_gives_one_answer),
		cmocka_unit_test(test_insufficient_data_answers_the_estimate),
		cmocka_unit_test(test_unplaced_threshold_repeats),
		cmocka_unit_test(test_boundary_threshold_repeats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
