// SPDX-License-Identifier: MIT
/*
 * Bounds of the shared log-linear message-size buckets (see rt_hist.h).
 */
#include "rt_hist.h"

uint32_t rt_hist_bucket_lo(unsigned b)
{
	unsigned e, sub;

	if (b < RT_HIST_SUB)
		return b;
	e = (b - RT_HIST_SUB) / RT_HIST_SUB + RT_HIST_SUB_BITS;
	sub = (b - RT_HIST_SUB) % RT_HIST_SUB;
	return (uint32_t)((RT_HIST_SUB + sub) << (e - RT_HIST_SUB_BITS));
}

uint32_t rt_hist_bucket_hi(unsigned b)
{
	unsigned e;

	if (b < RT_HIST_SUB)
		return b;
	e = (b - RT_HIST_SUB) / RT_HIST_SUB + RT_HIST_SUB_BITS;
	return rt_hist_bucket_lo(b) + ((1u << (e - RT_HIST_SUB_BITS)) - 1u);
}
