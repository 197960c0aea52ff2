// SPDX-License-Identifier: MIT
/*
 * Unit tests of the fleet report against generated fleets: every planted outlier is found with its planted cause and
 * no other node is flagged (many seeds); a clean fleet has no outlier; nodes land in their planted hardware group;
 * without hardware facts nodes are grouped by signature; stores give calibration locality, latency/rate at the
 * chosen settings, curves and drift; bad inputs (newer schema major, truncated JSON, corrupt and foreign databases,
 * an empty directory) are each named and skipped while the rest is reported; the JSON, CSV and HTML writers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet_gen.h"
#include "report_internal.h"
#include "report_test.h"
#include "rt_store.h"

/* Every planted outlier found with its cause; nothing else flagged; nodes in their planted group. */
static void check_planted(uint64_t seed, int groups, int nodes, int outliers, int entries)
{
	struct fg_opts o = { .seed = seed,
			     .groups = groups,
			     .nodes_per_group = nodes,
			     .outliers_per_group = outliers,
			     .now = NOW,
			     .with_hardware = true,
			     .entries_per_node = entries };
	struct fg_node *v;
	struct rt_report *r;
	size_t n, planted = 0;

	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	assert_int_equal(rt_report_group_count(r), (size_t)groups);
	for (size_t i = 0; i < n; i++) {
		const char *gid = rt_report_group_of(r, v[i].hostname);

		assert_non_null(gid);
		/* same planted group <=> same report group */
		for (size_t j = 0; j < n; j += 7)
			assert_int_equal(strcmp(gid, rt_report_group_of(r, v[j].hostname)) == 0,
					 v[i].group == v[j].group);
	}
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t k = 0; k < rt_report_outlier_count(r); k++) {
			struct rt_report_outlier_view ov;

			assert_true(rt_report_outlier_at(r, k, &ov));
			if (strcmp(ov.hostname, v[i].hostname))
				continue;
			if (v[i].cause == FG_NONE)
				fail_msg("seed %llu: clean node %s flagged: %s %g (median %g, z %.1f) cause %s",
					 (unsigned long long)seed, ov.hostname, ov.metric, ov.value, ov.group_median,
					 ov.robust_z, ov.causes);
			if (strcmp(ov.cause, fg_cause_code(v[i].cause)))
				fail_msg("seed %llu: %s planted %s, report says %s (%s)", (unsigned long long)seed,
					 v[i].hostname, fg_cause_code(v[i].cause), ov.causes, ov.evidence);
			assert_non_null(strstr(ov.evidence, " ")); /* evidence is a sentence, not empty */
			found = true;
		}
		if (v[i].cause != FG_NONE) {
			planted++;
			if (!found)
				fail_msg("seed %llu: planted %s outlier %s not found", (unsigned long long)seed,
					 fg_cause_code(v[i].cause), v[i].hostname);
		}
	}
	assert_int_equal(planted, (size_t)(groups * outliers));
	rt_report_free(r);
	fg_free(v, n);
}

static void test_planted_outliers(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++)
		check_planted(seed, 1 + (int)(seed % 4), 30 + (int)(seed % 5) * 10, 4, 1 + (int)(seed % 4));
}

static void test_every_cause_in_one_group(void **state)
{
	(void)state;
	/* 5 outliers per group: each of the five causes appears in every group */
	for (uint64_t seed = 100; seed < 110; seed++)
		check_planted(seed, 3, 60, 5, 2);
}

static void test_clean_fleet(void **state)
{
	(void)state;
	for (uint64_t seed = 200; seed < 260; seed++) {
		struct fg_opts o = { .seed = seed,
				     .groups = 1 + (int)(seed % 5),
				     .nodes_per_group = 8 + (int)(seed % 50),
				     .outliers_per_group = 0,
				     .now = NOW,
				     .with_hardware = seed % 2 == 0,
				     .entries_per_node = 1 + (int)(seed % 4) };
		struct fg_node *v;
		struct rt_report *r;
		size_t n;

		assert_int_equal(fg_build(&o, &v, &n), 0);
		r = report_of(v, n);
		if (rt_report_outlier_count(r)) {
			struct rt_report_outlier_view ov;

			rt_report_outlier_at(r, 0, &ov);
			fail_msg("seed %llu: clean fleet has %zu outliers, first %s %s %g (median %g, z %.1f)",
				 (unsigned long long)seed, rt_report_outlier_count(r), ov.hostname, ov.metric, ov.value,
				 ov.group_median, ov.robust_z);
		}
		assert_int_equal(rt_report_group_count(r), (size_t)o.groups);
		rt_report_free(r);
		fg_free(v, n);
	}
}

/* Without the hardware object, nodes are grouped by signature; planted MPS/firmware nodes have their own. */
static void test_signature_only(void **state)
{
	struct fg_opts o = { .seed = 7,
			     .groups = 3,
			     .nodes_per_group = 40,
			     .outliers_per_group = 5,
			     .now = NOW,
			     .with_hardware = false,
			     .entries_per_node = 1 };
	struct fg_node *v;
	struct rt_report *r;
	size_t n, big = 0;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	for (size_t i = 0; i < rt_report_group_count(r); i++) {
		assert_non_null(strstr(rt_report_group_id(r, i), "fnv1a64:"));
		if (rt_report_group_nodes(r, i) >= 30)
			big++;
	}
	assert_int_equal(big, 3);
	assert_int_equal(rt_report_group_count(r), 3 + 3 * 2); /* + one MPS and one firmware signature per group */
	/* the stale and low-confidence outliers are still found and named without hardware facts */
	for (size_t i = 0; i < n; i++) {
		if (v[i].cause != FG_STALE && v[i].cause != FG_LOW_CONF)
			continue;
		for (size_t k = 0;; k++) {
			struct rt_report_outlier_view ov;

			if (!rt_report_outlier_at(r, k, &ov))
				fail_msg("%s (%s) not found", v[i].hostname, fg_cause_code(v[i].cause));
			if (!strcmp(ov.hostname, v[i].hostname)) {
				assert_string_equal(ov.cause, fg_cause_code(v[i].cause));
				break;
			}
		}
	}
	rt_report_free(r);
	fg_free(v, n);
}

static char tmpdir[] = "/tmp/rtune-report-test.XXXXXX";

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static bool problem_has(const struct rt_report *r, const char *a, const char *b)
{
	for (size_t i = 0; i < rt_report_problem_count(r); i++)
		if (strstr(rt_report_problem_at(r, i), a) && strstr(rt_report_problem_at(r, i), b))
			return true;
	return false;
}

static void test_bad_inputs(void **state)
{
	struct fg_opts o = { .seed = 3,
			     .groups = 1,
			     .nodes_per_group = 6,
			     .outliers_per_group = 0,
			     .now = NOW,
			     .with_hardware = true,
			     .entries_per_node = 1 };
	char dir[600], empty[600], store[600], sub[600];
	struct rt_report *r = NULL;
	struct fg_node *v;
	struct rt_error err;
	size_t n;
	char *newer;
	static const char junk_db[] = "SQLite format 3\0this is not really a database, just its header and junk......";

	(void)state;
	assert_non_null(mkdtemp(tmpdir));
	snprintf(dir, sizeof(dir), "%s/fleet", tmpdir);
	snprintf(empty, sizeof(empty), "%s/empty", tmpdir);
	snprintf(sub, sizeof(sub), "%s/fleet/g0", tmpdir);
	assert_int_equal(mkdir(empty, 0755), 0);
	assert_int_equal(fg_build(&o, &v, &n), 0);
	assert_int_equal(fg_write_dir(dir, v, n), 0);
	/* a newer schema major among them */
	newer = strdup(v[0].json);
	strstr(newer, "\"version\":\"1.0\"")[11] = '2'; /* 1.0 -> 2.0 in place */
	write_file(sub, "newer.json", newer, strlen(newer));
	free(newer);
	write_file(sub, "truncated.json", v[1].json, v[1].len / 2);
	write_file(sub, "corrupt.db", junk_db, sizeof(junk_db));
	write_file(sub, "garbage.db", "hello, I am not a database at all\n", 34);
	write_file(sub, "notes.txt", "ignored: not a profile name\n", 28);
	write_file(sub, "empty.json", "", 0);
	/* an SQLite database of another program */
	snprintf(store, sizeof(store), "sqlite3 %s/fleet/g0/other.sqlite 'CREATE TABLE t(x); INSERT INTO t VALUES(1);'",
		 tmpdir);
	assert_int_equal(system(store), 0);
	/* and one good store */
	snprintf(store, sizeof(store), "%s/fleet/good.db", tmpdir);
	assert_int_equal(fg_write_store(store, "st", 3, false, false, NOW), 0);

	assert_int_equal(rt_report_create(NULL, &r), 0);
	assert_int_equal(rt_report_add_path(r, dir), 6 + 3);
	assert_int_equal(rt_report_add_path(r, empty), 0);
	assert_int_equal(rt_report_add_path(r, "/nonexistent/rtune"), 0);
	assert_true(problem_has(r, "newer.json", "schema version 2.0 is not supported"));
	assert_true(problem_has(r, "truncated.json", "line"));
	assert_true(problem_has(r, "corrupt.db", "not a database"));
	assert_true(problem_has(r, "garbage.db", "not a database"));
	assert_true(problem_has(r, "other.sqlite", "not an rtune store"));
	assert_true(problem_has(r, "empty.json", "empty file"));
	assert_true(problem_has(r, "/empty", "holds no profiles"));
	assert_true(problem_has(r, "/nonexistent/rtune", "No such file"));
	assert_false(problem_has(r, "notes.txt", ""));
	assert_int_equal(rt_report_problem_count(r), 8);
	assert_int_equal(rt_report_node_count(r), 9);
	assert_int_equal(rt_report_analyze(r, &err), 0);
	assert_int_equal(rt_report_group_count(r), 2);
	rt_report_free(r);
	fg_free(v, n);
	snprintf(store, sizeof(store), "rm -rf %s", tmpdir);
	assert_int_equal(system(store), 0);
}

/* Stores: calibration locality from the run, latency/rate at the chosen settings, curves, drift; read per node through
 * rt_store_get_profile() and in bulk (the path for big fleet stores), with the same results. */
static void check_store_input(int bulk_min)
{
	char d[] = "/tmp/rtune-report-store.XXXXXX", path[128], cmd[160];
	struct rt_report_opts ro = { .now = NOW, .with_curves = true };
	struct rt_report *r = NULL;
	struct rt_error err;
	bool remote_found = false;

	assert_non_null(mkdtemp(d));
	snprintf(path, sizeof(path), "%s/fleet.db", d);
	assert_int_equal(fg_write_store(path, "rack", 8, true, true, NOW), 0);
	rp_store_bulk_min_nodes = bulk_min;
	assert_int_equal(rt_report_create(&ro, &r), 0);
	assert_int_equal(rt_report_add_path(r, path), 8);
	assert_int_equal(rt_report_problem_count(r), 0);
	assert_int_equal(rt_report_analyze(r, &err), 0);
	assert_int_equal(rt_report_group_count(r), 1);
	assert_non_null(strstr(rt_report_group_id(r, 0), "hw:"));
	assert_non_null(strstr(rt_report_group_label(r, 0), "Synthetic EPYC S"));
	for (size_t k = 0; k < rt_report_outlier_count(r); k++) {
		struct rt_report_outlier_view ov;

		rt_report_outlier_at(r, k, &ov);
		if (!strcmp(ov.hostname, "rack-0") && !strcmp(ov.metric, "inline_threshold")) {
			assert_string_equal(ov.cause, "remote_numa_calibration");
			assert_non_null(strstr(ov.evidence, "NUMA node 1"));
			remote_found = true;
		}
	}
	assert_true(remote_found);
	/* the drifted node's outlier names its drift */
	for (size_t k = 0;; k++) {
		struct rt_report_outlier_view ov;

		assert_true(rt_report_outlier_at(r, k, &ov));
		if (!strcmp(ov.hostname, "rack-1")) {
			assert_string_equal(ov.cause, "drift");
			break;
		}
	}
	assert_int_equal(rt_report_drift_count(r), 1);
	{
		struct rt_report_drift_view dv;

		assert_true(rt_report_drift_at(r, 0, &dv));
		assert_string_equal(dv.hostname, "rack-1");
		assert_string_equal(dv.metric, "inline_threshold");
		assert_true(dv.latest == 64);
		assert_int_equal(dv.history_runs, 3);
	}
	/* latency and rate at the chosen settings came from the runs; curves kept */
	{
		const struct rp_slot *s = &r->groups[0].slots[0];

		assert_int_equal(s->st[RP_M_LAT].n, 8);
		assert_int_equal(s->st[RP_M_MOPS].n, 8);
		assert_true(s->st[RP_M_MOPS].median > 9.9 && s->st[RP_M_MOPS].median < 10.1);
		assert_non_null(r->nodes[0].entries[0].curve);
		assert_int_equal(r->nodes[0].entries[0].curve->n_lat, 11);
		assert_int_equal(r->nodes[0].entries[0].curve->n_rate, 7);
		assert_true(s->has_rec);
		assert_true(s->rec_threshold >= 256 && s->rec_threshold <= 288);
		assert_int_equal(s->rec_interval, 16);
	}
	rt_report_free(r);
	rp_store_bulk_min_nodes = 256;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

static void test_store_input(void **state)
{
	(void)state;
	check_store_input(256); /* per node, through the store API */
	check_store_input(0);	/* in bulk */
}

/* Reads the store at path into a new report (not analyzed): per node (bulk_min above the node count), in bulk as one
 * part (part_nodes 0) or split into parts of part_nodes nodes (one thread each, up to one per CPU). */
static struct rt_report *read_store_as(const char *path, int bulk_min, int part_nodes, long expect_nodes)
{
	struct rt_report *r = NULL;

	rp_store_bulk_min_nodes = bulk_min;
	rp_store_bulk_part_nodes = part_nodes;
	assert_int_equal(rt_report_create(&(struct rt_report_opts){ .now = NOW, .with_curves = true }, &r), 0);
	assert_int_equal(rt_report_add_path(r, path), expect_nodes);
	assert_int_equal(rt_report_problem_count(r), 0);
	rp_store_bulk_min_nodes = 256;
	rp_store_bulk_part_nodes = 8192;
	return r;
}

/* Node by node, device by device, entry by entry (every field, curves included): a and b read the same. */
/* Two curves equal member by member (floats compared bit for bit through their values: both reads round alike). */
static void assert_same_curve(const struct rp_curve *a, const struct rp_curve *b)
{
	assert_int_equal(a->n_lat, b->n_lat);
	assert_int_equal(a->n_rate, b->n_rate);
	for (int i = 0; i < a->n_lat && i < RP_MAX_CURVE; i++) {
		assert_int_equal(a->lat[i].bytes, b->lat[i].bytes);
		assert_true(a->lat[i].inl_ns == b->lat[i].inl_ns ||
			    (isnan(a->lat[i].inl_ns) && isnan(b->lat[i].inl_ns)));
		assert_true(a->lat[i].noinl_ns == b->lat[i].noinl_ns ||
			    (isnan(a->lat[i].noinl_ns) && isnan(b->lat[i].noinl_ns)));
	}
	for (int i = 0; i < a->n_rate && i < RP_MAX_CURVE; i++) {
		assert_int_equal(a->rate[i].n, b->rate[i].n);
		assert_true(a->rate[i].mops == b->rate[i].mops || (isnan(a->rate[i].mops) && isnan(b->rate[i].mops)));
	}
}

static void assert_same_nodes(const struct rt_report *a, const struct rt_report *b)
{
	assert_int_equal(a->n_nodes, b->n_nodes);
	for (size_t i = 0; i < a->n_nodes; i++) {
		const struct rp_node *x = &a->nodes[i], *y = &b->nodes[i];

		assert_string_equal(x->node_key, y->node_key);
		assert_string_equal(x->hostname, y->hostname);
		assert_string_equal(x->cpu_model, y->cpu_model);
		assert_string_equal(x->hw_sig, y->hw_sig);
		assert_int_equal(x->numa_nodes, y->numa_nodes);
		assert_int_equal(x->has_hw, y->has_hw);
		assert_int_equal(x->newest, y->newest);
		assert_int_equal(x->n_devs, y->n_devs);
		assert_int_equal(x->n_devs ? memcmp(x->devs, y->devs, (size_t)x->n_devs * sizeof(*x->devs)) : 0, 0);
		assert_int_equal(x->n_entries, y->n_entries);
		for (int k = 0; k < x->n_entries; k++) {
			const struct rp_entry *e = &x->entries[k], *f = &y->entries[k];

			assert_int_equal(memcmp(e, f, offsetof(struct rp_entry, curve)), 0);
			assert_int_equal(!e->curve, !f->curve);
			if (e->curve && f->curve)
				assert_same_curve(e->curve, f->curve);
		}
	}
}

/*
 * A fleet store read in bulk, whole or split into parts read by several threads, gives every node exactly as the
 * per-node read (rt_store_get_profile) does: the current entry per key when a key has several rows (a newer one
 * wins; an older one stored later loses; the same time: the later row), and each imported entry's measured evidence:
 * in bulk from the columns the import wrote (schema v11), or for rows without them (written before v11) from the
 * hysteresis column with librtune's lexer, including columns that are not JSON, not an object, or hold odd values; per
 * node from the hysteresis column with jansson. Also a store with runs (curves, calibration from the run).
 */
static void test_store_bulk_parts(void **state)
{
	struct fg_opts o = { .seed = 7, .groups = 3, .nodes_per_group = 40, .outliers_per_group = 3, .now = NOW };
	static const char *const odd[] = {
		"not json",
		"",
		"[1, 2]",
		"{\"measured\": null}",
		"{\"measured\": 5}",
		"{\"measured\": {}}",
		/* NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one document split over two lines */
		"{\"measured\": {\"latency_kind\": \"post_cqe\", \"msg_bytes\": 64, \"latency_inline_ns\": 900,"
		" \"mops_at_n\": \"x\", \"noise_pct\": null}}",
		/* NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one document split over two lines */
		"{\"inline\": {\"runs\": 2}, \"measured\": {\"latency_kind\": \"ping\\u0070ong\", \"msg_bytes\": -3,"
		" \"latency_noinline_ns\": 1.5e3, \"mops_at_n1\": 12, \"noise_pct\": 0.25}}",
		"{\"measured\": {\"msg_bytes\": 4294967296, \"mops_at_n\": 1e300, \"latency_kind\": 7}} ",
		"{\"measured\": {\"msg_bytes\": 300, \"latency_inline_ns\": 1800.5}} trailing",
	};
	char d[] = "/tmp/rtune-report-bulk.XXXXXX", db[128], runs_db[128], cmd[160];
	struct fg_node *v;
	struct rt_report *per_node, *whole, *split;
	sqlite3 *sq;
	size_t n;
	long tie_won = 0;

	(void)state;
	fg_realistic(&o);
	assert_int_equal(fg_build(&o, &v, &n), 0);
	assert_non_null(mkdtemp(d));
	snprintf(db, sizeof(db), "%s/fleet.db", d);
	assert_int_equal(fg_import_store(db, v, n), 0);
	assert_int_equal(sqlite3_open(db, &sq), SQLITE_OK);
	/* older rows stored later (they must lose), rows of the same time stored later (they must win); run ids stay
	 * 36 characters, as a uuid */
	assert_int_equal(
		sqlite3_exec(sq,
			     "INSERT INTO profiles(node_id, device, guid, port, op, qpt, inline_threshold,"
			     " max_inline_data, signal_interval, sq_depth, cq_depth, numa_node, cpus, confidence,"
			     " reasons, measured_at, run_uuid, rtune_version, stored_ns, hysteresis,"
			     " cal_cpu_numa_node, cal_numa_local) SELECT node_id, device, guid, port, op, qpt,"
			     " inline_threshold * 2 + 8, max_inline_data * 2 + 8, signal_interval, sq_depth,"
			     " cq_depth, numa_node, cpus, confidence, reasons, measured_at - 86400,"
			     " substr(run_uuid, 1, 33) || 'old', rtune_version, stored_ns, NULL, 1, 0 FROM profiles"
			     " WHERE node_id % 3 = 0;"
			     "INSERT INTO profiles(node_id, device, guid, port, op, qpt, inline_threshold,"
			     " max_inline_data, signal_interval, sq_depth, cq_depth, numa_node, cpus, confidence,"
			     " reasons, measured_at, run_uuid, rtune_version, stored_ns, hysteresis,"
			     " cal_cpu_numa_node, cal_numa_local) SELECT node_id, device, guid, port, op, qpt,"
			     " inline_threshold + 1, max_inline_data + 1, signal_interval, sq_depth, cq_depth,"
			     " numa_node, cpus, confidence, reasons, measured_at, substr(run_uuid, 1, 33) || 'tie',"
			     " rtune_version,"
			     " stored_ns, hysteresis, cal_cpu_numa_node, cal_numa_local FROM profiles"
			     " WHERE node_id % 5 = 0 AND op = 'send' AND run_uuid NOT LIKE '%old'",
			     NULL, NULL, NULL),
		SQLITE_OK);
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		char *sql =
			sqlite3_mprintf("UPDATE profiles SET hysteresis = %Q, measured_kind = NULL WHERE id %% 13 = %d",
					odd[i], (int)i);

		assert_int_equal(sqlite3_exec(sq, sql, NULL, NULL, NULL), SQLITE_OK);
		sqlite3_free(sql);
	}
	/* the other rows' evidence is read from the columns the import wrote (schema v11) */
	{
		sqlite3_stmt *q;

		assert_int_equal(sqlite3_prepare_v2(sq,
						    "SELECT count(*) FROM profiles WHERE measured_kind = 'pingpong'"
						    " AND measured_lat_inline_ns > 0 AND measured_mops_at_n > 0",
						    -1, &q, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_true(sqlite3_column_int(q, 0) > 100);
		sqlite3_finalize(q);
	}
	sqlite3_close(sq);
	per_node = read_store_as(db, 1 << 30, 8192, (long)n);
	whole = read_store_as(db, 0, 0, (long)n);
	split = read_store_as(db, 0, 7, (long)n);
	assert_same_nodes(per_node, whole);
	assert_same_nodes(per_node, split);
	/* the checks had something to check: the later row of the same time won, odd evidence was read */
	for (size_t i = 0; i < whole->n_nodes; i++)
		for (int k = 0; k < whole->nodes[i].n_entries; k++)
			tie_won += strstr(whole->nodes[i].entries[k].run_id, "tie") != NULL;
	assert_true(tie_won > 10);
	rt_report_free(per_node);
	rt_report_free(whole);
	rt_report_free(split);
	/* a store with runs: calibration, latency, rate and curves from the runs, drift */
	snprintf(runs_db, sizeof(runs_db), "%s/runs.db", d);
	assert_int_equal(fg_write_store(runs_db, "rack", 40, true, true, NOW), 0);
	per_node = read_store_as(runs_db, 1 << 30, 8192, 40);
	split = read_store_as(runs_db, 0, 3, 40);
	assert_same_nodes(per_node, split);
	assert_non_null(split->nodes[0].entries[0].curve);
	rt_report_free(per_node);
	rt_report_free(split);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

/* The groups analyzed one per thread give the report analyzed on one thread: every slot's statistics and
 * recommendation, every outlier in the same order, the same table. */
static void test_analyze_parallel(void **state)
{
	struct fg_opts o = { .seed = 11, .groups = 6, .nodes_per_group = 50, .outliers_per_group = 4, .now = NOW };
	struct rt_report *one, *many;
	struct fg_node *v;
	char *a, *b;
	size_t n, la, lb;

	(void)state;
	fg_realistic(&o);
	assert_int_equal(fg_build(&o, &v, &n), 0);
	rp_analyze_parallel_nodes = 1 << 30;
	one = report_of(v, n);
	rp_analyze_parallel_nodes = 0;
	many = report_of(v, n);
	rp_analyze_parallel_nodes = 4096;
	assert_true(rt_report_outlier_count(one) >= 6 * 4);
	assert_int_equal(rt_report_outlier_count(many), rt_report_outlier_count(one));
	assert_int_equal(memcmp(many->outliers, one->outliers, one->n_outliers * sizeof(*one->outliers)), 0);
	for (size_t k = 1; k < many->n_outliers; k++) /* group by group, as found */
		assert_true(many->outliers[k].group >= many->outliers[k - 1].group);
	assert_int_equal(many->n_groups, one->n_groups);
	for (size_t gi = 0; gi < one->n_groups; gi++) {
		assert_int_equal(many->groups[gi].n_slots, one->groups[gi].n_slots);
		assert_int_equal(memcmp(many->groups[gi].slots, one->groups[gi].slots,
					one->groups[gi].n_slots * sizeof(*one->groups[gi].slots)),
				 0);
	}
	a = capture(one, rt_report_write_text, &la);
	b = capture(many, rt_report_write_text, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
	rt_report_free(one);
	rt_report_free(many);
	fg_free(v, n);
}

/* The same node from a store and from a JSON export counts once; the newer profile wins. */
static void test_dedupe(void **state)
{
	struct fg_opts o = {
		.seed = 11, .groups = 1, .nodes_per_group = 5, .now = NOW, .with_hardware = true, .entries_per_node = 1
	};
	struct rt_report *r = NULL;
	struct fg_node *v;
	size_t n;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	assert_int_equal(rt_report_create(NULL, &r), 0);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			assert_int_equal(rt_report_add_json_text(r, v[i].hostname, v[i].json, v[i].len), 1);
	assert_int_equal(rt_report_node_count(r), 5);
	/* a machine cloned from the same image (same machine-id) under another hostname is another node */
	{
		char *clone = strdup(v[0].json), *h = strstr(clone, v[0].hostname);

		h[0] = 'X';
		assert_int_equal(rt_report_add_json_text(r, "clone", clone, strlen(clone)), 1);
		free(clone);
	}
	assert_int_equal(rt_report_node_count(r), 6);
	rt_report_free(r);
	fg_free(v, n);
}

/*
 * One node identity in files and stores (issue 15 item 2): five nodes and a clone of the first (same machine-id,
 * another hostname) count 6 as files, 6 from a store they were imported into (per node and in bulk), and still 6 from
 * the store and the files together (each store node is the same node as its file).
 */
static void test_identity_files_and_store(void **state)
{
	struct fg_opts o = {
		.seed = 12, .groups = 1, .nodes_per_group = 5, .now = NOW, .with_hardware = true, .entries_per_node = 1
	};
	char d[] = "/tmp/rtune-report-ident.XXXXXX", path[128], cmd[160];
	struct rt_store *st = NULL;
	struct rt_report *r = NULL;
	struct rt_error err;
	struct fg_node *v;
	char *clone, *h;
	size_t n;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	clone = strdup(v[0].json);
	h = strstr(clone, v[0].hostname);
	h[0] = 'X';
	assert_non_null(mkdtemp(d));
	snprintf(path, sizeof(path), "%s/fleet.db", d);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rt_store_import_text(st, v[i].hostname, v[i].json, v[i].len, NULL, NULL, &err), 0);
	assert_int_equal(rt_store_import_text(st, "clone", clone, strlen(clone), NULL, NULL, &err), 0);
	rt_store_close(st);
	for (int mode = 0; mode < 4; mode++) {
		/* 0: files, 1: store per node, 2: store in bulk, 3: store and files */
		rp_store_bulk_min_nodes = mode == 2 ? 0 : 256;
		assert_int_equal(rt_report_create(NULL, &r), 0);
		if (mode != 0)
			assert_int_equal(rt_report_add_path(r, path), 6);
		if (mode == 0 || mode == 3) {
			for (size_t i = 0; i < n; i++)
				assert_int_equal(rt_report_add_json_text(r, v[i].hostname, v[i].json, v[i].len), 1);
			assert_int_equal(rt_report_add_json_text(r, "clone", clone, strlen(clone)), 1);
		}
		if (rt_report_node_count(r) != 6)
			fail_msg("mode %d: %zu nodes, not 6", mode, rt_report_node_count(r));
		rt_report_free(r);
	}
	rp_store_bulk_min_nodes = 256;
	free(clone);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

static void test_writers(void **state)
{
	struct fg_opts o = { .seed = 5,
			     .groups = 2,
			     .nodes_per_group = 20,
			     .outliers_per_group = 2,
			     .now = NOW,
			     .with_hardware = true,
			     .entries_per_node = 2 };
	struct fg_node *v;
	struct rt_report *r;
	json_error_t jerr;
	json_t *doc;
	size_t n, len, lines = 0;
	char *text, *page;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	/* a hostile hostname (of a planted outlier, so the page names it) must be escaped everywhere */
	assert_int_not_equal(v[3].cause, FG_NONE);
	{
		/* bytes spliced over the first 7 of the name, in place: no terminator */
		static const char hostile[7] = { '<', 'b', '>', '&', '\\', '"', 'x' };
		char *p = strstr(v[3].json, v[3].hostname);

		memcpy(p, hostile, sizeof(hostile));
	}
	r = report_of(v, n);
	text = capture(r, rt_report_write_json, &len);
	doc = json_loadb(text, len, 0, &jerr);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "schema"), "name")), "rtune-report");
	assert_int_equal(json_array_size(json_object_get(doc, "groups")), 2);
	assert_int_equal(json_array_size(json_object_get(doc, "outliers")), rt_report_outlier_count(r));
	assert_int_equal(json_integer_value(json_object_get(doc, "node_count")), 40);
	json_decref(doc);
	free(text);
	text = capture(r, rt_report_write_csv, &len);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	assert_int_equal(lines, 1 + 40 * 2);
	assert_non_null(strstr(text, "\"<b>&\"\"x"));
	free(text);
	text = capture(r, rt_report_write_text, &len);
	assert_non_null(strstr(text, "OUTLIER"));
	assert_non_null(strstr(text, "recommended mlx5_0/1 send rc"));
	free(text);
	assert_int_equal(rt_report_render_html(r, &page, &len), 0);
	assert_int_equal(strlen(page), len);
	assert_non_null(strstr(page, "<svg"));
	assert_null(strstr(page, "<script"));
	assert_null(strstr(page, "src="));
	assert_null(strstr(page, "<b>&"));
	assert_non_null(strstr(page, "&lt;b&gt;&amp;&quot;x"));
	free(page);
	rt_report_free(r);
	fg_free(v, n);
}

/* rp_stat_compute (its own sort, the MAD from a merge instead of a second sort) against the textbook definition:
 * qsort, interpolated quantiles, the sorted absolute deviations' median. Exactly equal, on arrays with many repeats,
 * sorted, reversed, constant and random, of lengths 0..3000. */
static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double ref_quantile(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;

	return i + 1 < n ? v[i] * (1 - (pos - (double)i)) + v[i + 1] * (pos - (double)i) : v[n - 1];
}

static void test_stat_compute(void **state)
{
	static const size_t lens[] = { 0, 1, 2, 3, 16, 17, 18, 101, 1000, 3000 };
	unsigned seed = 12345;

	(void)state;
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (int kind = 0; kind < 6; kind++) {
			size_t n = lens[li];
			double *v = malloc((n + 1) * sizeof(*v)), *ref = malloc((n + 1) * sizeof(*v)),
			       *dev = malloc((n + 1) * sizeof(*v));
			struct rp_stat st;

			assert_non_null(v);
			assert_non_null(ref);
			assert_non_null(dev);
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				switch (kind) {
				case 0: v[i] = (double)((seed >> 16) % 5) * 64; break;	     /* few distinct values */
				case 1: v[i] = (double)(seed >> 8) / 3.0; break;	     /* all distinct */
				case 2: v[i] = (double)i; break;			     /* sorted */
				case 3: v[i] = (double)(n - i); break;			     /* reversed */
				case 4: v[i] = 7.5; break;				     /* constant */
				default: v[i] = (double)((seed >> 16) % 100) - 50.25; break; /* negatives, repeats */
				}
				ref[i] = v[i];
			}
			rp_stat_compute(v, n, &st);
			assert_int_equal(st.n, n);
			if (!n) {
				assert_true(isnan(st.median) && isnan(st.mad));
				goto next;
			}
			qsort(ref, n, sizeof(*ref), cmp_dbl);
			for (size_t i = 0; i < n; i++)
				assert_true(v[i] == ref[i]); /* sorted in place */
			assert_true(st.median == ref_quantile(ref, n, 0.5));
			assert_true(st.p10 == ref_quantile(ref, n, 0.1));
			assert_true(st.p90 == ref_quantile(ref, n, 0.9));
			assert_true(st.min == ref[0] && st.max == ref[n - 1]);
			for (size_t i = 0; i < n; i++)
				dev[i] = fabs(ref[i] - st.median);
			qsort(dev, n, sizeof(*dev), cmp_dbl);
			if (st.mad != ref_quantile(dev, n, 0.5))
				fail_msg("kind %d n %zu: mad %.17g, expected %.17g", kind, n, st.mad,
					 ref_quantile(dev, n, 0.5));
		next:
			free(v);
			free(ref);
			free(dev);
		}
	}
}

/* The JSON writer streams the document itself: byte for byte what jansson's json_dumpf(JSON_INDENT(2)) makes of the
 * parsed result (escapes of control characters, quotes and backslashes, UTF-8, reals from a store's runs, empty
 * arrays), plus the final newline. */
static void test_json_like_jansson(void **state)
{
	struct fg_opts o = { .seed = 9,
			     .groups = 2,
			     .nodes_per_group = 12,
			     .outliers_per_group = 1,
			     .now = NOW,
			     .with_hardware = true,
			     .entries_per_node = 2 };
	struct rt_report_opts ro = { .now = NOW };
	char d[] = "/tmp/rtune-report-json.XXXXXX", path[160], cmd[200];
	struct rt_report *r = NULL;
	struct rt_error err;
	struct fg_node *v;
	json_error_t jerr;
	json_t *doc;
	size_t n, len;
	char *text, *again;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	{
		/* a hostname with a tab, a control character, a quote, a backslash and non-ASCII text (as JSON escapes) */
		static const char host[] = "\\t\\u0001\\\"\\\\\xc3\xa9";
		char *p = strstr(v[2].json, v[2].hostname), *nd = malloc(v[2].len + sizeof(host));
		size_t at = (size_t)(p - v[2].json), hl = strlen(v[2].hostname);

		assert_non_null(nd);
		memcpy(nd, v[2].json, at);
		memcpy(nd + at, host, sizeof(host) - 1);
		memcpy(nd + at + sizeof(host) - 1, p + hl, v[2].len - at - hl + 1);
		free(v[2].json);
		v[2].json = nd;
		v[2].len = strlen(nd);
	}
	assert_non_null(mkdtemp(d));
	snprintf(path, sizeof(path), "%s/fleet.db", d);
	assert_int_equal(fg_write_store(path, "rack", 6, true, true, NOW), 0);
	assert_int_equal(rt_report_create(&ro, &r), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rt_report_add_json_text(r, v[i].hostname, v[i].json, v[i].len), 1);
	assert_int_equal(rt_report_add_path(r, path), 6);
	assert_int_equal(rt_report_add_path(r, "/nonexistent/\"quoted\"\x01"), 0);
	assert_int_equal(rt_report_analyze(r, &err), 0);
	assert_true(rt_report_drift_count(r) > 0);
	text = capture(r, rt_report_write_json, &len);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		fail_msg("not JSON: line %d: %s", jerr.line, jerr.text);
	again = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	assert_non_null(again);
	assert_int_equal(len, strlen(again) + 1);
	assert_memory_equal(text, again, len - 1);
	assert_int_equal(text[len - 1], '\n');
	assert_non_null(strstr(text, "\\t\\u0001\\\"\\\\\xc3\xa9"));
	free(again);
	json_decref(doc);
	free(text);
	rt_report_free(r);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

/* A directory of many files goes through the worker threads: the same nodes, groups and outliers as the same
 * documents added one by one; a file name that is not UTF-8 still gives valid JSON (U+FFFD) with its node; a
 * document larger than the first read (padded with whitespace) is read whole. */
static void test_directory_threads(void **state)
{
	struct fg_opts o = { .seed = 21,
			     .groups = 3,
			     .nodes_per_group = 40,
			     .outliers_per_group = 2,
			     .now = NOW,
			     .with_hardware = true,
			     .entries_per_node = 2 };
	struct rt_report_opts ro = { .now = NOW };
	char d[] = "/tmp/rtune-report-dir.XXXXXX", cmd[200];
	struct rt_report *r = NULL, *ref;
	struct rt_error err;
	struct fg_node *v;
	json_error_t jerr;
	json_t *doc, *groups;
	size_t n, len, in_groups = 0;
	char *text, *big;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	assert_non_null(mkdtemp(d));
	assert_int_equal(fg_write_dir(d, v, n), 0);
	/* node 5 again, under a name that is not UTF-8 (same node: merged), and node 6 padded past 64 KiB */
	write_file(d, "bad-\xff-name.json", v[5].json, v[5].len);
	big = malloc(v[6].len + 100000);
	assert_non_null(big);
	big[0] = '{';
	memset(big + 1, ' ', 99999);
	memcpy(big + 100000, v[6].json + 1, v[6].len - 1);
	write_file(d, "g0/padded.json", big, v[6].len + 99999);
	free(big);
	assert_int_equal(rt_report_create(&ro, &r), 0);
	assert_int_equal(rt_report_add_path(r, d), (long)n + 2);
	assert_int_equal(rt_report_problem_count(r), 0);
	assert_int_equal(rt_report_node_count(r), n);
	assert_int_equal(rt_report_analyze(r, &err), 0);
	ref = report_of(v, n);
	assert_int_equal(rt_report_group_count(r), rt_report_group_count(ref));
	assert_int_equal(rt_report_outlier_count(r), rt_report_outlier_count(ref));
	for (size_t i = 0; i < rt_report_outlier_count(r); i++) {
		struct rt_report_outlier_view a, b;

		assert_true(rt_report_outlier_at(r, i, &a));
		assert_true(rt_report_outlier_at(ref, i, &b));
		assert_string_equal(a.hostname, b.hostname);
		assert_string_equal(a.metric, b.metric);
		assert_string_equal(a.causes, b.causes);
		assert_true(a.value == b.value && a.robust_z == b.robust_z);
	}
	for (size_t i = 0; i < n; i++)
		assert_string_equal(rt_report_group_of(r, v[i].hostname), rt_report_group_of(ref, v[i].hostname));
	text = capture(r, rt_report_write_json, &len);
	doc = json_loadb(text, len, 0, &jerr);
	if (!doc)
		fail_msg("not JSON: line %d: %s", jerr.line, jerr.text);
	groups = json_object_get(doc, "groups");
	for (size_t i = 0; i < json_array_size(groups); i++)
		in_groups += json_array_size(json_object_get(json_array_get(groups, i), "nodes"));
	assert_int_equal(in_groups, n);
	assert_non_null(strstr(text, "bad-\xef\xbf\xbd-name.json"));
	json_decref(doc);
	free(text);
	rt_report_free(ref);
	rt_report_free(r);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

/* A document whose jansson tree outgrows the parse arena's chunk (an unknown field holding a 200,000-element array)
 * is read, and so are the documents after it, on the calling thread and through the worker threads. */
static void test_big_document(void **state)
{
	struct fg_opts o = {
		.seed = 4, .groups = 1, .nodes_per_group = 70, .now = NOW, .with_hardware = true, .entries_per_node = 1
	};
	char d[] = "/tmp/rtune-report-big.XXXXXX", cmd[200];
	struct rt_report *r = NULL;
	struct fg_node *v;
	size_t n, len;
	char *big, *p;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	len = strlen("{\"padding\":[") + 200000 * 2 + v[0].len;
	big = malloc(len + 1);
	assert_non_null(big);
	p = big + sprintf(big, "{\"padding\":[");
	for (int i = 0; i < 200000; i++) {
		*p++ = '7';
		*p++ = i + 1 < 200000 ? ',' : ']';
	}
	*p++ = ',';
	memcpy(p, v[0].json + 1, v[0].len); /* the rest of the document, its NUL included */
	len = strlen(big);
	assert_int_equal(rt_report_create(NULL, &r), 0);
	assert_int_equal(rt_report_add_json_text(r, "big", big, len), 1);
	assert_int_equal(rt_report_add_json_text(r, v[1].hostname, v[1].json, v[1].len), 1);
	rt_report_free(r);
	assert_non_null(mkdtemp(d));
	assert_int_equal(fg_write_dir(d, v, n), 0);
	write_file(d, "g0/big.json", big, len);
	assert_int_equal(rt_report_create(NULL, &r), 0);
	assert_int_equal(rt_report_add_path(r, d), (long)n + 1);
	assert_int_equal(rt_report_node_count(r), n); /* big.json is node 0 again */
	assert_int_equal(rt_report_problem_count(r), 0);
	rt_report_free(r);
	free(big);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted_outliers),
		cmocka_unit_test(test_every_cause_in_one_group),
		cmocka_unit_test(test_clean_fleet),
		cmocka_unit_test(test_signature_only),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_store_input),
		cmocka_unit_test(test_dedupe),
		cmocka_unit_test(test_identity_files_and_store),
		cmocka_unit_test(test_writers),
		cmocka_unit_test(test_stat_compute),
		cmocka_unit_test(test_json_like_jansson),
		cmocka_unit_test(test_directory_threads),
		cmocka_unit_test(test_big_document),
		cmocka_unit_test(test_store_bulk_parts),
		cmocka_unit_test(test_analyze_parallel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
