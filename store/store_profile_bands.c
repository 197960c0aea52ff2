// SPDX-License-Identifier: MIT
/*
 * The profile document's schema 1.4 additions (docs/profile-schema.md): each entry's load bands (the N calibrate tuned
 * per band, table signal_bands of the entry's run) and the document's skipped measurements (what the runs behind the
 * entries did not measure because the device refused it: the run's params.skipped), written from the store's runs or,
 * for imported entries whose runs are not in this store, from what the import kept in the profile row's hysteresis
 * column ("bands", "skipped"), so an imported profile exports again unchanged.
 */
#include "store_internal.h"
#include "rt_store_json.h"
#include "lib/profile_internal.h"
#include "rt_json_arena.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *rt_store_band_json(const struct rt_profile_band *b)
{
	if (b->kind == RT_PROFILE_BAND_CONCURRENCY)
		return json_pack(
			"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "kind", rt_profile_band_kind_name(b->kind),
			"qps", (json_int_t)b->qps, "threads", (json_int_t)b->threads, "post_list",
			(json_int_t)b->post_list, "msg_bytes_lo", (json_int_t)b->msg_bytes_lo, "msg_bytes_hi",
			(json_int_t)b->msg_bytes_hi, "signal_interval", (json_int_t)b->signal_interval, "verdict",
			b->verdict[0] ? json_string(b->verdict) : json_null(), "confidence",
			b->has_confidence ? json_string(rt_profile_confidence_name(b->confidence)) : json_null());
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:o}", "kind", rt_profile_band_kind_name(b->kind), "post_list",
			 (json_int_t)b->post_list, "msg_bytes_lo", (json_int_t)b->msg_bytes_lo, "msg_bytes_hi",
			 (json_int_t)b->msg_bytes_hi, "signal_interval", (json_int_t)b->signal_interval, "verdict",
			 b->verdict[0] ? json_string(b->verdict) : json_null(), "confidence",
			 b->has_confidence ? json_string(rt_profile_confidence_name(b->confidence)) : json_null());
}

json_t *rt_store_skip_json(const struct rt_profile_skip *k)
{
	return json_pack("{s:s, s:i, s:s, s:s, s:o, s:o, s:s, s:o}", "device", k->device, "port", k->port, "what",
			 k->what, "kind", rt_profile_skip_kind_name(k->kind), "opcode",
			 k->opcode >= 0 ? json_string(rt_profile_opcode_name((enum rt_profile_opcode)k->opcode))
					: json_null(),
			 "qp_type",
			 k->qp_type >= 0 ? json_string(rt_profile_qp_type_name((enum rt_profile_qp_type)k->qp_type))
					 : json_null(),
			 "reason", k->reason, "run_id", k->run_id[0] ? json_string(k->run_id) : json_null());
}

void rt_store_skip_from_run(const char *what, const char *reason, struct rt_profile_skip *k)
{
	enum rt_profile_opcode op;
	enum rt_profile_qp_type qpt;
	char a[16] = "", b[16] = "";

	snprintf(k->what, sizeof(k->what), "%s", what);
	snprintf(k->reason, sizeof(k->reason), "%s", reason);
	k->kind = RT_PROFILE_SKIP_OTHER;
	k->opcode = k->qp_type = -1;
	/* the engine's names (probe/engine/calibrate.c, skip()): "inline <op>/<qpt>", "<qpt>", "<op>", "cq moderation" */
	if (sscanf(what, "inline %15[a-z]/%15[a-z]", a, b) == 2 && !rt_profile_opcode_parse(a, &op) &&
	    !rt_profile_qp_type_parse(b, &qpt)) {
		k->kind = RT_PROFILE_SKIP_INLINE;
		k->opcode = (int)op;
		k->qp_type = (int)qpt;
	} else if (!rt_profile_qp_type_parse(what, &qpt)) {
		k->kind = RT_PROFILE_SKIP_QP_TYPE;
		k->qp_type = (int)qpt;
	} else if (!rt_profile_opcode_parse(what, &op)) {
		k->kind = RT_PROFILE_SKIP_OPCODE;
		k->opcode = (int)op;
	} else if (!strcmp(what, "cq moderation")) {
		k->kind = RT_PROFILE_SKIP_CQ_MODERATION;
	}
}

/* The newest profile row of e's run for e's key: 0 and its signal interval and stored "bands"/"skipped" (member
 * member of the hysteresis column, NULL when none; malloc'd), or ENOENT when the store has no such row. */
static int row_extra(struct rt_store *st, const struct rt_profile_entry *e, const char *member, uint32_t *n_out,
		     char **text)
{
	sqlite3_stmt *s = NULL;
	char path[32];
	int rc = ENOENT;

	*text = NULL;
	snprintf(path, sizeof(path), "$.%s", member);
	if (sqlite3_prepare_v2(
		    st->db,
		    "SELECT signal_interval, CASE WHEN json_valid(hysteresis) THEN json_extract(hysteresis, ?6)"
		    " END FROM profiles WHERE run_uuid = ?1 AND device = ?2 AND port = ?3 AND op = ?4"
		    " AND qpt = ?5 ORDER BY id DESC LIMIT 1",
		    -1, &s, NULL) != SQLITE_OK)
		return EIO;
	sqlite3_bind_text(s, 1, e->run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, e->device, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, e->port);
	sqlite3_bind_text(s, 4, rt_profile_opcode_name(e->opcode), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, rt_profile_qp_type_name(e->qp_type), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, path, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		rc = 0;
		*n_out = (uint32_t)sqlite3_column_int64(s, 0);
		if (sqlite3_column_type(s, 1) != SQLITE_NULL)
			*text = strdup((const char *)sqlite3_column_text(s, 1));
	}
	sqlite3_finalize(s);
	return rc;
}

/* The store's row id of the run uuid, or 0 when the store does not hold it. */
static int64_t run_row(struct rt_store *st, const char *uuid, char **params)
{
	sqlite3_stmt *s = NULL;
	int64_t id = 0;

	if (params)
		*params = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT id, params FROM runs WHERE uuid = ?1", -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, 1, uuid, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		id = sqlite3_column_int64(s, 0);
		if (params && sqlite3_column_type(s, 1) != SQLITE_NULL)
			*params = strdup((const char *)sqlite3_column_text(s, 1));
	}
	sqlite3_finalize(s);
	return id;
}

/* A JSON array parsed from text, or a new empty one (text NULL or not an array). */
static json_t *array_of(const char *text)
{
	json_t *a = text ? rt_json_loads(text, 0, NULL) : NULL;

	if (json_is_array(a))
		return a;
	json_decref(a);
	return json_array();
}

json_t *rt_store_entry_bands_json(struct rt_store *st, const struct rt_profile_entry *e)
{
	struct rt_store_signal_band *sb = NULL;
	uint32_t stored_n = 0;
	char *kept = NULL;
	size_t n = 0;
	int64_t run;
	json_t *a;

	/* an entry whose N the caller replaced (the agent publishing a pinned N) carries no bands: its N holds for
	 * every message */
	if (row_extra(st, e, "bands", &stored_n, &kept) == 0 && stored_n != e->signal_interval) {
		free(kept);
		return json_array();
	}
	if (!(run = run_row(st, e->run_id, NULL))) {
		a = array_of(kept); /* an imported entry: the bands its profile carried */
		free(kept);
		return a;
	}
	free(kept);
	a = json_array();
	if (!a || rt_store_get_signal_bands(st, run, &sb, &n, NULL))
		return a;
	for (size_t i = 0; i < n; i++) {
		struct rt_profile_band b;

		if ((int)sb[i].op != (int)e->opcode || (int)sb[i].qpt != (int)e->qp_type ||
		    (sb[i].band != RT_BAND_LARGE && sb[i].band != RT_BAND_POST_LIST &&
		     sb[i].band != RT_BAND_CONCURRENCY))
			continue;
		memset(&b, 0, sizeof(b));
		b.kind = sb[i].band == RT_BAND_LARGE	   ? RT_PROFILE_BAND_LARGE
			 : sb[i].band == RT_BAND_POST_LIST ? RT_PROFILE_BAND_POST_LIST
							   : RT_PROFILE_BAND_CONCURRENCY;
		b.post_list = sb[i].post_list ? sb[i].post_list : 1;
		b.qps = sb[i].qps > 1 ? sb[i].qps : 1;
		b.threads = sb[i].threads > 1 ? sb[i].threads : 1;
		if (b.kind == RT_PROFILE_BAND_CONCURRENCY && b.qps < 2)
			continue; /* not a band a reader would take */
		b.msg_bytes_lo = sb[i].msg_bytes_lo;
		b.msg_bytes_hi = sb[i].msg_bytes_hi;
		b.signal_interval = sb[i].signal_interval ? sb[i].signal_interval : 1;
		snprintf(b.verdict, sizeof(b.verdict), "%s", sb[i].verdict);
		b.has_confidence = rt_profile_confidence_parse(sb[i].confidence, &b.confidence) == 0;
		json_array_append_new(a, rt_store_band_json(&b));
	}
	free(sb);
	return a;
}

/* True when a already holds a skip of device/port named what. */
static bool skip_listed(json_t *a, const char *device, int port, const char *what)
{
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *o = json_array_get(a, i);
		const char *d = json_string_value(json_object_get(o, "device"));
		const char *w = json_string_value(json_object_get(o, "what"));

		if (d && w && !strcmp(d, device) && !strcmp(w, what) &&
		    json_integer_value(json_object_get(o, "port")) == port)
			return true;
	}
	return false;
}

/* Appends the skips of e's run (from its params when the store holds it, else what the import kept) to a. */
static void skips_of_run(struct rt_store *st, const struct rt_profile_entry *e, json_t *a)
{
	char *params = NULL, *kept = NULL;
	uint32_t n_unused;

	if (run_row(st, e->run_id, &params)) {
		json_t *p = params ? rt_json_loads(params, 0, NULL) : NULL, *sk = json_object_get(p, "skipped");

		for (size_t i = 0; i < json_array_size(sk); i++) {
			const char *w = json_string_value(json_object_get(json_array_get(sk, i), "what"));
			const char *r = json_string_value(json_object_get(json_array_get(sk, i), "reason"));
			struct rt_profile_skip k;

			if (!w || skip_listed(a, e->device, e->port, w))
				continue;
			memset(&k, 0, sizeof(k));
			snprintf(k.device, sizeof(k.device), "%s", e->device);
			k.port = e->port;
			snprintf(k.run_id, sizeof(k.run_id), "%s", e->run_id);
			rt_store_skip_from_run(w, r ? r : "", &k);
			json_array_append_new(a, rt_store_skip_json(&k));
		}
		json_decref(p);
		free(params);
		return;
	}
	free(params); /* set only with a row, whose id is never 0: nothing to free, but nothing left to chance */
	if (row_extra(st, e, "skipped", &n_unused, &kept) == 0 && kept) {
		json_t *sk = array_of(kept);

		for (size_t i = 0; i < json_array_size(sk); i++) {
			json_t *o = json_array_get(sk, i);
			const char *w = json_string_value(json_object_get(o, "what"));

			if (w && !skip_listed(a, e->device, e->port, w))
				json_array_append(a, o);
		}
		json_decref(sk);
	}
	free(kept);
}

json_t *rt_store_skipped_json(struct rt_store *st, const struct rt_profile_entry *v, size_t n)
{
	json_t *a = json_array();
	bool *done = n ? calloc(n, sizeof(*done)) : NULL;

	if (!a || (n && !done)) {
		free(done);
		json_decref(a);
		return NULL;
	}
	/* newest run first, so a measurement skipped by several runs of a device is told with the newest reason */
	for (size_t round = 0; round < n; round++) {
		size_t best = n;

		for (size_t i = 0; i < n; i++)
			if (!done[i] && (best == n || v[i].measured_at > v[best].measured_at))
				best = i;
		done[best] = true;
		skips_of_run(st, &v[best], a);
	}
	free(done);
	return a;
}

int rt_store_import_extra(const struct rt_profile *p, size_t i, json_t **out)
{
	const struct rt_profile_entry *e = &p->entries[i];
	json_t *o = NULL, *bands = NULL, *skipped = NULL;

	*out = NULL;
	for (size_t k = 0; k < rt_profile_band_count(p, e); k++) {
		if (!bands && !(bands = json_array()))
			goto oom;
		if (json_array_append_new(bands, rt_store_band_json(rt_profile_band_at(p, e, k))))
			goto oom;
	}
	/* the skips of this entry's run on its device and port (those of the other runs go with their entries) */
	for (size_t k = 0; k < p->n_skips; k++) {
		const struct rt_profile_skip *s = &p->skips[k];

		if (strcmp(s->device, e->device) || s->port != e->port || strcmp(s->run_id, e->run_id))
			continue;
		if (!skipped && !(skipped = json_array()))
			goto oom;
		if (json_array_append_new(skipped, rt_store_skip_json(s)))
			goto oom;
	}
	if (!bands && !skipped)
		return 0;
	if (!(o = json_object()) || (bands && json_object_set_new(o, "bands", bands)) ||
	    (skipped && json_object_set_new(o, "skipped", skipped))) {
		json_decref(o);
		return ENOMEM;
	}
	*out = o;
	return 0;
oom:
	json_decref(bands);
	json_decref(skipped);
	return ENOMEM;
}
