// SPDX-License-Identifier: MIT
/*
 * The JSON lexer of librtune's single-pass profile reader (profile_lex.h): strings (UTF-8 checked as jansson checks
 * it, escapes decoded into one arena block), numbers (int64 or double, as jansson types them), literals, containers
 * walked member by member with every object's keys checked for duplicates when it closes, and skipping of values
 * nobody reads (validated all the same). Nothing is allocated per value: a document costs at most two allocations
 * (the arena on its first escape, the key stack past 96 open keys).
 */
#include "profile_lex.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_jlex_init(struct rt_jlex *l, const char *text, size_t len)
{
	memset(l, 0, offsetof(struct rt_jlex, keys_inline));
	l->text = l->p = text;
	l->end = text + len;
	l->keys = l->keys_inline;
	l->cap_keys = sizeof(l->keys_inline) / sizeof(l->keys_inline[0]);
}

void rt_jlex_fini(struct rt_jlex *l)
{
	free(l->arena);
	if (l->keys != l->keys_inline)
		free(l->keys);
	l->arena = NULL;
	l->keys = l->keys_inline;
}

/* Records the first error (why at p) and returns it. */
static int lex_fail(struct rt_jlex *l, int rc, const char *p, const char *why)
{
	if (!l->rc) {
		l->rc = rc;
		l->why = why;
		l->err_off = (size_t)(p - l->text);
	}
	return l->rc;
}

void rt_jlex_error_text(const struct rt_jlex *l, char *buf, size_t len)
{
	const unsigned char *t = (const unsigned char *)l->text;
	int line = 1, col = 0;

	for (size_t i = 0; i < l->err_off && t + i < (const unsigned char *)l->end; i++) {
		if (t[i] == '\n') {
			line++;
			col = 0;
		} else if ((t[i] & 0xC0) != 0x80) {
			col++;
		}
	}
	snprintf(buf, len, "line %d column %d: %s", line, col, l->rc == ENOMEM ? "out of memory" : l->why);
}

/* A byte a string holds as it is: printable ASCII but '"' and '\\' (one range compare and two equalities). */
static inline bool plain_byte(unsigned char c)
{
	return (unsigned char)(c - 0x20) < 0x60 && c != '"' && c != '\\';
}

/* JSON whitespace. */
static inline bool ws_byte(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The 8 bytes at p as one word (any alignment). */
static inline uint64_t word_at(const char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether all 8 bytes of w are plain_byte()s: none below 0x20, none from 0x80, no '"' and no '\\' (the any-byte
 * tests of "Bit Twiddling Hacks", exact as to whether any byte matches). */
static inline bool plain_word(uint64_t w)
{
	uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');

	return !((((w - ONES * 0x20) & ~w) | ((q - ONES) & ~q) | ((b - ONES) & ~b) | w) & HIGHS);
}

/* Moves the cursor past whitespace; the indentation of a laid-out document (runs of spaces after a newline) 8 bytes
 * at a time. */
static void skip_ws(struct rt_jlex *l)
{
	const char *p = l->p;

	while (p < l->end && ws_byte((unsigned char)*p)) {
		p++;
		while (l->end - p >= 8 && word_at(p) == ONES * ' ')
			p += 8;
	}
	l->p = p;
}

int rt_jlex_peek(struct rt_jlex *l)
{
	skip_ws(l);
	return l->p < l->end ? (unsigned char)*l->p : 0;
}

/* Length of the valid UTF-8 sequence led by the byte at p (>= 0x80) as jansson's utf8_check_full accepts it (no
 * overlong form, no surrogate, at most U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	uint32_t v;

	if (c >= 0xC2 && c <= 0xDF)
		n = 2, v = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, v = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, v = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
		return 0;
	return n;
}

/* The 4 hex digits at p (before end) into *out; 0, or -1 when they are not 4 hex digits. */
static int hex4(const char *p, const char *end, uint32_t *out)
{
	uint32_t v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Decodes the escape at p (after the backslash) to UTF-8 at *o; the bytes of input used, or 0 when it is refused. */
static size_t unescape(struct rt_jlex *l, const char *p, char **o)
{
	char *t = *o;
	uint32_t v, v2;

	switch (*p) {
	case '"':
	case '\\':
	case '/': *t++ = *p; break;
	case 'b': *t++ = '\b'; break;
	case 'f': *t++ = '\f'; break;
	case 'n': *t++ = '\n'; break;
	case 'r': *t++ = '\r'; break;
	case 't': *t++ = '\t'; break;
	case 'u':
		if (hex4(p + 1, l->end, &v))
			return lex_fail(l, EINVAL, p, "invalid escape"), 0;
		if (v >= 0xDC00 && v <= 0xDFFF)
			return lex_fail(l, EINVAL, p, "invalid unicode (a lone low surrogate)"), 0;
		if (v == 0)
			return lex_fail(l, EINVAL, p, "\\u0000 is not allowed"), 0;
		if (v >= 0xD800 && v <= 0xDBFF) {
			if (l->end - p < 11 || p[5] != '\\' || p[6] != 'u' || hex4(p + 7, l->end, &v2) || v2 < 0xDC00 ||
			    v2 > 0xDFFF)
				return lex_fail(l, EINVAL, p, "invalid unicode (a high surrogate without its low one)"),
				       0;
			v = ((v - 0xD800) << 10) + (v2 - 0xDC00) + 0x10000;
		}
		if (v < 0x80) {
			*t++ = (char)v;
		} else if (v < 0x800) {
			*t++ = (char)(0xC0 | (v >> 6));
			*t++ = (char)(0x80 | (v & 0x3F));
		} else if (v < 0x10000) {
			*t++ = (char)(0xE0 | (v >> 12));
			*t++ = (char)(0x80 | ((v >> 6) & 0x3F));
			*t++ = (char)(0x80 | (v & 0x3F));
		} else {
			*t++ = (char)(0xF0 | (v >> 18));
			*t++ = (char)(0x80 | ((v >> 12) & 0x3F));
			*t++ = (char)(0x80 | ((v >> 6) & 0x3F));
			*t++ = (char)(0x80 | (v & 0x3F));
		}
		*o = t;
		return v >= 0x10000 ? 11 : 5;
	default: return lex_fail(l, EINVAL, p, "invalid escape"), 0;
	}
	*o = t;
	return 1;
}

/* Reads the string at the cursor ('"') into v. 0 or the sticky error. */
static int lex_string(struct rt_jlex *l, struct rt_jv *v)
{
	const char *start = l->p + 1, *p = start;
	char *o = NULL;

	v->t = RT_JV_STR;
	v->s = start;
	v->n = 0;
	v->off = (size_t)(l->p - l->text);
	for (;;) {
		unsigned char c;

		if (!o) {
			/* the common run: bytes kept as they are, in place; 8 at a time while they are all plain */
			while (l->end - p >= 8 && plain_word(word_at(p)))
				p += 8;
			while (p < l->end && plain_byte((unsigned char)*p))
				p++;
		}
		if (p >= l->end)
			return lex_fail(l, EINVAL, p, "premature end of input");
		c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c < 0x20)
			return lex_fail(l, EINVAL, p, c == '\n' ? "unexpected newline" : "control character in string");
		if (c >= 0x80) {
			size_t n = utf8_seq((const unsigned char *)p, (const unsigned char *)l->end);

			if (!n) {
				snprintf(l->why_buf, sizeof(l->why_buf), "unable to decode byte 0x%x", c);
				return lex_fail(l, EINVAL, p, l->why_buf);
			}
			if (o)
				memcpy(o, p, n), o += n;
			p += n;
			continue;
		}
		if (c == '\\') {
			size_t used;

			if (!o) {
				/* the first escape of the document's strings decoded so far: the arena (a decoded string is
				 * never longer than its text, so one block the document's size holds them all) */
				if (!l->arena && !(l->arena = malloc((size_t)(l->end - l->text) + 1)))
					return lex_fail(l, ENOMEM, p, "out of memory");
				o = l->arena + l->arena_used;
				memcpy(o, start, (size_t)(p - start));
				o += p - start;
			}
			if (p + 1 >= l->end)
				return lex_fail(l, EINVAL, p, "premature end of input");
			if (!(used = unescape(l, p + 1, &o)))
				return l->rc;
			p += 1 + used;
			continue;
		}
		if (o)
			*o++ = (char)c;
		p++;
	}
	if (o) {
		v->s = l->arena + l->arena_used;
		v->n = (size_t)(o - v->s);
		l->arena_used += v->n;
	} else {
		v->s = start;
		v->n = (size_t)(p - start);
	}
	l->p = p + 1;
	v->len = (size_t)(l->p - l->text) - v->off;
	return 0;
}

/* jansson reads one character past a number or a word and puts it back; a NUL put back is lost (its stream takes a
 * NUL in its one-character buffer for "empty"), so one NUL right after such a token is skipped: the same here. */
static const char *skip_ungot_nul(const struct rt_jlex *l, const char *p)
{
	return p < l->end && *p == '\0' ? p + 1 : p;
}

/* An ASCII decimal digit. */
static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* The real in [s, e) (a number token already checked) when it converts exactly without strtod: at most 19 digits
 * whose value is below 2^53, and a power of ten within 10^22 (both exact doubles, so one multiplication or division
 * rounds once, correctly: what strtod returns). False for every other token (strtod's turn). */
static bool fast_real(const char *s, const char *e, double *out)
{
	static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
					1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	bool neg = *s == '-';
	uint64_t m = 0;
	int digits = 0, scale = 0, ex = 0;
	const char *p = s + neg;

	for (; p < e && is_digit(*p); p++) {
		if (++digits > 19)
			return false;
		m = m * 10 + (uint64_t)(*p - '0');
	}
	if (p < e && *p == '.')
		for (p++; p < e && is_digit(*p); p++, scale++) {
			if (++digits > 19)
				return false;
			m = m * 10 + (uint64_t)(*p - '0');
		}
	if (p < e && (*p == 'e' || *p == 'E')) {
		bool eneg = false;

		p++;
		if (*p == '+' || *p == '-')
			eneg = *p++ == '-';
		for (; p < e; p++) {
			if (ex > 100)
				return false;
			ex = ex * 10 + (*p - '0');
		}
		if (eneg)
			ex = -ex;
	}
	ex -= scale;
	if (m > (1ull << 53) || ex < -22 || ex > 22)
		return false;
	*out = ex < 0 ? (double)m / pow10[-ex] : (double)m * pow10[ex];
	if (neg)
		*out = -*out;
	return true;
}

/* Reads the number at the cursor into v: an integer when it has no fraction or exponent (refused beyond int64, as
 * jansson's strtoll), else a real (refused when it overflows a double). 0 or the sticky error. */
static int lex_number(struct rt_jlex *l, struct rt_jv *v)
{
	const char *p = l->p, *s = p;
	bool neg = false, real = false;
	uint64_t u = 0;
	bool big = false;

	v->off = (size_t)(p - l->text);
	if (*p == '-')
		neg = true, p++;
	if (p >= l->end || !is_digit(*p))
		return lex_fail(l, EINVAL, p, "invalid token");
	if (*p == '0') {
		p++;
		if (p < l->end && is_digit(*p))
			return lex_fail(l, EINVAL, p, "invalid token (a leading zero)");
	} else {
		for (; p < l->end && is_digit(*p); p++) {
			unsigned dg = (unsigned)(*p - '0');

			if (u > (UINT64_MAX - dg) / 10)
				big = true;
			else
				u = u * 10 + dg;
		}
	}
	if (p < l->end && *p == '.') {
		real = true;
		if (++p >= l->end || !is_digit(*p))
			return lex_fail(l, EINVAL, p, "invalid token");
		while (p < l->end && is_digit(*p))
			p++;
	}
	if (p < l->end && (*p == 'e' || *p == 'E')) {
		real = true;
		p++;
		if (p < l->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= l->end || !is_digit(*p))
			return lex_fail(l, EINVAL, p, "invalid token");
		while (p < l->end && is_digit(*p))
			p++;
	}
	v->len = (size_t)(p - s);
	l->p = skip_ungot_nul(l, p);
	if (!real) {
		if (big || (!neg && u > (uint64_t)INT64_MAX) || (neg && u > (uint64_t)INT64_MAX + 1))
			return lex_fail(l, EINVAL, s, neg ? "too big negative integer" : "too big integer");
		v->t = RT_JV_INT;
		v->i = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : (int64_t)u;
		return 0;
	}
	if (fast_real(s, p, &v->d)) {
		v->t = RT_JV_REAL;
		return 0;
	}
	{
		/* strtod wants a terminated string in the C locale's notation: a copy, its '.' as the locale writes it */
		char small[64], *buf = small, *end;
		size_t n = (size_t)(p - s);

		if (!l->decimal_point) {
			/* looked up once per document (a program may change its locale between documents) */
			const char *dp = localeconv()->decimal_point;

			l->decimal_point = dp && dp[0] && !dp[1] ? dp[0] : '.';
		}
		if (n >= sizeof(small) && !(buf = malloc(n + 1)))
			return lex_fail(l, ENOMEM, s, "out of memory");
		memcpy(buf, s, n);
		buf[n] = '\0';
		if (l->decimal_point != '.') {
			char *dot = memchr(buf, '.', n);

			if (dot)
				*dot = l->decimal_point;
		}
		errno = 0;
		v->d = strtod(buf, &end);
		if (buf != small)
			free(buf);
		if (errno == ERANGE && (v->d == HUGE_VAL || v->d == -HUGE_VAL))
			return lex_fail(l, EINVAL, s, "real number overflow");
		v->t = RT_JV_REAL;
	}
	return 0;
}

/* Reads true, false or null at the cursor into v; any other word is the sticky error. */
static int lex_literal(struct rt_jlex *l, struct rt_jv *v)
{
	static const struct {
		const char *w;
		size_t n;
		enum rt_jv_type t;
	} lits[] = { { "true", 4, RT_JV_TRUE }, { "false", 5, RT_JV_FALSE }, { "null", 4, RT_JV_NULL } };
	const char *p = l->p;
	size_t n = 0;

	/* jansson reads a run of letters as one word */
	while (p + n < l->end && ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z')))
		n++;
	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++)
		if (n == lits[i].n && !memcmp(p, lits[i].w, n)) {
			v->t = lits[i].t;
			v->off = (size_t)(p - l->text);
			v->len = n;
			l->p = skip_ungot_nul(l, p + n);
			return 0;
		}
	return lex_fail(l, EINVAL, p, "invalid token");
}

int rt_jlex_open(struct rt_jlex *l, struct rt_jit *it)
{
	int c = rt_jlex_peek(l);

	if (l->rc)
		return l->rc;
	if (c != '{' && c != '[')
		return lex_fail(l, EINVAL, l->p, c ? "unexpected token" : "premature end of input");
	if (l->depth + 1 > RT_JLEX_MAX_DEPTH)
		return lex_fail(l, EINVAL, l->p + 1, "maximum parsing depth reached");
	l->depth++;
	l->p++;
	it->obj = c == '{';
	it->first = true;
	it->seen = 0;
	it->key_base = l->n_keys;
	return 0;
}

/* Orders keys by length, then bytes (qsort). */
static int key_cmp(const void *a, const void *b)
{
	const struct rt_jkey *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return memcmp(x->s, y->s, x->n);
}

/* Objects of up to this many keys are checked for a duplicate as each key comes (a 64-bit filter of the keys seen,
 * and a compare only on a filter hit); a larger object is checked once when it closes (sorted). */
#define RT_JLEX_FILTER_KEYS 64

/* Checks a large object's keys[base ..] for a duplicate (jansson's JSON_REJECT_DUPLICATES) and pops them. */
static int close_keys(struct rt_jlex *l, size_t base)
{
	struct rt_jkey *k = l->keys + base;
	size_t n = l->n_keys - base;

	l->n_keys = base;
	if (n <= RT_JLEX_FILTER_KEYS)
		return 0;
	qsort(k, n, sizeof(*k), key_cmp);
	for (size_t i = 1; i < n; i++)
		if (!key_cmp(&k[i - 1], &k[i]))
			return lex_fail(l, EINVAL, k[i].s, "duplicate object key");
	return 0;
}

/* The key's bit (0..63) in an object's key filter. */
static unsigned key_bit(const struct rt_jv *key)
{
	const unsigned char *s = (const unsigned char *)key->s;
	size_t n = key->n;

	if (!n)
		return 0;
	return (unsigned)((n * 0x9Eu) ^ (s[0] * 0x3Bu) ^ (s[n - 1] * 0x5Du) ^ (s[n / 2] * 0x7u) ^ (s[n / 2] >> 3)) &
	       63u;
}

/* Records key of the object it; a key already in it is refused. 0 or the sticky error. */
static int push_key(struct rt_jlex *l, struct rt_jit *it, const struct rt_jv *key)
{
	size_t have = l->n_keys - it->key_base;

	if (have < RT_JLEX_FILTER_KEYS) {
		uint64_t bit = 1ull << key_bit(key);

		if (it->seen & bit)
			for (size_t i = it->key_base; i < l->n_keys; i++)
				if (l->keys[i].n == key->n && !memcmp(l->keys[i].s, key->s, key->n))
					return lex_fail(l, EINVAL, key->s, "duplicate object key");
		it->seen |= bit;
	}
	if (l->n_keys == l->cap_keys) {
		size_t cap = l->cap_keys * 2;
		struct rt_jkey *nk = malloc(cap * sizeof(*nk));

		if (!nk)
			return lex_fail(l, ENOMEM, l->p, "out of memory");
		memcpy(nk, l->keys, l->n_keys * sizeof(*nk));
		if (l->keys != l->keys_inline)
			free(l->keys);
		l->keys = nk;
		l->cap_keys = cap;
	}
	l->keys[l->n_keys].s = key->s;
	l->keys[l->n_keys].n = key->n;
	l->n_keys++;
	return 0;
}

int rt_jlex_next(struct rt_jlex *l, struct rt_jit *it, struct rt_jv *key)
{
	int c = rt_jlex_peek(l);
	char close = it->obj ? '}' : ']';

	if (l->rc)
		return -1;
	if (c == close && it->first) {
		/* jansson takes "{}" and "[]" only right after the opening: "[1,]" is refused below */
		l->p++;
		l->depth--;
		return it->obj && close_keys(l, it->key_base) ? -1 : 0;
	}
	if (!it->first) {
		if (c == close) {
			l->p++;
			l->depth--;
			return it->obj && close_keys(l, it->key_base) ? -1 : 0;
		}
		if (c != ',')
			return lex_fail(l, EINVAL, l->p, it->obj ? "'}' expected" : "']' expected"), -1;
		l->p++;
		c = rt_jlex_peek(l);
	}
	it->first = false;
	if (!it->obj)
		return 1;
	if (c != '"')
		return lex_fail(l, EINVAL, l->p, "string or '}' expected"), -1;
	{
		struct rt_jv k = { 0 };

		if (lex_string(l, &k) || push_key(l, it, &k))
			return -1;
		if (key)
			*key = k;
	}
	if (rt_jlex_peek(l) != ':')
		return lex_fail(l, EINVAL, l->p, "':' expected"), -1;
	l->p++;
	return 1;
}

int rt_jlex_value(struct rt_jlex *l, struct rt_jv *v)
{
	int c = rt_jlex_peek(l);

	memset(v, 0, sizeof(*v));
	if (l->rc)
		return l->rc;
	if (c == '{' || c == '[') {
		struct rt_jit it = { 0 };
		const char *start = l->p;
		int r;

		if (rt_jlex_open(l, &it))
			return l->rc;
		while ((r = rt_jlex_next(l, &it, NULL)) > 0) {
			struct rt_jv sub;

			if (rt_jlex_value(l, &sub))
				return l->rc;
		}
		if (r < 0)
			return l->rc;
		v->t = c == '{' ? RT_JV_OBJ : RT_JV_ARR;
		v->off = (size_t)(start - l->text);
		v->len = (size_t)(l->p - start);
		return 0;
	}
	if (l->depth + 1 > RT_JLEX_MAX_DEPTH)
		return lex_fail(l, EINVAL, l->p + 1, "maximum parsing depth reached");
	if (c == '"')
		return lex_string(l, v);
	if (c == '-' || is_digit(c))
		return lex_number(l, v);
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return lex_literal(l, v);
	return lex_fail(l, EINVAL, l->p, c ? "invalid token" : "premature end of input");
}

int rt_jlex_expect_container(struct rt_jlex *l)
{
	int c = rt_jlex_peek(l);
	const char *p = l->p;

	if (c == '{' || c == '[' || l->rc)
		return l->rc;
	/* jansson reads the token first: its error is placed after it */
	while (p < l->end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		p++;
	if (p == l->p && p < l->end)
		p++;
	return lex_fail(l, EINVAL, p, "'[' or '{' expected");
}

int rt_jlex_end(struct rt_jlex *l)
{
	if (rt_jlex_peek(l) || l->p < l->end)
		return lex_fail(l, EINVAL, l->p, "end of file expected");
	return l->rc;
}

/* Positions l at the container v (of the document l lexes) and opens it. */
static int reopen(struct rt_jlex *l, const struct rt_jv *v, struct rt_jit *it)
{
	l->rc = 0;
	l->arena_used = 0; /* strings decoded by the previous walk are given up */
	l->p = l->text + v->off;
	l->depth = 0;
	l->n_keys = 0;
	return rt_jlex_open(l, it);
}

int rt_jlex_members(struct rt_jlex *l, const struct rt_jv *obj, const char *const *keys, size_t n, struct rt_jv *out)
{
	struct rt_jit it = { 0 };
	struct rt_jv k, skip;
	int r;

	memset(out, 0, n * sizeof(*out));
	if (obj->t != RT_JV_OBJ)
		return 0;
	if (reopen(l, obj, &it))
		return l->rc;
	while ((r = rt_jlex_next(l, &it, &k)) > 0) {
		struct rt_jv *v = &skip;

		for (size_t i = 0; i < n; i++)
			if (!strncmp(keys[i], k.s, k.n) && !keys[i][k.n]) {
				v = &out[i];
				break;
			}
		if (rt_jlex_value(l, v))
			return l->rc;
	}
	return r < 0 ? l->rc : 0;
}

int rt_jlex_member(struct rt_jlex *l, const struct rt_jv *obj, const char *key, struct rt_jv *v)
{
	return rt_jlex_members(l, obj, &key, 1, v);
}

size_t rt_jlex_elements(struct rt_jlex *l, const struct rt_jv *arr, struct rt_jv *out, size_t max)
{
	struct rt_jit it = { 0 };
	struct rt_jv skip;
	size_t k = 0;

	if (arr->t != RT_JV_ARR || reopen(l, arr, &it))
		return 0;
	while (rt_jlex_next(l, &it, NULL) > 0) {
		if (rt_jlex_value(l, k < max ? &out[k] : &skip))
			return 0;
		if (k < max)
			k++;
	}
	return l->rc ? 0 : k;
}

int rt_jlex_element(struct rt_jlex *l, const struct rt_jv *arr, size_t i, struct rt_jv *v)
{
	struct rt_jit it = { 0 };
	size_t k = 0;
	int r;

	memset(v, 0, sizeof(*v));
	if (arr->t != RT_JV_ARR)
		return 0;
	if (reopen(l, arr, &it))
		return l->rc;
	while ((r = rt_jlex_next(l, &it, NULL)) > 0) {
		if (rt_jlex_value(l, v))
			return l->rc;
		if (k++ == i)
			return 0;
	}
	memset(v, 0, sizeof(*v));
	return r < 0 ? l->rc : 0;
}
