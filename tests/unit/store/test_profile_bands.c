// SPDX-License-Identifier: MIT
/*
 * Unit tests of the profile's schema 1.4 additions (issue 16, items 2 and 14): `rtune export` of a store whose run has
 * signal bands and skipped measurements carries each entry's bands and the document's skips; importing that export
 * into a fresh store and exporting again gives the same bands and skips; librtune's rt_profile_signal_interval_for()
 * answers the band's N for a large message and for a post list and the entry's N otherwise, and falls back to the
 * entry's N for a 1.3 document without bands; an entry whose N the writer replaced (a pin) carries no bands. The
 * concurrency band (issue 16 item 14: QPs x threads) is exported with its qps and threads, kept by import, and answered
 * by rt_profile_signal_interval_for_load() for an application of several QPs; a band kind this librtune does not know
 * is passed over.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

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

#define REFUSED "ibv_post_send refused IBV_SEND_INLINE (Invalid argument) though the qp took max_inline_data 220"

/* A store at db with one calibration run of mlx5_0 (the engine's params.skipped: inline write/rc refused, and cq
 * moderation), its signal bands (write/rc large N 32, post list of 8 N 8, concurrency 4 QPs x 2 threads N 4; send/rc
 * large N 64) and the send/rc (N 16) and write/rc (threshold 0, N 16) entries tuned from it. */
static void fill(const char *db)
{
	struct rt_store_signal_band sb[4] = {
		{ RT_BAND_LARGE, RT_OP_WRITE, RT_QPT_RC, 4096, 65536, 1, 32, "knee", "high", 1, 1 },
		{ RT_BAND_POST_LIST, RT_OP_WRITE, RT_QPT_RC, 64, 64, 8, 8, "indifferent", "medium", 1, 1 },
		{ RT_BAND_LARGE, RT_OP_SEND, RT_QPT_RC, 4096, 65536, 1, 64, "", "", 1, 1 },
		{ RT_BAND_CONCURRENCY, RT_OP_WRITE, RT_QPT_RC, 64, 64, 1, 4, "knee", "medium", 4, 2 },
	};
	struct rt_profile_entry e[2];
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run;

	assert_int_equal(rt_store_open(db, &st, &err), 0);
	tu_run(&run, "host-a", "mlx5_0", 4, 8);
	snprintf(run.params, sizeof(run.params),
		 "{\"quick\":true,\"skipped\":[{\"what\":\"inline write/rc\",\"reason\":\"" REFUSED "\"},"
		 "{\"what\":\"cq moderation\",\"reason\":\"measured on the rc send cq\"}]}");
	assert_int_equal(rt_store_run_save(st, &run, &err), 0);
	assert_int_equal(rt_store_put_signal_bands(st, run.id, sb, 4, &err), 0);
	tu_entry(&e[0], "mlx5_0", RT_PROFILE_OP_SEND, 128, 16, run.uuid, 1764590400);
	tu_entry(&e[1], "mlx5_0", RT_PROFILE_OP_WRITE, 0, 16, run.uuid, 1764590400);
	assert_int_equal(rt_store_put_profile(st, &run.node, NULL, e, 2, NULL, &err), 0);
	rt_run_release(&run);
	rt_store_close(st);
}

static void export_to(const char *db, const char *out)
{
	struct rt_store *st = NULL;
	struct rt_error err;

	assert_int_equal(rt_store_open(db, &st, &err), 0);
	if (rt_store_export(st, NULL, RT_EXPORT_JSON, out, NULL, &err))
		fail_msg("export: %s", err.text);
	rt_store_close(st);
}

/* The entry of doc for opcode op (rc). */
static json_t *entry_of(json_t *doc, const char *op)
{
	json_t *a = json_object_get(doc, "entries");

	for (size_t i = 0; i < json_array_size(a); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(a, i), "opcode")), op))
			return json_array_get(a, i);
	fail_msg("no %s entry", op);
	return NULL;
}

static void test_export_carries_bands_and_skips(void **state)
{
	char out[1300];
	json_error_t je;
	json_t *doc, *wb, *sb, *sk, *k;

	(void)state;
	fill(path);
	snprintf(out, sizeof(out), "%s/p.json", dir);
	export_to(path, out);
	doc = json_load_file(out, 0, &je);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "schema"), "version")), "1.4");
	wb = json_object_get(entry_of(doc, "write"), "bands");
	sb = json_object_get(entry_of(doc, "send"), "bands");
	assert_int_equal(json_array_size(wb), 3);
	assert_int_equal(json_array_size(sb), 1);
	/* the store's order: by band name */
	k = json_array_get(wb, 0);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "concurrency");
	assert_int_equal(json_integer_value(json_object_get(k, "qps")), 4);
	assert_int_equal(json_integer_value(json_object_get(k, "threads")), 2);
	assert_int_equal(json_integer_value(json_object_get(k, "post_list")), 1);
	assert_int_equal(json_integer_value(json_object_get(k, "signal_interval")), 4);
	assert_null(json_object_get(json_array_get(wb, 1), "qps")); /* only a concurrency band has qps/threads */
	k = json_array_get(wb, 1);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "large");
	assert_int_equal(json_integer_value(json_object_get(k, "msg_bytes_lo")), 4096);
	assert_int_equal(json_integer_value(json_object_get(k, "msg_bytes_hi")), 65536);
	assert_int_equal(json_integer_value(json_object_get(k, "post_list")), 1);
	assert_int_equal(json_integer_value(json_object_get(k, "signal_interval")), 32);
	assert_string_equal(json_string_value(json_object_get(k, "verdict")), "knee");
	assert_string_equal(json_string_value(json_object_get(k, "confidence")), "high");
	k = json_array_get(wb, 2);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "post_list");
	assert_int_equal(json_integer_value(json_object_get(k, "post_list")), 8);
	assert_int_equal(json_integer_value(json_object_get(k, "signal_interval")), 8);
	/* a band stored without verdict and confidence: null, not "" */
	assert_true(json_is_null(json_object_get(json_array_get(sb, 0), "verdict")));
	assert_true(json_is_null(json_object_get(json_array_get(sb, 0), "confidence")));
	sk = json_object_get(doc, "skipped");
	assert_int_equal(json_array_size(sk), 2);
	k = json_array_get(sk, 0);
	assert_string_equal(json_string_value(json_object_get(k, "device")), "mlx5_0");
	assert_int_equal(json_integer_value(json_object_get(k, "port")), 1);
	assert_string_equal(json_string_value(json_object_get(k, "what")), "inline write/rc");
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "inline");
	assert_string_equal(json_string_value(json_object_get(k, "opcode")), "write");
	assert_string_equal(json_string_value(json_object_get(k, "qp_type")), "rc");
	assert_string_equal(json_string_value(json_object_get(k, "reason")), REFUSED);
	assert_non_null(json_string_value(json_object_get(k, "run_id")));
	k = json_array_get(sk, 1);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "cq_moderation");
	assert_true(json_is_null(json_object_get(k, "opcode")));
	json_decref(doc);
}

static void test_librtune_band_n_and_skips(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	const struct rt_profile_entry *w, *s;
	const struct rt_profile_skip *k;
	char out[1300];

	(void)state;
	fill(path);
	snprintf(out, sizeof(out), "%s/p.json", dir);
	export_to(path, out);
	if (rt_profile_load(out, &p, &err))
		fail_msg("load: %s", err.text);
	assert_int_equal(rt_profile_schema_minor(p), 4);
	w = rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_WRITE, RT_PROFILE_QPT_RC);
	s = rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);
	assert_non_null(w);
	assert_non_null(s);
	assert_int_equal(rt_profile_band_count(p, w), 3);
	assert_int_equal(rt_profile_band_at(p, w, 0)->kind, RT_PROFILE_BAND_CONCURRENCY);
	assert_int_equal(rt_profile_band_at(p, w, 0)->qps, 4);
	assert_int_equal(rt_profile_band_at(p, w, 0)->threads, 2);
	assert_int_equal(rt_profile_band_at(p, w, 1)->kind, RT_PROFILE_BAND_LARGE);
	assert_int_equal(rt_profile_band_at(p, w, 1)->qps, 1);
	assert_true(rt_profile_band_at(p, w, 1)->has_confidence);
	assert_int_equal(rt_profile_band_at(p, w, 1)->confidence, RT_PROFILE_CONF_HIGH);
	assert_null(rt_profile_band_at(p, w, 3));
	/* several QPs: the concurrency band's N for small messages one WR at a time; large or listed WRs keep theirs */
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 1, 4, 2), 4);
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 1, 32, 8), 4);
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 0, 4, 0), 4);  /* 4 QPs, 1 thread: fewest */
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 1, 3, 3), 16); /* fewer QPs than measured */
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 1, 1, 1), 16);
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 65536, 1, 4, 2), 32);
	assert_int_equal(rt_profile_signal_interval_for_load(p, w, 64, 8, 4, 2), 8);
	assert_int_equal(rt_profile_signal_interval_for_load(p, s, 64, 1, 4, 2), 16); /* send has no such band */
	assert_int_equal(rt_profile_signal_interval_for_load(p, NULL, 64, 1, 4, 2), 1);
	/* large messages: the large band's N; a post list: the post-list band's; otherwise the entry's */
	assert_int_equal(rt_profile_signal_interval_for(p, w, 65536, 1), 32);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 4096, 0), 32);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 1 << 20, 1), 32);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 64, 8), 8);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 32, 16), 8);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 64, 1), 16);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 2048, 1), 16);
	assert_int_equal(rt_profile_signal_interval_for(p, w, 64, 4), 16);   /* a shorter list than measured */
	assert_int_equal(rt_profile_signal_interval_for(p, w, 8192, 8), 32); /* a list of large messages */
	assert_int_equal(rt_profile_signal_interval_for(p, w, 1024, 8), 8);  /* a list of small ones, any size */
	assert_int_equal(rt_profile_signal_interval_for(p, s, 65536, 1), 64);
	assert_int_equal(rt_profile_signal_interval_for(p, s, 64, 8), 16); /* send has no post-list band */
	/* an entry of another profile has no bands here */
	assert_int_equal(rt_profile_band_count(p, NULL), 0);
	assert_int_equal(rt_profile_signal_interval_for(p, NULL, 64, 1), 1);
	/* skips: the write entry's inline side was refused; the cq moderation one concerns both */
	assert_int_equal(rt_profile_skip_count(p), 2);
	k = rt_profile_entry_skip(p, w, 0);
	assert_non_null(k);
	assert_int_equal(k->kind, RT_PROFILE_SKIP_INLINE);
	assert_int_equal(k->opcode, RT_PROFILE_OP_WRITE);
	assert_int_equal(k->qp_type, RT_PROFILE_QPT_RC);
	assert_string_equal(k->reason, REFUSED);
	assert_int_equal(rt_profile_entry_skip(p, w, 1)->kind, RT_PROFILE_SKIP_CQ_MODERATION);
	assert_null(rt_profile_entry_skip(p, w, 2));
	k = rt_profile_entry_skip(p, s, 0);
	assert_non_null(k);
	assert_int_equal(k->kind, RT_PROFILE_SKIP_CQ_MODERATION);
	assert_int_equal(k->opcode, -1);
	assert_null(rt_profile_entry_skip(p, s, 1));
	rt_profile_free(p);
}

static void test_import_then_export_is_the_same(void **state)
{
	char out1[1300], out2[1300], db2[1300];
	struct rt_store *st = NULL;
	struct rt_error err;
	json_error_t je;
	json_t *a, *b;
	size_t added = 0;

	(void)state;
	fill(path);
	snprintf(out1, sizeof(out1), "%s/p1.json", dir);
	snprintf(out2, sizeof(out2), "%s/p2.json", dir);
	snprintf(db2, sizeof(db2), "%s/fresh.db", dir);
	export_to(path, out1);
	assert_int_equal(rt_store_open(db2, &st, &err), 0);
	if (rt_store_import_file(st, out1, &added, NULL, &err))
		fail_msg("import: %s", err.text);
	assert_int_equal(added, 2);
	rt_store_close(st);
	export_to(db2, out2);
	a = json_load_file(out1, 0, &je);
	b = json_load_file(out2, 0, &je);
	assert_non_null(a);
	assert_non_null(b);
	/* the fresh store holds no run: the bands and skips come from what the import kept */
	assert_true(json_equal(json_object_get(entry_of(a, "write"), "bands"),
			       json_object_get(entry_of(b, "write"), "bands")));
	assert_true(json_equal(json_object_get(entry_of(a, "send"), "bands"),
			       json_object_get(entry_of(b, "send"), "bands")));
	assert_int_equal(json_array_size(json_object_get(entry_of(b, "write"), "bands")), 3);
	assert_true(json_equal(json_object_get(a, "skipped"), json_object_get(b, "skipped")));
	assert_int_equal(json_array_size(json_object_get(b, "skipped")), 2);
	json_decref(a);
	json_decref(b);
}

static void test_replaced_n_carries_no_bands(void **state)
{
	struct rt_profile_entry *v = NULL;
	struct rt_node_info node;
	struct rt_store *st = NULL;
	struct rt_error err;
	char *text = NULL, sig[32];
	size_t n = 0, len = 0;
	json_t *doc;

	(void)state;
	fill(path);
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_get_profile(st, NULL, NULL, &v, &n, &node, sig, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		if (v[i].opcode == RT_PROFILE_OP_WRITE)
			v[i].signal_interval = 1; /* as the agent publishes a pinned N */
	assert_int_equal(rt_store_profile_document(st, &node, sig, v, n, &text, &len, &err), 0);
	doc = json_loads(text, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(entry_of(doc, "write"), "bands")), 0);
	assert_int_equal(json_array_size(json_object_get(entry_of(doc, "send"), "bands")), 1);
	json_decref(doc);
	free(text);
	free(v);
	rt_store_close(st);
}

#define DOC13                                                                                                          \
	"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"%s\"}, \"rtune_version\": \"0.1.0\","               \
	" \"node\": {\"hostname\": \"n\"}, \"entries\": [{\"device\": \"mlx5_0\", \"port\": 1, \"opcode\": \"write\"," \
	" \"qp_type\": \"rc\", \"inline_threshold\": 0, \"max_inline_data\": 0, \"signal_interval\": 16,"              \
	" \"sq_depth\": 256, \"cq_depth\": 512, \"confidence\": \"high\", \"measured_at\": \"2026-11-29T13:00:00Z\","  \
	" \"run_id\": \"6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab\"%s}]%s}"

static int parse(const char *ver, const char *entry_extra, const char *doc_extra, struct rt_profile **p,
		 struct rt_error *err)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), DOC13, ver, entry_extra, doc_extra);
	return rt_profile_parse(doc, strlen(doc), p, err);
}

static void test_older_document_falls_back(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	const struct rt_profile_entry *e;

	(void)state;
	assert_int_equal(parse("1.3", "", "", &p, &err), 0);
	e = rt_profile_entry_at(p, 0);
	assert_int_equal(rt_profile_band_count(p, e), 0);
	assert_null(rt_profile_band_at(p, e, 0));
	assert_int_equal(rt_profile_signal_interval_for(p, e, 65536, 1), 16);
	assert_int_equal(rt_profile_signal_interval_for(p, e, 64, 8), 16);
	assert_int_equal(rt_profile_skip_count(p), 0);
	assert_null(rt_profile_entry_skip(p, e, 0));
	rt_profile_free(p);
	/* a band or skip that is not valid names the field; a band of a kind of a later minor is passed over (as the
	 * concurrency band would have broken every reader before it), a skip of one reads as other */
	assert_int_equal(parse("1.4",
			       ", \"bands\": [{\"kind\": \"huge\", \"msg_bytes_lo\": 1, \"msg_bytes_hi\": 2,"
			       " \"signal_interval\": 4}, {\"kind\": \"concurrency\", \"qps\": 8, \"threads\": 2,"
			       " \"msg_bytes_lo\": 64, \"msg_bytes_hi\": 64, \"signal_interval\": 2}]",
			       "", &p, &err),
			 0);
	e = rt_profile_entry_at(p, 0);
	assert_int_equal(rt_profile_band_count(p, e), 1);
	assert_int_equal(rt_profile_band_at(p, e, 0)->kind, RT_PROFILE_BAND_CONCURRENCY);
	assert_int_equal(rt_profile_signal_interval_for_load(p, e, 64, 1, 8, 2), 2);
	assert_int_equal(rt_profile_signal_interval_for_load(p, e, 64, 1, 4, 2), 16);
	rt_profile_free(p);
	assert_int_equal(parse("1.4",
			       ", \"bands\": [{\"kind\": \"concurrency\", \"qps\": 2, \"threads\": 4,"
			       " \"msg_bytes_lo\": 64, \"msg_bytes_hi\": 64, \"signal_interval\": 2}]",
			       "", &p, &err),
			 EINVAL);
	assert_non_null(strstr(err.text, "entries[0].bands[0].threads: 4 exceeds qps 2"));
	assert_int_equal(parse("1.4",
			       ", \"bands\": [{\"kind\": \"concurrency\", \"threads\": 1,"
			       " \"msg_bytes_lo\": 64, \"msg_bytes_hi\": 64, \"signal_interval\": 2}]",
			       "", &p, &err),
			 EINVAL);
	assert_non_null(strstr(err.text, "entries[0].bands[0].qps: missing"));
	assert_int_equal(parse("1.4",
			       ", \"bands\": [{\"kind\": \"large\", \"msg_bytes_lo\": 9, \"msg_bytes_hi\": 2,"
			       " \"signal_interval\": 4}]",
			       "", &p, &err),
			 EINVAL);
	assert_non_null(strstr(err.text, "msg_bytes_lo: 9 exceeds msg_bytes_hi 2"));
	assert_int_equal(parse("1.4",
			       ", \"bands\": [{\"kind\": \"post_list\", \"msg_bytes_lo\": 64,"
			       " \"msg_bytes_hi\": 64, \"signal_interval\": 0}]",
			       "", &p, &err),
			 EINVAL);
	assert_non_null(strstr(err.text, "entries[0].bands[0].signal_interval: 0 is out of range"));
	assert_int_equal(
		parse("1.4", "", ", \"skipped\": [{\"device\": \"mlx5_0\", \"port\": 1, \"what\": \"x\"}]", &p, &err),
		EINVAL);
	assert_non_null(strstr(err.text, "skipped[0].reason: missing"));
	assert_int_equal(
		parse("1.4", "",
		      ", \"skipped\": [{\"device\": \"mlx5_0\", \"port\": 1, \"what\": \"ud\", \"kind\": \"new\","
		      " \"opcode\": null, \"qp_type\": \"ud\", \"reason\": \"r\"}]",
		      &p, &err),
		0);
	assert_int_equal(rt_profile_skip_at(p, 0)->kind, RT_PROFILE_SKIP_OTHER);
	assert_int_equal(rt_profile_skip_at(p, 0)->qp_type, RT_PROFILE_QPT_UD);
	/* a UD skip does not concern the RC entry */
	assert_null(rt_profile_entry_skip(p, rt_profile_entry_at(p, 0), 0));
	rt_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_export_carries_bands_and_skips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_librtune_band_n_and_skips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_then_export_is_the_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_n_carries_no_bands, setup, teardown),
		cmocka_unit_test_setup_teardown(test_older_document_falls_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
