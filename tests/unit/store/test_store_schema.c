// SPDX-License-Identifier: MIT
/*
 * Unit tests of opening the store: creation (mode, schema version, WAL), migration from a hand-built v1 store with data
 * in it, and the files the store must refuse without changing a byte: not a database, another program's SQLite
 * database, a newer schema, a symlink. Also the default path resolution every command shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "store_test_util.h"

static char dir[1024];

static int setup(void **state)
{
	(void)state;
	tu_tmpdir(dir, sizeof(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmdir(dir);
	return 0;
}

static void sql(const char *path, const char *text)
{
	sqlite3 *db;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql failed: %s", msg);
	sqlite3_close(db);
}

static long long sql_int(struct rt_store *st, const char *path, const char *query)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v;

	(void)st;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, query, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	assert_non_null(f);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static bool exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

static void test_create(void **state)
{
	char path[1200];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct stat sb;

	(void)state;
	snprintf(path, sizeof(path), "%s/new.db", dir);
	assert_int_equal(rt_store_open_existing(path, &st, &err), ENOENT);
	assert_non_null(strstr(err.text, "no store at '"));
	assert_false(exists(path));
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	rt_store_close(st);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, geteuid() == 0 ? 0644 : 0600);
	assert_int_equal(sql_int(NULL, path, "PRAGMA user_version"), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(sql_int(NULL, path, "PRAGMA application_id"), 0x7274756e);
	/* WAL, so readers and a writer do not block each other */
	{
		sqlite3 *db;
		sqlite3_stmt *s;

		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
		sqlite3_finalize(s);
		sqlite3_close(db);
	}
	/* reopening an existing store is fine and changes nothing */
	assert_int_equal(rt_store_open_existing(path, &st, &err), 0);
	rt_store_close(st);
}

/* The v1 schema exactly as rtune 0.0 wrote it (frozen here on purpose: this is what old stores contain). */
static const char v1_sql[] =
	"PRAGMA application_id = 1920234862;"
	"CREATE TABLE nodes(id INTEGER PRIMARY KEY, node_key TEXT NOT NULL UNIQUE, hostname TEXT NOT NULL,"
	" machine_id TEXT NOT NULL DEFAULT '', cpu_model TEXT NOT NULL DEFAULT '', kernel TEXT NOT NULL DEFAULT '',"
	" cpu_count INTEGER NOT NULL DEFAULT 0, numa_nodes INTEGER NOT NULL DEFAULT 1,"
	" hw_signature TEXT NOT NULL DEFAULT '', updated_ns INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE devices(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, node_guid TEXT NOT NULL DEFAULT '', transport TEXT, fw_ver TEXT, vendor_id INTEGER,"
	" vendor_part_id INTEGER, hw_ver INTEGER, max_qp INTEGER, max_qp_wr INTEGER, max_sge INTEGER, max_cqe INTEGER,"
	" max_qp_rd_atom INTEGER, max_mr INTEGER, max_inline_rc INTEGER, max_inline_ud INTEGER, numa_node INTEGER,"
	" local_cpus TEXT, pci_addr TEXT, pcie_speed TEXT, pcie_width INTEGER, pcie_max_payload_bytes INTEGER,"
	" pcie_max_read_req_bytes INTEGER, UNIQUE(node_id, name, node_guid));"
	"CREATE TABLE ports(device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,"
	" port_num INTEGER NOT NULL, state TEXT, link_layer TEXT, active_mtu_bytes INTEGER, max_mtu_bytes INTEGER,"
	" lid INTEGER, gid_tbl_len INTEGER, gids TEXT, PRIMARY KEY(device_id, port_num));"
	"CREATE TABLE runs(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
	" node_id INTEGER NOT NULL REFERENCES nodes(id), device_id INTEGER NOT NULL REFERENCES devices(id),"
	" port_num INTEGER NOT NULL, gid_index INTEGER, params TEXT, env TEXT, started_ns INTEGER NOT NULL,"
	" ended_ns INTEGER, status TEXT NOT NULL CHECK(status IN ('running','complete','interrupted','failed')),"
	" owner_pid INTEGER, owner_host TEXT, max_inline_used INTEGER, sq_depth INTEGER);"
	"CREATE TABLE lat_points(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" op TEXT NOT NULL, qpt TEXT NOT NULL, kind TEXT NOT NULL, msg_bytes INTEGER NOT NULL, inl INTEGER NOT NULL,"
	" n_samples INTEGER, median_ns REAL, p99_ns REAL, p999_ns REAL, mean_ns REAL, min_ns REAL, ci_lo_ns REAL,"
	" ci_hi_ns REAL, cpu_ns_per_op REAL, n_kept INTEGER, samples BLOB);"
	"CREATE INDEX lat_points_run ON lat_points(run_id);"
	"CREATE TABLE rate_points(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE"
	" CASCADE,"
	" op TEXT NOT NULL, qpt TEXT NOT NULL, msg_bytes INTEGER NOT NULL, inl INTEGER NOT NULL,"
	" signal_interval INTEGER NOT NULL, sq_depth INTEGER, reps INTEGER, mops REAL, mops_lo REAL, mops_hi REAL,"
	" cpu_ns_per_msg REAL, msgs INTEGER, enomem INTEGER);"
	"CREATE INDEX rate_points_run ON rate_points(run_id);"
	"CREATE TABLE profiles(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	" device TEXT NOT NULL, guid TEXT NOT NULL DEFAULT '', port INTEGER NOT NULL, op TEXT NOT NULL,"
	" qpt TEXT NOT NULL, inline_threshold INTEGER NOT NULL, max_inline_data INTEGER NOT NULL,"
	" signal_interval INTEGER NOT NULL, sq_depth INTEGER NOT NULL, cq_depth INTEGER NOT NULL,"
	" cq_mod_count INTEGER, cq_mod_period_us INTEGER, numa_node INTEGER NOT NULL DEFAULT -1,"
	" cpus TEXT NOT NULL DEFAULT '', confidence TEXT NOT NULL, reasons TEXT NOT NULL DEFAULT '[]',"
	" measured_at INTEGER NOT NULL, run_uuid TEXT NOT NULL, rtune_version TEXT NOT NULL,"
	" stored_ns INTEGER NOT NULL, UNIQUE(node_id, device, port, op, qpt, run_uuid));"
	/* data an old rtune recorded */
	"INSERT INTO nodes VALUES(1, 'mid-old', 'old-host', 'mid-old', 'Old CPU', '5.10', 4, 1, '', 1);"
	"INSERT INTO devices(id, node_id, name, node_guid, fw_ver) VALUES(1, 1, 'mlx5_0', 'aaaa:bbbb:cccc:dddd',"
	" '16.1');"
	"INSERT INTO ports VALUES(1, 1, 'PORT_ACTIVE', 'InfiniBand', 4096, 4096, 3, 128, '[]');"
	"INSERT INTO runs VALUES(1, '11111111-2222-4333-8444-555555555555', 1, 1, 1, 0, '{}', '{\"cpu\":3}',"
	" 1000000000, 2000000000, 'complete', 42, 'old-host', 220, 128);"
	"INSERT INTO lat_points(run_id, op, qpt, kind, msg_bytes, inl, n_samples, median_ns) VALUES"
	" (1, 'send', 'rc', 'pingpong', 64, 1, 500, 1234.5), (1, 'send', 'rc', 'pingpong', 64, 0, 500, 1400.0);"
	"INSERT INTO rate_points(run_id, op, qpt, msg_bytes, inl, signal_interval, mops) VALUES"
	" (1, 'send', 'rc', 64, 1, 16, 9.5);"
	"INSERT INTO profiles(node_id, device, guid, port, op, qpt, inline_threshold, max_inline_data, signal_interval,"
	" sq_depth, cq_depth, confidence, reasons, measured_at, run_uuid, rtune_version, stored_ns) VALUES"
	" (1, 'mlx5_0', 'aaaa:bbbb:cccc:dddd', 1, 'send', 'rc', 128, 128, 16, 128, 256, 'medium',"
	"  '[{\"code\":\"crossover\",\"text\":\"old\"}]', 1700000000, '11111111-2222-4333-8444-555555555555', '0.0.9',"
	" 1);"
	"PRAGMA user_version = 1;";

static void test_migrate_from_v1(void **state)
{
	char path[1200];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run;
	struct rt_profile_entry *v = NULL;
	struct rt_store_histogram h;
	struct rt_node_info node;
	size_t n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/v1.db", dir);
	sql(path, v1_sql);
	assert_int_equal(sql_int(NULL, path, "PRAGMA user_version"), 1);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	/* the old run and its points survive and load */
	assert_int_equal(rt_store_run_load(st, "11111111-2222-4333-8444-555555555555", NULL, &run, &err), 0);
	assert_string_equal(run.dev.name, "mlx5_0");
	assert_string_equal(run.node.hostname, "old-host");
	assert_int_equal(run.status, RT_RUN_COMPLETE);
	assert_int_equal(run.n_lat, 2);
	assert_int_equal(run.n_rate, 1);
	assert_true(run.lat[0].median_ns == 1234.5);
	assert_int_equal(run.env.cpu, 3);
	assert_int_equal(run.dev.port_count, 1);
	assert_string_equal(run.dev.ports[0].link_layer, "InfiniBand");
	assert_false(run.cqmod[0].measured); /* v1 did not record it: absent, not invented */
	rt_run_release(&run);
	/* the old profile is readable, with the new column defaulted */
	assert_int_equal(rt_store_get_profile(st, "mid-old", NULL, &v, &n, &node, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].inline_threshold, 128);
	assert_string_equal(v[0].app, "");
	assert_string_equal(v[0].reasons[0].text, "old");
	free(v);
	/* and the v2 tables work */
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "kv");
	h.buckets[rt_hist_bucket(64)] = 10;
	h.messages = 10;
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	rt_store_close(st);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM histograms"), 1);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'cqmod'"), 1);
}

/* Opening must fail with msg and leave the file byte-for-byte as it was, without -wal/-shm/-journal side files. */
static void expect_refused(const char *path, int code, const char *msg)
{
	struct rt_store *st = (struct rt_store *)0x1;
	struct rt_error err;
	char side[1300];
	size_t len0, len1;
	char *before = slurp(path, &len0), *after;

	assert_int_equal(rt_store_open(path, &st, &err), code);
	assert_null(st);
	if (!strstr(err.text, msg))
		fail_msg("error '%s' lacks '%s'", err.text, msg);
	after = slurp(path, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(before, after, len0);
	for (int i = 0; i < 3; i++) {
		static const char *const sfx[] = { "-wal", "-shm", "-journal" };

		snprintf(side, sizeof(side), "%s%s", path, sfx[i]);
		assert_false(exists(side));
	}
	free(before);
	free(after);
}

static void test_not_a_database(void **state)
{
	char path[1200], msg[1400];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/notes.db", dir);
	f = fopen(path, "w");
	for (int i = 0; i < 200; i++)
		fprintf(f, "this is a text file, line %d, that someone named .db\n", i);
	fclose(f);
	snprintf(msg, sizeof(msg), "cannot open store '%s': not a database", path);
	expect_refused(path, EINVAL, msg);
	/* a short one too */
	f = fopen(path, "w");
	fputs("hello\n", f);
	fclose(f);
	expect_refused(path, EINVAL, msg);
}

static void test_other_sqlite_database(void **state)
{
	char path[1200];

	(void)state;
	snprintf(path, sizeof(path), "%s/other.db", dir);
	sql(path, "CREATE TABLE accounts(id INTEGER PRIMARY KEY, owner TEXT); INSERT INTO accounts VALUES(1, 'x');");
	expect_refused(path, EINVAL, "not an rtune store");
}

static void test_newer_schema(void **state)
{
	char path[1200];
	struct rt_store *st = NULL;
	struct rt_error err;

	(void)state;
	snprintf(path, sizeof(path), "%s/newer.db", dir);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	rt_store_close(st);
	sql(path, "PRAGMA journal_mode=DELETE; PRAGMA user_version = 9; CREATE TABLE future(x);");
	{
		char want[128];

		snprintf(want, sizeof(want), "schema version 9 is newer than this rtune supports (%d); upgrade rtune",
			 RT_STORE_SCHEMA_VERSION);
		expect_refused(path, EPROTONOSUPPORT, want);
	}
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM sqlite_master WHERE name = 'future'"), 1);
}

static void test_symlink_refused(void **state)
{
	char path[1200], target[1200];
	struct rt_store *st = NULL;
	struct rt_error err;

	(void)state;
	snprintf(target, sizeof(target), "%s/real.db", dir);
	snprintf(path, sizeof(path), "%s/link.db", dir);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(rt_store_open(path, &st, &err), ELOOP);
	assert_non_null(strstr(err.text, "is a symbolic link"));
	assert_false(exists(target)); /* nothing created through the link */
}

static void test_default_path(void **state)
{
	char buf[1200], want[1300];
	struct rt_error err;

	(void)state;
	setenv("RTUNE_DB", "/srv/x/rtune.db", 1);
	assert_int_equal(rt_store_default_path(buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "/srv/x/rtune.db");
	assert_int_equal(rt_store_default_path(buf, 8, &err), ENAMETOOLONG);
	unsetenv("RTUNE_DB");
	setenv("XDG_STATE_HOME", "/home/u/.state", 1);
	setenv("HOME", "/home/u", 1);
	assert_int_equal(rt_store_default_path(buf, sizeof(buf), &err), 0);
	if (geteuid() == 0) {
		assert_string_equal(buf, "/var/lib/rtune/rtune.db");
	} else {
		assert_string_equal(buf, "/home/u/.state/rtune/rtune.db");
		unsetenv("XDG_STATE_HOME");
		assert_int_equal(rt_store_default_path(buf, sizeof(buf), &err), 0);
		assert_string_equal(buf, "/home/u/.local/state/rtune/rtune.db");
	}
	/* the default path's directories are created by open (here via RTUNE_DB pointing into the scratch dir) */
	snprintf(want, sizeof(want), "%s/a/b/rtune.db", dir);
	setenv("RTUNE_DB", want, 1);
	{
		struct rt_store *st = NULL;

		assert_int_equal(rt_store_open(NULL, &st, &err), 0);
		assert_string_equal(rt_store_path(st), want);
		rt_store_close(st);
		assert_true(exists(want));
	}
	unsetenv("RTUNE_DB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_sqlite_database, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_path, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
