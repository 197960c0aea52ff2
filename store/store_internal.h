/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the store's source files: the open store, its cached statements, and small SQLite helpers that
 * turn a failing call into one error line.
 */
#ifndef RT_STORE_INTERNAL_H
#define RT_STORE_INTERNAL_H

#include <jansson.h>
#include <sqlite3.h>

#include "rt_store.h"

enum rt_stmt_id {
	STMT_NODE_UPSERT,
	STMT_NODE_FIND,
	STMT_NODE_INSERT,
	STMT_PROFILE_INSERT,
	STMT_HIST_LATEST_ID,
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_SAVEPOINT,
	STMT_RELEASE,
	STMT_ROLLBACK_TO,
	STMT_DEVICE_UPSERT,
	STMT_DEVICE_FIND,
	STMT_DEVICE_INSERT,
	STMT_PORT_UPSERT,
	STMT__COUNT
};

struct rt_store {
	sqlite3 *db;
	int version;
	char path[4096];
	sqlite3_stmt *stmts[STMT__COUNT];
	bool readonly;	 /* opened immutable: an existing store in a directory we may not write (no -wal) */
	bool batch;	 /* rt_store_batch(): transactions become savepoints of one open transaction */
	bool batch_open; /* that transaction has begun */
	bool batch_lost; /* SQLite rolled that transaction back by itself (out of memory, disk full): its earlier
				 * items are gone; rt_store_batch_flush() reports it */
};

/* Prepares (once, cached) the statement id with sql; returns it reset with bindings cleared, or NULL + err. */
sqlite3_stmt *rt_store_stmt(struct rt_store *st, enum rt_stmt_id id, const char *sql, struct rt_error *err);
/* Fills err with "store '<path>': <what>: <sqlite message>" and returns an errno matching the SQLite code. */
int rt_store_sql_error(struct rt_store *st, const char *what, struct rt_error *err);
/* BEGIN IMMEDIATE / COMMIT / ROLLBACK (savepoints in batch mode); rollback never fails visibly. */
int rt_store_begin(struct rt_store *st, struct rt_error *err);
int rt_store_commit(struct rt_store *st, struct rt_error *err);
void rt_store_rollback(struct rt_store *st);
/* Upserts node (by rt_store_node_key()) inside the caller's transaction, setting hw_signature when not NULL/"";
 * *created (may be NULL) tells whether the row is new. */
int rt_store_node_upsert(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			 int64_t *node_id, bool *created, struct rt_error *err);
/* Upserts device d of node_id (by name and GUID) and its ports inside the caller's transaction; *dev_id its row.
 * seen_ns: when this evidence of the device was taken (a run's start, an imported profile's newest measurement); a
 * known row is overwritten only by evidence at least as new, and the row seen last per name is the node's current
 * device (view current_devices). node_created: node_id was created in this transaction, so it has no devices yet (no
 * lookup needed). On failure the transaction holds part of the write: the caller rolls back. */
int rt_store_device_upsert(struct rt_store *st, int64_t node_id, const struct rt_device_info *d, bool node_created,
			   int64_t seen_ns, int64_t *dev_id, struct rt_error *err);
/* Copies the string member key of o into dst (len bytes, cut at a UTF-8 character boundary when longer); "" when o
 * has no such string. */
void rt_store_json_copy_str(char *dst, size_t len, json_t *o, const char *key);
/* Now, CLOCK_REALTIME, in ns. */
int64_t rt_store_now_ns(void);

/* A rate point from a row whose columns 0-12 are op, qpt, msg_bytes, inl, signal_interval, sq_depth, reps, mops,
 * mops_lo, mops_hi, cpu_ns_per_msg, msgs, enomem (rate_points and band_rate_points); never fails. */
void rt_store_rate_from_row(sqlite3_stmt *s, struct rt_rate_point *p);

#endif
