// SPDX-License-Identifier: MIT
/*
 * Ground-truth generator for the tuner (see gen.h). Latency model of one size s:
 *   non-inline L_n(s) = B0 + c_n s                 (B0 base latency, c_n the payload DMA cost per byte)
 *   inline     L_i(s) = L_n(s) - d(s),  d(s) = G - k s - h floor(s / 64)
 * G is the PCIe read inline avoids, k the extra per-byte cost of copying into the WQE, h a step per 64-byte WQE basic
 * block. k is solved so that d crosses zero at the planted crossover s*; the planted threshold is the largest measured
 * size with d > 0. Rate model of one series: r(N) = min(1000 / (a + b / N), R_cap) Mops (a = per-message ns, b = cost
 * of one signaled completion); the planted N is the smallest measured N within the tolerance of the best, the largest
 * over the series, capped at sq_depth / 4. Samples then go through one of the noise models.
 */
#include "gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_rng.h"

#define TOL 0.015

void gen_opts_default(struct gen_opts *o)
{
	o->noise = -1;
	o->noise_mult = 1;
	o->raw = -1;
	o->refine = -1;
	o->edges = 1;
	o->with_rate = 1;
}

static double unif(struct rt_rng *r, double a, double b)
{
	return a + (b - a) * rt_rng_uniform(r);
}

static double logunif(struct rt_rng *r, double a, double b)
{
	return exp(unif(r, log(a), log(b)));
}

static int cmp_u32(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	return (a > b) - (a < b);
}

static int cmp_float(const void *pa, const void *pb)
{
	float a = *(const float *)pa, b = *(const float *)pb;

	return (a > b) - (a < b);
}

struct lat_model {
	double b0, g, k, h, cn;
	int never;
};

static double true_d(const struct lat_model *m, double s)
{
	return m->g - m->k * s - m->h * floor(s / 64);
}

/* Noise of one latency measurement setting (shared by both sides of every size: they run interleaved). */
struct lat_noise {
	enum gen_noise kind;
	double sigma, zeta, drift, wobble, cycles;
	uint32_t period;
	double outlier_lo, outlier_hi;
};

/*
 * Fills n samples of true median mu, in time order. Like calibrate, the run is a sequence of rounds; each round
 * measures one block of every (size, inline) cell in random order, so the point's block j lands at a random time of
 * round j and drift hits every cell alike on average (but not exactly).
 */
static void draw_samples(struct rt_rng *r, const struct lat_noise *nz, double mu, float *out, uint32_t n)
{
	const uint32_t blocks = 8, period = nz->period ? nz->period : 1; /* 0 would divide by zero: 1 = every sample */
	uint32_t per = (n + blocks - 1) / blocks;

	for (uint32_t bl = 0, i = 0; bl < blocks && i < n; bl++) {
		double t0 = (bl + rt_rng_uniform(r)) / blocks;
		uint32_t phase = rt_rng_below(r, period);

		for (uint32_t j = 0; j < per && i < n; j++, i++) {
			double z = rt_rng_normal(r), x = mu;
			int lognormal = nz->kind == GEN_LOGNORMAL || nz->kind == GEN_MIXED;
			int outliers = nz->kind == GEN_OUTLIERS || nz->kind == GEN_MIXED;
			int drift = nz->kind == GEN_DRIFT || nz->kind == GEN_MIXED;

			x += lognormal ? nz->sigma * (exp(nz->zeta * z) - 1) / nz->zeta : nz->sigma * z;
			if (outliers && (j + phase) % period == 0)
				x += unif(r, nz->outlier_lo, nz->outlier_hi);
			if (drift) {
				double t = t0 + 0.002 * j / per; /* a block is short next to a round */

				x += nz->drift * t + nz->wobble * sin(6.283185307179586 * nz->cycles * t);
			}
			out[i] =
				(float)(x > 0.25 * mu ? x : 0.25 * mu); /* no latency below a quarter of the true one */
		}
	}
}

static void summarize(struct rt_lat_point *p, float *s, uint32_t n, int keep_raw, uint32_t keep_max)
{
	float *sorted = malloc(n * sizeof(*sorted));
	double sum = 0, h;
	long j, k;

	memcpy(sorted, s, n * sizeof(*s));
	qsort(sorted, n, sizeof(*sorted), cmp_float);
	for (uint32_t i = 0; i < n; i++)
		sum += sorted[i];
	p->n_samples = n;
	p->median_ns = n % 2 ? sorted[n / 2] : 0.5 * ((double)sorted[n / 2 - 1] + sorted[n / 2]);
	h = 1.959964 * sqrt((double)n) / 2;
	j = (long)floor(n / 2.0 - h);
	k = (long)ceil(n / 2.0 + h);
	p->ci_lo_ns = sorted[j < 0 ? 0 : j];
	p->ci_hi_ns = sorted[k >= (long)n ? (long)n - 1 : k];
	if (p->ci_lo_ns > p->median_ns)
		p->ci_lo_ns = p->median_ns;
	if (p->ci_hi_ns < p->median_ns)
		p->ci_hi_ns = p->median_ns;
	p->p99_ns = sorted[(size_t)(0.99 * (n - 1))];
	p->p999_ns = sorted[(size_t)(0.999 * (n - 1))];
	p->mean_ns = sum / n;
	p->min_ns = sorted[0];
	free(sorted);
	if (keep_raw) {
		p->n_kept = n < keep_max ? n : keep_max; /* the first n_kept: a subsample when bounded */
		p->samples_ns = s;
	} else {
		p->n_kept = 0;
		p->samples_ns = NULL;
		free(s);
	}
}

static int make_lat(struct rt_rng *r, const struct gen_opts *o, struct gen_case *c)
{
	static const uint32_t maxes[] = { 64, 128, 220, 256, 512, 956, 1024 };
	struct lat_model m = { 0 };
	struct lat_noise nz = { 0 };
	double sstar, u;
	uint32_t M, ng = 0, grid[160];
	int hw = rt_rng_uniform(r) < 0.85, raw, refine;
	uint32_t keep_max;

	M = maxes[rt_rng_below(r, sizeof(maxes) / sizeof(maxes[0]))];
	if (!hw && rt_rng_uniform(r) < 0.5)
		M = 2048;
	c->max_inline = M;
	m.b0 = hw ? unif(r, 700, 2500) : unif(r, 5000, 20000);
	m.g = hw ? unif(r, 60, 500) : unif(r, 300, 3000);
	m.cn = unif(r, 0.02, 0.1);
	u = rt_rng_uniform(r);
	if (o->edges && u < 0.04) { /* inline never better */
		m.never = 1;
		m.g = -unif(r, 40, 200);
		m.k = unif(r, 0.05, 1.0);
		sstar = 0;
	} else if (o->edges && u < 0.08) { /* better all the way */
		sstar = M * unif(r, 1.5, 4);
		m.k = m.g / sstar;
	} else {
		sstar = logunif(r, 3, 0.8 * M);
		m.h = unif(r, 0, fmin(15, m.g / (floor(sstar / 64) + 1) / 2));
		m.k = (m.g - m.h * floor(sstar / 64)) / sstar;
	}
	/* the grid: powers of two up to M, M itself, refined between the powers around the (believed) crossover */
	for (uint32_t s = 1; s <= M; s *= 2)
		grid[ng++] = s;
	if (!ng || grid[ng - 1] != M) /* ng is 0 only for M = 0, which maxes[] does not hold */
		grid[ng++] = M;
	refine = o->refine >= 0 ? o->refine : rt_rng_uniform(r) < 0.6;
	if (refine && sstar >= 1 && sstar < M) {
		uint32_t lo = 1;

		while (lo * 2 <= sstar)
			lo *= 2;
		if (rt_rng_uniform(r) < 0.15) /* calibrate bracketed a neighbour */
			lo = rt_rng_uniform(r) < 0.5 && lo > 1 ? lo / 2 : lo * 2;
		for (uint32_t j = 1; j < 8; j++) {
			uint32_t s = lo + (uint32_t)((uint64_t)lo * j / 8);

			if (s > lo && s < 2 * lo && s < M && (ng == 0 || s != grid[ng - 1]))
				grid[ng++] = s;
		}
	}
	qsort(grid, ng, sizeof(grid[0]), cmp_u32);
	{
		uint32_t k = 0;

		for (uint32_t i = 0; i < ng; i++)
			if (!k || grid[i] != grid[k - 1])
				grid[k++] = grid[i];
		ng = k;
	}
	c->grid = malloc(ng * sizeof(*c->grid));
	c->lat = calloc(2 * ng, sizeof(*c->lat));
	if (!c->grid || !c->lat)
		return ENOMEM;
	memcpy(c->grid, grid, ng * sizeof(*grid));
	c->n_grid = ng;
	c->true_threshold = 0;
	{
		int won = 0, open = 1;

		/* the inline range: from the smallest size while inline is not worse by more than the practical floor
		   (the tuner's default max(1 % of the non-inline latency, 20 ns)); "never" without a size gaining more
		   than the floor, unless a loss ends the range (then inline does not matter in it: the range) */
		for (uint32_t i = 0; i < ng; i++) {
			double dd = true_d(&m, grid[i]), f = fmax(0.01 * (m.b0 + m.cn * grid[i]), 20);

			if (i < 64)
				c->true_d[i] = dd;
			open = open && dd > -f;
			if (open) {
				won |= dd > f;
				c->true_threshold = grid[i];
			}
		}
		if (!won && open) /* no gain and no loss: "never"; no gain before a loss: the harmless range */
			c->true_threshold = 0;
	}

	/* the noise of this run */
	c->noise = o->noise >= 0 ? (enum gen_noise)o->noise : (enum gen_noise)rt_rng_below(r, GEN__COUNT);
	nz.kind = c->noise;
	nz.sigma = o->noise_mult * m.b0 * unif(r, 0.01, 0.04);
	nz.zeta = unif(r, 0.6, 1.2);
	nz.period = 40 + rt_rng_below(r, 160);
	nz.outlier_lo = 3000;
	nz.outlier_hi = 30000;
	nz.drift = nz.sigma * unif(r, 1, 4) * (rt_rng_uniform(r) < 0.5 ? -1 : 1); /* sigma carries noise_mult */
	nz.wobble = nz.sigma * unif(r, 0, 1);
	nz.cycles = unif(r, 0.5, 3);
	raw = o->raw >= 0 ? o->raw : rt_rng_uniform(r) < 0.7;
	keep_max = rt_rng_uniform(r) < 0.25 ? 128 : UINT32_MAX;

	for (uint32_t i = 0; i < ng; i++) {
		double s = grid[i], ln = m.b0 + m.cn * s;
		uint32_t n = 100 + rt_rng_below(r, 300);

		if (refine && (double)grid[i] > sstar / 2 && (double)grid[i] < sstar * 2)
			n = n * 3 / 2; /* adaptive sampling spends more near the crossover */
		for (int inl = 0; inl < 2; inl++) {
			struct rt_lat_point *p = &c->lat[c->n_lat++];
			float *smp = malloc(n * sizeof(*smp));

			if (!smp)
				return ENOMEM;
			p->op = RT_OP_SEND;
			p->qpt = RT_QPT_RC;
			p->kind = RT_LAT_PINGPONG;
			p->msg_bytes = grid[i];
			p->inl = inl;
			draw_samples(r, &nz, inl ? ln - true_d(&m, s) : ln, smp, n);
			summarize(p, smp, n, raw, keep_max);
			p->cpu_ns_per_op = p->median_ns;
		}
	}
	c->in.limits.max_inline[RT_QPT_RC] = (int)M;
	c->in.limits.max_inline[RT_QPT_UD] = -1;
	c->in.limits.hardware = hw;
	return 0;
}

static double rate_true(double a, double b, double cap, uint32_t n)
{
	double v = 1000.0 / (a + b / n);

	return v < cap ? v : cap;
}

static int make_rate(struct rt_rng *r, const struct gen_opts *o, struct gen_case *c)
{
	static const uint32_t sqs[] = { 128, 256, 512, 1024 };
	uint32_t sq = sqs[rt_rng_below(r, 4)], nmax = sq / 2, nn = 0, ns = 2 + 2 * rt_rng_below(r, 2), truth = 0;
	double a0 = logunif(r, 25, 250), b = a0 * logunif(r, 0.02, 2.5);
	double sig = o->noise_mult * unif(r, 0.001, 0.006), zeta = unif(r, 0.6, 1.2);
	double drift = o->noise_mult * unif(r, 0.002, 0.01) * (rt_rng_uniform(r) < 0.5 ? -1 : 1);
	uint32_t period = 3 + rt_rng_below(r, 8);
	int capped = rt_rng_uniform(r) < 0.4;

	for (uint32_t v = 1; v <= nmax; v *= 2)
		nn++;
	c->sq_depth = sq;
	c->true_t_cqe_ns = b;
	c->rate = calloc((size_t)ns * nn, sizeof(*c->rate));
	if (!c->rate)
		return ENOMEM;
	for (uint32_t s = 0; s < ns; s++) {
		double a = a0 * (1 + 0.3 * s * unif(r, 0.5, 1.5)); /* larger / non-inline messages cost more */
		double cap = capped ? 1000.0 / a * unif(r, 0.85, 0.99) : INFINITY;
		double best = 0;
		uint32_t nstar = 0;

		for (uint32_t v = 1; v <= nmax; v *= 2)
			best = fmax(best, rate_true(a, b, cap, v));
		for (uint32_t v = 1; v <= nmax; v *= 2)
			if (!nstar && rate_true(a, b, cap, v) >= (1 - TOL) * best)
				nstar = v;
		truth = nstar > truth ? nstar : truth;
		for (uint32_t v = 1; v <= nmax; v *= 2) {
			struct rt_rate_point *p = &c->rate[c->n_rate++];
			double mu = rate_true(a, b, cap, v), reps[16], t = rt_rng_uniform(r);
			uint32_t nr = 5 + rt_rng_below(r, 5);

			for (uint32_t k = 0; k < nr; k++) {
				double z = rt_rng_normal(r), x;
				int lognormal = c->noise == GEN_LOGNORMAL || c->noise == GEN_MIXED;

				x = lognormal ? mu / (1 + sig * (exp(zeta * fabs(z)) - 1) / zeta * (z < 0 ? -0.3 : 1))
					      : mu * (1 + sig * z);
				if ((c->noise == GEN_OUTLIERS || c->noise == GEN_MIXED) && (k + s) % period == 0)
					x *= 1 - unif(r, 0.05, 0.3);
				if (c->noise == GEN_DRIFT || c->noise == GEN_MIXED)
					x *= 1 + drift * (t - 0.5);
				reps[k] = x;
			}
			for (uint32_t i = 1; i < nr; i++)
				for (uint32_t j = i; j > 0 && reps[j] < reps[j - 1]; j--) {
					double tmp = reps[j];

					reps[j] = reps[j - 1];
					reps[j - 1] = tmp;
				}
			p->op = RT_OP_SEND;
			p->qpt = RT_QPT_RC;
			p->msg_bytes = s < 2 ? 8 : 64;
			p->inl = s % 2 == 0;
			p->signal_interval = v;
			p->sq_depth = sq;
			p->reps = nr;
			/* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): nr is 5..9 (rt_rng_below(r, 5) < 5), all set */
			p->mops = reps[nr / 2];
			p->mops_lo = reps[0];
			p->mops_hi = reps[nr - 1];
			p->cpu_ns_per_msg = 1000.0 / p->mops * 0.9;
			p->msgs = (uint64_t)nr * 200000;
		}
	}
	c->true_n = truth > sq / 4 ? sq / 4 : truth;
	c->in.limits.sq_depth = sq;
	return 0;
}

int gen_make(uint64_t seed, const struct gen_opts *o, struct gen_case *c)
{
	struct gen_opts def;
	struct rt_rng r;
	int rc;

	if (!o) {
		gen_opts_default(&def);
		o = &def;
	}
	memset(c, 0, sizeof(*c));
	c->seed = seed;
	rt_rng_seed(&r, seed * 0x9e3779b97f4a7c15ull + 12345);
	if ((rc = make_lat(&r, o, c)) || (o->with_rate && (rc = make_rate(&r, o, c)))) {
		gen_free(c);
		return rc;
	}
	c->in.lat = c->lat;
	c->in.n_lat = c->n_lat;
	c->in.rate = c->rate;
	c->in.n_rate = c->n_rate;
	c->in.limits.max_qp_wr = 16384;
	c->in.limits.max_cqe = 65536;
	return 0;
}

void gen_free(struct gen_case *c)
{
	for (size_t i = 0; i < c->n_lat; i++)
		free(c->lat[i].samples_ns);
	free(c->lat);
	free(c->rate);
	free(c->grid);
	memset(c, 0, sizeof(*c));
}

static int grid_idx(const struct gen_case *c, uint32_t t)
{
	int k = -1;

	for (size_t i = 0; i < c->n_grid; i++)
		if (c->grid[i] <= t)
			k = (int)i;
	return k;
}

int gen_thr_steps(const struct gen_case *c, uint32_t a, uint32_t b)
{
	return abs(grid_idx(c, a) - grid_idx(c, b));
}

int gen_n_steps(uint32_t a, uint32_t b)
{
	return (int)lround(fabs(log2((double)(a ? a : 1) / (double)(b ? b : 1))));
}

void gen_baseline(const struct gen_case *c, uint32_t *thr, uint32_t *n)
{
	double x[160] = { 0 }, y[160] = { 0 };
	size_t ng = 0, best = SIZE_MAX, nk = 0;

	/* threshold: the knee of the median difference d(log2 size), concave decreasing */
	for (size_t i = 0; i + 1 < c->n_lat; i += 2) {
		x[ng] = log2(c->lat[i].msg_bytes);
		y[ng] = c->lat[i].median_ns - c->lat[i + 1].median_ns; /* non-inline first in each pair */
		ng++;
	}
	*thr = 0;
	if (rt_tuner_kneedle(x, y, ng, RT_KNEE_CONCAVE, RT_KNEE_DECREASING, 1.0, NULL, 0, &nk, &best, NULL) == 0 &&
	    best != SIZE_MAX)
		*thr = c->grid[best];
	else if (ng && y[ng - 1] > 0)
		*thr = c->grid[ng - 1];
	/* N: the knee of rate(log2 N), concave increasing, largest over the series, capped like the tuner */
	*n = 1;
	for (size_t i = 0; i < c->n_rate;) {
		size_t j = i, m = 0;
		uint32_t kn;

		while (j < c->n_rate && c->rate[j].msg_bytes == c->rate[i].msg_bytes &&
		       c->rate[j].inl == c->rate[i].inl) {
			x[m] = log2(c->rate[j].signal_interval);
			y[m] = c->rate[j].mops;
			m++;
			j++;
		}
		best = SIZE_MAX;
		kn = c->rate[j - 1].signal_interval;
		if (m >= 3 &&
		    rt_tuner_kneedle(x, y, m, RT_KNEE_CONCAVE, RT_KNEE_INCREASING, 1.0, NULL, 0, &nk, &best, NULL) ==
			    0 &&
		    best != SIZE_MAX)
			kn = c->rate[i + best].signal_interval;
		*n = kn > *n ? kn : *n;
		i = j;
	}
	if (c->sq_depth && *n > c->sq_depth / 4)
		*n = c->sq_depth / 4;
}

int corpus_run(uint64_t seed0, size_t n, const struct gen_opts *go, const struct rt_tuner_opts *to,
	       struct corpus_score *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		struct gen_case c;
		struct rt_tuner_result res;
		struct timespec t0, t1;
		uint32_t bt, bn;
		int rc = gen_make(seed0 + i, go, &c);

		if (rc)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = rt_tuner_run(&c.in, to, &res, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (rc) {
			gen_free(&c);
			return rc;
		}
		s->tuner_s += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
		s->cases++;
		s->thr_ok += gen_thr_steps(&c, res.d[0].inline_threshold, c.true_threshold) <= 1;
		s->thr_exact += gen_thr_steps(&c, res.d[0].inline_threshold, c.true_threshold) == 0;
		if (c.n_rate) {
			/* the verdict "N does not matter" says the needed N is at most 2 (only signaling every WR is
			   slower) and states an N that gets the best rate: like a knee, it is right within one power of two
			   of the truth (a truth of N <= 4) when the stated N reaches the planted one */
			int n_hit = gen_n_steps(res.d[0].signal_interval, c.true_n) <= 1 ||
				    (c.true_n <= 4 && res.d[0].signal_verdict == RT_SIGNAL_INDIFFERENT &&
				     res.d[0].signal_interval >= c.true_n);

			s->n_ok += n_hit;
			/* GEN_SHOW_MISSES=1: one line per missed N, to see why */
			if (!n_hit && getenv("GEN_SHOW_MISSES"))
				fprintf(stderr,
					"miss seed %llu noise %d: true N %u t_cqe %.1f ns, got %s N %u t_cqe %.1f "
					"[%.1f, %.1f] t_post %.1f\n",
					(unsigned long long)c.seed, (int)c.noise, c.true_n, c.true_t_cqe_ns,
					res.d[0].signal_verdict == RT_SIGNAL_INDIFFERENT ? "indifferent" : "knee",
					res.d[0].signal_interval, res.d[0].t_cqe_ns, res.d[0].t_cqe_lo_ns,
					res.d[0].t_cqe_hi_ns, res.d[0].t_post_ns);
			s->n_exact += res.d[0].signal_interval == c.true_n;
		}
		s->conf[res.d[0].confidence]++;
		gen_baseline(&c, &bt, &bn);
		s->base_thr_ok += gen_thr_steps(&c, bt, c.true_threshold) <= 1;
		if (c.n_rate)
			s->base_n_ok += gen_n_steps(bn, c.true_n) <= 1;
		rt_tuner_result_free(&res);
		gen_free(&c);
	}
	return 0;
}
