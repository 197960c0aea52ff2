/* SPDX-License-Identifier: MIT */
/*
 * librtune's single-pass reader of rtune-profile documents (profile_scan.c): the same struct rt_profile, the same
 * acceptance and, for every document jansson parses, the same error text as the jansson path (rt_profile_from_json,
 * the reference, kept in profile.c), without building a tree. Used by rt_profile_parse / rt_profile_load and the fleet
 * report; tests/unit/store/test_profile_scan.c and fuzz/fuzz_profile_scan.c compare both readers.
 */
#ifndef RT_PROFILE_SCAN_H
#define RT_PROFILE_SCAN_H

#include "profile_internal.h"
#include "profile_lex.h"

/* Where, in a document the reader accepted, the members librtune does not read are (for the report: "hardware",
 * the node's untruncated fields, each entry's "calibration"); RT_JV_ABSENT when the document has none. Read them
 * with rt_jlex_member / rt_jlex_element on a lexer over the same text. */
struct rt_profile_scan_extra {
	struct rt_jv node, hardware;
	struct rt_jv *calibration; /* one per entry, in entry order (malloc'd: rt_profile_scan_extra_free) */
	size_t n_calibration;
};

/*
 * Reads the len bytes of text (need not be NUL-terminated) as an rtune-profile document. Returns 0 and *out (free with
 * rt_profile_free), and fills *extra when not NULL; or EFBIG (larger than RT_PROFILE_MAX_BYTES), EINVAL ("line L
 * column C: why" for text jansson refuses, else the field named as rt_profile_from_json names it), ENOTSUP (another
 * schema major) or ENOMEM, with err's text "profile '<name>': ..." (or "profile: ..." when name is NULL); *out is NULL
 * and *extra empty on failure.
 */
int rt_profile_scan(const char *text, size_t len, const char *name, struct rt_profile **out,
		    struct rt_profile_scan_extra *extra, struct rt_error *err);

/* Frees what rt_profile_scan put in *x and empties it; NULL is a no-op. */
void rt_profile_scan_extra_free(struct rt_profile_scan_extra *x);

/* The jansson reference: json_loadb(JSON_REJECT_DUPLICATES) + rt_profile_from_json, as rt_profile_parse_named did
 * before the single-pass reader (differential tests, the fuzz target). */
int rt_profile_parse_jansson(const char *text, size_t len, const char *name, struct rt_profile **out,
			     struct rt_error *err);

#endif
