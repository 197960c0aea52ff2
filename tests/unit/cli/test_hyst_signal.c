// SPDX-License-Identifier: MIT
/*
 * The signal interval's hysteresis rule (cli/tune_hysteresis.c, docs/tuner.md "Hysteresis") on constructed decisions:
 * a run's N replaces the node's current one when it lies outside a factor of two or differs in its verdict, with high
 * confidence or a confidence above the current answer's; a run no more confident than the current answer keeps it
 * (on plain Soft-RoCE, whose rates under a busy guest swing by a factor of three, medium-confidence knees at 8, 32 and
 * 64 among "N does not matter" runs made the profile change four times in ten runs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tune_hysteresis.h"

/* A measured signaling decision: verdict knee (else indifferent), N and confidence. */
static struct rt_tuner_decision dec(bool knee, uint32_t n, enum rt_confidence conf)
{
	struct rt_tuner_decision d;

	memset(&d, 0, sizeof(d));
	d.signal_measured = true;
	d.signal_verdict = knee ? RT_SIGNAL_KNEE : RT_SIGNAL_INDIFFERENT;
	d.signal_interval = n;
	d.signal_confidence = conf;
	return d;
}

/* The action on d against the current N cur with verdict verdict and confidence cc; *sup as rt_hyst_signal's. */
static enum rt_hyst_action hyst(const struct rt_tuner_decision *d, uint32_t cur, const char *verdict,
				enum rt_confidence cc, bool *sup)
{
	char why[256] = "";
	enum rt_hyst_action a = rt_hyst_signal(d, cur, verdict, cc, sup, why, sizeof(why));

	print_message("  current %s %u (%s), run %s %u (%s): %s: %s\n", verdict, cur, rt_confidence_name(cc),
		      rt_hyst_signal_verdict(d), d->signal_interval, rt_confidence_name(d->signal_confidence),
		      rt_hyst_action_name(a), why);
	assert_true(why[0] != '\0');
	return a;
}

/* The plain Soft-RoCE write/rc series: each run's own answer in order; the profile stays at "does not matter", 16. */
static void test_noisy_series_stays(void **state)
{
	static const struct {
		bool knee;
		uint32_t n;
		enum rt_confidence c;
	} runs[] = { { false, 16, RT_CONF_LOW },    { false, 16, RT_CONF_MEDIUM }, { true, 32, RT_CONF_MEDIUM },
		     { false, 16, RT_CONF_LOW },    { true, 64, RT_CONF_MEDIUM },  { false, 16, RT_CONF_MEDIUM },
		     { false, 16, RT_CONF_MEDIUM }, { false, 16, RT_CONF_LOW },	   { true, 8, RT_CONF_MEDIUM },
		     { false, 16, RT_CONF_MEDIUM } };
	/* the first run sets it; the same answer at medium raises its confidence (cmd_tune.c) */
	enum rt_confidence cc = RT_CONF_LOW;
	bool sup;

	(void)state;
	for (size_t i = 1; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct rt_tuner_decision d = dec(runs[i].knee, runs[i].n, runs[i].c);

		assert_int_equal(hyst(&d, 16, "indifferent", cc, &sup), RT_HYST_KEPT);
		if (!runs[i].knee && runs[i].n == 16 && runs[i].c > cc)
			cc = runs[i].c;
	}
	assert_int_equal(cc, RT_CONF_MEDIUM);
}

/* Runs no more confident than the current answer: kept (counted as evidence within a factor of two only). */
static void test_weak_runs_keep(void **state)
{
	struct rt_tuner_decision d;
	bool sup;

	(void)state;
	d = dec(true, 64, RT_CONF_MEDIUM); /* outside a factor of two, medium against medium */
	assert_int_equal(hyst(&d, 16, "indifferent", RT_CONF_MEDIUM, &sup), RT_HYST_KEPT);
	assert_false(sup);
	d = dec(true, 32, RT_CONF_MEDIUM); /* the other verdict within a factor of two */
	assert_int_equal(hyst(&d, 16, "indifferent", RT_CONF_MEDIUM, &sup), RT_HYST_KEPT);
	assert_true(sup);
	d = dec(true, 4, RT_CONF_LOW); /* low against low */
	assert_int_equal(hyst(&d, 16, "knee", RT_CONF_LOW, &sup), RT_HYST_KEPT);
	assert_false(sup);
	d = dec(false, 16, RT_CONF_MEDIUM); /* "does not matter" against a high knee at 64 */
	assert_int_equal(hyst(&d, 64, "knee", RT_CONF_HIGH, &sup), RT_HYST_KEPT);
}

/* Runs that are high, or more confident than the current answer: replaced. */
static void test_strong_runs_replace(void **state)
{
	struct rt_tuner_decision d;
	bool sup;

	(void)state;
	d = dec(true, 64, RT_CONF_HIGH);
	assert_int_equal(hyst(&d, 16, "indifferent", RT_CONF_HIGH, &sup), RT_HYST_REPLACED);
	d = dec(true, 32, RT_CONF_HIGH); /* the verdict alone, with high confidence */
	assert_int_equal(hyst(&d, 16, "indifferent", RT_CONF_MEDIUM, &sup), RT_HYST_REPLACED);
	d = dec(true, 64, RT_CONF_MEDIUM); /* medium against a low-confidence current answer */
	assert_int_equal(hyst(&d, 16, "indifferent", RT_CONF_LOW, &sup), RT_HYST_REPLACED);
	d = dec(true, 4, RT_CONF_HIGH); /* a high-confidence run that needs less */
	assert_int_equal(hyst(&d, 64, "knee", RT_CONF_HIGH, &sup), RT_HYST_REPLACED);
	d = dec(false, 16, RT_CONF_LOW); /* the current N was never measured */
	assert_int_equal(hyst(&d, 16, "not_measured", RT_CONF_LOW, &sup), RT_HYST_REPLACED);
}

/* The same answer: kept and counted; no rate sweep: kept and not counted. */
static void test_same_and_unmeasured(void **state)
{
	struct rt_tuner_decision d = dec(true, 16, RT_CONF_LOW);
	bool sup;

	(void)state;
	assert_int_equal(hyst(&d, 16, "knee", RT_CONF_HIGH, &sup), RT_HYST_KEPT);
	assert_true(sup);
	d.signal_measured = false;
	assert_int_equal(hyst(&d, 16, "knee", RT_CONF_LOW, &sup), RT_HYST_KEPT);
	assert_false(sup);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noisy_series_stays),
		cmocka_unit_test(test_weak_runs_keep),
		cmocka_unit_test(test_strong_runs_replace),
		cmocka_unit_test(test_same_and_unmeasured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
