// SPDX-License-Identifier: MIT
/*
 * The adaptive inline controller's convergence (ctl/inline_ctl.c, docs/controller.md): for each planted model of the
 * simulated device (tests/unit/ctl/simdev.c) and each start (far below, far above), the messages of a log-uniform
 * 1..4096 B mix until the threshold stays within one band of the crossover, the median and worst over 20 seeds, with
 * the sampled share of the sends; and the cost of rt_inline_ctl_decide() on the common path next to the fixed
 * compare rt_should_inline(). Prints figures, exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "simdev.h"

#define SEEDS 20
#define MAX_MSGS 2000000u

struct model {
	const char *name;
	struct rt_simdev d;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	static const struct model models[] = {
		{ "x64 (dma 1.5 chunks)", { 1000, 20000, 30000, 8, 4096, 1 } },
		{ "x192 (dma 3.5 chunks)", { 1000, 20000, 70000, 8, 4096, 1 } },
		{ "x256 (dma 4.5 chunks, 10 % next to it)", { 1000, 20000, 90000, 8, 4096, 1 } },
		{ "x192 noisy (25 %)", { 1000, 20000, 70000, 25, 4096, 1 } },
	};
	static const uint32_t starts[] = { 16, 2048 };
	volatile unsigned sink = 0;

	printf("%-40s %6s %10s %10s %10s %9s\n", "model", "start", "median", "worst", "unconverged", "sampled");
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
		uint32_t target = rt_simdev_crossover(&models[m].d);

		for (size_t s = 0; s < 2; s++) {
			uint64_t at[SEEDS], sampled = 0;
			unsigned fails = 0;

			for (unsigned k = 0; k < SEEDS; k++) {
				struct rt_inline_ctl_params p;
				struct rt_simdev d = models[m].d;
				struct rt_simdev_run r = { 0 };
				rt_inline_ctl *c;

				rt_inline_ctl_params_init(&p);
				p.threshold_bytes = starts[s];
				p.max_bytes = p.granted_max_inline = 4096;
				if (rt_inline_ctl_create(&p, &c))
					return 1;
				d.rng = 1000003u * (k + 1);
				rt_simdev_drive(c, &d, MAX_MSGS, 4096, target, &r);
				at[k] = r.converged ? r.converged_at : MAX_MSGS;
				fails += !r.converged;
				sampled += r.sampled;
				rt_inline_ctl_free(c);
			}
			qsort(at, SEEDS, sizeof(at[0]), cmp_u64);
			printf("%-40s %6u %10llu %10llu %7u/%u %8.3f%%\n", models[m].name, starts[s],
			       (unsigned long long)at[SEEDS / 2], (unsigned long long)at[SEEDS - 1], (unsigned)fails,
			       (unsigned)SEEDS, 100.0 * (double)sampled / ((double)MAX_MSGS * SEEDS));
		}
	}
	/* the common path: sizes outside the watched bands (the controller parked at 192 B) */
	{
		struct rt_inline_ctl_params p;
		struct rt_simdev d = models[1].d;
		struct rt_simdev_run r = { 0 };
		struct rt_profile_entry e = { .inline_limit_excl = 193 };
		rt_inline_ctl *c;
		static uint32_t sz[4096];
		double t0, t1, t2;
		const unsigned reps = 20000;

		rt_inline_ctl_params_init(&p);
		p.threshold_bytes = 192;
		p.max_bytes = p.granted_max_inline = 4096;
		if (rt_inline_ctl_create(&p, &c))
			return 1;
		rt_simdev_drive(c, &d, 200000, 4096, 192, &r);
		for (unsigned i = 0; i < 4096; i++)
			sz[i] = rt_simdev_size(&d);
		unsigned acc = 0;

		t0 = now_s();
		for (unsigned k = 0; k < reps; k++) {
			for (unsigned i = 0; i < 4096; i++)
				acc += rt_should_inline(&e, sz[i]);
			__asm__ volatile("" : "+r"(acc)); /* keeps the loop from being folded */
		}
		sink += acc;
		acc = 0;
		t1 = now_s();
		for (unsigned k = 0; k < reps; k++)
			for (unsigned i = 0; i < 4096; i++) {
				unsigned f = rt_inline_ctl_decide(c, sz[i]);

				/* a sample is not posted here: report a neutral time so the state stays realistic */
				if (f & RT_INLINE_CTL_SAMPLE)
					rt_inline_ctl_sample(c, sz[i], f & RT_INLINE_CTL_INLINE, 50000);
				acc += f & RT_INLINE_CTL_INLINE;
			}
		sink += acc;
		t2 = now_s();
		printf("per send: rt_should_inline %.2f ns, rt_inline_ctl_decide %.2f ns (mixed sizes, parked at %u B)\n",
		       (t1 - t0) * 1e9 / (4096.0 * reps), (t2 - t1) * 1e9 / (4096.0 * reps),
		       rt_inline_ctl_threshold(c));
		rt_inline_ctl_free(c);
	}
	return sink == 0xdeadbeef;
}
