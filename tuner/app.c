// SPDX-License-Identifier: MIT
/*
 * The reasons the application itself gives once a decision is made (rtune tune --app): an (opcode, QP type) it sent
 * nothing with is decided from the measured curves alone and says so; a send queue that filled while it ran
 * (ibv_post_send returned ENOMEM, counted by the probe) is a warning comparing its send queue with the profile's
 * sq_depth. docs/tuner.md.
 */
#include "tuner_int.h"

#include <stdio.h>

/* Sum of the histogram's counts (0 without one). */
static uint64_t app_messages(const struct rt_tuner_app *a)
{
	uint64_t n = 0;

	for (size_t i = 0; a->bins && i < a->n_bins; i++)
		n += a->bins[i].count;
	return n;
}

void rt__app_reasons(const struct rt_tuner_input *in, const struct rt_tuner_decision *d, struct rt_reasons *r)
{
	const struct rt_tuner_app *a = &in->app[d->op][d->qpt];
	char calls[64] = "";

	if (!in->app_name)
		return;
	if (!app_messages(a)) {
		rt__reason(r, RT_R_APP_SENT_NOTHING, RT_TOPIC_INPUT, RT_SEV_INFO,
			   "application '%.64s' sent nothing with %s on %s QPs: these decisions come from the measured "
			   "curves alone",
			   in->app_name, rt_opcode_name(d->op), rt_qp_type_name(d->qpt));
		return;
	}
	if (!a->sq_full_enomem)
		return;
	if (a->post_calls)
		snprintf(calls, sizeof(calls), " in %llu post calls", (unsigned long long)a->post_calls);
	if (a->max_send_wr && d->sq_depth && a->max_send_wr < d->sq_depth)
		rt__reason(r, RT_R_APP_SQ_FULL, RT_TOPIC_QUEUE, RT_SEV_WARN,
			   "the app's send queue was full %llu times%s (ENOMEM from ibv_post_send; its QPs hold %u "
			   "WRs): create them with this profile's sq_depth %u, with one signaled WR in %u",
			   (unsigned long long)a->sq_full_enomem, calls, a->max_send_wr, d->sq_depth,
			   d->signal_interval);
	else if (a->max_send_wr && d->sq_depth)
		rt__reason(
			r, RT_R_APP_SQ_FULL, RT_TOPIC_QUEUE, RT_SEV_WARN,
			"the app's send queue was full %llu times%s (ENOMEM from ibv_post_send) although its QPs hold "
			"%u WRs, at least this profile's sq_depth %u: a deeper queue alone will not prevent it, the "
			"app posts faster than it polls its send completions",
			(unsigned long long)a->sq_full_enomem, calls, a->max_send_wr, d->sq_depth);
	else
		rt__reason(
			r, RT_R_APP_SQ_FULL, RT_TOPIC_QUEUE, RT_SEV_WARN,
			"the app's send queue was full %llu times%s (ENOMEM from ibv_post_send): create its QPs with "
			"at least this profile's sq_depth %u",
			(unsigned long long)a->sq_full_enomem, calls, d->sq_depth);
}
