// SPDX-License-Identifier: MIT
/*
 * The signaling decision of one (opcode, QP type), plus queue depths and CQ moderation: per rate series (size, inline),
 * an isotonic (non-decreasing) fit of message rate vs N and the smallest N within the tolerance of the series' best;
 * N is the largest of those over the series, capped at sq_depth / divisor and never below the app's post-list batch;
 * its stability over bootstrap replicates of the rates; Kneedle as evidence. docs/tuner.md.
 */
#include "tuner_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* false alarm rate of a knee on a flat curve (the default, a stated N, is the safe answer) */
#define KNEE_ALPHA 0.01
#define Z_Q_DISAGREE 2.326 /* series disagree: Cochran's Q above its 99th percentile (normal quantile of 0.99) */

/* d2(n): expected range of n standard normal draws, to turn the min..max of the repetitions into a sigma. */
static double d2(uint32_t n)
{
	static const double tab[] = { 0,     0,	    1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078,
				      3.173, 3.258, 3.336, 3.407, 3.472, 3.532, 3.588, 3.640, 3.689, 3.735 };

	return n < sizeof(tab) / sizeof(tab[0]) ? tab[n] : 2 * sqrt(2 * log((double)n)) * 0.93;
}

/* Median of 2 min(upper, lower half-range) / d2(n) over normal samples, in sigmas (simulated): the narrower
   half-range is robust to one slow repetition but reads low. */
static double half_bias(uint32_t n)
{
	static const double tab[] = { 1, 1, 1, 0.42, 0.61, 0.61, 0.68, 0.69, 0.72, 0.73 };

	return n < sizeof(tab) / sizeof(tab[0]) ? tab[n] : 0.75;
}

struct series {
	size_t start, n;	 /* slice of the sorted point array */
	struct rt__rate_fit fit; /* its own fit (line + floor) */
	double a;		 /* intercept under the pooled t_cqe */
};

static int cmp_rate(const void *pa, const void *pb)
{
	const struct rt_rate_point *a = *(const struct rt_rate_point *const *)pa;
	const struct rt_rate_point *b = *(const struct rt_rate_point *const *)pb;

	if (a->msg_bytes != b->msg_bytes)
		return a->msg_bytes < b->msg_bytes ? -1 : 1;
	if (a->inl != b->inl)
		return a->inl ? 1 : -1;
	if (a->signal_interval != b->signal_interval)
		return a->signal_interval < b->signal_interval ? -1 : 1;
	return (a->reps < b->reps) - (a->reps > b->reps);
}

/* What the sweep shows about t_cqe: each series' own slope, and the pooled one. */
struct slopes {
	const double *b;      /* per series (NULL entries of unfitted series are not read) */
	double pool, se_pool; /* inverse-variance pooled slope and its standard error */
	double q;	      /* Cochran's Q: the series' disagreement with the pooled slope, in their own noise */
	double z_pool, z_ser; /* the evidence a knee needs: pooled, and per series (Bonferroni over the series) */
};

/*
 * The rule: N is what t_cqe buys in the series needing most (the cheapest post, unless it sits on its rate floor); every
 * series uses the pooled t_cqe when that is significant, else its own when that alone is significant (Bonferroni over
 * the series), else none (that series does not depend on N). Returns 1 when nothing depends on N; *which is the deciding series and
 * *used the t_cqe it used (either may be NULL).
 */
static uint32_t rule_n(const struct series *sr, size_t ns, const struct slopes *sl, double tol, uint32_t nlim,
		       size_t *which, double *used)
{
	int pooled = sl->pool - sl->z_pool * sl->se_pool > 0;
	uint32_t best = 1;
	size_t w = ns;

	for (size_t s = 0; s < ns; s++) {
		const struct series *e = &sr[s];
		double bb;
		uint32_t v;

		if (!e->fit.ok)
			continue;
		/* one completion costs the same whatever the payload: the pooled t_cqe, from all rate points, decides
		   (each series' own slope, maxed over series, drifts upward with the noise of the noisiest series) */
		bb = pooled ? sl->pool : sl->b[s] - sl->z_ser * e->fit.se_b > 0 ? sl->b[s] : 0;
		v = rt__rate_n_needed(e->a, e->fit.c, bb, tol, nlim);
		if (w == ns || v > best || (v == best && e->a < sr[w].a)) {
			best = v > best ? v : best;
			w = s;
			if (used)
				*used = bb;
		}
	}
	if (which)
		*which = w;
	return best;
}

static uint32_t clamp_n(uint32_t v, uint32_t cap, uint32_t batch)
{
	v = v > cap ? cap : v;
	return v < batch ? batch : v;
}

static uint32_t pow2_ceil(uint64_t v)
{
	uint64_t p = 1;

	while (p < v && p < (1ull << 31))
		p <<= 1;
	return (uint32_t)p;
}

static void queues_and_cqmod(struct rt_tctx *t, const struct rt_tuner_input *in, uint32_t sq_meas,
			     struct rt_tuner_decision *d, struct rt_reasons *r)
{
	const struct rt_tuner_opts *o = t->o;
	uint32_t need = d->signal_interval * o->sq_cap_divisor, sq, cq;
	const struct rt_cq_moderation *m = in->cqmod ? &in->cqmod[d->op] : NULL;

	sq = sq_meas ? sq_meas : pow2_ceil(need > 64 ? need : 64);
	if (sq < need)
		sq = pow2_ceil(need);
	if (in->limits.max_qp_wr && sq > in->limits.max_qp_wr)
		sq = in->limits.max_qp_wr;
	cq = sq;
	if (in->limits.max_cqe && cq > in->limits.max_cqe)
		cq = in->limits.max_cqe;
	d->sq_depth = sq;
	d->cq_depth = cq;
	rt__reason(
		r, RT_R_QUEUE_DEPTHS, RT_TOPIC_QUEUE, RT_SEV_INFO,
		"sq_depth %u (%s; keeps N = %u <= sq_depth/%u), send cq_depth %u: one CQE per outstanding WR, since a "
		"QP error flushes every outstanding WR, signaled or not, to the CQ%s",
		sq, sq_meas ? "the depth the sweep measured" : "no measured depth", d->signal_interval,
		o->sq_cap_divisor, cq, sq < need ? " (device max_qp_wr limits the depth below 4N)" : "");

	if (!m || !m->measured) {
		d->cq_mod = RT_CQMOD_NOT_MEASURED;
		rt__reason(r, RT_R_CQ_MODERATION_NOT_MEASURED, RT_TOPIC_CQ_MOD, RT_SEV_INFO,
			   "CQ moderation was not measured: no recommendation");
	} else if (!m->supported) {
		d->cq_mod = RT_CQMOD_UNSUPPORTED;
		rt__reason(r, RT_R_CQ_MODERATION_UNSUPPORTED, RT_TOPIC_CQ_MOD, RT_SEV_INFO,
			   "the device refused CQ moderation (ibv_modify_cq): %s",
			   m->reason[0] ? m->reason : "unsupported");
	} else if (m->mops_off > 0 && m->mops_best > m->mops_off * (1 + o->tolerance) && m->best_count) {
		d->cq_mod = RT_CQMOD_ON;
		d->cq_mod_count = m->best_count;
		d->cq_mod_period_us = m->best_period_us;
		rt__reason(r, RT_R_CQ_MODERATION, RT_TOPIC_CQ_MOD, RT_SEV_INFO,
			   "CQ moderation count %u, period %u us: %.3f Mops vs %.3f without (+%.1f%%)", m->best_count,
			   m->best_period_us, m->mops_best, m->mops_off, 100 * (m->mops_best / m->mops_off - 1));
	} else {
		d->cq_mod = RT_CQMOD_OFF;
		rt__reason(r, RT_R_CQ_MODERATION_NO_GAIN, RT_TOPIC_CQ_MOD, RT_SEV_INFO,
			   "CQ moderation measured without a gain beyond %.1f%% (%.3f vs %.3f Mops): leave it off",
			   100 * o->tolerance, m->mops_best, m->mops_off);
	}
}

int rt__signal_analyse(struct rt_tctx *t, const struct rt_rate_point *const *pts, size_t n,
		       const struct rt_tuner_input *in, struct rt_tuner_decision *d, struct rt_reasons *r)
{
	const struct rt_tuner_opts *o = t->o;
	const struct rt_rate_point **v = NULL;
	struct series *sr = NULL;
	double *y = NULL, *se = NULL, *w = NULL, *fit = NULL, *xs = NULL, *xi = NULL, *yt = NULL, *wt = NULL;
	size_t nv = 0, ns = 0, n_invalid = 0, n_used = 0, n_fit = 0, deciding = 0, B = o->n_boot, ok = 0;
	uint32_t batch = in->app[d->op][d->qpt].post_list_batch ? in->app[d->op][d->qpt].post_list_batch : 1;
	uint32_t sq_meas = in->limits.sq_depth, cap, nlim, nstar = 1, N, n_hi = 1, n_max_meas = 1;
	uint64_t enomem = 0;
	uint32_t drop_n = UINT32_MAX; /* the smallest N where a rate drops beyond its noise; UINT32_MAX: none */
	int rc = 0, multiknee = 0, assumed_noise = 0, few = 0, insufficient = 0, flat = 0, small_knee = 0;
	size_t n_own = 0;      /* series whose own t_cqe is significant (counted for a knee only) */
	int minority = 0;      /* a knee only a minority of the series show */
	bool pool_sig = false; /* the pooled t_cqe is above 0 at the knee's false-alarm rate */
	double rel_se = 0, stable = 0, b = 0, se_b = 0, b_lo = 0, b_hi = 0, a_min = INFINITY;
	size_t offs0 = (size_t)rt_rng_next(&t->rng);
	struct slopes sl = { 0 };
	const struct rt_rate_point *one_point = NULL, *n_lowered = NULL;
	double *bser = NULL, *bdraw = NULL;
	enum rt_confidence conf;

	d->signal_confidence = RT_CONF_LOW;
	d->signal_interval = 1;
	d->signal_verdict = RT_SIGNAL_NOT_MEASURED;
	d->t_post_ns = d->t_cqe_ns = d->t_cqe_lo_ns = d->t_cqe_hi_ns = NAN;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct rt_rate_point *p = pts[i];

		enomem += p->enomem;
		if (!in->limits.sq_depth && p->sq_depth > sq_meas)
			sq_meas = p->sq_depth;
		if (!isfinite(p->mops) || p->mops <= 0 || p->signal_interval == 0 || !isfinite(p->mops_lo) ||
		    !isfinite(p->mops_hi)) {
			n_invalid++;
			continue;
		}
		v[nv++] = p;
	}
	if (n_invalid)
		rt__reason(r, RT_R_INVALID_POINT, RT_TOPIC_INPUT, RT_SEV_WARN,
			   "%zu rate point(s) dropped: rate not a positive number or N = 0", n_invalid);
	if (enomem)
		rt__reason(r, RT_R_SQ_OVERFLOW_SEEN, RT_TOPIC_SIGNAL, RT_SEV_WARN,
			   "the sweep saw %llu ENOMEM from ibv_post_send (send queue full): its rates are suspect",
			   (unsigned long long)enomem);
	cap = sq_meas ? sq_meas / o->sq_cap_divisor : UINT32_MAX;
	if (cap < 1)
		cap = 1;
	nlim = 1u << 16; /* what the physics asks for; the cap applies after */
	if (!nv) {
		d->signal_measured = false;
		rt__reason(r, RT_R_NO_RATE_DATA, RT_TOPIC_SIGNAL, RT_SEV_WARN,
			   "no rate sweep for %s/%s: signal every WR (N = 1, always safe, slowest)",
			   rt_opcode_name(d->op), rt_qp_type_name(d->qpt));
		nstar = 1;
		goto decide;
	}
	d->signal_measured = true;

	/* ---- series: one per (size, inline), one point per N, in N order ---- */
	qsort(v, nv, sizeof(*v), cmp_rate);
	sr = calloc(nv, sizeof(*sr));
	y = malloc(nv * sizeof(*y));
	se = malloc(nv * sizeof(*se));
	w = malloc(nv * sizeof(*w));
	fit = malloc(nv * sizeof(*fit));
	xs = malloc(nv * sizeof(*xs));
	xi = malloc(nv * sizeof(*xi));
	yt = malloc(nv * sizeof(*yt));
	wt = malloc(nv * sizeof(*wt));
	bser = calloc(nv, sizeof(*bser));
	bdraw = calloc(nv, sizeof(*bdraw));
	if (!sr || !y || !se || !w || !fit || !xs || !xi || !yt || !wt || !bser || !bdraw) {
		rc = ENOMEM;
		goto out;
	}
	{
		size_t k = 0;

		for (size_t i = 0; i < nv; i++) {
			const struct rt_rate_point *p = v[i];

			if (k && v[k - 1]->msg_bytes == p->msg_bytes && v[k - 1]->inl == p->inl &&
			    v[k - 1]->signal_interval == p->signal_interval)
				continue; /* duplicate N: the one with most repetitions came first */
			v[k++] = p;
		}
		nv = k;
		for (size_t i = 0; i < nv; i++) {
			const struct rt_rate_point *p = v[i];
			/* twice the narrower half-range: robust to reps slowed by an interrupt (or one odd fast rep) */
			double range = 2 * fmin(p->mops_hi - p->mops, p->mops - p->mops_lo);

			y[i] = p->mops;
			xs[i] = log2((double)p->signal_interval);
			xi[i] = 1.0 / (double)p->signal_interval;
			if (p->reps >= 3 && range > 0) {
				se[i] = 1.2533 * range / d2(p->reps) / half_bias(p->reps) / sqrt((double)p->reps);
			} else {
				se[i] = o->tolerance / 4 * p->mops; /* no spread known: a quarter of the tolerance */
				assumed_noise = 1;
			}
			n_max_meas = p->signal_interval > n_max_meas ? p->signal_interval : n_max_meas;
			if (!i || v[i - 1]->msg_bytes != p->msg_bytes || v[i - 1]->inl != p->inl)
				sr[ns++].start = i;
			sr[ns - 1].n++;
		}
		/* a spread from 3-9 repetitions is itself noisy, and the fit would trust the luckiest points most: the
		   sweep's noise is pooled as the median relative standard error, the same for every point (the fit's
		   reduced chi-square widens it when the residuals say more) */
		for (size_t i = 0; i < nv; i++)
			fit[i] = se[i] / y[i];
		for (size_t i = 1; i < nv; i++)
			for (size_t j = i; j > 0 && fit[j] < fit[j - 1]; j--) {
				double tmp = fit[j];

				fit[j] = fit[j - 1];
				fit[j - 1] = tmp;
			}
		rel_se = nv % 2 ? fit[nv / 2] : (fit[nv / 2 - 1] + fit[nv / 2]) / 2;
		for (size_t i = 0; i < nv; i++) {
			se[i] = rel_se * y[i];
			w[i] = 1 / (se[i] * se[i]);
			/* time per message in ns (rates are Mops) and its standard error */
			yt[i] = 1000.0 / y[i];
			wt[i] = 1 / pow(rel_se * yt[i], 2);
		}
	}
	for (size_t s = 0; s < ns; s++)
		n_used = sr[s].n > n_used ? sr[s].n : n_used;
	few = n_used < 3;

	/* ---- the physics: per series 1/rate = a + b/N (with a floor), t_cqe = b; the rule in rule_n() ---- */
	{
		double sw = 0, sb = 0, q = 0, used = 0, used_se = 0;

		for (size_t s = 0; s < ns; s++) {
			struct series *e = &sr[s];

			if (rt__rate_fit_series(xi + e->start, yt + e->start, wt + e->start, e->n, &e->fit) ||
			    !(e->fit.se_b > 0) || !(e->fit.a > 0)) {
				e->fit.ok = 0;
				continue;
			}
			e->a = e->fit.a;
			bser[s] = e->fit.b;
			n_fit++;
			sw += 1 / (e->fit.se_b * e->fit.se_b);
			sb += e->fit.b / (e->fit.se_b * e->fit.se_b);
			if (e->a < a_min)
				a_min = e->a;
		}
		sl.b = bser;
		if (n_fit) {
			sl.pool = sb / sw;
			sl.se_pool = sqrt(1 / sw);
			for (size_t s = 0; s < ns; s++)
				if (sr[s].fit.ok)
					q += pow((sr[s].fit.b - sl.pool) / sr[s].fit.se_b, 2);
			sl.q = q;
			/* series that disagree beyond their own noise widen the pooled interval */
			if (n_fit > 1 && q > (double)(n_fit - 1))
				sl.se_pool *= sqrt(q / (double)(n_fit - 1));
			/* a knee is a claim: 1 % false alarms on a flat curve, shared among the series */
			sl.z_pool = rt__norm_ppf(1 - KNEE_ALPHA / 2);
			sl.z_ser = rt__norm_ppf(1 - KNEE_ALPHA / (2.0 * (double)n_fit));
		}
		nstar = n_fit ? rule_n(sr, ns, &sl, o->tolerance, nlim, &deciding, &used) : 1;
		if (deciding >= ns)
			deciding = 0;
		/* a knee must not rest on one point (one stalled repetition set can look like a costly completion):
		   it has to survive leaving out any one point of the sweep */
		for (size_t s = 0; s < ns && nstar > 1; s++) {
			struct series keep = sr[s];
			double xs1[64], ys1[64], ws1[64];

			if (!keep.fit.ok || keep.n < 3 || keep.n > 64)
				continue;
			for (size_t j = 0; j < keep.n && nstar > 1; j++) {
				struct slopes sj = sl;
				double sw1 = 0, sb1 = 0, q1 = 0;
				size_t m = 0;

				for (size_t i = 0; i < keep.n; i++)
					if (i != j) {
						xs1[m] = xi[keep.start + i];
						ys1[m] = yt[keep.start + i];
						ws1[m++] = wt[keep.start + i];
					}
				if (rt__rate_fit_series(xs1, ys1, ws1, m, &sr[s].fit) || !(sr[s].fit.se_b > 0) ||
				    !(sr[s].fit.a > 0))
					sr[s].fit.ok = 0;
				if (sr[s].fit.ok && sr[s].fit.b >= keep.fit.b) {
					/* a point whose removal raises its series' t_cqe spoke against the knee: the knee
					   cannot rest on it (its removal could only widen the pooled CI through the series'
					   disagreement; 2026-12-02, x256_n16: t_cqe 36.7 us, 95 % CI 21.4..52.1, called
					   "rests on one point" for a fast point of the one series fitting -24 us) */
					sr[s] = keep;
					continue;
				}
				sr[s].a = sr[s].fit.a;
				memcpy(bdraw, bser, ns * sizeof(*bdraw));
				bdraw[s] = sr[s].fit.b;
				for (size_t u = 0; u < ns; u++)
					if (sr[u].fit.ok) {
						sw1 += 1 / (sr[u].fit.se_b * sr[u].fit.se_b);
						sb1 += bdraw[u] / (sr[u].fit.se_b * sr[u].fit.se_b);
					}
				sj.b = bdraw;
				if (sw1 > 0) {
					sj.pool = sb1 / sw1;
					sj.se_pool = sqrt(1 / sw1);
					for (size_t u = 0; u < ns; u++)
						if (sr[u].fit.ok)
							q1 += pow((bdraw[u] - sj.pool) / sr[u].fit.se_b, 2);
					if (n_fit > 1 && q1 > (double)(n_fit - 1))
						sj.se_pool *= sqrt(q1 / (double)(n_fit - 1));
				}
				if (sw1 > 0) {
					size_t wj = ns;
					double uj = 0;
					uint32_t nj = rule_n(sr, ns, &sj, o->tolerance, nlim, &wj, &uj);

					if (nj <= 1) {
						one_point = v[keep.start + j];
						nstar = 1;
					} else if (nj < nstar) {
						/* N must not rest on one point either: the smallest without any one */
						nstar = nj;
						deciding = wj < ns ? wj : deciding;
						used = uj;
						used_se = uj == sj.pool ? sj.se_pool : sr[deciding].fit.se_b;
						n_lowered = v[keep.start + j];
					}
				}
				sr[s] = keep;
			}
		}
		if (!n_fit) {
			few = 1;
			b = 0;
			se_b = INFINITY;
		} else if (nstar > 1) {
			/* t_cqe as the deciding series used it */
			b = used;
			se_b = used_se > 0 ? used_se : used == sl.pool ? sl.se_pool : sr[deciding].fit.se_b;
		} else {
			b = sl.pool;
			se_b = sl.se_pool;
		}
		b_lo = b - t->z_ci * se_b;
		b_hi = b + t->z_ci * se_b;
		/* how much N the upper bound of t_cqe would ask for */
		n_hi = 1;
		for (size_t s = 0; s < ns && n_fit; s++)
			if (sr[s].fit.ok) {
				uint32_t h = rt__rate_n_needed(sr[s].a, sr[s].fit.c, b_hi, o->tolerance, nlim);

				n_hi = h > n_hi ? h : n_hi;
			}
		if (!n_fit)
			n_hi = nlim;
	}
	/* a needed N of 2 says only that signaling every WR is slower: any N from 2 on gets the rate, so it is the same
	   verdict as a flat curve (and the borderline between the two must not make the answer flip from run to run) */
	small_knee = nstar == 2;
	flat = nstar <= 2;
	/* a knee the pooled t_cqe does not show, or that series disagreeing beyond their noise (Cochran's Q above its
	   99th percentile) pool to: how many series show it by their own slope (Bonferroni) */
	pool_sig = n_fit && sl.pool - sl.z_pool * sl.se_pool > 0;
	if (!flat && n_fit > 1 && (!pool_sig || sl.q > rt__chi2_quantile(Z_Q_DISAGREE, (double)(n_fit - 1)))) {
		for (size_t s = 0; s < ns; s++)
			n_own += sr[s].fit.ok && bser[s] - sl.z_ser * sr[s].fit.se_b > 0;
		minority = 2 * n_own < n_fit;
	}
	d->signal_verdict = flat ? RT_SIGNAL_INDIFFERENT : RT_SIGNAL_KNEE;
	d->t_post_ns = n_fit ? sr[deciding].a : NAN;
	d->t_cqe_ns = n_fit ? b : NAN;
	d->t_cqe_lo_ns = n_fit ? b_lo : NAN;
	d->t_cqe_hi_ns = n_fit ? b_hi : NAN;
	if (flat)
		nstar = o->flat_signal_interval;

	/* ---- evidence on the raw rates: the isotonic fit, Kneedle, a rate falling at larger N ---- */
	for (size_t s = 0; s < ns; s++) {
		struct series *q = &sr[s];
		int nsig = 0;

		if (q->n < 3)
			continue;
		if ((rc = rt_tuner_isotonic(y + q->start, w + q->start, q->n, true, fit + q->start)))
			goto out;
		{
			size_t m = q->start;

			for (size_t i = q->start; i < q->start + q->n; i++)
				if (y[i] > y[m])
					m = i;
			/* a drop persists: the rate stays down at most of the N from there on (one point dipping and the
			   next ones back at the best is noise: 2026-12-03, x256_n16 send/rc, 8 B non-inline 23 % slower at
			   N = 32 only, which capped the knee at N = 32 in one run of ten); from the largest N down, counting
			   the points down so far */
			size_t end = q->start + q->n, down = 0;

			for (size_t i = end; i-- > m + 1;) {
				bool is_down =
					y[i] < (1 - 2 * o->tolerance) * y[m] && y[i] + 2 * se[i] < y[m] - 2 * se[m];

				down += is_down;
				if (is_down && 2 * down > end - i && drop_n > v[i]->signal_interval)
					drop_n = v[i]->signal_interval;
			}
		}
		rt__knee_evidence(xs + q->start, fit + q->start, q->n, RT_KNEE_INCREASING,
				  o->tolerance * fit[q->start + q->n - 1], &nsig);
		multiknee |= nsig > 1 && !flat; /* the rate rises in more than one step */
		if (s == deciding && !flat) {
			size_t kb = rt__knee_evidence(xs + q->start, fit + q->start, q->n, RT_KNEE_INCREASING,
						      o->tolerance * fit[q->start + q->n - 1], &nsig);

			if (kb != SIZE_MAX)
				d->signal_kneedle = v[q->start + kb]->signal_interval;
		}
	}

	/* ---- stability: the rule again with each series' t_cqe drawn within its noise ---- */
	{
		uint32_t ref = clamp_n(nstar, cap, batch);
		struct slopes sd = sl;

		sd.b = bdraw;
		for (size_t k = 0; k < B && n_fit; k++) {
			double sw = 0, sb = 0;
			uint32_t nb;

			for (size_t s = 0; s < ns; s++) {
				const struct series *e = &sr[s];

				if (!e->fit.ok)
					continue;
				bdraw[s] = e->fit.b +
					   e->fit.se_b *
						   t->pool[(offs0 + s * 40503u + k * 2654435761u) & (RT_POOL_SIZE - 1)];
				sw += 1 / (e->fit.se_b * e->fit.se_b);
				sb += bdraw[s] / (e->fit.se_b * e->fit.se_b);
			}
			sd.pool = sb / sw;
			nb = rule_n(sr, ns, &sd, o->tolerance, nlim, NULL, NULL);
			nb = nb <= 1 ? clamp_n(o->flat_signal_interval, cap, batch) : clamp_n(nb, cap, batch);
			if (flat)
				ok += nb <= ref; /* the stated N stays within the tolerance */
			else
				ok += fabs(log2((double)nb / (double)ref)) <= 1.0 + 1e-9;
		}
		stable = n_fit ? (double)ok / (double)B : 0;
	}
	d->signal_stability = stable;

decide:
	N = nstar;
	if (N > cap) {
		if (!flat)
			rt__reason(r, RT_R_SIGNAL_CAPPED_BY_SQ, RT_TOPIC_SIGNAL, RT_SEV_INFO,
				   "the rate needs N = %u, above sq_depth/%u = %u: capped to %u so a signaled WR "
				   "completes well before the send queue can fill",
				   N, o->sq_cap_divisor, cap, cap);
		N = cap;
	}
	if (N < batch) {
		rt__reason(r, RT_R_SIGNAL_RAISED_TO_BATCH, RT_TOPIC_SIGNAL, RT_SEV_INFO,
			   "N raised from %u to the app's post-list batch of %u WRs (at least one signaled WR per "
			   "ibv_post_send call is enough)",
			   N, batch);
		N = batch;
	}
	d->signal_interval = N;
	if (d->signal_measured) {
		const struct series *q = &sr[deciding];
		const struct rt_rate_point *p1 = v[q->start], *pn = v[q->start];
		double t_at = q->fit.ok ? fmax(q->a + b / N, q->fit.c) : NAN;
		double t_inf = q->fit.ok ? fmax(q->a, q->fit.c) : NAN;
		double loss1 = q->fit.ok && b > 0 ? b / (q->a + b) : 0;

		for (size_t i = q->start; i < q->start + q->n; i++)
			if (v[i]->signal_interval <= N)
				pn = v[i]; /* the measured N nearest below the chosen one */
		d->mops_at_n = t_at > 0 ? 1000 / t_at : NAN;
		d->mops_best = t_inf > 0 ? 1000 / t_inf : NAN;
		if (flat) {
			rt__reason(
				r, RT_R_SIGNAL_INDIFFERENT, RT_TOPIC_SIGNAL, RT_SEV_INFO,
				"the message rate does not depend on N here: a signaled completion costs t_cqe = %.1f "
				"ns (%.0f%% CI %.1f..%.1f) against t_post = %.1f ns per WR, so even N = 1 %s; N = %u is "
				"the stated default (flat_signal_interval %u, within sq_depth/%u)",
				b, o->ci_level * 100, b_lo, b_hi, a_min,
				small_knee  ? "is the only N measurably slower (any N from 2 on gets the rate)"
				: one_point ? "is slower in one point only (see below)"
				: n_hi <= 1 ? "stays within the tolerance"
					    : "is not shown to be slower beyond the noise (at a 1 % false-alarm rate)",
				N, o->flat_signal_interval, o->sq_cap_divisor);
		}
		rt__reason(r, RT_R_SIGNAL_INTERVAL, RT_TOPIC_SIGNAL, RT_SEV_INFO,
			   "signal 1 WR in %u: 1/rate = t_post + t_cqe/N fitted to %zu rate points in %zu series: "
			   "t_cqe %.1f ns (%.0f%% CI %.1f..%.1f), t_post %.1f ns (%u B %s, the series needing the "
			   "largest N%s); %s; fitted %.3f Mops at N = %u vs %.3f as N grows (N = 1 loses %.1f%%); "
			   "busy CPU %.1f ns/msg at N = %u vs %.1f at N = %u",
			   N, nv, ns, b, o->ci_level * 100, b_lo, b_hi, q->a, p1->msg_bytes,
			   p1->inl ? "inline" : "non-inline", q->fit.k_sat ? ", its largest N on a rate floor" : "",
			   flat ? "the rate does not depend on N beyond its noise"
				: "the smallest power of two within the tolerance of the limit",
			   d->mops_at_n, N, d->mops_best, 100 * loss1, pn->cpu_ns_per_msg, pn->signal_interval,
			   p1->cpu_ns_per_msg, p1->signal_interval);
		if (one_point)
			rt__reason(
				r, RT_R_NON_MONOTONE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"the rate's dependence on N rests on one point (%u B %s, N = %u: %.4f Mops): without it "
				"nothing depends on N, so the verdict is that N does not matter",
				one_point->msg_bytes, one_point->inl ? "inline" : "non-inline",
				one_point->signal_interval, one_point->mops);
		if (n_lowered && !one_point)
			rt__reason(r, RT_R_NON_MONOTONE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "one point (%u B %s, N = %u: %.4f Mops) alone would ask for a larger N: N is the "
				   "smallest that every sweep without one point agrees on",
				   n_lowered->msg_bytes, n_lowered->inl ? "inline" : "non-inline",
				   n_lowered->signal_interval, n_lowered->mops);
		if (N > n_max_meas)
			rt__reason(r, RT_R_LIMITED_BY_MEASURED_RANGE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "N = %u lies beyond the largest N measured (%u): extrapolated from the fit", N,
				   n_max_meas);
		if (d->signal_kneedle)
			rt__reason(r, RT_R_KNEEDLE_KNEE, RT_TOPIC_SIGNAL, RT_SEV_INFO,
				   "Kneedle (concave, increasing, on log2 N) puts the knee of the rate at N = %u "
				   "(evidence only: the fit decides)",
				   d->signal_kneedle);
		if (multiknee)
			rt__reason(r, RT_R_MULTI_KNEE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "the rate vs N curve has more than one knee (Kneedle)");
		if (minority)
			rt__reason(
				r, RT_R_SERIES_DISAGREE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"the knee rests on %zu of the %zu rate series: the others do not show the completion's "
				"cost by their own slope, and %s (Q %.1f on %zu degrees of freedom; t_cqe pooled over all "
				"%.1f ns, se %.1f): one completion costs the same whatever the payload, so the "
				"confidence is at most medium",
				n_own, n_fit,
				pool_sig ? "the series disagree beyond their noise"
					 : "the pooled t_cqe is not above 0 at a 1 % false-alarm rate",
				sl.q, n_fit - 1, sl.pool, sl.se_pool);
		if (drop_n != UINT32_MAX)
			rt__reason(
				r, RT_R_NON_MONOTONE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"the rate drops at larger N beyond its noise (more than %.1f%%, from N = %u): check CQ/queue "
				"sizing",
				200 * o->tolerance, drop_n);
		if (few)
			rt__reason(r, RT_R_TOO_FEW_POINTS, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "only %zu N value(s) per series (need 3 for a knee): low confidence", n_used);
		/* too noisy: the stated N is not shown to be good enough, or the knee's N does not repeat */
		if ((flat && clamp_n(n_hi, cap, batch) > N) || (!flat && stable < 0.5) || !isfinite(se_b)) {
			double target, factor = 1e4, secs = 0;

			insufficient = 1;
			if (flat) {
				/* the t_cqe at which N loses exactly the tolerance */
				target = (o->tolerance / (1 - o->tolerance) * a_min * N - fmax(b, 0)) / t->z_ci;
			} else {
				target = fabs(b) / 4; /* a quarter of t_cqe: a factor-of-two N repeats */
			}
			if (isfinite(se_b) && target > 0)
				factor = fmin(1e4, pow(se_b / target, 2));
			factor = factor < 2 ? 2 : factor;
			for (size_t i = 0; i < nv; i++)
				if (v[i]->reps && v[i]->mops > 0)
					secs += (factor - 1) * (double)v[i]->msgs / (v[i]->mops * 1e6);
			if (d->budget_needed_s < secs)
				d->budget_needed_s = secs;
			rt__reason(
				r, RT_R_INSUFFICIENT_DATA, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"rate noise too high for a %.1f%% tolerance: t_cqe %.1f ns with %.0f%% CI %.1f..%.1f, "
				"%.0f%% of bootstrap replicates agree; about %.0fx the repetitions (~%.1f s more "
				"measuring) would be needed",
				100 * o->tolerance, b, o->ci_level * 100, b_lo, b_hi, 100 * stable, ceil(factor), secs);
		}
	}
	conf = d->signal_measured ? rt__conf_from_stability(stable) : RT_CONF_LOW;
	/* "doesn't matter" is high only when even N = 1 is shown to be within the tolerance */
	if (flat && n_hi > 1)
		conf = rt__conf_min(conf, RT_CONF_MEDIUM);
	if (few || insufficient)
		conf = RT_CONF_LOW;
	/*
	 * What the answer does not rest on does not lower it: Kneedle's knees are evidence only (the fit decides), and a
	 * rate dropping only at an N above the one stated does not bear on it (one series' point below the best of the
	 * points before it, beyond the pooled noise, happens by chance in a sweep of many series)
	 */
	if (drop_n <= d->signal_interval || enomem || n_invalid || assumed_noise)
		conf = rt__conf_min(conf, RT_CONF_MEDIUM);
	/*
	 * A knee that only a minority of the series show, while the pooled t_cqe is not significant, is not the physics
	 * (one t_cqe for every series) but something that slowed those series' small N (2026-12-03, always_flat
	 * write/rc: two of six series fit 4.9 and 6.2 us, four 0.6..1.2 us, pooled 2.2 us, 99 % CI -0.3..4.7: "knee N = 8,
	 * high" for a model without a completion cost). The same when the pooled t_cqe is significant but the series
	 * disagree beyond their noise. Half the series (a rate floor hiding t_cqe in the others) keep it.
	 */
	if (minority)
		conf = rt__conf_min(conf, RT_CONF_MEDIUM);
	d->signal_confidence = conf;
	queues_and_cqmod(t, in, sq_meas, d, r);
out:
	free(v);
	free(sr);
	free(y);
	free(se);
	free(w);
	free(fit);
	free(xs);
	free(xi);
	free(yt);
	free(wt);
	free(bser);
	free(bdraw);
	return rc;
}
