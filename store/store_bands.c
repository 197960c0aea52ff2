// SPDX-License-Identifier: MIT
/*
 * The load bands of a run in the store (schema v8; v10: concurrency): the rate points of the bands other than the
 * small-message one (large messages, post lists, several QPs by several threads; table band_rate_points, beside rate_points so that every reader of a run's sweep keeps
 * reading exactly the small band), and the signaling interval the tuner chose for each band (table signal_bands).
 */
#include "store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int prep(struct rt_store *st, const char *sql, sqlite3_stmt **s, struct rt_error *err)
{
	if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK) {
		*s = NULL;
		return rt_store_sql_error(st, "prepare", err);
	}
	return 0;
}

/* Ends the transaction begun by the caller: commits when rc_body is 0, else rolls back; returns the first error. */
static int in_tx(struct rt_store *st, int rc_body, struct rt_error *err)
{
	if (rc_body) {
		rt_store_rollback(st);
		return rc_body;
	}
	rc_body = rt_store_commit(st, err);
	if (rc_body)
		rt_store_rollback(st);
	return rc_body;
}

static int add_bands(struct rt_store *st, int64_t run_id, const struct rt_rate_point *pts, size_t n,
		     struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = prep(st,
		      "INSERT INTO band_rate_points(run_id, band, op, qpt, msg_bytes, inl, post_list, signal_interval,"
		      " sq_depth, reps, mops, mops_lo, mops_hi, cpu_ns_per_msg, msgs, enomem, qps, threads)"
		      " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		      &s, err);

	for (size_t i = 0; !rc && i < n; i++) {
		const struct rt_rate_point *p = &pts[i];

		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_text(s, 2, rt_rate_band_name(rt_rate_band_of(p)), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, rt_opcode_name(p->op), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, rt_qp_type_name(p->qpt), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, p->msg_bytes);
		sqlite3_bind_int(s, 6, p->inl);
		sqlite3_bind_int64(s, 7, p->post_list > 1 ? p->post_list : 1);
		sqlite3_bind_int64(s, 8, p->signal_interval);
		sqlite3_bind_int64(s, 9, p->sq_depth);
		sqlite3_bind_int64(s, 10, p->reps);
		sqlite3_bind_double(s, 11, p->mops);
		sqlite3_bind_double(s, 12, p->mops_lo);
		sqlite3_bind_double(s, 13, p->mops_hi);
		sqlite3_bind_double(s, 14, p->cpu_ns_per_msg);
		sqlite3_bind_int64(s, 15, (int64_t)p->msgs);
		sqlite3_bind_int64(s, 16, (int64_t)p->enomem);
		sqlite3_bind_int64(s, 17, p->qps > 1 ? p->qps : 1);
		sqlite3_bind_int64(s, 18, p->threads > 1 ? p->threads : 1);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = rt_store_sql_error(st, "store band rate point", err);
	}
	sqlite3_finalize(s);
	return rc;
}

int rt_store_run_add_bands(struct rt_store *st, int64_t run_id, const struct rt_rate_point *pts, size_t n,
			   struct rt_error *err)
{
	int rc;

	if (!n)
		return 0;
	if ((rc = rt_store_begin(st, err)))
		return rc;
	return in_tx(st, add_bands(st, run_id, pts, n, err), err);
}

int rt_store_run_load_bands(struct rt_store *st, struct rt_run *run, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc, step;

	free(run->band_rate);
	run->band_rate = NULL;
	run->n_band_rate = 0;
	rc = prep(st,
		  "SELECT op, qpt, msg_bytes, inl, signal_interval, sq_depth, reps, mops, mops_lo, mops_hi,"
		  " cpu_ns_per_msg, msgs, enomem, post_list, qps, threads FROM band_rate_points WHERE run_id = ?"
		  " ORDER BY id",
		  &s, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, run->id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_rate_point *p;

		if (run->n_band_rate == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct rt_rate_point *nv = realloc(run->band_rate, nc * sizeof(*nv));

			if (!nv) {
				sqlite3_finalize(s);
				return rt_error_set(err, ENOMEM, "out of memory");
			}
			run->band_rate = nv;
			cap = nc;
		}
		p = &run->band_rate[run->n_band_rate++];
		rt_store_rate_from_row(s, p);
		p->post_list = (uint32_t)sqlite3_column_int64(s, 13);
		p->qps = (uint32_t)sqlite3_column_int64(s, 14);
		p->threads = (uint32_t)sqlite3_column_int64(s, 15);
	}
	rc = step == SQLITE_DONE ? 0 : rt_store_sql_error(st, "read band rate points", err);
	sqlite3_finalize(s);
	return rc;
}

static int put_signal_bands(struct rt_store *st, int64_t run_id, const struct rt_store_signal_band *b, size_t n,
			    struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = prep(st, "DELETE FROM signal_bands WHERE run_id = ?", &s, err);

	if (!rc) {
		sqlite3_bind_int64(s, 1, run_id);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = rt_store_sql_error(st, "replace signal bands", err);
		sqlite3_finalize(s);
		s = NULL;
	}
	if (!rc)
		rc = prep(st,
			  "INSERT INTO signal_bands(run_id, band, op, qpt, msg_bytes_lo, msg_bytes_hi, post_list,"
			  " signal_interval, verdict, confidence, qps, threads) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
			  &s, err);
	for (size_t i = 0; !rc && i < n; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_text(s, 2, rt_rate_band_name(b[i].band), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, rt_opcode_name(b[i].op), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, rt_qp_type_name(b[i].qpt), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, b[i].msg_bytes_lo);
		sqlite3_bind_int64(s, 6, b[i].msg_bytes_hi);
		sqlite3_bind_int64(s, 7, b[i].post_list);
		sqlite3_bind_int64(s, 8, b[i].signal_interval);
		sqlite3_bind_text(s, 9, b[i].verdict, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 10, b[i].confidence, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 11, b[i].qps > 1 ? b[i].qps : 1);
		sqlite3_bind_int64(s, 12, b[i].threads > 1 ? b[i].threads : 1);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = rt_store_sql_error(st, "store signal band", err);
	}
	sqlite3_finalize(s);
	return rc;
}

int rt_store_put_signal_bands(struct rt_store *st, int64_t run_id, const struct rt_store_signal_band *b, size_t n,
			      struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	return in_tx(st, put_signal_bands(st, run_id, b, n, err), err);
}

int rt_store_get_signal_bands(struct rt_store *st, int64_t run_id, struct rt_store_signal_band **out, size_t *n,
			      struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc, step;

	*out = NULL;
	*n = 0;
	rc = prep(st,
		  "SELECT band, op, qpt, msg_bytes_lo, msg_bytes_hi, post_list, signal_interval, verdict, confidence,"
		  " qps, threads FROM signal_bands WHERE run_id = ? ORDER BY band, op, qpt",
		  &s, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, run_id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_signal_band *b;
		const char *band = (const char *)sqlite3_column_text(s, 0);

		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct rt_store_signal_band *nv = realloc(*out, nc * sizeof(*nv));

			if (!nv) {
				sqlite3_finalize(s);
				free(*out);
				*out = NULL;
				*n = 0;
				return rt_error_set(err, ENOMEM, "out of memory");
			}
			*out = nv;
			cap = nc;
		}
		b = &(*out)[(*n)++];
		memset(b, 0, sizeof(*b));
		for (int k = 0; k < RT_BAND__COUNT; k++)
			if (band && strcmp(band, rt_rate_band_name((enum rt_rate_band)k)) == 0)
				b->band = (enum rt_rate_band)k;
		rt_opcode_parse((const char *)sqlite3_column_text(s, 1), &b->op);
		rt_qp_type_parse((const char *)sqlite3_column_text(s, 2), &b->qpt);
		b->msg_bytes_lo = (uint32_t)sqlite3_column_int64(s, 3);
		b->msg_bytes_hi = (uint32_t)sqlite3_column_int64(s, 4);
		b->post_list = (uint32_t)sqlite3_column_int64(s, 5);
		b->signal_interval = (uint32_t)sqlite3_column_int64(s, 6);
		snprintf(b->verdict, sizeof(b->verdict), "%s",
			 sqlite3_column_text(s, 7) ? (const char *)sqlite3_column_text(s, 7) : "");
		snprintf(b->confidence, sizeof(b->confidence), "%s",
			 sqlite3_column_text(s, 8) ? (const char *)sqlite3_column_text(s, 8) : "");
		b->qps = (uint32_t)sqlite3_column_int64(s, 9);
		b->threads = (uint32_t)sqlite3_column_int64(s, 10);
	}
	rc = step == SQLITE_DONE ? 0 : rt_store_sql_error(st, "read signal bands", err);
	sqlite3_finalize(s);
	return rc;
}
