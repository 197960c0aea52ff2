// SPDX-License-Identifier: MIT
/*
 * rt_json_loadb() under allocation failure (store/json_arena.c): jansson 2.14 aborts (an assert in its lexer,
 * lex_scan_string) when an allocation fails while it saves a string with escape sequences, which made `rtune export`
 * abort under test_hardening_oom. Every allocation of a parse of such a document is failed in turn, with and without
 * an arena: each parse must give the whole tree or NULL with ENOMEM and "out of memory", never abort, and the next
 * parse with memory must give the whole tree again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_json_arena.h"

static long fail_at = -1, n_allocs; /* the 1-based allocation to fail, -1 = none */

static void *failing_malloc(size_t n)
{
	if (++n_allocs == fail_at)
		return NULL;
	return malloc(n);
}

/* reasons of a stored profile entry, as the store keeps them: quotes, backslashes, unicode and slashes escaped */
static const char DOC[] =
	"[{\"code\":\"crossover\",\"text\":\"inline wins up to 64 B \\\"quoted\\\" over a \\\\ path \\/ and \\u00e9 "
	"with a long tail to outgrow the lexer's first buffer\",\"topic\":\"input\",\"severity\":\"info\"},"
	"{\"code\":\"knee\",\"text\":\"N = 16: \\\"t_cqe\\\" 1.2 us \\t\\n\\r\\b\\f \\ud83d\\ude00 and more words here\","
	"\"topic\":\"signaling\",\"severity\":\"info\",\"figures\":[1.5,2,3e3,-4]}]";

/* The document parsed: DOC alone, or (big) DOC repeated in an array past the arena's 256 KB chunk, so that a chunk is
 * allocated in the middle of the parse. */
static char *make_doc(bool big, size_t *len)
{
	size_t n = big ? 1200 : 1, one = sizeof(DOC) - 1, cap = n * (one + 1) + 3;
	char *d = malloc(cap), *p = d;

	assert_non_null(d);
	*p++ = '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, DOC, one);
		p += one;
	}
	*p++ = ']';
	*len = (size_t)(p - d);
	return d;
}

/* Parses doc (len bytes) with allocation k failing (0: none), in a fresh arena when in_arena; checks the outcome
 * against ref and returns whether it was refused as out of memory. */
static bool parse_failing(const char *doc, size_t len, long k, bool in_arena, const json_t *ref)
{
	struct rt_json_arena a = { 0 };
	json_error_t je;
	json_t *got;

	if (in_arena)
		rt_json_arena_begin(&a);
	n_allocs = 0;
	fail_at = k ? k : -1;
	errno = 0;
	got = rt_json_loadb(doc, len, 0, &je);
	fail_at = -1;
	if (got) {
		assert_true(json_equal(ref, got));
	} else {
		assert_int_equal(errno, ENOMEM);
		assert_string_equal(je.text, "out of memory");
	}
	if (in_arena)
		rt_json_arena_end(&a);
	else
		json_decref(got);
	return !got;
}

static void parse_all_failures(bool in_arena)
{
	size_t len;
	char *doc = make_doc(in_arena, &len);
	json_error_t je;
	json_t *ref = json_loadb(doc, len, 0, &je); /* jansson's own parse, nothing failing */
	long total, failed = 0;

	assert_non_null(ref);
	assert_false(parse_failing(doc, len, 0, in_arena, ref));
	total = n_allocs;
	/* without an arena every value is an allocation; in one, the chunks are (a second one mid-parse) */
	assert_true(total >= (in_arena ? 2 : 20));
	for (long k = 1; k <= total + 1; k++) {
		failed += parse_failing(doc, len, k, in_arena, ref);
		assert_false(parse_failing(doc, len, 0, in_arena, ref)); /* and with memory again, the whole tree */
	}
	assert_true(failed >= total - 1); /* every failing allocation but the reserve's own is a refusal */
	json_decref(ref);
	free(doc);
}

static void test_every_allocation_failing(void **state)
{
	(void)state;
	parse_all_failures(false);
}

static void test_every_allocation_failing_in_an_arena(void **state)
{
	(void)state;
	parse_all_failures(true);
}

static void test_bad_document_is_not_oom(void **state)
{
	json_error_t je;

	(void)state;
	errno = 0;
	assert_null(rt_json_loads("{\"a\": \"x\\q\"}", 0, &je));
	assert_int_not_equal(errno, ENOMEM);
	assert_string_not_equal(je.text, "out of memory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_failing),
		cmocka_unit_test(test_every_allocation_failing_in_an_arena),
		cmocka_unit_test(test_bad_document_is_not_oom),
	};

	/* jansson's allocator before rtune's hooks: they pass through to it (rt_json_loadb installs them on first use) */
	json_set_alloc_funcs(failing_malloc, free);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
