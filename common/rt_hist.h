/* SPDX-License-Identifier: MIT */
/*
 * The message-size bucket scheme every part of rtune agrees on (probe records with it, store keeps it, tuner weights by
 * it): log-linear buckets, exact below 8 bytes, then 8 sub-buckets per power of two up to 2^32-1 bytes, so a threshold
 * can be placed within 12.5 % of any size. Header-only arithmetic so the probe's send path inlines it.
 */
#ifndef RT_HIST_H
#define RT_HIST_H

#include <stdint.h>

#define RT_HIST_SUB_BITS 3u
#define RT_HIST_SUB (1u << RT_HIST_SUB_BITS) /* sub-buckets per power of two */
/* buckets 0..7 hold sizes 0..7; then 8 per power of two for 2^3 .. 2^31 */
#define RT_HIST_BUCKETS (RT_HIST_SUB + (32u - RT_HIST_SUB_BITS) * RT_HIST_SUB)

/* Index of the bucket holding a message of msg_bytes bytes (always < RT_HIST_BUCKETS). */
static inline unsigned rt_hist_bucket(uint32_t msg_bytes)
{
	unsigned e, sub;

	if (msg_bytes < RT_HIST_SUB)
		return msg_bytes;
	e = 31u - (unsigned)__builtin_clz(msg_bytes); /* >= 3 */
	sub = (msg_bytes >> (e - RT_HIST_SUB_BITS)) & (RT_HIST_SUB - 1);
	return RT_HIST_SUB + (e - RT_HIST_SUB_BITS) * RT_HIST_SUB + sub;
}

/* Smallest size that falls in bucket b (b < RT_HIST_BUCKETS). */
uint32_t rt_hist_bucket_lo(unsigned b);
/* Largest size that falls in bucket b (b < RT_HIST_BUCKETS). */
uint32_t rt_hist_bucket_hi(unsigned b);

/* Post-list batches (WRs per ibv_post_send call, the probe's `wrs_per_post`): log2 buckets 1, 2, 3-4, 5-8, ...,
 * 16385-32768, and one bucket for everything above 32768. */
#define RT_BATCH_BUCKETS 17u

/* Index of the batch bucket holding a post call of wrs WRs (always < RT_BATCH_BUCKETS; 0 WRs count as 1). */
static inline unsigned rt_batch_bucket(uint32_t wrs)
{
	unsigned b = wrs <= 1 ? 0 : 32u - (unsigned)__builtin_clz(wrs - 1);

	return b < RT_BATCH_BUCKETS ? b : RT_BATCH_BUCKETS - 1;
}

/* Smallest and largest batch of bucket b (b < RT_BATCH_BUCKETS). */
static inline uint32_t rt_batch_bucket_lo(unsigned b)
{
	return b ? (1u << (b - 1)) + 1 : 1;
}
static inline uint32_t rt_batch_bucket_hi(unsigned b)
{
	return b >= RT_BATCH_BUCKETS - 1 ? UINT32_MAX : 1u << b;
}

#endif
