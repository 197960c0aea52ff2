// SPDX-License-Identifier: MIT
/*
 * The physics of the inline benefit, fitted over all measured sizes: a non-inline send pays a DMA read of its payload
 * (about fixed), an inline one copies the payload into the WQE in 64 B chunks (a WQE basic block), so the benefit
 * d = non-inline - inline latency follows d(size) = alpha - beta * ceil(size / 64). A weighted least-squares line in
 * the chunk count, where the fitted line shows inline to lose, and the threshold the line gives. The inline analysis
 * (inline.c) uses it where its per-size data cannot place the threshold; docs/tuner.md.
 */
#include "tuner_int.h"

#include <math.h>

double rt__inline_chunks(uint32_t bytes)
{
	return ceil((double)bytes / RT__WQE_CHUNK);
}

int rt__inline_fit_line(const double *c, const double *y, const double *w, size_t n, struct rt__inline_fit *f)
{
	double s0 = 0, s1 = 0, s2 = 0, sy = 0, sxy = 0, det;

	for (size_t i = 0; i < n; i++) {
		s0 += w[i];
		s1 -= w[i] * c[i];
		s2 += w[i] * c[i] * c[i];
		sy += w[i] * y[i];
		sxy -= w[i] * c[i] * y[i];
	}
	det = s0 * s2 - s1 * s1;
	if (!(det > 1e-9 * s0 * s2))
		return -1;
	f->alpha_ns = (s2 * sy - s1 * sxy) / det;
	f->beta_ns = (s0 * sxy - s1 * sy) / det;
	f->v_aa = s2 / det;
	f->v_bb = s0 / det;
	f->v_ab = -s1 / det;
	f->chi2 = 0;
	for (size_t i = 0; i < n; i++) {
		double r = y[i] - (f->alpha_ns - f->beta_ns * c[i]);

		f->chi2 += w[i] * r * r;
	}
	return 0;
}

uint32_t rt__inline_fit_threshold(double alpha_ns, double beta_ns, double f_ns, double se1_ns, double z,
				  uint32_t max_bytes)
{
	double k, d1 = alpha_ns - beta_ns;

	if (d1 < -f_ns || d1 + z * se1_ns < 0)
		return 0;
	if (beta_ns <= 0)
		return max_bytes;
	k = fmax(floor(alpha_ns / beta_ns), 1) * RT__WQE_CHUNK;
	return k >= (double)max_bytes ? max_bytes : (uint32_t)k;
}

size_t rt__inline_fit_losses(const struct rt__inline_fit *f, const double *c, const double *floor_ns, size_t n,
			     double infl, double z, size_t *clear)
{
	size_t nl = 0;

	*clear = 0;
	for (size_t i = 0; i < n; i++) {
		double yh = f->alpha_ns - f->beta_ns * c[i];
		double sh = sqrt(fmax(infl * (f->v_aa + c[i] * c[i] * f->v_bb - 2 * c[i] * f->v_ab), 0));

		nl += yh + z * sh < -floor_ns[i];
		*clear += fabs(yh) + z * sh <= floor_ns[i];
	}
	return nl;
}
