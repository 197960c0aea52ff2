/* SPDX-License-Identifier: MIT */
/*
 * The latency point scheduler of `rtune calibrate`: plans the grid (opcode x qp type x kind x size x inline), samples it in
 * rounds; each round visits every active inline/non-inline pair once in seeded random order, and a visit measures both
 * sides in small alternating blocks (inline, non-inline, inline, ... seeded which comes first), so that a stall or drift
 * hits both sides of a pair alike. The CI of each point's median carries the between-block spread (rt_stats_block_ci). A
 * pair stops by the stopping rule (rt_stats.h) -- early where the answer is already clear, late where the two overlap,
 * i.e. near the crossover -- but only once it was sampled in at least two rounds separated in time and both of its
 * points are stationary (split-half test on block medians); a pair whose verdict (inline significantly faster or slower)
 * is the opposite of both of its neighbours in size is re-measured in later rounds before the run ends. Adds refinement
 * sizes between the two sizes where the inline advantage ends, and stops everything at a deadline. Pure C: the
 * measurement and the clock are callbacks, so it is unit-tested with synthetic curves and a fake clock.
 */
#ifndef RT_SCHED_H
#define RT_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_model.h"
#include "rt_stats.h"

struct rt_sched_cell {
	enum rt_opcode op;
	enum rt_qp_type qpt;
	enum rt_lat_kind kind;
	uint32_t msg_bytes;
	bool inl;
};

struct rt_sched_point {
	struct rt_sched_cell cell;
	double *samples; /* every sample so far (at most rule.max_samples), ns, in time order */
	size_t n;
	double *sorted;	 /* the same, sorted (merged in after each visit) */
	double *blk_med; /* the median of each measured block, in time order */
	size_t n_blk, cap_blk;
	struct rt_summary sum; /* summary of samples with the block-widened CI (kept up to date after each visit) */
	double cpu_ns;	       /* thread CPU time spent on its samples */
	bool refined;	       /* added by refinement */
	bool stationary;       /* the split-half test on its block medians (true until there are 4 blocks) */
	unsigned rounds;       /* rounds in which it got samples */
};

/* Why a pair was re-measured */
enum rt_sched_why {
	RT_SCHED_WHY_NONE = 0,
	RT_SCHED_WHY_ISOLATED, /* its verdict was the opposite of both neighbours' (or of its only neighbour's) */
};

struct rt_sched_pair {
	size_t inl, non;      /* indices into pts */
	enum rt_stop state;   /* RT_STOP_CONTINUE while active */
	unsigned batches;     /* visits */
	unsigned rounds;      /* distinct rounds in which it was visited */
	uint64_t t_first;     /* clock of its first visit */
	uint64_t t_last;      /* clock after its last visit */
	unsigned need_visits; /* re-measurement visits still owed (it cannot stop before) */
	unsigned remeasured;  /* times it was flagged for re-measurement */
	int sign_before;      /* its verdict when it was last flagged: +1 inline faster, -1 slower */
	enum rt_sched_why why;
};

/*
 * Measures n samples of cell into samples_out (ns each) and adds the thread CPU time it used to *cpu_ns.
 * Returns 0, or an errno that aborts the schedule (EINTR on SIGINT, EIO on a completion error, ...).
 */
typedef int (*rt_sched_measure_fn)(void *ctx, const struct rt_sched_cell *cell, size_t n, double *samples_out,
				   double *cpu_ns);
typedef uint64_t (*rt_sched_clock_fn)(void *ctx);
typedef void (*rt_sched_progress_fn)(void *ctx, double frac_done, double eta_s);

struct rt_sched {
	struct rt_stop_rule rule;
	struct rt_rng rng;
	size_t first_batch;	   /* samples per point in round 0 (every planned point gets these first) */
	size_t batch;		   /* samples per point per later round */
	size_t block;		   /* samples per alternating block within a visit (default 16) ... */
	size_t min_visit_blocks;   /* ... but small enough for this many blocks per side and visit (default 2) */
	unsigned min_rounds;	   /* a pair stops only after visits in this many rounds (default 2) ... */
	uint64_t min_span_ns;	   /* ... the first and the last at least this far apart (default 0) */
	size_t min_blocks;	   /* and each point has this many blocks (default 4) */
	unsigned remeasure_visits; /* visits owed by a pair flagged as isolated (default 2) */
	unsigned max_remeasure;	   /* times a pair can be flagged (default 1) */
	bool refine;		   /* add refinement sizes once the power-of-two grid is sampled */
	uint32_t max_refine_bytes; /* refinement sizes must not exceed this (the inline limit used) */
	struct rt_sched_point *pts;
	size_t n_pts, cap_pts;
	struct rt_sched_pair *pairs;
	size_t n_pairs, cap_pairs;
	unsigned rounds;
	uint64_t hard_deadline_ns; /* round 0 stops here too (default: never) */
	bool deadline_hit;
	bool refine_done;
	bool refined_groups[RT_OP__COUNT][RT_QPT__COUNT][RT_LAT__COUNT];
};

/* Powers of two from 1 up to max_bytes (inclusive), at most cap of them, into out; returns the count. */
size_t rt_sched_pow2_sizes(uint32_t max_bytes, uint32_t *out, size_t cap);
/*
 * The default latency grid: the powers of two up to max_bytes and, when max_bytes (the probed max inline, or the size
 * cap) is not a power of two, the midpoint between the last power of two and max_bytes and max_bytes itself, so that an
 * inline threshold can reach the device's own maximum (mlx5 RC: several hundred bytes; irdma: about 100 B). At most cap
 * sizes, ascending; returns the count (0 when max_bytes is 0).
 */
size_t rt_sched_default_sizes(uint32_t max_bytes, uint32_t *out, size_t cap);

/* Up to three sizes strictly between lo and hi at its quarter points (deduplicated, ascending); returns the count. */
size_t rt_sched_refine_sizes(uint32_t lo, uint32_t hi, uint32_t *out, size_t cap);

/*
 * Where the inline advantage ends on a curve sorted by size: the first i where inline is significantly faster (disjoint
 * median CIs, inline lower) at sizes[i] and not at sizes[i+1]; failing that the first i where inline is not
 * significantly slower at i but is at i+1. Returns i, or -1 when there is no such transition.
 */
long rt_sched_inline_end(const struct rt_summary *inl, const struct rt_summary *non, size_t n);

/* The verdict of a pair: +1 when inline is significantly faster (disjoint CIs), -1 significantly slower, 0 neither. */
int rt_sched_sign(const struct rt_summary *inl, const struct rt_summary *non);

/*
 * Whether the verdict at i of a curve of n signs (sorted by size) is isolated: non-zero, and the opposite of both
 * neighbours' (of the only neighbour's at either end).
 */
bool rt_sched_isolated(const int *sign, size_t n, size_t i);

/* Pairs flagged for re-measurement so far (pairs with remeasured > 0). */
size_t rt_sched_n_remeasured(const struct rt_sched *s);

/* Initialises s (no points yet). Returns 0. */
void rt_sched_init(struct rt_sched *s, const struct rt_stop_rule *rule, uint64_t seed);

/* Adds an inline/non-inline pair for the cell (cell.inl ignored). Returns 0 or ENOMEM. */
int rt_sched_add_pair(struct rt_sched *s, enum rt_opcode op, enum rt_qp_type qpt, enum rt_lat_kind kind,
		      uint32_t msg_bytes, bool refined);

/*
 * Runs rounds until every pair is stopped or clock(ctx) >= deadline_ns (checked before every visit; round 0 is
 * finished regardless unless s->hard_deadline_ns passes or measure fails, so every planned point has samples when the
 * budget allows at least one visit each). After each round the curves are checked for isolated verdicts; a flagged pair
 * becomes active again and is visited first in the next rounds. Sets deadline_hit when a deadline ended it. Returns 0,
 * or the first error of measure (the points keep what was measured). progress may be NULL.
 */
int rt_sched_run(struct rt_sched *s, uint64_t deadline_ns, rt_sched_measure_fn measure, rt_sched_clock_fn clock,
		 rt_sched_progress_fn progress, void *ctx);

/* Frees what s owns. */
void rt_sched_free(struct rt_sched *s);

#endif
