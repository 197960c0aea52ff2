/* SPDX-License-Identifier: MIT */
/*
 * The concurrency band of `rtune calibrate --app NAME` sized from what the probe saw the application do: the QPs of
 * its busiest RC class and the threads that posted on them (schema v10 histograms). Pure: reads histograms only.
 */
#ifndef RT_APP_CONCURRENCY_H
#define RT_APP_CONCURRENCY_H

#include <stddef.h>
#include <stdint.h>

#include "rt_store.h"

/* The band's limits (the engine's RT_CONC_MAX_QPS and RT_CONC_MAX_THREADS). */
#define RT_APP_CONC_MAX_QPS 64u
#define RT_APP_CONC_MAX_THREADS 16u
/* The default thread count when the app's histogram did not record its posting threads (a probe before v10). */
#define RT_APP_CONC_DEFAULT_THREADS 2u

/* Why the sizing came out as it did (printed by calibrate as one line). */
enum rt_app_conc_note {
	RT_APP_CONC_AS_SEEN = 0,     /* Q and T as the app ran */
	RT_APP_CONC_ONE_QP,	     /* the app posts on one QP: no band (qps 0) */
	RT_APP_CONC_THREADS_UNKNOWN, /* threads not recorded: the default, capped by Q */
	RT_APP_CONC_SHARED_QPS,	     /* more threads than QPs (they share QPs): T = Q, each thread owning one */
	RT_APP_CONC_CAPPED,	     /* more QPs or threads than the band takes: capped */
};

/*
 * From the app's RC histograms h[0..n) (any order; NULL entries' qps 0 are passed over): Q = the most QPs of one class
 * (send or write: the app's QPs carry both, the class that used more of them counts), T = the posting threads of that
 * class (ties: the one with more threads). Q < 2: no band (*qps = *threads = 0, RT_APP_CONC_ONE_QP). T unknown (0):
 * RT_APP_CONC_DEFAULT_THREADS capped by Q. T > Q: T = Q. Both capped by the band's limits. Never fails.
 */
enum rt_app_conc_note rt_cli_app_concurrency(const struct rt_store_histogram *h, size_t n, uint32_t *qps,
					     uint32_t *threads);

#endif
