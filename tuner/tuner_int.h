/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the tuner's source files: the reason list builder, small statistics helpers and the two
 * analyses (inline from latency points, signaling/queues from rate points). Not for use outside tuner/.
 */
#ifndef RT_TUNER_INT_H
#define RT_TUNER_INT_H

#include "rt_rng.h"
#include "rt_tuner.h"

/* Standard normals shared by every bootstrap of one run (power of two; sizes index it with their own offsets). */
#define RT_POOL_SIZE 8192u

/* State of one tuner run shared by the analyses. */
struct rt_tctx {
	const struct rt_tuner_opts *o;
	struct rt_rng rng;
	float pool[RT_POOL_SIZE]; /* float: the whole pool stays in L1 */
	double z_ci;		  /* two-sided normal quantile of opts.ci_level */
	double z_in;		  /* same for the points' input_ci_level */
	struct rt_error *err;
};

/* Growable reason list of one decision (capacity kept beside it while the decision is built). */
struct rt_reasons {
	struct rt_tuner_decision *d;
	size_t cap;
	int oom; /* set when an append failed: the run returns ENOMEM */
};

/* Appends a reason (printf-style text, truncated to fit). Failures only set r->oom. */
void rt__reason(struct rt_reasons *r, enum rt_reason_code code, enum rt_reason_topic topic, enum rt_reason_severity sev,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* True when the decision already carries a reason with this code. */
int rt__has_reason(const struct rt_tuner_decision *d, enum rt_reason_code code);

/* k-th smallest of a[0..n) (k < n), reordering a. */
float rt__select_f(float *a, size_t n, size_t k);
/* Median of an ascending-sorted array (mean of the middle two when n is even), n > 0. */
double rt__median_sorted(const float *a, size_t n);
/* The klo-th smallest and the khi-th smallest (klo <= khi < n) of a[0..n) in one pass when both lie near the ends
 * (bootstrap percentiles), else by selection; may reorder a. */
void rt__tails_f(float *a, size_t n, size_t klo, size_t khi, float *lo, float *hi);
/* Sorts a[0..n) ascending. */
void rt__sort_f(float *a, size_t n);
/* Normal quantile function (Acklam's rational approximation refined by one Halley step), 0 < p < 1. */
double rt__norm_ppf(double p);
/* The chi-square value that k degrees of freedom exceed with probability 1 - p, z_p the normal quantile of p
   (Wilson-Hilferty: within 1 % for k >= 3 at p = 0.999, 6.58 for the exact 6.63 at k = 1, p = 0.99). */
double rt__chi2_quantile(double z_p, double k);
/* Confidence class from a bootstrap stability share. */
enum rt_confidence rt__conf_from_stability(double s);
/* min of two confidences */
enum rt_confidence rt__conf_min(enum rt_confidence a, enum rt_confidence b);

/*
 * Kneedle as evidence on a fitted concave curve: no knee when the curve moves by less than theta; otherwise the
 * strongest knee whose steep side (before it when increasing, after it when decreasing) changes by more than theta.
 * *n_sig counts such knees (more than one: a multi-knee curve). Returns the knee's index or SIZE_MAX.
 */
size_t rt__knee_evidence(const double *x, const double *fit, size_t n, enum rt_knee_dir dir, double theta, int *n_sig);

/* One rate series fitted as 1/rate = a + b x (x = 1/N, y in ns per message), the last k_sat points (largest N) on a
 * floor c instead (saturation; c = -INFINITY without). se_b is the standard error of b, inflated by phi, the reduced
 * chi-square when the residuals exceed the points' own noise. */
struct rt__rate_fit {
	double a, b, se_b, c, phi;
	size_t k_sat, n_line;
	int ok;
};

/* Fits one series (points ordered by N ascending, i.e. x descending; w = 1/se^2 of y). Returns 0, or -1 when no line
 * fits (fewer than two distinct N). */
int rt__rate_fit_series(const double *x, const double *y, const double *w, size_t n, struct rt__rate_fit *f);
/* The intercept of the line points [0, n_line) given the slope b (weighted mean of y - b x). */
double rt__rate_intercept(const double *x, const double *y, const double *w, size_t n_line, double b);
/* Smallest power of two N (at most the first power of two >= n_max) whose time per message max(a + b/N, c) is within
 * tol of the series' limit max(a, c) as N grows: what N buys. 1 when b <= 0. */
uint32_t rt__rate_n_needed(double a, double c, double b, double tol, uint32_t n_max);

/* The inline benefit's physics over all sizes (inlinefit.c): d = alpha - beta * chunks, one chunk RT__WQE_CHUNK bytes
 * of inline payload (a 64 B WQE basic block). alpha: d at 0 chunks (the DMA read inline avoids); beta: the cost of one
 * chunk copied inline; v_*: their covariance from the weights alone (not scaled by chi2); chi2: the weighted sum of
 * squared residuals. */
#define RT__WQE_CHUNK 64
struct rt__inline_fit {
	double alpha_ns, beta_ns;
	double v_aa, v_bb, v_ab;
	double chi2;
};

/* WQE chunks of an inline payload of bytes (>= 1 for every size above 0). */
double rt__inline_chunks(uint32_t bytes);
/* Fits y = alpha - beta * c to n points with weights w (1 / variance). Returns 0, or -1 when the chunk counts do not
 * vary (no slope can be fitted); f is then unchanged. */
int rt__inline_fit_line(const double *c, const double *y, const double *w, size_t n, struct rt__inline_fit *f);
/* The threshold a fitted line gives: 0 when inline loses at one chunk already, beyond the floor f_ns or beyond its
 * z-CI (se1_ns: the standard error of the fitted d at one chunk; never_n8 under noise: d = -1.5 us at one chunk,
 * within a 1.9 us floor, the crossover's CI 13..56 B); max_bytes when it never loses (beta <= 0); else the last whole
 * chunk before the crossover alpha / beta, at least one chunk (a loss within the floor and the noise does not end the
 * range), at most max_bytes. The crossover and not where d falls below -f_ns: that moves the answer by f_ns / beta
 * chunks, onto the boundary between two chunks when a chunk costs about the floor (x64_n8's UD round trips: 2 us per
 * chunk, a 1.8 us floor, 64 and 128 B alternately). */
uint32_t rt__inline_fit_threshold(double alpha_ns, double beta_ns, double f_ns, double se1_ns, double z,
				  uint32_t max_bytes);
/* How many of the n sizes (chunk counts c, floors floor_ns) the line shows inline to lose at: the fitted d below minus
 * the floor by more than its z-CI (covariance scaled by infl), the whole CI below -floor. *clear counts the sizes whose
 * fitted d lies within the floor, CI and all. */
size_t rt__inline_fit_losses(const struct rt__inline_fit *f, const double *c, const double *floor_ns, size_t n,
			     double infl, double z, size_t *clear);

/* Inline analysis of one (op, qpt): lat points of that pair only (pointers), app histogram of the opcode. */
int rt__inline_analyse(struct rt_tctx *t, const struct rt_lat_point *const *pts, size_t n,
		       const struct rt_tuner_input *in, struct rt_tuner_decision *d, struct rt_reasons *r);
/* Signaling, queue depths and CQ moderation of one (op, qpt): its rate points (pointers). */
int rt__signal_analyse(struct rt_tctx *t, const struct rt_rate_point *const *pts, size_t n,
		       const struct rt_tuner_input *in, struct rt_tuner_decision *d, struct rt_reasons *r);
/* What the application (in->app_name) tells about one decision once both analyses ran: that it sent nothing with
 * this (opcode, QP type), or that its send queue filled. Failures only set r->oom. tuner/app.c. */
void rt__app_reasons(const struct rt_tuner_input *in, const struct rt_tuner_decision *d, struct rt_reasons *r);

#endif
