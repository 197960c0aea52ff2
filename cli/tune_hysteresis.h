/* SPDX-License-Identifier: MIT */
/*
 * The hysteresis of `rtune tune` (docs/tuner.md, "Hysteresis"): whether a new run's decision replaces the node's
 * current one, or the current one stays and the run is added to its evidence. Pure functions of the new run's decision
 * (its own per-size evidence and confidence) and the current value; no store, no I/O.
 */
#ifndef RT_TUNE_HYSTERESIS_H
#define RT_TUNE_HYSTERESIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_tuner.h"

enum rt_hyst_action {
	RT_HYST_FIRST = 0, /* no current decision: the run's is taken */
	RT_HYST_KEPT,	   /* the current decision stays */
	RT_HYST_REPLACED,  /* the run's decision differs beyond the between-run noise: it replaces the current one */
	RT_HYST_FORCED,	   /* the operator took the run's decision (--force) */
};

/* "first", "kept", "replaced", "forced". */
const char *rt_hyst_action_name(enum rt_hyst_action a);

/* The verdict of d's signaling decision as stored: "knee" or "not_measured" (and "indifferent" once the tuner states
 * it). */
const char *rt_hyst_signal_verdict(const struct rt_tuner_decision *d);

/*
 * Whether d's inline threshold replaces cur, the node's current threshold. dev_max_inline: what the device allows now
 * (-1 unknown). Replaced when some measured size between the two thresholds is a significant inline win (the run
 * inlines more) or loss (the run inlines less) in d's own evidence, when the run's threshold is more than one measured
 * size step away with at least medium confidence, or when the device no longer allows cur; else kept. *supports
 * tells whether the run counts as evidence of the kept value (false when it did not measure inline). why receives one
 * line (len bytes). Never fails.
 */
enum rt_hyst_action rt_hyst_inline(const struct rt_tuner_decision *d, uint32_t cur, int dev_max_inline, bool *supports,
				   char *why, size_t len);

/*
 * Whether d's signal interval replaces cur_n, the current one, whose verdict was cur_verdict ("" unknown) and
 * confidence cur_conf. Replaced when the run's N lies outside a factor of two of cur_n or its verdict differs (knee /
 * indifferent), with high confidence or a confidence above cur_conf; or when the current N was not measured and the
 * run's is. Kept otherwise, and when the run has no rate sweep. *supports tells whether the run counts as evidence of
 * the kept value (a measured N within a factor of two). why as above.
 */
enum rt_hyst_action rt_hyst_signal(const struct rt_tuner_decision *d, uint32_t cur_n, const char *cur_verdict,
				   enum rt_confidence cur_conf, bool *supports, char *why, size_t len);

#endif
