// SPDX-License-Identifier: MIT
/*
 * The latency point scheduler (see rt_sched.h): rounds of visits over the active inline/non-inline pairs in seeded
 * random order, each visit alternating small inline and non-inline blocks, the block-widened CI and the stationarity
 * test per point, the stopping rule and its gates per pair (two rounds apart, stationary, enough blocks), the
 * re-measurement of isolated verdicts, refinement where the inline advantage ends, and the deadline.
 */
#include "rt_sched.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t rt_sched_pow2_sizes(uint32_t max_bytes, uint32_t *out, size_t cap)
{
	size_t n = 0;

	for (uint64_t s = 1; s <= max_bytes && n < cap; s <<= 1)
		out[n++] = (uint32_t)s;
	return n;
}

size_t rt_sched_default_sizes(uint32_t max_bytes, uint32_t *out, size_t cap)
{
	size_t n = rt_sched_pow2_sizes(max_bytes, out, cap);
	uint32_t last = n ? out[n - 1] : 0, mid = last + (max_bytes - last) / 2;

	if (!n || last == max_bytes)
		return n;
	if (mid > last && mid < max_bytes && n < cap)
		out[n++] = mid;
	if (n < cap)
		out[n++] = max_bytes;
	return n;
}

size_t rt_sched_refine_sizes(uint32_t lo, uint32_t hi, uint32_t *out, size_t cap)
{
	size_t n = 0;

	if (hi <= lo + 1)
		return 0;
	for (unsigned q = 1; q <= 3 && n < cap; q++) {
		uint32_t v = lo + (uint32_t)(((uint64_t)(hi - lo) * q + 2) / 4);

		if (v <= lo || v >= hi || (n && out[n - 1] == v))
			continue;
		out[n++] = v;
	}
	return n;
}

static bool sig_faster(const struct rt_summary *a, const struct rt_summary *b)
{
	return a->n && b->n && a->ci_hi < b->ci_lo;
}

long rt_sched_inline_end(const struct rt_summary *inl, const struct rt_summary *non, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (sig_faster(&inl[i], &non[i]) && !sig_faster(&inl[i + 1], &non[i + 1]))
			return (long)i;
	for (size_t i = 0; i + 1 < n; i++)
		if (!sig_faster(&non[i], &inl[i]) && sig_faster(&non[i + 1], &inl[i + 1]))
			return (long)i;
	return -1;
}

int rt_sched_sign(const struct rt_summary *inl, const struct rt_summary *non)
{
	return sig_faster(inl, non) ? 1 : sig_faster(non, inl) ? -1 : 0;
}

bool rt_sched_isolated(const int *sign, size_t n, size_t i)
{
	bool left = i > 0, right = i + 1 < n;

	if (i >= n || sign[i] == 0 || (!left && !right))
		return false;
	return (!left || sign[i - 1] == -sign[i]) && (!right || sign[i + 1] == -sign[i]);
}

size_t rt_sched_n_remeasured(const struct rt_sched *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n_pairs; i++)
		k += s->pairs[i].remeasured > 0;
	return k;
}

void rt_sched_init(struct rt_sched *s, const struct rt_stop_rule *rule, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->rule = *rule;
	rt_rng_seed(&s->rng, seed);
	s->first_batch = 16;
	s->batch = 32;
	s->block = 16;
	s->min_visit_blocks = 2;
	s->min_rounds = 2;
	s->min_span_ns = 0;
	s->min_blocks = 4;
	s->remeasure_visits = 2;
	s->max_remeasure = 1;
	s->refine = true;
	s->max_refine_bytes = UINT32_MAX;
	s->hard_deadline_ns = UINT64_MAX;
}

static int add_point(struct rt_sched *s, const struct rt_sched_cell *c, bool refined, size_t *idx)
{
	struct rt_sched_point *p;

	if (s->n_pts == s->cap_pts) {
		size_t nc = s->cap_pts ? s->cap_pts * 2 : 32;
		struct rt_sched_point *np = realloc(s->pts, nc * sizeof(*np));

		if (!np)
			return ENOMEM;
		s->pts = np;
		s->cap_pts = nc;
	}
	p = &s->pts[s->n_pts];
	memset(p, 0, sizeof(*p));
	p->cell = *c;
	p->refined = refined;
	p->stationary = true;
	p->samples = malloc((s->rule.max_samples ? s->rule.max_samples : 1) * sizeof(double));
	p->sorted = malloc((s->rule.max_samples ? s->rule.max_samples : 1) * sizeof(double));
	if (!p->samples || !p->sorted) {
		free(p->samples);
		free(p->sorted);
		return ENOMEM;
	}
	rt_stats_summarize(p->samples, 0, s->rule.level, &p->sum);
	*idx = s->n_pts++;
	return 0;
}

int rt_sched_add_pair(struct rt_sched *s, enum rt_opcode op, enum rt_qp_type qpt, enum rt_lat_kind kind,
		      uint32_t msg_bytes, bool refined)
{
	struct rt_sched_cell c = { .op = op, .qpt = qpt, .kind = kind, .msg_bytes = msg_bytes, .inl = true };
	struct rt_sched_pair *pr;
	size_t a, b;
	int rc;

	if (s->n_pairs == s->cap_pairs) {
		size_t nc = s->cap_pairs ? s->cap_pairs * 2 : 16;
		struct rt_sched_pair *np = realloc(s->pairs, nc * sizeof(*np));

		if (!np)
			return ENOMEM;
		s->pairs = np;
		s->cap_pairs = nc;
	}
	rc = add_point(s, &c, refined, &a);
	if (rc)
		return rc;
	c.inl = false;
	rc = add_point(s, &c, refined, &b);
	if (rc)
		return rc;
	pr = &s->pairs[s->n_pairs++];
	memset(pr, 0, sizeof(*pr));
	pr->inl = a;
	pr->non = b;
	pr->state = RT_STOP_CONTINUE;
	return 0;
}

/* Appends the median of the block samples[0..m) to p's block medians. Returns 0 or ENOMEM. */
static int add_block(struct rt_sched_point *p, const double *samples, size_t m, double *scratch)
{
	if (p->n_blk == p->cap_blk) {
		size_t nc = p->cap_blk ? p->cap_blk * 2 : 32;
		double *nb = realloc(p->blk_med, nc * sizeof(*nb));

		if (!nb)
			return ENOMEM;
		p->blk_med = nb;
		p->cap_blk = nc;
	}
	p->blk_med[p->n_blk++] = rt_stats_median_copy(samples, m, scratch);
	return 0;
}

/*
 * Summary of p's samples (the samples since the last summary, from n_old on, merged into the sorted copy), its CI
 * widened by the spread of its block medians, and its stationarity.
 */
static void resummarize(struct rt_sched *s, struct rt_sched_point *p, size_t n_old, double *scratch)
{
	double floor_ns;

	memcpy(scratch, p->samples + n_old, (p->n - n_old) * sizeof(double));
	rt_stats_merge_sorted(p->sorted, n_old, scratch, p->n - n_old);
	rt_stats_summarize_sorted(p->sorted, p->n, s->rule.level, &p->sum);
	rt_stats_block_ci(&p->sum, p->blk_med, p->n_blk, s->rule.level, scratch);
	floor_ns = s->rule.rel_tight / 2 * p->sum.median;
	if (!(floor_ns > s->rule.abs_floor_ns))
		floor_ns = s->rule.abs_floor_ns;
	p->stationary = rt_stats_stationary(p->blk_med, p->n_blk, s->rule.level, floor_ns, NULL, scratch);
}

/* The stopping rule of a pair with its gates: two rounds apart, enough blocks, stationary, no re-measure owed. */
static enum rt_stop pair_state(const struct rt_sched *s, const struct rt_sched_pair *pr, uint64_t now)
{
	const struct rt_sched_point *a = &s->pts[pr->inl], *b = &s->pts[pr->non];
	enum rt_stop st = rt_stop_pair(&s->rule, &a->sum, &b->sum);

	if (a->n >= s->rule.max_samples && b->n >= s->rule.max_samples)
		return RT_STOP_CAPPED; /* nothing more can be measured */
	if (st == RT_STOP_CONTINUE || st == RT_STOP_CAPPED)
		return st;
	if (pr->rounds < s->min_rounds || now - pr->t_first < s->min_span_ns || pr->need_visits > 0)
		return RT_STOP_CONTINUE;
	if (a->n_blk < s->min_blocks || b->n_blk < s->min_blocks || !a->stationary || !b->stationary)
		return RT_STOP_CONTINUE;
	return st;
}

/* Adds refinement pairs for every (op, qpt, kind) group whose curve shows where the inline advantage ends. */
static int refine(struct rt_sched *s)
{
	size_t n0 = s->n_pairs;

	for (int op = 0; op < RT_OP__COUNT; op++)
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++)
			for (int kind = 0; kind < RT_LAT__COUNT; kind++) {
				struct rt_summary inl[64], non[64];
				uint32_t sizes[64], ref[4];
				size_t n = 0, nr;
				long end;

				if (s->refined_groups[op][qpt][kind])
					continue;
				/* the group's pairs are added in ascending size order by the planner */
				for (size_t i = 0; i < n0 && n < 64; i++) {
					const struct rt_sched_cell *c = &s->pts[s->pairs[i].inl].cell;

					if ((int)c->op != op || (int)c->qpt != qpt || (int)c->kind != kind ||
					    s->pts[s->pairs[i].inl].refined)
						continue;
					sizes[n] = c->msg_bytes;
					inl[n] = s->pts[s->pairs[i].inl].sum;
					non[n] = s->pts[s->pairs[i].non].sum;
					n++;
				}
				if (n < 2)
					continue;
				s->refined_groups[op][qpt][kind] = true;
				end = rt_sched_inline_end(inl, non, n);
				if (end < 0)
					continue;
				nr = rt_sched_refine_sizes(sizes[end], sizes[end + 1], ref, 4);
				for (size_t k = 0; k < nr; k++) {
					int rc;

					if (ref[k] > s->max_refine_bytes)
						continue;
					rc = rt_sched_add_pair(s, (enum rt_opcode)op, (enum rt_qp_type)qpt,
							       (enum rt_lat_kind)kind, ref[k], true);
					if (rc)
						return rc;
				}
			}
	return 0;
}

static int cmp_pair_size(const void *x, const void *y, void *ctx)
{
	const struct rt_sched *s = ctx;
	uint32_t a = s->pts[s->pairs[*(const size_t *)x].inl].cell.msg_bytes;
	uint32_t b = s->pts[s->pairs[*(const size_t *)y].inl].cell.msg_bytes;

	return (a > b) - (a < b);
}

/*
 * Flags, in every (op, qpt, kind) curve sorted by size, the stopped pairs whose verdict is isolated (rt_sched_isolated)
 * and that may still be re-measured: they become active again and owe remeasure_visits visits. Returns how many were
 * flagged, or -ENOMEM.
 */
static long flag_isolated(struct rt_sched *s)
{
	size_t *idx = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof(*idx));
	int *sign = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof(*sign));
	long flagged = 0;

	if (!idx || !sign) {
		free(idx);
		free(sign);
		return -ENOMEM;
	}
	for (int op = 0; op < RT_OP__COUNT; op++)
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++)
			for (int kind = 0; kind < RT_LAT__COUNT; kind++) {
				size_t n = 0;

				for (size_t i = 0; i < s->n_pairs; i++) {
					const struct rt_sched_point *a = &s->pts[s->pairs[i].inl];

					if ((int)a->cell.op == op && (int)a->cell.qpt == qpt &&
					    (int)a->cell.kind == kind && a->n && s->pts[s->pairs[i].non].n)
						idx[n++] = i;
				}
				qsort_r(idx, n, sizeof(*idx), cmp_pair_size, s);
				for (size_t k = 0; k < n; k++)
					sign[k] = rt_sched_sign(&s->pts[s->pairs[idx[k]].inl].sum,
								&s->pts[s->pairs[idx[k]].non].sum);
				for (size_t k = 0; k < n; k++) {
					struct rt_sched_pair *pr = &s->pairs[idx[k]];

					if (pr->state == RT_STOP_CONTINUE || pr->state == RT_STOP_CAPPED ||
					    pr->remeasured >= s->max_remeasure || !rt_sched_isolated(sign, n, k))
						continue;
					pr->state = RT_STOP_CONTINUE;
					pr->need_visits = s->remeasure_visits;
					pr->remeasured++;
					pr->sign_before = sign[k];
					pr->why = RT_SCHED_WHY_ISOLATED;
					flagged++;
				}
			}
	free(idx);
	free(sign);
	return flagged;
}

/* Whether every active planned (not refined) point has 2 * min_blocks blocks: its CI has settled somewhat. */
static bool grid_has_blocks(const struct rt_sched *s)
{
	for (size_t i = 0; i < s->n_pairs; i++) {
		const struct rt_sched_pair *pr = &s->pairs[i];

		if (pr->state != RT_STOP_CONTINUE || s->pts[pr->inl].refined)
			continue;
		if (s->pts[pr->inl].n_blk < 2 * s->min_blocks || s->pts[pr->non].n_blk < 2 * s->min_blocks)
			return false;
	}
	return true;
}

/* Shuffles v[0..n) with the seeded generator (Fisher-Yates). */
static void shuffle(struct rt_rng *rng, size_t *v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rt_rng_below(rng, i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

/*
 * One visit of a pair: m samples per side (trimmed at max_samples) in alternating blocks of s->block (at most
 * m / min_visit_blocks, at least 4), the seeded side first. Every block's samples and median are kept even when a later block fails. Returns 0 or measure's error.
 */
static int visit(struct rt_sched *s, struct rt_sched_pair *pr, rt_sched_measure_fn measure, void *ctx, double *scratch)
{
	struct rt_sched_point *p[2] = { &s->pts[pr->inl], &s->pts[pr->non] };
	size_t m = pr->batches ? s->batch : s->first_batch, rem[2], blk = s->block ? s->block : m;
	int side = (int)(rt_rng_next(&s->rng) & 1), rc = 0;
	size_t n_old[2] = { p[0]->n, p[1]->n };
	bool got[2] = { false, false };

	/* at least min_visit_blocks blocks per side and visit (of 4 samples or more), so that even one visit alternates */
	if (s->min_visit_blocks > 1 && blk * s->min_visit_blocks > m) {
		blk = m / s->min_visit_blocks;
		if (blk < 4)
			blk = 4;
	}
	for (int k = 0; k < 2; k++)
		rem[k] = p[k]->n + m > s->rule.max_samples ? s->rule.max_samples - p[k]->n : m;
	while (rem[0] || rem[1]) {
		struct rt_sched_point *q;
		size_t b;

		if (!rem[side])
			side ^= 1;
		q = p[side];
		b = rem[side] < blk ? rem[side] : blk;
		rc = measure(ctx, &q->cell, b, q->samples + q->n, &q->cpu_ns);
		if (rc)
			break;
		rc = add_block(q, q->samples + q->n, b, scratch);
		if (rc)
			break;
		q->n += b;
		rem[side] -= b;
		got[side] = true;
		side ^= 1;
	}
	for (int k = 0; k < 2; k++)
		if (got[k]) {
			resummarize(s, p[k], n_old[k], scratch);
			p[k]->rounds++;
		}
	return rc;
}

int rt_sched_run(struct rt_sched *s, uint64_t deadline_ns, rt_sched_measure_fn measure, rt_sched_clock_fn clock,
		 rt_sched_progress_fn progress, void *ctx)
{
	uint64_t t_start = clock(ctx);
	size_t *order = NULL, n_scratch = 2 * (s->rule.max_samples ? s->rule.max_samples : 1) + 2;
	double *scratch = malloc(n_scratch * sizeof(double));
	int rc = 0;

	if (!scratch)
		return ENOMEM;
	for (;;) {
		size_t n_act = 0, n_owed = 0, n_done = 0;
		long fl;

		/* verdicts that disagree with both neighbours are measured again before the run can end */
		if (s->rounds > 0) {
			fl = flag_isolated(s);
			if (fl < 0) {
				rc = ENOMEM;
				goto out;
			}
		}
		free(order);
		order = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof(*order));
		if (!order) {
			rc = ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < s->n_pairs; i++)
			if (s->pairs[i].state == RT_STOP_CONTINUE)
				order[n_act++] = i;
		/* refine once the grid has had two rounds and enough blocks for its CIs, or earlier when it is settled */
		if (s->refine && !s->refine_done && (n_act == 0 || (s->rounds >= 2 && grid_has_blocks(s))) &&
		    s->rounds > 0) {
			size_t before = s->n_pairs;

			s->refine_done = true;
			rc = refine(s);
			if (rc)
				goto out;
			if (s->n_pairs > before) {
				size_t *no = realloc(order, s->n_pairs * sizeof(*order));

				if (!no) {
					rc = ENOMEM;
					goto out;
				}
				order = no;
				for (size_t i = before; i < s->n_pairs; i++)
					order[n_act++] = i;
			}
		}
		if (n_act == 0)
			break;
		/* pairs owing a re-measurement first (so the deadline does not cut them), each part in seeded order */
		for (size_t i = 0; i < n_act; i++)
			if (s->pairs[order[i]].need_visits > 0) {
				size_t t = order[n_owed];

				order[n_owed++] = order[i];
				order[i] = t;
			}
		shuffle(&s->rng, order, n_owed);
		shuffle(&s->rng, order + n_owed, n_act - n_owed);
		for (size_t k = 0; k < n_act; k++) {
			struct rt_sched_pair *pr = &s->pairs[order[k]];
			uint64_t now = clock(ctx);

			/* round 0 completes (so every planned point has samples) unless even the hard deadline passes */
			if (((s->rounds > 0 || pr->batches > 0) && now >= deadline_ns) || now >= s->hard_deadline_ns) {
				s->deadline_hit = true;
				goto out;
			}
			if (!pr->batches)
				pr->t_first = now;
			rc = visit(s, pr, measure, ctx, scratch);
			if (rc)
				goto out;
			pr->batches++;
			pr->rounds++;
			if (pr->need_visits)
				pr->need_visits--;
			pr->t_last = clock(ctx);
			pr->state = pair_state(s, pr, pr->t_last);
			if (progress) {
				double tf, pf, el = (double)(clock(ctx) - t_start),
					       span = (double)(deadline_ns - t_start);

				n_done = 0;
				for (size_t i = 0; i < s->n_pairs; i++)
					n_done += s->pairs[i].state != RT_STOP_CONTINUE;
				tf = span > 0 ? el / span : 1;
				pf = s->n_pairs ? (double)n_done / (double)s->n_pairs : 1;
				progress(ctx, fmin(1, fmax(tf, pf)), fmax(0, (span - el) / 1e9));
			}
		}
		s->rounds++;
	}
out:
	free(order);
	free(scratch);
	return rc;
}

void rt_sched_free(struct rt_sched *s)
{
	for (size_t i = 0; i < s->n_pts; i++) {
		free(s->pts[i].samples);
		free(s->pts[i].sorted);
		free(s->pts[i].blk_med);
	}
	free(s->pts);
	free(s->pairs);
	s->pts = NULL;
	s->pairs = NULL;
	s->n_pts = s->n_pairs = 0;
}
