// SPDX-License-Identifier: MIT
/*
 * The latency point scheduler (see rt_sched.h): rounds of batches over the active inline/non-inline pairs in seeded
 * random order, the stopping rule per pair, refinement where the inline advantage ends, and the deadline.
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

void rt_sched_init(struct rt_sched *s, const struct rt_stop_rule *rule, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->rule = *rule;
	rt_rng_seed(&s->rng, seed);
	s->first_batch = 16;
	s->batch = 32;
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
	p->samples = malloc((s->rule.max_samples ? s->rule.max_samples : 1) * sizeof(double));
	if (!p->samples)
		return ENOMEM;
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

static void resummarize(struct rt_sched *s, struct rt_sched_point *p, double *scratch)
{
	memcpy(scratch, p->samples, p->n * sizeof(double));
	rt_stats_summarize(scratch, p->n, s->rule.level, &p->sum);
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

int rt_sched_run(struct rt_sched *s, uint64_t deadline_ns, rt_sched_measure_fn measure, rt_sched_clock_fn clock,
		 rt_sched_progress_fn progress, void *ctx)
{
	uint64_t t_start = clock(ctx);
	size_t *order = NULL;
	double *scratch = malloc((s->rule.max_samples ? s->rule.max_samples : 1) * sizeof(double));
	int rc = 0;

	if (!scratch)
		return ENOMEM;
	for (;;) {
		size_t n_act = 0, n_done = 0;

		free(order);
		order = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof(*order));
		if (!order) {
			rc = ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < s->n_pairs; i++)
			if (s->pairs[i].state == RT_STOP_CONTINUE)
				order[n_act++] = i;
		/* refine once the grid has had two rounds, or earlier when it is already settled */
		if (s->refine && !s->refine_done && (s->rounds >= 2 || n_act == 0) && s->rounds > 0) {
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
		/* Fisher-Yates with the seeded generator */
		for (size_t i = n_act; i > 1; i--) {
			size_t j = (size_t)rt_rng_below(&s->rng, i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (size_t k = 0; k < n_act; k++) {
			struct rt_sched_pair *pr = &s->pairs[order[k]];
			bool inl_first = rt_rng_next(&s->rng) & 1;
			uint64_t now = clock(ctx);

			/* round 0 completes (so every planned point has samples) unless even the hard deadline passes */
			if (((s->rounds > 0 || pr->batches > 0) && now >= deadline_ns) || now >= s->hard_deadline_ns) {
				s->deadline_hit = true;
				goto out;
			}
			for (int side = 0; side < 2; side++) {
				bool want_inl = (side == 0) == inl_first;
				struct rt_sched_point *p = &s->pts[want_inl ? pr->inl : pr->non];
				size_t m = pr->batches ? s->batch : s->first_batch;

				if (p->n + m > s->rule.max_samples)
					m = s->rule.max_samples - p->n;
				if (m == 0)
					continue;
				rc = measure(ctx, &p->cell, m, p->samples + p->n, &p->cpu_ns);
				if (rc)
					goto out;
				p->n += m;
				resummarize(s, p, scratch);
			}
			pr->batches++;
			pr->state = rt_stop_pair(&s->rule, &s->pts[pr->inl].sum, &s->pts[pr->non].sum);
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
	for (size_t i = 0; i < s->n_pts; i++)
		free(s->pts[i].samples);
	free(s->pts);
	free(s->pairs);
	s->pts = NULL;
	s->pairs = NULL;
	s->n_pts = s->n_pairs = 0;
}
