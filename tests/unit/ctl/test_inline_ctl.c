// SPDX-License-Identifier: MIT
/*
 * Unit tests of the adaptive inline controller (ctl/inline_ctl.c) on a simulated device with a planted crossover
 * (simdev.h): it converges from far below and far above within a stated number of messages, follows a model change,
 * stays within the granted max_inline_data and the profile's bounds, does not drift on a flat device, parks, goes back
 * on a worse result and then leaves that direction alone, refuses bad parameters, and guards its arithmetic.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "simdev.h"

/* The stated convergence budget: messages of the log-uniform 1..4096 B mix, default parameters (docs/controller.md). */
#define CONVERGE_BUDGET 400000u
/* The frequent mean period of the looks outside the bands of a parked controller with default parameters:
 * RT_CTL_LOOK_BASE (4) x sample_every (4) x RT_CTL_PARK_FACTOR (8) (ctl/ctl_internal.h). */
#define RT_CTL_TEST_LOOK_FREQUENT 128u

/*
 * crossover 192 B: inline costs 20 us per 64 B, a DMA read 70 us, on a 1 us base. Next to the crossover the two
 * choices differ by 10 us of 71..81 us (> 10 %), so the controller can resolve it to one band (docs/controller.md).
 */
static const struct rt_simdev X192 = {
	.base_ns = 1000, .chunk_ns = 20000, .dma_ns = 70000, .noise_pct = 8, .max_bytes = 4096, .rng = 1
};
/* crossover 64 B (the same chunk cost, a faster DMA: 30 us) */
static const struct rt_simdev X64 = {
	.base_ns = 1000, .chunk_ns = 20000, .dma_ns = 30000, .noise_pct = 8, .max_bytes = 4096, .rng = 1
};
/* crossover 256 B but shallow: next to it the choices differ by 4 us of 56 us (< 10 %): a "does not matter" zone */
static const struct rt_simdev SHALLOW = {
	.base_ns = 20000, .chunk_ns = 8000, .dma_ns = 36000, .noise_pct = 8, .max_bytes = 4096, .rng = 1
};

static rt_inline_ctl *make(uint32_t start, uint32_t min_b, uint32_t max_b, uint32_t cap)
{
	struct rt_inline_ctl_params p;
	rt_inline_ctl *c = NULL;

	rt_inline_ctl_params_init(&p);
	p.threshold_bytes = start;
	p.min_bytes = min_b;
	p.max_bytes = max_b;
	p.granted_max_inline = cap;
	assert_int_equal(rt_inline_ctl_create(&p, &c), 0);
	assert_non_null(c);
	return c;
}

static void test_planted_crossover(void **state)
{
	(void)state;
	assert_int_equal(rt_simdev_crossover(&X192), 192);
	assert_int_equal(rt_simdev_crossover(&X64), 64);
	assert_int_equal(rt_simdev_crossover(&SHALLOW), 256);
}

/* From 16 B and from 2048 B, five seeds each: within one band of 192 B within the budget, and still there at the end. */
static void test_converges_from_both_sides(void **state)
{
	static const uint32_t starts[] = { 16, 2048 };

	(void)state;
	for (unsigned s = 0; s < 2; s++) {
		for (uint64_t seed = 1; seed <= 5; seed++) {
			struct rt_simdev d = X192;
			struct rt_simdev_run r = { 0 };
			rt_inline_ctl *c = make(starts[s], 0, 4096, 4096);

			d.rng = seed * 7919u;
			rt_simdev_drive(c, &d, 2u * CONVERGE_BUDGET, 4096, 192, &r);
			printf("start %u seed %llu: final %u B, converged at message %llu\n", starts[s],
			       (unsigned long long)seed, r.final_bytes, (unsigned long long)r.converged_at);
			assert_true(r.converged);
			assert_true(r.converged_at <= CONVERGE_BUDGET);
			assert_int_equal(r.inline_over_cap, 0);
			rt_inline_ctl_free(c);
		}
	}
}

/* Converged at 192 B, the device changes to a 64 B crossover and back: the controller follows both ways. */
static void test_follows_a_model_change(void **state)
{
	struct rt_simdev d = X192;
	struct rt_simdev_run r = { 0 };
	rt_inline_ctl *c = make(192, 0, 4096, 4096);

	(void)state;
	rt_simdev_drive(c, &d, CONVERGE_BUDGET, 4096, 192, &r);
	assert_true(r.converged);
	d.dma_ns = X64.dma_ns;
	memset(&r, 0, sizeof(r));
	rt_simdev_drive(c, &d, 2u * CONVERGE_BUDGET, 4096, 64, &r);
	printf("192 -> 64: final %u B, converged at %llu\n", r.final_bytes, (unsigned long long)r.converged_at);
	assert_true(r.converged);
	assert_true(r.converged_at <= CONVERGE_BUDGET);
	d.dma_ns = X192.dma_ns;
	memset(&r, 0, sizeof(r));
	rt_simdev_drive(c, &d, 2u * CONVERGE_BUDGET, 4096, 192, &r);
	printf("64 -> 192: final %u B, converged at %llu\n", r.final_bytes, (unsigned long long)r.converged_at);
	assert_true(r.converged);
	assert_true(r.converged_at <= CONVERGE_BUDGET);
	rt_inline_ctl_free(c);
}

/* A QP granted 128 B of inline data (the device would have 192 B): the controller stops at 128 B and never answers
 * inline above it. */
static void test_granted_cap_and_bounds(void **state)
{
	struct rt_simdev d = X192;
	struct rt_simdev_run r = { 0 };
	struct rt_inline_ctl_state st;
	rt_inline_ctl *c = make(16, 0, 4096, 128);

	(void)state;
	rt_simdev_drive(c, &d, CONVERGE_BUDGET, 128, 128, &r);
	assert_int_equal(r.final_bytes, 128);
	assert_int_equal(r.inline_over_cap, 0);
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_int_equal(st.max_bytes, 128);
	rt_inline_ctl_free(c);
	/* the profile's bounds: 40..100 B although the device would have 192 B */
	c = make(60, 40, 100, 4096);
	memset(&r, 0, sizeof(r));
	rt_simdev_drive(c, &d, CONVERGE_BUDGET, 100, 100, &r);
	assert_int_equal(r.final_bytes, 100);
	assert_int_equal(r.inline_over_cap, 0);
	rt_inline_ctl_free(c);
	/* a start outside the bounds is clamped into them */
	c = make(5000, 0, 300, 4096);
	assert_int_equal(rt_inline_ctl_threshold(c), 300);
	rt_inline_ctl_free(c);
	/* bounds that pin the threshold: nothing is ever sampled */
	c = make(64, 64, 64, 4096);
	memset(&r, 0, sizeof(r));
	rt_simdev_drive(c, &d, 100000, 4096, 64, &r);
	assert_int_equal(r.final_bytes, 64);
	assert_int_equal(r.sampled, 0);
	rt_inline_ctl_free(c);
}

/* No difference between inline and not (a flat device): the threshold stays where it started and parks. */
static void test_flat_device_does_not_drift(void **state)
{
	struct rt_simdev d = { .base_ns = 40000, .chunk_ns = 0, .dma_ns = 0, .noise_pct = 8, .max_bytes = 4096 };
	struct rt_inline_ctl_state st;

	(void)state;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct rt_simdev_run r = { 0 };
		rt_inline_ctl *c = make(200, 0, 4096, 4096);

		d.rng = seed;
		rt_simdev_drive(c, &d, CONVERGE_BUDGET, 4096, 200, &r);
		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		printf("flat seed %llu: final %u B, %llu moves, parked %d\n", (unsigned long long)seed, r.final_bytes,
		       (unsigned long long)st.moves_up + (unsigned long long)st.moves_down, st.parked);
		assert_int_equal(r.final_bytes, 200);
		assert_true(st.parked);
		rt_inline_ctl_free(c);
	}
}

/*
 * A shallow crossover (the choices differ by less than 10 % next to it): from either side the controller stops where
 * the difference falls under the significance (noise may carry it a band further) and then stays: parked, a move
 * needs the same verdict in two rounds, so 400,000 more messages leave it where it was.
 */
static void test_shallow_crossover_stops_in_the_flat_zone(void **state)
{
	static const uint32_t starts[] = { 16, 2048 };

	(void)state;
	for (unsigned s = 0; s < 2; s++) {
		struct rt_simdev d = SHALLOW;
		struct rt_simdev_run r = { 0 }, r2 = { 0 };
		struct rt_inline_ctl_state st;
		rt_inline_ctl *c = make(starts[s], 0, 4096, 4096);

		rt_simdev_drive(c, &d, CONVERGE_BUDGET, 4096, 256, &r);
		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		rt_simdev_drive(c, &d, CONVERGE_BUDGET, 4096, 256, &r2);
		printf("shallow from %u: %u B, then %u B\n", starts[s], r.final_bytes, r2.final_bytes);
		/* inline loses by > 10 % from 321 B, wins by > 10 % up to 191 B; parked, it does not wander */
		assert_true(r.final_bytes >= 191 && r.final_bytes <= 320);
		assert_int_equal(r2.final_bytes, r.final_bytes);
		rt_inline_ctl_free(c);
	}
}

/* Converged and stable: parked, sampling 8 times less, exploring a bounded share of the sends. */
static void test_parks_when_stable(void **state)
{
	struct rt_simdev d = X192;
	struct rt_simdev_run r = { 0 }, r2 = { 0 };
	struct rt_inline_ctl_state st, st2;
	rt_inline_ctl *c = make(192, 0, 4096, 4096);

	(void)state;
	rt_simdev_drive(c, &d, CONVERGE_BUDGET, 4096, 192, &r);
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_true(st.parked);
	rt_simdev_drive(c, &d, 1000000, 4096, 192, &r2);
	assert_int_equal(rt_inline_ctl_get_state(c, &st2), 0);
	printf("parked: %llu sampled and %llu explored of 1e6 sends\n", (unsigned long long)r2.sampled,
	       (unsigned long long)(st2.explored - st.explored));
	/* two bands of ~ 1/36 of the sends each, 1 in 64 of those sampled when parked: ~ 870 */
	assert_true(r2.sampled < 2000);
	assert_true(st2.explored - st.explored <= r2.sampled);
	rt_inline_ctl_free(c);
}

/*
 * A periodic size pattern: 248 B and 272 B alternating (the bands either side of 255 B), sampling one watched send in
 * 2. Without jitter in the sampling period every sample would land on 272 B and the band below would never be
 * measured; with it, both are, and the controller leaves 255 B (inline loses below it on X192).
 */
static void test_periodic_sizes_reach_both_bands(void **state)
{
	struct rt_inline_ctl_params p;
	struct rt_inline_ctl_state st;
	struct rt_simdev d = X192;
	rt_inline_ctl *c;

	(void)state;
	rt_inline_ctl_params_init(&p);
	p.threshold_bytes = 255;
	p.max_bytes = p.granted_max_inline = 4096;
	p.sample_every = 2;
	assert_int_equal(rt_inline_ctl_create(&p, &c), 0);
	for (unsigned i = 0; i < 20000 && rt_inline_ctl_threshold(c) == 255; i++) {
		uint32_t b = i % 2 ? 272 : 248;
		unsigned f = rt_inline_ctl_decide(c, b);

		if (f & RT_INLINE_CTL_SAMPLE)
			rt_inline_ctl_sample(c, b, f & RT_INLINE_CTL_INLINE,
					     rt_simdev_lat_ns(&d, b, f & RT_INLINE_CTL_INLINE));
	}
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_int_equal(rt_inline_ctl_threshold(c), 239);
	assert_true(st.below_inline_ns > 0 && st.below_noinline_ns > 0);
	rt_inline_ctl_free(c);
}

/*
 * A start whose band below holds no size the application sends (16 B; it sends 17, 40 and 100 B): the round does not
 * wait its full timeout for the empty band; the first move comes within 1,500 messages (3,072 with the full one).
 */
static void test_empty_band_does_not_stall(void **state)
{
	static const uint32_t sizes[] = { 17, 40, 100 };
	struct rt_simdev d = X192;
	rt_inline_ctl *c = make(16, 0, 4096, 4096);
	unsigned i;

	(void)state;
	for (i = 0; i < 20000 && rt_inline_ctl_threshold(c) == 16; i++) {
		uint32_t b = sizes[i % 3];
		unsigned f = rt_inline_ctl_decide(c, b);

		if (f & RT_INLINE_CTL_SAMPLE)
			rt_inline_ctl_sample(c, b, f & RT_INLINE_CTL_INLINE,
					     rt_simdev_lat_ns(&d, b, f & RT_INLINE_CTL_INLINE));
	}
	printf("first move after %u messages, to %u B\n", i, rt_inline_ctl_threshold(c));
	assert_int_equal(rt_inline_ctl_threshold(c), 17);
	assert_true(i <= 1500);
	rt_inline_ctl_free(c);
}

/*
 * Sends n messages of sizes[] (chosen by a seeded xorshift) through c on d, reporting every sampled one. Returns the
 * index of the first message from which the threshold put every size on d's planted side (inline below the
 * crossover, not above) until the end, or n + 1 when it did not end there.
 */
static uint64_t drive_sizes(rt_inline_ctl *c, struct rt_simdev *d, const uint32_t *sizes, unsigned nsizes, uint64_t n)
{
	uint32_t x = 12345, cross = rt_simdev_crossover(d);
	uint64_t since = 0;
	bool ok_prev = false;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t b, t;
		unsigned f;
		bool ok = true;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b = sizes[x % nsizes];
		f = rt_inline_ctl_decide(c, b);
		if (f & RT_INLINE_CTL_SAMPLE)
			rt_inline_ctl_sample(c, b, f & RT_INLINE_CTL_INLINE,
					     rt_simdev_lat_ns(d, b, f & RT_INLINE_CTL_INLINE));
		t = rt_inline_ctl_threshold(c);
		for (unsigned k = 0; k < nsizes; k++)
			ok = ok && (sizes[k] <= t) == (sizes[k] <= cross);
		if (ok && !ok_prev)
			since = i;
		ok_prev = ok;
	}
	return ok_prev ? since : n + 1;
}

/*
 * The stated budget for an application sending one size, or two sizes with a gap, far from the start: the decision
 * for its sizes ends on the planted side within this many messages (docs/controller.md).
 */
#define FEW_SIZES_BUDGET 1000u

/*
 * One size only (fixed-size RPCs), far from the start on either side of X192's 192 B crossover: 64 B from 16 B (the
 * controller must come up over the empty bands to cover it) and 300 B from 4096 B (down to uncover it), and the two
 * that start on the right side stay there. Adjacent bands alone never see such a size: the threshold would not move.
 */
static void test_single_size_far_from_start(void **state)
{
	static const uint32_t sizes[] = { 64, 300, 64, 300 }, starts[] = { 16, 4096, 4096, 16 };

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		struct rt_simdev d = X192;
		struct rt_inline_ctl_state st;
		rt_inline_ctl *c = make(starts[i], 0, 4096, 4096);
		uint64_t at = drive_sizes(c, &d, &sizes[i], 1, 20000);

		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		printf("only %u B from %u B: threshold %u B from message %llu, %llu moves, parked %d\n", sizes[i],
		       starts[i], st.threshold_bytes, (unsigned long long)at,
		       (unsigned long long)st.moves_up + st.moves_down, st.parked);
		assert_true(at <= FEW_SIZES_BUDGET);
		assert_true(st.parked);
		rt_inline_ctl_free(c);
	}
	/* the first move from 16 B covers just 64 B's band (64..71), over the empty ones between */
	{
		struct rt_simdev d = X192;
		struct rt_inline_ctl_state st;
		rt_inline_ctl *c = make(16, 0, 4096, 4096);

		drive_sizes(c, &d, &sizes[0], 1, 20000);
		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		assert_true(st.n_moves >= 1);
		assert_int_equal(st.moves[0].from_bytes, 16);
		assert_int_equal(st.moves[0].to_bytes, 71);
		rt_inline_ctl_free(c);
	}
}

/*
 * Two sizes with a gap, 40 B and 1000 B (either side of 192 B), from 16 B and from 4096 B: 40 B ends inline and
 * 1000 B not, within the budget; from 16 B the one move stops just over 40 B's band, 40..43 B (the bands between
 * hold nothing).
 */
static void test_two_sizes_with_a_gap(void **state)
{
	static const uint32_t sizes[] = { 40, 1000 }, starts[] = { 16, 4096 };

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct rt_simdev d = X192;
		struct rt_inline_ctl_state st;
		rt_inline_ctl *c = make(starts[i], 0, 4096, 4096);
		uint64_t at = drive_sizes(c, &d, sizes, 2, 40000);

		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		printf("40 B and 1000 B from %u B: threshold %u B from message %llu, bands %u..%u and %u..%u\n",
		       starts[i], st.threshold_bytes, (unsigned long long)at, st.below_lo, st.below_hi, st.above_lo,
		       st.above_hi);
		assert_true(at <= FEW_SIZES_BUDGET);
		assert_true(st.parked);
		if (starts[i] == 16) {
			assert_int_equal(st.threshold_bytes, 43);
			assert_int_equal(st.moves_up + st.moves_down, 1);
		}
		rt_inline_ctl_free(c);
	}
}

/* One send of b through the controller (with its sample when picked); returns true when it was a look outside. */
static bool send_one(rt_inline_ctl *c, struct rt_simdev *d, uint32_t b)
{
	const struct rt_inline_ctl_hot *h = (const struct rt_inline_ctl_hot *)(const void *)c;
	bool look = b - h->watch_lo > h->watch_span && h->outside == 1; /* rt_inline_ctl_decide calls outside() */
	unsigned f = rt_inline_ctl_decide(c, b);

	if (f & RT_INLINE_CTL_SAMPLE)
		rt_inline_ctl_sample(c, b, f & RT_INLINE_CTL_INLINE, rt_simdev_lat_ns(d, b, f & RT_INLINE_CTL_INLINE));
	return look;
}

/*
 * The stated budget for a size that appears nearer the threshold than a watched band, or on the side of a band
 * without traffic, in steady state (looks backed off): that band watches it within this many sends
 * (docs/controller.md, "The rate of the looks").
 */
#define NEW_SIZE_BUDGET 20000u

/* The next size of a fixed pseudo-random mix of n sizes. */
static uint32_t mix_next(uint32_t *x, const uint32_t *sizes, unsigned n)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return sizes[*x % n];
}

/*
 * Steady state: 40 B and 1000 B (the watched bands once the threshold is just over 40 B) and 8 B and 3000 B far
 * outside, nothing changing: the looks outside the bands fall to at most 1 in 512 sends. Then 500 B appears, nearer
 * the threshold than 1000 B's band: it lies between the bands (the hot window), so the sampling picks find it, and the
 * band above watches it within NEW_SIZE_BUDGET sends; 500 B stays not inline (X192).
 */
static void test_looks_back_off_in_steady_state(void **state)
{
	static const uint32_t steady[] = { 8, 40, 1000, 3000 }, moved[] = { 8, 40, 1000, 3000, 500 };
	struct rt_simdev d = X192;
	struct rt_inline_ctl_state st;
	rt_inline_ctl *c = make(16, 0, 4096, 4096);
	uint32_t x = 777;
	uint64_t looks = 0, first_looks = 0, found = 0;

	(void)state;
	for (unsigned i = 0; i < 400000; i++) {
		looks += send_one(c, &d, mix_next(&x, steady, 4));
		if (i == 19999)
			first_looks = looks;
	}
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	printf("steady: threshold %u B, bands %u..%u and %u..%u, %llu looks in the first 20,000 sends, %llu in the "
	       "380,000 after\n",
	       st.threshold_bytes, st.below_lo, st.below_hi, st.above_lo, st.above_hi, (unsigned long long)first_looks,
	       (unsigned long long)(looks - first_looks));
	assert_int_equal(st.threshold_bytes, 43);
	assert_true(st.above_lo <= 1000 && 1000 <= st.above_hi);
	assert_true(first_looks >= 20000 / 512); /* frequent while finding the traffic */
	looks = 0;
	for (unsigned i = 0; i < 200000; i++)
		looks += send_one(c, &d, mix_next(&x, steady, 4));
	printf("steady: %llu looks in 200,000 sends (1 in %llu)\n", (unsigned long long)looks,
	       (unsigned long long)(looks ? 200000 / looks : 0));
	assert_true(looks >= 1 && looks <= 200000 / 512);
	for (unsigned i = 0; i < 200000 && !found; i++) {
		send_one(c, &d, mix_next(&x, moved, 5));
		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		if (st.above_lo <= 500 && 500 <= st.above_hi)
			found = i + 1;
	}
	printf("500 B appears: watched after %llu sends\n", (unsigned long long)found);
	assert_true(found >= 1 && found <= NEW_SIZE_BUDGET);
	assert_int_equal(rt_inline_ctl_threshold(c), 43);
	rt_inline_ctl_free(c);
}

/*
 * A size only a look can find: from 43 B, traffic of 1000 B and 3000 B only (the band below the threshold quiet: no
 * traffic below); the looks at 3000 B change nothing and fall to at most 1 in 512 sends. Then 20 B appears below the
 * threshold, outside the hot window: the first look at it is news (its side's band has no traffic), so the looks come
 * back to the frequent period at once, and the band below watches 20 B within NEW_SIZE_BUDGET sends. Without the
 * backing off (or without the return to frequent) one of the assertions fails.
 */
static void test_looks_find_a_new_size_after_backing_off(void **state)
{
	static const uint32_t steady[] = { 1000, 3000 }, moved[] = { 1000, 3000, 20 };
	const struct rt_inline_ctl_hot *h;
	struct rt_simdev d = X192;
	struct rt_inline_ctl_state st;
	rt_inline_ctl *c = make(43, 0, 4096, 4096);
	uint32_t x = 4242;
	uint64_t looks = 0, found = 0, seen_at = 0;

	(void)state;
	h = (const struct rt_inline_ctl_hot *)(const void *)c;
	for (unsigned i = 0; i < 200000; i++)
		send_one(c, &d, mix_next(&x, steady, 2));
	for (unsigned i = 0; i < 200000; i++)
		looks += send_one(c, &d, mix_next(&x, steady, 2));
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	printf("1000 B and 3000 B from 43 B: threshold %u B, bands %u..%u and %u..%u, %llu looks in 200,000 sends\n",
	       st.threshold_bytes, st.below_lo, st.below_hi, st.above_lo, st.above_hi, (unsigned long long)looks);
	assert_true(st.above_lo <= 1000 && 1000 <= st.above_hi);
	assert_true(looks >= 1 && looks <= 200000 / 512);
	for (unsigned i = 0; i < 200000 && !found; i++) {
		uint32_t b = mix_next(&x, moved, 3);

		if (send_one(c, &d, b) && b == 20 && !seen_at) {
			seen_at = i + 1;
			/* back to the frequent period: the next look within 2 x its mean */
			assert_true(h->outside < 2u * RT_CTL_TEST_LOOK_FREQUENT);
		}
		assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
		if (st.below_lo <= 20 && 20 <= st.below_hi)
			found = i + 1;
	}
	printf("20 B appears: first looked at after %llu sends, watched after %llu\n", (unsigned long long)seen_at,
	       (unsigned long long)found);
	assert_true(seen_at >= 1 && seen_at <= found);
	assert_true(found >= 1 && found <= NEW_SIZE_BUDGET);
	rt_inline_ctl_free(c);
}

/* Reports n samples of size b, choice inl, lat_ns each (one per pick the controller asks for). */
static void feed(rt_inline_ctl *c, uint32_t b, bool inl, uint64_t lat_ns, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(rt_inline_ctl_sample(c, b, inl, lat_ns), 0);
}

/* A move up over a band that then measures worse goes back, and the direction up is left alone for a while. */
static void test_reverts_and_blocks(void **state)
{
	struct rt_inline_ctl_state st;
	rt_inline_ctl *c = make(63, 0, 4096, 4096); /* bands 56..63 below, 64..71 above */

	(void)state;
	/* round 1: inline better above, no difference below: up to 71 */
	feed(c, 60, false, 10000, 8);
	feed(c, 60, true, 10000, 8);
	feed(c, 66, true, 5000, 8);
	feed(c, 66, false, 10000, 8);
	assert_int_equal(rt_inline_ctl_threshold(c), 71);
	/* round 2: the crossed band 64..71 is now worse inline: back to 63, a revert */
	feed(c, 66, true, 10000, 8);
	feed(c, 66, false, 5000, 8);
	feed(c, 75, true, 10000, 8);
	feed(c, 75, false, 10000, 8);
	assert_int_equal(rt_inline_ctl_threshold(c), 63);
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_int_equal(st.moves_up, 1);
	assert_int_equal(st.moves_down, 1);
	assert_int_equal(st.reverts, 1);
	assert_int_equal(st.n_moves, 2);
	assert_true(st.moves[1].revert);
	assert_int_equal(st.moves[1].from_bytes, 71);
	assert_int_equal(st.moves[1].to_bytes, 63);
	/* rounds 3..8: inline better above again, but up is blocked for 2 * park_after_rounds rounds */
	for (int round = 0; round < 6; round++) {
		feed(c, 60, false, 10000, 8);
		feed(c, 60, true, 10000, 8);
		feed(c, 66, true, 5000, 8);
		feed(c, 66, false, 10000, 8);
		assert_int_equal(rt_inline_ctl_threshold(c), 63);
	}
	/* allowed again, but six rounds without a move parked it: leaving the park takes the verdict twice */
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_true(st.parked);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(rt_inline_ctl_threshold(c), 63);
		feed(c, 60, false, 10000, 8);
		feed(c, 60, true, 10000, 8);
		feed(c, 66, true, 5000, 8);
		feed(c, 66, false, 10000, 8);
	}
	assert_int_equal(rt_inline_ctl_threshold(c), 71);
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_false(st.parked);
	rt_inline_ctl_free(c);
}

/* A difference of 10 % or less never moves; just above 10 % does. */
static void test_significance(void **state)
{
	rt_inline_ctl *c = make(63, 0, 4096, 4096);

	(void)state;
	feed(c, 60, false, 10000, 8);
	feed(c, 60, true, 10000, 8);
	feed(c, 66, true, 9000, 8); /* exactly 10 % better */
	feed(c, 66, false, 10000, 8);
	assert_int_equal(rt_inline_ctl_threshold(c), 63);
	feed(c, 60, false, 10000, 8);
	feed(c, 60, true, 10000, 8);
	feed(c, 66, true, 8990, 8);
	feed(c, 66, false, 10000, 8);
	assert_int_equal(rt_inline_ctl_threshold(c), 71);
	rt_inline_ctl_free(c);
}

/*
 * rt_inline_ctl_take_watched: the watched sends taken at once count as watched and leave the send after them as the
 * sample, exactly where rt_inline_ctl_decide() one send at a time would have put it; at the sample it takes none.
 */
static void test_take_watched(void **state)
{
	rt_inline_ctl *a = make(128, 0, 256, 256), *b = make(128, 0, 256, 256);
	struct rt_inline_ctl_state sa, sb;
	uint32_t w;

	(void)state;
	assert_int_equal(rt_inline_ctl_get_state(a, &sa), 0);
	w = sa.below_lo; /* a watched size */
	assert_true(w > 0 && w < 128);
	for (int round = 0; round < 200; round++) {
		uint32_t took = rt_inline_ctl_take_watched(b, 1000);
		unsigned fa, fb;

		/* a: one decide per watched send, none of them the sample, up to the same point */
		for (uint32_t i = 0; i < took; i++)
			assert_int_equal(rt_inline_ctl_decide(a, w), RT_INLINE_CTL_INLINE); /* below the threshold */
		assert_int_equal(rt_inline_ctl_take_watched(a, 1000), 0); /* a's next watched send is the sample too */
		assert_int_equal(rt_inline_ctl_take_watched(b, 1000), 0);
		fa = rt_inline_ctl_decide(a, w);
		fb = rt_inline_ctl_decide(b, w);
		assert_int_equal(fa, fb); /* the same pick, the same choice */
		assert_int_equal(rt_inline_ctl_get_state(a, &sa), 0);
		assert_int_equal(rt_inline_ctl_get_state(b, &sb), 0);
		assert_int_equal(sa.watched, sb.watched);
		assert_int_equal(sa.explored, sb.explored);
		if (fa & RT_INLINE_CTL_SAMPLE) { /* both report the same time: they stay in step */
			uint64_t lat = fa & RT_INLINE_CTL_INLINE ? 1000 : 1500;

			assert_int_equal(rt_inline_ctl_sample(a, w, fa & RT_INLINE_CTL_INLINE, lat), 0);
			assert_int_equal(rt_inline_ctl_sample(b, w, fb & RT_INLINE_CTL_INLINE, lat), 0);
		}
	}
	assert_int_equal(rt_inline_ctl_get_state(a, &sa), 0);
	assert_true(sa.samples > 0);
	/* a bounded take: at most max_sends, the rest left for the next (a and b are in step here) */
	{
		uint32_t all = rt_inline_ctl_take_watched(a, 1000), t0 = rt_inline_ctl_take_watched(b, 0);
		uint32_t t1 = rt_inline_ctl_take_watched(b, 1), t2 = rt_inline_ctl_take_watched(b, 1000);

		assert_int_equal(t0, 0);
		assert_true(t1 <= 1);
		assert_int_equal(t1 + t2, all);
	}
	rt_inline_ctl_free(a);
	rt_inline_ctl_free(b);
}

static void test_bad_input(void **state)
{
	struct rt_inline_ctl_params p;
	struct rt_inline_ctl_state st;
	rt_inline_ctl *c = (rt_inline_ctl *)&p;

	(void)state;
	rt_inline_ctl_params_init(&p);
	p.max_bytes = p.granted_max_inline = 256;
	p.threshold_bytes = 255; /* bands 240..255 and 256..256 (the bound) */
	assert_int_equal(rt_inline_ctl_create(NULL, &c), EINVAL);
	assert_null(c);
	assert_int_equal(rt_inline_ctl_create(&p, NULL), EINVAL);
	p.sample_every = 0;
	assert_int_equal(rt_inline_ctl_create(&p, &c), EINVAL);
	p.sample_every = 8;
	p.round_samples = 65;
	assert_int_equal(rt_inline_ctl_create(&p, &c), EINVAL);
	p.round_samples = 3;
	assert_int_equal(rt_inline_ctl_create(&p, &c), EINVAL);
	p.round_samples = 16;
	p.significance_pct = 0;
	assert_int_equal(rt_inline_ctl_create(&p, &c), EINVAL);
	p.significance_pct = 10;
	p.min_bytes = 300;
	assert_int_equal(rt_inline_ctl_create(&p, &c), EINVAL);
	p.min_bytes = 0;
	assert_int_equal(rt_inline_ctl_create(&p, &c), 0);
	/* a zero time is refused; a size outside the watched bands is stale; a huge time is capped, not overflowed */
	assert_int_equal(rt_inline_ctl_sample(c, 10, true, 0), EINVAL);
	assert_int_equal(rt_inline_ctl_sample(c, 4000, false, 5), ESTALE);
	assert_int_equal(rt_inline_ctl_sample(c, 1, true, 5), ESTALE);
	assert_int_equal(rt_inline_ctl_sample(c, 250, true, UINT64_MAX), 0);
	assert_int_equal(rt_inline_ctl_get_state(c, &st), 0);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.samples, 1);
	assert_int_equal(rt_inline_ctl_get_state(NULL, &st), EINVAL);
	assert_int_equal(rt_inline_ctl_get_state(c, NULL), EINVAL);
	rt_inline_ctl_free(c);
	rt_inline_ctl_free(NULL);
	/* never inline (threshold 0, granted 0): every answer is "not inline" and nothing is sampled */
	p.max_bytes = 4096;
	p.granted_max_inline = 0;
	p.threshold_bytes = 0;
	assert_int_equal(rt_inline_ctl_create(&p, &c), 0);
	for (uint32_t b = 0; b < 5000; b++)
		assert_int_equal(rt_inline_ctl_decide(c, b), 0);
	rt_inline_ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted_crossover),
		cmocka_unit_test(test_converges_from_both_sides),
		cmocka_unit_test(test_follows_a_model_change),
		cmocka_unit_test(test_granted_cap_and_bounds),
		cmocka_unit_test(test_flat_device_does_not_drift),
		cmocka_unit_test(test_shallow_crossover_stops_in_the_flat_zone),
		cmocka_unit_test(test_parks_when_stable),
		cmocka_unit_test(test_periodic_sizes_reach_both_bands),
		cmocka_unit_test(test_empty_band_does_not_stall),
		cmocka_unit_test(test_single_size_far_from_start),
		cmocka_unit_test(test_two_sizes_with_a_gap),
		cmocka_unit_test(test_looks_back_off_in_steady_state),
		cmocka_unit_test(test_looks_find_a_new_size_after_backing_off),
		cmocka_unit_test(test_reverts_and_blocks),
		cmocka_unit_test(test_significance),
		cmocka_unit_test(test_take_watched),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
