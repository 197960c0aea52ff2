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

/* d2(n): expected range of n standard normal draws, to turn the min..max of the repetitions into a sigma. */
static double d2(uint32_t n)
{
	static const double tab[] = { 0,     0,	    1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078,
				      3.173, 3.258, 3.336, 3.407, 3.472, 3.532, 3.588, 3.640, 3.689, 3.735 };

	return n < sizeof(tab) / sizeof(tab[0]) ? tab[n] : 2 * sqrt(2 * log((double)n)) * 0.93;
}

struct series {
	size_t start, n; /* slice of the sorted point array */
	uint32_t nstar;	 /* smallest N within tolerance of the fitted best */
	double best, at; /* fitted best rate and the fitted rate at nstar */
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

/* Smallest N of a series whose fitted rate is within tol of the fitted best; fit written to fit[0..n). */
static int series_knee(const double *y, const double *w, const uint32_t *nn, size_t n, double tol, double *fit,
		       struct series *s)
{
	int rc = rt_tuner_isotonic(y, w, n, true, fit);

	if (rc)
		return rc;
	s->best = fit[n - 1];
	for (size_t i = 0; i < n; i++)
		if (fit[i] >= (1 - tol) * s->best) {
			s->nstar = nn[i];
			s->at = fit[i];
			break;
		}
	return 0;
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
	double *y = NULL, *se = NULL, *w = NULL, *fit = NULL, *yb = NULL, *xs = NULL;
	uint32_t *nn = NULL, *offs = NULL;
	size_t nv = 0, ns = 0, n_invalid = 0, n_used = 0, deciding = SIZE_MAX, B = o->n_boot, ok = 0;
	uint32_t batch = in->app[d->op][d->qpt].post_list_batch ? in->app[d->op][d->qpt].post_list_batch : 1;
	uint32_t sq_meas = in->limits.sq_depth, cap, nstar = 0, N;
	uint64_t enomem = 0;
	int rc = 0, nonmono = 0, multiknee = 0, assumed_noise = 0, few = 0, insufficient = 0;
	double rel_se_med = 0, stable = 0;
	enum rt_confidence conf;

	d->signal_confidence = RT_CONF_LOW;
	d->signal_interval = 1;
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
	if (!nv) {
		d->signal_measured = false;
		rt__reason(r, RT_R_NO_RATE_DATA, RT_TOPIC_SIGNAL, RT_SEV_WARN,
			   "no rate sweep for %s/%s: signal every WR (N = 1, always safe, slowest)",
			   rt_opcode_name(d->op), rt_qp_type_name(d->qpt));
		nstar = 1;
		goto decide;
	}
	d->signal_measured = true;

	/* ---- series: one per (size, inline), one point per N ---- */
	qsort(v, nv, sizeof(*v), cmp_rate);
	sr = calloc(nv, sizeof(*sr));
	y = malloc(nv * sizeof(*y));
	se = malloc(nv * sizeof(*se));
	w = malloc(nv * sizeof(*w));
	fit = malloc(nv * sizeof(*fit));
	yb = malloc(nv * sizeof(*yb));
	xs = malloc(nv * sizeof(*xs));
	nn = malloc(nv * sizeof(*nn));
	offs = malloc(nv * sizeof(*offs));
	if (!sr || !y || !se || !w || !fit || !yb || !xs || !nn || !offs) {
		rc = ENOMEM;
		goto out;
	}
	{
		size_t k = 0;
		double *rel = fit; /* scratch for the median relative se */

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
			nn[i] = p->signal_interval;
			xs[i] = log2((double)p->signal_interval);
			if (p->reps >= 2 && range > 0) {
				se[i] = 1.2533 * range / d2(p->reps) / sqrt((double)p->reps);
			} else {
				se[i] = o->tolerance / 4 *
					p->mops; /* no spread known: assume a quarter of the tolerance */
				assumed_noise = 1;
			}
			w[i] = 1 / (se[i] * se[i]);
			rel[i] = se[i] / p->mops;
			offs[i] = (uint32_t)rt_rng_next(&t->rng);
			if (!i || v[i - 1]->msg_bytes != p->msg_bytes || v[i - 1]->inl != p->inl)
				sr[ns++].start = i;
			sr[ns - 1].n++;
		}
		for (size_t i = 1; i < nv; i++) /* insertion sort is fine: a sweep has tens of points */
			for (size_t j = i; j > 0 && rel[j] < rel[j - 1]; j--) {
				double tmp = rel[j];

				rel[j] = rel[j - 1];
				rel[j - 1] = tmp;
			}
		rel_se_med = rel[nv / 2];
	}
	for (size_t s = 0; s < ns; s++)
		n_used = sr[s].n > n_used ? sr[s].n : n_used;
	few = n_used < 3;
	for (size_t s = 0; s < ns; s++) {
		struct series *q = &sr[s];

		if (q->n < 2 && n_used >= 2)
			continue; /* a single N says nothing about the knee */
		if ((rc = series_knee(y + q->start, w + q->start, nn + q->start, q->n, o->tolerance, fit + q->start,
				      q)))
			goto out;
		if (q->nstar > nstar || deciding == SIZE_MAX) {
			nstar = q->nstar > nstar ? q->nstar : nstar;
			deciding = s;
		}
		/* non-monotone: a later N significantly and materially below the series' best raw rate */
		{
			size_t m = q->start;

			for (size_t i = q->start; i < q->start + q->n; i++)
				if (y[i] > y[m])
					m = i;
			for (size_t i = m + 1; i < q->start + q->n; i++)
				if (y[i] < (1 - 2 * o->tolerance) * y[m] && y[i] + 2 * se[i] < y[m] - 2 * se[m])
					nonmono = 1;
		}
		{
			int nsig = 0;

			rt__knee_evidence(xs + q->start, fit + q->start, q->n, RT_KNEE_INCREASING,
					  o->tolerance * q->best, &nsig);
			multiknee |= nsig > 1; /* the rate rises in more than one step */
		}
	}
	{
		const struct series *q = &sr[deciding];
		int nsig = 0;
		size_t kb = rt__knee_evidence(xs + q->start, fit + q->start, q->n, RT_KNEE_INCREASING,
					      o->tolerance * q->best, &nsig);

		if (kb != SIZE_MAX)
			d->signal_kneedle = nn[q->start + kb];
		d->mops_best = q->best;
		d->mops_at_n = q->at;
	}

	/* ---- stability: the rule again on replicates of the rates drawn within their noise ---- */
	for (size_t b = 0; b < B; b++) {
		uint32_t nb = 0;

		for (size_t i = 0; i < nv; i++)
			yb[i] = y[i] + se[i] * t->pool[(offs[i] + (uint32_t)b * 2654435761u) & (RT_POOL_SIZE - 1)];
		for (size_t s = 0; s < ns; s++) {
			struct series q = sr[s];

			if (q.n < 2 && n_used >= 2)
				continue;
			if ((rc = series_knee(yb + q.start, w + q.start, nn + q.start, q.n, o->tolerance, fit + q.start,
					      &q)))
				goto out;
			nb = q.nstar > nb ? q.nstar : nb;
		}
		nb = nb > cap ? cap : nb;
		nb = nb < batch ? batch : nb;
		{
			uint32_t ref = nstar > cap ? cap : nstar;
			double lr;

			ref = ref < batch ? batch : ref;
			lr = fabs(log2((double)nb / (double)ref));
			ok += lr <= 1.0 + 1e-9;
		}
	}
	stable = (double)ok / (double)B;
	d->signal_stability = stable;

decide:
	N = nstar;
	if (N > cap) {
		rt__reason(
			r, RT_R_SIGNAL_CAPPED_BY_SQ, RT_TOPIC_SIGNAL, RT_SEV_INFO,
			"the rate knee is at N = %u, above sq_depth/%u = %u: capped to %u so a signaled WR completes "
			"well before the send queue can fill",
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
		const struct rt_rate_point *p1 = v[q->start], *pn = NULL;

		for (size_t i = q->start; i < q->start + q->n; i++)
			if (v[i]->signal_interval == nstar)
				pn = v[i];
		rt__reason(r, RT_R_SIGNAL_INTERVAL, RT_TOPIC_SIGNAL, RT_SEV_INFO,
			   "signal 1 WR in %u: the smallest N whose rate (isotonic fit) is within %.1f%% of the best: "
			   "%.3f vs %.3f Mops at %u B %s (the series needing the largest N of %zu); CPU %.1f ns/msg "
			   "at N = %u vs %.1f at N = %u",
			   nstar, 100 * o->tolerance, q->at, q->best, p1->msg_bytes, p1->inl ? "inline" : "non-inline",
			   ns, pn ? pn->cpu_ns_per_msg : 0, nstar, p1->cpu_ns_per_msg, p1->signal_interval);
		if (d->signal_kneedle)
			rt__reason(r, RT_R_KNEEDLE_KNEE, RT_TOPIC_SIGNAL, RT_SEV_INFO,
				   "Kneedle (concave, increasing, on log2 N) puts the knee of the rate at N = %u "
				   "(evidence only: the tolerance rule decides)",
				   d->signal_kneedle);
		if (multiknee)
			rt__reason(r, RT_R_MULTI_KNEE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "the rate vs N curve has more than one knee (Kneedle)");
		if (nonmono)
			rt__reason(
				r, RT_R_NON_MONOTONE, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"the rate drops at larger N beyond its noise (more than %.1f%%): the isotonic fit pools "
				"it, check CQ/queue sizing",
				200 * o->tolerance);
		if (few)
			rt__reason(r, RT_R_TOO_FEW_POINTS, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				   "only %zu N value(s) per series (need 3 for a knee): low confidence", n_used);
		if (stable < 0.5 || rel_se_med > o->tolerance / 2) {
			double factor = pow(rel_se_med / (o->tolerance / 4), 2), secs = 0;

			insufficient = 1;
			factor = factor < 2 ? 2 : factor;
			for (size_t i = 0; i < nv; i++)
				if (v[i]->reps && v[i]->mops > 0)
					secs += (factor - 1) * (double)v[i]->msgs / (v[i]->mops * 1e6);
			if (d->budget_needed_s < secs)
				d->budget_needed_s = secs;
			rt__reason(
				r, RT_R_INSUFFICIENT_DATA, RT_TOPIC_SIGNAL, RT_SEV_WARN,
				"rate noise too high for a %.1f%% tolerance: median standard error %.2f%%, %.0f%% of "
				"bootstrap replicates agree within a factor of 2; about %.0fx the repetitions "
				"(~%.1f s more measuring) would be needed",
				100 * o->tolerance, 100 * rel_se_med, 100 * stable, ceil(factor), secs);
		}
	}
	conf = d->signal_measured ? rt__conf_from_stability(stable) : RT_CONF_LOW;
	if (few || insufficient)
		conf = RT_CONF_LOW;
	if (nonmono || multiknee || enomem || n_invalid || assumed_noise)
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
	free(yb);
	free(xs);
	free(nn);
	free(offs);
	return rc;
}
