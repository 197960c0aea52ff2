/* SPDX-License-Identifier: MIT */
/*
 * The tuner: turns a calibration run's measured curves (and optionally an application's message-size histogram) into
 * per (opcode, QP type) decisions — inline threshold, max_inline_data to request, signaling interval N, queue depths,
 * CQ moderation — each with a confidence and the reasons behind it. Pure C11 on arrays: no verbs, SQLite or jansson
 * types; deterministic for a given seed. docs/tuner.md describes the method and the reason codes.
 *
 * Private to rtune (not under include/): the CLI, the store and the tests use it.
 */
#ifndef RT_TUNER_H
#define RT_TUNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rtune/error.h>
#include "rt_model.h"

/* ---- inputs ------------------------------------------------------------------------------------------------ */

/* What the device allows, from `rtune devices` / the run. Unknown values are -1 (max_inline) or 0 (the others). */
struct rt_tuner_limits {
	int max_inline[RT_QPT__COUNT]; /* probed max_inline_data per QP type, -1 = unknown */
	uint32_t max_qp_wr;	       /* device max_qp_wr, 0 = unknown */
	uint32_t max_cqe;	       /* device max_cqe, 0 = unknown */
	uint32_t sq_depth;	       /* SQ depth the rate sweep used, 0 = take it from the rate points */
	bool hardware;		       /* a PCIe device: an inline gain above opts.implausible_gain_ns is flagged */
};

/* One bin of an application's message-size histogram: count messages of lo..hi bytes (inclusive). The probe's
 * buckets (common/rt_hist.h) map one to one: lo = rt_hist_bucket_lo(b), hi = rt_hist_bucket_hi(b). */
struct rt_tuner_hist_bin {
	uint32_t lo, hi;
	uint64_t count;
};

/* What an application sends with one (opcode, QP type) (all fields optional: bins NULL / n_bins 0 = no histogram). */
struct rt_tuner_app {
	const struct rt_tuner_hist_bin *bins; /* non-overlapping; any order */
	size_t n_bins;
	uint32_t post_list_batch; /* WRs per ibv_post_send call, 0 = unknown (taken as 1) */
	uint64_t post_calls;	  /* post calls of the QPs that sent it, 0 = unknown */
	uint64_t sq_full_enomem;  /* of those, refused with ENOMEM because the send queue was full */
	uint32_t max_send_wr;	  /* the smallest send queue (max_send_wr) of those QPs, 0 = unknown */
};

/* Everything the tuner reads; all arrays are borrowed and only read. */
struct rt_tuner_input {
	const struct rt_lat_point *lat; /* any order, any mix of opcodes, QP types, kinds */
	size_t n_lat;
	const struct rt_rate_point *rate;
	size_t n_rate;
	struct rt_tuner_limits limits;
	const struct rt_cq_moderation *cqmod;		      /* RT_OP__COUNT entries indexed by opcode, or NULL */
	struct rt_tuner_app app[RT_OP__COUNT][RT_QPT__COUNT]; /* indexed by opcode and QP type */
	const char *app_name; /* the application app[][] describes (NULL = none): a decision of an (opcode, QP type)
				 without histogram says the app sent nothing with it */
};

/* Knobs; rt_tuner_opts_default() fills the documented defaults. Times are in the unit of the input (ns normally). */
struct rt_tuner_opts {
	uint64_t seed;		       /* PRNG seed (default 1); same seed + same input = same output */
	double tolerance;	       /* signal_interval: rate within this fraction of the best (default 0.015) */
	uint32_t sq_cap_divisor;       /* N <= sq_depth / this (default 4) */
	uint32_t flat_signal_interval; /* N when the rate does not depend on N (default 16, capped like any N) */
	uint32_t n_boot;	       /* bootstrap replicates, 20..100000 (default 200) */
	double ci_level;	       /* level of the per-size CIs and the rank test (default 0.95) */
	double input_ci_level;	       /* level of the points' ci_lo/ci_hi (default 0.95, what calibrate stores) */
	double floor_rel;	       /* noise floor = max(floor_rel * median, floor_abs_ns) (default 0.01) */
	double floor_abs_ns;	       /* (default 20) */
	double implausible_gain_ns;    /* hardware inline gain above this is flagged (default 2500: ~3 PCIe RTTs) */
	double hist_gain_keep;	       /* with a histogram: smallest threshold keeping this share of the best gain
					   (default 0.99) */
	int kind;		       /* latency kind to use: -1 = auto (post -> completion when it has 4 paired
					   sizes, else ping-pong), else an enum rt_lat_kind */
};

/* ---- outputs ----------------------------------------------------------------------------------------------- */

enum rt_confidence { RT_CONF_LOW = 0, RT_CONF_MEDIUM = 1, RT_CONF_HIGH = 2 };

/* How inline compares with non-inline at one size (d = non-inline - inline median latency, f = noise floor). */
enum rt_size_class {
	RT_SIZE_WIN = 0,      /* CI of d above 0 and d > f (rank test agreeing when raw samples exist) */
	RT_SIZE_NOT_WORSE,    /* CI of d above -f: any loss is within the noise floor */
	RT_SIZE_LOSS,	      /* CI of d below 0 and d < -f (rank test agreeing) */
	RT_SIZE_INCONCLUSIVE, /* none of the above: the CI is too wide */
	RT_SIZE_INDIFFERENT,  /* CI of d within [-f, f]: the difference is below the practical floor either way */
};

/* What the signaling sweep says about N. */
enum rt_signal_verdict {
	RT_SIGNAL_NOT_MEASURED = 0, /* no rate sweep: N = 1 */
	RT_SIGNAL_KNEE,		    /* t_cqe is significant: N is the smallest that gets within tolerance */
	RT_SIGNAL_INDIFFERENT,	    /* the rate does not depend on N beyond its noise: a stated default N */
};

enum rt_reason_topic { RT_TOPIC_INLINE = 0, RT_TOPIC_SIGNAL, RT_TOPIC_QUEUE, RT_TOPIC_CQ_MOD, RT_TOPIC_INPUT };
enum rt_reason_severity { RT_SEV_INFO = 0, RT_SEV_WARN };

/* Stable machine codes of the reasons (their names, rt_reason_code_name(), are part of the public formats). */
enum rt_reason_code {
	RT_R_INLINE_THRESHOLD = 0,	   /* "inline_threshold": where and why inline stops */
	RT_R_INLINE_NEVER_BETTER,	   /* "inline_never_better": threshold 0, inline never measurably better */
	RT_R_LIMITED_BY_DEVICE_MAX_INLINE, /* "limited_by_device_max_inline": inline still wins at the device limit */
	RT_R_LIMITED_BY_MEASURED_RANGE,	   /* "limited_by_measured_range": still wins at the largest size measured */
	RT_R_HISTOGRAM_THRESHOLD,	   /* "histogram_threshold": threshold chosen for the app's histogram */
	RT_R_EXPECTED_GAIN,		   /* "expected_gain": ns per message and % */
	RT_R_KNEEDLE_KNEE,		   /* "kneedle_knee": where Kneedle sees the benefit fall off (evidence) */
	RT_R_RANK_TEST_DISAGREES,	 /* "rank_test_disagrees": bootstrap and Mann-Whitney disagree at some sizes */
	RT_R_SIGNAL_INTERVAL,		 /* "signal_interval": the chosen N and the rates behind it */
	RT_R_SIGNAL_CAPPED_BY_SQ,	 /* "signal_capped_by_sq_depth": the knee lies above sq_depth / divisor */
	RT_R_SIGNAL_RAISED_TO_BATCH,	 /* "signal_raised_to_batch": N raised to the app's post-list batch */
	RT_R_NO_LATENCY_DATA,		 /* "no_latency_data": no inline/non-inline pair for this opcode */
	RT_R_NO_RATE_DATA,		 /* "no_rate_data": no rate sweep; N = 1 (signal every WR) */
	RT_R_SQ_OVERFLOW_SEEN,		 /* "sq_overflow_seen": ENOMEM counted during the sweep */
	RT_R_QUEUE_DEPTHS,		 /* "queue_depths": why these sq_depth / cq_depth */
	RT_R_CQ_MODERATION,		 /* "cq_moderation": recommended (count, period) */
	RT_R_CQ_MODERATION_NO_GAIN,	 /* "cq_moderation_no_gain": measured, no gain beyond tolerance */
	RT_R_CQ_MODERATION_UNSUPPORTED,	 /* "cq_moderation_unsupported": the device refused ibv_modify_cq */
	RT_R_CQ_MODERATION_NOT_MEASURED, /* "cq_moderation_not_measured" */
	RT_R_INSUFFICIENT_DATA,		 /* "insufficient_data": noise too high; text gives the budget needed */
	RT_R_TOO_FEW_POINTS,		 /* "too_few_points" */
	RT_R_NON_MONOTONE,		 /* "non_monotone": a curve goes the wrong way beyond its noise */
	RT_R_MULTI_KNEE,		 /* "multi_knee": Kneedle finds more than one knee */
	RT_R_IMPLAUSIBLE_GAIN,		 /* "implausible_gain": physically implausible numbers */
	RT_R_INVALID_POINT,		 /* "invalid_point": a point was dropped (NaN, negative, inconsistent) */
	RT_R_SIGNAL_INDIFFERENT,	 /* "signal_indifferent": the rate does not depend on N here */
	RT_R_APP_SENT_NOTHING,		 /* "app_sent_nothing": the app has no histogram for this (opcode, QP type) */
	RT_R_APP_SQ_FULL,		 /* "app_sq_full": the app's send queue filled (ENOMEM from ibv_post_send) */
	RT_R_SERIES_DISAGREE,		 /* "series_disagree": a knee resting on a minority of the rate series */
	RT_R__COUNT
};

#define RT_TUNER_REASON_LEN 512

struct rt_tuner_reason {
	enum rt_reason_code code;
	enum rt_reason_topic topic;
	enum rt_reason_severity severity;
	char text[RT_TUNER_REASON_LEN]; /* one line, numbers included, no trailing newline */
};

/* One measured size of the inline comparison, as evaluated. */
struct rt_tuner_size {
	uint32_t msg_bytes;
	double noninl_ns, inl_ns;      /* medians */
	double d_ns, d_lo_ns, d_hi_ns; /* d = non-inline - inline, with its bootstrap CI at opts.ci_level */
	double floor_ns;	       /* noise floor at this size */
	double rank_p;		       /* Mann-Whitney two-sided p, NaN without raw samples on both sides */
	uint32_t n_noninl, n_inl;      /* samples behind each median */
	bool from_raw;		       /* CI bootstrapped from raw samples (else from the points' median/CI) */
	enum rt_size_class cls;
};

enum rt_cq_mod_advice {
	RT_CQMOD_NOT_MEASURED = 0,
	RT_CQMOD_UNSUPPORTED,
	RT_CQMOD_OFF, /* measured, no gain beyond the tolerance: leave moderation off */
	RT_CQMOD_ON,  /* use (cq_mod_count, cq_mod_period_us) */
};

/* The decisions for one (opcode, QP type). */
struct rt_tuner_decision {
	enum rt_opcode op;
	enum rt_qp_type qpt;
	/* inline */
	bool inline_measured;	   /* false: no inline/non-inline pair, threshold 0 by default */
	enum rt_lat_kind kind;	   /* latency kind the inline decision used */
	uint32_t inline_threshold; /* bytes; inline messages of <= this size; 0 = never inline */
	uint32_t max_inline_data;  /* to request at QP creation: just enough for the threshold */
	uint32_t crossover_bytes;  /* largest measured size up to which inline is never a significant loss */
	uint32_t kneedle_bytes;	   /* Kneedle's knee of d(log2 size) (evidence), 0 = none */
	double inline_stability;   /* share of bootstrap replicates within one size step of the threshold */
	enum rt_confidence inline_confidence;
	/* expected gain: for the app's histogram when given, else for messages <= threshold */
	bool gain_from_histogram;
	double gain_ns_per_msg, gain_pct;
	double hist_share_inlined; /* share of the app's messages <= threshold (0 without histogram) */
	/* signaling */
	bool signal_measured;	     /* false: no rate sweep, N = 1 */
	uint32_t signal_interval;    /* signal one WR in N */
	uint32_t signal_kneedle;     /* Kneedle's knee of rate(log2 N) (evidence), 0 = none */
	double mops_at_n, mops_best; /* fitted rate at N and as N grows, of the series that set N */
	enum rt_signal_verdict signal_verdict;
	/* the fit 1/rate = t_post + t_cqe / N: t_post of the fastest series, t_cqe pooled over the series, with its CI at
	   opts.ci_level (NaN when not measured) */
	double t_post_ns, t_cqe_ns, t_cqe_lo_ns, t_cqe_hi_ns;
	double signal_stability;
	enum rt_confidence signal_confidence;
	/* queues and CQ moderation */
	uint32_t sq_depth, cq_depth;
	enum rt_cq_mod_advice cq_mod;
	uint32_t cq_mod_count, cq_mod_period_us;
	/* overall */
	enum rt_confidence confidence; /* the lower of inline and signal confidence */
	double budget_needed_s;	       /* with insufficient_data: extra measuring time suggested, else 0 */
	size_t n_sizes;
	struct rt_tuner_size *sizes; /* ascending msg_bytes */
	size_t n_reasons;
	struct rt_tuner_reason *reasons;
};

/* All decisions of one tuner run, sorted by (opcode, QP type). Owned by the caller: rt_tuner_result_free(). */
struct rt_tuner_result {
	size_t n;
	struct rt_tuner_decision *d;
	uint64_t seed; /* the seed used */
};

/* ---- API --------------------------------------------------------------------------------------------------- */

/* Fills *opts with the defaults documented in struct rt_tuner_opts. opts must not be NULL. */
void rt_tuner_opts_default(struct rt_tuner_opts *opts);

/*
 * Fills *in from a run: its points, device limits (max inline per QP type, max_qp_wr, max_cqe, PCIe or not), SQ
 * depth and CQ moderation. Borrows run's arrays (keep run alive while in is used); no histogram is set (fill
 * in->app[op][qpt] and in->app_name yourself). run and in must not be NULL.
 */
void rt_tuner_input_from_run(struct rt_tuner_input *in, const struct rt_run *run);

/*
 * Computes the decisions for every (opcode, QP type) that has latency or rate points. opts may be NULL (defaults).
 * On success returns 0 and fills *out, which the caller releases with rt_tuner_result_free(); degenerate data is not
 * an error but named in the reasons. Errors: EINVAL (NULL in/out, bad option, malformed histogram), ENODATA (no
 * point at all), ENOMEM; *out is then empty and err (may be NULL) says why.
 */
int rt_tuner_run(const struct rt_tuner_input *in, const struct rt_tuner_opts *opts, struct rt_tuner_result *out,
		 struct rt_error *err);

/* Releases everything *res owns and empties it; res may be NULL, a second call is harmless. */
void rt_tuner_result_free(struct rt_tuner_result *res);

/*
 * Renders the decisions and their reasons as human-readable text (a few lines per decision, each reason as
 * "[code] text"), into a malloc'd NUL-terminated string *text the caller frees. Returns 0, EINVAL or ENOMEM.
 */
int rt_tuner_format_text(const struct rt_tuner_result *res, char **text, struct rt_error *err);

/* Stable names: "low"/"medium"/"high"; "win"/"not_worse"/"loss"/"inconclusive"/"indifferent"; the reason codes above;
 * "not_measured"/"knee"/"indifferent" (rt_signal_verdict_name);
 * "not_measured"/"unsupported"/"off"/"on". Out-of-range values give "unknown". */
const char *rt_confidence_name(enum rt_confidence c);
const char *rt_size_class_name(enum rt_size_class c);
const char *rt_reason_code_name(enum rt_reason_code c);
const char *rt_cq_mod_advice_name(enum rt_cq_mod_advice a);
const char *rt_signal_verdict_name(enum rt_signal_verdict v);

/*
 * Builds histogram bins from the probe's bucket counts (RT_HIST_BUCKETS entries, common/rt_hist.h), skipping empty
 * buckets. *bins is malloc'd (caller frees), *n_bins its length (0 and NULL when every count is 0).
 * Returns 0, EINVAL or ENOMEM.
 */
int rt_tuner_hist_from_buckets(const uint64_t *counts, struct rt_tuner_hist_bin **bins, size_t *n_bins,
			       struct rt_error *err);

/* ---- building blocks (used by the tuner, exported for its tests and benchmark) ------------------------------ */

enum rt_knee_curve { RT_KNEE_CONCAVE = 0, RT_KNEE_CONVEX };
enum rt_knee_dir { RT_KNEE_INCREASING = 0, RT_KNEE_DECREASING };

/*
 * Kneedle (Satopää et al., 2011) on n points with strictly increasing x: normalises both axes to [0, 1], turns the
 * stated shape into the concave-increasing case, and reports each local maximum of the difference curve that the
 * curve later falls below (threshold: S * mean x step, S = sensitivity, 1 in the paper). Writes up to max_knees knee
 * indices (into x/y, ascending) to knees, their count to *n_knees, and the index of the strongest knee to *best
 * (SIZE_MAX when none). best and knees may be NULL. Returns 0, or EINVAL (n < 3, x not increasing, NaN).
 */
int rt_tuner_kneedle(const double *x, const double *y, size_t n, enum rt_knee_curve curve, enum rt_knee_dir dir,
		     double sensitivity, size_t *knees, size_t max_knees, size_t *n_knees, size_t *best,
		     struct rt_error *err);

/*
 * Mann-Whitney U test of two ascending-sorted samples, normal approximation with tie and continuity correction.
 * Returns the two-sided p value (1 when either sample is empty) and sets *z (may be NULL): z > 0 when a tends to be
 * larger than b.
 */
double rt_tuner_mann_whitney(const float *a, size_t na, const float *b, size_t nb, double *z);

/*
 * Weighted isotonic regression (pool adjacent violators) of y[0..n) with weights w (NULL = all 1), non-decreasing
 * when increasing is true, else non-increasing. Writes n fitted values to fit (may alias y). Returns 0, EINVAL or
 * ENOMEM.
 */
int rt_tuner_isotonic(const double *y, const double *w, size_t n, bool increasing, double *fit);

#endif
