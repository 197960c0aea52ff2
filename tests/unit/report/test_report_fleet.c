// SPDX-License-Identifier: MIT
/*
 * The fleet report as an operator reads it (issue 19), on fleets of the realistic shape (fg_realistic: 3-4 entries
 * per device, 1-2 devices, indented, measured evidence, a firmware upgrade under way, near misses within noise):
 * outliers counted and listed per node; the profile's 1.3 "measured" evidence (librtune parses it and still loads
 * 1.0-1.2, the store writes it from its runs and keeps an imported one, the report uses it from files and stores);
 * stale nodes and devices without a profile listed; "placement unknown" instead of "unexplained"; the report JSON 2.0
 * parsed field by field, nodes named, the real generation time; deployable group profiles that librtune loads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet_gen.h"
#include "lib/profile_internal.h"
#include "report_internal.h"
#include "report_test.h"
#include "rt_store.h"

static struct fg_opts realistic(uint64_t seed, int groups, int nodes, int outliers)
{
	struct fg_opts o = {
		.seed = seed, .groups = groups, .nodes_per_group = nodes, .outliers_per_group = outliers, .now = NOW
	};

	fg_realistic(&o);
	return o;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Item 1: a node with several outlying entries is one outlier node, listed once with its causes and entries; no
 * clean node (firmware upgrade under way, near misses) is flagged. */
static void test_outliers_per_node(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct fg_opts o = realistic(seed, 4, 40 + (int)seed, 3);
		struct fg_node *v;
		size_t n, planted = 0, len;
		struct rt_report *r;
		char *text, line[96];

		assert_int_equal(fg_build(&o, &v, &n), 0);
		r = report_of(v, n);
		text = capture(r, rt_report_write_text, &len);
		for (size_t i = 0; i < n; i++) {
			snprintf(line, sizeof(line), "OUTLIER NODE %s:", v[i].hostname);
			if (v[i].cause == FG_NONE) {
				if (strstr(text, line))
					fail_msg("seed %llu: clean node %s (trait %d) flagged",
						 (unsigned long long)seed, v[i].hostname, v[i].trait);
				continue;
			}
			planted++;
			assert_int_equal(count_of(text, line), 1);
			/* its planted cause leads the node's line */
			snprintf(line, sizeof(line), "OUTLIER NODE %s: %s", v[i].hostname, fg_cause_code(v[i].cause));
			if (!strstr(text, line))
				fail_msg("seed %llu: %s not led by %s", (unsigned long long)seed, v[i].hostname,
					 fg_cause_code(v[i].cause));
		}
		/* counted per node: every planted node has 3-8 outlying entries, the count is of nodes */
		assert_int_equal(rt_report_outlier_node_count(r), planted);
		assert_true(rt_report_outlier_count(r) >= 3 * planted);
		for (size_t i = 0; i < rt_report_outlier_node_count(r); i++) {
			size_t entries = 0;

			assert_non_null(rt_report_outlier_node_at(r, i, &entries));
			assert_true(entries >= 1 && entries <= 8);
		}
		snprintf(line, sizeof(line), "; %zu outlier node%s (%zu outlying entr", planted,
			 planted == 1 ? "" : "s", rt_report_outlier_count(r));
		assert_non_null(strstr(text, line));
		free(text);
		rt_report_free(r);
		fg_free(v, n);
	}
}

/* ---- item 2: the evidence block ------------------------------------------------------------------------------- */

#define DOC_HEAD                                                                                   \
	"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"%s\"}, \"rtune_version\": "     \
	"\"0.1.0\", \"generated_at\": \"2026-05-01T00:00:00Z\", \"node\": {\"hostname\": \"h\"},"  \
	" \"entries\": [{\"device\": \"mlx5_0\", \"port\": 1, \"opcode\": \"send\", \"qp_type\": " \
	"\"rc\", \"inline_threshold\": 128, \"max_inline_data\": 128, \"signal_interval\": 16, "   \
	"\"sq_depth\": 256, \"cq_depth\": 256, \"confidence\": \"high\", \"measured_at\": "        \
	"\"2026-05-01T00:00:00Z\", \"run_id\": \"0a4b3f8e-1d2c-4e5f-8a9b-0c1d2e3f4a5b\"%s}]}"

static int parse_doc(const char *ver, const char *extra, struct rt_profile **p, struct rt_error *err)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), DOC_HEAD, ver, extra);
	return rt_profile_parse(doc, strlen(doc), p, err);
}

static void test_profile_measured_parse(void **state)
{
	static const char *const old[] = { "1.0", "1.1", "1.2" };
	struct rt_profile *p = NULL;
	const struct rt_profile_entry *e;
	struct rt_error err;

	(void)state;
	/* 1.0-1.2 documents still load, with no evidence */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(parse_doc(old[i], "", &p, &err), 0);
		assert_false(rt_profile_entry_at(p, 0)->has_measured);
		assert_int_equal(rt_profile_group_nodes(p), 0);
		rt_profile_free(p);
	}
	assert_int_equal(
		parse_doc("1.3",
			  ", \"measured\": {\"latency_kind\": \"pingpong\", \"msg_bytes\": 128, "
			  "\"latency_inline_ns\": 1500.5, \"latency_noinline_ns\": 1712.0, \"mops_at_n\": 9.5, "
			  "\"mops_at_n1\": 5.25, \"noise_pct\": 1.8}",
			  &p, &err),
		0);
	e = rt_profile_entry_at(p, 0);
	assert_true(e->has_measured);
	assert_string_equal(e->lat_kind, "pingpong");
	assert_int_equal(e->lat_bytes, 128);
	assert_true(e->lat_inline_ns == 1500.5 && e->lat_noinline_ns == 1712.0);
	assert_true(e->mops_at_n == 9.5 && e->mops_at_n1 == 5.25 && e->noise_pct == 1.8);
	rt_profile_free(p);
	/* a figure the run did not measure is null: NAN */
	assert_int_equal(
		parse_doc("1.3", ", \"measured\": {\"latency_kind\": \"post_cqe\", \"mops_at_n1\": null}", &p, &err),
		0);
	e = rt_profile_entry_at(p, 0);
	assert_true(e->has_measured && isnan(e->mops_at_n1) && isnan(e->lat_inline_ns));
	rt_profile_free(p);
	/* bad values are named */
	assert_int_equal(parse_doc("1.3", ", \"measured\": {\"latency_kind\": \"guess\"}", &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "entries[0].measured.latency_kind"));
	assert_int_equal(parse_doc("1.3", ", \"measured\": {\"mops_at_n\": -1}", &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "measured.mops_at_n"));
	assert_int_equal(parse_doc("1.3", ", \"measured\": [1]", &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "measured"));
}

/* The store writes the evidence from the run (fg_write_store: latency 1500 + 0.3 s, inline 200 ns faster up to the
 * threshold, CI +-5 ns; rate 10 Mops from N = 16, 5.3125 at N = 1), keeps an imported one, and the report shows the
 * same latency and rate from the exported file, from the store the run is in, and from a fleet store it was imported
 * into. */
static void test_evidence_store_export_import(void **state)
{
	char d[] = "/tmp/rtune-report-ev.XXXXXX", db[128], out[128], fleet[128], cmd[160];
	struct rt_store *st = NULL, *fs = NULL;
	struct rt_error err;
	struct rt_profile *p = NULL;
	const struct rt_profile_entry *e;
	char *text = NULL;
	size_t len = 0, added = 0;
	double lat[3], mops[3];

	(void)state;
	assert_non_null(mkdtemp(d));
	snprintf(db, sizeof(db), "%s/node.db", d);
	snprintf(out, sizeof(out), "%s/node.json", d);
	snprintf(fleet, sizeof(fleet), "%s/fleet.db", d);
	assert_int_equal(fg_write_store(db, "solo", 1, false, false, NOW), 0);
	assert_int_equal(rt_store_open(db, &st, &err), 0);
	assert_int_equal(rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err), 0);
	rt_store_close(st);
	assert_int_equal(rt_profile_load(out, &p, &err), 0);
	assert_int_equal(rt_profile_schema_minor(p), RT_PROFILE_SCHEMA_MINOR);
	e = rt_profile_entry_at(p, 0);
	assert_true(e->has_measured);
	assert_string_equal(e->lat_kind, "pingpong");
	/* threshold 256: the largest measured size <= 256 is 256 */
	assert_int_equal(e->lat_bytes, 256);
	assert_true(fabs(e->lat_inline_ns - (1500 + 256 * 0.3 - 200)) < 1e-6);
	assert_true(fabs(e->lat_noinline_ns - (1500 + 256 * 0.3)) < 1e-6);
	assert_true(fabs(e->mops_at_n - 10.0) < 1e-9);
	assert_true(fabs(e->mops_at_n1 - 10.0 * (0.5 + 0.5 / 16)) < 1e-9);
	assert_true(e->noise_pct > 0.1 && e->noise_pct < 0.5); /* 5 ns of ~1500 */
	rt_profile_free(p);
	/* the report: from the file, from the store, from a fleet store the file was imported into */
	assert_int_equal(rt_profile_read_file(out, &text, &len, &err), 0);
	assert_int_equal(rt_store_open(fleet, &fs, &err), 0);
	assert_int_equal(rt_store_import_text(fs, out, text, len, &added, NULL, &err), 0);
	assert_int_equal(added, 1);
	rt_store_close(fs);
	for (int k = 0; k < 3; k++) {
		struct rt_report *r = NULL;

		assert_int_equal(rt_report_create(NULL, &r), 0);
		assert_int_equal(rt_report_add_path(r, k == 0 ? out : k == 1 ? db : fleet), 1);
		assert_int_equal(rt_report_analyze(r, &err), 0);
		assert_int_equal(r->groups[0].slots[0].st[RP_M_LAT].n, 1);
		lat[k] = r->groups[0].slots[0].st[RP_M_LAT].median;
		mops[k] = r->groups[0].slots[0].st[RP_M_MOPS].median;
		assert_true(fabs(r->nodes[0].entries[0].mops_n1 - 5.3125) < 1e-3);
		rt_report_free(r);
	}
	assert_true(fabs(lat[0] - 1376.8) < 0.01 && fabs(lat[1] - lat[0]) < 0.01 && fabs(lat[2] - lat[0]) < 0.01);
	assert_true(fabs(mops[0] - 10) < 1e-3 && mops[1] == mops[0] && mops[2] == mops[0]);
	free(text);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

/* A remote-NUMA calibration that did not move the threshold (+15 % latency) is seen from exported files through the
 * evidence; near misses (+6 % latency, threshold +25 %) within the noise are not. */
static void test_evidence_remote_latency(void **state)
{
	(void)state;
	for (uint64_t seed = 30; seed < 40; seed++) {
		struct fg_opts o = realistic(seed, 2, 60, 0);
		struct fg_node *v;
		struct rt_report *r;
		size_t n, remote = 0;

		o.remote_lat_nodes = 2;
		o.near_miss_pct = 20;
		assert_int_equal(fg_build(&o, &v, &n), 0);
		r = report_of(v, n);
		for (size_t i = 0; i < n; i++) {
			bool flagged = false;

			for (size_t k = 0; k < rt_report_outlier_count(r); k++) {
				struct rt_report_outlier_view ov;

				rt_report_outlier_at(r, k, &ov);
				if (strcmp(ov.hostname, v[i].hostname))
					continue;
				flagged = true;
				assert_string_equal(ov.metric, "latency_ns");
				assert_string_equal(ov.cause, "remote_numa_calibration");
			}
			if (v[i].trait == FG_T_REMOTE_LAT) {
				remote++;
				if (!flagged)
					fail_msg("seed %llu: remote-NUMA node %s (+15 %% latency) not flagged",
						 (unsigned long long)seed, v[i].hostname);
			} else if (flagged) {
				fail_msg("seed %llu: node %s (trait %d) flagged", (unsigned long long)seed,
					 v[i].hostname, v[i].trait);
			}
		}
		assert_int_equal(remote, 4);
		rt_report_free(r);
		fg_free(v, n);
	}
}

/* Item 3: stale nodes with ordinary values, and a device without a profile, get their own section. */
static void test_stale_and_missing(void **state)
{
	struct fg_opts o = realistic(50, 4, 40, 1);
	struct fg_node *v;
	struct rt_report *r;
	size_t n, len, stale = 0, missing = 0;
	char *text, *page, line[128];
	json_t *doc, *arr;

	(void)state;
	o.stale_ordinary = 2;
	o.missing_device = 1;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	text = capture(r, rt_report_write_text, &len);
	for (size_t i = 0; i < n; i++) {
		const char *dev = NULL;
		bool listed = false;

		for (size_t k = 0; k < rt_report_stale_count(r); k++)
			if (!strcmp(rt_report_stale_at(r, k, &dev), v[i].hostname))
				listed = true;
		if (v[i].trait == FG_T_STALE) {
			stale++;
			snprintf(line, sizeof(line), "STALE %s: newest profile measured", v[i].hostname);
			assert_non_null(strstr(text, line));
			assert_true(listed);
		} else if (v[i].trait == FG_T_MISSING_DEV) {
			missing++;
			snprintf(line, sizeof(line), "NO PROFILE %s: device mlx5_1 has no profile entry",
				 v[i].hostname);
			assert_non_null(strstr(text, line));
			assert_true(listed);
		} else if (v[i].cause != FG_STALE) {
			/* a fresh node is not listed (the planted stale outliers, 400 days old, are) */
			assert_false(listed);
		}
	}
	assert_int_equal(stale, 8);
	assert_int_equal(missing, 1);
	free(text);
	text = capture(r, rt_report_write_json, &len);
	doc = json_loadb(text, len, 0, NULL);
	assert_non_null(doc);
	arr = json_object_get(doc, "stale");
	assert_int_equal(json_array_size(arr), rt_report_stale_count(r));
	json_decref(doc);
	free(text);
	assert_int_equal(rt_report_render_html(r, &page, &len), 0);
	assert_non_null(strstr(page, "<h2>Stale or missing profiles</h2>"));
	assert_non_null(strstr(page, "no profile for device mlx5_1"));
	free(page);
	rt_report_free(r);
	fg_free(v, n);
}

/* Item 4: without calibration facts a planted remote-NUMA node is "placement unknown", never "unexplained". */
static void test_placement_unknown(void **state)
{
	struct fg_opts o = realistic(60, 2, 40, 1);
	struct fg_node *v;
	struct rt_report *r;
	size_t n, seen = 0;

	(void)state;
	o.no_calibration = true;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	for (size_t k = 0; k < rt_report_outlier_count(r); k++) {
		struct rt_report_outlier_view ov;

		rt_report_outlier_at(r, k, &ov);
		assert_string_not_equal(ov.cause, "unexplained");
		if (!strcmp(ov.cause, "placement_unknown")) {
			assert_non_null(strstr(ov.evidence, "placement unknown"));
			seen++;
		}
	}
	/* group 0's planted outlier is remote_numa (fleet_gen cycles causes from the group index) */
	assert_true(seen > 0);
	rt_report_free(r);
	fg_free(v, n);
}

/* Item 5: the JSON 2.0 report parsed field by field; nodes named; the real generation time; singular counts. */
static void test_json_v2_every_field(void **state)
{
	static const char *const top[] = { "schema",	 "rtune_version", "generated_at",	"judged_at",
					   "stale_days", "node_count",	  "outlier_node_count", "outlier_entry_count",
					   "problems",	 "groups",	  "outliers",		"outlier_nodes",
					   "stale",	 "drift" };
	static const char *const grp[] = { "id",    "label", "from_hardware", "node_count", "remote_numa_calibrations",
					   "slots", "nodes" };
	static const char *const slot[] = { "device",	       "port",	     "opcode",
					    "qp_type",	       "entries",    "inline_threshold",
					    "signal_interval", "latency_ns", "mops",
					    "recommended" };
	static const char *const outl[] = { "group",   "hostname", "device",   "port",	       "opcode",
					    "qp_type", "metric",   "value",    "group_median", "robust_z",
					    "cause",   "causes",   "evidence", "measured" };
	static const char *const meas[] = { "latency_kind", "msg_bytes",  "latency_inline_ns", "latency_noinline_ns",
					    "mops_at_n",    "mops_at_n1", "noise_pct" };
	static const char *const onode[] = { "group", "hostname", "source", "causes", "entries" };
	static const char *const stale[] = { "hostname",	   "group",   "source", "kind", "device",
					     "newest_measured_at", "age_days" };
	struct fg_opts o = realistic(70, 2, 30, 2);
	struct fg_node *v;
	struct rt_report *r;
	size_t n, len, i;
	char *text, *page;
	json_t *doc, *x;

	(void)state;
	o.stale_ordinary = 1;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	rp_problem(r, "%s", "/fleet/bad.json: line 1 column 1: invalid");
	text = capture(r, rt_report_write_json, &len);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(doc);
	assert_int_equal(json_object_size(doc), sizeof(top) / sizeof(top[0]));
	for (i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		assert_non_null(json_object_get(doc, top[i]));
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "schema"), "version")), "2.0");
	/* --now is when ages are judged from, not when the report was made */
	assert_string_equal(json_string_value(json_object_get(doc, "judged_at")), "2026-05-28T20:26:40Z");
	assert_string_not_equal(json_string_value(json_object_get(doc, "generated_at")), "2026-05-28T20:26:40Z");
	assert_int_equal(json_integer_value(json_object_get(doc, "outlier_node_count")), 4);
	assert_int_equal(json_integer_value(json_object_get(doc, "outlier_entry_count")),
			 json_array_size(json_object_get(doc, "outliers")));
	json_array_foreach(json_object_get(doc, "groups"), i, x)
	{
		json_t *s;
		size_t k;

		assert_int_equal(json_object_size(x), sizeof(grp) / sizeof(grp[0]));
		for (size_t f = 0; f < sizeof(grp) / sizeof(grp[0]); f++)
			assert_non_null(json_object_get(x, grp[f]));
		json_array_foreach(json_object_get(x, "slots"), k, s)
		{
			assert_int_equal(json_object_size(s), sizeof(slot) / sizeof(slot[0]));
			for (size_t f = 0; f < sizeof(slot) / sizeof(slot[0]); f++)
				assert_non_null(json_object_get(s, slot[f]));
			/* the evidence in the files gives latency and rate */
			assert_true(json_is_object(json_object_get(s, "latency_ns")));
			assert_true(json_is_object(json_object_get(s, "mops")));
		}
	}
	json_array_foreach(json_object_get(doc, "outliers"), i, x)
	{
		json_t *m = json_object_get(x, "measured");

		assert_int_equal(json_object_size(x), sizeof(outl) / sizeof(outl[0]));
		for (size_t f = 0; f < sizeof(outl) / sizeof(outl[0]); f++)
			assert_non_null(json_object_get(x, outl[f]));
		assert_true(json_is_array(json_object_get(x, "causes")));
		assert_string_equal(json_string_value(json_array_get(json_object_get(x, "causes"), 0)),
				    json_string_value(json_object_get(x, "cause")));
		assert_true(json_is_object(m));
		for (size_t f = 0; f < sizeof(meas) / sizeof(meas[0]); f++)
			assert_non_null(json_object_get(m, meas[f]));
	}
	json_array_foreach(json_object_get(doc, "outlier_nodes"), i, x)
	{
		assert_int_equal(json_object_size(x), sizeof(onode) / sizeof(onode[0]));
		for (size_t f = 0; f < sizeof(onode) / sizeof(onode[0]); f++)
			assert_non_null(json_object_get(x, onode[f]));
		assert_true(json_array_size(json_object_get(x, "causes")) >= 1);
		assert_true(json_array_size(
				    json_object_get(json_array_get(json_object_get(x, "entries"), 0), "metrics")) >= 1);
	}
	assert_true(json_array_size(json_object_get(doc, "stale")) >= 2);
	json_array_foreach(json_object_get(doc, "stale"), i, x)
	{
		assert_int_equal(json_object_size(x), sizeof(stale) / sizeof(stale[0]));
		for (size_t f = 0; f < sizeof(stale) / sizeof(stale[0]); f++)
			assert_non_null(json_object_get(x, stale[f]));
	}
	json_decref(doc);
	free(text);
	/* the text names the nodes it counts */
	text = capture(r, rt_report_write_text, &len);
	for (i = 0; i < n; i++)
		if (v[i].cause == FG_REMOTE_NUMA) {
			char want[128];

			snprintf(want, sizeof(want), "calibrated from a CPU remote to the device's NUMA node: %s",
				 v[i].hostname);
			assert_non_null(strstr(text, want));
		}
	assert_non_null(strstr(text, "; 1 input problem\n"));
	free(text);
	assert_int_equal(rt_report_render_html(r, &page, &len), 0);
	assert_non_null(strstr(page, "1 input problem."));
	assert_null(strstr(page, "1 input problems"));
	assert_non_null(strstr(page, "ages judged as of 2026-05-28T20:26:40Z"));
	free(page);
	rt_report_free(r);
	fg_free(v, n);
}

/* Item 6: group profiles librtune loads, marked as such, one per class; never replacing what is not a regular file;
 * not read back by the report as nodes. */
static void test_group_profiles(void **state)
{
	char d[] = "/tmp/rtune-report-gp.XXXXXX", dir[128], path[256], cmd[160];
	struct fg_opts o = realistic(80, 4, 30, 2);
	struct fg_node *v;
	struct rt_report *r, *r2 = NULL;
	struct rt_error err;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(d));
	snprintf(dir, sizeof(dir), "%s/groups", d);
	assert_int_equal(fg_build(&o, &v, &n), 0);
	r = report_of(v, n);
	assert_int_equal(rt_report_write_group_profiles(r, dir, &err), 4);
	for (size_t gi = 0; gi < rt_report_group_count(r); gi++) {
		const struct rp_group *g = &r->groups[gi];
		struct rt_profile *p = NULL;

		snprintf(path, sizeof(path), "%s/%s.json", dir, g->id);
		path[strlen(dir) + 3] = '-'; /* "hw:" -> "hw-" */
		assert_int_equal(rt_profile_load(path, &p, &err), 0);
		assert_int_equal(rt_profile_group_nodes(p), g->n_nodes);
		assert_int_equal(rt_profile_entry_count(p), g->n_slots);
		for (size_t si = 0; si < g->n_slots; si++) {
			const struct rp_slot *s = &g->slots[si];
			const struct rt_profile_entry *e =
				rt_profile_select(p, s->device, s->port, (enum rt_profile_opcode)s->opcode,
						  (enum rt_profile_qp_type)s->qp_type);

			assert_non_null(e);
			assert_int_equal(e->inline_threshold, s->rec_threshold);
			assert_int_equal(e->signal_interval, s->rec_interval);
			assert_int_equal(e->sq_depth, s->rec_sq_depth);
		}
		rt_profile_free(p);
	}
	/* a group profile among the inputs is not a node */
	assert_int_equal(rt_report_create(NULL, &r2), 0);
	assert_int_equal(rt_report_add_path(r2, dir), 0);
	assert_int_equal(rt_report_problem_count(r2), 4);
	assert_non_null(strstr(rt_report_problem_at(r2, 0), "a group profile"));
	rt_report_free(r2);
	/* what is not a regular file is not replaced */
	snprintf(path, sizeof(path), "%s/%s.json", dir, r->groups[0].id);
	path[strlen(dir) + 3] = '-';
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_true(rt_report_write_group_profiles(r, dir, &err) < 0);
	{
		struct stat sb;

		assert_int_equal(stat(path, &sb), 0);
		assert_true(S_ISDIR(sb.st_mode));
	}
	/* a file where the directory should be */
	snprintf(path, sizeof(path), "%s/file", d);
	{
		int fd = open(path, O_WRONLY | O_CREAT, 0644);

		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(rt_report_write_group_profiles(r, path, &err), -ENOTDIR);
	assert_non_null(strstr(err.text, "not a directory"));
	rt_report_free(r);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

/* Item 7: the realistic shape the bench measures: 3-4 entries per device, 1-2 devices, indented, evidence, ~5-12 KB
 * per document; and the fleet-store workflow (import once, report from the store) gives the report the files give. */
static void test_realistic_shape_and_fleet_store(void **state)
{
	char d[] = "/tmp/rtune-report-fs.XXXXXX", db[128], cmd[160];
	struct fg_opts o = realistic(90, 4, 70, 2);
	struct fg_node *v;
	struct rt_report *rf, *rs = NULL;
	struct rt_error err;
	size_t n, bytes = 0;

	(void)state;
	assert_int_equal(fg_build(&o, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct rt_profile *p = NULL;
		size_t ne, per_dev;

		assert_int_equal(rt_profile_parse(v[i].json, v[i].len, &p, &err), 0);
		ne = rt_profile_entry_count(p);
		per_dev = v[i].group % 4 == 3 && v[i].trait != FG_T_MISSING_DEV ? ne / 2 : ne;
		assert_true(per_dev >= 3 && per_dev <= 4);
		assert_true(rt_profile_entry_at(p, 0)->has_measured);
		rt_profile_free(p);
		assert_non_null(strstr(v[i].json, "\n  \"entries\": [\n"));
		bytes += v[i].len;
	}
	assert_true(n > 0);
	assert_true(n > 0 && bytes / n > 4500 && bytes / n < 9000);
	rf = report_of(v, n);
	/* import once into a fleet store (the bulk read path: >= 256 nodes), report from it */
	assert_non_null(mkdtemp(d));
	snprintf(db, sizeof(db), "%s/fleet.db", d);
	assert_int_equal(fg_import_store(db, v, n), 0);
	assert_int_equal(rt_report_create(&(struct rt_report_opts){ .now = NOW }, &rs), 0);
	assert_int_equal(rt_report_add_path(rs, db), (long)n);
	assert_int_equal(rt_report_analyze(rs, &err), 0);
	assert_int_equal(rt_report_group_count(rs), rt_report_group_count(rf));
	assert_int_equal(rt_report_outlier_node_count(rs), rt_report_outlier_node_count(rf));
	assert_int_equal(rt_report_outlier_count(rs), rt_report_outlier_count(rf));
	for (size_t gi = 0; gi < rt_report_group_count(rf); gi++) {
		const struct rp_slot *a = &rf->groups[gi].slots[0];
		const struct rp_slot *b = NULL;

		for (size_t gj = 0; gj < rt_report_group_count(rs); gj++)
			if (!strcmp(rs->groups[gj].id, rf->groups[gi].id))
				b = &rs->groups[gj].slots[0];
		assert_non_null(b);
		if (!b)
			return;
		assert_int_equal(b->st[RP_M_LAT].n, a->st[RP_M_LAT].n);
		assert_true(fabs(b->st[RP_M_LAT].median - a->st[RP_M_LAT].median) < 0.01);
		assert_true(fabs(b->st[RP_M_MOPS].median - a->st[RP_M_MOPS].median) < 1e-3);
	}
	rt_report_free(rf);
	rt_report_free(rs);
	fg_free(v, n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outliers_per_node),
		cmocka_unit_test(test_profile_measured_parse),
		cmocka_unit_test(test_evidence_store_export_import),
		cmocka_unit_test(test_evidence_remote_latency),
		cmocka_unit_test(test_stale_and_missing),
		cmocka_unit_test(test_placement_unknown),
		cmocka_unit_test(test_json_v2_every_field),
		cmocka_unit_test(test_group_profiles),
		cmocka_unit_test(test_realistic_shape_and_fleet_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
