// SPDX-License-Identifier: MIT
/*
 * The adaptive inline threshold (rt_inline_ctl, include/rtune/profile.h, docs/controller.md): a small, bounded,
 * hysteretic controller in the manner of Linux's DIM (lib/dim): it decides once per round of a fixed number of
 * samples, moves one band at a time and only on a difference above significance_pct, goes back (and leaves that
 * direction alone for a while) when the band it crossed turns out worse, and parks when stable. Pure arithmetic on
 * the caller's timings: no clock, no verbs, no lock, no allocation after create; no division by a measured value
 * (significance is tested by multiplication).
 */
#include "ctl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt_hist.h"

/* Smallest and largest size of band k of the shared buckets (common/rt_hist.h), k < RT_HIST_BUCKETS. */
static uint32_t band_lo(unsigned k)
{
	unsigned e, sub;

	if (k < RT_HIST_SUB)
		return k;
	e = RT_HIST_SUB_BITS + (k - RT_HIST_SUB) / RT_HIST_SUB;
	sub = (k - RT_HIST_SUB) % RT_HIST_SUB;
	return (1u << e) + sub * (1u << (e - RT_HIST_SUB_BITS));
}

static uint32_t band_hi(unsigned k)
{
	unsigned e;

	if (k < RT_HIST_SUB)
		return k;
	e = RT_HIST_SUB_BITS + (k - RT_HIST_SUB) / RT_HIST_SUB;
	return band_lo(k) + (1u << (e - RT_HIST_SUB_BITS)) - 1u;
}

void rt_inline_ctl_params_init(struct rt_inline_ctl_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sample_every = 4;
	p->round_samples = 8;
	p->significance_pct = 10;
	p->park_after_rounds = 3;
}

/*
 * Watched sends until the next sample: uniform in 1..2 * every - 1 (mean every), from a seeded xorshift, so that a
 * periodic size pattern (sizes a and b alternating, every even) cannot make every sample land on the same band.
 */
static uint32_t next_countdown(struct rt_inline_ctl *c)
{
	uint32_t x = c->rng;

	if (c->every <= 1)
		return 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->rng = x;
	return 1u + x % (2u * c->every - 1u);
}

/* Arms the next sample. */
static void arm(struct rt_inline_ctl *c)
{
	c->armed = next_countdown(c);
	c->hot.countdown = c->armed;
}

/* Watched sends so far: those counted down at past picks and those of the current countdown. */
static uint64_t watched_now(const struct rt_inline_ctl *c)
{
	return c->st.watched + c->armed - c->hot.countdown;
}

static void clear_round(struct rt_inline_ctl *c)
{
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < 2; k++)
			c->cell[s][k].n = 0;
	c->round_picks = 0;
	c->cand[0] = c->cand[1] = 0;
	c->outside_looks = 0;
	c->round_win0 = watched_now(c);
	for (int k = 0; k < 2; k++) {
		c->seen_prev[k] = c->seen[k];
		c->seen[k] = false;
	}
}

/*
 * The mean sends outside the bands between two looks: RT_CTL_LOOK_BASE * every while frequent, doubled per look that
 * changed nothing (look_shift), never more than RT_CTL_LOOK_MAX (or the frequent period, if that is larger).
 */
static uint32_t look_mean(const struct rt_inline_ctl *c)
{
	uint64_t base = (uint64_t)RT_CTL_LOOK_BASE * c->every, m = base << c->look_shift;

	if (m > RT_CTL_LOOK_MAX)
		m = base > RT_CTL_LOOK_MAX ? base : RT_CTL_LOOK_MAX;
	return (uint32_t)m;
}

/* Looks outside the bands until the next one: uniform in 1..2 * look_mean - 1, never 0. */
static uint32_t next_outside(struct rt_inline_ctl *c)
{
	uint32_t x = c->rng_out; /* its own stream: the looks outside do not shift the samples' jitter */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->rng_out = x;
	return 1u + x % (2u * look_mean(c) - 1u);
}

/* Back to frequent looks (the traffic or the bands changed): the next look comes within the frequent period. */
static void looks_frequent(struct rt_inline_ctl *c)
{
	uint32_t n;

	c->look_shift = 0;
	n = next_outside(c);
	if (n < c->hot.outside || !c->hot.outside)
		c->hot.outside = n;
}

/* The hot window: from the lower watched band to the upper one (the gap between them, if any, included). */
static void set_window(struct rt_inline_ctl *c)
{
	uint32_t lo, hi;

	if (c->has_below || c->has_above) {
		lo = c->has_below ? c->below_lo : c->above_lo;
		hi = c->has_above ? c->above_hi : c->below_hi;
		c->hot.watch_lo = lo;
		c->hot.watch_span = hi - lo;
	} else {
		/* nothing to learn (the bounds pin the threshold): a window no 32-bit size but the largest enters */
		c->hot.watch_lo = UINT32_MAX;
		c->hot.watch_span = 0;
	}
}

/* Watches the band of size b (lo_bound < b <= threshold) below the threshold: a move down just uncovers it. */
static void target_below(struct rt_inline_ctl *c, uint32_t b)
{
	unsigned k = rt_hist_bucket(b);
	uint32_t t = c->st.threshold_bytes;

	c->below_lo = band_lo(k);
	c->below_hi = band_hi(k) < t ? band_hi(k) : t;
	c->down_to = c->below_lo > c->lo_bound ? c->below_lo - 1u : c->lo_bound;
}

/* Watches the band of size b (threshold < b <= hi_bound) above the threshold: a move up just covers it. */
static void target_above(struct rt_inline_ctl *c, uint32_t b)
{
	unsigned k = rt_hist_bucket(b);
	uint32_t t = c->st.threshold_bytes;

	c->above_lo = band_lo(k) > t ? band_lo(k) : t + 1u;
	c->above_hi = band_hi(k);
	c->up_to = c->above_hi < c->hi_bound ? c->above_hi : c->hi_bound;
}

/* Places the threshold at t (within the bounds) and the watched bands around it; starts a new round. */
static void set_threshold(struct rt_inline_ctl *c, uint32_t t)
{
	c->st.threshold_bytes = t;
	c->hot.limit_excl = t ? t + 1u : 0u;
	c->has_below = t > c->lo_bound; /* t >= 1 */
	c->has_above = t < c->hi_bound;
	c->quiet[0] = c->quiet[1] = false;
	/*
	 * Until traffic says otherwise, the adjacent bands. A threshold on a band edge (every one after a move) has whole
	 * bands either side. A start inside a band (the profile's own value) takes the part of its band on each side, and
	 * the neighbouring band too where that part is less than half a band, so that a watched band never holds only a
	 * size or two.
	 */
	if (c->has_below) {
		unsigned k = rt_hist_bucket(t);

		if (k > 0 && 2u * (t - band_lo(k) + 1u) < band_hi(k) - band_lo(k) + 1u)
			k--;
		c->below_lo = band_lo(k);
		c->below_hi = t;
		c->down_to = c->below_lo > c->lo_bound ? c->below_lo - 1u : c->lo_bound;
	} else {
		c->below_lo = c->below_hi = 0;
	}
	if (c->has_above) {
		unsigned k = rt_hist_bucket(t + 1u);

		if (k + 1u < RT_HIST_BUCKETS && 2u * (band_hi(k) - t) < band_hi(k) - band_lo(k) + 1u)
			k++;
		c->above_lo = t + 1u;
		c->above_hi = band_hi(k);
		c->up_to = c->above_hi < c->hi_bound ? c->above_hi : c->hi_bound;
	} else {
		c->above_lo = c->above_hi = 0;
	}
	set_window(c);
	arm(c);
	clear_round(c);
	c->seen_prev[0] = c->seen_prev[1] = false; /* new bands: no traffic known in them yet */
	looks_frequent(c);
}

/*
 * Notes b (a size sent in no watched band) as the nearest one seen this round on its side, if it is: largest below
 * the threshold (and above lo_bound: nothing below that can be uncovered), smallest above it (and within hi_bound:
 * nothing above that can be inline).
 */
static void note_size(struct rt_inline_ctl *c, uint32_t b)
{
	if (b < c->hot.limit_excl) {
		if (c->has_below && b > c->lo_bound && b > c->cand[0])
			c->cand[0] = b;
	} else if (c->has_above && b <= c->hi_bound && (!c->cand[1] || b < c->cand[1])) {
		c->cand[1] = b;
	}
}

/*
 * At a round's end, before its verdict is used: a side whose band lies beyond a size seen this round (that size is
 * nearer the threshold) or that had no traffic (no sample and no pick) while a size was seen beyond it watches that
 * size's band instead; a side with no sample and nothing seen is quiet (a round no longer waits for it) until a sample
 * comes. A band with picks but no sample keeps its place: its sends could not be timed (the probe's picks on WRs the
 * application did not signal) or their samples are still on their way, and a farther size would not tell more about
 * the threshold (moving there and back each round also kept the looks outside the bands frequent). Returns the sides
 * whose band changed, as bits 1 << side (the round's verdict on such a side is void).
 */
static unsigned retarget(struct rt_inline_ctl *c, const bool full[2])
{
	unsigned changed = 0;

	for (unsigned s = 0; s < 2; s++) {
		bool has = s ? c->has_above : c->has_below, empty, nearer;
		uint32_t b = c->cand[s];

		if (!has)
			continue;
		empty = c->cell[s][0].n + c->cell[s][1].n == 0;
		nearer = b && (s ? b < c->above_lo : b > c->below_hi);
		if (nearer || (b && empty && !full[s] && !c->seen[s])) {
			if (s)
				target_above(c, b);
			else
				target_below(c, b);
			c->quiet[s] = false;
			c->seen[s] = c->seen_prev[s] = false; /* a new band: its traffic is not known yet */
			changed |= 1u << s;
		} else if (empty) {
			c->quiet[s] = true;
		}
	}
	if (changed)
		set_window(c);
	return changed;
}

int rt_inline_ctl_create(const struct rt_inline_ctl_params *p, rt_inline_ctl **out)
{
	struct rt_inline_ctl *c;
	uint32_t hi, t;

	if (!out)
		return EINVAL;
	*out = NULL;
	if (!p || p->sample_every < 1 || p->sample_every > 65536 || p->round_samples < 4 ||
	    p->round_samples > RT_CTL_MAX_ROUND || p->significance_pct < 1 || p->significance_pct > 100 ||
	    p->park_after_rounds < 1 || p->park_after_rounds > 1000 || p->min_bytes > p->max_bytes)
		return EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->p = *p;
	hi = p->max_bytes < p->granted_max_inline ? p->max_bytes : p->granted_max_inline;
	if (hi > RT_CTL_MAX_BYTES)
		hi = RT_CTL_MAX_BYTES;
	c->lo_bound = p->min_bytes < hi ? p->min_bytes : hi;
	c->hi_bound = hi;
	t = p->threshold_bytes < c->lo_bound ? c->lo_bound : p->threshold_bytes > hi ? hi : p->threshold_bytes;
	c->every = p->sample_every;
	c->rng = 0x9e3779b9u;
	c->rng_out = 0x85ebca6bu; /* fixed: a run is deterministic for a given sequence of sends and times */
	c->st.start_bytes = t;
	set_threshold(c, t); /* arms the first look outside too */
	*out = c;
	return 0;
}

void rt_inline_ctl_free(rt_inline_ctl *c)
{
	free(c);
}

static void decide(struct rt_inline_ctl *c);
static bool side_full(const struct rt_inline_ctl *c, unsigned side);

/* True when one watched band has no sample this round and the other has all of its samples. */
static bool one_side_idle(const struct rt_inline_ctl *c)
{
	bool empty0 = c->cell[0][0].n + c->cell[0][1].n == 0, empty1 = c->cell[1][0].n + c->cell[1][1].n == 0;

	return (c->has_below && empty0 && c->has_above && side_full(c, 1)) ||
	       (c->has_above && empty1 && c->has_below && side_full(c, 0));
}

unsigned rt_inline_ctl_pick(rt_inline_ctl *c, uint32_t msg_bytes)
{
	unsigned side, cur, other, k;
	bool other_ok;
	struct rt_ctl_cell *cell;

	c->st.watched += c->armed;
	arm(c);
	/*
	 * A band without traffic must not hold the other one's evidence forever: end the round after enough picks, soon
	 * when one band has had no sample at all while the other is complete (a start whose band holds no size sent).
	 */
	if (++c->round_picks >= RT_CTL_ROUND_TIMEOUT * 4u * c->p.round_samples ||
	    (c->round_picks >= RT_CTL_EMPTY_TIMEOUT * 4u * c->p.round_samples && one_side_idle(c)))
		decide(c);
	if (c->has_below && msg_bytes >= c->below_lo && msg_bytes <= c->below_hi) {
		side = 0;
	} else if (c->has_above && msg_bytes >= c->above_lo && msg_bytes <= c->above_hi) {
		side = 1;
	} else {
		note_size(c, msg_bytes); /* between a band and the threshold: nearer than the band */
		return msg_bytes < c->hot.limit_excl ? RT_INLINE_CTL_INLINE : 0u;
	}
	c->quiet[side] = false;
	c->seen[side] = true;
	cur = side == 0; /* below the threshold the current choice is inline */
	other = !cur;
	/* inline is never explored above the bounds (nor, so, above the granted max_inline_data) */
	other_ok = other == 0 || msg_bytes <= c->hi_bound;
	cell = c->cell[side];
	k = other_ok && cell[other].n < cell[cur].n ? other : cur;
	if (cell[k].n >= c->p.round_samples) {
		if (!other_ok || cell[other].n >= c->p.round_samples)
			return cur ? RT_INLINE_CTL_INLINE : 0u;
		k = other;
	}
	if (k != cur)
		c->st.explored++;
	return (k ? RT_INLINE_CTL_INLINE : 0u) | RT_INLINE_CTL_SAMPLE;
}

/*
 * True when side s has no watched band (no move that way) or its band carries traffic (a pick in it this round or the
 * last) or is quiet (a whole round found no traffic for it).
 */
static bool side_settled(const struct rt_inline_ctl *c, unsigned s)
{
	return !(s ? c->has_above : c->has_below) || c->seen[s] || c->seen_prev[s] || c->quiet[s];
}

/*
 * True when a look at b (outside the bands) is news: b is a size the threshold may cover or uncover on its side, and
 * nearer the threshold than that side's band, or that band has had no traffic (either re-targets the band at the
 * round's end).
 */
static bool look_is_news(const struct rt_inline_ctl *c, uint32_t b)
{
	if (b < c->hot.limit_excl)
		return c->has_below && b > c->lo_bound && (b > c->below_hi || !(c->seen[0] || c->seen_prev[0]));
	return c->has_above && b <= c->hi_bound && (b < c->above_lo || !(c->seen[1] || c->seen_prev[1]));
}

void rt_inline_ctl_outside(rt_inline_ctl *c, uint32_t msg_bytes)
{
	if (msg_bytes - c->hot.watch_lo <= c->hot.watch_span) {
		c->hot.outside = next_outside(c);
		return; /* a caller's stale view of the bands: this size is watched */
	}
	/*
	 * The rate of the looks: frequent while the controller is finding the traffic (news, a band without traffic that
	 * is not quiet), halved per look that changed nothing down to one in about RT_CTL_LOOK_MAX.
	 */
	if (look_is_news(c, msg_bytes) || !side_settled(c, 0) || !side_settled(c, 1))
		c->look_shift = 0;
	else if (look_mean(c) < RT_CTL_LOOK_MAX)
		c->look_shift++;
	c->hot.outside = next_outside(c);
	note_size(c, msg_bytes);
	/* no watched send at all this round (the application sends only sizes far from the threshold): end it now */
	if (++c->outside_looks >= RT_CTL_IDLE_LOOKS && watched_now(c) == c->round_win0)
		decide(c);
}

/* Median of a cell's samples (n >= 1; the upper one of the middle two for an even count). */
static uint64_t cell_median(const struct rt_ctl_cell *cell)
{
	uint64_t v[RT_CTL_MAX_ROUND];
	uint32_t n = cell->n;

	memcpy(v, cell->ns, n * sizeof(v[0]));
	for (uint32_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		uint32_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[n / 2];
}

/* True when a is smaller than b by more than pct % of b (no division: a and b are medians of real times). */
static bool significantly_less(uint64_t a, uint64_t b, uint32_t pct)
{
	if (a >= b)
		return false;
	/* times are capped at 2^40 ns on entry, so 100 * diff cannot overflow */
	return (b - a) * 100u > (uint64_t)pct * b;
}

static bool side_full(const struct rt_inline_ctl *c, unsigned side)
{
	return c->cell[side][0].n >= c->p.round_samples && c->cell[side][1].n >= c->p.round_samples;
}

static void record_move(struct rt_inline_ctl *c, uint32_t to, uint64_t inl, uint64_t noinl, bool revert)
{
	struct rt_inline_ctl_state *st = &c->st;
	struct rt_inline_ctl_move m = { .at_sample = st->samples,
					.from_bytes = st->threshold_bytes,
					.to_bytes = to,
					.inline_ns = inl,
					.noinline_ns = noinl,
					.revert = revert };

	if (st->n_moves == RT_INLINE_CTL_MOVES) {
		memmove(st->moves, st->moves + 1, (RT_INLINE_CTL_MOVES - 1) * sizeof(st->moves[0]));
		st->n_moves--;
	}
	st->moves[st->n_moves++] = m;
}

/* The end of a round: compare, move at most one band, revert, park. */
static void decide(struct rt_inline_ctl *c)
{
	struct rt_inline_ctl_state *st = &c->st;
	uint64_t med[2][2] = { { 0, 0 }, { 0, 0 } };
	bool full[2], up = false, down = false;
	unsigned changed;
	int dir = 0;

	st->rounds++;
	for (unsigned s = 0; s < 2; s++)
		full[s] = side_full(c, s);
	changed = retarget(c, full);
	if (changed)
		looks_frequent(c); /* a band moved to where traffic was seen: look again soon */
	for (unsigned s = 0; s < 2; s++) {
		full[s] = full[s] && !(changed & (1u << s));
		if (full[s]) {
			med[s][0] = cell_median(&c->cell[s][0]);
			med[s][1] = cell_median(&c->cell[s][1]);
		}
	}
	st->below_noinline_ns = med[0][0];
	st->below_inline_ns = med[0][1];
	st->above_noinline_ns = med[1][0];
	st->above_inline_ns = med[1][1];
	if (c->has_above && full[1])
		up = significantly_less(med[1][1], med[1][0], c->p.significance_pct);
	if (c->has_below && full[0])
		down = significantly_less(med[0][0], med[0][1], c->p.significance_pct);
	if (c->blocked_rounds) {
		c->blocked_rounds--;
		if (c->blocked_dir > 0)
			up = false;
		else
			down = false;
	}
	if (up != down)
		dir = up ? 1 : -1;
	/* leaving the park takes the same verdict in two rounds in a row: one noisy round does not move a stable state */
	if (dir && st->parked && c->pending_dir != dir) {
		c->pending_dir = dir;
		clear_round(c);
		return;
	}
	c->pending_dir = 0;
	if (dir) {
		bool revert = c->last_dir == -dir;
		uint32_t to = dir > 0 ? c->up_to : c->down_to;
		unsigned s = dir > 0 ? 1 : 0;

		record_move(c, to, med[s][1], med[s][0], revert);
		if (dir > 0)
			st->moves_up++;
		else
			st->moves_down++;
		if (revert) {
			/* went back over the band just crossed: leave the direction that was wrong alone for a while */
			st->reverts++;
			c->blocked_dir = -dir;
			c->blocked_rounds = 2u * c->p.park_after_rounds;
		}
		c->last_dir = dir;
		c->stable_rounds = 0;
		st->parked = false;
		c->every = c->p.sample_every;
		set_threshold(c, to);
		return;
	}
	c->last_dir = 0;
	/* a conflict (both sides want to move) is noise, a band just re-targeted is news: neither is stability */
	c->stable_rounds = (up && down) || changed ? 0 : c->stable_rounds + 1;
	if (c->stable_rounds >= c->p.park_after_rounds && !st->parked) {
		st->parked = true;
		c->every = c->p.sample_every * RT_CTL_PARK_FACTOR;
		arm(c);
	}
	clear_round(c);
}

int rt_inline_ctl_sample(rt_inline_ctl *c, uint32_t msg_bytes, bool inlined, uint64_t lat_ns)
{
	struct rt_ctl_cell *cell;
	unsigned side;
	bool ready;

	if (lat_ns == 0)
		return EINVAL;
	if (c->has_below && msg_bytes >= c->below_lo && msg_bytes <= c->below_hi)
		side = 0;
	else if (c->has_above && msg_bytes >= c->above_lo && msg_bytes <= c->above_hi)
		side = 1;
	else
		side = 2;
	if (side == 2 || (inlined && msg_bytes > c->hi_bound) || c->cell[side][inlined].n >= c->p.round_samples) {
		c->st.dropped++;
		return ESTALE;
	}
	if (lat_ns > (1ull << 40))
		lat_ns = 1ull << 40;
	cell = &c->cell[side][inlined];
	cell->ns[cell->n++] = lat_ns;
	c->st.samples++;
	c->quiet[side] = false;
	/* a quiet side (no traffic in its band last round) is not waited for */
	ready = (!c->has_below || c->quiet[0] || side_full(c, 0)) && (!c->has_above || c->quiet[1] || side_full(c, 1));
	if (ready)
		decide(c);
	return 0;
}

uint32_t rt_inline_ctl_threshold(const rt_inline_ctl *c)
{
	return c->st.threshold_bytes;
}

uint32_t rt_inline_ctl_look_period(const rt_inline_ctl *c)
{
	return look_mean(c);
}

int rt_inline_ctl_get_state(const rt_inline_ctl *c, struct rt_inline_ctl_state *out)
{
	if (!c || !out)
		return EINVAL;
	*out = c->st;
	out->min_bytes = c->lo_bound;
	out->max_bytes = c->hi_bound;
	out->below_lo = c->below_lo;
	out->below_hi = c->below_hi;
	out->above_lo = c->above_lo;
	out->above_hi = c->above_hi;
	return 0;
}
