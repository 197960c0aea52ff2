// SPDX-License-Identifier: MIT
/*
 * Profiles in the store and their public forms: storing profile entries (idempotent by node + run id), reading a node's
 * current profile, the JSON profile v1 document (jansson), the env and Prometheus textfile exports, import of
 * documents from other nodes, and the atomic file writer every export uses.
 */
#include "store_internal.h"
#include "rt_pool.h"
#include "rt_buf.h"
#include "rt_out.h"
#include "rt_json_arena.h"
#include "rt_store_json.h"
#include "lib/profile_internal.h"
#include "lib/profile_scan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int rt_profile_entry_validate(const struct rt_profile_entry *e, struct rt_error *err)
{
	char where[96];

	snprintf(where, sizeof(where), "profile entry %.40s/%d/%s/%s", e->device, e->port,
		 rt_profile_opcode_name(e->opcode), rt_profile_qp_type_name(e->qp_type));
	return rt_profile_entry_check(e, where, err);
}

/* Where an imported entry's calibration ran, from its "calibration" object; -1: unknown. */
struct rt_cal {
	int cpu_numa_node;
	int numa_local; /* 0 / 1 */
};

/* ---- reasons: all of them in the store, a bounded choice in the public entry ------------------------------------- */

static const char *const topic_names[] = { "inline", "signal", "queue", "cq_moderation", "input", "profile" };

/* The decision a reason code explains, for reasons stored without their topic (rows written before schema 4, imported
 * entries): by the code vocabulary of docs/tuner.md. */
static const char *topic_of_code(const char *code)
{
	static const char *const inl[] = { "inline_",	      "limited_by_",  "histogram_threshold",
					   "expected_gain",   "kneedle_knee", "rank_test_disagrees",
					   "implausible_gain" };
	static const char *const sig[] = { "signal_", "no_rate_data", "sq_overflow_seen" };

	for (size_t i = 0; i < sizeof(inl) / sizeof(inl[0]); i++)
		if (!strncmp(code, inl[i], strlen(inl[i])))
			return "inline";
	for (size_t i = 0; i < sizeof(sig) / sizeof(sig[0]); i++)
		if (!strncmp(code, sig[i], strlen(sig[i])))
			return "signal";
	if (!strcmp(code, "queue_depths"))
		return "queue";
	if (!strncmp(code, "cq_moderation", 13))
		return "cq_moderation";
	if (!strncmp(code, "decision_", 9))
		return "profile";
	return "input";
}

/* Appends one reason object to a (a JSON array); false when out of memory. */
static bool reason_append(json_t *a, const char *code, const char *text, const char *topic, bool warn)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "code", code, "text", text, "topic",
			      topic && topic[0] ? topic : topic_of_code(code), "severity", warn ? "warn" : "info");

	return o && json_array_append_new(a, o) == 0;
}

/* The reasons column of a tuned entry: every reason, with topic and severity. malloc'd JSON text, NULL when out of
 * memory. */
static char *tuned_reasons_to_json(const struct rt_store_tuned *t)
{
	json_t *a = json_array();
	char *s = NULL;
	bool ok = a != NULL;

	for (size_t i = 0; ok && i < t->n_reasons; i++)
		ok = reason_append(a, t->reasons[i].code, t->reasons[i].text, t->reasons[i].topic, t->reasons[i].warn);
	if (ok)
		s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* The reasons column of a plain entry (its own, at most RT_PROFILE_MAX_REASONS); malloc'd, NULL when out of memory. */
static char *reasons_to_json(const struct rt_profile_entry *e)
{
	json_t *a = json_array();
	char *s = NULL;
	bool ok = a != NULL;

	for (unsigned i = 0; ok && i < e->n_reasons && i < RT_PROFILE_MAX_REASONS; i++)
		ok = reason_append(a, e->reasons[i].code, e->reasons[i].text, NULL, false);
	if (ok)
		s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* Parses a reasons column into *out (malloc'd, NULL when empty) and *n; a reason without topic gets the one of its
 * code. 0 or ENOMEM; text that is not a JSON array reads as no reasons. */
static int reasons_parse(const char *text, struct rt_store_reason **out, size_t *n)
{
	json_t *a = text ? rt_json_loads(text, 0, NULL) : NULL;
	size_t cnt = json_is_array(a) ? json_array_size(a) : 0;
	struct rt_store_reason *v = NULL;

	*out = NULL;
	*n = 0;
	if (cnt && !(v = calloc(cnt, sizeof(*v)))) {
		json_decref(a);
		return ENOMEM;
	}
	for (size_t i = 0; i < cnt; i++) {
		json_t *o = json_array_get(a, i);
		const char *c = json_string_value(json_object_get(o, "code"));
		const char *t = json_string_value(json_object_get(o, "text"));
		const char *tp = json_string_value(json_object_get(o, "topic"));
		const char *sev = json_string_value(json_object_get(o, "severity"));
		struct rt_store_reason *r = &v[*n];

		snprintf(r->code, sizeof(r->code), "%s", c ? c : "");
		snprintf(r->text, sizeof(r->text), "%s", t ? t : "");
		snprintf(r->topic, sizeof(r->topic), "%s", tp ? tp : topic_of_code(r->code));
		r->warn = sev && !strcmp(sev, "warn");
		(*n)++;
	}
	json_decref(a);
	*out = v;
	return 0;
}

/* Copies one stored reason into the next slot of e (the text cut at a UTF-8 character boundary). */
static void reason_put(struct rt_profile_entry *e, const struct rt_store_reason *r)
{
	struct rt_profile_reason *d = &e->reasons[e->n_reasons++];
	size_t n = rt_profile_utf8_fit(r->text, strlen(r->text), sizeof(d->text));

	snprintf(d->code, sizeof(d->code), "%s", r->code);
	memcpy(d->text, r->text, n);
	d->text[n] = '\0';
}

/*
 * Chooses the RT_PROFILE_MAX_REASONS reasons of the public entry from every stored one (docs/profile-schema.md): first
 * one explanation per decision — the first non-warning reason of each topic, inline, signal, queue, cq_moderation,
 * then the profile's own (hysteresis) — then the warnings, then the other explanations, each group in stored order.
 */
static void reasons_pick(const struct rt_store_reason *v, size_t n, struct rt_profile_entry *e)
{
	bool used[64] = { false };
	size_t lim = n < 64 ? n : 64;

	e->n_reasons = 0;
	for (size_t t = 0; t < sizeof(topic_names) / sizeof(topic_names[0]); t++) {
		if (!strcmp(topic_names[t], "input"))
			continue;
		for (size_t i = 0; i < lim && e->n_reasons < RT_PROFILE_MAX_REASONS; i++) {
			if (v[i].warn || used[i] || strcmp(v[i].topic, topic_names[t]))
				continue;
			used[i] = true;
			reason_put(e, &v[i]);
			break;
		}
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < lim && e->n_reasons < RT_PROFILE_MAX_REASONS; i++)
			if (!used[i] && v[i].warn == (pass == 0)) {
				used[i] = true;
				reason_put(e, &v[i]);
			}
}

/* Fills e's bounded reasons from a reasons column; keeps every one in *all (may be NULL: then freed). 0 or ENOMEM. */
static int reasons_read(const char *text, struct rt_profile_entry *e, struct rt_store_reason **all, size_t *n_all)
{
	struct rt_store_reason *v;
	size_t n;
	int rc = reasons_parse(text, &v, &n);

	e->n_reasons = 0;
	if (rc)
		return rc;
	reasons_pick(v, n, e);
	if (all) {
		*all = v;
		*n_all = n;
	} else {
		free(v);
	}
	return 0;
}

void rt_store_tuned_release(struct rt_store_tuned *t)
{
	if (!t)
		return;
	free(t->reasons);
	t->reasons = NULL;
	t->n_reasons = 0;
}

/* ---- hysteresis record and per-decision confidence --------------------------------------------------------------- */

/* Each decision's confidence as stored: both as confidence for a caller that set neither (both low, confidence not). */
static void entry_confidences(const struct rt_profile_entry *e, enum rt_profile_confidence *ic,
			      enum rt_profile_confidence *sc)
{
	bool unset = e->inline_confidence == RT_PROFILE_CONF_LOW && e->signal_confidence == RT_PROFILE_CONF_LOW &&
		     e->confidence != RT_PROFILE_CONF_LOW;

	*ic = unset ? e->confidence : e->inline_confidence;
	*sc = unset ? e->confidence : e->signal_confidence;
}

/* One decision of the hysteresis column: {"runs", "since", and for a tuned entry "action", "run_value", "previous",
 * "why"}. */
static json_t *change_json(uint32_t runs, const char *since, const char *run_id, const struct rt_store_change *c)
{
	json_t *o = json_pack("{s:I, s:s}", "runs", (json_int_t)(runs ? runs : 1), "since", since[0] ? since : run_id);

	if (o && c && c->action[0])
		json_object_update_new(o, json_pack("{s:s, s:I, s:I, s:s}", "action", c->action, "run_value",
						    (json_int_t)c->run_value, "previous", (json_int_t)c->previous,
						    "why", c->why));
	return o;
}

/* The hysteresis column of entry e (t: its tuned record, may be NULL; extra: members an import keeps beside it, JSON
 * object text or NULL); malloc'd, NULL when out of memory. */
static char *hysteresis_to_json(const struct rt_profile_entry *e, const struct rt_store_tuned *t, const char *extra)
{
	json_t *o = json_pack("{s:o, s:o}", "inline",
			      change_json(e->inline_runs, e->inline_since, e->run_id, t ? &t->inl : NULL), "signal",
			      change_json(e->signal_runs, e->signal_since, e->run_id, t ? &t->sig : NULL));
	char *s;

	/* an imported entry's measured evidence (schema 1.3) is kept here: its run is not in this store */
	if (o && e->has_measured)
		json_object_set_new(o, "measured", rt_store_measured_json(e));
	/* and its schema 1.4 "bands" and "skipped" (rt_store_import_extra) */
	if (o && extra && extra[0]) {
		json_t *x = rt_json_loads(extra, 0, NULL);

		if (!x || json_object_update(o, x)) {
			json_decref(x);
			json_decref(o);
			return NULL;
		}
		json_decref(x);
	}
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* Reads one decision of a hysteresis column (o may be NULL: one run, since the entry's own run). */
static void change_read(json_t *o, const char *run_id, uint32_t *runs, char since[40], struct rt_store_change *c)
{
	json_int_t r = json_integer_value(json_object_get(o, "runs"));
	const char *s = json_string_value(json_object_get(o, "since"));
	const char *a = json_string_value(json_object_get(o, "action"));
	const char *w = json_string_value(json_object_get(o, "why"));

	*runs = r >= 1 && r <= UINT32_MAX ? (uint32_t)r : 1;
	snprintf(since, 40, "%s", s && s[0] ? s : run_id);
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	snprintf(c->action, sizeof(c->action), "%s", a ? a : "");
	c->run_value = (uint32_t)json_integer_value(json_object_get(o, "run_value"));
	c->previous = (uint32_t)json_integer_value(json_object_get(o, "previous"));
	snprintf(c->why, sizeof(c->why), "%s", w ? w : "");
}

/* Fills e's evidence fields (and t's changes when t is not NULL) from a hysteresis column (NULL: an older row). */
static void hysteresis_read(const char *text, struct rt_profile_entry *e, struct rt_store_tuned *t)
{
	json_t *o = text ? rt_json_loads(text, 0, NULL) : NULL;

	change_read(json_object_get(o, "inline"), e->run_id, &e->inline_runs, e->inline_since, t ? &t->inl : NULL);
	change_read(json_object_get(o, "signal"), e->run_id, &e->signal_runs, e->signal_since, t ? &t->sig : NULL);
	rt_store_measured_read(json_object_get(o, "measured"), e);
	json_decref(o);
}

/* Inserts entries for node_id inside the caller's transaction; counts new rows. tuned when not NULL (then each tuned
 * entry's every reason and hysteresis record are stored), else entries. reasons_json, when not NULL, holds each
 * entry's reasons already serialised (else they are serialised here); cal, when not NULL, where each entry's
 * calibration ran (an imported entry: its run is not in this store); extra, when not NULL, what an import keeps of
 * each entry beyond it (its bands and its run's skips, JSON object text, "" for none). */
static int insert_entries(struct rt_store *st, int64_t node_id, const struct rt_profile_entry *entries,
			  const struct rt_store_tuned *tuned, size_t n, const char *const *reasons_json,
			  const struct rt_cal *cal, const char *const *extra, size_t *added, struct rt_error *err)
{
	if (!entries && !tuned)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct rt_store_tuned *t = tuned ? &tuned[i] : NULL;
		const struct rt_profile_entry *e = t ? &t->e : &entries[i];
		enum rt_profile_confidence ic, sc;
		sqlite3_stmt *s;
		char *own = NULL, *hyst; /* serialised here */
		const char *reasons;
		int rc;

		s = rt_store_stmt(
			st, STMT_PROFILE_INSERT,
			"INSERT OR IGNORE INTO profiles(node_id, device, guid, port, op, qpt, inline_threshold,"
			" max_inline_data, signal_interval, sq_depth, cq_depth, cq_mod_count, cq_mod_period_us,"
			" numa_node, cpus,"
			" confidence, reasons, measured_at, run_uuid, rtune_version, stored_ns, app, histogram_id,"
			" cal_cpu_numa_node, cal_numa_local, inline_confidence, signal_confidence, signal_verdict,"
			" hysteresis, measured_kind, measured_msg_bytes, measured_lat_inline_ns, measured_lat_noinline_ns,"
			" measured_mops_at_n, measured_mops_at_n1, measured_noise_pct)"
			" VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,"
			" CASE WHEN ?22 = '' THEN NULL ELSE (SELECT id FROM histograms WHERE node_id = ?1 AND app = ?22"
			"  AND op = ?5 AND qpt = ?6 ORDER BY created_ns DESC LIMIT 1) END, ?23, ?24, ?25, ?26,"
			" NULLIF(?27, ''), ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35)",
			err);
		if (!s)
			return err ? err->code : EIO;
		reasons = reasons_json ? reasons_json[i] : (own = t ? tuned_reasons_to_json(t) : reasons_to_json(e));
		hyst = hysteresis_to_json(e, t, extra ? extra[i] : NULL);
		if (!reasons || !hyst) {
			free(own);
			free(hyst);
			return rt_error_set(err, ENOMEM, "out of memory");
		}
		entry_confidences(e, &ic, &sc);
		sqlite3_bind_int64(s, 1, node_id);
		sqlite3_bind_text(s, 2, e->device, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, e->guid, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 4, e->port);
		sqlite3_bind_text(s, 5, rt_profile_opcode_name(e->opcode), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 6, rt_profile_qp_type_name(e->qp_type), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, e->inline_threshold);
		sqlite3_bind_int64(s, 8, e->max_inline_data);
		sqlite3_bind_int64(s, 9, e->signal_interval);
		sqlite3_bind_int64(s, 10, e->sq_depth);
		sqlite3_bind_int64(s, 11, e->cq_depth);
		if (e->cq_moderation) {
			sqlite3_bind_int64(s, 12, e->cq_mod_count);
			sqlite3_bind_int64(s, 13, e->cq_mod_period_us);
		}
		sqlite3_bind_int(s, 14, e->numa_node);
		sqlite3_bind_text(s, 15, e->cpus, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 16, rt_profile_confidence_name(e->confidence), -1, SQLITE_STATIC);
		/* checked: unchecked, a failed bind left reasons NULL and INSERT OR IGNORE then dropped the entry silently,
		 * counted as "already present" */
		if (sqlite3_bind_text(s, 17, reasons, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(s, 28, hyst, -1, SQLITE_STATIC) != SQLITE_OK) {
			sqlite3_reset(s);
			free(own);
			free(hyst);
			return rt_store_sql_error(st, "store profile", err);
		}
		sqlite3_bind_int64(s, 18, e->measured_at);
		sqlite3_bind_text(s, 19, e->run_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 20, e->rtune_version[0] ? e->rtune_version : RTUNE_VERSION, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 21, rt_store_now_ns());
		sqlite3_bind_text(s, 22, e->app, -1, SQLITE_STATIC);
		if (cal && cal[i].cpu_numa_node >= 0)
			sqlite3_bind_int(s, 23, cal[i].cpu_numa_node);
		if (cal && cal[i].numa_local >= 0)
			sqlite3_bind_int(s, 24, cal[i].numa_local);
		sqlite3_bind_text(s, 25, rt_profile_confidence_name(ic), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 26, rt_profile_confidence_name(sc), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 27, t ? t->signal_verdict : "", -1, SQLITE_STATIC);
		if (e->has_measured) {
			/* the evidence the hysteresis column holds, as columns (schema v11): NULL reals unknown */
			const double m[] = { e->lat_inline_ns, e->lat_noinline_ns, e->mops_at_n, e->mops_at_n1,
					     e->noise_pct };

			sqlite3_bind_text(s, 29, e->lat_kind, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 30, e->lat_bytes);
			for (int k = 0; k < 5; k++)
				if (isfinite(m[k]))
					sqlite3_bind_double(s, 31 + k, m[k]);
		}
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE && added)
			*added += (size_t)sqlite3_changes(st->db);
		if (rc != SQLITE_DONE)
			rc = rt_store_sql_error(st, "store profile", err);
		else
			rc = 0;
		sqlite3_reset(s); /* reasons is bound SQLITE_STATIC: released only after the reset */
		free(own);
		free(hyst);
		if (rc)
			return rc;
	}
	return 0;
}

/* Deletes, inside the caller's transaction, the entries of node_id that the given entries would supersede: same
 * device, port, opcode, QP type and run. */
static int delete_superseded(struct rt_store *st, int64_t node_id, const struct rt_profile_entry *entries,
			     const struct rt_store_tuned *tuned, size_t n, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db,
			       "DELETE FROM profiles WHERE node_id = ?1 AND device = ?2 AND port = ?3 AND op = ?4"
			       " AND qpt = ?5 AND run_uuid = ?6",
			       -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "replace profile", err);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct rt_profile_entry *e = tuned ? &tuned[i].e : &entries[i];

		sqlite3_bind_int64(s, 1, node_id);
		sqlite3_bind_text(s, 2, e->device, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 3, e->port);
		sqlite3_bind_text(s, 4, rt_profile_opcode_name(e->opcode), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, rt_profile_qp_type_name(e->qp_type), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 6, e->run_id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = rt_store_sql_error(st, "replace profile", err);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

/* Stores tuned (when not NULL) or entries for node in one transaction; replace: deleting first what they
 * supersede. */
static int put_profile(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
		       const struct rt_profile_entry *entries, const struct rt_store_tuned *tuned, size_t n,
		       bool replace, size_t *added, struct rt_error *err)
{
	int64_t node_id;
	size_t cnt = 0;
	int rc;

	if (added)
		*added = 0;
	if (n && !tuned && !entries)
		return rt_error_set(err, EINVAL, "store profile: %zu entries given as NULL", n);
	/* validate everything first, so a replace never deletes what an invalid entry would not restore */
	for (size_t i = 0; i < n; i++)
		if ((rc = rt_profile_entry_validate(tuned ? &tuned[i].e : &entries[i], err)))
			return rc;
	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = rt_store_node_upsert(st, node, hw_signature, &node_id, NULL, err)) ||
	    (replace && (rc = delete_superseded(st, node_id, entries, tuned, n, err))) ||
	    (rc = insert_entries(st, node_id, entries, tuned, n, NULL, NULL, NULL, &cnt, err)) ||
	    (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		return rc;
	}
	if (added)
		*added = cnt;
	return 0;
}

int rt_store_put_profile(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			 const struct rt_profile_entry *entries, size_t n, size_t *added, struct rt_error *err)
{
	return put_profile(st, node, hw_signature, entries, NULL, n, false, added, err);
}

int rt_store_replace_profile(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			     const struct rt_profile_entry *entries, size_t n, struct rt_error *err)
{
	return put_profile(st, node, hw_signature, entries, NULL, n, true, NULL, err);
}

int rt_store_replace_tuned(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			   const struct rt_store_tuned *t, size_t n, struct rt_error *err)
{
	return put_profile(st, node, hw_signature, NULL, t, n, true, NULL, err);
}

/*
 * Chooses the node whose profile to read; fills node_id and node_out. node_key: a node key (rt_store_node_key), a
 * hostname or a machine-id; an exact key wins, else the one node that matches (EEXIST naming the keys when several
 * do: two clones share a machine-id). NULL: the local node (by key) if it has profiles, else the only node that has.
 */
static int pick_node(struct rt_store *st, const char *node_key, int64_t *node_id, struct rt_node_info *node,
		     char *hw_sig, struct rt_error *err)
{
	struct rt_node_info local;
	sqlite3_stmt *s = NULL;
	char list[300] = "", key[RT_STORE_NODE_KEY_LEN];
	int rc = 0, step, count = 0;

	rt_store_local_node(&local);
	if (sqlite3_prepare_v2(
		    st->db,
		    "SELECT n.id, n.node_key, n.hostname, n.machine_id, n.cpu_model, n.kernel, n.cpu_count, n.numa_nodes,"
		    " n.hw_signature, n.node_key = ?2 AS is_local, n.node_key IS ?1 AS is_exact FROM nodes n"
		    " WHERE EXISTS (SELECT 1 FROM profiles p WHERE p.node_id = n.id)"
		    " AND (?1 IS NULL OR n.node_key = ?1 OR n.hostname = ?1 OR (n.machine_id = ?1 AND ?1 <> ''))"
		    " ORDER BY is_exact DESC, is_local DESC, n.updated_ns DESC",
		    -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "read nodes", err);
	if (node_key)
		sqlite3_bind_text(s, 1, node_key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rt_store_node_key(&local, key), -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		/* several candidates are named by hostname, or by key when a node was asked for (hostnames may repeat) */
		const char *name = (const char *)sqlite3_column_text(s, node_key ? 1 : 2);

		if (count == 0) {
			*node_id = sqlite3_column_int64(s, 0);
			memset(node, 0, sizeof(*node));
			snprintf(node->hostname, sizeof(node->hostname), "%s", sqlite3_column_text(s, 2));
			snprintf(node->machine_id, sizeof(node->machine_id), "%s", sqlite3_column_text(s, 3));
			snprintf(node->cpu_model, sizeof(node->cpu_model), "%s", sqlite3_column_text(s, 4));
			snprintf(node->kernel, sizeof(node->kernel), "%s", sqlite3_column_text(s, 5));
			node->cpu_count = sqlite3_column_int(s, 6);
			node->numa_nodes = sqlite3_column_int(s, 7);
			if (hw_sig)
				snprintf(hw_sig, 32, "%s", sqlite3_column_text(s, 8));
			if (sqlite3_column_int(s, node_key ? 10 : 9)) {
				count = 1;
				break;
			}
		}
		if (strlen(list) + strlen(name) + 3 < sizeof(list))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", count ? ", " : "", name);
		count++;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read nodes", err);
	else if (count == 0 && node_key)
		rc = rt_error_set(err, ENOENT, "no profile of node '%s' in store '%s'", node_key, st->path);
	else if (count == 0)
		rc = rt_error_set(err, ENOENT,
				  "no profile in store '%s' (run 'rtune calibrate' and 'rtune tune', or "
				  "'rtune import')",
				  st->path);
	else if (count > 1 && node_key)
		rc = rt_error_set(err, EEXIST,
				  "several nodes of store '%s' match '%s' (%s): choose one by its key "
				  "MACHINE-ID/HOSTNAME",
				  st->path, node_key, list);
	else if (count > 1)
		rc = rt_error_set(err, EEXIST,
				  "store '%s' holds profiles of several nodes (%s): choose one with --node", st->path,
				  list);
	sqlite3_finalize(s);
	return rc;
}

/* The columns row_read() reads, in its order. */
#define ROW_COLS                                                                                               \
	"device, guid, port, op, qpt, inline_threshold, max_inline_data, signal_interval, sq_depth, cq_depth," \
	" cq_mod_count, cq_mod_period_us, numa_node, cpus, confidence, reasons, measured_at, run_uuid,"        \
	" rtune_version, app, inline_confidence, signal_confidence, hysteresis, signal_verdict"

/* Reads a row of ROW_COLS (from column 0) into t: the public entry with its bounded reasons, and (all) every reason
 * and the hysteresis record. 0 or ENOMEM. */
static int row_read(sqlite3_stmt *s, struct rt_store_tuned *t, bool all)
{
	struct rt_profile_entry *e = &t->e;
	const char *ic = (const char *)sqlite3_column_text(s, 20), *sc = (const char *)sqlite3_column_text(s, 21);

	memset(t, 0, sizeof(*t));
	snprintf(e->device, sizeof(e->device), "%s", sqlite3_column_text(s, 0));
	snprintf(e->guid, sizeof(e->guid), "%s", sqlite3_column_text(s, 1));
	e->port = sqlite3_column_int(s, 2);
	rt_profile_opcode_parse((const char *)sqlite3_column_text(s, 3), &e->opcode);
	rt_profile_qp_type_parse((const char *)sqlite3_column_text(s, 4), &e->qp_type);
	e->inline_threshold = (uint32_t)sqlite3_column_int64(s, 5);
	e->max_inline_data = (uint32_t)sqlite3_column_int64(s, 6);
	e->signal_interval = (uint32_t)sqlite3_column_int64(s, 7);
	e->sq_depth = (uint32_t)sqlite3_column_int64(s, 8);
	e->cq_depth = (uint32_t)sqlite3_column_int64(s, 9);
	e->cq_moderation = sqlite3_column_type(s, 10) != SQLITE_NULL;
	e->cq_mod_count = (uint32_t)sqlite3_column_int64(s, 10);
	e->cq_mod_period_us = (uint32_t)sqlite3_column_int64(s, 11);
	e->numa_node = sqlite3_column_int(s, 12);
	snprintf(e->cpus, sizeof(e->cpus), "%s", sqlite3_column_text(s, 13));
	rt_profile_confidence_parse((const char *)sqlite3_column_text(s, 14), &e->confidence);
	e->measured_at = sqlite3_column_int64(s, 16);
	snprintf(e->run_id, sizeof(e->run_id), "%s", sqlite3_column_text(s, 17));
	snprintf(e->rtune_version, sizeof(e->rtune_version), "%s", sqlite3_column_text(s, 18));
	snprintf(e->app, sizeof(e->app), "%s", sqlite3_column_text(s, 19));
	/* a row from before schema 4: both decisions had the entry's one confidence */
	if (!ic || rt_profile_confidence_parse(ic, &e->inline_confidence))
		e->inline_confidence = e->confidence;
	if (!sc || rt_profile_confidence_parse(sc, &e->signal_confidence))
		e->signal_confidence = e->confidence;
	hysteresis_read((const char *)sqlite3_column_text(s, 22), e, all ? t : NULL);
	snprintf(t->signal_verdict, sizeof(t->signal_verdict), "%s",
		 sqlite3_column_type(s, 23) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(s, 23));
	rt_profile_entry_derive(e);
	return reasons_read((const char *)sqlite3_column_text(s, 15), e, all ? &t->reasons : NULL,
			    all ? &t->n_reasons : NULL);
}

int rt_store_get_profile(struct rt_store *st, const char *node_key, const char *device, struct rt_profile_entry **out,
			 size_t *n, struct rt_node_info *node_out, char *hw_sig, struct rt_error *err)
{
	struct rt_node_info node;
	struct rt_profile_entry *v = NULL;
	sqlite3_stmt *s = NULL;
	int64_t node_id = 0;
	size_t cap = 0;
	int rc, step;

	*out = NULL;
	*n = 0;
	if ((rc = pick_node(st, node_key, &node_id, &node, hw_sig, err)))
		return rc;
	if (node_out)
		*node_out = node;
	if (sqlite3_prepare_v2(
		    st->db,
		    "SELECT " ROW_COLS
		    " FROM profiles p WHERE node_id = ?1 AND (?2 IS NULL OR device = ?2 OR guid = ?2)"
		    " AND id = (SELECT id FROM profiles q WHERE q.node_id = p.node_id AND q.device = p.device"
		    "  AND q.port = p.port AND q.op = p.op AND q.qpt = p.qpt ORDER BY measured_at DESC, id DESC LIMIT 1)"
		    " ORDER BY device, port, op, qpt",
		    -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "read profiles", err);
	sqlite3_bind_int64(s, 1, node_id);
	if (device)
		sqlite3_bind_text(s, 2, device, -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_profile_entry *nv = rt_array_reserve(v, *n, &cap, sizeof(*v));
		struct rt_store_tuned t;

		if (!nv || row_read(s, &t, false)) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		v = nv;
		v[(*n)++] = t.e;
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read profiles", err);
	else if (*n == 0 && device)
		rc = rt_error_set(err, ENOENT, "no profile for device '%s' in store '%s'", device, st->path);
out:
	sqlite3_finalize(s);
	if (rc) {
		free(v);
		*n = 0;
	} else {
		*out = v;
	}
	return rc;
}

int rt_store_profile_base(struct rt_store *st, const struct rt_node_info *node, const struct rt_profile_entry *key,
			  struct rt_store_tuned *out, struct rt_error *err)
{
	char nkey[RT_STORE_NODE_KEY_LEN];
	sqlite3_stmt *s = NULL;
	int rc = 0, step;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(st->db,
			       "SELECT " ROW_COLS
			       " FROM profiles WHERE node_id = (SELECT id FROM nodes WHERE node_key = ?1)"
			       " AND device = ?2 AND (guid = ?3 OR guid = '' OR ?3 = '') AND port = ?4 AND op = ?5"
			       " AND qpt = ?6 AND run_uuid <> ?7 AND measured_at <= ?8"
			       " ORDER BY measured_at DESC, id DESC LIMIT 1",
			       -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "read profile", err);
	sqlite3_bind_text(s, 1, rt_store_node_key(node, nkey), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, key->device, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, key->guid, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 4, key->port);
	sqlite3_bind_text(s, 5, rt_profile_opcode_name(key->opcode), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, rt_profile_qp_type_name(key->qp_type), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, key->run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 8, key->measured_at);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE)
		rc = ENOENT;
	else if (step != SQLITE_ROW)
		rc = rt_store_sql_error(st, "read profile", err);
	else if (row_read(s, out, true))
		rc = rt_error_set(err, ENOMEM, "out of memory");
	sqlite3_finalize(s);
	if (rc)
		rt_store_tuned_release(out);
	return rc;
}

int rt_store_profile_reasons(struct rt_store *st, const char *node_key, const struct rt_profile_entry *e,
			     struct rt_store_reason **out, size_t *n, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0, step;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(
		    st->db,
		    "SELECT p.reasons FROM profiles p JOIN nodes n ON n.id = p.node_id"
		    " WHERE (?1 IS NULL OR n.node_key = ?1 OR n.hostname = ?1) AND p.device = ?2 AND p.port = ?3"
		    " AND p.op = ?4 AND p.qpt = ?5 AND p.run_uuid = ?6 ORDER BY p.id DESC LIMIT 1",
		    -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "read reasons", err);
	if (node_key)
		sqlite3_bind_text(s, 1, node_key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, e->device, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, e->port);
	sqlite3_bind_text(s, 4, rt_profile_opcode_name(e->opcode), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, rt_profile_qp_type_name(e->qp_type), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, e->run_id, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE)
		rc = rt_error_set(err, ENOENT, "no profile entry of run '%s' in store '%s'", e->run_id, st->path);
	else if (step != SQLITE_ROW)
		rc = rt_store_sql_error(st, "read reasons", err);
	else if (reasons_parse((const char *)sqlite3_column_text(s, 0), out, n))
		rc = rt_error_set(err, ENOMEM, "out of memory");
	sqlite3_finalize(s);
	return rc;
}

int rt_store_profile_changes(struct rt_store *st, const char *device, struct rt_store_tuned **out, size_t *n,
			     struct rt_error *err)
{
	struct rt_store_tuned *v = NULL;
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc = 0, step;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT " ROW_COLS " FROM profiles p WHERE (?1 IS NULL OR device = ?1 OR guid = ?1)"
			       " AND EXISTS (SELECT 1 FROM runs r WHERE r.uuid = p.run_uuid)"
			       " ORDER BY measured_at, id",
			       -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "read profiles", err);
	if (device)
		sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_tuned *nv = rt_array_reserve(v, *n, &cap, sizeof(*v));

		if (!nv) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			break;
		}
		v = nv;
		if (row_read(s, &v[*n], true)) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			break;
		}
		rt_store_tuned_release(&v[(*n)++]);
	}
	if (!rc && step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read profiles", err);
	sqlite3_finalize(s);
	if (rc) {
		free(v);
		*n = 0;
	} else {
		*out = v;
	}
	return rc;
}

/* ---- JSON document ---------------------------------------------------------------------------------------------- */

json_t *rt_store_entry_json(const struct rt_profile_entry *e)
{
	char when[32];
	json_t *o, *reasons = json_array();

	rt_profile_time_format(e->measured_at, when);
	for (unsigned i = 0; reasons && i < e->n_reasons; i++)
		json_array_append_new(reasons,
				      json_pack("{s:s, s:s}", "code", e->reasons[i].code, "text", e->reasons[i].text));
	o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:i, s:s, s:s, s:o, s:s, s:s, s:o, s:s}",
		      "device", e->device, "guid", e->guid, "port", e->port, "opcode",
		      rt_profile_opcode_name(e->opcode), "qp_type", rt_profile_qp_type_name(e->qp_type),
		      "inline_threshold", (json_int_t)e->inline_threshold, "max_inline_data",
		      (json_int_t)e->max_inline_data, "signal_interval", (json_int_t)e->signal_interval, "sq_depth",
		      (json_int_t)e->sq_depth, "cq_depth", (json_int_t)e->cq_depth, "cq_moderation",
		      e->cq_moderation ? json_pack("{s:I, s:I}", "count", (json_int_t)e->cq_mod_count, "period_us",
						   (json_int_t)e->cq_mod_period_us)
				       : json_null(),
		      "numa_node", e->numa_node, "cpus", e->cpus, "confidence",
		      rt_profile_confidence_name(e->confidence), "reasons", reasons ? reasons : json_array(),
		      "measured_at", when, "run_id", e->run_id, "app", e->app[0] ? json_string(e->app) : json_null(),
		      "rtune_version", e->rtune_version[0] ? e->rtune_version : RTUNE_VERSION);
	/* 1.2: each decision's confidence, and the runs that support it (hysteresis) */
	if (o)
		json_object_update_new(o,
				       json_pack("{s:s, s:s, s:{s:{s:I, s:s}, s:{s:I, s:s}}}", "inline_confidence",
						 rt_profile_confidence_name(e->inline_confidence), "signal_confidence",
						 rt_profile_confidence_name(e->signal_confidence), "evidence", "inline",
						 "runs", (json_int_t)(e->inline_runs ? e->inline_runs : 1), "since_run",
						 e->inline_since[0] ? e->inline_since : e->run_id, "signal", "runs",
						 (json_int_t)(e->signal_runs ? e->signal_runs : 1), "since_run",
						 e->signal_since[0] ? e->signal_since : e->run_id));
	/* 1.3: what the run measured at the decision */
	if (o && e->has_measured)
		json_object_set_new(o, "measured", rt_store_measured_json(e));
	return o;
}

/* The node's current hardware as recorded by its calibration runs or its imported profile's "hardware" object
 * (devices, PCIe, NUMA; per device name the one seen last, rt_store_node_devices): what `rtune report` groups nodes by
 * and names outliers' causes from. NULL when the store has no device rows for the node (an imported profile without
 * "hardware"). */
static json_t *hardware_json(struct rt_store *st, const struct rt_node_info *node)
{
	struct rt_device_info *devs = NULL;
	char key[RT_STORE_NODE_KEY_LEN];
	json_t *arr, *hw = NULL;
	size_t nd = 0;

	if (rt_store_node_devices(st, rt_store_node_key(node, key), &devs, &nd, NULL) || nd == 0) {
		free(devs);
		return NULL;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < nd; i++) {
		const struct rt_device_info *d = &devs[i];
		json_t *pcie = json_null(), *o;

		if (d->pci_addr[0] || d->pcie_speed[0] || d->pcie_width > 0) /* a PCI device (imported: no address) */
			pcie = json_pack(
				"{s:s, s:i, s:o, s:o}", "speed", d->pcie_speed, "width", d->pcie_width,
				"max_payload_bytes",
				d->pcie_max_payload_bytes ? json_integer(d->pcie_max_payload_bytes) : json_null(),
				"max_read_request_bytes",
				d->pcie_max_read_req_bytes ? json_integer(d->pcie_max_read_req_bytes) : json_null());
		o = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:i, s:o, s:o}", "name", d->name, "guid", d->node_guid,
			      "vendor_id", (json_int_t)d->vendor_id, "vendor_part_id", (json_int_t)d->vendor_part_id,
			      "fw_ver", d->fw_ver, "link_layer", d->port_count ? d->ports[0].link_layer : "",
			      "active_mtu", d->port_count ? d->ports[0].active_mtu_bytes : 0, "numa_node",
			      d->numa_node >= 0 ? json_integer(d->numa_node) : json_null(), "pcie", pcie);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (arr)
		hw = json_pack("{s:s, s:i, s:o}", "cpu_model", node->cpu_model, "numa_nodes",
			       node->numa_nodes > 0 ? node->numa_nodes : 1, "devices", arr);
	free(devs);
	return hw;
}

/* Where the run behind an entry measured from: {"cpu_numa_node": n|null, "numa_local": bool}, from the run when the
 * store holds it, else from what an imported entry's own profile said; NULL when neither is known. */
static json_t *calibration_json(struct rt_store *st, const char *run_uuid)
{
	sqlite3_stmt *s = NULL;
	json_t *o = NULL;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT json_extract(env, '$.cpu_numa_node'), json_extract(env, '$.numa_local')"
			       " FROM runs WHERE uuid = ?1 AND json_valid(env)",
			       -1, &s, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(s, 1, run_uuid, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_ROW) {
		/* not a run of this store: what the entry's own node said when it was imported */
		sqlite3_finalize(s);
		s = NULL;
		if (sqlite3_prepare_v2(st->db,
				       "SELECT cal_cpu_numa_node, cal_numa_local FROM profiles WHERE run_uuid = ?1"
				       " AND cal_numa_local IS NOT NULL LIMIT 1",
				       -1, &s, NULL) != SQLITE_OK)
			goto out;
		sqlite3_bind_text(s, 1, run_uuid, -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_ROW)
			goto out;
	}
	{
		sqlite3_int64 node = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);

		o = json_pack("{s:o, s:b}", "cpu_numa_node", node >= 0 ? json_integer(node) : json_null(), "numa_local",
			      sqlite3_column_int(s, 1) != 0);
	}
out:
	sqlite3_finalize(s);
	return o;
}

static json_t *document(struct rt_store *st, const struct rt_node_info *node, const char *hw_sig,
			const struct rt_profile_entry *v, size_t n)
{
	char ver[16], now[32];
	json_t *entries = json_array(), *doc, *hw;

	snprintf(ver, sizeof(ver), "%d.%d", RT_PROFILE_SCHEMA_MAJOR, RT_PROFILE_SCHEMA_MINOR);
	rt_profile_time_format((int64_t)time(NULL), now);
	for (size_t i = 0; entries && i < n; i++) {
		struct rt_profile_entry m = v[i];
		struct rt_run run;
		json_t *e, *cal;

		/* the measured evidence from the run behind the entry, when this store holds it */
		if (!m.has_measured && rt_store_run_load(st, m.run_id, NULL, &run, NULL) == 0) {
			rt_store_measure_entry(&run, &m);
			rt_run_release(&run);
		}
		e = rt_store_entry_json(&m);
		cal = e ? calibration_json(st, v[i].run_id) : NULL;

		if (cal)
			json_object_set_new(e, "calibration", cal);
		/* 1.4: the N per load band */
		if (e && json_object_set_new(e, "bands", rt_store_entry_bands_json(st, &v[i]))) {
			json_decref(e);
			e = NULL;
		}
		if (!e || json_array_append_new(entries, e)) {
			json_decref(entries);
			return NULL;
		}
	}
	doc = json_pack("{s:{s:s, s:s}, s:s, s:s, s:o, s:o}", "schema", "name", RT_PROFILE_SCHEMA_NAME, "version", ver,
			"rtune_version", RTUNE_VERSION, "generated_at", now, "node", rt_store_node_json(node, hw_sig),
			"entries", entries);
	hw = doc ? hardware_json(st, node) : NULL;
	if (hw)
		json_object_set_new(doc, "hardware", hw);
	/* 1.4: what the runs behind the entries skipped, and why */
	if (doc && json_object_set_new(doc, "skipped", rt_store_skipped_json(st, v, n))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *rt_store_node_json(const struct rt_node_info *node, const char *hw_signature)
{
	/* the schema requires a hostname: a node known only by its machine-id is named by it */
	const char *host = node->hostname[0] ? node->hostname : node->machine_id[0] ? node->machine_id : "unknown";

	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s}", "hostname", host, "machine_id", node->machine_id,
			 "cpu_model", node->cpu_model, "kernel", node->kernel, "cpu_count", node->cpu_count,
			 "numa_nodes", node->numa_nodes > 0 ? node->numa_nodes : 1, "hardware_signature",
			 hw_signature ? hw_signature : "");
}

/* ---- env and prometheus ------------------------------------------------------------------------------------------ */

/* "mlx5_0" -> "MLX5_0": the suffix of per-device variable names. */
static void env_suffix(const char *dev, int port, char *out, size_t len)
{
	size_t i = 0;

	for (; dev[i] && i + 1 < len; i++)
		out[i] = isalnum((unsigned char)dev[i]) ? (char)toupper((unsigned char)dev[i]) : '_';
	snprintf(out + i, len - i, "_P%d", port);
}

/* Single-quoted for a POSIX shell. */
static void shell_quote(struct rt_buf *b, const char *s)
{
	rt_buf_printf(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			rt_buf_printf(b, "'\\''");
		else
			rt_buf_printf(b, "%c", *s);
	}
	rt_buf_printf(b, "'");
}

static const struct rt_profile_entry *find(const struct rt_profile_entry *v, size_t n, enum rt_profile_opcode op)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].opcode == op && v[i].qp_type == RT_PROFILE_QPT_RC)
			return &v[i];
	return NULL;
}

static void format_env(struct rt_buf *b, struct rt_store *st, const struct rt_node_info *node,
		       const struct rt_profile_entry *v, size_t n, const char *profile_path)
{
	json_t *skipped;

	const struct rt_profile_entry *first = find(v, n, RT_PROFILE_OP_SEND);

	if (!first)
		first = find(v, n, RT_PROFILE_OP_WRITE);
	rt_buf_printf(b, "# rtune %s profile of %s; eval \"$(rtune export --format env)\"\n", RTUNE_VERSION,
		      node->hostname);
	if (profile_path) {
		rt_buf_printf(b, "export RTUNE_PROFILE=");
		shell_quote(b, profile_path);
		rt_buf_printf(b, "\n");
	} else {
		rt_buf_printf(b, "# RTUNE_PROFILE: write the JSON profile with 'rtune export -o FILE' and export "
				 "RTUNE_PROFILE=FILE\n");
	}
	if (first) {
		rt_buf_printf(
			b, "# libfabric verbs provider and UCX take one value per process: from %s port %d (RC %s)\n",
			first->device, first->port, rt_profile_opcode_name(first->opcode));
		/* libfabric reads FI_VERBS_INLINE_SIZE=0 as "the device's maximum" (verbs_init.c): never inline is
		 * left to libfabric's default rather than exported as its opposite (docs/profile-schema.md) */
		if (first->inline_threshold)
			rt_buf_printf(b, "export FI_VERBS_INLINE_SIZE=%" PRIu32 "\n", first->inline_threshold);
		else
			rt_buf_printf(b, "# FI_VERBS_INLINE_SIZE not set: the profile never inlines and libfabric "
					 "reads 0 as the device's maximum\n");
		/* UCX_RC_* reaches rc_verbs and rc_mlx5 (their tables nest uct_rc_iface_config_table under "RC_");
		 * UCX signals a WQE once `unsignaled >= TX_CQ_MODERATION` (rc_ep.h), i.e. one in moderation + 1 */
		rt_buf_printf(b, "export UCX_RC_TX_MIN_INLINE=%" PRIu32 "\n", first->max_inline_data);
		rt_buf_printf(b, "export UCX_RC_TX_CQ_MODERATION=%" PRIu32 "\n",
			      first->signal_interval ? first->signal_interval - 1 : 0);
	}
	for (size_t i = 0; i < n; i++) {
		const struct rt_profile_entry *e = &v[i];
		char dev[96], sfx[112];

		/* send on RC (the names without a QP type, as ever) and on EFA's SRD (…_SRD_<DEV>_P<PORT>: what EFA users
		 * send on; libfabric's efa provider and UCX take no inline or signaling setting, so only rtune's names) */
		if ((e->qp_type != RT_PROFILE_QPT_RC && e->qp_type != RT_PROFILE_QPT_SRD) ||
		    e->opcode != RT_PROFILE_OP_SEND)
			continue;
		env_suffix(e->device, e->port, dev, sizeof(dev));
		snprintf(sfx, sizeof(sfx), "%s%s", e->qp_type == RT_PROFILE_QPT_SRD ? "SRD_" : "", dev);
		rt_buf_printf(b, "export RTUNE_INLINE_THRESHOLD_%s=%" PRIu32 "\n", sfx, e->inline_threshold);
		rt_buf_printf(b, "export RTUNE_MAX_INLINE_DATA_%s=%" PRIu32 "\n", sfx, e->max_inline_data);
		rt_buf_printf(b, "export RTUNE_SIGNAL_INTERVAL_%s=%" PRIu32 "\n", sfx, e->signal_interval);
		rt_buf_printf(b, "export RTUNE_SQ_DEPTH_%s=%" PRIu32 "\n", sfx, e->sq_depth);
		/* 1.4: the N per load band, for applications that size their signaling by message size or post list */
		json_t *bands = rt_store_entry_bands_json(st, e);

		if (!bands)
			b->oom = true;
		rt_store_env_bands(b, bands, sfx);
		json_decref(bands);
	}
	/* what calibrate could not measure stays visible where the values are used */
	if (!(skipped = rt_store_skipped_json(st, v, n)))
		b->oom = true;
	for (size_t i = 0; i < json_array_size(skipped); i++) {
		char line[512];

		rt_store_skip_line(json_array_get(skipped, i), line, sizeof(line));
		rt_buf_printf(b, "# skipped by calibrate: %s\n", line);
	}
	json_decref(skipped);
}

/* {"entries": [entry + "bands"], "skipped": [...]}: what rt_store_prom_bands() reads of a profile document, or NULL
 * when out of memory. */
static json_t *bands_document(struct rt_store *st, const struct rt_profile_entry *v, size_t n)
{
	json_t *entries = json_array(), *doc = json_object();

	if (!entries || !doc || json_object_set_new(doc, "entries", entries)) {
		json_decref(entries);
		json_decref(doc);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = rt_store_entry_json(&v[i]);

		if (!e || json_object_set_new(e, "bands", rt_store_entry_bands_json(st, &v[i])) ||
		    json_array_append_new(entries, e)) {
			json_decref(doc);
			return NULL;
		}
	}
	if (json_object_set_new(doc, "skipped", rt_store_skipped_json(st, v, n))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void prom_label(struct rt_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			rt_buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			rt_buf_printf(b, "\\n");
		else
			rt_buf_printf(b, "%c", *s);
	}
}

static void format_prometheus(struct rt_buf *b, struct rt_store *st, const struct rt_node_info *node,
			      const struct rt_profile_entry *v, size_t n)
{
	json_t *doc;

	static const struct {
		const char *name, *help;
	} metrics[] = {
		{ "rtune_inline_threshold_bytes",
		  "Largest message size rtune recommends to post with IBV_SEND_INLINE." },
		{ "rtune_max_inline_data_bytes", "max_inline_data rtune recommends at QP creation." },
		{ "rtune_signal_interval", "rtune recommends one IBV_SEND_SIGNALED WR every this many." },
		{ "rtune_sq_depth", "Send queue depth rtune recommends." },
		{ "rtune_cq_depth", "Send CQ depth rtune recommends." },
		{ "rtune_profile_confidence", "Confidence of the profile entry: 0 low, 1 medium, 2 high." },
		{ "rtune_profile_measured_timestamp_seconds", "When the profile entry was measured (unix time)." },
		{ "rtune_profile_age_seconds", "Age of the profile entry when this file was written." },
		{ "rtune_inline_confidence", "Confidence of the inline threshold: 0 low, 1 medium, 2 high." },
		{ "rtune_signal_confidence", "Confidence of the signal interval: 0 low, 1 medium, 2 high." },
		{ "rtune_inline_evidence_runs", "Calibration runs that support the inline threshold." },
		{ "rtune_signal_evidence_runs", "Calibration runs that support the signal interval." },
	};
	int64_t now = (int64_t)time(NULL);

	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		rt_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", metrics[m].name, metrics[m].help, metrics[m].name);
		for (size_t i = 0; i < n; i++) {
			const struct rt_profile_entry *e = &v[i];
			int64_t val;

			switch (m) {
			case 0: val = e->inline_threshold; break;
			case 1: val = e->max_inline_data; break;
			case 2: val = e->signal_interval; break;
			case 3: val = e->sq_depth; break;
			case 4: val = e->cq_depth; break;
			case 5: val = e->confidence; break;
			case 6: val = e->measured_at; break;
			case 7: val = now > e->measured_at ? now - e->measured_at : 0; break;
			case 8: val = e->inline_confidence; break;
			case 9: val = e->signal_confidence; break;
			case 10: val = e->inline_runs; break;
			default: val = e->signal_runs; break;
			}
			rt_buf_printf(b, "%s{node=\"", metrics[m].name);
			prom_label(b, node->hostname);
			rt_buf_printf(b, "\",device=\"");
			prom_label(b, e->device);
			rt_buf_printf(b, "\",port=\"%d\",opcode=\"%s\",qp_type=\"%s\"} %" PRId64 "\n", e->port,
				      rt_profile_opcode_name(e->opcode), rt_profile_qp_type_name(e->qp_type), val);
		}
	}
	/* 1.4's bands and skips: the families the agent's textfile writes too, through the same code */
	if (!(doc = bands_document(st, v, n)))
		b->oom = true;
	rt_store_prom_bands(b, doc, node->hostname);
	json_decref(doc);
}

int rt_export_format_parse(const char *s, enum rt_export_format *out)
{
	if (!strcmp(s, "json"))
		*out = RT_EXPORT_JSON;
	else if (!strcmp(s, "env"))
		*out = RT_EXPORT_ENV;
	else if (!strcmp(s, "prometheus"))
		*out = RT_EXPORT_PROMETHEUS;
	else
		return EINVAL;
	return 0;
}

int rt_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, struct rt_error *err)
{
	return rt_out_write_file(path, data, len, mode, err);
}

static int emit(const char *path, const char *data, size_t len, struct rt_error *err)
{
	if (!path) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
			return rt_error_set(err, EIO, "cannot write to standard output");
		return 0;
	}
	return rt_write_file_atomic(path, data, len, 0644, err);
}

int rt_store_export(struct rt_store *st, const char *node_key, enum rt_export_format fmt, const char *path,
		    const char *profile_path, struct rt_error *err)
{
	struct rt_profile_entry *v = NULL;
	struct rt_node_info node;
	struct rt_buf b = { 0 };
	char sig[32] = "";
	size_t n = 0;
	int rc;

	if ((rc = rt_store_get_profile(st, node_key, NULL, &v, &n, &node, sig, err)))
		return rc;
	if (fmt == RT_EXPORT_JSON) {
		json_t *doc = document(st, &node, sig, v, n);
		char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

		json_decref(doc);
		if (!text) {
			rc = rt_error_set(err, ENOMEM, "cannot build the profile document: out of memory");
			goto out;
		}
		rt_buf_printf(&b, "%s\n", text);
		free(text);
	} else if (fmt == RT_EXPORT_ENV) {
		format_env(&b, st, &node, v, n, profile_path);
	} else {
		format_prometheus(&b, st, &node, v, n);
	}
	if (b.oom) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	rc = emit(path, b.p ? b.p : "", b.len, err);
out:
	free(b.p);
	free(v);
	return rc;
}

int rt_store_profile_document(struct rt_store *st, const struct rt_node_info *node, const char *hw_sig,
			      const struct rt_profile_entry *v, size_t n, char **text_out, size_t *len_out,
			      struct rt_error *err)
{
	json_t *doc = document(st, node, hw_sig, v, n);
	char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	size_t len = text ? strlen(text) : 0;
	char *nl = text ? realloc(text, len + 2) : NULL;

	json_decref(doc);
	*text_out = NULL;
	*len_out = 0;
	if (!nl) {
		free(text);
		return rt_error_set(err, ENOMEM, "cannot build the profile document: out of memory");
	}
	nl[len] = '\n';
	nl[len + 1] = '\0';
	*text_out = nl;
	*len_out = len + 1;
	return 0;
}

/* ---- import ------------------------------------------------------------------------------------------------------ */

/* What a document's "hardware" object says about one device: the fields the store keeps for an imported node. */
struct import_dev {
	char name[RT_NAME_LEN];
	char guid[24];
	char fw_ver[RT_NAME_LEN];
	char link_layer[16];
	char pcie_speed[32];
	uint32_t vendor_id, vendor_part_id;
	int numa_node, active_mtu_bytes, pcie_width, pcie_max_payload_bytes, pcie_max_read_req_bytes;
	bool has_pcie;
};

/* Most devices taken from one document's "hardware" object (more are ignored). */
#define IMPORT_MAX_DEVS 64

/*
 * A profile document parsed and validated off the store, each entry's reasons already serialised: all an import needs
 * but the writes. Built on any thread (no store involved). One allocation besides the profile: the arrays and the
 * reasons texts follow the struct, so the writer thread that frees it frees two blocks, not a dozen.
 */
struct prepared {
	struct rt_profile *p;
	const char **reasons;	 /* [p->n_entries]: each entry's reasons as JSON text */
	struct rt_cal *cal;	 /* [p->n_entries]: each entry's "calibration" object */
	const char **extra;	 /* [p->n_entries]: each entry's bands and its run's skips as JSON text, "" for none */
	struct import_dev *devs; /* [n_devs]: the document's "hardware" devices */
	size_t n_devs;
};

static void prepared_free(struct prepared *pr)
{
	if (!pr)
		return;
	rt_profile_free(pr->p);
	free(pr);
}

/*
 * A producing thread's state, reused from file to file: the file buffer, the arena that holds each document's
 * jansson tree (dropped whole once its fields are copied out), the reasons texts and devices of the document in
 * progress.
 */
struct import_scratch {
	char *buf;
	size_t cap;
	struct rt_json_arena arena;
	struct rt_buf reasons; /* the entries' reasons texts, each NUL-terminated */
	size_t *reason_off;    /* [reason_cap]: where each entry's text starts in reasons */
	struct rt_buf extra;   /* the entries' extra texts (rt_store_import_extra), each NUL-terminated */
	size_t *extra_off;     /* [reason_cap]: where each entry's extra text starts */
	size_t reason_cap;
	struct import_dev devs[IMPORT_MAX_DEVS];
};

static void import_scratch_free(void *scratch)
{
	struct import_scratch *sc = scratch;

	if (!sc)
		return;
	free(sc->buf);
	free(sc->reasons.p);
	free(sc->reason_off);
	free(sc->extra.p);
	free(sc->extra_off);
	rt_json_arena_end(&sc->arena);
	free(sc);
}

/* An integer member in lo..hi, else dflt. */
/* An integer member value v in lo..hi, else dflt (absent, another type, out of range). */
static int jv_int_in(const struct rt_jv *v, long long lo, long long hi, int dflt)
{
	if (v->t != RT_JV_INT || v->i < lo || v->i > hi)
		return dflt;
	return (int)v->i;
}

/* A string member value v into dst[len] (cut at a UTF-8 character boundary), "" when it is no string. */
static void jv_copy_str(char *dst, size_t len, const struct rt_jv *v)
{
	size_t n = v->t == RT_JV_STR ? rt_profile_utf8_fit(v->s, v->n, len) : 0;

	if (n)
		memcpy(dst, v->s, n);
	dst[n] = '\0';
}

/*
 * Reads the optional "hardware" object (docs/profile-schema.md; hw, in the document the cursor l walks) into
 * sc->devs, so that an imported node keeps what `rtune report` groups by and `rtune export` writes back. Lenient like
 * every reader of optional fields: a malformed object or device is skipped, out-of-range numbers read as unknown.
 * Returns the number of devices read.
 */
static size_t hardware_from_doc(struct rt_jlex *l, const struct rt_jv *hw, struct import_scratch *sc)
{
	static const char *const dev_keys[] = { "name",	     "guid",	   "fw_ver",	 "vendor_id", "vendor_part_id",
						"numa_node", "link_layer", "active_mtu", "pcie" };
	static const char *const pcie_keys[] = { "speed", "width", "max_payload_bytes", "max_read_request_bytes" };
	struct rt_jv devs_v, devs[IMPORT_MAX_DEVS];
	size_t cnt, n = 0;

	if (hw->t != RT_JV_OBJ || rt_jlex_member(l, hw, "devices", &devs_v))
		return 0;
	cnt = rt_jlex_elements(l, &devs_v, devs, IMPORT_MAX_DEVS);
	for (size_t i = 0; i < cnt; i++) {
		struct import_dev *o = &sc->devs[n];
		struct rt_jv d[9], pc[4];

		if (devs[i].t != RT_JV_OBJ || rt_jlex_members(l, &devs[i], dev_keys, 9, d) || d[0].t != RT_JV_STR)
			continue;
		jv_copy_str(o->name, sizeof(o->name), &d[0]);
		if (!o->name[0])
			continue;
		jv_copy_str(o->guid, sizeof(o->guid), &d[1]);
		jv_copy_str(o->fw_ver, sizeof(o->fw_ver), &d[2]);
		o->vendor_id = (uint32_t)jv_int_in(&d[3], 0, UINT32_MAX >> 1, 0);
		o->vendor_part_id = (uint32_t)jv_int_in(&d[4], 0, UINT32_MAX >> 1, 0);
		o->numa_node = jv_int_in(&d[5], 0, RT_PROFILE_MAX_NUMA, -1);
		jv_copy_str(o->link_layer, sizeof(o->link_layer), &d[6]);
		o->active_mtu_bytes = jv_int_in(&d[7], 0, 65536, 0);
		o->has_pcie = d[8].t == RT_JV_OBJ;
		o->pcie_speed[0] = '\0';
		o->pcie_width = o->pcie_max_payload_bytes = o->pcie_max_read_req_bytes = 0;
		if (o->has_pcie) {
			if (rt_jlex_members(l, &d[8], pcie_keys, 4, pc))
				memset(pc, 0, sizeof(pc));
			jv_copy_str(o->pcie_speed, sizeof(o->pcie_speed), &pc[0]);
			o->pcie_width = jv_int_in(&pc[1], 0, 64, 0);
			o->pcie_max_payload_bytes = jv_int_in(&pc[2], 0, 4096, 0);
			o->pcie_max_read_req_bytes = jv_int_in(&pc[3], 0, 4096, 0);
		}
		n++;
	}
	return n;
}

/* Reads each of the n entries' optional "calibration" object ({"cpu_numa_node": n|null, "numa_local": bool}; where
 * the reader found them, x) into cal. */
static void calibration_from_doc(struct rt_jlex *l, const struct rt_profile_scan_extra *x, size_t n, struct rt_cal *cal)
{
	static const char *const keys[] = { "cpu_numa_node", "numa_local" };

	for (size_t i = 0; i < n; i++) {
		struct rt_jv v[2] = { { 0 } };

		if (i < x->n_calibration && rt_jlex_members(l, &x->calibration[i], keys, 2, v))
			memset(v, 0, sizeof(v));
		cal[i].cpu_numa_node = jv_int_in(&v[0], 0, RT_PROFILE_MAX_NUMA, -1);
		cal[i].numa_local = v[1].t == RT_JV_TRUE ? 1 : v[1].t == RT_JV_FALSE ? 0 : -1;
	}
}

static int dump_append(struct rt_buf *b, const json_t *j);

/* Appends entry e's reasons, as the JSON text the store keeps, and a NUL to b (json_dumpb: no allocation of its own,
 * the array is built in the thread's arena). 0 or ENOMEM. */
static int reasons_append(struct rt_buf *b, const struct rt_profile_entry *e)
{
	json_t *a = json_array();

	for (unsigned i = 0; a && i < e->n_reasons && i < RT_PROFILE_MAX_REASONS; i++) {
		/* built directly (json_pack parses its format string for every reason); the texts are valid UTF-8 (from
		 * a parsed document, cut by librtune at a character boundary), so NULL here is out of memory */
		json_t *o = json_object();

		if (!o || json_object_set_new_nocheck(o, "code", json_string(e->reasons[i].code)) ||
		    json_object_set_new_nocheck(o, "text", json_string(e->reasons[i].text)) ||
		    json_array_append_new(a, o))
			return ENOMEM;
	}
	if (!a)
		return ENOMEM;
	return dump_append(b, a);
}

/* Appends the compact JSON text of j and a NUL to b (json_dumpb: no allocation of its own, so j may live in the
 * thread's arena); j NULL appends an empty text. 0 or ENOMEM. */
static int dump_append(struct rt_buf *b, const json_t *j)
{
	size_t need;

	/* into the room left (a buffer is made first); when the text does not fit, json_dumpb only tells its size: grow
	 * and dump again */
	if (!b->p && !(b->p = rt_array_reserve(NULL, 0, &b->cap, 1)))
		return ENOMEM;
	if (!j) {
		if (b->len + 1 >= b->cap) {
			char *n = rt_array_reserve(b->p, b->len + 1, &b->cap, 1);

			if (!n)
				return ENOMEM;
			b->p = n;
		}
		b->p[b->len++] = '\0';
		return 0;
	}
	need = json_dumpb(j, b->p + b->len, b->cap - b->len, JSON_COMPACT);
	if (need == 0)
		return ENOMEM;
	if (b->len + need >= b->cap) {
		while (b->len + need >= b->cap) {
			char *n = rt_array_reserve(b->p, b->len + need, &b->cap, 1);

			if (!n)
				return ENOMEM;
			b->p = n;
		}
		if (json_dumpb(j, b->p + b->len, b->cap - b->len, JSON_COMPACT) != need)
			return ENOMEM;
	}
	b->len += need;
	b->p[b->len++] = '\0';
	return 0;
}

/*
 * Parses and validates text (name for messages) with librtune's single-pass reader and the scratch's buffers and
 * arena; 0 and *out, or an errno + err. The JSON texts the store keeps (reasons, extras) are built as jansson trees in
 * the arena only while they are dumped.
 */
static int prepare_text(struct import_scratch *sc, const char *name, const char *text, size_t len,
			struct prepared **out, struct rt_error *err)
{
	struct rt_profile *p = NULL;
	struct prepared *pr;
	struct rt_cal cal_stack[16], *cal = cal_stack;
	struct rt_profile_scan_extra found = { 0 };
	struct rt_jlex l;
	size_t n, n_devs, size, off_cal, off_devs, off_text;
	unsigned char *block;
	int rc;

	*out = NULL;
	rt_jlex_init(&l, text, len);
	rt_json_arena_begin(&sc->arena);
	/* librtune's single-pass reader (what applications accept), which also finds the hardware and calibrations */
	if ((rc = rt_profile_scan(text, len, name, &p, &found, err)))
		goto out;
	n = p->n_entries;
	if (n > sizeof(cal_stack) / sizeof(cal_stack[0]) && !(cal = calloc(n, sizeof(*cal)))) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (n > sc->reason_cap) {
		size_t *o = realloc(sc->reason_off, n * sizeof(*o));

		if (!o) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		sc->reason_off = o;
		if (!(o = realloc(sc->extra_off, n * sizeof(*o)))) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		sc->extra_off = o;
		sc->reason_cap = n;
	}
	n_devs = hardware_from_doc(&l, &found.hardware, sc);
	calibration_from_doc(&l, &found, n, cal);
	sc->reasons.len = 0;
	sc->extra.len = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *x = NULL; /* in the arena: no decref needed */

		sc->reason_off[i] = sc->reasons.len;
		sc->extra_off[i] = sc->extra.len;
		if (reasons_append(&sc->reasons, &p->entries[i]) || rt_store_import_extra(p, i, &x) ||
		    dump_append(&sc->extra, x)) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
	}
	/* one block: struct, reasons pointers, calibrations, devices, texts (each part's alignment divides the sizes
	 * before it: pointers first, then 4-byte structs, then bytes) */
	off_cal = sizeof(*pr) + 2 * n * sizeof(char *);
	off_devs = off_cal + n * sizeof(struct rt_cal);
	off_text = off_devs + n_devs * sizeof(struct import_dev);
	size = off_text + sc->reasons.len + sc->extra.len;
	if (!(block = malloc(size))) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	pr = (struct prepared *)(void *)block;
	pr->p = p;
	pr->reasons = (const char **)(void *)(block + sizeof(*pr));
	pr->extra = pr->reasons + n;
	pr->cal = (struct rt_cal *)(void *)(block + off_cal);
	pr->devs = (struct import_dev *)(void *)(block + off_devs);
	pr->n_devs = n_devs;
	memcpy(pr->cal, cal, n * sizeof(*cal));
	memcpy(pr->devs, sc->devs, n_devs * sizeof(*pr->devs));
	if (sc->reasons.len) /* no entries: nothing (and maybe no buffer) to copy */
		memcpy(block + off_text, sc->reasons.p, sc->reasons.len);
	if (sc->extra.len)
		memcpy(block + off_text + sc->reasons.len, sc->extra.p, sc->extra.len);
	for (size_t i = 0; i < n; i++) {
		pr->reasons[i] = (const char *)block + off_text + sc->reason_off[i];
		pr->extra[i] = (const char *)block + off_text + sc->reasons.len + sc->extra_off[i];
	}
	p = NULL;
	*out = pr;
out:
	/* the reasons' and extras' trees are in the arena: dropped whole, no json_decref walk */
	rt_json_arena_leave(&sc->arena);
	rt_jlex_fini(&l);
	rt_profile_scan_extra_free(&found);
	if (cal != cal_stack)
		free(cal);
	rt_profile_free(p);
	return rc;
}

/* Reads and prepares the file at path with the scratch's buffers; 0 and *out, or an errno + err. */
static int prepare_file(struct import_scratch *sc, const char *path, struct prepared **out, struct rt_error *err)
{
	size_t len;
	int rc;

	*out = NULL;
	if ((rc = rt_profile_read_file_into(path, &sc->buf, &sc->cap, &len, err)))
		return rc;
	return prepare_text(sc, path, sc->buf, len, out, err);
}

/* Fills d, the writer's device record, from an imported device (everything a device upsert reads is set). */
static void device_from_import(struct rt_device_info *d, const struct import_dev *o)
{
	/* the fixed part and port 1; the ports' GID tables are never read for a port without GIDs */
	memset(d, 0, offsetof(struct rt_device_info, ports));
	memset(&d->ports[0], 0, offsetof(struct rt_port_info, gids));
	memcpy(d->name, o->name, sizeof(d->name));
	memcpy(d->node_guid, o->guid, sizeof(d->node_guid));
	memcpy(d->fw_ver, o->fw_ver, sizeof(d->fw_ver));
	d->vendor_id = o->vendor_id;
	d->vendor_part_id = o->vendor_part_id;
	d->numa_node = o->numa_node;
	d->max_inline_rc = d->max_inline_ud = -1;
	memcpy(d->pcie_speed, o->pcie_speed, sizeof(d->pcie_speed));
	d->pcie_width = o->pcie_width;
	d->pcie_max_payload_bytes = o->pcie_max_payload_bytes;
	d->pcie_max_read_req_bytes = o->pcie_max_read_req_bytes;
	d->port_count = 1;
	d->ports[0].port_num = 1;
	memcpy(d->ports[0].link_layer, o->link_layer, sizeof(d->ports[0].link_layer));
	d->ports[0].active_mtu_bytes = o->active_mtu_bytes;
}

/*
 * Writes a prepared document inside the caller's open transaction (node, devices, entries); counts entries added and
 * skipped. dev is the caller's scratch device record. On failure the transaction holds part of the document: the
 * caller rolls back.
 */
static int write_rows(struct rt_store *st, const struct prepared *pr, struct rt_device_info *dev, size_t *added,
		      size_t *skipped, struct rt_error *err)
{
	const struct rt_profile *p = pr->p;
	struct rt_node_info node;
	size_t cnt = 0;
	int64_t node_id, newest_s = 0;
	bool created;
	int rc;

	memset(&node, 0, sizeof(node));
	snprintf(node.hostname, sizeof(node.hostname), "%s", p->hostname);
	snprintf(node.machine_id, sizeof(node.machine_id), "%s", p->machine_id);
	snprintf(node.cpu_model, sizeof(node.cpu_model), "%s", p->cpu_model);
	snprintf(node.kernel, sizeof(node.kernel), "%s", p->kernel);
	node.cpu_count = p->cpu_count;
	node.numa_nodes = p->numa_nodes;
	if ((rc = rt_store_node_upsert(st, &node, p->hw_signature, &node_id, &created, err)))
		return rc;
	/* the document's hardware is as new as its newest measurement: a profile older than what the store already
	 * knows of a device does not make it current again */
	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].measured_at > newest_s)
			newest_s = p->entries[i].measured_at;
	for (size_t i = 0; i < pr->n_devs; i++) {
		int64_t dev_id;

		device_from_import(dev, &pr->devs[i]);
		if ((rc = rt_store_device_upsert(st, node_id, dev, created, newest_s * 1000000000, &dev_id, err)))
			return rc;
	}
	if ((rc = insert_entries(st, node_id, p->entries, NULL, p->n_entries, pr->reasons, pr->cal,
				 (const char *const *)pr->extra, &cnt, err)))
		return rc;
	*added = cnt;
	*skipped = p->n_entries - cnt;
	return 0;
}

/* Imports one prepared document as one transaction (a savepoint in batch mode). */
static int write_prepared(struct rt_store *st, const struct prepared *pr, size_t *added, size_t *skipped,
			  struct rt_error *err)
{
	struct rt_device_info *dev = malloc(sizeof(*dev));
	int rc;

	if (!dev)
		return rt_error_set(err, ENOMEM, "out of memory");
	if ((rc = rt_store_begin(st, err)))
		goto out;
	if ((rc = write_rows(st, pr, dev, added, skipped, err)) || (rc = rt_store_commit(st, err)))
		rt_store_rollback(st);
out:
	free(dev);
	return rc;
}

/* The import of one document from text (name) or from the file at path: prepared here, then written. */
static int import_one(struct rt_store *st, const char *name, const char *text, size_t len, const char *path,
		      size_t *added, size_t *skipped, struct rt_error *err)
{
	struct import_scratch *sc = calloc(1, sizeof(*sc));
	struct prepared *pr = NULL;
	int rc;

	if (added)
		*added = 0;
	if (skipped)
		*skipped = 0;
	if (!sc)
		return rt_error_set(err, ENOMEM, "out of memory");
	rc = path ? prepare_file(sc, path, &pr, err) : prepare_text(sc, name, text, len, &pr, err);
	if (!rc) {
		size_t a = 0, k = 0;

		rc = write_prepared(st, pr, &a, &k, err);
		if (!rc && added)
			*added = a;
		if (!rc && skipped)
			*skipped = k;
	}
	prepared_free(pr);
	import_scratch_free(sc);
	return rc;
}

int rt_store_import_text(struct rt_store *st, const char *name, const char *text, size_t len, size_t *added,
			 size_t *skipped, struct rt_error *err)
{
	return import_one(st, name, text, len, NULL, added, skipped, err);
}

int rt_store_import_file(struct rt_store *st, const char *path, size_t *added, size_t *skipped, struct rt_error *err)
{
	return import_one(st, NULL, NULL, 0, path, added, skipped, err);
}

/* ---- many files: parsed on worker threads, written in order on the caller's ---------------------------------- */

/*
 * Documents parsed ahead of the writer at most. A commit that checkpoints waits on two fsyncs (6-10 ms each measured
 * on a VM disk); the workers' window must outlast that or they stop with it: 64 documents lasted about 4 ms, and a
 * 10,000-file import then kept 1.66 of 2 CPUs busy, with 1,024 it keeps 1.84. Memory: about 14 KB per document.
 */
#define IMPORT_WINDOW 1024

/* What a worker hands to the writer for one file. */
struct job {
	struct prepared *pr; /* NULL when rc */
	int rc;
	struct rt_error err;
};

/* A file written in the open transaction: its result, told once the transaction commits, and its document, kept until
 * then in case a later file fails and the batch must be written again without it. */
struct held {
	struct rt_import_result r;
	struct prepared *pr;
};

struct import_many {
	struct rt_store *st;
	const char *const *paths;
	size_t batch; /* files per transaction */
	rt_store_import_done_fn done;
	void *ctx;
	struct held *held; /* [batch] */
	size_t n_held;
	bool in_txn;		    /* a transaction is open (it holds exactly the held files) */
	struct rt_device_info *dev; /* the writer's scratch device record */
	int first_rc;
};

static void *produce(void *arg, void **scratch, size_t i)
{
	struct import_many *m = arg;
	struct import_scratch *sc = *scratch;
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	if (!sc && !(sc = *scratch = calloc(1, sizeof(*sc)))) {
		j->rc = rt_error_set(&j->err, ENOMEM, "out of memory");
		return j;
	}
	j->rc = prepare_file(sc, m->paths[i], &j->pr, &j->err);
	return j;
}

/* Ends the held files' transaction: committed, or (rc set: a failure ended it) all told failed with err. */
static void tell_held(struct import_many *m, int rc, const struct rt_error *err)
{
	for (size_t k = 0; k < m->n_held; k++) {
		if (rc) {
			m->held[k].r.rc = rc;
			m->held[k].r.err = *err;
			m->held[k].r.added = m->held[k].r.skipped = 0;
		}
		prepared_free(m->held[k].pr);
		m->held[k].pr = NULL;
	}
	if (rc && !m->first_rc)
		m->first_rc = rc;
	for (size_t k = 0; k < m->n_held; k++)
		m->done(m->ctx, &m->held[k].r, 1);
	m->n_held = 0;
}

/* Commits the open transaction and tells its files: imported, or all failed with the commit's error. */
static void commit_held(struct import_many *m)
{
	struct rt_error err;
	int rc = 0;

	if (m->in_txn) {
		m->in_txn = false;
		if ((rc = rt_store_commit(m->st, &err)))
			rt_store_rollback(m->st);
	}
	tell_held(m, rc, &err);
}

/*
 * A file failed to write inside the batch's transaction, which then holds part of it: the transaction is rolled back
 * and the files before it in the batch are written again, without it, in a new one. What fails now (the store itself:
 * full disk, I/O) fails them all, with its error.
 */
static void write_failed(struct import_many *m)
{
	struct rt_error err;
	int rc = 0;

	rt_store_rollback(m->st);
	m->in_txn = false;
	if (!m->n_held)
		return;
	if ((rc = rt_store_begin(m->st, &err))) {
		tell_held(m, rc, &err);
		return;
	}
	for (size_t k = 0; k < m->n_held && !rc; k++) {
		struct held *h = &m->held[k];

		rc = write_rows(m->st, h->pr, m->dev, &h->r.added, &h->r.skipped, &err);
	}
	if (!rc)
		rc = rt_store_commit(m->st, &err);
	if (rc)
		rt_store_rollback(m->st);
	tell_held(m, rc, &err);
}

static void consume(void *arg, size_t i, void *result)
{
	struct import_many *m = arg;
	struct job *j = result;
	struct rt_import_result r = { .path = m->paths[i] };

	if (!j) {
		r.rc = rt_error_set(&r.err, ENOMEM, "out of memory");
	} else if (j->rc) {
		r.rc = j->rc;
		r.err = j->err;
	} else if (!m->in_txn && (r.rc = rt_store_begin(m->st, &r.err))) {
		/* cannot even begin: told below */
	} else {
		m->in_txn = true;
		/* no savepoint per file: a failure (rare: the store itself) rolls back the batch and writes it again */
		r.rc = write_rows(m->st, j->pr, m->dev, &r.added, &r.skipped, &r.err);
		if (!r.rc) {
			m->held[m->n_held].r = r;
			m->held[m->n_held++].pr = j->pr;
			free(j);
			if (m->n_held == m->batch)
				commit_held(m);
			return;
		}
		r.added = r.skipped = 0;
		write_failed(m);
	}
	if (j) {
		prepared_free(j->pr);
		free(j);
	}
	if (!m->first_rc)
		m->first_rc = r.rc;
	/* the failure ends the batch at once, so what was stored before it is told exactly */
	commit_held(m);
	m->done(m->ctx, &r, 1);
}

int rt_store_import_files(struct rt_store *st, const char *const *paths, size_t n, unsigned workers, size_t batch,
			  rt_store_import_done_fn done, void *ctx)
{
	struct import_many m = { .st = st, .paths = paths, .batch = batch ? batch : 1, .done = done, .ctx = ctx };
	struct rt_error err;
	bool was_batch = st->batch;

	m.held = calloc(m.batch, sizeof(*m.held));
	m.dev = malloc(sizeof(*m.dev));
	if (!m.held || !m.dev) {
		struct rt_import_result r = { .path = n ? paths[0] : "", .rc = ENOMEM };

		free(m.held);
		free(m.dev);
		rt_error_set(&r.err, ENOMEM, "out of memory");
		if (n)
			done(ctx, &r, 1);
		return ENOMEM;
	}
	/* the caller's open batch ends first: this import runs its own transactions */
	if (was_batch && (m.first_rc = rt_store_batch(st, false, &err))) {
		struct rt_import_result r = { .path = n ? paths[0] : "", .rc = m.first_rc, .err = err };

		if (n)
			done(ctx, &r, 1);
		rt_store_batch(st, true, NULL);
		free(m.held);
		free(m.dev);
		return m.first_rc;
	}
	json_object_seed(0); /* jansson's hash seed, set before any worker can race to set it */
	rt_pool_ordered(n, workers, IMPORT_WINDOW, produce, consume, import_scratch_free, &m);
	commit_held(&m);
	if (was_batch)
		rt_store_batch(st, true, NULL);
	free(m.held);
	free(m.dev);
	return m.first_rc;
}
