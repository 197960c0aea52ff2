// SPDX-License-Identifier: MIT
/*
 * The physics of a send queue's message rate, fitted to a signaling sweep: the time per message follows
 * 1/rate = t_post + t_cqe / N (a fixed cost per WR, and one signaled completion's cost shared by the N WRs it
 * retires), up to a floor where something else limits the rate (the wire, the NIC's message rate): per series a
 * weighted least-squares line in x = 1/N with an optional saturated tail, and t_cqe pooled over the series by inverse
 * variance. What N buys then follows from t_cqe and its confidence interval instead of from the noisiest point.
 */
#include "tuner_int.h"

#include <math.h>
#include <string.h>

/* Weighted line y = a + b x over points [0, n): 0, or -1 when the x do not spread. */
static int wls_line(const double *x, const double *y, const double *w, size_t n, double *a, double *b, double *sxx,
		    double *sse)
{
	double sw = 0, mx = 0, my = 0, sxy = 0;

	*sxx = 0;
	for (size_t i = 0; i < n; i++) {
		sw += w[i];
		mx += w[i] * x[i];
		my += w[i] * y[i];
	}
	if (!(sw > 0))
		return -1;
	mx /= sw;
	my /= sw;
	for (size_t i = 0; i < n; i++) {
		*sxx += w[i] * (x[i] - mx) * (x[i] - mx);
		sxy += w[i] * (x[i] - mx) * (y[i] - my);
	}
	if (!(*sxx > 0))
		return -1;
	*b = sxy / *sxx;
	*a = my - *b * mx;
	*sse = 0;
	for (size_t i = 0; i < n; i++) {
		double e = y[i] - *a - *b * x[i];

		*sse += w[i] * e * e;
	}
	return 0;
}

int rt__rate_fit_series(const double *x, const double *y, const double *w, size_t n, struct rt__rate_fit *f)
{
	double best_score = INFINITY;

	memset(f, 0, sizeof(*f));
	f->c = -INFINITY;
	/* k = how many of the largest N (the last points) sit on the floor; the line needs two points */
	for (size_t k = 0; k + 2 <= n; k++) {
		size_t nl = n - k;
		double a, b, sxx, sse, c = -INFINITY, sw = 0, score, phi;
		int p = k ? 3 : 2;

		if (wls_line(x, y, w, nl, &a, &b, &sxx, &sse))
			continue;
		if (k) {
			double line = 0;

			c = 0;
			for (size_t i = nl; i < n; i++) {
				c += w[i] * y[i];
				sw += w[i];
				line += a + b * x[i];
			}
			c /= sw;
			/* a floor lies above where the line would have gone: otherwise it is no saturation */
			if (!(c > line / (double)k))
				continue;
			for (size_t i = nl; i < n; i++)
				sse += w[i] * (y[i] - c) * (y[i] - c);
		}
		/* the floor has to pay for its parameter: a likelihood-ratio test at 1 % (chi-square, 1 df) */
		score = sse + (k ? 6.63 : 0);
		if (!(score < best_score))
			continue;
		best_score = score;
		phi = (int)n > p ? sse / (double)((int)n - p) : 1;
		f->a = a;
		f->b = b;
		f->c = c;
		f->k_sat = k;
		f->n_line = nl;
		f->phi = phi > 1 ? phi : 1;
		f->se_b = sqrt(f->phi / sxx);
		f->ok = 1;
	}
	return f->ok ? 0 : -1;
}

double rt__rate_intercept(const double *x, const double *y, const double *w, size_t n_line, double b)
{
	double sw = 0, s = 0;

	for (size_t i = 0; i < n_line; i++) {
		sw += w[i];
		s += w[i] * (y[i] - b * x[i]);
	}
	return sw > 0 ? s / sw : NAN;
}

uint32_t rt__rate_n_needed(double a, double c, double b, double tol, uint32_t n_max)
{
	double inf = a > c ? a : c, lim = inf / (1 - tol);

	if (!(b > 0))
		return 1;
	for (uint32_t n = 1;; n *= 2) {
		double t = a + b / n;

		if ((t > c ? t : c) <= lim || n >= n_max)
			return n;
	}
}
