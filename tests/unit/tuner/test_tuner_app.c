// SPDX-License-Identifier: MIT
/*
 * Unit tests of what the application tells the tuner (rtune tune --app): each decision reads only the histogram of its
 * own (opcode, QP type) and says when the app sent nothing with it (app_sent_nothing); a bin's hi is a size the app
 * sends, so the threshold is 64 for an app sending 64-byte messages; the SQ-full warning (app_sq_full) compares the
 * app's send queue with the decision's sq_depth; no app, no app reasons.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gen.h"
#include "rt_hist.h"
#include "rt_tuner.h"

static struct gen_case c;

static int setup(void **state)
{
	struct gen_opts go;

	(void)state;
	gen_opts_default(&go);
	go.noise = GEN_GAUSS;
	go.raw = 1;
	go.refine = 0;
	go.edges = 0;
	go.with_rate = 1;
	if (gen_make(7, &go, &c) || c.true_threshold < 128)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gen_free(&c);
	return 0;
}

/* The send/rc decision of a run of c.in (the generator measures RC only). */
static const struct rt_tuner_decision *send_rc(struct rt_tuner_result *res)
{
	struct rt_error err;

	assert_int_equal(rt_tuner_run(&c.in, NULL, res, &err), 0);
	for (size_t i = 0; i < res->n; i++)
		if (res->d[i].op == RT_OP_SEND && res->d[i].qpt == RT_QPT_RC)
			return &res->d[i];
	fail_msg("no send/rc decision");
	return NULL;
}

static const struct rt_tuner_reason *reason(const struct rt_tuner_decision *d, enum rt_reason_code code)
{
	for (size_t i = 0; i < d->n_reasons; i++)
		if (d->reasons[i].code == code)
			return &d->reasons[i];
	return NULL;
}

static void test_no_app_no_app_reasons(void **state)
{
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	memset(c.in.app, 0, sizeof(c.in.app));
	c.in.app_name = NULL;
	d = send_rc(&res);
	assert_null(reason(d, RT_R_APP_SENT_NOTHING));
	assert_null(reason(d, RT_R_APP_SQ_FULL));
	rt_tuner_result_free(&res);
}

/* A UD histogram is not the RC decision's: that one is made from the curves and says the app sent nothing on RC. */
static void test_other_qp_type_not_used(void **state)
{
	struct rt_tuner_hist_bin bin = { .lo = 64, .hi = 64, .count = 500 };
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	const struct rt_tuner_reason *r;

	(void)state;
	memset(c.in.app, 0, sizeof(c.in.app));
	c.in.app[RT_OP_SEND][RT_QPT_UD].bins = &bin;
	c.in.app[RT_OP_SEND][RT_QPT_UD].n_bins = 1;
	c.in.app[RT_OP_SEND][RT_QPT_UD].post_list_batch = 64;
	c.in.app_name = "udapp";
	d = send_rc(&res);
	assert_false(d->gain_from_histogram);
	assert_true(d->hist_share_inlined == 0);
	assert_null(reason(d, RT_R_HISTOGRAM_THRESHOLD));
	assert_null(reason(d, RT_R_SIGNAL_RAISED_TO_BATCH));
	r = reason(d, RT_R_APP_SENT_NOTHING);
	assert_non_null(r);
	if (!r)
		return;
	assert_int_equal(r->severity, RT_SEV_INFO);
	assert_non_null(strstr(r->text, "application 'udapp' sent nothing with send on rc QPs"));
	rt_tuner_result_free(&res);
}

/* Bins whose hi is the largest size sent: 64-byte messages give threshold 64 (the bucket's top would give 71). */
static void test_threshold_is_a_size_sent(void **state)
{
	uint64_t counts[RT_HIST_BUCKETS] = { 0 };
	struct rt_tuner_hist_bin *bins;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	size_t nb;

	(void)state;
	counts[rt_hist_bucket(64)] = 500;
	assert_int_equal(rt_tuner_hist_from_buckets(counts, &bins, &nb, NULL), 0);
	memset(c.in.app, 0, sizeof(c.in.app));
	c.in.app[RT_OP_SEND][RT_QPT_RC].bins = bins;
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = nb;
	c.in.app_name = "rcapp";
	d = send_rc(&res);
	assert_int_equal(d->inline_threshold, 71); /* bucket bounds: the top of 64..71 */
	rt_tuner_result_free(&res);
	bins[0].hi = 64; /* what tune --app sets from the probe's largest size */
	d = send_rc(&res);
	assert_int_equal(d->inline_threshold, 64);
	assert_int_equal(d->max_inline_data, 64);
	assert_true(d->gain_from_histogram);
	assert_null(reason(d, RT_R_APP_SENT_NOTHING));
	rt_tuner_result_free(&res);
	free(bins);
}

static void test_sq_full_warning(void **state)
{
	struct rt_tuner_hist_bin bin = { .lo = 64, .hi = 64, .count = 500 };
	struct rt_tuner_app *a = &c.in.app[RT_OP_SEND][RT_QPT_RC];
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	const struct rt_tuner_reason *r;
	char want[128];

	(void)state;
	memset(c.in.app, 0, sizeof(c.in.app));
	a->bins = &bin;
	a->n_bins = 1;
	a->post_calls = 500;
	c.in.app_name = "app";
	d = send_rc(&res);
	assert_null(reason(d, RT_R_APP_SQ_FULL)); /* never full: no warning */
	rt_tuner_result_free(&res);

	/* a shallower queue than the profile's: create the QPs with the profile's sq_depth */
	a->sq_full_enomem = 9;
	a->max_send_wr = 8;
	d = send_rc(&res);
	r = reason(d, RT_R_APP_SQ_FULL);
	assert_non_null(r);
	if (!r)
		return;
	assert_int_equal(r->severity, RT_SEV_WARN);
	assert_int_equal(r->topic, RT_TOPIC_QUEUE);
	assert_non_null(strstr(r->text, "full 9 times in 500 post calls"));
	assert_non_null(strstr(r->text, "its QPs hold 8 WRs"));
	snprintf(want, sizeof(want), "create them with this profile's sq_depth %u", d->sq_depth);
	assert_non_null(strstr(r->text, want));
	assert_true(d->sq_depth > 8);
	rt_tuner_result_free(&res);

	/* as deep as the profile's already: a deeper queue is not the answer */
	a->max_send_wr = 1u << 20;
	d = send_rc(&res);
	r = reason(d, RT_R_APP_SQ_FULL);
	assert_non_null(r);
	if (!r)
		return;
	assert_non_null(strstr(r->text, "a deeper queue alone will not prevent it"));
	rt_tuner_result_free(&res);

	/* the send queue unknown (an older store) */
	a->max_send_wr = 0;
	a->post_calls = 0;
	d = send_rc(&res);
	r = reason(d, RT_R_APP_SQ_FULL);
	assert_non_null(r);
	if (!r)
		return;
	assert_non_null(strstr(r->text, "full 9 times (ENOMEM"));
	assert_non_null(strstr(r->text, "at least this profile's sq_depth"));
	rt_tuner_result_free(&res);
	assert_string_equal(rt_reason_code_name(RT_R_APP_SQ_FULL), "app_sq_full");
	assert_string_equal(rt_reason_code_name(RT_R_APP_SENT_NOTHING), "app_sent_nothing");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_app_no_app_reasons),
		cmocka_unit_test(test_other_qp_type_not_used),
		cmocka_unit_test(test_threshold_is_a_size_sent),
		cmocka_unit_test(test_sq_full_warning),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
