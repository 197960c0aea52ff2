// SPDX-License-Identifier: MIT
/*
 * The differential check of librtune's two profile readers (profile_diff.h): both read the same bytes; they must
 * agree on acceptance, on the error text of every document that is valid JSON, and on every field they fill (member
 * by member: strings to their NUL, doubles bit for bit in value and sign, NAN equal to NAN).
 */
#include "profile_diff.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_scan.h"

/* Doubles equal bit for bit in what matters: the same value and sign, or both NAN. */
static bool same_dbl(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

#define SAME_NUM(f)                                                                                         \
	do {                                                                                                \
		if (a->f != b->f) {                                                                         \
			snprintf(why, len, "%s" #f ": %lld vs %lld", at, (long long)a->f, (long long)b->f); \
			return 1;                                                                           \
		}                                                                                           \
	} while (0)
#define SAME_STR(f)                                                                   \
	do {                                                                          \
		if (strcmp(a->f, b->f)) {                                             \
			snprintf(why, len, "%s" #f ": '%s' vs '%s'", at, a->f, b->f); \
			return 1;                                                     \
		}                                                                     \
	} while (0)
#define SAME_DBL(f)                                                                     \
	do {                                                                            \
		if (!same_dbl(a->f, b->f)) {                                            \
			snprintf(why, len, "%s" #f ": %.17g vs %.17g", at, a->f, b->f); \
			return 1;                                                       \
		}                                                                       \
	} while (0)

/* Every field of two entries; 0, or 1 with the first difference in why (at: where). */
static int entry_cmp(const struct rt_profile_entry *a, const struct rt_profile_entry *b, const char *at, char *why,
		     size_t len)
{
	SAME_NUM(inline_limit_excl);
	SAME_NUM(inline_threshold);
	SAME_NUM(max_inline_data);
	SAME_NUM(signal_interval);
	SAME_NUM(sq_depth);
	SAME_NUM(cq_depth);
	SAME_NUM(cq_moderation);
	SAME_NUM(cq_mod_count);
	SAME_NUM(cq_mod_period_us);
	SAME_STR(device);
	SAME_STR(guid);
	SAME_NUM(port);
	SAME_NUM(opcode);
	SAME_NUM(qp_type);
	SAME_NUM(numa_node);
	SAME_STR(cpus);
	SAME_NUM(confidence);
	SAME_NUM(n_reasons);
	for (unsigned i = 0; i < a->n_reasons && i < RT_PROFILE_MAX_REASONS; i++) {
		SAME_STR(reasons[i].code);
		SAME_STR(reasons[i].text);
	}
	SAME_NUM(measured_at);
	SAME_STR(run_id);
	SAME_STR(app);
	SAME_STR(rtune_version);
	SAME_NUM(inline_confidence);
	SAME_NUM(signal_confidence);
	SAME_NUM(inline_runs);
	SAME_NUM(signal_runs);
	SAME_STR(inline_since);
	SAME_STR(signal_since);
	SAME_NUM(has_measured);
	SAME_STR(lat_kind);
	SAME_NUM(lat_bytes);
	SAME_DBL(lat_inline_ns);
	SAME_DBL(lat_noinline_ns);
	SAME_DBL(mops_at_n);
	SAME_DBL(mops_at_n1);
	SAME_DBL(noise_pct);
	return 0;
}

static int band_cmp(const struct rt_profile_band *a, const struct rt_profile_band *b, const char *at, char *why,
		    size_t len)
{
	SAME_NUM(kind);
	SAME_NUM(post_list);
	SAME_NUM(msg_bytes_lo);
	SAME_NUM(msg_bytes_hi);
	SAME_NUM(signal_interval);
	SAME_NUM(has_confidence);
	SAME_NUM(confidence);
	SAME_STR(verdict);
	return 0;
}

static int skip_cmp(const struct rt_profile_skip *a, const struct rt_profile_skip *b, const char *at, char *why,
		    size_t len)
{
	SAME_STR(device);
	SAME_NUM(port);
	SAME_NUM(kind);
	SAME_STR(what);
	SAME_NUM(opcode);
	SAME_NUM(qp_type);
	SAME_STR(reason);
	SAME_STR(run_id);
	return 0;
}

/* Compares a and b field by field; 0, or 1 with the first difference in why. */
static int profile_cmp(const struct rt_profile *a, const struct rt_profile *b, char *why, size_t len)
{
	const char *at = "";
	char w[48];

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
		snprintf(w, sizeof(w), "entries[%zu].", i);
		if (entry_cmp(&a->entries[i], &b->entries[i], w, why, len))
			return 1;
		SAME_NUM(band_first[i]);
		SAME_NUM(band_n[i]);
	}
	for (size_t i = 0; i < a->n_bands; i++) {
		snprintf(w, sizeof(w), "bands[%zu].", i);
		if (band_cmp(&a->bands[i], &b->bands[i], w, why, len))
			return 1;
	}
	for (size_t i = 0; i < a->n_skips; i++) {
		snprintf(w, sizeof(w), "skips[%zu].", i);
		if (skip_cmp(&a->skips[i], &b->skips[i], w, why, len))
			return 1;
	}
	return 0;
}

#undef SAME_NUM
#undef SAME_STR
#undef SAME_DBL

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
