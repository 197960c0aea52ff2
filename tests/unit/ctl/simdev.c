// SPDX-License-Identifier: MIT
/*
 * The simulated device of simdev.h: a planted inline crossover and seeded noise, and the loop that drives an inline
 * controller with it the way an application does (decide, post, time the sampled sends, report them).
 */
#include "simdev.h"

#include "rt_hist.h"

static uint64_t next(struct rt_simdev *d)
{
	/* xorshift64* */
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return d->rng * 2685821657736338717ull;
}

static double model_ns(const struct rt_simdev *d, uint32_t bytes, bool inlined)
{
	return d->base_ns + (inlined ? d->chunk_ns * (double)((bytes + 63u) / 64u) : d->dma_ns);
}

uint32_t rt_simdev_crossover(const struct rt_simdev *d)
{
	uint32_t x = 0;

	for (uint32_t b = 1; b <= d->max_bytes; b++)
		if (model_ns(d, b, true) < model_ns(d, b, false))
			x = b;
	return x;
}

uint32_t rt_simdev_size(struct rt_simdev *d)
{
	unsigned nb = rt_hist_bucket(d->max_bytes) + 1u, k = 1u + (unsigned)(next(d) % (nb - 1u));
	uint32_t lo = rt_hist_bucket_lo(k), hi = rt_hist_bucket_hi(k);

	if (hi > d->max_bytes)
		hi = d->max_bytes;
	return lo + (uint32_t)(next(d) % (uint64_t)(hi - lo + 1u));
}

uint64_t rt_simdev_lat_ns(struct rt_simdev *d, uint32_t bytes, bool inlined)
{
	double f = 1.0 + ((double)(next(d) % 2001u) - 1000.0) / 1000.0 * (double)d->noise_pct / 100.0;
	double v;

	if (next(d) % 50u == 0)
		f *= 3.0;
	v = model_ns(d, bytes, inlined) * f;
	return v < 1.0 ? 1u : (uint64_t)v;
}

bool rt_simdev_within_one_band(uint32_t a, uint32_t b)
{
	unsigned ka = rt_hist_bucket(a), kb = rt_hist_bucket(b);

	return (ka > kb ? ka - kb : kb - ka) <= 1u;
}

void rt_simdev_drive(rt_inline_ctl *c, struct rt_simdev *d, uint64_t n, uint32_t cap, uint32_t target,
		     struct rt_simdev_run *r)
{
	bool was_in = rt_simdev_within_one_band(rt_inline_ctl_threshold(c), target);

	r->converged_at = was_in ? 0 : UINT64_MAX;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t b = rt_simdev_size(d);
		unsigned f = rt_inline_ctl_decide(c, b);
		bool in;

		if ((f & RT_INLINE_CTL_INLINE) && b > cap)
			r->inline_over_cap++;
		if (f & RT_INLINE_CTL_SAMPLE) {
			r->sampled++;
			rt_inline_ctl_sample(c, b, f & RT_INLINE_CTL_INLINE,
					     rt_simdev_lat_ns(d, b, f & RT_INLINE_CTL_INLINE));
		}
		in = rt_simdev_within_one_band(rt_inline_ctl_threshold(c), target);
		if (in && !was_in)
			r->converged_at = i + 1;
		else if (!in)
			r->converged_at = UINT64_MAX;
		was_in = in;
	}
	r->converged = was_in;
	r->final_bytes = rt_inline_ctl_threshold(c);
}
