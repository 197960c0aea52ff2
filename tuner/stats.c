// SPDX-License-Identifier: MIT
/*
 * Statistics building blocks of the tuner: selection and sorting of samples, the normal quantile, the Mann-Whitney rank
 * test and weighted isotonic regression (pool adjacent violators).
 */
#include "tuner_int.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

float rt__select_f(float *a, size_t n, size_t k)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

	while (lo < hi) {
		/* median of three as pivot, Hoare partition: afterwards a[lo..j] <= p <= a[i..hi], j < i */
		ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		float x = a[lo], y = a[mid], z = a[hi];
		float p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));

		while (i <= j) {
			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i <= j) {
				float tmp = a[i];

				a[i++] = a[j];
				a[j--] = tmp;
			}
		}
		if (kk <= j)
			hi = j;
		else if (kk >= i)
			lo = i;
		else
			break;
	}
	return a[k];
}

#define TAIL_MAX 32

/* Inserts v into the ascending run a[0..n) dropping the last element (v < a[n-1]). */
static inline void insert_asc(float *a, size_t n, float v)
{
	size_t j = n - 1;

	for (; j > 0 && a[j - 1] > v; j--)
		a[j] = a[j - 1];
	a[j] = v;
}

void rt__tails_f(float *a, size_t n, size_t klo, size_t khi, float *lo, float *hi)
{
	/* keep the klo+1 smallest (ascending) and the n-khi largest (negated, ascending) seen so far */
	float small[TAIL_MAX], large[TAIL_MAX], smax, lmax;
	size_t ns = klo + 1, nl = n - khi;

	/* the one-pass path needs 1..TAIL_MAX of each tail (0 happens only outside klo <= khi < n) */
	if (!ns || !nl || ns > TAIL_MAX || nl > TAIL_MAX || ns > n || nl > n) {
		*lo = rt__select_f(a, n, klo);
		*hi = rt__select_f(a, n, khi);
		return;
	}
	for (size_t i = 0; i < ns; i++)
		insert_asc(small, i + 1, a[i]);
	for (size_t i = 0; i < nl; i++)
		insert_asc(large, i + 1, -a[i]);
	smax = small[ns - 1];
	lmax = large[nl - 1];
	for (size_t i = ns; i < n; i++)
		if (a[i] < smax) {
			insert_asc(small, ns, a[i]);
			smax = small[ns - 1];
		}
	for (size_t i = nl; i < n; i++)
		if (-a[i] < lmax) {
			insert_asc(large, nl, -a[i]);
			lmax = large[nl - 1];
		}
	*lo = smax;
	*hi = -lmax;
}

static void isort_f(float *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		float v = a[i];
		size_t j = i;

		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

void rt__sort_f(float *a, size_t n)
{
	/* quicksort (median of three, Hoare partition), recursing into the smaller side; insertion sort below 24 */
	while (n > 24) {
		size_t mid = n / 2, i = 0, j = n - 1;
		float x = a[0], y = a[mid], z = a[n - 1];
		float p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));

		for (;;) {
			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i >= j)
				break;
			float t = a[i];

			a[i++] = a[j];
			a[j--] = t;
		}
		/* a[0..j] <= p <= a[j+1..n) */
		if (j + 1 < n - j - 1) {
			rt__sort_f(a, j + 1);
			a += j + 1;
			n -= j + 1;
		} else {
			rt__sort_f(a + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	isort_f(a, n);
}

double rt__median_sorted(const float *a, size_t n)
{
	return n % 2 ? a[n / 2] : 0.5 * ((double)a[n / 2 - 1] + (double)a[n / 2]);
}

double rt__norm_ppf(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
				    1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				    6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				    -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				    3.754408661907416e+00 };
	double q, r, x;

	if (p <= 0)
		return -INFINITY;
	if (p >= 1)
		return INFINITY;
	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else if (p <= 1 - 0.02425) {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	} else {
		q = sqrt(-2 * log(1 - p));
		x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	/* one Halley step against erfc */
	{
		double e = 0.5 * erfc(-x / sqrt(2)) - p;
		double u = e * sqrt(2 * M_PI) * exp(x * x / 2);

		x = x - u / (1 + x * u / 2);
	}
	return x;
}

double rt_tuner_mann_whitney(const float *a, size_t na, const float *b, size_t nb, double *z)
{
	/* Walk the merged order; each run of equal values gets the mean rank. U_a = R_a - na(na+1)/2. */
	double ra = 0, ties = 0, rank = 1;
	size_t i = 0, j = 0;
	double n = (double)na + (double)nb, mean, var, u, zz;

	if (z)
		*z = 0;
	if (!na || !nb)
		return 1;
	while (i < na || j < nb) {
		float v = (j >= nb || (i < na && a[i] <= b[j])) ? a[i] : b[j];
		size_t ca = 0, cb = 0;
		double t, mr;

		while (i < na && a[i] == v) {
			i++;
			ca++;
		}
		while (j < nb && b[j] == v) {
			j++;
			cb++;
		}
		t = (double)(ca + cb);
		mr = rank + (t - 1) / 2;
		ra += mr * (double)ca;
		rank += t;
		if (t > 1)
			ties += t * t * t - t;
	}
	u = ra - (double)na * ((double)na + 1) / 2;
	mean = (double)na * (double)nb / 2;
	var = (double)na * (double)nb / 12 * ((n + 1) - ties / (n * (n - 1)));
	if (var <= 0)
		return 1;
	zz = u - mean;
	zz = zz > 0.5 ? zz - 0.5 : (zz < -0.5 ? zz + 0.5 : 0); /* continuity correction */
	zz /= sqrt(var);
	if (z)
		*z = zz;
	return erfc(fabs(zz) / sqrt(2));
}

int rt_tuner_isotonic(const double *y, const double *w, size_t n, bool increasing, double *fit)
{
	/* blocks as a stack: value (weighted mean), weight, length */
	double *bv, *bw;
	size_t *bl, nb = 0, k = 0;
	double sgn = increasing ? 1 : -1;

	if (!y || !fit)
		return EINVAL;
	if (!n)
		return 0;
	bv = malloc(n * sizeof(*bv));
	bw = malloc(n * sizeof(*bw));
	bl = malloc(n * sizeof(*bl));
	if (!bv || !bw || !bl) {
		free(bv);
		free(bw);
		free(bl);
		return ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		double wi = w ? w[i] : 1;

		if (!(wi > 0))
			wi = 1e-12;
		bv[nb] = sgn * y[i];
		bw[nb] = wi;
		bl[nb] = 1;
		nb++;
		while (nb > 1 && bv[nb - 2] > bv[nb - 1]) {
			double ww = bw[nb - 2] + bw[nb - 1];

			bv[nb - 2] = (bv[nb - 2] * bw[nb - 2] + bv[nb - 1] * bw[nb - 1]) / ww;
			bw[nb - 2] = ww;
			bl[nb - 2] += bl[nb - 1];
			nb--;
		}
	}
	for (size_t b = 0; b < nb; b++)
		for (size_t l = 0; l < bl[b]; l++)
			fit[k++] = sgn * bv[b];
	free(bv);
	free(bw);
	free(bl);
	return 0;
}

enum rt_confidence rt__conf_from_stability(double s)
{
	return s >= 0.9 ? RT_CONF_HIGH : s >= 0.6 ? RT_CONF_MEDIUM : RT_CONF_LOW;
}

enum rt_confidence rt__conf_min(enum rt_confidence a, enum rt_confidence b)
{
	return a < b ? a : b;
}

double rt__chi2_quantile(double z_p, double k)
{
	double h = 2 / (9 * k), c = 1 - h + z_p * sqrt(h);

	return k * c * c * c;
}
