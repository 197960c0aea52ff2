// SPDX-License-Identifier: MIT
/*
 * Unit test of `rtune calibrate --app`'s concurrency sizing (cli/app_concurrency.c, issue 16 item 14): Q and T as the
 * app ran them, no band for an app on one QP or without a recorded QP count, the default threads (capped by Q) when
 * the probe did not record them, T = Q when threads outnumber QPs, the band's limits, and the busiest class chosen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "app_concurrency.h"

static struct rt_store_histogram hist(enum rt_opcode op, uint32_t qps, uint32_t threads)
{
	struct rt_store_histogram h;

	memset(&h, 0, sizeof(h));
	h.op = op;
	h.qpt = RT_QPT_RC;
	h.qps = qps;
	h.threads = threads;
	return h;
}

static void test_sizes(void **state)
{
	struct rt_store_histogram h[2];
	uint32_t q = 99, t = 99;

	(void)state;
	h[0] = hist(RT_OP_SEND, 6, 3);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_AS_SEEN);
	assert_int_equal(q, 6);
	assert_int_equal(t, 3);
	/* the class that used more QPs; on equal QPs the one with more threads */
	h[1] = hist(RT_OP_WRITE, 8, 2);
	assert_int_equal(rt_cli_app_concurrency(h, 2, &q, &t), RT_APP_CONC_AS_SEEN);
	assert_int_equal(q, 8);
	assert_int_equal(t, 2);
	h[1] = hist(RT_OP_WRITE, 6, 5);
	rt_cli_app_concurrency(h, 2, &q, &t);
	assert_int_equal(t, 5);
	/* one QP, or none recorded: no band */
	h[0] = hist(RT_OP_SEND, 1, 4);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_ONE_QP);
	assert_int_equal(q + t, 0);
	h[0] = hist(RT_OP_SEND, 0, 0);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_ONE_QP);
	assert_int_equal(q + t, 0);
	assert_int_equal(rt_cli_app_concurrency(h, 0, &q, &t), RT_APP_CONC_ONE_QP);
	/* threads not recorded: the default, never above Q */
	h[0] = hist(RT_OP_SEND, 4, 0);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_THREADS_UNKNOWN);
	assert_int_equal(q, 4);
	assert_int_equal(t, RT_APP_CONC_DEFAULT_THREADS);
	h[0] = hist(RT_OP_SEND, 2, 0);
	rt_cli_app_concurrency(h, 1, &q, &t);
	assert_true(t >= 1 && t <= 2);
	/* more threads than QPs: each thread owns one */
	h[0] = hist(RT_OP_SEND, 3, 12);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_SHARED_QPS);
	assert_int_equal(q, 3);
	assert_int_equal(t, 3);
	/* the band's limits */
	h[0] = hist(RT_OP_SEND, 1000, 40);
	assert_int_equal(rt_cli_app_concurrency(h, 1, &q, &t), RT_APP_CONC_CAPPED);
	assert_int_equal(q, RT_APP_CONC_MAX_QPS);
	assert_int_equal(t, RT_APP_CONC_MAX_THREADS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
