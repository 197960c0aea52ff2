/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by librtune and the store: the loaded profile document and the JSON (jansson) to entry conversion,
 * so the store's import validates exactly as applications do.
 */
#ifndef RT_PROFILE_INTERNAL_H
#define RT_PROFILE_INTERNAL_H

#include <jansson.h>

#include <rtune/profile.h>

/* Largest document accepted (a profile of a node is a few KiB per device). */
#define RT_PROFILE_MAX_BYTES (16u << 20)

struct live_doc;

struct rt_profile {
	struct live_doc *live_doc; /* the live handle's document holding it (profile_live.c), NULL otherwise */
	int schema_minor;
	unsigned group_nodes; /* a group profile's node count (1.3 "group"), 0 for a node's own */
	char rtune_version[32];
	char hostname[256];
	char machine_id[64];
	char cpu_model[256];
	char kernel[256];
	int cpu_count;
	int numa_nodes;
	char hw_signature[64];
	size_t n_entries;
	struct rt_profile_entry *entries;
	/* 1.4: every entry's load bands, entry by entry (band_first[i]: where entry i's start, band_n[i] how many) */
	struct rt_profile_band *bands;
	size_t n_bands, *band_first, *band_n;
	/* 1.4: the document's skipped measurements */
	struct rt_profile_skip *skips;
	size_t n_skips;
};

/*
 * Builds a profile from a parsed document (root is borrowed). Returns 0 and *out, or EINVAL / ENOTSUP with err naming
 * the field ("entries[3].signal_interval: 0 is out of range 1..65536"). name prefixes messages (a file name) or NULL.
 */
int rt_profile_from_json(json_t *root, const char *name, struct rt_profile **out, struct rt_error *err);

/* Parses text (size bounded) with the single-pass reader (rt_profile_scan: same acceptance, struct and messages as
 * jansson + rt_profile_from_json, without the tree); name as above. */
int rt_profile_parse_named(const char *text, size_t len, const char *name, struct rt_profile **out,
			   struct rt_error *err);

/* As rt_profile_parse_named() but with jansson (nesting bounded by JSON_PARSER_MAX_DEPTH), and on success hands the parsed document to *root_out (the caller's reference: release
 * with json_decref) when root_out is not NULL, for readers of the fields librtune ignores ("hardware", "calibration"). */
int rt_profile_parse_root(const char *text, size_t len, const char *name, struct rt_profile **out, json_t **root_out,
			  struct rt_error *err);

/* Reads the profile file path whole: a regular file of at most RT_PROFILE_MAX_BYTES, opened without blocking on a
 * FIFO. 0 and *buf (malloc'd, NUL-terminated, len bytes before the NUL), or an errno + err naming the file. */
int rt_profile_read_file(const char *path, char **buf, size_t *len, struct rt_error *err);

/* As rt_profile_read_file(), into a buffer reused from file to file: *buf (NULL or malloc'd, *cap bytes) grows with
 * realloc when the file needs more. On failure *buf and *cap stay valid (still the caller's to free) and *len is 0. */
int rt_profile_read_file_into(const char *path, char **buf, size_t *cap, size_t *len, struct rt_error *err);

/* How many of the n bytes of s (valid UTF-8) fit in a buffer of cap > 0 bytes with its NUL: n when they all do, else
 * the longest prefix that ends at a character boundary, so the kept text stays valid UTF-8 (jansson refuses to build,
 * or write back, a string that ends inside a character). */
size_t rt_profile_utf8_fit(const char *s, size_t n, size_t cap);

/* Validates one entry; 0 or EINVAL with "<what>: ..." in err (prefix may be NULL). Sets nothing. */
int rt_profile_entry_check(const struct rt_profile_entry *e, const char *prefix, struct rt_error *err);

/* Sets inline_limit_excl from inline_threshold. */
void rt_profile_entry_derive(struct rt_profile_entry *e);

/* Formats t (seconds since the epoch) as "YYYY-MM-DDTHH:MM:SSZ" (21 bytes incl. NUL). */
void rt_profile_time_format(int64_t t, char out[32]);
/* Parses "YYYY-MM-DDTHH:MM:SSZ" (UTC); 0 or EINVAL. */
int rt_profile_time_parse(const char *s, int64_t *out);

/* Parses a schema version "MAJOR.MINOR" (two decimal ints, as sscanf's "%d.%d" with nothing after) into *major and
 * *minor; returns 0, or -1 if s is not one or a number does not fit an int (sscanf's overflow was undefined). */
int rt_profile_version_parse(const char *s, int *major, int *minor);

/* True when s is a uuid (8-4-4-4-12 hex digits). */
bool rt_profile_is_uuid(const char *s);

/* Node / opcode names in the document. */
/* Where a document is read from, for errors: the file name (or NULL) and the caller's error struct. */
struct rt_profile_ctx {
	const char *name;
	struct rt_error *err;
};
/* Sets c->err to "profile 'NAME': MSG" (or "profile: MSG" without a name) and returns code: the one error form of
 * both readers (profile.c's jansson reference and profile_scan.c). Never fails. */
__attribute__((format(printf, 3, 4))) int rt_profile_fail(struct rt_profile_ctx *c, int code, const char *fmt, ...);

int rt_profile_opcode_parse(const char *s, enum rt_profile_opcode *out);
int rt_profile_qp_type_parse(const char *s, enum rt_profile_qp_type *out);
int rt_profile_confidence_parse(const char *s, enum rt_profile_confidence *out);

/* Value limits (JSON schema: docs/profile-v1.schema.json). */
#define RT_PROFILE_MAX_INLINE_BYTES 65536u
#define RT_PROFILE_MAX_SIGNAL_INTERVAL 65536u
#define RT_PROFILE_MAX_SQ_DEPTH (1u << 20)
#define RT_PROFILE_MAX_CQ_DEPTH (1u << 22)
#define RT_PROFILE_MAX_CQ_MOD_COUNT 65535u
#define RT_PROFILE_MAX_CQ_MOD_PERIOD_US 65535u
#define RT_PROFILE_MAX_PORT 255
#define RT_PROFILE_MAX_NUMA 4095
#define RT_PROFILE_MAX_BAND_BYTES (1u << 30)
#define RT_PROFILE_MAX_BAND_QPS 65536u /* a concurrency band's qps and threads */
#define RT_PROFILE_MAX_POST_LIST 65536u

/* Band kinds and skip kinds as the document names them ("large", "post_list"; "inline", "qp_type", "opcode",
 * "cq_moderation", "other"). */
const char *rt_profile_band_kind_name(enum rt_profile_band_kind k);
const char *rt_profile_skip_kind_name(enum rt_profile_skip_kind k);
int rt_profile_skip_kind_parse(const char *s, enum rt_profile_skip_kind *out);

#endif
