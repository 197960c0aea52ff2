// SPDX-License-Identifier: MIT
/*
 * Operator pins (`rtune pin`, schema v7 table pins) and the record of what `rtune agent` published (table
 * agent_publications): small tables read and written whole, each write one transaction.
 */
#include "store_internal.h"
#include "lib/profile_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Prepares sql on st (not cached: these statements run a few times per agent pass). NULL + err on failure. */
static sqlite3_stmt *prep(struct rt_store *st, const char *sql, const char *what, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
		rt_store_sql_error(st, what, err);
		return NULL;
	}
	return s;
}

/* Steps s to SQLITE_DONE and finalizes it; 0 or an errno + err. */
static int step_done(struct rt_store *st, sqlite3_stmt *s, const char *what, struct rt_error *err)
{
	int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : rt_store_sql_error(st, what, err);

	sqlite3_finalize(s);
	return rc;
}

static void bind_i64_or_null(sqlite3_stmt *s, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

int rt_store_pin_set(struct rt_store *st, const struct rt_store_pin *p, struct rt_error *err)
{
	sqlite3_stmt *s;
	int rc;

	if (!p->device[0])
		return rt_error_set(err, EINVAL, "pin: no device");
	if (p->port < 1 || p->port > 255)
		return rt_error_set(err, EINVAL, "pin: port %d is not 1..255", p->port);
	if (p->inline_threshold < 0 && p->signal_interval < 0)
		return rt_error_set(err, EINVAL, "pin: nothing to pin (inline_threshold=N and/or signal_interval=N)");
	if (p->inline_threshold > 65536)
		return rt_error_set(err, EINVAL, "pin: inline_threshold %lld is not 0..65536",
				    (long long)p->inline_threshold);
	if (p->signal_interval == 0 || p->signal_interval > 65536)
		return rt_error_set(err, EINVAL, "pin: signal_interval %lld is not 1..65536",
				    (long long)p->signal_interval);
	if ((rc = rt_store_begin(st, err)))
		return rc;
	s = prep(
		st,
		"INSERT INTO pins (device, port, opcode, qp_type, inline_threshold, signal_interval, created_ns)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (device, port, opcode, qp_type) DO UPDATE SET"
		" inline_threshold = coalesce(excluded.inline_threshold, inline_threshold),"
		" signal_interval = coalesce(excluded.signal_interval, signal_interval), created_ns = excluded.created_ns",
		"store a pin", err);
	if (!s) {
		rt_store_rollback(st);
		return EIO;
	}
	sqlite3_bind_text(s, 1, p->device, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, p->port);
	sqlite3_bind_text(s, 3, rt_profile_opcode_name(p->opcode), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, rt_profile_qp_type_name(p->qp_type), -1, SQLITE_STATIC);
	bind_i64_or_null(s, 5, p->inline_threshold);
	bind_i64_or_null(s, 6, p->signal_interval);
	sqlite3_bind_int64(s, 7, rt_store_now_ns());
	if ((rc = step_done(st, s, "store a pin", err))) {
		rt_store_rollback(st);
		return rc;
	}
	if ((rc = rt_store_commit(st, err)))
		rt_store_rollback(st);
	return rc;
}

int rt_store_pin_clear(struct rt_store *st, const char *device, int port, bool all_ops, enum rt_profile_opcode op,
		       enum rt_profile_qp_type qpt, char what, size_t *removed, struct rt_error *err)
{
	static const char *const where = " WHERE device = ?1 AND (?2 = 0 OR port = ?2) AND (?3 OR (opcode = ?4 AND"
					 " qp_type = ?5))";
	const char *set = what == 'i' ? "inline_threshold = NULL" : what == 's' ? "signal_interval = NULL" : NULL;
	char sql[512];
	sqlite3_stmt *s;
	int rc, changed;

	if (removed)
		*removed = 0;
	if ((rc = rt_store_begin(st, err)))
		return rc;
	if (set)
		snprintf(sql, sizeof(sql), "UPDATE pins SET %s%s", set, where);
	else
		snprintf(sql, sizeof(sql), "DELETE FROM pins%s", where);
	if (!(s = prep(st, sql, "remove a pin", err))) {
		rt_store_rollback(st);
		return EIO;
	}
	sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, port);
	sqlite3_bind_int(s, 3, all_ops);
	sqlite3_bind_text(s, 4, rt_profile_opcode_name(op), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, rt_profile_qp_type_name(qpt), -1, SQLITE_STATIC);
	if ((rc = step_done(st, s, "remove a pin", err))) {
		rt_store_rollback(st);
		return rc;
	}
	changed = sqlite3_changes(st->db);
	if (!(s = prep(st, "DELETE FROM pins WHERE inline_threshold IS NULL AND signal_interval IS NULL",
		       "remove a pin", err)) ||
	    (rc = step_done(st, s, "remove a pin", err))) {
		rt_store_rollback(st);
		return rc ? rc : EIO;
	}
	if (!changed) {
		rt_store_rollback(st);
		return rt_error_set(err, ENOENT, "no pin of '%s' matches", device);
	}
	if ((rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		return rc;
	}
	if (removed)
		*removed = (size_t)changed;
	return 0;
}

int rt_store_pin_list(struct rt_store *st, struct rt_store_pin **out, size_t *n, struct rt_error *err)
{
	sqlite3_stmt *s =
		prep(st,
		     "SELECT device, port, opcode, qp_type, coalesce(inline_threshold, -1),"
		     " coalesce(signal_interval, -1), created_ns FROM pins ORDER BY device, port, opcode, qp_type",
		     "list pins", err);
	struct rt_store_pin *v = NULL;
	size_t len = 0, cap = 0;
	int step;

	*out = NULL;
	*n = 0;
	if (!s)
		return EIO;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_pin *p;

		if (len == cap) {
			struct rt_store_pin *nv = realloc(v, (cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv) {
				free(v);
				sqlite3_finalize(s);
				return rt_error_set(err, ENOMEM, "list pins: out of memory");
			}
			v = nv;
			cap = cap ? cap * 2 : 8;
		}
		p = &v[len++];
		memset(p, 0, sizeof(*p));
		snprintf(p->device, sizeof(p->device), "%s", (const char *)sqlite3_column_text(s, 0));
		p->port = sqlite3_column_int(s, 1);
		p->opcode = strcmp((const char *)sqlite3_column_text(s, 2), "write") == 0 ? RT_PROFILE_OP_WRITE
											  : RT_PROFILE_OP_SEND;
		if (rt_profile_qp_type_parse((const char *)sqlite3_column_text(s, 3), &p->qp_type))
			p->qp_type = RT_PROFILE_QPT_RC;
		p->inline_threshold = sqlite3_column_int64(s, 4);
		p->signal_interval = sqlite3_column_int64(s, 5);
		p->created_ns = sqlite3_column_int64(s, 6);
	}
	if (step != SQLITE_DONE) {
		free(v);
		rt_store_sql_error(st, "list pins", err);
		sqlite3_finalize(s);
		return EIO;
	}
	sqlite3_finalize(s);
	*out = v;
	*n = len;
	return 0;
}

int rt_store_publication_add(struct rt_store *st, const struct rt_store_publication *p, size_t n, struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		sqlite3_stmt *s = prep(st,
				       "INSERT INTO agent_publications (at_ns, device, port, opcode, qp_type, app,"
				       " inline_threshold, signal_interval, change, reason, dry_run)"
				       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
				       "record a publication", err);

		if (!s) {
			rt_store_rollback(st);
			return EIO;
		}
		sqlite3_bind_int64(s, 1, p[i].at_ns ? p[i].at_ns : rt_store_now_ns());
		sqlite3_bind_text(s, 2, p[i].device, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 3, p[i].port);
		sqlite3_bind_text(s, 4, rt_profile_opcode_name(p[i].opcode), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, rt_profile_qp_type_name(p[i].qp_type), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 6, p[i].app, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, p[i].inline_threshold);
		sqlite3_bind_int64(s, 8, p[i].signal_interval);
		sqlite3_bind_text(s, 9, p[i].change, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 10, p[i].reason, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 11, p[i].dry_run);
		if ((rc = step_done(st, s, "record a publication", err))) {
			rt_store_rollback(st);
			return rc;
		}
	}
	if ((rc = rt_store_commit(st, err)))
		rt_store_rollback(st);
	return rc;
}

int rt_store_publication_list(struct rt_store *st, struct rt_store_publication **out, size_t *n, struct rt_error *err)
{
	sqlite3_stmt *s = prep(st,
			       "SELECT at_ns, device, port, opcode, qp_type, app, inline_threshold, signal_interval,"
			       " change, reason, dry_run FROM agent_publications ORDER BY id",
			       "list publications", err);
	struct rt_store_publication *v = NULL;
	size_t len = 0, cap = 0;
	int step;

	*out = NULL;
	*n = 0;
	if (!s)
		return EIO;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_publication *p;

		if (len == cap) {
			struct rt_store_publication *nv = realloc(v, (cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv) {
				free(v);
				sqlite3_finalize(s);
				return rt_error_set(err, ENOMEM, "list publications: out of memory");
			}
			v = nv;
			cap = cap ? cap * 2 : 8;
		}
		p = &v[len++];
		memset(p, 0, sizeof(*p));
		p->at_ns = sqlite3_column_int64(s, 0);
		snprintf(p->device, sizeof(p->device), "%s", (const char *)sqlite3_column_text(s, 1));
		p->port = sqlite3_column_int(s, 2);
		p->opcode = strcmp((const char *)sqlite3_column_text(s, 3), "write") == 0 ? RT_PROFILE_OP_WRITE
											  : RT_PROFILE_OP_SEND;
		if (rt_profile_qp_type_parse((const char *)sqlite3_column_text(s, 4), &p->qp_type))
			p->qp_type = RT_PROFILE_QPT_RC;
		snprintf(p->app, sizeof(p->app), "%s", (const char *)sqlite3_column_text(s, 5));
		p->inline_threshold = (uint32_t)sqlite3_column_int64(s, 6);
		p->signal_interval = (uint32_t)sqlite3_column_int64(s, 7);
		snprintf(p->change, sizeof(p->change), "%s", (const char *)sqlite3_column_text(s, 8));
		snprintf(p->reason, sizeof(p->reason), "%s", (const char *)sqlite3_column_text(s, 9));
		p->dry_run = sqlite3_column_int(s, 10) != 0;
	}
	if (step != SQLITE_DONE) {
		free(v);
		rt_store_sql_error(st, "list publications", err);
		sqlite3_finalize(s);
		return EIO;
	}
	sqlite3_finalize(s);
	*out = v;
	*n = len;
	return 0;
}
