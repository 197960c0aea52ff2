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

#endif
