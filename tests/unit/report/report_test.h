/* SPDX-License-Identifier: MIT */
/*
 * Helpers the report's unit tests share (include after cmocka.h): a report over generated documents, and a writer's
 * output captured in memory.
 */
#ifndef REPORT_TEST_H
#define REPORT_TEST_H

#include <stdio.h>

#include "fleet_gen.h"
#include "rt_report.h"

#define NOW 1780000000LL /* 2026-05-28 */

/* A report over the n generated documents, judged at NOW, analyzed; fails the test on any error. */
static inline struct rt_report *report_of(const struct fg_node *v, size_t n)
{
	struct rt_report_opts o = { .now = NOW };
	struct rt_report *r = NULL;
	struct rt_error err;

	assert_int_equal(rt_report_create(&o, &r), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rt_report_add_json_text(r, v[i].hostname, v[i].json, v[i].len), 1);
	assert_int_equal(rt_report_analyze(r, &err), 0);
	return r;
}

/* What writer fn writes for r (malloc'd, *len bytes); fails the test when fn fails. */
static inline char *capture(const struct rt_report *r, int (*fn)(const struct rt_report *, FILE *), size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(fn(r, f), 0);
	fclose(f);
	return buf;
}

#endif
