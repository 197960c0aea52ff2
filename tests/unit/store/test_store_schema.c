// SPDX-License-Identifier: MIT
/*
 * Unit tests of opening the store: creation (mode, schema version, WAL), migration from a hand-built v1 store with data
 * in it and from a schema 8 store (then the probe's inline controllers, schema 9, round-trip), and the files the store must refuse without changing a byte: not a database, another program's SQLite
 * database, a newer schema, a symlink; and what a read-only open (rt_store_open_existing) must neither create nor
 * convert: a missing path, an empty file, a database without tables. Also the default path resolution every command
 * shares.
 */
#include <errno.h>
#include <math.h>
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
	/* v4: the node's key is machine-id/hostname; the old run has no device record of its own (the row stands in) and
	 * its device row was last seen by it; the view of current devices exists */
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM nodes WHERE node_key = 'mid-old/old-host'"), 1);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM runs WHERE device IS NULL"), 1);
	assert_int_equal(sql_int(NULL, path, "SELECT seen_ns FROM devices WHERE id = 1"), 1000000000);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM current_devices"), 1);
	/* the old profile is readable, with the new column defaulted (the node named by its machine-id, unambiguous) */
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

/* A v3 store (before bucket_max/batch) holding a histogram: migrated, its row reads back with the new fields unknown
 * (0), a new row keeps them. */
static void test_migrate_from_v3(void **state)
{
	char path[1200];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_histogram h, back;
	struct rt_node_info node;

	(void)state;
	snprintf(path, sizeof(path), "%s/v3.db", dir);
	sql(path, v1_sql);
	/* v1 -> v3 exactly as rtune 0.1 migrated (the v2 and v3 statements of store.c, frozen here), plus a histogram */
	sql(path,
	    "CREATE TABLE histograms(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON"
	    " DELETE CASCADE, app TEXT NOT NULL, op TEXT NOT NULL, qpt TEXT NOT NULL, created_ns INTEGER NOT NULL,"
	    " messages INTEGER NOT NULL, bytes INTEGER NOT NULL, inline_count INTEGER NOT NULL,"
	    " signaled_count INTEGER NOT NULL, sq_full_enomem INTEGER NOT NULL, buckets BLOB NOT NULL);"
	    "CREATE INDEX histograms_app ON histograms(app, op, qpt, created_ns);"
	    "ALTER TABLE runs ADD COLUMN cqmod TEXT;"
	    "ALTER TABLE profiles ADD COLUMN app TEXT NOT NULL DEFAULT '';"
	    "ALTER TABLE profiles ADD COLUMN histogram_id INTEGER REFERENCES histograms(id) ON DELETE SET NULL;"
	    "CREATE INDEX profiles_current ON profiles(node_id, device, port, op, qpt, measured_at);"
	    "CREATE INDEX profiles_run ON profiles(run_uuid);"
	    "ALTER TABLE profiles ADD COLUMN cal_cpu_numa_node INTEGER;"
	    "ALTER TABLE profiles ADD COLUMN cal_numa_local INTEGER;"
	    /* a row as rtune 0.1 wrote it (its bucket counts do not matter here) */
	    "INSERT INTO histograms(node_id, app, op, qpt, created_ns, messages, bytes, inline_count,"
	    " signaled_count, sq_full_enomem, buckets) VALUES(1, 'old', 'send', 'rc', 5, 5, 320, 0, 5, 2,"
	    " zeroblob(1920));"
	    "PRAGMA user_version = 3;");
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "old", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.messages, 5);
	assert_int_equal(back.sq_full_enomem, 2);
	for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
		assert_int_equal(back.bucket_max[b], 0); /* not recorded: unknown, not invented */
	for (unsigned b = 0; b < RT_BATCH_BUCKETS; b++)
		assert_int_equal(back.batch[b] + back.batch_max[b], 0);
	assert_int_equal(back.post_calls + back.max_send_wr, 0);
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "new");
	h.buckets[rt_hist_bucket(64)] = 10;
	h.bucket_max[rt_hist_bucket(64)] = 64;
	h.batch[0] = 10;
	h.batch_max[0] = 1;
	h.max_send_wr = 16;
	h.messages = 10;
	tu_node(&node, "old-host");
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "new", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.bucket_max[rt_hist_bucket(64)], 64);
	assert_int_equal(back.max_send_wr, 16);
	rt_store_close(st);
	assert_int_equal(
		sql_int(NULL, path, "SELECT count(*) FROM pragma_table_info('histograms') WHERE name = 'bucket_max'"),
		1);
}

/* A controller of app on device/qpt qp_num as an import would store it, with n_moves moves. */
static void mk_ctl(struct rt_store_inline_ctl *c, const char *app, const char *device, uint32_t qp_num,
		   int64_t created_ns, unsigned n_moves)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->app, sizeof(c->app), "%s", app);
	snprintf(c->device, sizeof(c->device), "%s", device);
	snprintf(c->qp_type, sizeof(c->qp_type), "rc");
	c->qp_num = qp_num;
	c->pid = 4242;
	c->created_ns = created_ns;
	c->start_bytes = 32;
	c->threshold_bytes = 128;
	c->min_bytes = 0;
	c->max_bytes = 256;
	c->parked = true;
	c->samples = 900;
	c->explored = 90;
	c->dropped = 3;
	c->rounds = 12;
	c->moves_up = n_moves ? n_moves - 1 : 0;
	c->moves_down = n_moves ? 1 : 0;
	c->reverts = n_moves ? 1 : 0;
	c->n_moves = n_moves;
	for (unsigned k = 0; k < n_moves; k++)
		c->moves[k] = (struct rt_inline_ctl_move){ .at_sample = 100 * (k + 1),
							   .from_bytes = 32u << k,
							   .to_bytes = 64u << k,
							   .inline_ns = 1000 + k,
							   .noinline_ns = 1200 + k,
							   .revert = k == n_moves - 1 };
}

/* Turns the current layout into schema 10's: v11 added the measured evidence columns of a profile row. */
#define V11_COLUMNS_DROPPED                                                                                                \
	" ALTER TABLE profiles DROP COLUMN measured_kind; ALTER TABLE profiles DROP COLUMN measured_msg_bytes;"            \
	" ALTER TABLE profiles DROP COLUMN measured_lat_inline_ns;"                                                        \
	" ALTER TABLE profiles DROP COLUMN measured_lat_noinline_ns; ALTER TABLE profiles DROP COLUMN measured_mops_at_n;" \
	" ALTER TABLE profiles DROP COLUMN measured_mops_at_n1; ALTER TABLE profiles DROP COLUMN measured_noise_pct;"

/* Turns the current layout into schema 9's: v10 added the concurrency columns (and v11 its own). */
#define V10_COLUMNS_DROPPED                                                                                \
	V11_COLUMNS_DROPPED                                                                                \
	" ALTER TABLE band_rate_points DROP COLUMN qps; ALTER TABLE band_rate_points DROP COLUMN threads;" \
	" ALTER TABLE signal_bands DROP COLUMN qps; ALTER TABLE signal_bands DROP COLUMN threads;"         \
	" ALTER TABLE histograms DROP COLUMN qps; ALTER TABLE histograms DROP COLUMN threads;"

/* An entry with the 1.3 measured evidence (latency_kind "pingpong", 300 B, the reals; noise unknown). */
static void measured_entry(struct rt_profile_entry *e, const char *run_id, int64_t at)
{
	tu_entry(e, "mlx5_0", RT_PROFILE_OP_SEND, 256, 16, run_id, at);
	e->has_measured = true;
	snprintf(e->lat_kind, sizeof(e->lat_kind), "pingpong");
	e->lat_bytes = 300;
	e->lat_inline_ns = 1818.9000000000001;
	e->lat_noinline_ns = 2037.2;
	e->mops_at_n = 8.965;
	e->mops_at_n1 = 4.95;
	e->noise_pct = NAN;
}

/*
 * A schema 10 store holding an entry with measured evidence (kept only in its hysteresis column then): migrated, the
 * old row is not rewritten (its evidence columns NULL) and still reads back whole; an entry stored afterwards has its
 * evidence in the hysteresis column and, the same, in the v11 columns (unknown as NULL).
 */
static void test_migrate_from_v10(void **state)
{
	char path[1200], key[RT_STORE_NODE_KEY_LEN];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_profile_entry e[2], *v = NULL;
	struct rt_node_info node;
	size_t n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/v10.db", dir);
	tu_node(&node, "host-a");
	measured_entry(&e[0], "8f1c2d3e-4a5b-4c6d-8e7f-0123456789ab", 1700000000);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, e, 1, NULL, &err), 0);
	rt_store_close(st);
	sql(path, "PRAGMA journal_mode=DELETE;" V11_COLUMNS_DROPPED " PRAGMA user_version = 10;");
	assert_int_equal(
		sql_int(NULL, path,
			"SELECT count(*) FROM pragma_table_info('profiles') WHERE name LIKE 'measured%' AND name <> 'measured_at'"),
		0);

	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(
		sql_int(NULL, path,
			"SELECT count(*) FROM pragma_table_info('profiles') WHERE name LIKE 'measured%' AND name <> 'measured_at'"),
		7);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM profiles WHERE measured_kind IS NULL"), 1);
	assert_int_equal(rt_store_get_profile(st, rt_store_node_key(&node, key), NULL, &v, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_true(v[0].has_measured);
	assert_string_equal(v[0].lat_kind, "pingpong");
	assert_true(v[0].lat_inline_ns == e[0].lat_inline_ns && v[0].mops_at_n1 == e[0].mops_at_n1);
	assert_true(isnan(v[0].noise_pct));
	free(v);
	/* a newer entry: the evidence in both places */
	measured_entry(&e[1], "8f1c2d3e-4a5b-4c6d-8e7f-0123456789ac", 1700000100);
	assert_int_equal(rt_store_put_profile(st, &node, NULL, &e[1], 1, NULL, &err), 0);
	rt_store_close(st);
	assert_int_equal(
		sql_int(NULL, path,
			"SELECT count(*) FROM profiles WHERE run_uuid = '8f1c2d3e-4a5b-4c6d-8e7f-0123456789ac' AND measured_kind = 'pingpong'"
			" AND measured_msg_bytes = 300 AND measured_lat_inline_ns = 1818.9000000000001"
			" AND measured_lat_noinline_ns = 2037.2 AND measured_mops_at_n = 8.965"
			" AND measured_mops_at_n1 = 4.95 AND measured_noise_pct IS NULL"
			" AND json_extract(hysteresis, '$.measured.mops_at_n') = measured_mops_at_n"),
		1);
}

/*
 * A schema 9 store (before the concurrency band) holding a histogram and a run with a post-list band point and its N:
 * migrated, the old rows read as one QP and one thread (the histogram's counts as not recorded, 0), and then a
 * concurrency band's point and N and an app's QP and thread counts round-trip.
 */
static void test_migrate_from_v9(void **state)
{
	char path[1200];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_histogram h, back;
	struct rt_store_signal_band
		sb = { RT_BAND_POST_LIST, RT_OP_WRITE, RT_QPT_RC, 64, 64, 8, 8, "knee", "high", 0, 0 },
		*got = NULL;
	struct rt_rate_point p;
	struct rt_run run, loaded;
	struct rt_node_info node;
	size_t n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/v9.db", dir);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "kv");
	h.messages = 7;
	h.buckets[rt_hist_bucket(64)] = 7;
	tu_node(&node, "host-a");
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	tu_run(&run, "host-a", "mlx5_0", 0, 0);
	assert_int_equal(rt_store_run_begin(st, &run, &err), 0);
	memset(&p, 0, sizeof(p));
	p.op = RT_OP_WRITE;
	p.msg_bytes = 64;
	p.post_list = 8;
	p.signal_interval = 8;
	p.reps = 3;
	assert_int_equal(rt_store_run_add_bands(st, run.id, &p, 1, &err), 0);
	assert_int_equal(rt_store_put_signal_bands(st, run.id, &sb, 1, &err), 0);
	rt_store_close(st);
	sql(path, "PRAGMA journal_mode=DELETE;" V10_COLUMNS_DROPPED " PRAGMA user_version = 9;");
	assert_int_equal(
		sql_int(NULL, path, "SELECT count(*) FROM pragma_table_info('signal_bands') WHERE name = 'qps'"), 0);

	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kv", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.messages, 7);
	assert_int_equal(back.qps + back.threads, 0); /* not recorded: none invented */
	memset(&loaded, 0, sizeof(loaded));
	loaded.id = run.id;
	assert_int_equal(rt_store_run_load_bands(st, &loaded, &err), 0);
	assert_int_equal(loaded.n_band_rate, 1);
	assert_int_equal(loaded.band_rate[0].post_list, 8);
	assert_int_equal(loaded.band_rate[0].qps, 1);
	assert_int_equal(loaded.band_rate[0].threads, 1);
	assert_int_equal(rt_rate_band_of(&loaded.band_rate[0]), RT_BAND_POST_LIST);
	assert_int_equal(rt_store_get_signal_bands(st, run.id, &got, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].qps, 1);
	assert_int_equal(got[0].threads, 1);
	free(got);
	rt_run_release(&loaded);

	/* the new columns now hold what is written */
	h.qps = 6;
	h.threads = 3;
	h.created_ns = 4000000000000000000LL; /* after the first import */
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kv", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.qps, 6);
	assert_int_equal(back.threads, 3);
	p.post_list = 1;
	p.qps = 4;
	p.threads = 2;
	assert_int_equal(rt_store_run_add_bands(st, run.id, &p, 1, &err), 0);
	memset(&loaded, 0, sizeof(loaded));
	loaded.id = run.id;
	assert_int_equal(rt_store_run_load_bands(st, &loaded, &err), 0);
	assert_int_equal(loaded.n_band_rate, 2);
	assert_int_equal(rt_rate_band_of(&loaded.band_rate[1]), RT_BAND_CONCURRENCY);
	assert_int_equal(loaded.band_rate[1].qps, 4);
	assert_int_equal(loaded.band_rate[1].threads, 2);
	rt_run_release(&loaded);
	rt_run_release(&run);
	rt_store_close(st);
}

/*
 * A schema 8 store (the layout before the controllers' tables) holding a histogram: migrated to the current schema,
 * the histogram kept; the probe's controllers then round-trip with their moves, a read gives each application's
 * latest import only, filtered by node and device; a busy controller keeps no figures; a controller without an
 * application is refused with nothing stored.
 */
static void test_migrate_from_v8(void **state)
{
	char path[1200], key[RT_STORE_NODE_KEY_LEN];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_store_histogram h, back;
	struct rt_store_inline_ctl c[4], *v = NULL;
	struct rt_node_info node, other;
	size_t n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/v8.db", dir);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "kv");
	h.messages = 7;
	h.buckets[rt_hist_bucket(64)] = 7;
	tu_node(&node, "host-a");
	assert_int_equal(rt_store_put_histogram(st, &node, &h, &err), 0);
	rt_store_close(st);
	/* schema 8 is the current layout without v9's two tables */
	sql(path, "PRAGMA journal_mode=DELETE; DROP TABLE inline_ctl_moves; DROP TABLE inline_ctl;" V10_COLUMNS_DROPPED
		  " PRAGMA user_version = 8;");
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'inline_ctl%'"), 0);

	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_check(st, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kv", RT_OP_SEND, RT_QPT_RC, &back, &err), 0);
	assert_int_equal(back.messages, 7);
	assert_int_equal(rt_store_get_inline_ctl(st, NULL, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 0); /* a migrated store has no controllers: none invented */
	free(v);

	/* an older import of kv (one QP), then a newer one (two QPs, one of them busy), and another node's app */
	mk_ctl(&c[0], "kv", "mlx5_0", 17, 1000, 2);
	assert_int_equal(rt_store_put_inline_ctl(st, &node, c, 1, &err), 0);
	mk_ctl(&c[0], "kv", "mlx5_0", 21, 2000, RT_INLINE_CTL_MOVES);
	mk_ctl(&c[1], "kv", "mlx5_1", 22, 2000, 0);
	c[1].busy = true;
	assert_int_equal(rt_store_put_inline_ctl(st, &node, c, 2, &err), 0);
	assert_true(c[0].id > 0 && c[1].id > c[0].id);
	tu_node(&other, "host-b");
	mk_ctl(&c[2], "db", "mlx5_0", 5, 500, 1);
	assert_int_equal(rt_store_put_inline_ctl(st, &other, &c[2], 1, &err), 0);
	mk_ctl(&c[3], "", "mlx5_0", 6, 3000, 1);
	assert_int_equal(rt_store_put_inline_ctl(st, &node, &c[2], 2, &err), EINVAL); /* c[3] has no app */
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM inline_ctl"), 4);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM inline_ctl_moves"), 2 + RT_INLINE_CTL_MOVES + 1);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM inline_ctl WHERE busy = 1 AND samples IS NULL"), 1);

	assert_int_equal(rt_store_get_inline_ctl(st, rt_store_node_key(&node, key), NULL, &v, &n, &err), 0);
	assert_int_equal(n, 2); /* kv's latest import only: QPs 21 and 22, not 17 */
	assert_string_equal(v[0].app, "kv");
	assert_int_equal(v[0].qp_num, 21);
	assert_int_equal(v[0].created_ns, 2000);
	assert_int_equal(v[0].start_bytes, 32);
	assert_int_equal(v[0].threshold_bytes, 128);
	assert_int_equal(v[0].max_bytes, 256);
	assert_true(v[0].parked);
	assert_int_equal(v[0].samples, 900);
	assert_int_equal(v[0].explored, 90);
	assert_int_equal(v[0].dropped, 3);
	assert_int_equal(v[0].rounds, 12);
	assert_int_equal(v[0].moves_up, RT_INLINE_CTL_MOVES - 1);
	assert_int_equal(v[0].moves_down, 1);
	assert_int_equal(v[0].reverts, 1);
	assert_int_equal(v[0].pid, 4242);
	assert_string_equal(v[0].qp_type, "rc");
	assert_int_equal(v[0].n_moves, RT_INLINE_CTL_MOVES);
	for (unsigned k = 0; k < RT_INLINE_CTL_MOVES; k++) {
		assert_int_equal(v[0].moves[k].at_sample, 100 * (k + 1));
		assert_int_equal(v[0].moves[k].from_bytes, 32u << k);
		assert_int_equal(v[0].moves[k].to_bytes, 64u << k);
		assert_int_equal(v[0].moves[k].inline_ns, 1000 + k);
		assert_int_equal(v[0].moves[k].noinline_ns, 1200 + k);
		assert_int_equal(v[0].moves[k].revert, k == RT_INLINE_CTL_MOVES - 1);
	}
	assert_int_equal(v[1].qp_num, 22);
	assert_true(v[1].busy);
	assert_int_equal(v[1].threshold_bytes + v[1].samples + v[1].n_moves, 0);
	free(v);
	assert_int_equal(rt_store_get_inline_ctl(st, rt_store_node_key(&node, key), "mlx5_1", &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].qp_num, 22);
	free(v);
	assert_int_equal(rt_store_get_inline_ctl(st, NULL, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 3); /* every node: db on host-b too */
	assert_string_equal(v[0].app, "db");
	assert_int_equal(v[0].n_moves, 1);
	free(v);
	rt_store_close(st);
}

/* Opening with open (rt_store_open or rt_store_open_existing) must fail with msg and leave the file byte-for-byte as
 * it was, without -wal/-shm/-journal side files. */
static void expect_refused_by(int (*open)(const char *, struct rt_store **, struct rt_error *), const char *path,
			      int code, const char *msg)
{
	struct rt_store *st = (struct rt_store *)0x1;
	struct rt_error err;
	char side[1300];
	size_t len0, len1;
	char *before = slurp(path, &len0), *after;

	assert_int_equal(open(path, &st, &err), code);
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

static void expect_refused(const char *path, int code, const char *msg)
{
	expect_refused_by(rt_store_open, path, code, msg);
}

/*
 * A command that reads (rt_store_open_existing) never creates nor converts a store (issue 15 item 5): no file at the
 * path stays no file, an empty file stays empty, an SQLite database without tables stays as it was, each refused in
 * one line naming it. A writer (rt_store_open) still makes a store of the empty file.
 */
static void test_read_never_creates(void **state)
{
	char path[1200], msg[1400];
	struct rt_store *st = (struct rt_store *)0x1;
	struct rt_error err;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing.db", dir);
	assert_int_equal(rt_store_open_existing(path, &st, &err), ENOENT);
	assert_null(st);
	assert_non_null(strstr(err.text, "no store at"));
	assert_false(exists(path));

	snprintf(path, sizeof(path), "%s/empty.db", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(msg, sizeof(msg), "cannot open store '%s': empty file, not an rtune store", path);
	expect_refused_by(rt_store_open_existing, path, EINVAL, msg);
	assert_int_equal(rt_store_open(path, &st, &err), 0); /* a writer may make it a store */
	rt_store_close(st);
	assert_int_equal(sql_int(NULL, path, "PRAGMA user_version"), RT_STORE_SCHEMA_VERSION);

	snprintf(path, sizeof(path), "%s/notables.db", dir);
	sql(path, "PRAGMA journal_mode=DELETE; CREATE TABLE t(x); DROP TABLE t;");
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM sqlite_master"), 0);
	snprintf(msg, sizeof(msg), "cannot open store '%s': empty database, not an rtune store", path);
	expect_refused_by(rt_store_open_existing, path, EINVAL, msg);
	assert_int_equal(sql_int(NULL, path, "SELECT count(*) FROM sqlite_master"), 0);
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
	char path[1200], msg[200];
	struct rt_store *st = NULL;
	struct rt_error err;

	(void)state;
	snprintf(path, sizeof(path), "%s/newer.db", dir);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	rt_store_close(st);
	snprintf(msg, sizeof(msg), "PRAGMA journal_mode=DELETE; PRAGMA user_version = %d; CREATE TABLE future(x);",
		 RT_STORE_SCHEMA_VERSION + 1);
	sql(path, msg);
	snprintf(msg, sizeof(msg), "schema version %d is newer than this rtune supports (%d); upgrade rtune",
		 RT_STORE_SCHEMA_VERSION + 1, RT_STORE_SCHEMA_VERSION);
	expect_refused(path, EPROTONOSUPPORT, msg);
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
		cmocka_unit_test_setup_teardown(test_migrate_from_v3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v9, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v10, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_never_creates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_sqlite_database, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_path, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
