// SPDX-License-Identifier: MIT
/*
 * Kneedle (V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a Haystack: Detecting Knee Points
 * in System Behavior", ICDCS workshops 2011), offline form: normalise, map the stated curve shape onto the
 * concave-increasing case, take the difference curve y - x, and accept a local maximum of it as a knee when the
 * difference later drops below (local max - S * mean x step) before the next local maximum.
 */
#include "tuner_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_size(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	return (a > b) - (a < b);
}

int rt_tuner_kneedle(const double *x, const double *y, size_t n, enum rt_knee_curve curve, enum rt_knee_dir dir,
		     double sensitivity, size_t *knees, size_t max_knees, size_t *n_knees, size_t *best,
		     struct rt_error *err)
{
	double ymin, ymax, thr = 0, best_diff = -INFINITY, step;
	double *diff;
	size_t *order, found = 0, pending = SIZE_MAX;
	int flip_x = (curve == RT_KNEE_CONCAVE) == (dir == RT_KNEE_DECREASING);
	int flip_y = curve == RT_KNEE_CONVEX;

	if (n_knees)
		*n_knees = 0;
	if (best)
		*best = SIZE_MAX;
	if (!x || !y || n < 3)
		return rt_error_set(err, EINVAL, "kneedle needs at least 3 points");
	ymin = ymax = y[0];
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			return rt_error_set(err, EINVAL, "kneedle: non-finite point %zu", i);
		if (i && !(x[i] > x[i - 1]))
			return rt_error_set(err, EINVAL, "kneedle: x must be strictly increasing (point %zu)", i);
		ymin = fmin(ymin, y[i]);
		ymax = fmax(ymax, y[i]);
	}
	if (ymax == ymin)
		return 0;
	diff = malloc(n * sizeof(*diff));
	order = malloc(n * sizeof(*order));
	if (!diff || !order) {
		free(diff);
		free(order);
		return rt_error_set(err, ENOMEM, "kneedle: out of memory");
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = flip_x ? n - 1 - k : k;
		double xn = (x[i] - x[0]) / (x[n - 1] - x[0]);
		double yn = (y[i] - ymin) / (ymax - ymin);

		order[k] = i;
		diff[k] = (flip_y ? 1 - yn : yn) - (flip_x ? 1 - xn : xn);
	}
	step = 1.0 / (double)(n - 1); /* mean step of the normalised x */
	for (size_t k = 1; k < n; k++) {
		if (pending != SIZE_MAX && diff[k] < thr) {
			if (knees && found < max_knees)
				knees[found] = order[pending];
			if (diff[pending] > best_diff) {
				best_diff = diff[pending];
				if (best)
					*best = order[pending];
			}
			found++;
			pending = SIZE_MAX;
		}
		if (k + 1 < n && diff[k] >= diff[k - 1] && diff[k] > diff[k + 1]) {
			pending = k;
			thr = diff[k] - sensitivity * step;
		}
	}
	if (knees)
		qsort(knees, found < max_knees ? found : max_knees, sizeof(*knees), cmp_size);
	if (n_knees)
		*n_knees = found;
	free(diff);
	free(order);
	return 0;
}

size_t rt__knee_evidence(const double *x, const double *fit, size_t n, enum rt_knee_dir dir, double theta, int *n_sig)
{
	size_t knees[16], nk = 0, best = SIZE_MAX, pick = SIZE_MAX;
	double lo = INFINITY, hi = -INFINITY;

	*n_sig = 0;
	for (size_t i = 0; i < n; i++) {
		lo = fmin(lo, fit[i]);
		hi = fmax(hi, fit[i]);
	}
	if (n < 3 || !(hi - lo > theta))
		return SIZE_MAX; /* flat within the noise: no knee to speak of */
	if (rt_tuner_kneedle(x, fit, n, RT_KNEE_CONCAVE, dir, 1.0, knees, 16, &nk, &best, NULL))
		return SIZE_MAX;
	nk = nk < 16 ? nk : 16;
	for (size_t j = 0; j < nk; j++) {
		/* the change on the knee's steep side: before it when increasing, after it when decreasing */
		double change = dir == RT_KNEE_INCREASING ? fit[knees[j]] - fit[j ? knees[j - 1] : 0]
							  : fit[knees[j]] - fit[j + 1 < nk ? knees[j + 1] : n - 1];

		if (change > theta) {
			(*n_sig)++;
			if (pick == SIZE_MAX || knees[j] == best)
				pick = knees[j];
		}
	}
	return pick;
}
