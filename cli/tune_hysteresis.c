// SPDX-License-Identifier: MIT
/*
 * The hysteresis rules of `rtune tune`: a run's inline threshold or signal interval replaces the node's current one
 * only when the run's own evidence says the current one is wrong beyond the between-run noise (docs/tuner.md,
 * "Hysteresis"). Each rule returns its action and one line saying why, for the stored record and the output.
 */
#include "tune_hysteresis.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rt_hyst_action_name(enum rt_hyst_action a)
{
	static const char *const names[] = { "first", "kept", "replaced", "forced" };

	return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "unknown";
}

const char *rt_hyst_signal_verdict(const struct rt_tuner_decision *d)
{
	return rt_signal_verdict_name(d->signal_measured ? d->signal_verdict : RT_SIGNAL_NOT_MEASURED);
}

/* Position of threshold t on d's measured size grid: how many measured sizes are <= t (0 = below every size). */
static size_t grid_pos(const struct rt_tuner_decision *d, uint32_t t)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n_sizes; i++)
		if (d->sizes[i].msg_bytes <= t)
			k++;
	return k;
}

enum rt_hyst_action rt_hyst_inline(const struct rt_tuner_decision *d, uint32_t cur, int dev_max_inline, bool *supports,
				   char *why, size_t len)
{
	uint32_t run = d->inline_threshold, lo = run < cur ? run : cur, hi = run < cur ? cur : run;
	size_t steps;

	*supports = false;
	if (!d->inline_measured) {
		snprintf(why, len,
			 "this run did not measure inline against non-inline: inline_threshold %" PRIu32 " B stays",
			 cur);
		return RT_HYST_KEPT;
	}
	if (dev_max_inline >= 0 && cur > (uint32_t)dev_max_inline) {
		snprintf(why, len, "the device now allows at most %d B inline, below the current %" PRIu32 " B",
			 dev_max_inline, cur);
		return RT_HYST_REPLACED;
	}
	if (run == cur) {
		*supports = true;
		snprintf(why, len, "this run found the same threshold, %" PRIu32 " B", cur);
		return RT_HYST_KEPT;
	}
	/* the run's own per-size evidence between the two thresholds: a size the current threshold gets wrong */
	for (size_t i = 0; i < d->n_sizes; i++) {
		const struct rt_tuner_size *s = &d->sizes[i];

		if (s->msg_bytes <= lo || s->msg_bytes > hi)
			continue;
		if ((run > cur && s->cls == RT_SIZE_WIN) || (run < cur && s->cls == RT_SIZE_LOSS)) {
			snprintf(why, len,
				 "%" PRIu32
				 " B is a significant inline %s in this run (non-inline - inline %+.0f ns, CI"
				 " %+.0f..%+.0f ns), which the current %" PRIu32 " B %s",
				 s->msg_bytes, s->cls == RT_SIZE_WIN ? "win" : "loss", s->d_ns, s->d_lo_ns, s->d_hi_ns,
				 cur, s->cls == RT_SIZE_WIN ? "does not inline" : "inlines");
			return RT_HYST_REPLACED;
		}
	}
	steps = grid_pos(d, run) > grid_pos(d, cur) ? grid_pos(d, run) - grid_pos(d, cur)
						    : grid_pos(d, cur) - grid_pos(d, run);
	if (steps > 1 && d->inline_confidence >= RT_CONF_MEDIUM) {
		snprintf(why, len,
			 "this run's %" PRIu32 " B is %zu measured size steps from the current %" PRIu32 " B, with %s"
			 " confidence",
			 run, steps, cur, rt_confidence_name(d->inline_confidence));
		return RT_HYST_REPLACED;
	}
	*supports = true;
	snprintf(why, len,
		 "this run's %" PRIu32 " B is within the between-run noise of the current %" PRIu32
		 " B (%zu size step%s,"
		 " %s confidence, no significant %s between them)",
		 run, cur, steps, steps == 1 ? "" : "s", rt_confidence_name(d->inline_confidence),
		 run > cur ? "win" : "loss");
	return RT_HYST_KEPT;
}

enum rt_hyst_action rt_hyst_signal(const struct rt_tuner_decision *d, uint32_t cur_n, const char *cur_verdict,
				   enum rt_confidence cur_conf, bool *supports, char *why, size_t len)
{
	const char *v = rt_hyst_signal_verdict(d);
	uint32_t run = d->signal_interval ? d->signal_interval : 1;
	/* evidence strong enough to move the answer: high, or stronger than the current answer's */
	bool strong = d->signal_confidence >= RT_CONF_HIGH || d->signal_confidence > cur_conf;
	bool far = (uint64_t)run > 2 * (uint64_t)cur_n || 2 * (uint64_t)run < cur_n;
	bool other = cur_verdict && cur_verdict[0] && strcmp(cur_verdict, v);

	*supports = false;
	if (!d->signal_measured) {
		snprintf(why, len, "this run has no rate sweep: signal_interval %" PRIu32 " stays", cur_n);
		return RT_HYST_KEPT;
	}
	if (cur_verdict && !strcmp(cur_verdict, "not_measured")) {
		snprintf(why, len,
			 "the current signal_interval %" PRIu32 " was not measured; this run measured %" PRIu32, cur_n,
			 run);
		return RT_HYST_REPLACED;
	}
	if ((far || other) && strong) {
		snprintf(why, len,
			 "this run's %s at N %" PRIu32 " %s the current %s at N %" PRIu32 ", with %s confidence%s", v,
			 run, far ? "is outside a factor of two of" : "differs in its verdict from",
			 cur_verdict && cur_verdict[0] ? cur_verdict : "N", cur_n,
			 rt_confidence_name(d->signal_confidence),
			 d->signal_confidence >= RT_CONF_HIGH ? "" : ", above the current answer's");
		return RT_HYST_REPLACED;
	}
	if (far) {
		snprintf(why, len,
			 "this run's N %" PRIu32 " is outside a factor of two of the current %" PRIu32 ", with %s "
			 "confidence, not above the current answer's %s: %" PRIu32 " stays",
			 run, cur_n, rt_confidence_name(d->signal_confidence), rt_confidence_name(cur_conf), cur_n);
		return RT_HYST_KEPT;
	}
	*supports = true;
	if (other)
		snprintf(why, len,
			 "this run says %s at N %" PRIu32 ", within a factor of two of the current %" PRIu32
			 " (%s), with %s confidence, not above the current answer's %s",
			 v, run, cur_n, cur_verdict, rt_confidence_name(d->signal_confidence),
			 rt_confidence_name(cur_conf));
	else if (run == cur_n)
		snprintf(why, len, "this run found the same N, %" PRIu32, cur_n);
	else
		snprintf(why, len, "this run's N %" PRIu32 " is within a factor of two of the current %" PRIu32, run,
			 cur_n);
	return RT_HYST_KEPT;
}
