// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared helpers: the message-size bucket scheme (every size lands in the bucket whose bounds contain
 * it, buckets tile the range without gaps, 8 sub-buckets per power of two), enum names round-trip, rt_error formatting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <rtune/error.h>
#include "rt_hist.h"
#include "rt_model.h"

static void test_hist_bounds_contain(void **state)
{
	(void)state;
	/* every size up to 1 MiB, then a stride up to 2^32-1 */
	for (uint64_t v = 0; v <= UINT32_MAX; v = v < (1u << 20) ? v + 1 : v * 3 / 2 + 7) {
		unsigned b = rt_hist_bucket((uint32_t)v);
		assert_true(b < RT_HIST_BUCKETS);
		assert_true(rt_hist_bucket_lo(b) <= v);
		assert_true(rt_hist_bucket_hi(b) >= v);
	}
	assert_int_equal(rt_hist_bucket(UINT32_MAX), RT_HIST_BUCKETS - 1);
	assert_int_equal(rt_hist_bucket_hi(RT_HIST_BUCKETS - 1), UINT32_MAX);
}

static void test_hist_tiles(void **state)
{
	(void)state;
	assert_int_equal(rt_hist_bucket_lo(0), 0);
	for (unsigned b = 1; b < RT_HIST_BUCKETS; b++)
		assert_int_equal(rt_hist_bucket_lo(b), rt_hist_bucket_hi(b - 1) + 1);
	/* 8 buckets between 64 and 127, the first at 64 and each 8 wide */
	assert_int_equal(rt_hist_bucket(127) - rt_hist_bucket(64), 7);
	assert_int_equal(rt_hist_bucket_hi(rt_hist_bucket(64)), 71);
	assert_int_equal(rt_hist_bucket(7), 7);
	assert_int_equal(rt_hist_bucket(8), 8);
}

static void test_names(void **state)
{
	enum rt_opcode op;
	enum rt_qp_type qpt;
	enum rt_lat_kind kind;
	enum rt_run_status st;

	(void)state;
	assert_int_equal(rt_opcode_parse(rt_opcode_name(RT_OP_WRITE), &op), 0);
	assert_int_equal(op, RT_OP_WRITE);
	assert_int_equal(rt_qp_type_parse("ud", &qpt), 0);
	assert_int_equal(qpt, RT_QPT_UD);
	assert_int_equal(rt_lat_kind_parse("post_cqe", &kind), 0);
	assert_int_equal(kind, RT_LAT_POST_CQE);
	assert_int_equal(rt_run_status_parse("interrupted", &st), 0);
	assert_int_equal(st, RT_RUN_INTERRUPTED);
	assert_int_equal(rt_opcode_parse("read", &op), EINVAL);
	assert_int_equal(rt_opcode_parse(NULL, &op), EINVAL);
	assert_string_equal(rt_opcode_name((enum rt_opcode)7), "unknown");
}

static void test_error(void **state)
{
	struct rt_error err;
	char big[600];

	(void)state;
	assert_int_equal(rt_error_set(&err, ENOENT, "cannot open '%s'", "/x"), ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(err.text, "cannot open '/x'");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rt_error_set(&err, EINVAL, "%s", big);
	assert_int_equal(strlen(err.text), RT_ERROR_TEXT_LEN - 1);
	rt_error_clear(&err);
	assert_int_equal(err.code, 0);
	assert_string_equal(err.text, "");
	assert_int_equal(rt_error_set(NULL, EIO, "x"), EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_bounds_contain),
		cmocka_unit_test(test_hist_tiles),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
