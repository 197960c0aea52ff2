// SPDX-License-Identifier: MIT
/*
 * Sizes the rate sweep's concurrency band from an application's probed histograms (see app_concurrency.h): as many
 * QPs as it ran, driven by as many threads as posted on them, within the band's limits.
 */
#include "app_concurrency.h"

enum rt_app_conc_note rt_cli_app_concurrency(const struct rt_store_histogram *h, size_t n, uint32_t *qps,
					     uint32_t *threads)
{
	const struct rt_store_histogram *best = NULL;
	enum rt_app_conc_note note = RT_APP_CONC_AS_SEEN;
	uint32_t q, t;

	for (size_t i = 0; i < n; i++)
		if (h[i].qps &&
		    (!best || h[i].qps > best->qps || (h[i].qps == best->qps && h[i].threads > best->threads)))
			best = &h[i];
	if (!best || best->qps < 2) {
		*qps = *threads = 0;
		return RT_APP_CONC_ONE_QP;
	}
	q = best->qps;
	t = best->threads;
	if (!t) {
		t = RT_APP_CONC_DEFAULT_THREADS;
		note = RT_APP_CONC_THREADS_UNKNOWN;
	}
	if (t > q) {
		t = q;
		if (note == RT_APP_CONC_AS_SEEN)
			note = RT_APP_CONC_SHARED_QPS;
	}
	if (q > RT_APP_CONC_MAX_QPS || t > RT_APP_CONC_MAX_THREADS) {
		q = q > RT_APP_CONC_MAX_QPS ? RT_APP_CONC_MAX_QPS : q;
		t = t > RT_APP_CONC_MAX_THREADS ? RT_APP_CONC_MAX_THREADS : t;
		t = t > q ? q : t;
		if (note == RT_APP_CONC_AS_SEEN)
			note = RT_APP_CONC_CAPPED;
	}
	*qps = q;
	*threads = t;
	return note;
}
