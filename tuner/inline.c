// SPDX-License-Identifier: MIT
/*
 * The inline decision of one (opcode, QP type): per measured size, d = non-inline - inline median latency with a
 * bootstrap CI (cross-checked by a Mann-Whitney test on raw samples) and a class; the crossover guard (no significant
 * loss up to it); the threshold maximising the gain, weighted by the app's histogram when there is one; its stability
 * over bootstrap replicates of the whole curve; where that cannot place it (low stability, insufficient data), a
 * physics fit over all sizes instead, d = alpha - beta * ceil(size / 64), whose answer repeats from run to run;
 * Kneedle as evidence; the degenerate cases named. docs/tuner.md.
 */
#include "tuner_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_RAW 8    /* fewer kept samples than this: use the point's median/CI */
#define EXACT_RAW 32 /* fewer than this: resample literally instead of drawing the median's rank */
#define MIN_PAIRS 4  /* fewer paired sizes: too_few_points */

/* One side (inline or not) of a size. */
struct side {
	const struct rt_lat_point *p;
	float *s; /* sorted copy of the raw samples (in the arena), NULL on the summary path */
	size_t n;
	double med_raw;	     /* median of the raw samples */
	double scale;	     /* sqrt(n_kept / n_samples): kept samples may be a subsample */
	double rk;	     /* n / (2 sqrt(n + 2)): the median's rank moves by rk per unit of z */
	double se_lo, se_hi; /* summary path: standard error of the median below / above it */
};

struct pair {
	uint32_t bytes;
	struct side a, b; /* a = non-inline, b = inline */
	double d, f, lo, hi, p, z;
	enum rt_size_class cls;
	uint32_t oa, ka, ob, kb; /* where this size reads the normal pool */
};

/* A histogram bin truncated at the guard, with where its representative size sits on the measured grid. */
struct bin {
	uint32_t lo, hi;
	double count;
	size_t i0, i1; /* interpolate d between pairs i0 and i1 (log2 size) */
	double w;
	ptrdiff_t gidx; /* largest pair index with bytes <= hi, -1 when none */
};

static int valid_point(const struct rt_lat_point *p, const char **why)
{
	if (!isfinite(p->median_ns) || p->median_ns <= 0 || p->median_ns > 1e12)
		return *why = "median not a positive number below 10^12", 0;
	if (p->n_samples == 0)
		return *why = "no samples", 0;
	if (!isfinite(p->ci_lo_ns) || !isfinite(p->ci_hi_ns) || p->ci_hi_ns > 1e12 ||
	    (!(p->ci_lo_ns == 0 && p->ci_hi_ns == 0) && (p->ci_lo_ns > p->median_ns || p->ci_hi_ns < p->median_ns)))
		return *why = "median outside its confidence interval", 0;
	if (p->n_kept && !p->samples_ns)
		return *why = "n_kept without samples", 0;
	for (uint32_t i = 0; i < p->n_kept; i++)
		if (!isfinite(p->samples_ns[i]) || p->samples_ns[i] < 0)
			return *why = "a raw sample is negative or not a number", 0;
	return 1;
}

static int cmp_pt(const void *pa, const void *pb)
{
	const struct rt_lat_point *a = *(const struct rt_lat_point *const *)pa;
	const struct rt_lat_point *b = *(const struct rt_lat_point *const *)pb;

	if (a->msg_bytes != b->msg_bytes)
		return a->msg_bytes < b->msg_bytes ? -1 : 1;
	if (a->inl != b->inl)
		return a->inl ? 1 : -1;
	return (a->n_samples < b->n_samples) - (a->n_samples > b->n_samples); /* most samples first */
}

/* Sets up one side; raw samples are copied to *arena (advanced past them) and sorted. */
static void side_init(struct rt_tctx *t, struct side *s, const struct rt_lat_point *p, float **arena)
{
	s->p = p;
	s->scale = 1;
	if (p->n_kept >= MIN_RAW) {
		s->s = *arena;
		*arena += p->n_kept;
		memcpy(s->s, p->samples_ns, p->n_kept * sizeof(*s->s));
		rt__sort_f(s->s, p->n_kept);
		s->n = p->n_kept;
		s->med_raw = rt__median_sorted(s->s, s->n);
		s->rk = (double)s->n * 0.5 / sqrt((double)s->n + 2);
		if (p->n_samples > p->n_kept)
			s->scale = sqrt((double)p->n_kept / (double)p->n_samples);
		/* the point's own CI carries what the samples cannot show (calibrate widens it by the spread of its
		   block medians: samples taken together are correlated); when it is wider than the samples' iid CI,
		   the bootstrap is widened to match */
		if (s->n >= EXACT_RAW && p->ci_hi_ns > p->ci_lo_ns && p->ci_lo_ns <= p->median_ns &&
		    p->median_ns <= p->ci_hi_ns) {
			double h = t->z_in * sqrt((double)s->n) / 2, lo = floor((double)s->n / 2 - h),
			       hi = ceil((double)s->n / 2 + h);
			size_t ilo = lo < 0 ? 0 : (size_t)lo, ihi = hi >= (double)s->n ? s->n - 1 : (size_t)hi;
			double iid = ((double)s->s[ihi] - (double)s->s[ilo]) / 2 * s->scale;
			double stored = (p->ci_hi_ns - p->ci_lo_ns) / 2;

			if (iid > 0 && stored > iid)
				s->scale *= fmin(stored / iid, 20);
		}
		return;
	}
	if (p->ci_hi_ns > p->ci_lo_ns) {
		s->se_lo = (p->median_ns - p->ci_lo_ns) / t->z_in;
		s->se_hi = (p->ci_hi_ns - p->median_ns) / t->z_in;
	} else if (p->n_samples > 1 && p->p99_ns > p->median_ns) {
		/* no CI: sigma from the p99 as if normal (conservative with heavy tails), se of a median */
		double sigma = (p->p99_ns - p->median_ns) / 2.326;

		s->se_lo = s->se_hi = fmin(1.2533 * sigma / sqrt((double)p->n_samples), p->median_ns);
	} else {
		s->se_lo = s->se_hi = p->median_ns; /* nothing known: as wide as the value itself */
	}
}

/* Deviation of one bootstrap median of side s from its estimate, driven by standard normal z. */
static inline double side_dev(struct rt_tctx *t, const struct side *s, double z)
{
	if (!s->s)
		return z < 0 ? z * s->se_lo : z * s->se_hi;
	if (s->n >= EXACT_RAW) {
		/* the resample's median is sorted[ceil(n V) - 1], V ~ Beta(m, n - m + 1) ~ N(1/2, 1/(4(n+2))) */
		double v = (double)s->n * 0.5 + z * s->rk;
		ptrdiff_t k = (ptrdiff_t)v; /* ceil(v) - 1 without a libm call */
		size_t i;

		k -= (double)k >= v;
		i = k < 0 ? 0 : k >= (ptrdiff_t)s->n ? s->n - 1 : (size_t)k;

		return ((double)s->s[i] - s->med_raw) * s->scale;
	}
	{
		float tmp[EXACT_RAW];

		for (size_t i = 0; i < s->n; i++)
			tmp[i] = s->s[rt_rng_below(&t->rng, (uint32_t)s->n)];
		rt__sort_f(tmp, s->n);
		return (rt__median_sorted(tmp, s->n) - s->med_raw) * s->scale;
	}
}

/* Index of the largest pair with bytes <= v, -1 when none. */
static ptrdiff_t grid_index(const struct pair *pr, size_t np, double v)
{
	size_t lo = 0, hi = np;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((double)pr[mid].bytes <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

static double lg(double v)
{
	return log2(v > 0.5 ? v : 0.5);
}

static void bin_place(struct bin *bn, const struct pair *pr, size_t np)
{
	double rep = ((double)bn->lo + (double)bn->hi) / 2;
	ptrdiff_t j = grid_index(pr, np, rep);

	bn->gidx = grid_index(pr, np, bn->hi);
	if (j < 0) {
		bn->i0 = bn->i1 = 0;
		bn->w = 0;
	} else if ((size_t)j + 1 >= np || (double)pr[j].bytes == rep) {
		bn->i0 = bn->i1 = (size_t)j;
		bn->w = 0;
	} else {
		bn->i0 = (size_t)j;
		bn->i1 = (size_t)j + 1;
		bn->w = (lg(rep) - lg(pr[j].bytes)) / (lg(pr[j + 1].bytes) - lg(pr[j].bytes));
	}
}

static int cmp_bin(const void *pa, const void *pb)
{
	const struct bin *a = pa, *b = pb;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Interpolated value of per-pair quantity v[] at bin bn. */
static inline double at_bin(const struct bin *bn, const double *v)
{
	return v[bn->i0] + bn->w * (v[bn->i1] - v[bn->i0]);
}

/*
 * The threshold rule on one curve (d already zero within the floor): prefix gains over the bins; with keep = 1 the
 * largest bin reaching the best gain (sizes that are indifferent after it do not end the range), else the smallest
 * bin keeping `keep` of the best gain (an app's rare large sizes do not inflate the WQE); 0 when the best gain is not
 * positive. With `harmless` (keep = 1 only) a best gain of 0 also counts: the largest bin before the prefix gain
 * first falls below 0, i.e. the range where inline does not matter, before a loss. Returns the bin index, -1 for
 * "never".
 */
static ptrdiff_t pick_bin(const struct bin *bins, size_t nb, const double *dv, double keep, int harmless)
{
	double g = 0, best = 0;
	ptrdiff_t k = -1;

	harmless = harmless && keep >= 1;
	for (size_t i = 0; i < nb; i++) {
		g += bins[i].count * at_bin(&bins[i], dv);
		if ((g > 0 || (harmless && g == 0)) && g >= best) {
			best = g;
			k = (ptrdiff_t)i;
		}
	}
	if (harmless && k >= 0)
		return k;
	if (!(best > 0))
		return -1;
	if (keep >= 1)
		return k;
	k = -1;
	g = 0;
	for (size_t i = 0; i < nb; i++) {
		g += bins[i].count * at_bin(&bins[i], dv);
		if (g >= keep * best) {
			k = (ptrdiff_t)i;
			break;
		}
	}
	return k;
}

static const char *kind_label(enum rt_lat_kind k)
{
	return k == RT_LAT_PINGPONG ? "ping-pong half round trip" : "post-to-completion";
}

/* Extra measuring time (s, assuming ns input) for the sizes in need so their CI half-width reaches f/2. */
static double budget_for(const struct pair *pr, size_t np, const unsigned char *need, enum rt_lat_kind kind,
			 double *max_factor)
{
	double s = 0;

	*max_factor = 1;
	for (size_t i = 0; i < np; i++) {
		double hw, target, factor;

		if (!need[i])
			continue;
		hw = (pr[i].hi - pr[i].lo) / 2;
		target = pr[i].f / 2;
		if (!(hw > target))
			continue;
		factor = (hw / target) * (hw / target);
		if (factor > 1e6)
			factor = 1e6;
		if (factor > *max_factor)
			*max_factor = factor;
		for (int side = 0; side < 2; side++) {
			const struct rt_lat_point *p = side ? pr[i].b.p : pr[i].a.p;
			double per = kind == RT_LAT_PINGPONG ? 2 * p->median_ns : p->median_ns;

			s += (factor - 1) * (double)p->n_samples * per * 1e-9;
		}
	}
	return s;
}

/* State of one inline analysis, shared by its steps. */
struct ia {
	struct rt_tctx *t;
	const struct rt_tuner_opts *o;
	const struct rt_tuner_input *in;
	const struct rt_tuner_app *app;
	struct rt_tuner_decision *d;
	struct rt_reasons *r;
	size_t B;	  /* bootstrap replicates */
	size_t n_invalid; /* points dropped */
	const char *why;  /* why the last one was dropped */
	struct pair *pr;  /* the paired sizes, ascending */
	size_t np;
	float *arena;	      /* sorted copies of every kept raw sample */
	float *mat;	      /* np x B bootstrap replicates of d, one row per size */
	float *raw;	      /* the same before differences within the floor are zeroed (the physics fit's draws) */
	ptrdiff_t *firstwin;  /* per replicate: first size whose d beats the floor */
	double *dv;	      /* d per size */
	ptrdiff_t first_loss; /* first size classed loss, -1 when none */
	ptrdiff_t guard;      /* crossover: last size before the first loss, -1 when the first is one */
	uint32_t guard_bytes;
	int rank_disagree; /* sizes where the rank test vetoed the bootstrap */
	char rdis[96];	   /* the first few of them */
	struct bin *bins;  /* the weights: the app's histogram, else one per measured size */
	size_t nb;
	int hist;
	double hist_total;
	ptrdiff_t tbin; /* bin chosen, -1 for never */
	ptrdiff_t tg;	/* grid index of the threshold, -1 for never */
	uint32_t T;	/* the threshold */
	double stable;	/* bootstrap stability of T */
	int harmless; /* no size up to T gains beyond the floor, but a loss follows: T is where inline does not matter */
	double *fit;  /* the antitonic fit of d over log2 size (evidence()), np values */
	int fallback;	     /* insufficient data: T is the fit's crossing, not a decision the data settle */
	int physics;	     /* the per-size data cannot place T: T is the physics fit's (physics_threshold()) */
	uint32_t edge_bytes; /* unplaced() 2: the inconclusive size the per-size rule's range ended at or before */
	double fit_agrees; /* unplaced() 2, the physics fit's T the rule's: its share of bootstrap fits within a chunk */
	int multiknee, nonmono, implaus, insufficient; /* nonmono: 1 = a win after a loss, 2 = d rises */
	uint32_t nonmono_rise_bytes;		       /* the first size where d rose beyond its noise */
	uint32_t nonmono_rise_last_bytes;	       /* the last one */
};

/* Valid points of the group, the latency kind to use, and one (non-inline, inline) pair per size. */
static int select_pairs(struct ia *a, const struct rt_lat_point *const *pts, size_t n)
{
	const struct rt_lat_point **v = malloc((n ? n : 1) * sizeof(*v));
	size_t nv = 0, per_kind[RT_LAT__COUNT] = { 0 };
	int kind;

	if (!v)
		return ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (valid_point(pts[i], &a->why))
			v[nv++] = pts[i];
		else
			a->n_invalid++;
	}
	qsort(v, nv, sizeof(*v), cmp_pt);
	for (int k = 0; k < RT_LAT__COUNT; k++)
		for (size_t i = 0; i + 1 < nv; i++)
			if (v[i]->kind == (enum rt_lat_kind)k && !v[i]->inl)
				for (size_t j = i + 1; j < nv && v[j]->msg_bytes == v[i]->msg_bytes; j++)
					if (v[j]->kind == (enum rt_lat_kind)k && v[j]->inl) {
						per_kind[k]++;
						break;
					}
	/* one kind, the same every run: post -> completion when it has enough sizes (it times only this side's post,
	   the one IBV_SEND_INLINE changes; a ping-pong adds the responder's jitter), else ping-pong. Choosing by which
	   kind calibrate happened to refine more made the answer flip between runs (x64_n8 on rxe: 64 B high in one
	   run, 0 low in the next, from noisier ping-pong data) */
	kind = a->o->kind >= 0				? a->o->kind
	       : per_kind[RT_LAT_POST_CQE] >= MIN_PAIRS ? RT_LAT_POST_CQE
	       : per_kind[RT_LAT_PINGPONG] >= MIN_PAIRS ? RT_LAT_PINGPONG
							: per_kind[RT_LAT_POST_CQE] > per_kind[RT_LAT_PINGPONG];
	a->d->kind = (enum rt_lat_kind)kind;
	a->pr = calloc(per_kind[kind] ? per_kind[kind] : 1, sizeof(*a->pr));
	if (!a->pr) {
		free(v);
		return ENOMEM;
	}
	for (size_t i = 0; i < nv;) {
		const struct rt_lat_point *pa = NULL, *pb = NULL;
		uint32_t bytes = v[i]->msg_bytes;

		/* sorted by size, non-inline first, most samples first: the first of each is the one to use */
		for (; i < nv && v[i]->msg_bytes == bytes; i++) {
			if ((int)v[i]->kind != kind)
				continue;
			if (!v[i]->inl && !pa)
				pa = v[i];
			if (v[i]->inl && !pb)
				pb = v[i];
		}
		if (pa && pb) {
			a->pr[a->np].bytes = bytes;
			a->pr[a->np].a.p = pa;
			a->pr[a->np].b.p = pb;
			a->np++;
		}
	}
	free(v);
	return 0;
}

/* Fills one size's bootstrap row; on the summary path also sets its normal-bootstrap interval. */
static void draw_row(struct rt_tctx *t, struct pair *q, float *row, size_t B)
{
	if (!q->a.s && !q->b.s) {
		/* both from median/CI: split-normal draws, branch-free (the signs are coin flips) */
		float alo = (float)q->a.se_lo, ahi = (float)q->a.se_hi, blo = (float)q->b.se_lo,
		      bhi = (float)q->b.se_hi;
		float dd = (float)q->d, s2lo = 0, s2hi = 0;
		size_t nlo = 0;

		for (size_t b = 0; b < B; b++) {
			float za = t->pool[(q->oa + (uint32_t)b * q->ka) & (RT_POOL_SIZE - 1)];
			float zb = t->pool[(q->ob + (uint32_t)b * q->kb) & (RT_POOL_SIZE - 1)];
			float e = za * (za > 0 ? ahi : alo) - zb * (zb > 0 ? bhi : blo);
			int neg = e < 0;

			row[b] = dd + e;
			s2lo += e * e * (float)neg;
			s2hi += e * e;
			nlo += (size_t)neg;
		}
		s2hi = s2hi > s2lo ? s2hi - s2lo : 0;
		/* the draws are a smooth parametric distribution: normal interval, one semi-deviation per side */
		q->lo = q->d - t->z_ci * (nlo ? sqrt(s2lo / (double)nlo) : 0);
		q->hi = q->d + t->z_ci * (nlo < B ? sqrt(s2hi / (double)(B - nlo)) : 0);
		return;
	}
	for (size_t b = 0; b < B; b++) {
		double za = t->pool[(q->oa + (uint32_t)b * q->ka) & (RT_POOL_SIZE - 1)];
		double zb = t->pool[(q->ob + (uint32_t)b * q->kb) & (RT_POOL_SIZE - 1)];

		row[b] = (float)(q->d + side_dev(t, &q->a, za) - side_dev(t, &q->b, zb));
	}
}

/* Per size: d, noise floor, bootstrap CI, rank test, class; the bootstrap matrix; the first loss. */
static int eval_sizes(struct ia *a)
{
	const struct rt_tuner_opts *o = a->o;
	size_t B = a->B, np = a->np, kept = 0, fw_left = B;
	double alpha = 1 - o->ci_level;
	size_t klo = (size_t)floor(alpha / 2 * (double)B), khi = (size_t)ceil((1 - alpha / 2) * (double)B) - 1;
	float *tmp, *cursor;

	if (B > SIZE_MAX / sizeof(float) / np)
		return ENOMEM;
	for (size_t i = 0; i < np; i++)
		kept += (a->pr[i].a.p->n_kept >= MIN_RAW ? a->pr[i].a.p->n_kept : 0) +
			(a->pr[i].b.p->n_kept >= MIN_RAW ? a->pr[i].b.p->n_kept : 0);
	a->mat = malloc(np * B * sizeof(*a->mat));
	a->raw = malloc(np * B * sizeof(*a->raw));
	a->arena = malloc((kept ? kept : 1) * sizeof(*a->arena));
	a->firstwin = malloc(B * sizeof(*a->firstwin));
	a->dv = malloc(np * sizeof(*a->dv));
	tmp = malloc(B * sizeof(*tmp));
	if (!a->mat || !a->raw || !a->arena || !a->firstwin || !a->dv || !tmp) {
		free(tmp);
		return ENOMEM;
	}
	cursor = a->arena;
	for (size_t b = 0; b < B; b++)
		a->firstwin[b] = PTRDIFF_MAX;
	a->first_loss = -1;
	for (size_t i = 0; i < np; i++) {
		struct pair *q = &a->pr[i];
		float *row = a->mat + i * B, flo, fhi;
		int win_ci, loss_ci;

		side_init(a->t, &q->a, q->a.p, &cursor);
		side_init(a->t, &q->b, q->b.p, &cursor);
		q->d = q->a.p->median_ns - q->b.p->median_ns;
		q->f = fmax(o->floor_rel * q->a.p->median_ns, o->floor_abs_ns);
		q->oa = (uint32_t)rt_rng_next(&a->t->rng);
		q->ka = (uint32_t)rt_rng_next(&a->t->rng) | 1u;
		q->ob = (uint32_t)rt_rng_next(&a->t->rng);
		q->kb = (uint32_t)rt_rng_next(&a->t->rng) | 1u;
		draw_row(a->t, q, row, B);
		for (size_t b = 0; b < B && fw_left; b++)
			if (a->firstwin[b] == PTRDIFF_MAX && row[b] > q->f) {
				a->firstwin[b] = (ptrdiff_t)i;
				fw_left--;
			}
		if (q->a.s || q->b.s) {
			/* percentile interval of the bootstrap medians */
			memcpy(tmp, row, B * sizeof(*tmp));
			rt__tails_f(tmp, B, klo, khi, &flo, &fhi);
			q->lo = fmin(flo, q->d);
			q->hi = fmax(fhi, q->d);
		}
		q->p = NAN;
		q->z = 0;
		if (q->a.s && q->b.s)
			q->p = rt_tuner_mann_whitney(q->a.s, q->a.n, q->b.s, q->b.n, &q->z);
		win_ci = q->lo > 0 && q->d > q->f;
		loss_ci = q->hi < 0 && q->d < -q->f;
		if (!isnan(q->p) && (win_ci || loss_ci) && !(q->p < alpha && (win_ci ? q->z > 0 : q->z < 0))) {
			if (a->rank_disagree++ < 4) {
				size_t l = strlen(a->rdis);

				snprintf(a->rdis + l, sizeof(a->rdis) - l, "%s%u B", l ? ", " : "", q->bytes);
			}
			win_ci = loss_ci = 0;
		}
		q->cls = win_ci				   ? RT_SIZE_WIN
			 : loss_ci			   ? RT_SIZE_LOSS
			 : q->lo >= -q->f && q->hi <= q->f ? RT_SIZE_INDIFFERENT
			 : q->lo >= -q->f		   ? RT_SIZE_NOT_WORSE
							   : RT_SIZE_INCONCLUSIVE;
		if (q->cls == RT_SIZE_LOSS && a->first_loss < 0)
			a->first_loss = (ptrdiff_t)i;
		/* a difference within the practical floor is no gain and no loss: it neither ends the inline range
		   nor moves the threshold, in the estimate as in every replicate */
		a->dv[i] = fabs(q->d) <= q->f ? 0 : q->d;
		memcpy(a->raw + i * B, row, B * sizeof(*row));
		for (size_t b = 0; b < B; b++)
			if (fabsf(row[b]) <= (float)q->f)
				row[b] = 0;
	}
	free(tmp);
	a->guard = a->first_loss < 0 ? (ptrdiff_t)np - 1 : a->first_loss - 1;
	a->guard_bytes = a->guard >= 0 ? a->pr[a->guard].bytes : 0;
	return 0;
}

/* The weights: the app's histogram clipped at the guard when it has messages, else one per measured size. */
static int make_bins(struct ia *a)
{
	const struct rt_tuner_app *app = a->app;

	for (size_t i = 0; i < app->n_bins; i++)
		a->hist_total += (double)app->bins[i].count;
	a->hist = app->bins && a->hist_total > 0;
	a->bins = calloc(a->hist ? app->n_bins : a->np, sizeof(*a->bins));
	if (!a->bins)
		return ENOMEM;
	if (a->hist) {
		for (size_t i = 0; i < app->n_bins; i++) {
			const struct rt_tuner_hist_bin *h = &app->bins[i];
			struct bin *bn = &a->bins[a->nb];

			if (!h->count || h->hi == 0 || h->lo > a->guard_bytes)
				continue; /* nothing to inline in empty messages */
			bn->lo = h->lo ? h->lo : 1;
			bn->hi = h->hi;
			bn->count = (double)h->count * (h->lo ? 1.0 : (double)h->hi / ((double)h->hi + 1));
			if (bn->hi > a->guard_bytes) {
				bn->count *= ((double)a->guard_bytes - bn->lo + 1) / ((double)h->hi - bn->lo + 1);
				bn->hi = a->guard_bytes;
			}
			a->nb++;
		}
		qsort(a->bins, a->nb, sizeof(*a->bins), cmp_bin);
	} else {
		for (ptrdiff_t i = 0; i <= a->guard; i++) {
			a->bins[a->nb].lo = a->bins[a->nb].hi = a->pr[i].bytes;
			a->bins[a->nb].count = 1;
			a->nb++;
		}
	}
	for (size_t i = 0; i < a->nb; i++)
		bin_place(&a->bins[i], a->pr, a->np);
	return 0;
}

/*
 * Whether the "harmless range" rule applies: no app histogram, a significant loss at some size (a crossover) and no
 * size before it a significant win (harmless_shown() then asks the range to be not worse as a whole). Then inline does not matter below the
 * loss and the threshold is that range, not "never": a gain about as large as the floor (2 us on a 178 us UD
 * round trip against a 1.8 us floor) clears it in one run and not the next, and the answer must not flip between 0
 * and the crossover with it.
 */
static int harmless_mode(const struct ia *a)
{
	if (a->hist || a->first_loss < 0)
		return 0;
	for (ptrdiff_t i = 0; i < a->first_loss; i++)
		if (a->pr[i].cls == RT_SIZE_WIN)
			return 0;
	return 1;
}

/*
 * Whether the sizes up to the harmless threshold are shown not worse together: their mean d's lower confidence bound
 * (each size's CI as its standard error) above minus the mean floor. One inconclusive size alone (a 1 B outlier
 * before losses from 2 B) is no range where inline does not matter.
 */
static int harmless_shown(const struct ia *a)
{
	double sum_d = 0, sum_var = 0, sum_f = 0;
	size_t n = 0;

	for (ptrdiff_t i = 0; i <= a->tg && (size_t)i < a->np; i++, n++) {
		const struct pair *q = &a->pr[i];
		double se = (q->hi - q->lo) / (2 * a->t->z_ci);

		sum_d += q->d;
		sum_var += se * se;
		sum_f += q->f;
	}
	return n && (sum_d - a->t->z_ci * sqrt(sum_var)) / (double)n > -sum_f / (double)n;
}

/* The threshold: the best (weighted) gain under the guard, 0 without a win up to it (unless the harmless range
   applies), within the device limit. */
static void choose_threshold(struct ia *a)
{
	int dev_max = a->in->limits.max_inline[a->d->qpt];

	a->harmless = harmless_mode(a);
	a->tbin = pick_bin(a->bins, a->nb, a->dv, a->hist ? a->o->hist_gain_keep : 1.0, a->harmless);
	a->T = a->tbin < 0 ? 0 : a->bins[a->tbin].hi;
	a->tg = grid_index(a->pr, a->np, a->T);
	if (a->harmless && a->T && !harmless_shown(a))
		a->T = 0, a->tbin = -1, a->tg = -1;
	if (!a->T)
		a->harmless = 0;
	if (a->T && !a->harmless) {
		int win = 0;

		for (ptrdiff_t i = 0; i <= (a->tg < 0 ? 0 : a->tg); i++)
			win |= a->pr[i].cls == RT_SIZE_WIN;
		if (!win) {
			a->T = 0;
			a->tbin = -1;
			a->tg = -1;
		}
	}
	if (dev_max >= 0 && a->T > (uint32_t)dev_max) {
		a->T = (uint32_t)dev_max;
		a->tg = grid_index(a->pr, a->np, a->T);
	}
}

/* Share of bootstrap replicates of the whole curve whose threshold (same rule) is within one size step of T. */
static int stability(struct ia *a)
{
	size_t B = a->B, ok = 0;
	double keep = a->hist ? a->o->hist_gain_keep : 1.0;
	double *pref = calloc(B, sizeof(*pref)), *best = calloc(B, sizeof(*best));
	ptrdiff_t *bsel = malloc(B * sizeof(*bsel));

	if (!pref || !best || !bsel) {
		free(pref);
		free(best);
		free(bsel);
		return ENOMEM;
	}
	for (size_t b = 0; b < B; b++)
		bsel[b] = -1;
	/* keep == 1: the first bin reaching the best gain, in one pass; else a second pass finds the first bin
	   reaching keep * best */
	for (int pass = 0; pass < (keep < 1 ? 2 : 1); pass++) {
		memset(pref, 0, B * sizeof(*pref));
		for (size_t k = 0; k < a->nb; k++) {
			const struct bin *bn = &a->bins[k];
			const float *r0 = a->mat + bn->i0 * B, *r1 = a->mat + bn->i1 * B;
			double c = bn->count, w = bn->w;

			if (w == 0)
				for (size_t b = 0; b < B; b++)
					pref[b] += c * r0[b];
			else
				for (size_t b = 0; b < B; b++)
					pref[b] += c * ((double)r0[b] + w * ((double)r1[b] - (double)r0[b]));
			if (keep < 1 && pass) {
				for (size_t b = 0; b < B; b++)
					if (bsel[b] < 0 && best[b] > 0 && pref[b] >= keep * best[b])
						bsel[b] = (ptrdiff_t)k;
			} else {
				for (size_t b = 0; b < B; b++)
					if ((pref[b] > 0 || (a->harmless && pref[b] == 0)) && pref[b] >= best[b]) {
						best[b] = pref[b];
						if (keep >= 1)
							bsel[b] = (ptrdiff_t)k;
					}
			}
		}
	}
	for (size_t b = 0; b < B; b++) {
		ptrdiff_t g = bsel[b] < 0 ? -1 : a->bins[bsel[b]].gidx;

		if (bsel[b] >= 0 && !a->harmless && a->firstwin[b] > (g < 0 ? 0 : g))
			g = -1; /* no size up to it beats the floor in this replicate: never */
		ok += (g > a->tg ? g - a->tg : a->tg - g) <= 1;
	}
	a->stable = (double)ok / (double)B;
	free(pref);
	free(best);
	free(bsel);
	return 0;
}

/* Evidence: Kneedle on the antitonic fit of d over log2 size; non-monotone curves; implausible gains. */
static int evidence(struct ia *a)
{
	size_t np = a->np, kb;
	double *xs = malloc(np * sizeof(*xs)), *wv = malloc(np * sizeof(*wv)), *fit = malloc(np * sizeof(*fit));
	float *sc = malloc(2 * np * sizeof(*sc));
	double theta, min_hi = INFINITY;
	int rc = ENOMEM, nsig = 0;

	a->fit = calloc(np, sizeof(*a->fit));
	if (!xs || !wv || !fit || !sc || !a->fit)
		goto out;
	for (size_t i = 0; i < np; i++) {
		const struct pair *q = &a->pr[i];
		double se = (q->hi - q->lo) / (2 * a->t->z_ci);

		xs[i] = lg(q->bytes);
		wv[i] = 1 / fmax(se * se, 1e-12 * q->a.p->median_ns * q->a.p->median_ns + 1e-300);
		sc[i] = (float)q->f;
		sc[np + i] = (float)((q->hi - q->lo) / 2);
	}
	if ((rc = rt_tuner_isotonic(a->dv, wv, np, false, fit)))
		goto out;
	memcpy(a->fit, fit, np * sizeof(*fit));
	/* a knee must be worth more than the noise: the median floor or the median CI half-width */
	theta = fmax(rt__select_f(sc, np, np / 2), rt__select_f(sc + np, np, np / 2));
	kb = rt__knee_evidence(xs, fit, np, RT_KNEE_DECREASING, theta, &nsig);
	if (kb != SIZE_MAX)
		a->d->kneedle_bytes = a->pr[kb].bytes;
	a->multiknee = nsig > 1;
	/* non-monotone: a win after a loss, or d rising by more than its CIs and floor */
	for (size_t i = 0; i < np; i++) {
		const struct pair *q = &a->pr[i];

		if (a->first_loss >= 0 && (ptrdiff_t)i > a->first_loss && q->cls == RT_SIZE_WIN)
			a->nonmono |= 1;
		if (q->lo > min_hi) {
			if (!(a->nonmono & 2))
				a->nonmono_rise_bytes = q->bytes; /* the first size where d rose */
			a->nonmono_rise_last_bytes = q->bytes;
			a->nonmono |= 2;
		}
		min_hi = fmin(min_hi, q->hi + q->f);
	}
	if (a->in->limits.hardware) {
		for (size_t i = 0; i < np; i++)
			a->implaus |= a->pr[i].d > a->o->implausible_gain_ns;
	}
	rc = 0;
out:
	free(xs);
	free(wv);
	free(fit);
	free(sc);
	return rc;
}

/* Expected gain: for the app's histogram when there is one, else over the measured sizes <= T. */
static int expected_gain(struct ia *a)
{
	struct rt_tuner_decision *d = a->d;
	const struct pair *pr = a->pr;
	double g = 0, base = 0, inl_n = 0, *bmed;

	if (!a->hist) {
		double pct = 0;
		size_t k = 0;

		if (!a->T)
			return 0;
		for (ptrdiff_t i = 0; i <= a->tg; i++, k++) {
			g += pr[i].d;
			pct += 100 * pr[i].d / pr[i].a.p->median_ns;
		}
		d->gain_ns_per_msg = k ? g / (double)k : 0;
		d->gain_pct = k ? pct / (double)k : 0;
		rt__reason(
			a->r, RT_R_EXPECTED_GAIN, RT_TOPIC_INLINE, RT_SEV_INFO,
			"no app histogram: threshold at the largest size reaching the largest cumulative gain (sizes "
			"within the noise floor count as indifferent); messages <= %u B gain %.1f ns on average (%.2f%%) "
			"over the measured sizes",
			a->T, d->gain_ns_per_msg, d->gain_pct);
		return 0;
	}
	if (!a->np) /* bin_place() and at_bin() index pr[0] and bmed[0]: no pairs, no weighting (analyse returned) */
		return 0;
	bmed = malloc(a->np * sizeof(*bmed));
	if (!bmed)
		return ENOMEM;
	for (size_t i = 0; i < a->np; i++)
		bmed[i] = pr[i].a.p->median_ns;
	for (ptrdiff_t k = 0; k <= a->tbin; k++) {
		g += a->bins[k].count * at_bin(&a->bins[k], a->dv);
		inl_n += a->bins[k].count;
	}
	for (size_t i = 0; i < a->app->n_bins; i++) {
		struct bin bn = { .lo = a->app->bins[i].lo, .hi = a->app->bins[i].hi };

		bin_place(&bn, pr, a->np);
		base += (double)a->app->bins[i].count * at_bin(&bn, bmed);
	}
	free(bmed);
	d->gain_from_histogram = true;
	d->gain_ns_per_msg = a->T ? g / a->hist_total : 0;
	d->gain_pct = a->T && base > 0 ? 100 * g / base : 0;
	d->hist_share_inlined = a->T ? inl_n / a->hist_total : 0;
	if (a->T)
		rt__reason(a->r, RT_R_HISTOGRAM_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
			   "threshold %u B maximises the app-histogram-weighted gain within the crossover (%u B), "
			   "keeping %.0f%% of the best gain: %.1f%% of the app's %.0f messages are inlined",
			   a->T, a->guard_bytes, a->o->hist_gain_keep * 100, 100 * d->hist_share_inlined,
			   a->hist_total);
	rt__reason(a->r, RT_R_EXPECTED_GAIN, RT_TOPIC_INLINE, RT_SEV_INFO,
		   "expected gain for the app's histogram: %.1f ns per message (%.2f%% of its non-inline latency)",
		   d->gain_ns_per_msg, d->gain_pct);
	return 0;
}

/* The Student t quantile with nu degrees of freedom matching the standard normal quantile z (Cornish-Fisher). */
static double t_quantile(double z, double nu)
{
	double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;

	if (!(nu >= 1))
		return z;
	return z + (z3 + z) / (4 * nu) + (5 * z5 + 16 * z3 + 3 * z) / (96 * nu * nu) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * nu * nu * nu);
}

/* What the physics fit found, for its reason. */
struct physics {
	struct rt__inline_fit f;
	double infl;		   /* the reduced chi2 (at least 1e-3): the weights' scale, from the residuals */
	double f_ns;		   /* the median floor over the sizes: a loss within it is no loss */
	double cross_bytes;	   /* alpha / beta in bytes, where the fitted d crosses 0 (INFINITY: beta <= 0) */
	double cross_lo, cross_hi; /* its bootstrap percentile interval */
	size_t n_loss, n_clear;	   /* sizes where the fit shows a loss beyond the floor; sizes within it, CI and all */
	double stable;		   /* share of bootstrap fits within one chunk of T */
};

#define Z_LINE_REJECT 3.09 /* the line is rejected at the 0.1 % level (normal quantile of 0.999) */

/*
 * The threshold when the per-size data cannot place it (bootstrap stability below 60 %, or no win with half the sizes
 * inconclusive): a physics fit over all sizes instead of a per-point crossing, which jumped between 2 and 64 B from
 * run to run on the same node. d(size) = alpha - beta * ceil(size / 64): a non-inline send pays a DMA read of the
 * payload (alpha, about fixed), an inline one copies the payload into the WQE in 64 B chunks (beta each). Weighted by
 * each size's variance (its bootstrap CI), the covariance scaled by the reduced chi2 either way (weighted least
 * squares with an unknown scale: the emulated NIC's per-size CIs were 2-3 times wider than the sizes' scatter about
 * the line, chi2/dof 0.1..0.6) and the CI taken with Student's t for its degrees of freedom. Where the line shows inline to
 * lose (its fitted d below minus the floor by its whole CI at some size), T is the last whole chunk before alpha /
 * beta; where it shows a loss at no size, inline helps or does not matter: T is the largest size measured (capped by
 * the device), every run (a gate on a shown gain instead flipped a 2-4 % gain between 0 and 512 B from run to run).
 * The stability is the share of fits to the bootstrap replicates (deviations widened by the same chi2) giving T
 * within one chunk. keep_T (UINT32_MAX: none) is the per-size rule's answer when only its boundary rested on an
 * inconclusive size (unplaced() 2): that answer and its confidence stand when the fit agrees with it
 * (a->fit_agrees then holds the share of its bootstrap fits within one chunk of it, which explain_threshold()
 * reads), when a straight
 * line in chunks does not describe the sizes (its chi2 beyond the 99.9th percentile for its degrees of freedom: the
 * curve is not this physics) or when the fit's T would reach a size the per-size data show to lose. Returns 0 (not
 * applicable: an app histogram, too few sizes, one chunk count; or keep_T stands), 1 when it set T, or ENOMEM.
 */
static int physics_threshold(struct ia *a, struct physics *ph, uint32_t keep_T)
{
	const struct pair *pr = a->pr;
	size_t np = a->np, B = a->B, agree = 0, nc = 0;
	int dev_max = a->in->limits.max_inline[a->d->qpt];
	uint32_t maxb = pr[np - 1].bytes, T;
	double z = a->t->z_ci, *c, *y, *w, *yb, *fl, sq, se1;
	float *cs, lo, hi;
	int rc = 1;

	if (a->hist || np < MIN_PAIRS || rt__inline_chunks(pr[0].bytes) == rt__inline_chunks(pr[np - 1].bytes))
		return 0;
	if (dev_max >= 0 && maxb > (uint32_t)dev_max)
		maxb = (uint32_t)dev_max;
	c = malloc(5 * np * sizeof(*c));
	cs = malloc((B > np ? B : np) * sizeof(*cs));
	if (!c || !cs) {
		free(c);
		free(cs);
		return ENOMEM;
	}
	for (size_t i = 0; i < np; i++)
		cs[i] = (float)pr[i].f;
	ph->f_ns = rt__select_f(cs, np, np / 2);
	y = c + np;
	w = y + np;
	yb = w + np;
	fl = yb + np;
	for (size_t i = 0; i < np; i++) {
		double se = (pr[i].hi - pr[i].lo) / (2 * z);

		/* a CI of 0 would make one size the whole fit: no size weighs more than a tenth of its floor allows */
		se = fmax(se, fmax(pr[i].f / 10, 1e-9 * pr[i].a.p->median_ns));
		c[i] = rt__inline_chunks(pr[i].bytes);
		y[i] = pr[i].d;
		w[i] = 1 / (se * se);
		fl[i] = pr[i].f;
	}
	if (rt__inline_fit_line(c, y, w, np, &ph->f)) {
		rc = 0;
		goto out;
	}
	ph->infl = np > 2 ? fmax(ph->f.chi2 / (double)(np - 2), 1e-3) : 1;
	z = t_quantile(z, (double)(np - 2));
	ph->cross_bytes = ph->f.beta_ns > 0 ? ph->f.alpha_ns / ph->f.beta_ns * RT__WQE_CHUNK : INFINITY;
	ph->n_loss = rt__inline_fit_losses(&ph->f, c, fl, np, ph->infl, z, &ph->n_clear);
	se1 = sqrt(fmax(ph->infl * (ph->f.v_aa + ph->f.v_bb - 2 * ph->f.v_ab), 0));
	T = ph->n_loss ? rt__inline_fit_threshold(ph->f.alpha_ns, ph->f.beta_ns, ph->f_ns, se1, z, maxb) : maxb;
	if (keep_T != UINT32_MAX && (ph->f.chi2 > rt__chi2_quantile(Z_LINE_REJECT, (double)(np - 2)) ||
				     (a->first_loss >= 0 && T > a->guard_bytes))) {
		rc = 0; /* the per-size rule's answer and confidence stand */
		goto out;
	}
	sq = sqrt(ph->infl);
	for (size_t b = 0; b < B; b++) {
		struct rt__inline_fit fb;
		size_t clear;
		uint32_t tb;

		for (size_t i = 0; i < np; i++)
			yb[i] = y[i] + sq * ((double)a->raw[i * B + b] - y[i]);
		if (rt__inline_fit_line(c, yb, w, np, &fb))
			continue;
		tb = rt__inline_fit_losses(&fb, c, fl, np, ph->infl, z, &clear)
			     ? rt__inline_fit_threshold(fb.alpha_ns, fb.beta_ns, ph->f_ns, se1, z, maxb)
			     : maxb;
		agree += fabs((double)tb - (double)T) <= RT__WQE_CHUNK;
		cs[nc++] = fb.beta_ns > 0 ? (float)fmin(fb.alpha_ns / fb.beta_ns * RT__WQE_CHUNK, 1e9) : 1e9f;
	}
	ph->stable = B ? (double)agree / (double)B : 0;
	if (keep_T != UINT32_MAX && T == keep_T) {
		/* the fit agrees: the rule's answer stands, and how firmly the fit places it says whether the
		   inconclusive size at its edge may lower its confidence */
		a->fit_agrees = ph->stable;
		rc = 0;
		goto out;
	}
	ph->cross_lo = ph->cross_hi = ph->cross_bytes;
	if (nc) {
		double alpha = 1 - a->o->ci_level;
		size_t klo = (size_t)floor(alpha / 2 * (double)nc),
		       khi = (size_t)ceil((1 - alpha / 2) * (double)nc) - 1;

		rt__tails_f(cs, nc, klo, khi, &lo, &hi);
		ph->cross_lo = lo;
		ph->cross_hi = hi >= 1e9f ? INFINITY : hi;
	}
	a->physics = 1;
	a->harmless = 0;
	a->fallback = 0;
	a->insufficient = 1;
	a->T = T;
	a->tg = T ? grid_index(pr, np, T) : -1;
	a->d->inline_threshold = T;
	a->d->max_inline_data = T;
	a->d->inline_stability = ph->stable;
out:
	free(c);
	free(cs);
	return rc;
}

/* The reason for a threshold the physics fit gave (physics_threshold()). */
static void explain_physics(struct ia *a, const struct physics *ph)
{
	const struct rt__inline_fit *f = &ph->f;
	const char beta_sign = f->beta_ns < 0 ? '+' : '-'; /* d = alpha - beta * chunks, one sign per term */
	char cross[96];

	if (!isfinite(ph->cross_bytes))
		snprintf(cross, sizeof(cross), "does not fall with size");
	else if (isfinite(ph->cross_hi))
		snprintf(cross, sizeof(cross), "crosses 0 at %.0f B (%.0f%% CI %.0f..%.0f B)", fmax(ph->cross_bytes, 0),
			 a->o->ci_level * 100, fmax(ph->cross_lo, 0), fmax(ph->cross_hi, 0));
	else
		snprintf(cross, sizeof(cross), "crosses 0 at %.0f B (%.0f%% CI %.0f B..never)",
			 fmax(ph->cross_bytes, 0), a->o->ci_level * 100, fmax(ph->cross_lo, 0));
	if (!ph->n_loss)
		rt__reason(
			a->r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
			"threshold %u B, the largest size measured: the physics fit over all %zu sizes, d = %.0f ns %c "
			"%.0f ns per 64 B chunk (chi2/dof %.1f), shows inline to lose beyond the noise floor (%.0f ns) at "
			"no size (%s), so inline %s here; %.0f%% of bootstrap fits agree",
			a->T, a->np, f->alpha_ns, beta_sign, fabs(f->beta_ns), ph->infl, ph->f_ns,
			ph->n_clear == a->np ? "it lies within the floor, CI and all, at every size"
					     : "its CI reaches above the floor at every size",
			ph->n_clear == a->np ? "does not matter" : "helps or does not matter", 100 * ph->stable);
	else
		rt__reason(
			a->r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
			"threshold %u B from the physics fit over all %zu sizes (the per-size data cannot place "
			"it): d = %.0f ns (the DMA read inline avoids) %c %.0f ns (se %.0f) per 64 B WQE chunk inline "
			"copies, weighted by each size's CI, chi2/dof %.1f; it %s, %s; %.0f%% of bootstrap fits "
			"within 64 B of it",
			a->T, a->np, f->alpha_ns, beta_sign, fabs(f->beta_ns), sqrt(ph->infl * f->v_bb), ph->infl,
			cross,
			a->T == 0 ? "inline loses at one chunk already (beyond the floor or the fit's CI)"
				  : "the threshold is the last whole chunk before it",
			100 * ph->stable);
}

/*
 * Whether the per-size data cannot place the threshold: 1 when its bootstrap stability gives low confidence (below
 * 60 %), or no size up to the guard wins and half the sizes are inconclusive (explain_threshold()'s insufficient
 * data); 2 when the rule's boundary rests on noise: the size at T, or the next size the device could inline, is
 * inconclusive (the noise decides whether the range ends there, one size lower or one higher: x256_n16's send/rc
 * answered 128 B in 2 of 9 runs of the emulated NIC and 256 B in the others, x128_flat's send/ud 64, 128 and 256 B).
 * Without an application histogram only: with one, T follows the application's sizes. 0 otherwise.
 */
static int unplaced(struct ia *a)
{
	int dev_max = a->in->limits.max_inline[a->d->qpt];
	size_t n_inc = 0, n_win_guard = 0;

	for (size_t i = 0; i < a->np; i++) {
		n_inc += a->pr[i].cls == RT_SIZE_INCONCLUSIVE;
		n_win_guard += (ptrdiff_t)i <= a->guard && a->pr[i].cls == RT_SIZE_WIN;
	}
	if (rt__conf_from_stability(a->stable) == RT_CONF_LOW || (!a->T && !n_win_guard && 2 * n_inc >= a->np))
		return 1;
	if (a->T && !a->harmless && !a->hist && a->tg >= 0) {
		const struct pair *q = &a->pr[a->tg], *nx = (size_t)a->tg + 1 < a->np ? &a->pr[a->tg + 1] : NULL;

		if (nx && dev_max >= 0 && nx->bytes > (uint32_t)dev_max)
			nx = NULL; /* beyond the device: not a size the range could extend to */
		if (q->cls == RT_SIZE_INCONCLUSIVE || (nx && nx->cls == RT_SIZE_INCONCLUSIVE)) {
			a->edge_bytes = q->cls == RT_SIZE_INCONCLUSIVE ? q->bytes : nx->bytes;
			return 2;
		}
	}
	return 0;
}

/* The reasons for the threshold itself and the degenerate cases of the curve. */
static void explain_threshold(struct ia *a)
{
	const struct pair *pr = a->pr, *last = &a->pr[a->np - 1];
	const struct rt_tuner_opts *o = a->o;
	struct rt_reasons *r = a->r;
	int dev_max = a->in->limits.max_inline[a->d->qpt];
	size_t n_inc = 0, n_win_guard = 0, bi = 0;

	for (size_t i = 0; i < a->np; i++) {
		n_inc += pr[i].cls == RT_SIZE_INCONCLUSIVE;
		n_win_guard += (ptrdiff_t)i <= a->guard && pr[i].cls == RT_SIZE_WIN;
		if (pr[i].d > pr[bi].d)
			bi = i;
	}
	if (a->physics) {
		return; /* explain_physics() said it */
	} else if (a->T) {
		const struct pair *q = &pr[a->tg < 0 ? 0 : a->tg];
		const struct pair *nx = (size_t)(a->tg + 1) < a->np ? &pr[a->tg + 1] : NULL;
		const char *how = pr[0].a.s && pr[0].b.s ? "bootstrapped from raw samples + Mann-Whitney"
							 : "from the points' medians/CIs";

		if (a->harmless)
			rt__reason(
				r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
				"inline up to %u B, where it does not matter: no size up to it gains beyond the noise "
				"floor (best d %.1f ns at %u B, CI %.1f..%.1f, floor %.1f ns), and inline is a "
				"significant loss from %u B (%.1f ns; %s, CI %s); any threshold up to %u B is as good, "
				"none above it",
				a->T, pr[bi].d, pr[bi].bytes, pr[bi].lo, pr[bi].hi, pr[bi].f, pr[a->first_loss].bytes,
				pr[a->first_loss].d, kind_label(a->d->kind), how, a->T);
		else if (nx)
			rt__reason(
				r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
				"inline up to %u B: at %u B inline saves %.1f ns (%.0f%% CI %.1f..%.1f, %s), at %u B "
				"%.1f ns (%s); no significant loss up to %u B (%zu sizes, %s, CI %s)",
				a->T, q->bytes, q->d, o->ci_level * 100, q->lo, q->hi, rt_size_class_name(q->cls),
				nx->bytes, nx->d, rt_size_class_name(nx->cls), a->guard_bytes, a->np,
				kind_label(a->d->kind), how);
		else
			rt__reason(r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
				   "inline up to %u B: at %u B inline saves %.1f ns (%.0f%% CI %.1f..%.1f, %s); no "
				   "significant loss at any of the %zu sizes measured (%s, CI %s)",
				   a->T, q->bytes, q->d, o->ci_level * 100, q->lo, q->hi, rt_size_class_name(q->cls),
				   a->np, kind_label(a->d->kind), how);
		if (a->T == last->bytes && a->first_loss < 0) {
			if (dev_max >= 0 && last->bytes >= (uint32_t)dev_max)
				rt__reason(
					r, RT_R_LIMITED_BY_DEVICE_MAX_INLINE, RT_TOPIC_INLINE, RT_SEV_INFO,
					"inline is never worse up to the device's max inline (%d B): %.1f ns at %u B "
					"(%s); the threshold is limited by the device",
					dev_max, last->d, last->bytes, rt_size_class_name(last->cls));
			else if (last->cls == RT_SIZE_WIN)
				rt__reason(
					r, RT_R_LIMITED_BY_MEASURED_RANGE, RT_TOPIC_INLINE, RT_SEV_WARN,
					"inline still wins by %.1f ns at %u B, the largest size measured (device max "
					"inline %s): measure larger sizes to place the threshold",
					last->d, last->bytes, dev_max >= 0 ? "larger" : "unknown");
		}
	} else if (n_win_guard == 0 && 2 * n_inc >= a->np) {
		a->insufficient = 1; /* the data cannot tell whether inline helps: named below, not "never" */
	} else if (n_win_guard == 0 && a->guard < 0 && a->nonmono) {
		rt__reason(
			r, RT_R_INLINE_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
			"threshold 0 (never): inline is a significant loss already at %u B, the smallest size, although "
			"it wins at some larger sizes (see non_monotone)",
			pr[0].bytes);
	} else if (n_win_guard == 0) {
		rt__reason(
			r, RT_R_INLINE_NEVER_BETTER, RT_TOPIC_INLINE, RT_SEV_INFO,
			"inline is never measurably better: threshold 0 (never); best d %.1f ns at %u B (CI %.1f..%.1f, "
			"floor %.1f ns)%s",
			pr[bi].d, pr[bi].bytes, pr[bi].lo, pr[bi].hi, pr[bi].f,
			a->first_loss == 0 ? "; inline is a significant loss already at the smallest size" : "");
	} else if (a->hist) {
		rt__reason(r, RT_R_HISTOGRAM_THRESHOLD, RT_TOPIC_INLINE, RT_SEV_INFO,
			   "the app sends no message size where inline wins (inline wins only up to %u B): threshold 0",
			   a->guard_bytes);
	}
}

/*
 * The threshold when the data cannot place it (insufficient, and the rule gave 0): the best estimate instead of
 * "never", so that a noisy run answers near where a clean one does (x64_n8's UD round trips under a disturbed guest:
 * every size inconclusive, 0 in one run and 64 B in the next). The largest size up to the guard where the antitonic
 * fit of d (zero within the floor) is not below 0, when the fit shows a gain up to it or a loss after it (a fit that
 * is 0 everywhere is no evidence either way: 0). Confidence stays low, by insufficient_data.
 */
static void fallback_threshold(struct ia *a)
{
	int dev_max = a->in->limits.max_inline[a->d->qpt];
	ptrdiff_t best = -1;
	int gain = 0, loss = 0;

	if (a->hist || !a->fit)
		return;
	for (ptrdiff_t i = 0; i <= a->guard && (size_t)i < a->np; i++) {
		if (a->fit[i] < 0)
			break;
		gain |= a->fit[i] > 0;
		best = i;
	}
	for (size_t i = (size_t)(best + 1); i < a->np; i++)
		loss |= a->fit[i] < 0;
	if (best < 0 || !(gain || loss))
		return;
	a->T = a->pr[best].bytes;
	if (dev_max >= 0 && a->T > (uint32_t)dev_max)
		a->T = (uint32_t)dev_max;
	a->tg = grid_index(a->pr, a->np, a->T);
	a->fallback = 1;
	a->d->inline_threshold = a->T;
	a->d->max_inline_data = a->T;
}

/* The warnings, the budget when the data is insufficient, and the confidence. */
static int explain_quality(struct ia *a)
{
	struct rt_tuner_decision *d = a->d;
	struct rt_reasons *r = a->r;
	const struct pair *pr = a->pr;
	enum rt_confidence conf;

	if (d->kneedle_bytes)
		rt__reason(r, RT_R_KNEEDLE_KNEE, RT_TOPIC_INLINE, RT_SEV_INFO,
			   "Kneedle (concave, decreasing, on log2 size, antitonic fit of d) puts the knee at %u B: the "
			   "inline benefit falls off there (evidence only; crossover %u B)",
			   d->kneedle_bytes, a->guard_bytes);
	if (a->multiknee)
		rt__reason(r, RT_R_MULTI_KNEE, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "the inline benefit curve has more than one knee (Kneedle): the gain falls off in steps");
	if (a->nonmono) {
		char rise[80] = "";

		if (a->nonmono & 2)
			snprintf(rise, sizeof(rise), "%sd rises beyond its CIs and floor at %u B",
				 a->nonmono & 1 ? "; " : "", a->nonmono_rise_bytes);
		rt__reason(r, RT_R_NON_MONOTONE, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "the inline benefit d(size) is not monotone beyond its noise: %s%s",
			   a->nonmono & 1
				   ? "inline wins again after a significant loss (the threshold stops before the "
				     "first loss)"
				   : "",
			   rise);
	}
	if (a->rank_disagree)
		rt__reason(r, RT_R_RANK_TEST_DISAGREES, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "the bootstrap CI and the Mann-Whitney test disagree at %d size(s) (%s): counted as not "
			   "significant",
			   a->rank_disagree, a->rdis);
	if (a->implaus) {
		size_t bi = 0;

		for (size_t i = 0; i < a->np; i++)
			if (pr[i].d > pr[bi].d)
				bi = i;
		rt__reason(r, RT_R_IMPLAUSIBLE_GAIN, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "implausible: inline saves %.0f ns at %u B, far more than the PCIe read it avoids (bound "
			   "%.0f ns); check the measurement (CPU frequency, interference, clock)",
			   pr[bi].d, pr[bi].bytes, a->o->implausible_gain_ns);
	}
	if (a->np < MIN_PAIRS)
		rt__reason(r, RT_R_TOO_FEW_POINTS, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "only %zu size(s) measured both inline and not (need %d for a curve): low confidence", a->np,
			   MIN_PAIRS);
	if (a->stable < 0.5)
		a->insufficient = 1;
	if (a->insufficient && !a->T && !a->physics)
		fallback_threshold(a);
	if (a->insufficient) {
		unsigned char *need = calloc(a->np, 1);
		double factor = 1, secs;
		size_t n_inc = 0;
		char edge[96] = "";

		if (!need)
			return ENOMEM;
		for (size_t i = 0; i < a->np; i++) {
			ptrdiff_t di = (ptrdiff_t)i - a->tg;

			need[i] = pr[i].cls == RT_SIZE_INCONCLUSIVE || (di >= -1 && di <= 1);
			n_inc += pr[i].cls == RT_SIZE_INCONCLUSIVE;
		}
		if (a->physics && a->edge_bytes)
			snprintf(edge, sizeof(edge),
				 "the per-size range ends at or before %u B, an inconclusive size; ", a->edge_bytes);
		secs = budget_for(pr, a->np, need, d->kind, &factor);
		free(need);
		d->budget_needed_s = secs;
		rt__reason(
			r, RT_R_INSUFFICIENT_DATA, RT_TOPIC_INLINE, RT_SEV_WARN,
			"noise too high to place the threshold: %s%zu of %zu sizes inconclusive, %.0f%% of bootstrap "
			"replicates agree within one size step; about %.0fx the samples at the sizes in doubt "
			"(~%.1f s more measuring) would be needed%s",
			edge, n_inc, a->np, 100 * a->stable, ceil(factor), secs,
			a->physics ? "; until then the physics fit's answer (see inline_threshold)"
			: a->fallback
				? "; until then the best estimate: the antitonic fit of d (the inline benefit does "
				  "not grow with size) is not below 0 up to the threshold"
			: a->T ? ""
			       : "; threshold 0 (never) until then");
	}
	conf = rt__conf_from_stability(a->stable);
	/* high confidence also needs the sizes next to the threshold to be clear, not inconclusive, unless the physics
	   fit over all sizes places the same threshold in 90 % of its bootstrap fits (the range's edge on an
	   inconclusive size then repeats: the fit, not that size's noise, holds it) */
	for (ptrdiff_t i = a->tg - 1; i <= a->tg + 1; i++)
		if (i >= 0 && (size_t)i < a->np && pr[i].cls == RT_SIZE_INCONCLUSIVE && !(a->fit_agrees >= 0.9))
			conf = rt__conf_min(conf, RT_CONF_MEDIUM);
	if (a->np < MIN_PAIRS || a->insufficient || a->implaus)
		conf = RT_CONF_LOW;
	/*
	 * a threshold where inline does not matter has no gain to show: medium at best. What the answer does not rest on
	 * does not lower it: Kneedle's knees are evidence only, and d rising at a size the threshold inlines anyway (a
	 * device whose DMA read costs more with size) cannot move the threshold; a rise beyond it can (a size above T
	 * gaining more than T), as can a win after a loss
	 */
	if ((a->nonmono & 1) || ((a->nonmono & 2) && a->nonmono_rise_last_bytes > d->inline_threshold) ||
	    a->rank_disagree || a->n_invalid || a->harmless)
		conf = rt__conf_min(conf, RT_CONF_MEDIUM);
	d->inline_confidence = conf;
	return 0;
}

/* Copies the per-size evaluation into the decision. */
static int fill_sizes(struct ia *a)
{
	struct rt_tuner_decision *d = a->d;

	d->sizes = calloc(a->np, sizeof(*d->sizes));
	if (!d->sizes)
		return ENOMEM;
	d->n_sizes = a->np;
	for (size_t i = 0; i < a->np; i++) {
		const struct pair *q = &a->pr[i];
		struct rt_tuner_size *s = &d->sizes[i];

		s->msg_bytes = q->bytes;
		s->noninl_ns = q->a.p->median_ns;
		s->inl_ns = q->b.p->median_ns;
		s->d_ns = q->d;
		s->d_lo_ns = q->lo;
		s->d_hi_ns = q->hi;
		s->floor_ns = q->f;
		s->rank_p = q->p;
		s->n_noninl = q->a.p->n_samples;
		s->n_inl = q->b.p->n_samples;
		s->from_raw = q->a.s && q->b.s;
		s->cls = q->cls;
	}
	return 0;
}

int rt__inline_analyse(struct rt_tctx *t, const struct rt_lat_point *const *pts, size_t n,
		       const struct rt_tuner_input *in, struct rt_tuner_decision *d, struct rt_reasons *r)
{
	struct ia a = {
		.t = t, .o = t->o, .in = in, .app = &in->app[d->op][d->qpt], .d = d, .r = r, .B = t->o->n_boot
	};
	int rc, why;

	d->inline_confidence = RT_CONF_LOW;
	if ((rc = select_pairs(&a, pts, n)))
		goto out;
	if (a.n_invalid)
		rt__reason(r, RT_R_INVALID_POINT, RT_TOPIC_INPUT, RT_SEV_WARN,
			   "%zu latency point(s) of %s/%s dropped: %s", a.n_invalid, rt_opcode_name(d->op),
			   rt_qp_type_name(d->qpt), a.why);
	if (!a.np) {
		d->inline_measured = false;
		rt__reason(r, RT_R_NO_LATENCY_DATA, RT_TOPIC_INLINE, RT_SEV_WARN,
			   "no size has both an inline and a non-inline %s latency point: inline threshold 0 (never) "
			   "by default",
			   kind_label(d->kind));
		goto out;
	}
	d->inline_measured = true;
	if ((rc = eval_sizes(&a)) || (rc = make_bins(&a)))
		goto out;
	d->crossover_bytes = a.guard_bytes;
	choose_threshold(&a);
	d->inline_threshold = a.T;
	d->max_inline_data = a.T;
	if ((rc = stability(&a)) || (rc = evidence(&a)))
		goto out;
	d->inline_stability = a.stable;
	if ((why = unplaced(&a))) {
		struct physics ph;
		int set = physics_threshold(&a, &ph, why == 2 ? a.T : UINT32_MAX);

		if (set == ENOMEM) {
			rc = ENOMEM;
			goto out;
		}
		if (set)
			explain_physics(&a, &ph);
	}
	explain_threshold(&a);
	if ((rc = expected_gain(&a)) || (rc = explain_quality(&a)) || (rc = fill_sizes(&a)))
		goto out;
out:
	free(a.pr);
	free(a.arena);
	free(a.mat);
	free(a.raw);
	free(a.firstwin);
	free(a.dv);
	free(a.bins);
	free(a.fit);
	return rc;
}
