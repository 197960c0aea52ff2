// SPDX-License-Identifier: MIT
/*
 * Unit tests of the rate sweep's load bands in the store (schema 8, issue 16 items 14 and 16): band points round-trip
 * field for field apart from the small band (rate_points keeps only the small band's points, so every existing reader
 * of a run's sweep is unchanged), and the signaling interval per band is replaced per run.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "store_test_util.h"

static char dir[1024], path[1200];

static int setup(void **state)
{
	(void)state;
	tu_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/rtune.db", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmdir(dir);
	return 0;
}

static void test_bands_roundtrip(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run, pts, back;
	struct rt_rate_point band[4];
	struct rt_store_signal_band sb[3] = {
		{ RT_BAND_LARGE, RT_OP_WRITE, RT_QPT_RC, 4096, 65536, 1, 32, "knee", "high", 1, 1 },
		{ RT_BAND_POST_LIST, RT_OP_WRITE, RT_QPT_RC, 64, 64, 8, 8, "indifferent", "medium", 1, 1 },
		{ RT_BAND_CONCURRENCY, RT_OP_WRITE, RT_QPT_RC, 64, 64, 1, 4, "knee", "low", 4, 2 },
	}, *got = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	tu_run(&run, "host-a", "mlx5_0", 0, 0);
	assert_int_equal(rt_store_run_begin(st, &run, &err), 0);
	tu_run(&pts, "host-a", "mlx5_0", 2, 4);
	assert_int_equal(rt_store_run_add_points(st, run.id, pts.lat, pts.n_lat, pts.rate, pts.n_rate, &err), 0);
	memset(band, 0, sizeof(band));
	for (int i = 0; i < 4; i++) {
		band[i].op = RT_OP_WRITE;
		band[i].qpt = RT_QPT_RC;
		band[i].msg_bytes = i < 2 ? 4096u << (4 * i) : 64;
		band[i].inl = i >= 2;
		band[i].post_list = i == 2 ? 8 : 1;
		band[i].qps = i == 3 ? 4 : 0;
		band[i].threads = i == 3 ? 2 : 0;
		band[i].signal_interval = 1u << i;
		band[i].sq_depth = 128;
		band[i].reps = 5;
		band[i].mops = 1.5 + i;
		band[i].mops_lo = 1.0 + i;
		band[i].mops_hi = 2.0 + i;
		band[i].cpu_ns_per_msg = 100 + i;
		band[i].msgs = 1000u + (unsigned)i;
	}
	assert_int_equal(rt_rate_band_of(&band[0]), RT_BAND_LARGE);
	assert_int_equal(rt_rate_band_of(&band[2]), RT_BAND_POST_LIST);
	assert_int_equal(rt_rate_band_of(&band[3]), RT_BAND_CONCURRENCY);
	assert_int_equal(rt_store_run_add_bands(st, run.id, band, 4, &err), 0);
	assert_int_equal(rt_store_run_finish(st, run.id, RT_RUN_COMPLETE, &err), 0);

	memset(&back, 0, sizeof(back));
	assert_int_equal(rt_store_run_load(st, NULL, NULL, &back, &err), 0);
	assert_int_equal(back.n_rate, pts.n_rate); /* the small band alone */
	assert_int_equal(back.n_band_rate, 0);	   /* bands are loaded on request */
	assert_int_equal(rt_store_run_load_bands(st, &back, &err), 0);
	assert_int_equal(back.n_band_rate, 4);
	for (int i = 0; i < 4; i++) {
		const struct rt_rate_point *p = &back.band_rate[i];

		assert_int_equal(p->msg_bytes, band[i].msg_bytes);
		assert_int_equal(p->inl, band[i].inl);
		assert_int_equal(p->post_list, band[i].post_list);
		assert_int_equal(p->qps, i == 3 ? 4 : 1); /* one QP and one thread outside the concurrency band */
		assert_int_equal(p->threads, i == 3 ? 2 : 1);
		assert_int_equal(rt_rate_band_of(p), rt_rate_band_of(&band[i]));
		assert_int_equal(p->signal_interval, band[i].signal_interval);
		assert_int_equal(p->reps, 5);
		assert_true(p->mops == band[i].mops && p->mops_hi == band[i].mops_hi);
		assert_int_equal(p->msgs, band[i].msgs);
	}

	/* N per band: replaced per run */
	assert_int_equal(rt_store_put_signal_bands(st, run.id, sb, 3, &err), 0);
	sb[0].signal_interval = 64;
	assert_int_equal(rt_store_put_signal_bands(st, run.id, sb, 3, &err), 0);
	assert_int_equal(rt_store_get_signal_bands(st, run.id, &got, &n, &err), 0);
	assert_int_equal(n, 3);
	/* ordered by band name: concurrency, large, post_list */
	assert_int_equal(got[0].band, RT_BAND_CONCURRENCY);
	assert_int_equal(got[0].qps, 4);
	assert_int_equal(got[0].threads, 2);
	assert_int_equal(got[0].signal_interval, 4);
	memmove(got, got + 1, 2 * sizeof(*got));
	assert_int_equal(got[0].band, RT_BAND_LARGE);
	assert_int_equal(got[0].qps, 1);
	assert_int_equal(got[0].signal_interval, 64);
	assert_int_equal(got[0].msg_bytes_hi, 65536);
	assert_string_equal(got[0].verdict, "knee");
	assert_int_equal(got[1].band, RT_BAND_POST_LIST);
	assert_int_equal(got[1].post_list, 8);
	assert_string_equal(got[1].confidence, "medium");
	free(got);
	rt_run_release(&back);
	rt_run_release(&pts);
	rt_run_release(&run);
	rt_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bands_roundtrip, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
