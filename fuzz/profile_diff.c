// SPDX-License-Identifier: MIT
/*
 * The differential check of librtune's two profile readers (profile_diff.h): both read the same bytes; they must
 * agree on acceptance, on the error text of every document that is valid JSON, and on every field they fill.
 */
#include "profile_diff.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_scan.h"

static void clear_tail(char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	memset(s + n, 0, cap - n);
}

/* Compares a and b field by field (entries, bands and skips byte for byte: both readers zero them before filling, and
 * NAN has one bit pattern); 0, or 1 with the first difference in why. */
static int profile_cmp(const struct rt_profile *a, const struct rt_profile *b, char *why, size_t len)
{
#define SAME_NUM(f)                                                                                \
	do {                                                                                       \
		if (a->f != b->f) {                                                                \
			snprintf(why, len, #f ": %lld vs %lld", (long long)a->f, (long long)b->f); \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)
#define SAME_STR(f)                                                          \
	do {                                                                 \
		if (strcmp(a->f, b->f)) {                                    \
			snprintf(why, len, #f ": '%s' vs '%s'", a->f, b->f); \
			return 1;                                            \
		}                                                            \
	} while (0)
	SAME_NUM(schema_minor);
	SAME_NUM(group_nodes);
	SAME_STR(rtune_version);
	SAME_STR(hostname);
	SAME_STR(machine_id);
	SAME_STR(cpu_model);
	SAME_STR(kernel);
	SAME_NUM(cpu_count);
	SAME_NUM(numa_nodes);
	SAME_STR(hw_signature);
	SAME_NUM(n_entries);
	SAME_NUM(n_bands);
	SAME_NUM(n_skips);
	for (size_t i = 0; i < a->n_entries; i++) {
		struct rt_profile_entry ea = a->entries[i], eb = b->entries[i];

		/* the reference writes the document's rtune_version and then the entry's own over it: what follows the
		 * NUL is not part of the field */
		clear_tail(ea.rtune_version, sizeof(ea.rtune_version));
		clear_tail(eb.rtune_version, sizeof(eb.rtune_version));
		if (memcmp(&ea, &eb, sizeof(ea))) {
			const unsigned char *x = (const void *)&ea, *y = (const void *)&eb;
			size_t k = 0;

			while (x[k] == y[k])
				k++;
			snprintf(why, len, "entries[%zu] differ at byte %zu of struct rt_profile_entry", i, k);
			return 1;
		}
		SAME_NUM(band_first[i]);
		SAME_NUM(band_n[i]);
	}
	for (size_t i = 0; i < a->n_bands; i++)
		if (memcmp(&a->bands[i], &b->bands[i], sizeof(a->bands[i]))) {
			snprintf(why, len, "bands[%zu] differ", i);
			return 1;
		}
	for (size_t i = 0; i < a->n_skips; i++)
		if (memcmp(&a->skips[i], &b->skips[i], sizeof(a->skips[i]))) {
			snprintf(why, len, "skips[%zu] differ", i);
			return 1;
		}
	return 0;
#undef SAME_NUM
#undef SAME_STR
}

enum rt_pdiff_outcome rt_profile_diff(const char *data, size_t size, char *why, size_t len)
{
	struct rt_profile *ref = NULL, *fast = NULL;
	struct rt_error eref = { 0, "" }, efast = { 0, "" };
	enum rt_pdiff_outcome out;
	int rref, rfast;

	why[0] = '\0';
	rref = rt_profile_parse_jansson(data, size, "doc", &ref, &eref);
	rfast = rt_profile_scan(data, size, "doc", &fast, NULL, &efast);
	if (rref != rfast) {
		snprintf(why, len, "jansson %d '%s', single-pass %d '%s'", rref, eref.text, rfast, efast.text);
		out = RT_PDIFF_DISAGREE;
	} else if (!rref) {
		out = profile_cmp(ref, fast, why, len) ? RT_PDIFF_DISAGREE : RT_PDIFF_BOTH_ACCEPT;
	} else if (!strncmp(eref.text, "profile 'doc': line ", 20)) {
		/* jansson's parser refused it: the single-pass reader must say it is not JSON it accepts, too */
		out = strncmp(efast.text, "profile 'doc': line ", 20) ? RT_PDIFF_DISAGREE : RT_PDIFF_BOTH_REFUSE_JSON;
		if (out == RT_PDIFF_DISAGREE)
			snprintf(why, len, "jansson '%s', single-pass '%s'", eref.text, efast.text);
	} else if (strcmp(eref.text, efast.text) || eref.code != efast.code) {
		snprintf(why, len, "jansson '%s', single-pass '%s'", eref.text, efast.text);
		out = RT_PDIFF_DISAGREE;
	} else {
		out = RT_PDIFF_BOTH_REFUSE_FIELD;
	}
	if ((rref && ref) || (rfast && fast)) {
		snprintf(why, len, "a reader left *out set on failure");
		out = RT_PDIFF_DISAGREE;
	}
	rt_profile_free(ref);
	rt_profile_free(fast);
	return out;
}
