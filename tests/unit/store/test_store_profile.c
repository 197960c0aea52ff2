// SPDX-License-Identifier: MIT
/*
 * Unit tests of profiles: stored entries (validated, idempotent by node + run id, the latest measurement current),
 * the round trip store -> JSON profile -> librtune, the env and Prometheus exports, atomic export (no partial file, a
 * symlink at the target replaced and never followed, a failed export leaves the old file), and import from other nodes
 * (idempotent, several nodes need --node), also of many files at once (told in order, a failing file alone lost);
 * cloned machine-ids imported as two nodes; an imported NIC replacement exports only the current device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "store_test_util.h"

#define RUN_A "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
#define RUN_B "7f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"

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

static char *slurp(const char *p)
{
	FILE *f = fopen(p, "rb");
	char *buf = calloc(1, 1 << 20);

	assert_non_null(f);
	assert_true(fread(buf, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	return buf;
}

/* Files in dir whose name starts with '.' (temporaries left behind). */
static int hidden_files(const char *d)
{
	DIR *dh = opendir(d);
	struct dirent *de;
	int n = 0;

	assert_non_null(dh);
	while ((de = readdir(dh)))
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dh);
	return n;
}

/* A store holding host-a's profile: two runs of mlx5_0 (B newer) and one entry of rxe0. */
static struct rt_store *filled_store(struct rt_node_info *node)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_profile_entry e[4];
	size_t added = 0;

	assert_int_equal(rt_store_open(path, &st, &err), 0);
	tu_node(node, "host-a");
	tu_entry(&e[0], "mlx5_0", RT_PROFILE_OP_SEND, 128, 16, RUN_A, 1700000000);
	tu_entry(&e[1], "mlx5_0", RT_PROFILE_OP_WRITE, 64, 16, RUN_A, 1700000000);
	tu_entry(&e[2], "mlx5_0", RT_PROFILE_OP_SEND, 188, 32, RUN_B, 1700001000);
	tu_entry(&e[3], "rxe0", RT_PROFILE_OP_SEND, 0, 8, RUN_B, 1700001000);
	e[3].max_inline_data = 0;
	snprintf(e[3].guid, sizeof(e[3].guid), "%s", "");
	e[2].cq_moderation = true;
	e[2].cq_mod_count = 16;
	e[2].cq_mod_period_us = 4;
	snprintf(e[2].app, sizeof(e[2].app), "kvstore");
	assert_int_equal(rt_store_put_profile(st, node, "fnv1a64:00000000deadbeef", e, 4, &added, &err), 0);
	assert_int_equal(added, 4);
	/* idempotent: the same entries again add nothing */
	assert_int_equal(rt_store_put_profile(st, node, NULL, e, 4, &added, &err), 0);
	assert_int_equal(added, 0);
	return st;
}

static void test_put_and_current(void **state)
{
	struct rt_node_info node, back;
	struct rt_store *st = filled_store(&node);
	struct rt_profile_entry *v = NULL, bad;
	struct rt_error err;
	char sig[32];
	size_t n = 0, added = 9;

	(void)state;
	assert_int_equal(rt_store_get_profile(st, NULL, NULL, &v, &n, &back, sig, &err), 0);
	assert_string_equal(back.hostname, "host-a");
	assert_string_equal(sig, "fnv1a64:00000000deadbeef");
	assert_int_equal(n, 3); /* mlx5_0 send (B wins), mlx5_0 write (A), rxe0 send */
	assert_string_equal(v[0].device, "mlx5_0");
	assert_int_equal(v[0].opcode, RT_PROFILE_OP_SEND);
	assert_int_equal(v[0].inline_threshold, 188);
	assert_string_equal(v[0].run_id, RUN_B);
	assert_true(v[0].cq_moderation);
	assert_string_equal(v[0].app, "kvstore");
	assert_int_equal(v[0].n_reasons, 2);
	assert_string_equal(v[0].reasons[0].text, "inline wins up to 188 B \"quoted\"");
	assert_true(rt_should_inline(&v[0], 188));
	assert_false(rt_should_inline(&v[0], 189));
	assert_int_equal(v[1].opcode, RT_PROFILE_OP_WRITE);
	assert_int_equal(v[1].inline_threshold, 64);
	assert_string_equal(v[2].device, "rxe0");
	free(v);
	/* by device name and by GUID */
	assert_int_equal(rt_store_get_profile(st, NULL, "rxe0", &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	free(v);
	assert_int_equal(rt_store_get_profile(st, NULL, "0011:2233:4455:6677", &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 2);
	free(v);
	assert_int_equal(rt_store_get_profile(st, NULL, "mlx5_7", &v, &n, NULL, NULL, &err), ENOENT);
	assert_non_null(strstr(err.text, "no profile for device 'mlx5_7'"));
	/* invalid entries are refused with the field named, and nothing of the call is stored */
	tu_entry(&bad, "mlx5_0", RT_PROFILE_OP_SEND, 64, 512, "8f1c2d3e-4a5b-4c6d-8e7f-0123456789ab", 1800000000);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &bad, 1, &added, &err), EINVAL);
	assert_non_null(strstr(err.text, "signal_interval: 512 exceeds sq_depth 256"));
	assert_int_equal(added, 0);
	bad.signal_interval = 8;
	snprintf(bad.run_id, sizeof(bad.run_id), "run-1");
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &bad, 1, NULL, &err), EINVAL);
	assert_non_null(strstr(err.text, "is not a uuid"));
	assert_int_equal(rt_store_get_profile(st, NULL, "mlx5_0", &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(v[0].inline_threshold, 188);
	free(v);
	rt_store_close(st);
}

static void test_roundtrip_store_json_librtune(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = filled_store(&node);
	struct rt_profile_entry *v = NULL;
	struct rt_profile *p = NULL;
	struct rt_error err;
	char out[1300];
	struct stat sb;
	size_t n = 0;

	(void)state;
	snprintf(out, sizeof(out), "%s/profile.json", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	assert_int_equal(rt_profile_load(out, &p, &err), 0);
	assert_string_equal(rt_profile_hostname(p), "host-a");
	assert_string_equal(rt_profile_hw_signature(p), "fnv1a64:00000000deadbeef");
	assert_string_equal(rt_profile_rtune_version(p), RTUNE_VERSION);
	assert_int_equal(rt_store_get_profile(st, NULL, NULL, &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(rt_profile_entry_count(p), n);
	for (size_t i = 0; i < n; i++) {
		const struct rt_profile_entry *e =
			rt_profile_select(p, v[i].device, v[i].port, v[i].opcode, v[i].qp_type);

		assert_non_null(e);
		/* every field survives, so the whole struct compares equal */
		assert_memory_equal(e, &v[i], sizeof(*e));
	}
	free(v);
	rt_profile_free(p);
	rt_store_close(st);
}

static void test_env_and_prometheus(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = filled_store(&node);
	struct rt_error err;
	char out[1300];
	char *text;
	struct stat sb;

	(void)state;
	snprintf(out, sizeof(out), "%s/env.sh", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_ENV, out, "/etc/rtune/it's.json", &err), 0);
	text = slurp(out);
	assert_non_null(strstr(text, "export RTUNE_PROFILE='/etc/rtune/it'\\''s.json'\n"));
	assert_non_null(strstr(text, "export FI_VERBS_INLINE_SIZE=188\n"));
	/* UCX: one name both rc_verbs and rc_mlx5 read; a WQE is signaled once `unsignaled >= value`: N - 1 */
	assert_non_null(strstr(text, "export UCX_RC_TX_CQ_MODERATION=31\n"));
	assert_non_null(strstr(text, "export UCX_RC_TX_MIN_INLINE=188\n"));
	assert_null(strstr(text, "UCX_RC_VERBS_"));
	assert_non_null(strstr(text, "export RTUNE_INLINE_THRESHOLD_MLX5_0_P1=188\n"));
	assert_non_null(strstr(text, "export RTUNE_SIGNAL_INTERVAL_RXE0_P1=8\n"));
	free(text);
	/* the env is valid shell */
	{
		char cmd[1500];

		snprintf(cmd, sizeof(cmd), "sh -n '%s'", out);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(out, sizeof(out), "%s/rtune.prom", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_PROMETHEUS, out, NULL, &err), 0);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	text = slurp(out);
	assert_non_null(strstr(text, "# TYPE rtune_inline_threshold_bytes gauge\n"));
	assert_non_null(strstr(text, "rtune_inline_threshold_bytes{node=\"host-a\",device=\"mlx5_0\",port=\"1\","
				     "opcode=\"send\",qp_type=\"rc\"} 188\n"));
	assert_non_null(strstr(text, "rtune_signal_interval{node=\"host-a\",device=\"rxe0\",port=\"1\",opcode=\"send\","
				     "qp_type=\"rc\"} 8\n"));
	assert_non_null(strstr(text, "rtune_profile_measured_timestamp_seconds{node=\"host-a\",device=\"mlx5_0\","
				     "port=\"1\",opcode=\"write\",qp_type=\"rc\"} 1700000000\n"));
	assert_non_null(strstr(text, "# TYPE rtune_profile_age_seconds gauge\n"));
	assert_non_null(strstr(text, "rtune_profile_confidence{"));
	free(text);
	rt_store_close(st);
}

/* A profile that never inlines and signals every WR: UCX gets moderation 0 (sq_sig_all), libfabric no 0 (its
 * "device maximum"). */
static void test_env_never_inline(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = NULL;
	struct rt_profile_entry e;
	struct rt_error err;
	size_t added = 0;
	char out[1300];
	char *text;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	tu_node(&node, "host-b");
	tu_entry(&e, "rxe0", RT_PROFILE_OP_SEND, 0, 1, RUN_A, 1700000000);
	e.max_inline_data = 0;
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, &added, &err), 0);
	snprintf(out, sizeof(out), "%s/env.sh", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_ENV, out, NULL, &err), 0);
	text = slurp(out);
	assert_null(strstr(text, "export FI_VERBS_INLINE_SIZE"));
	assert_non_null(strstr(text, "# FI_VERBS_INLINE_SIZE not set"));
	assert_non_null(strstr(text, "export UCX_RC_TX_CQ_MODERATION=0\n"));
	assert_non_null(strstr(text, "export UCX_RC_TX_MIN_INLINE=0\n"));
	assert_non_null(strstr(text, "export RTUNE_SIGNAL_INTERVAL_RXE0_P1=1\n"));
	free(text);
	rt_store_close(st);
}

static void test_atomic_export(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = filled_store(&node);
	struct rt_error err;
	char out[1300], victim[1300], bad[1300];
	char *text;
	struct stat sb;
	FILE *f;

	(void)state;
	/* a symlink in a private directory is followed: its target is replaced (atomically, in its own directory), the
	 * symlink stays; in a shared (sticky, world-writable) directory it is refused (tests/unit/cli/test_output.sh) */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen(victim, "w");
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(chmod(victim, 0640), 0);
	snprintf(out, sizeof(out), "%s/profile.json", dir);
	assert_int_equal(symlink(victim, out), 0);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	assert_int_equal(lstat(out, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	text = slurp(victim);
	assert_true(text[0] == '{');
	free(text);
	assert_int_equal(stat(victim, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640); /* an existing file keeps its permissions */
	assert_int_equal(hidden_files(dir), 0);
	assert_int_equal(unlink(out), 0);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	assert_int_equal(lstat(out, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	/* an old file is replaced whole; a failing export leaves it as it was */
	text = slurp(out);
	assert_true(text[0] == '{');
	free(text);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/profile.json", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, bad, NULL, &err), ENOENT);
	assert_non_null(strstr(err.text, "cannot write '"));
	/* a directory at the target: rename fails, the temporary is removed */
	snprintf(bad, sizeof(bad), "%s/adir", dir);
	assert_int_equal(mkdir(bad, 0755), 0);
	assert_int_not_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, bad, NULL, &err), 0);
	assert_int_equal(hidden_files(dir), 0);
	/* rt_write_file_atomic itself: exact content and the mode of a new file */
	assert_int_equal(unlink(out), 0);
	assert_int_equal(rt_write_file_atomic(out, "abc", 3, 0600, &err), 0);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, 3);
	rt_store_close(st);
}

static void test_import(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = filled_store(&node), *other = NULL;
	struct rt_profile_entry *v = NULL;
	struct rt_error err;
	char out[1300], path2[1300];
	size_t added = 0, skipped = 0, n = 0;
	struct rt_node_info who;

	(void)state;
	snprintf(out, sizeof(out), "%s/host-a.json", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	rt_store_close(st);
	snprintf(path2, sizeof(path2), "%s/fleet.db", dir);
	assert_int_equal(rt_store_open(path2, &other, &err), 0);
	assert_int_equal(rt_store_import_file(other, out, &added, &skipped, &err), 0);
	assert_int_equal(added, 3);
	assert_int_equal(skipped, 0);
	assert_int_equal(rt_store_import_file(other, out, &added, &skipped, &err), 0);
	assert_int_equal(added, 0);
	assert_int_equal(skipped, 3);
	assert_int_equal(rt_store_get_profile(other, "host-a", NULL, &v, &n, &who, NULL, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(who.cpu_model, "Test CPU @ 3.0GHz");
	assert_int_equal(v[0].inline_threshold, 188);
	free(v);
	/* a second node: now the store needs to be told which one */
	{
		struct rt_node_info b;
		struct rt_profile_entry e;

		tu_node(&b, "host-b");
		tu_entry(&e, "mlx5_0", RT_PROFILE_OP_SEND, 32, 4, RUN_A, 1700000000);
		assert_int_equal(rt_store_put_profile(other, &b, NULL, &e, 1, NULL, &err), 0);
	}
	assert_int_equal(rt_store_get_profile(other, NULL, NULL, &v, &n, NULL, NULL, &err), EEXIST);
	assert_non_null(strstr(err.text, "several nodes"));
	assert_non_null(strstr(err.text, "host-a"));
	assert_int_equal(rt_store_get_profile(other, "host-b", NULL, &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(v[0].inline_threshold, 32);
	free(v);
	/* a hostile document is refused and nothing is stored */
	{
		static const char doc[] = "{\"schema\":{\"name\":\"rtune-profile\",\"version\":\"3.1\"}}";

		assert_int_equal(rt_store_import_text(other, "x.json", doc, strlen(doc), &added, &skipped, &err),
				 ENOTSUP);
	}
	assert_non_null(strstr(err.text, "profile 'x.json': schema version 3.1 is not supported"));
	assert_int_equal(rt_store_import_file(other, dir, &added, &skipped, &err), EINVAL);
	rt_store_close(other);
}

/* A node known only by its machine-id still exports a loadable profile (hostname falls back to it). */
static void test_export_without_hostname(void **state)
{
	struct rt_store *st = NULL;
	struct rt_node_info node;
	struct rt_profile_entry e;
	struct rt_profile *p = NULL;
	struct rt_error err;
	char out[1300];

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	memset(&node, 0, sizeof(node));
	snprintf(node.machine_id, sizeof(node.machine_id), "m1");
	tu_entry(&e, "rxe0", RT_PROFILE_OP_SEND, 64, 8, RUN_A, 1700000000);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, NULL, &err), 0);
	snprintf(out, sizeof(out), "%s/p.json", dir);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	assert_int_equal(rt_profile_load(out, &p, &err), 0);
	assert_string_equal(rt_profile_hostname(p), "m1");
	rt_profile_free(p);
	rt_store_close(st);
}

/* Batch mode: a bad item inside a batch is rolled back alone; an unflushed batch is dropped whole at close. */
static void test_batch(void **state)
{
	struct rt_node_info node;
	struct rt_store *st = filled_store(&node);
	struct rt_profile_entry e, *v = NULL;
	struct rt_error err;
	size_t n = 0, added = 0;

	(void)state;
	assert_int_equal(rt_store_batch(st, true, &err), 0);
	tu_entry(&e, "mlx5_1", RT_PROFILE_OP_SEND, 32, 4, RUN_A, 1700000000);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, &added, &err), 0);
	assert_int_equal(added, 1);
	e.signal_interval = 0; /* invalid: this item fails, the one before stays */
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, &added, &err), EINVAL);
	assert_int_equal(rt_store_batch(st, false, &err), 0); /* flushes */
	tu_entry(&e, "mlx5_2", RT_PROFILE_OP_SEND, 32, 4, RUN_A, 1700000000);
	assert_int_equal(rt_store_batch(st, true, &err), 0);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, &added, &err), 0);
	rt_store_close(st); /* never flushed: mlx5_2 is dropped */
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_get_profile(st, NULL, "mlx5_1", &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	free(v);
	assert_int_equal(rt_store_get_profile(st, NULL, "mlx5_2", &v, &n, NULL, NULL, &err), ENOENT);
	assert_int_equal(rt_store_check(st, &err), 0);
	rt_store_close(st);
}

/* Writes node k's profile document to d/nodeKK.json: one entry on device dev, its "hardware" naming the device. */
static void write_node_doc(const char *d, int k, const char *dev, char *out, size_t len)
{
	FILE *f;

	snprintf(out, len, "%s/node%02d.json", d, k);
	f = fopen(out, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.1\"}, \"rtune_version\": \"0.1.0\","
		" \"generated_at\": \"2026-11-29T14:00:00Z\", \"node\": {\"hostname\": \"node%02d\", \"machine_id\": \"m%02d\","
		" \"cpu_model\": \"Test CPU\", \"kernel\": \"6.1\", \"cpu_count\": 8, \"numa_nodes\": 1,"
		" \"hardware_signature\": \"fnv1a64:00000000000000%02x\"}, \"entries\": [{\"device\": \"%s\", \"guid\": \"\","
		" \"port\": 1, \"opcode\": \"send\", \"qp_type\": \"rc\", \"inline_threshold\": %d, \"max_inline_data\": 220,"
		" \"signal_interval\": 16, \"sq_depth\": 256, \"cq_depth\": 512, \"cq_moderation\": null, \"numa_node\": 0,"
		" \"cpus\": \"0\", \"confidence\": \"high\", \"reasons\": [{\"code\": \"crossover\", \"text\": \"t\"}],"
		" \"measured_at\": \"2026-11-29T13:00:00Z\", \"run_id\": \"%08x-1111-4222-8333-000000000000\","
		" \"app\": null, \"calibration\": {\"cpu_numa_node\": 0, \"numa_local\": true}}],"
		" \"hardware\": {\"cpu_model\": \"Test CPU\", \"numa_nodes\": 1, \"devices\": [{\"name\": \"%s\","
		" \"guid\": \"\", \"vendor_id\": 713, \"vendor_part_id\": 4123, \"fw_ver\": \"1.0\", \"link_layer\":"
		" \"Ethernet\", \"active_mtu\": 4096, \"numa_node\": 0}]}}\n",
		k, k, k, dev, 32 + k, (unsigned)k, dev);
	fclose(f);
}

#define IMPORT_FILES 40

struct told {
	int times[IMPORT_FILES]; /* how often each file was told */
	int rc[IMPORT_FILES];
	char text[IMPORT_FILES][RT_ERROR_TEXT_LEN];
	int last;     /* index of the file told last */
	int disorder; /* files told before one with a lower index */
	size_t added;
	const char *const *paths;
};

static void told_cb(void *ctx, const struct rt_import_result *res, size_t n)
{
	struct told *t = ctx;

	for (size_t i = 0; i < n; i++) {
		int k = -1;

		for (int j = 0; j < IMPORT_FILES; j++)
			if (res[i].path == t->paths[j])
				k = j;
		assert_true(k >= 0);
		if (k <= t->last)
			t->disorder++;
		t->last = k;
		t->times[k]++;
		t->rc[k] = res[i].rc;
		snprintf(t->text[k], sizeof(t->text[k]), "%s", res[i].err.text);
		t->added += res[i].added;
	}
}

static long count_rows(struct rt_store *st, const char *sql)
{
	sqlite3_stmt *s = NULL;
	long n = -1;

	assert_int_equal(sqlite3_prepare_v2(rt_store_sqlite(st), sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

/*
 * Many files at once, batches of 5, with and without parse workers: file 7 is not JSON (fails to parse), which ends
 * its batch at once (batches then begin at 8, 13, 18, 23); file 26 fails inside the batch's transaction after its node
 * and device rows were written (a planted trigger refuses its entry), so the batch is rolled back and files 23-25 are
 * written again without it. Every file is told exactly once, in
 * order; the two failures are stored not at all, every other file whole.
 */
static void test_import_files(void **state)
{
	char *paths[IMPORT_FILES], p[1300], db[1300];

	(void)state;
	for (int k = 0; k < IMPORT_FILES; k++) {
		write_node_doc(dir, k, k == 26 ? "planted0" : "mlx5_0", p, sizeof(p));
		paths[k] = strdup(p);
		assert_non_null(paths[k]);
	}
	{
		FILE *f = fopen(paths[7], "w");

		assert_non_null(f);
		fputs("{\"schema\": ", f);
		fclose(f);
	}
	for (unsigned workers = 0; workers <= 2; workers += 2) {
		struct told t = { .last = -1, .paths = (const char *const *)paths };
		struct rt_store *st = NULL;
		struct rt_error err;
		int rc;

		snprintf(db, sizeof(db), "%s/many%u.db", dir, workers);
		assert_int_equal(rt_store_open(db, &st, &err), 0);
		assert_int_equal(
			sqlite3_exec(rt_store_sqlite(st),
				     "CREATE TEMP TRIGGER planted BEFORE INSERT ON main.profiles"
				     " WHEN NEW.device = 'planted0' BEGIN SELECT RAISE(ABORT, 'planted failure'); END",
				     NULL, NULL, NULL),
			SQLITE_OK);
		rc = rt_store_import_files(st, (const char *const *)paths, IMPORT_FILES, workers, 5, told_cb, &t);
		assert_int_equal(rc, EINVAL); /* the first failure: file 7's parse error */
		assert_int_equal(t.disorder, 0);
		for (int k = 0; k < IMPORT_FILES; k++) {
			assert_int_equal(t.times[k], 1);
			assert_int_equal(t.rc[k] != 0, k == 7 || k == 26);
		}
		assert_non_null(strstr(t.text[7], "node07.json"));
		assert_non_null(strstr(t.text[26], "planted failure"));
		assert_int_equal(t.added, IMPORT_FILES - 2);
		/* stored: every other node whole (its device, port and entry), nothing of the two failures */
		assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes"), IMPORT_FILES - 2);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM devices"), IMPORT_FILES - 2);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM ports"), IMPORT_FILES - 2);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM profiles WHERE reasons LIKE '%crossover%'"
						" AND cal_numa_local = 1"),
				 IMPORT_FILES - 2);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes WHERE hostname IN ('node07', 'node26')"),
				 0);
		assert_int_equal(
			count_rows(st, "SELECT count(*) FROM nodes WHERE hostname IN ('node23', 'node24', 'node25')"),
			3);
		assert_int_equal(rt_store_check(st, &err), 0);
		/* again: idempotent, nothing added, the same two fail */
		memset(&t, 0, sizeof(t));
		t.last = -1;
		t.paths = (const char *const *)paths;
		assert_int_equal(
			rt_store_import_files(st, (const char *const *)paths, IMPORT_FILES, workers, 5, told_cb, &t),
			EINVAL);
		assert_int_equal(t.added, 0);
		assert_int_equal(t.rc[26] != 0, 1);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM profiles"), IMPORT_FILES - 2);
		rt_store_close(st);
	}
	for (int k = 0; k < IMPORT_FILES; k++)
		free(paths[k]);
}

/* A reason longer than librtune keeps, in multi-byte characters, is cut at a character boundary: the import stores it
 * (it used to fail as "out of memory", jansson refusing the half character) and it reads back as valid text. */
static void test_import_long_utf8_reason(void **state)
{
	char doc[8192], text[1024] = "", code[256] = "";
	struct rt_store *st = NULL;
	struct rt_profile_entry *v = NULL;
	struct rt_error err;
	size_t added = 0, skipped = 0, n = 0;

	(void)state;
	for (int i = 0; i < 200; i++)
		strcat(text, "\xc3\xa9"); /* é: 2 bytes */
	for (int i = 0; i < 30; i++)
		strcat(code, "\xe2\x82\xac"); /* €: 3 bytes */
	snprintf(doc, sizeof(doc),
		 "{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.0\"}, \"rtune_version\": \"0.1.0\","
		 " \"node\": {\"hostname\": \"utf8-host\"}, \"entries\": [{\"device\": \"mlx5_0\", \"port\": 1,"
		 " \"opcode\": \"send\", \"qp_type\": \"rc\", \"inline_threshold\": 64, \"max_inline_data\": 64,"
		 " \"signal_interval\": 16, \"sq_depth\": 128, \"cq_depth\": 128, \"confidence\": \"low\","
		 " \"reasons\": [{\"code\": \"%s\", \"text\": \"%s\"}], \"measured_at\": \"2026-11-29T13:00:00Z\","
		 " \"run_id\": \"6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab\"}]}",
		 code, text);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_import_text(st, "utf8.json", doc, strlen(doc), &added, &skipped, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(rt_store_get_profile(st, "utf8-host", NULL, &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].n_reasons, 1);
	/* 255 bytes would end inside an é: 127 of them (254 bytes); 47 inside a €: 15 of them (45 bytes) */
	assert_int_equal(strlen(v[0].reasons[0].text), 254);
	assert_memory_equal(v[0].reasons[0].text, text, 254);
	assert_int_equal(strlen(v[0].reasons[0].code), 45);
	assert_memory_equal(v[0].reasons[0].code, code, 45);
	free(v);
	rt_store_close(st);
}

/*
 * An imported device's text longer than the store keeps (fw_ver: 63 bytes) is cut at a UTF-8 character boundary too:
 * cut inside a character, it was stored as invalid UTF-8, and `rtune export` of the node then silently dropped its
 * whole "hardware" object (jansson refused the string).
 */
static void test_import_long_utf8_hardware(void **state)
{
	char doc[4096], fw[128] = "", out[1300];
	struct rt_store *st = NULL;
	struct rt_error err;
	json_error_t jerr;
	json_t *root, *dev;
	size_t added = 0;

	(void)state;
	for (int i = 0; i < 40; i++)
		strcat(fw, "\xc3\xa9"); /* é: 2 bytes, 80 in all */
	snprintf(doc, sizeof(doc),
		 "{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.1\"}, \"rtune_version\": \"0.1.0\","
		 " \"node\": {\"hostname\": \"utf8-hw\"}, \"entries\": [{\"device\": \"mlx5_0\", \"port\": 1,"
		 " \"opcode\": \"send\", \"qp_type\": \"rc\", \"inline_threshold\": 64, \"max_inline_data\": 64,"
		 " \"signal_interval\": 16, \"sq_depth\": 128, \"cq_depth\": 128, \"confidence\": \"low\","
		 " \"measured_at\": \"2026-11-29T13:00:00Z\", \"run_id\": \"6f1c2d3e-4a5b-4c6d-8e7f-0123456789ac\"}],"
		 " \"hardware\": {\"devices\": [{\"name\": \"mlx5_0\", \"guid\": \"\", \"fw_ver\": \"%s\"}]}}",
		 fw);
	snprintf(out, sizeof(out), "%s/utf8-hw.json", dir);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_import_text(st, "utf8-hw.json", doc, strlen(doc), &added, NULL, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(rt_store_export(st, "utf8-hw", RT_EXPORT_JSON, out, NULL, &err), 0);
	rt_store_close(st);
	root = json_load_file(out, 0, &jerr);
	assert_non_null(root);
	dev = json_array_get(json_object_get(json_object_get(root, "hardware"), "devices"), 0);
	assert_non_null(dev);
	/* 63 bytes would end inside an é: 31 of them (62 bytes) */
	assert_int_equal(json_string_length(json_object_get(dev, "fw_ver")), 62);
	assert_memory_equal(json_string_value(json_object_get(dev, "fw_ver")), fw, 62);
	json_decref(root);
}

/* A profile document of node (host, mid) with one send/rc entry of run `run` measured at `when`, whose hardware is one
 * mlx5_0 with `guid`. */
static void clone_doc(char *out, size_t len, const char *host, const char *mid, const char *guid, const char *run,
		      const char *when)
{
	snprintf(
		out, len,
		"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.1\"}, \"rtune_version\": \"0.1.0\","
		" \"node\": {\"hostname\": \"%s\", \"machine_id\": \"%s\", \"cpu_model\": \"Test CPU\", \"numa_nodes\": 1},"
		" \"entries\": [{\"device\": \"mlx5_0\", \"guid\": \"%s\", \"port\": 1, \"opcode\": \"send\","
		" \"qp_type\": \"rc\", \"inline_threshold\": 64, \"max_inline_data\": 64, \"signal_interval\": 16,"
		" \"sq_depth\": 128, \"cq_depth\": 128, \"confidence\": \"low\", \"measured_at\": \"%s\","
		" \"run_id\": \"%s\"}],"
		" \"hardware\": {\"cpu_model\": \"Test CPU\", \"numa_nodes\": 1, \"devices\": [{\"name\": \"mlx5_0\","
		" \"guid\": \"%s\", \"vendor_id\": 713, \"vendor_part_id\": 4123, \"fw_ver\": \"1.0\","
		" \"link_layer\": \"Ethernet\", \"active_mtu\": 4096, \"numa_node\": 0}]}}",
		host, mid, guid, when, run, guid);
}

/* Two machines cloned from one image (same machine-id, different hostnames) are two nodes of the store, each keeping
 * its hostname and its profile (issue 15 item 2); the machine-id alone is then ambiguous for --node. */
static void test_import_cloned_machine_id(void **state)
{
	char a[2048], b[2048];
	struct rt_store *st = NULL;
	struct rt_store_node *nodes = NULL;
	struct rt_profile_entry *v = NULL;
	struct rt_node_info node;
	struct rt_error err;
	size_t n = 0, added = 0;

	(void)state;
	clone_doc(a, sizeof(a), "clone-a", "0123456789abcdef0123456789abcdef", "aaaa:0000:0000:0001", RUN_A,
		  "2026-11-29T13:00:00Z");
	clone_doc(b, sizeof(b), "clone-b", "0123456789abcdef0123456789abcdef", "bbbb:0000:0000:0001", RUN_B,
		  "2026-11-29T13:00:00Z");
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_import_text(st, "a.json", a, strlen(a), &added, NULL, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(rt_store_import_text(st, "b.json", b, strlen(b), &added, NULL, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(rt_store_node_list(st, &nodes, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nodes[0].info.hostname, "clone-a");
	assert_string_equal(nodes[0].node_key, "0123456789abcdef0123456789abcdef/clone-a");
	assert_string_equal(nodes[1].info.hostname, "clone-b");
	assert_string_equal(nodes[1].node_key, "0123456789abcdef0123456789abcdef/clone-b");
	free(nodes);
	/* each by its hostname or key, with its own entry and hardware */
	assert_int_equal(rt_store_get_profile(st, "clone-b", NULL, &v, &n, &node, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].run_id, RUN_B);
	assert_string_equal(node.hostname, "clone-b");
	free(v);
	assert_int_equal(
		rt_store_get_profile(st, "0123456789abcdef0123456789abcdef/clone-a", NULL, &v, &n, &node, NULL, &err),
		0);
	assert_string_equal(v[0].run_id, RUN_A);
	free(v);
	/* the machine-id alone names both: refused, naming their keys */
	assert_int_equal(rt_store_get_profile(st, "0123456789abcdef0123456789abcdef", NULL, &v, &n, &node, NULL, &err),
			 EEXIST);
	assert_non_null(strstr(err.text, "0123456789abcdef0123456789abcdef/clone-a"));
	assert_non_null(strstr(err.text, "0123456789abcdef0123456789abcdef/clone-b"));
	rt_store_close(st);
}

/* The devices of an exported profile's "hardware" (parsed from the file at p). */
static json_t *exported_devices(const char *p)
{
	json_error_t jerr;
	json_t *root = json_load_file(p, 0, &jerr), *devs;

	assert_non_null(root);
	devs = json_object_get(json_object_get(root, "hardware"), "devices");
	assert_true(json_is_array(devs));
	json_incref(devs);
	json_decref(root);
	return devs;
}

/* After a NIC replacement (same name, new GUID) an imported node exports only its current device, whatever the order
 * the profiles arrive in (issue 15 item 3). */
static void test_import_replaced_nic(void **state)
{
	char old_doc[2048], new_doc[2048], out[1300];
	struct rt_store *st = NULL;
	struct rt_device_info *devs = NULL;
	struct rt_error err;
	json_t *d;
	size_t n = 0;

	(void)state;
	clone_doc(old_doc, sizeof(old_doc), "nic-host", "mid-nic-host", "aaaa:0000:0000:0001", RUN_A,
		  "2026-11-01T10:00:00Z");
	clone_doc(new_doc, sizeof(new_doc), "nic-host", "mid-nic-host", "bbbb:0000:0000:0002", RUN_B,
		  "2026-11-29T10:00:00Z");
	snprintf(out, sizeof(out), "%s/nic-host.json", dir);
	for (int order = 0; order < 2; order++) {
		const char *first = order ? new_doc : old_doc, *second = order ? old_doc : new_doc;
		char db[1300];

		snprintf(db, sizeof(db), "%s/nic%d.db", dir, order);
		assert_int_equal(rt_store_open(db, &st, &err), 0);
		assert_int_equal(rt_store_import_text(st, "1.json", first, strlen(first), NULL, NULL, &err), 0);
		assert_int_equal(rt_store_import_text(st, "2.json", second, strlen(second), NULL, NULL, &err), 0);
		assert_int_equal(count_rows(st, "SELECT count(*) FROM devices"), 2); /* both kept as history */
		assert_int_equal(rt_store_node_devices(st, "nic-host", &devs, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_string_equal(devs[0].node_guid, "bbbb:0000:0000:0002");
		free(devs);
		assert_int_equal(rt_store_export(st, "nic-host", RT_EXPORT_JSON, out, NULL, &err), 0);
		rt_store_close(st);
		d = exported_devices(out);
		assert_int_equal(json_array_size(d), 1);
		assert_string_equal(json_string_value(json_object_get(json_array_get(d, 0), "guid")),
				    "bbbb:0000:0000:0002");
		json_decref(d);
	}
}

/* A document without entries imports its node and hardware and adds nothing. */
static void test_import_no_entries(void **state)
{
	static const char doc[] =
		"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.1\"}, \"rtune_version\": \"0.1.0\","
		" \"node\": {\"hostname\": \"empty-host\"}, \"entries\": [], \"hardware\": {\"devices\":"
		" [{\"name\": \"mlx5_0\", \"guid\": \"\", \"link_layer\": \"InfiniBand\"}]}}";
	struct rt_store *st = NULL;
	struct rt_error err;
	size_t added = 1, skipped = 1;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_import_text(st, "empty.json", doc, strlen(doc), &added, &skipped, &err), 0);
	assert_int_equal(added, 0);
	assert_int_equal(skipped, 0);
	assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes WHERE hostname = 'empty-host'"), 1);
	assert_int_equal(count_rows(st, "SELECT count(*) FROM ports WHERE link_layer = 'InfiniBand'"), 1);
	rt_store_close(st);
}

/* Tuned entries: every reason is stored and read back, the public entry carries one explanation per decision before
 * the warnings (issue 15.7); each decision's confidence and the hysteresis record round-trip; the base of a run is
 * the node's latest entry from another run, and a replaced NIC (another GUID) has none. */
static void test_tuned_reasons_and_base(void **state)
{
	static const char *const codes[12] = { "implausible_gain", "rank_test_disagrees", "non_monotone",
					       "sq_overflow_seen", "insufficient_data",	  "inline_threshold",
					       "expected_gain",	   "kneedle_knee",	  "signal_interval",
					       "kneedle_knee",	   "queue_depths",	  "cq_moderation" };
	static const char *const topics[12] = { "inline", "inline", "inline", "signal", "input", "inline",
						"inline", "inline", "signal", "signal", "queue", "cq_moderation" };
	struct rt_store_reason r[12], *all = NULL;
	struct rt_store_tuned t, base;
	struct rt_profile_entry *v = NULL, key;
	struct rt_node_info node;
	struct rt_store *st = NULL;
	struct rt_error err;
	size_t n = 0, n_all = 0;

	(void)state;
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	tu_node(&node, "host-t");
	memset(&t, 0, sizeof(t));
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 12; i++) {
		snprintf(r[i].code, sizeof(r[i].code), "%s", codes[i]);
		snprintf(r[i].text, sizeof(r[i].text), "reason %d", i);
		snprintf(r[i].topic, sizeof(r[i].topic), "%s", topics[i]);
		r[i].warn = i < 5;
	}
	tu_entry(&t.e, "mlx5_0", RT_PROFILE_OP_SEND, 128, 16, RUN_A, 1700000000);
	t.e.inline_confidence = RT_PROFILE_CONF_HIGH;
	t.e.signal_confidence = RT_PROFILE_CONF_MEDIUM;
	t.e.confidence = RT_PROFILE_CONF_MEDIUM;
	t.e.inline_runs = 3;
	snprintf(t.e.inline_since, sizeof(t.e.inline_since), "%s", RUN_B);
	t.reasons = r;
	t.n_reasons = 12;
	snprintf(t.signal_verdict, sizeof(t.signal_verdict), "knee");
	snprintf(t.inl.action, sizeof(t.inl.action), "kept");
	t.inl.run_value = 256;
	t.inl.previous = 128;
	snprintf(t.inl.why, sizeof(t.inl.why), "within the noise");
	assert_int_equal(rt_store_replace_tuned(st, &node, NULL, &t, 1, &err), 0);

	assert_int_equal(rt_store_get_profile(st, "host-t", NULL, &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].n_reasons, RT_PROFILE_MAX_REASONS);
	/* one explanation per decision first, then the warnings in order */
	assert_string_equal(v[0].reasons[0].code, "inline_threshold");
	assert_string_equal(v[0].reasons[1].code, "signal_interval");
	assert_string_equal(v[0].reasons[2].code, "queue_depths");
	assert_string_equal(v[0].reasons[3].code, "cq_moderation");
	assert_string_equal(v[0].reasons[4].code, "implausible_gain");
	assert_string_equal(v[0].reasons[7].code, "sq_overflow_seen");
	assert_int_equal(v[0].inline_confidence, RT_PROFILE_CONF_HIGH);
	assert_int_equal(v[0].signal_confidence, RT_PROFILE_CONF_MEDIUM);
	assert_int_equal(v[0].inline_runs, 3);
	assert_string_equal(v[0].inline_since, RUN_B);
	assert_int_equal(v[0].signal_runs, 1);
	assert_string_equal(v[0].signal_since, RUN_A);
	/* every reason is kept in the store */
	assert_int_equal(rt_store_profile_reasons(st, "host-t", &v[0], &all, &n_all, &err), 0);
	assert_int_equal(n_all, 12);
	for (int i = 0; i < 12; i++) {
		assert_string_equal(all[i].code, codes[i]);
		assert_string_equal(all[i].topic, topics[i]);
		assert_int_equal(all[i].warn, i < 5);
	}
	free(all);

	/* the base of another, later run is this entry, with its record; of the same run there is none */
	key = t.e;
	snprintf(key.run_id, sizeof(key.run_id), "%s", RUN_B);
	key.measured_at = 1700003600;
	assert_int_equal(rt_store_profile_base(st, &node, &key, &base, &err), 0);
	assert_int_equal(base.e.inline_threshold, 128);
	assert_int_equal(base.n_reasons, 12);
	assert_string_equal(base.signal_verdict, "knee");
	assert_string_equal(base.inl.action, "kept");
	assert_int_equal(base.inl.run_value, 256);
	assert_string_equal(base.inl.why, "within the noise");
	rt_store_tuned_release(&base);
	assert_null(base.reasons);
	key.measured_at = 1600000000; /* a run measured before it: nothing before */
	assert_int_equal(rt_store_profile_base(st, &node, &key, &base, &err), ENOENT);
	key.measured_at = 1700003600;
	snprintf(key.run_id, sizeof(key.run_id), "%s", RUN_A);
	assert_int_equal(rt_store_profile_base(st, &node, &key, &base, &err), ENOENT);
	snprintf(key.run_id, sizeof(key.run_id), "%s", RUN_B);
	snprintf(key.guid, sizeof(key.guid), "aaaa:bbbb:cccc:dddd");
	assert_int_equal(rt_store_profile_base(st, &node, &key, &base, &err), ENOENT);
	free(v);

	/* a plain entry that sets only confidence: both decisions get it */
	{
		struct rt_profile_entry e;

		tu_entry(&e, "mlx5_0", RT_PROFILE_OP_WRITE, 64, 16, RUN_B, 1700001000);
		assert_int_equal(rt_store_put_profile(st, &node, NULL, &e, 1, NULL, &err), 0);
		assert_int_equal(rt_store_get_profile(st, "host-t", NULL, &v, &n, NULL, NULL, &err), 0);
		assert_int_equal(n, 2);
		assert_int_equal(v[1].opcode, RT_PROFILE_OP_WRITE);
		assert_int_equal(v[1].inline_confidence, RT_PROFILE_CONF_HIGH);
		assert_int_equal(v[1].signal_confidence, RT_PROFILE_CONF_HIGH);
		free(v);
	}
	rt_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_and_current, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_store_json_librtune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_and_prometheus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_never_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_export, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_long_utf8_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_long_utf8_hardware, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_no_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_cloned_machine_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_replaced_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_without_hostname, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tuned_reasons_and_base, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
