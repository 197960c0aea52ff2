// SPDX-License-Identifier: MIT
/*
 * Tuner benchmark (`make bench`): the tuner's time on a 10,000-point latency curve with its bootstrap (target <= 10 ms),
 * once from the points' medians/CIs and once from raw samples, and its accuracy on the ground-truth corpus of
 * tests/unit/tuner/gen.c next to the plain Kneedle-only baseline, measured in the same run. Prints one line per figure
 * and exits 0 (non-zero only when something fails to run).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "rt_rng.h"
#include "rt_tuner.h"

#define CURVE_POINTS 10000
#define RAW_PER_POINT 64
#define REPEATS 15
#define CORPUS 1000

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/* A curve of CURVE_POINTS points (half inline): sizes 1..CURVE_POINTS/2 B, crossover at 1/3 of the range. */
static struct rt_lat_point *make_curve(int raw, struct rt_rng *r)
{
	size_t ns = CURVE_POINTS / 2;
	struct rt_lat_point *p = calloc(CURVE_POINTS, sizeof(*p));

	if (!p)
		return NULL;
	for (size_t i = 0; i < ns; i++) {
		double s = (double)(i + 1), d = 300 - 300 * s / (ns / 3.0), ln = 1500 + 0.05 * s;

		for (int inl = 0; inl < 2; inl++) {
			struct rt_lat_point *q = &p[2 * i + (size_t)inl];
			double mu = inl ? ln - d : ln, sigma = 40;

			q->op = RT_OP_SEND;
			q->qpt = RT_QPT_RC;
			q->kind = RT_LAT_PINGPONG;
			q->msg_bytes = (uint32_t)(i + 1);
			q->inl = inl;
			q->n_samples = 400;
			q->median_ns = mu + sigma * 1.2533 / 20 * rt_rng_normal(r);
			q->ci_lo_ns = q->median_ns - 1.96 * sigma * 1.2533 / 20;
			q->ci_hi_ns = q->median_ns + 1.96 * sigma * 1.2533 / 20;
			q->p99_ns = mu + 2.33 * sigma;
			if (raw) {
				q->samples_ns = malloc(RAW_PER_POINT * sizeof(float));
				if (!q->samples_ns)
					return p;
				q->n_kept = RAW_PER_POINT;
				for (size_t k = 0; k < RAW_PER_POINT; k++)
					q->samples_ns[k] = (float)(mu + sigma * rt_rng_normal(r));
			}
		}
	}
	return p;
}

/* Wall time (median and best) and thread CPU time (median: what the tuner costs, whatever else the host runs). */
struct timing {
	double wall_med_ms, wall_min_ms, cpu_med_ms;
};

static int time_curve(int raw, struct timing *tm, uint32_t *thr)
{
	struct rt_rng r;
	struct rt_lat_point *p;
	struct rt_tuner_input in;
	struct rt_error err;
	double t[REPEATS], c[REPEATS];
	int rc = 0;

	rt_rng_seed(&r, 42);
	p = make_curve(raw, &r);
	if (!p)
		return ENOMEM;
	memset(&in, 0, sizeof(in));
	in.lat = p;
	in.n_lat = CURVE_POINTS;
	in.limits.max_inline[RT_QPT_RC] = CURVE_POINTS / 2;
	in.limits.max_inline[RT_QPT_UD] = -1;
	for (int k = 0; k < REPEATS && !rc; k++) {
		struct rt_tuner_result res;
		double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);

		rc = rt_tuner_run(&in, NULL, &res, &err);
		c[k] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		t[k] = clock_s(CLOCK_MONOTONIC) - t0;
		if (!rc) {
			*thr = res.d[0].inline_threshold;
			rt_tuner_result_free(&res);
		} else {
			fprintf(stderr, "bench_tuner: %s\n", err.text);
		}
	}
	for (size_t i = 0; i < CURVE_POINTS; i++)
		free(p[i].samples_ns);
	free(p);
	qsort(t, REPEATS, sizeof(t[0]), cmp_d);
	qsort(c, REPEATS, sizeof(c[0]), cmp_d);
	tm->wall_med_ms = 1e3 * t[REPEATS / 2];
	tm->wall_min_ms = 1e3 * t[0];
	tm->cpu_med_ms = 1e3 * c[REPEATS / 2];
	return rc;
}

int main(void)
{
	struct corpus_score s;
	struct gen_opts go;
	struct timing tm;
	uint32_t thr = 0;
	int rc;

	if (time_curve(0, &tm, &thr)) /* it printed why */
		return 1;
	printf("tuner: %d-point curve (%d sizes x inline/non-inline, 200 bootstrap replicates, CIs from the points' "
	       "medians/CIs): %.2f ms CPU, %.2f ms wall (best %.2f) median of %d runs (target <= 10 ms: %s); "
	       "threshold %u B\n",
	       CURVE_POINTS, CURVE_POINTS / 2, tm.cpu_med_ms, tm.wall_med_ms, tm.wall_min_ms, REPEATS,
	       tm.cpu_med_ms <= 10 ? "met" : "MISSED", thr);
	if (time_curve(1, &tm, &thr)) /* it printed why */
		return 1;
	printf("tuner: same curve bootstrapped from %d raw samples per point (+ Mann-Whitney per size): %.2f ms CPU, "
	       "%.2f ms wall (best %.2f) median of %d runs; threshold %u B\n",
	       RAW_PER_POINT, tm.cpu_med_ms, tm.wall_med_ms, tm.wall_min_ms, REPEATS, thr);

	gen_opts_default(&go);
	if ((rc = corpus_run(1, CORPUS, &go, NULL, &s))) {
		fprintf(stderr, "bench_tuner: corpus failed: %s\n", strerror(rc));
		return 1;
	}
	printf("tuner accuracy on %zu ground-truth cases (all noise models): threshold within one size step %.1f %% "
	       "(exact %.1f %%), N within one power of two %.1f %% (exact %.1f %%); %.2f ms per case\n",
	       s.cases, 100.0 * (double)s.thr_ok / (double)s.cases, 100.0 * (double)s.thr_exact / (double)s.cases,
	       100.0 * (double)s.n_ok / (double)s.cases, 100.0 * (double)s.n_exact / (double)s.cases,
	       1e3 * s.tuner_s / (double)s.cases);
	printf("Kneedle-only baseline on the same cases: threshold %.1f %%, N %.1f %%; tuner/baseline hit ratio: "
	       "threshold %.2fx, N %.2fx\n",
	       100.0 * (double)s.base_thr_ok / (double)s.cases, 100.0 * (double)s.base_n_ok / (double)s.cases,
	       s.base_thr_ok ? (double)s.thr_ok / (double)s.base_thr_ok : INFINITY,
	       s.base_n_ok ? (double)s.n_ok / (double)s.base_n_ok : INFINITY);
	return 0;
}
