/* SPDX-License-Identifier: MIT */
/*
 * The JSON lexer of librtune's single-pass profile reader (profile_scan.c): walks a document in place, without
 * building a tree, and accepts exactly the text jansson's json_loadb(JSON_REJECT_DUPLICATES) accepts (an object or
 * array at the top, UTF-8 validated, no \u0000, surrogates paired, integers within int64, reals that do not overflow,
 * nesting at most 2048 values deep, no duplicate key in any object, nothing but whitespace after the document).
 */
#ifndef RT_PROFILE_LEX_H
#define RT_PROFILE_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* jansson's JSON_PARSER_MAX_DEPTH: a value nested deeper is refused */
#define RT_JLEX_MAX_DEPTH 2048

enum rt_jv_type {
	RT_JV_ABSENT,
	RT_JV_NULL,
	RT_JV_FALSE,
	RT_JV_TRUE,
	RT_JV_INT,
	RT_JV_REAL,
	RT_JV_STR,
	RT_JV_OBJ,
	RT_JV_ARR
};

/* One value: its type, its text in the document (off, len), and for a scalar its value. */
struct rt_jv {
	enum rt_jv_type t;
	const char *s; /* RT_JV_STR: the decoded text (n bytes, not NUL-terminated, never holding a NUL) */
	size_t n;
	int64_t i;  /* RT_JV_INT */
	double d;   /* RT_JV_REAL */
	size_t off; /* where the value's text starts in the document, and its length */
	size_t len;
};

struct rt_jkey {
	const char *s;
	size_t n;
};

/* The lexer over one document. rc is sticky: once a call fails every later one fails with it. */
struct rt_jlex {
	const char *text, *p, *end;
	unsigned depth;	    /* containers open */
	char decimal_point; /* the locale's, for strtod (0: not looked up yet) */
	int rc;		    /* 0, EINVAL (not JSON jansson accepts: why and at err_off) or ENOMEM */
	const char *why;
	char why_buf[48];
	size_t err_off;
	char *arena; /* decoded strings (escapes): one block the size of the document, made on the first escape */
	size_t arena_used;
	struct rt_jkey *keys; /* keys of the open objects, for the duplicate check */
	size_t n_keys, cap_keys;
	struct rt_jkey keys_inline[96];
};

/* A container being walked: rt_jlex_open() fills it, rt_jlex_next() steps through it. */
struct rt_jit {
	size_t key_base;
	uint64_t seen; /* a filter of the keys met (objects) */
	bool obj, first;
};

/* Starts lexing the len bytes at text (need not be NUL-terminated). Never fails; rt_jlex_fini() releases. */
void rt_jlex_init(struct rt_jlex *l, const char *text, size_t len);
void rt_jlex_fini(struct rt_jlex *l);

/* The first byte of the next value after whitespace ('{', '[', '"', ...), or 0 at the end of the text. */
int rt_jlex_peek(struct rt_jlex *l);

/* Opens the object or array at the cursor ('{' or '['). 0, or the sticky error (not a container, too deep). */
int rt_jlex_open(struct rt_jlex *l, struct rt_jit *it);

/* Steps to the next member (objects: its key decoded into *key, cursor at its value) or element (key may be NULL).
 * Returns 1 when there is one, 0 at the container's end (consumed; an object's keys checked for duplicates), or -1
 * on an error (l->rc). The caller must consume each member's value (rt_jlex_value or rt_jlex_open ...) before the
 * next call. */
int rt_jlex_next(struct rt_jlex *l, struct rt_jit *it, struct rt_jv *key);

/* Reads the value at the cursor: a scalar into *v, a container validated whole and skipped (v->t RT_JV_OBJ / ARR,
 * its text in v->off, v->len). 0 or the sticky error. */
int rt_jlex_value(struct rt_jlex *l, struct rt_jv *v);

/* Before the top-level value: 0 when it is an object or array (jansson's default), else the sticky error. */
int rt_jlex_expect_container(struct rt_jlex *l);

/* After the top-level value: 0 when only whitespace follows, else the sticky error ("end of file expected"). */
int rt_jlex_end(struct rt_jlex *l);

/* The error as "line L column C: why" into buf (jansson counts columns in characters: so does this). */
void rt_jlex_error_text(const struct rt_jlex *l, char *buf, size_t len);

/*
 * Cursors over containers inside a document the lexer has accepted (the report reads the members librtune ignores
 * this way). l must be a lexer over the whole document (rt_jlex_init(l, doc, ...)); each call moves its cursor, and
 * strings a call decodes (escapes) stay valid only until the next call.
 * rt_jlex_members: in one walk of the object obj (doc[obj->off ..]), the members named keys[0 .. n) into out[]
 * (RT_JV_ABSENT for each one missing, all of them when obj is not an object). 0, or an errno.
 */
int rt_jlex_members(struct rt_jlex *l, const struct rt_jv *obj, const char *const *keys, size_t n, struct rt_jv *out);
/* The member key of obj into *v, as rt_jlex_members for one key. */
int rt_jlex_member(struct rt_jlex *l, const struct rt_jv *obj, const char *key, struct rt_jv *v);
/* Element i of the array arr into *v; RT_JV_ABSENT past the end or when arr is not an array. 0, or an errno. */
int rt_jlex_element(struct rt_jlex *l, const struct rt_jv *arr, size_t i, struct rt_jv *v);
/* In one walk, the first max elements of arr into out[]; how many (0 when arr is not an array). */
size_t rt_jlex_elements(struct rt_jlex *l, const struct rt_jv *arr, struct rt_jv *out, size_t max);

#endif
