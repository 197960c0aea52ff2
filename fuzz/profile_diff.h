/* SPDX-License-Identifier: MIT */
/*
 * The differential check of librtune's two profile readers (the single-pass rt_profile_scan and its jansson
 * reference): shared by the libFuzzer target fuzz_profile_scan and the unit test test_profile_scan.
 */
#ifndef RT_PROFILE_DIFF_H
#define RT_PROFILE_DIFF_H

#include <stdbool.h>
#include <stddef.h>

/* What a document did in both readers. */
enum rt_pdiff_outcome {
	RT_PDIFF_BOTH_ACCEPT,
	RT_PDIFF_BOTH_REFUSE_JSON,  /* jansson's parser refused it (both readers refused, the texts may differ) */
	RT_PDIFF_BOTH_REFUSE_FIELD, /* valid JSON, refused by both for the same field with the same text */
	RT_PDIFF_DISAGREE,
};

/*
 * Reads the size bytes at data with both readers and compares: the return code, the error text when jansson parsed
 * the JSON (same field, same words), and on success every field of the profile (entries, bands, skips). On
 * RT_PDIFF_DISAGREE why (len bytes) says what differs.
 */
enum rt_pdiff_outcome rt_profile_diff(const char *data, size_t size, char *why, size_t len);

#endif
