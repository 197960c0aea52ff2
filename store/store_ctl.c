// SPDX-License-Identifier: MIT
/*
 * The probe's adaptive inline controllers in the store (schema v9): per imported probe run, application, device, QP
 * type and QP, the controller's summary (table inline_ctl) and its last moves (table inline_ctl_moves), and the read
 * of each application's latest import that `rtune show` lists.
 */
#include "store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Binds c's summary columns ?1..?20 (node_id first) to s. */
static void bind_ctl(sqlite3_stmt *s, int64_t node_id, const struct rt_store_inline_ctl *c, int64_t created_ns)
{
	int k = 1;

	sqlite3_bind_int64(s, k++, node_id);
	sqlite3_bind_text(s, k++, c->app, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, k++, c->device, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, k++, c->qp_type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, k++, c->qp_num);
	sqlite3_bind_int64(s, k++, c->pid);
	sqlite3_bind_int64(s, k++, created_ns);
	sqlite3_bind_int(s, k++, c->busy);
	if (c->busy)
		return; /* the figures stay NULL: the probe could not read them */
	sqlite3_bind_int64(s, k++, c->start_bytes);
	sqlite3_bind_int64(s, k++, c->threshold_bytes);
	sqlite3_bind_int64(s, k++, c->min_bytes);
	sqlite3_bind_int64(s, k++, c->max_bytes);
	sqlite3_bind_int(s, k++, c->parked);
	sqlite3_bind_int64(s, k++, (int64_t)c->samples);
	sqlite3_bind_int64(s, k++, (int64_t)c->explored);
	sqlite3_bind_int64(s, k++, (int64_t)c->dropped);
	sqlite3_bind_int64(s, k++, (int64_t)c->rounds);
	sqlite3_bind_int64(s, k++, (int64_t)c->moves_up);
	sqlite3_bind_int64(s, k++, (int64_t)c->moves_down);
	sqlite3_bind_int64(s, k, (int64_t)c->reverts);
}

/* Inserts c[0..n) and their moves inside the caller's transaction; on failure the caller rolls back. */
static int put_ctls(struct rt_store *st, int64_t node_id, struct rt_store_inline_ctl *c, size_t n, struct rt_error *err)
{
	sqlite3_stmt *s = NULL, *m = NULL;
	int64_t now = rt_store_now_ns();
	int rc = 0;

	if (sqlite3_prepare_v2(
		    st->db,
		    "INSERT INTO inline_ctl(node_id, app, device, qp_type, qp_num, pid, created_ns, busy,"
		    " start_bytes, threshold_bytes, min_bytes, max_bytes, parked, samples, explored, dropped,"
		    " rounds, moves_up, moves_down, reverts) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		    -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "INSERT INTO inline_ctl_moves(ctl_id, seq, at_sample, from_bytes, to_bytes, inline_ns,"
			       " noinline_ns, revert) VALUES(?,?,?,?,?,?,?,?)",
			       -1, &m, NULL) != SQLITE_OK) {
		rc = rt_store_sql_error(st, "prepare", err);
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		bind_ctl(s, node_id, &c[i], c[i].created_ns ? c[i].created_ns : now);
		if (sqlite3_step(s) != SQLITE_DONE) {
			rc = rt_store_sql_error(st, "store inline controller", err);
			break;
		}
		c[i].id = sqlite3_last_insert_rowid(st->db);
		for (unsigned k = 0; k < c[i].n_moves; k++) {
			const struct rt_inline_ctl_move *mv = &c[i].moves[k];

			sqlite3_reset(m);
			sqlite3_bind_int64(m, 1, c[i].id);
			sqlite3_bind_int(m, 2, (int)k);
			sqlite3_bind_int64(m, 3, (int64_t)mv->at_sample);
			sqlite3_bind_int64(m, 4, mv->from_bytes);
			sqlite3_bind_int64(m, 5, mv->to_bytes);
			sqlite3_bind_int64(m, 6, (int64_t)mv->inline_ns);
			sqlite3_bind_int64(m, 7, (int64_t)mv->noinline_ns);
			sqlite3_bind_int(m, 8, mv->revert);
			if (sqlite3_step(m) != SQLITE_DONE) {
				rc = rt_store_sql_error(st, "store inline controller move", err);
				break;
			}
		}
	}
out:
	sqlite3_finalize(s);
	sqlite3_finalize(m);
	return rc;
}

int rt_store_put_inline_ctl(struct rt_store *st, const struct rt_node_info *node, struct rt_store_inline_ctl *c,
			    size_t n, struct rt_error *err)
{
	int64_t node_id;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (!c[i].app[0] || !c[i].device[0] || !c[i].qp_type[0] || c[i].n_moves > RT_INLINE_CTL_MOVES)
			return rt_error_set(err, EINVAL,
					    "inline controller %zu: no application, device or QP type, or more than "
					    "%d moves",
					    i, RT_INLINE_CTL_MOVES);
	if (!n)
		return 0;
	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = rt_store_node_upsert(st, node, NULL, &node_id, NULL, err)) ||
	    (rc = put_ctls(st, node_id, c, n, err))) {
		rt_store_rollback(st);
		return rc;
	}
	if ((rc = rt_store_commit(st, err)))
		rt_store_rollback(st);
	return rc;
}

/* Copies column i (text, may be NULL) into dst of len bytes. */
static void col_text(sqlite3_stmt *s, int i, char *dst, size_t len)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

/* Reads the summary row of s (the columns of the SELECT in rt_store_get_inline_ctl) into c. */
static void ctl_from_row(sqlite3_stmt *s, struct rt_store_inline_ctl *c)
{
	int k = 0;

	memset(c, 0, sizeof(*c));
	c->id = sqlite3_column_int64(s, k++);
	col_text(s, k++, c->app, sizeof(c->app));
	col_text(s, k++, c->device, sizeof(c->device));
	col_text(s, k++, c->qp_type, sizeof(c->qp_type));
	c->qp_num = (uint32_t)sqlite3_column_int64(s, k++);
	c->pid = sqlite3_column_int64(s, k++);
	c->created_ns = sqlite3_column_int64(s, k++);
	c->busy = sqlite3_column_int(s, k++) != 0;
	c->start_bytes = (uint32_t)sqlite3_column_int64(s, k++);
	c->threshold_bytes = (uint32_t)sqlite3_column_int64(s, k++);
	c->min_bytes = (uint32_t)sqlite3_column_int64(s, k++);
	c->max_bytes = (uint32_t)sqlite3_column_int64(s, k++);
	c->parked = sqlite3_column_int(s, k++) != 0;
	c->samples = (uint64_t)sqlite3_column_int64(s, k++);
	c->explored = (uint64_t)sqlite3_column_int64(s, k++);
	c->dropped = (uint64_t)sqlite3_column_int64(s, k++);
	c->rounds = (uint64_t)sqlite3_column_int64(s, k++);
	c->moves_up = (uint64_t)sqlite3_column_int64(s, k++);
	c->moves_down = (uint64_t)sqlite3_column_int64(s, k++);
	c->reverts = (uint64_t)sqlite3_column_int64(s, k);
}

/* Reads the moves of c (by c->id) in their order. */
static int load_moves(struct rt_store *st, sqlite3_stmt *m, struct rt_store_inline_ctl *c, struct rt_error *err)
{
	int step;

	sqlite3_reset(m);
	sqlite3_bind_int64(m, 1, c->id);
	while ((step = sqlite3_step(m)) == SQLITE_ROW && c->n_moves < RT_INLINE_CTL_MOVES) {
		struct rt_inline_ctl_move *mv = &c->moves[c->n_moves++];

		mv->at_sample = (uint64_t)sqlite3_column_int64(m, 0);
		mv->from_bytes = (uint32_t)sqlite3_column_int64(m, 1);
		mv->to_bytes = (uint32_t)sqlite3_column_int64(m, 2);
		mv->inline_ns = (uint64_t)sqlite3_column_int64(m, 3);
		mv->noinline_ns = (uint64_t)sqlite3_column_int64(m, 4);
		mv->revert = sqlite3_column_int(m, 5) != 0;
	}
	return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : rt_store_sql_error(st, "read inline controller", err);
}

int rt_store_get_inline_ctl(struct rt_store *st, const char *node_key, const char *device,
			    struct rt_store_inline_ctl **out, size_t *n, struct rt_error *err)
{
	sqlite3_stmt *s = NULL, *m = NULL;
	struct rt_store_inline_ctl *v = NULL;
	size_t len = 0, cap = 0;
	int rc = 0, step;

	*out = NULL;
	*n = 0;
	if (st->version < 9)
		return 0; /* a store opened read-only before its migration: no import kept them */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT c.id, c.app, c.device, c.qp_type, c.qp_num, c.pid, c.created_ns, c.busy,"
			       " c.start_bytes, c.threshold_bytes, c.min_bytes, c.max_bytes, c.parked, c.samples,"
			       " c.explored, c.dropped, c.rounds, c.moves_up, c.moves_down, c.reverts"
			       " FROM inline_ctl c JOIN nodes n ON n.id = c.node_id"
			       " WHERE (?1 IS NULL OR n.node_key = ?1) AND (?2 IS NULL OR c.device = ?2)"
			       " AND c.created_ns = (SELECT max(d.created_ns) FROM inline_ctl d"
			       " WHERE d.node_id = c.node_id AND d.app = c.app)"
			       " ORDER BY c.app, c.device, c.qp_type, c.qp_num, c.pid, c.id",
			       -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "SELECT at_sample, from_bytes, to_bytes, inline_ns, noinline_ns, revert"
			       " FROM inline_ctl_moves WHERE ctl_id = ? ORDER BY seq",
			       -1, &m, NULL) != SQLITE_OK) {
		rc = rt_store_sql_error(st, "prepare", err);
		goto out;
	}
	if (node_key)
		sqlite3_bind_text(s, 1, node_key, -1, SQLITE_STATIC);
	if (device)
		sqlite3_bind_text(s, 2, device, -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (len == cap) {
			struct rt_store_inline_ctl *nv = realloc(v, (cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv) {
				rc = rt_error_set(err, ENOMEM, "store '%s': out of memory", st->path);
				goto out;
			}
			v = nv;
			cap = cap ? cap * 2 : 8;
		}
		ctl_from_row(s, &v[len]);
		if ((rc = load_moves(st, m, &v[len], err)))
			goto out;
		len++;
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read inline controllers", err);
out:
	sqlite3_finalize(s);
	sqlite3_finalize(m);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = len;
	return 0;
}
