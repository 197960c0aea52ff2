// SPDX-License-Identifier: MIT
/*
 * Unit tests of calibration runs and histograms in the store: a run written in steps loads back field for field;
 * a "running" run whose process died shows as interrupted; two processes writing at once both succeed; a child killed
 * with SIGKILL in the middle of its transactions leaves a consistent store (integrity_check), earlier runs intact and
 * only whole transactions of the killed run. A run keeps its device as it was (re-tuning an old run uses its own max
 * inline), and a replaced NIC leaves the node's current hardware, signature and export.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "rt_tuner.h"
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

static void test_run_roundtrip(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run, back;
	char idbuf[32];

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	tu_run(&run, "host-a", "mlx5_0", 0, 0);
	assert_int_equal(rt_store_run_begin(st, &run, &err), 0);
	assert_true(run.id > 0);
	assert_int_equal(strlen(run.uuid), 36);
	assert_int_equal(run.status, RT_RUN_RUNNING);
	/* points arrive in two batches, as the engine produces them */
	{
		struct rt_run pts;

		tu_run(&pts, "host-a", "mlx5_0", 10, 6);
		assert_int_equal(rt_store_run_add_points(st, run.id, pts.lat, 6, pts.rate, 2, &err), 0);
		assert_int_equal(rt_store_run_add_points(st, run.id, pts.lat + 6, 4, pts.rate + 2, 4, &err), 0);
		run.cqmod[1].measured = true;
		run.cqmod[1].supported = true;
		run.cqmod[1].best_count = 16;
		run.cqmod[1].best_period_us = 8;
		run.cqmod[1].mops_best = 7.5;
		/* the engine refines its parameters while measuring (notes); set_results keeps the refined ones */
		snprintf(run.params, sizeof(run.params), "{\"quick\":true,\"notes\":\"budget too small\"}");
		assert_int_equal(rt_store_run_set_results(st, &run, &err), 0);
		assert_int_equal(rt_store_run_finish(st, run.id, RT_RUN_COMPLETE, &err), 0);
		/* the same run id again is refused, not duplicated */
		{
			struct rt_run dup;

			tu_run(&dup, "host-a", "mlx5_0", 0, 0);
			snprintf(dup.uuid, sizeof(dup.uuid), "%s", run.uuid);
			assert_int_equal(rt_store_run_begin(st, &dup, &err), EEXIST);
			assert_non_null(strstr(err.text, "already stored"));
			rt_run_release(&dup);
		}
		/* by uuid */
		assert_int_equal(rt_store_run_load(st, run.uuid, NULL, &back, &err), 0);
		assert_int_equal(back.id, run.id);
		assert_int_equal(back.status, RT_RUN_COMPLETE);
		assert_true(back.ended_ns >= back.started_ns);
		assert_string_equal(back.node.hostname, "host-a");
		assert_string_equal(back.node.cpu_model, "Test CPU @ 3.0GHz");
		assert_string_equal(back.dev.name, "mlx5_0");
		assert_string_equal(back.dev.node_guid, "0011:2233:4455:6677");
		assert_int_equal(back.dev.max_inline_rc, 220);
		assert_string_equal(back.dev.local_cpus, "4-7");
		assert_int_equal(back.dev.port_count, 1);
		assert_int_equal(back.dev.ports[0].active_mtu_bytes, 1024);
		assert_int_equal(back.dev.ports[0].gid_count, 1);
		assert_string_equal(back.dev.ports[0].gids[0].gid, "fe80:0000:0000:0000:0000:0000:0000:0001");
		assert_int_equal(back.env.cpu, 5);
		assert_true(back.env.numa_local);
		assert_string_equal(back.env.mode, "loopback");
		assert_string_equal(back.params, "{\"quick\":true,\"notes\":\"budget too small\"}");
		assert_int_equal(back.sq_depth, 256);
		assert_false(back.cqmod[0].supported);
		assert_string_equal(back.cqmod[0].reason, "ibv_modify_cq: Operation not supported");
		assert_true(back.cqmod[1].supported);
		assert_int_equal(back.cqmod[1].best_count, 16);
		assert_int_equal(back.n_lat, 10);
		assert_int_equal(back.n_rate, 6);
		for (size_t i = 0; i < 10; i++) {
			assert_int_equal(back.lat[i].op, pts.lat[i].op);
			assert_int_equal(back.lat[i].msg_bytes, pts.lat[i].msg_bytes);
			assert_int_equal(back.lat[i].inl, pts.lat[i].inl);
			assert_true(back.lat[i].median_ns == pts.lat[i].median_ns);
			assert_int_equal(back.lat[i].n_kept, 4);
			assert_memory_equal(back.lat[i].samples_ns, pts.lat[i].samples_ns, 4 * sizeof(float));
		}
		for (size_t i = 0; i < 6; i++) {
			assert_int_equal(back.rate[i].signal_interval, pts.rate[i].signal_interval);
			assert_true(back.rate[i].mops == pts.rate[i].mops);
		}
		rt_run_release(&back);
		rt_run_release(&pts);
	}
	/* by row id, and latest of the device; unknown ones are ENOENT */
	snprintf(idbuf, sizeof(idbuf), "%lld", (long long)run.id);
	assert_int_equal(rt_store_run_load(st, idbuf, NULL, &back, &err), 0);
	assert_string_equal(back.uuid, run.uuid);
	rt_run_release(&back);
	assert_int_equal(rt_store_run_load(st, NULL, "mlx5_0", &back, &err), 0);
	assert_string_equal(back.uuid, run.uuid);
	rt_run_release(&back);
	assert_int_equal(rt_store_run_load(st, NULL, "mlx5_9", &back, &err), ENOENT);
	assert_int_equal(rt_store_run_load(st, "nope", NULL, &back, &err), ENOENT);
	assert_int_equal(rt_store_run_finish(st, 999, RT_RUN_FAILED, &err), ENOENT);
	/* the node and its device are listed for fleet views */
	{
		struct rt_store_node *nodes = NULL;
		struct rt_device_info *devs = NULL;
		size_t nn = 0, nd = 0;

		assert_int_equal(rt_store_node_list(st, &nodes, &nn, &err), 0);
		assert_int_equal(nn, 1);
		assert_string_equal(nodes[0].node_key, "mid-host-a/host-a");
		assert_string_equal(nodes[0].info.hostname, "host-a");
		assert_int_equal(nodes[0].n_runs, 1);
		assert_int_equal(nodes[0].n_profile_entries, 0);
		assert_true(strncmp(nodes[0].hw_signature, "fnv1a64:", 8) == 0);
		free(nodes);
		assert_int_equal(rt_store_node_devices(st, "host-a", &devs, &nd, &err), 0);
		assert_int_equal(nd, 1);
		assert_string_equal(devs[0].name, "mlx5_0");
		assert_int_equal(devs[0].port_count, 1);
		free(devs);
		assert_int_equal(rt_store_node_devices(st, "host-z", &devs, &nd, &err), ENOENT);
	}
	rt_run_release(&run);
	rt_store_close(st);
}

static void test_histogram(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_histogram h, back;
	struct rt_node_info node;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	tu_node(&node, "host-a");
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "kvstore");
	h.op = RT_OP_SEND;
	h.buckets[rt_hist_bucket(32)] = 1000;
	h.buckets[rt_hist_bucket(4096)] = 10;
	h.buckets[RT_HIST_BUCKETS - 1] = UINT64_C(0x123456789abcdef);
	h.messages = 1010;
	h.bytes = 1010 * 100;
	h.inline_count = 900;
	h.signaled_count = 64;
	h.sq_full_enomem = 3;
	h.bucket_max[rt_hist_bucket(32)] = 32;
	h.bucket_max[rt_hist_bucket(4096)] = 4200;
	h.post_calls = 500;
	h.batch[0] = 400;
	h.batch[rt_batch_bucket(12)] = 100;
	h.batch_max[0] = 1;
	h.batch_max[rt_batch_bucket(12)] = 12;
	h.max_send_wr = 64;
	h.created_ns = 1000;
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	assert_true(h.id > 0);
	h.created_ns = 2000;
	h.messages = 2020;
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.id, h.id); /* the latest */
	assert_int_equal(back.messages, 2020);
	assert_int_equal(back.sq_full_enomem, 3);
	assert_memory_equal(back.buckets, h.buckets, sizeof(h.buckets));
	/* what the bucket counts leave out: the largest size sent per bucket, the post-list batches, the SQ */
	assert_memory_equal(back.bucket_max, h.bucket_max, sizeof(h.bucket_max));
	assert_int_equal(back.bucket_max[rt_hist_bucket(4096)], 4200);
	assert_int_equal(back.post_calls, 500);
	assert_memory_equal(back.batch, h.batch, sizeof(h.batch));
	assert_memory_equal(back.batch_max, h.batch_max, sizeof(h.batch_max));
	assert_int_equal(back.max_send_wr, 64);
	/* UD is its own histogram: the RC one is not returned for it */
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_UD, &back, &err), ENOENT);
	h.qpt = RT_QPT_UD;
	h.messages = 7;
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_UD, &back, &err), 0);
	assert_int_equal(back.messages, 7);
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.messages, 2020);
	h.qpt = RT_QPT_RC;
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_WRITE, RT_QPT_RC, &back, &err), ENOENT);
	assert_non_null(strstr(err.text, "no histogram of app 'kvstore'"));
	h.app[0] = '\0';
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), EINVAL);
	rt_store_close(st);
}

/* A run begun by a process that then dies is "running" in the file but shown as interrupted. */
static void test_dead_owner_is_interrupted(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_run_summary *v = NULL;
	struct rt_run mine, back;
	size_t n = 0;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rt_store *cs = NULL;
		struct rt_run r;

		tu_run(&r, "host-a", "rxe0", 2, 1);
		if (rt_store_open(path, &cs, NULL) || rt_store_run_begin(cs, &r, NULL) ||
		    rt_store_run_add_points(cs, r.id, r.lat, r.n_lat, r.rate, r.n_rate, NULL))
			_exit(1);
		_exit(0); /* dies without finishing the run */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tu_run(&mine, "host-a", "rxe0", 0, 0);
	assert_int_equal(rt_store_run_begin(st, &mine, &err), 0);
	assert_int_equal(rt_store_run_list(st, "rxe0", &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].stored_status, RT_RUN_RUNNING);
	assert_int_equal(v[0].status, RT_RUN_INTERRUPTED);
	assert_int_equal(v[0].n_lat, 2);
	assert_int_equal(v[1].status, RT_RUN_RUNNING); /* ours, alive */
	free(v);
	assert_int_equal(rt_store_run_load(st, NULL, "rxe0", &back, &err), 0);
	assert_string_equal(back.uuid, mine.uuid);
	rt_run_release(&back);
	rt_run_release(&mine);
	rt_store_close(st);
}

#define WRITER_RUNS 15

static void writer(const char *host)
{
	struct rt_store *st = NULL;
	struct rt_error err;

	if (rt_store_open(path, &st, &err)) {
		fprintf(stderr, "%s\n", err.text);
		_exit(2);
	}
	for (int i = 0; i < WRITER_RUNS; i++) {
		struct rt_run r;
		struct rt_profile_entry e;

		tu_run(&r, host, "mlx5_0", 40, 10);
		if (rt_store_run_save(st, &r, &err)) {
			fprintf(stderr, "%s: %s\n", host, err.text);
			_exit(3);
		}
		tu_entry(&e, "mlx5_0", RT_PROFILE_OP_SEND, 64, 8, r.uuid, 1700000000 + i);
		if (rt_store_put_profile(st, &r.node, NULL, &e, 1, NULL, &err)) {
			fprintf(stderr, "%s: %s\n", host, err.text);
			_exit(4);
		}
		rt_run_release(&r);
	}
	rt_store_close(st);
	_exit(0);
}

static void test_two_concurrent_writers(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_run_summary *v = NULL;
	size_t n = 0;
	pid_t pids[2];
	int ready[2];

	(void)state;
	/* both children start together on a store that does not exist yet: creation races too */
	assert_int_equal(pipe(ready), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;

			close(ready[1]);
			if (read(ready[0], &c, 1) != 0)
				_exit(5);
			writer(i ? "host-b" : "host-a");
		}
	}
	close(ready[0]);
	close(ready[1]); /* go */
	for (int i = 0; i < 2; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(rt_store_run_list(st, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 2 * WRITER_RUNS);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(v[i].status, RT_RUN_COMPLETE);
		assert_int_equal(v[i].n_lat, 40);
		assert_int_equal(v[i].n_rate, 10);
		assert_true(v[i].has_profile);
	}
	free(v);
	rt_store_close(st);
}

#define KILL_BATCH 20000

static void test_kill9_mid_transaction(void **state)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_run_summary *v = NULL;
	char earlier[3][40];
	size_t n = 0;
	int sync_pipe[2];
	pid_t pid;
	int status;
	char c;

	(void)state;
	/* three complete runs first */
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	for (int i = 0; i < 3; i++) {
		struct rt_run r;

		tu_run(&r, "host-a", "mlx5_0", 30, 5);
		assert_int_equal(rt_store_run_save(st, &r, &err), 0);
		snprintf(earlier[i], sizeof(earlier[i]), "%s", r.uuid);
		rt_run_release(&r);
	}
	rt_store_close(st);
	assert_int_equal(pipe(sync_pipe), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rt_store *cs = NULL;
		struct rt_run r, big;

		close(sync_pipe[0]);
		tu_run(&r, "host-a", "mlx5_0", 0, 0);
		tu_run(&big, "host-a", "mlx5_0", KILL_BATCH, 0);
		if (rt_store_open(path, &cs, NULL) || rt_store_run_begin(cs, &r, NULL))
			_exit(1);
		if (write(sync_pipe[1], "g", 1) != 1)
			_exit(1);
		/* long writes, back to back, until killed: almost all the time is spent inside a transaction */
		for (;;)
			if (rt_store_run_add_points(cs, r.id, big.lat, big.n_lat, NULL, 0, NULL))
				_exit(1);
	}
	close(sync_pipe[1]);
	assert_int_equal(read(sync_pipe[0], &c, 1), 1);
	close(sync_pipe[0]);
	usleep(700 * 1000);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(rt_store_run_list(st, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 4);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(v[i].uuid, earlier[i]);
		assert_int_equal(v[i].status, RT_RUN_COMPLETE);
		assert_int_equal(v[i].n_lat, 30);
		assert_int_equal(v[i].n_rate, 5);
	}
	assert_int_equal(v[3].stored_status, RT_RUN_RUNNING);
	assert_int_equal(v[3].status, RT_RUN_INTERRUPTED);
	/* only whole transactions of the killed run are there */
	assert_int_equal(v[3].n_lat % KILL_BATCH, 0);
	print_message("killed run kept %zu points (%zu whole batches)\n", v[3].n_lat, v[3].n_lat / KILL_BATCH);
	free(v);
	/* and the store takes new writes */
	{
		struct rt_run r;

		tu_run(&r, "host-a", "mlx5_0", 1, 1);
		assert_int_equal(rt_store_run_save(st, &r, &err), 0);
		rt_run_release(&r);
	}
	rt_store_close(st);
}

/* The hardware signature is stable (device order, hostname do not matter) and moves with what does. */
static void test_hw_signature(void **state)
{
	struct rt_run a, b;
	struct rt_device_info two[2], swapped[2];
	char s1[32], s2[32], s3[32];

	(void)state;
	tu_run(&a, "host-a", "mlx5_0", 0, 0);
	tu_run(&b, "host-b", "mlx5_1", 0, 0);
	two[0] = a.dev;
	two[1] = b.dev;
	swapped[0] = b.dev;
	swapped[1] = a.dev;
	rt_store_hw_signature(&a.node, two, 2, s1);
	rt_store_hw_signature(&b.node, swapped, 2, s2); /* other hostname, same CPU model and devices */
	assert_string_equal(s1, s2);
	assert_int_equal(strlen(s1), 24);
	swapped[0].ports[0].active_mtu_bytes = 4096;
	rt_store_hw_signature(&b.node, swapped, 2, s3);
	assert_string_not_equal(s1, s3);
	swapped[0].ports[0].active_mtu_bytes = two[1].ports[0].active_mtu_bytes;
	snprintf(swapped[1].fw_ver, sizeof(swapped[1].fw_ver), "1.2.4");
	rt_store_hw_signature(&b.node, swapped, 2, s3);
	assert_string_not_equal(s1, s3);
	rt_run_release(&a);
	rt_run_release(&b);
}

/* The tuner's text for run (loaded from the store). */
static char *tune_text(const struct rt_run *run)
{
	struct rt_tuner_input in;
	struct rt_tuner_opts o;
	struct rt_tuner_result res;
	struct rt_error err;
	char *text = NULL;

	rt_tuner_input_from_run(&in, run);
	rt_tuner_opts_default(&o);
	assert_int_equal(rt_tuner_run(&in, &o, &res, &err), 0);
	assert_int_equal(rt_tuner_format_text(&res, &text, &err), 0);
	rt_tuner_result_free(&res);
	return text;
}

/*
 * A run keeps what its device was (issue 15 item 4): a run made when the device could inline 256 B, re-tuned after a
 * later run found 1004 B (new firmware), still tunes with 256 B and reports limited_by_device_max_inline 256; the
 * device's current row says 1004. Stored in the other order (an older run saved last), the current device stays the
 * newer one.
 */
static void test_run_keeps_its_device(void **state)
{
	struct rt_store *st = NULL;
	struct rt_device_info *devs = NULL;
	struct rt_error err;
	struct rt_run old_run, new_run, back;
	size_t n = 0;
	char *text;

	(void)state;
	for (int order = 0; order < 2; order++) {
		char db[1300];

		snprintf(db, sizeof(db), "%s/order%d.db", dir, order);
		tu_inline_run(&old_run, 256, "0011:2233:4455:6677", "16.1", 1700000000);
		tu_inline_run(&new_run, 1004, "0011:2233:4455:6677", "16.2", 1700086400);
		assert_int_equal(rt_store_open(db, &st, &err), 0);
		if (order == 0) {
			assert_int_equal(rt_store_run_save(st, &old_run, &err), 0);
			assert_int_equal(rt_store_run_save(st, &new_run, &err), 0);
		} else {
			assert_int_equal(rt_store_run_save(st, &new_run, &err), 0);
			assert_int_equal(rt_store_run_save(st, &old_run, &err), 0);
		}
		/* one device row (same name and GUID), as the newer run found it */
		assert_int_equal(rt_store_node_devices(st, "host-a", &devs, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(devs[0].max_inline_rc, 1004);
		assert_string_equal(devs[0].fw_ver, "16.2");
		free(devs);
		/* the old run as it was */
		assert_int_equal(rt_store_run_load(st, old_run.uuid, NULL, &back, &err), 0);
		assert_int_equal(back.dev.max_inline_rc, 256);
		assert_string_equal(back.dev.fw_ver, "16.1");
		assert_string_equal(back.dev.ports[0].gids[0].gid, "fe80:0000:0000:0000:0000:0000:0000:0001");
		assert_string_equal(back.dev.local_cpus, "4-7");
		text = tune_text(&back);
		if (!strstr(text, "[limited_by_device_max_inline]") || !strstr(text, "max inline (256 B)"))
			fail_msg("re-tuning the 256 B run:\n%s", text);
		free(text);
		rt_run_release(&back);
		assert_int_equal(rt_store_run_load(st, new_run.uuid, NULL, &back, &err), 0);
		assert_int_equal(back.dev.max_inline_rc, 1004);
		assert_string_equal(back.dev.fw_ver, "16.2");
		rt_run_release(&back);
		rt_store_close(st);
		rt_run_release(&old_run);
		rt_run_release(&new_run);
	}
}

/* After a NIC replacement (same name, a new GUID) the node's current hardware, its signature and its export hold only
 * the new device; runs still load with the device each one used (issue 15 item 3). */
static void test_replaced_nic(void **state)
{
	struct rt_store *st = NULL;
	struct rt_device_info *devs = NULL;
	struct rt_profile_entry e;
	struct rt_error err;
	struct rt_run old_run, new_run, back;
	char out[1300], sig_new[32], *json;
	size_t n = 0;

	(void)state;
	tu_inline_run(&old_run, 256, "aaaa:0000:0000:0001", "16.1", 1700000000);
	tu_inline_run(&new_run, 256, "bbbb:0000:0000:0002", "20.1", 1700086400);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_run_save(st, &old_run, &err), 0);
	assert_int_equal(rt_store_run_save(st, &new_run, &err), 0);
	assert_int_equal(rt_store_node_devices(st, "host-a", &devs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(devs[0].node_guid, "bbbb:0000:0000:0002");
	free(devs);
	/* the signature is of the current hardware only */
	rt_store_hw_signature(&new_run.node, &new_run.dev, 1, sig_new);
	{
		struct rt_store_node *nodes = NULL;

		assert_int_equal(rt_store_node_list(st, &nodes, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_string_equal(nodes[0].hw_signature, sig_new);
		free(nodes);
	}
	assert_int_equal(rt_store_run_load(st, old_run.uuid, NULL, &back, &err), 0);
	assert_string_equal(back.dev.node_guid, "aaaa:0000:0000:0001");
	rt_run_release(&back);
	tu_entry(&e, "mlx5_0", RT_PROFILE_OP_SEND, 128, 16, new_run.uuid, 1700086400);
	snprintf(e.guid, sizeof(e.guid), "bbbb:0000:0000:0002");
	assert_int_equal(rt_store_put_profile(st, &new_run.node, NULL, &e, 1, NULL, &err), 0);
	snprintf(out, sizeof(out), "%s/export.json", dir);
	assert_int_equal(rt_store_export(st, "host-a", RT_EXPORT_JSON, out, NULL, &err), 0);
	rt_store_close(st);
	{
		FILE *f = fopen(out, "r");
		long len;

		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		json = calloc(1, (size_t)len + 1);
		assert_int_equal(fread(json, 1, (size_t)len, f), (size_t)len);
		fclose(f);
	}
	if (strstr(json, "aaaa:0000:0000:0001") || !strstr(json, "\"guid\": \"bbbb:0000:0000:0002\""))
		fail_msg("export lists other than the current NIC:\n%s", json);
	/* one device in hardware.devices */
	{
		const char *hw = strstr(json, "\"hardware\"");

		assert_non_null(hw);
		assert_null(strstr(strstr(hw, "\"name\": \"mlx5_0\"") + 1, "\"name\": \"mlx5_0\""));
	}
	free(json);
	rt_run_release(&old_run);
	rt_run_release(&new_run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_histogram, setup, teardown),
		cmocka_unit_test(test_hw_signature),
		cmocka_unit_test_setup_teardown(test_dead_owner_is_interrupted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_concurrent_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill9_mid_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_keeps_its_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_nic, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
