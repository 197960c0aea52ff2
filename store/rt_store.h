/* SPDX-License-Identifier: MIT */
/*
 * rtune's store: the SQLite history of one or more nodes (nodes, devices/ports, calibration runs with their points,
 * application histograms from the probe, profiles) and the JSON profile v1 export/import. Private to rtune (the CLI and
 * its engines); applications read profiles through librtune (include/rtune/profile.h) instead.
 *
 * Every function returns 0 or an errno value and, on failure, fills the caller's struct rt_error (may be NULL) with one
 * lowercase line naming the thing that failed. Writes happen in transactions: a failure or a kill -9 leaves the store
 * as it was before the call (a run begun with rt_store_run_begin() stays, marked "running", and is shown as interrupted
 * once its process is gone). A store handle is used by one thread at a time (SQLite's connection mutex is off); two
 * threads, or processes, that write at once each open their own.
 */
#ifndef RT_STORE_H
#define RT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rtune/error.h>
#include <rtune/profile.h>

#include "rt_hist.h"
#include "rt_model.h"

/* Schema version written to PRAGMA user_version; older stores are migrated forward on open. */
#define RT_STORE_SCHEMA_VERSION 3

struct rt_store;

/* ---- opening ------------------------------------------------------------------------------------------------- */

/*
 * Writes the default store path into buf: $RTUNE_DB, else /var/lib/rtune/rtune.db for root, else
 * $XDG_STATE_HOME/rtune/rtune.db, else $HOME/.local/state/rtune/rtune.db. Every rtune command uses this when no
 * --db is given. Returns 0, ENAMETOOLONG, or ENOENT when neither XDG_STATE_HOME nor HOME is set (non-root).
 */
int rt_store_default_path(char *buf, size_t len, struct rt_error *err);

/*
 * Opens (creating it when absent) the store at path, or at rt_store_default_path() when path is NULL; the default
 * path's directories are created (0755 for root, 0700 otherwise). The file is created 0644 (root) / 0600, never
 * followed through a symlink. Sets WAL, a busy timeout (two rtune processes can write at once) and foreign keys, and
 * migrates an older schema forward in one transaction. Errors: "cannot open store '<path>': not a database" (EINVAL;
 * also for an SQLite file that is not an rtune store), a schema newer than this rtune (EPROTONOSUPPORT) — in both
 * cases the file is left untouched. On success *out is the store (close with rt_store_close).
 */
int rt_store_open(const char *path, struct rt_store **out, struct rt_error *err);
/* As rt_store_open() but never creates the store: ENOENT ("no store at '<path>'") when it does not exist. For commands
 * that only read (show, history, export, report); an older schema is still migrated when the store is writable. A store
 * in a directory this user may not write, copied without its -wal/-shm files, is opened immutable (read-only); with a
 * -wal but no -shm there it is EROFS, naming the way out. rt_store_open() on a store this user may not write fails
 * at once with EACCES ("cannot write store '<path>': read-only for this user ..."). */
int rt_store_open_existing(const char *path, struct rt_store **out, struct rt_error *err);
/* Closes the store; NULL is a no-op. */
void rt_store_close(struct rt_store *st);
/* The store's SQLite connection, for rtune's own read-only bulk readers (the report): it sees what this store sees,
 * including a store opened immutable in a read-only directory. Owned by the store; valid until rt_store_close(). */
struct sqlite3 *rt_store_sqlite(struct rt_store *st);
/* Path the store was opened at. */
const char *rt_store_path(const struct rt_store *st);
/* Schema version of an open store (RT_STORE_SCHEMA_VERSION after a read-write open). */
int rt_store_schema_version(const struct rt_store *st);
/* Runs PRAGMA integrity_check; 0 when "ok", else EIO with the first problem in err. */
int rt_store_check(struct rt_store *st, struct rt_error *err);

/*
 * Batch mode (on): the writes that follow (each still all-or-nothing, as a savepoint) share one transaction, committed
 * by rt_store_batch_flush() or rt_store_batch(st, false) — much faster for many small writes such as importing
 * thousands of profiles. Writes not flushed when the store is closed (or the process dies) are dropped as a whole.
 * Other writers wait (busy timeout) while a batch is open: flush every few hundred items.
 */
int rt_store_batch(struct rt_store *st, bool on, struct rt_error *err);
int rt_store_batch_flush(struct rt_store *st, struct rt_error *err);

/* Key identifying a node across stores: its machine-id, else its hostname. */
const char *rt_store_node_key(const struct rt_node_info *node);
/* Stable hash of the node's hardware, as "fnv1a64:<16 hex>": the CPU model and, per device (by name), its name,
 * vendor and part id, firmware, NUMA node, PCIe link speed and width, and per port the link layer and active MTU --
 * facts any user reads alike, so root and non-root runs of one node agree (PCIe MPS/MRRS, readable only by root, are
 * not part of it). devs may be NULL when n_devs is 0. */
void rt_store_hw_signature(const struct rt_node_info *node, const struct rt_device_info *devs, size_t n_devs,
			   char out[32]);
/* Fills the minimum of a node identity (hostname, machine-id) for this machine without touching any device. */
void rt_store_local_node(struct rt_node_info *out);

/* One node known to the store, for fleet views (`rtune report`). */
struct rt_store_node {
	int64_t id;
	char node_key[RT_TEXT_LEN]; /* machine-id, else hostname */
	struct rt_node_info info;   /* kernel and cpu_count may be empty/0 for imported nodes */
	char hw_signature[32];
	size_t n_profile_entries; /* profile rows stored (all, not only current) */
	size_t n_runs;
};
/* Every node, oldest first; *out malloc'd (free()), *n may be 0. */
int rt_store_node_list(struct rt_store *st, struct rt_store_node **out, size_t *n, struct rt_error *err);
/* The devices (with ports) recorded for node_key by calibration runs; *out malloc'd, *n may be 0 (an imported node
 * has none). ENOENT when the store has no such node. */
int rt_store_node_devices(struct rt_store *st, const char *node_key, struct rt_device_info **out, size_t *n,
			  struct rt_error *err);

/* ---- calibration runs ------------------------------------------------------------------------------------------ */

/*
 * Records the start of run in one transaction: upserts run->node and run->dev (with its ports), inserts the run with
 * status "running", its parameters and environment. Assigns run->uuid (when empty) and run->id, and run->started_ns
 * (when 0). Returns 0 or an errno + err; nothing is stored on failure.
 */
int rt_store_run_begin(struct rt_store *st, struct rt_run *run, struct rt_error *err);
/* Appends points to a begun run in one transaction (raw samples of each latency point, n_kept, stored too). */
int rt_store_run_add_points(struct rt_store *st, int64_t run_id, const struct rt_lat_point *lat, size_t n_lat,
			    const struct rt_rate_point *rate, size_t n_rate, struct rt_error *err);
/* Stores the run's CQ moderation results (one per opcode), and its environment and parameters again (the engine
 * refines them while measuring: notes, phase times). */
int rt_store_run_set_results(struct rt_store *st, const struct rt_run *run, struct rt_error *err);
/* Marks a run complete/interrupted/failed and sets its end time (now). ENOENT when there is no such run. */
int rt_store_run_finish(struct rt_store *st, int64_t run_id, enum rt_run_status status, struct rt_error *err);
/* Convenience for a run measured in memory: begin + add_points + set_results + finish(run->status, or complete when
 * running) in one transaction. */
int rt_store_run_save(struct rt_store *st, struct rt_run *run, struct rt_error *err);

/*
 * Loads a run with its points into out (release with rt_run_release()). which: a uuid, a row id ("12"), or NULL for
 * the most recent run (of device when device is not NULL). ENOENT when none matches.
 */
int rt_store_run_load(struct rt_store *st, const char *which, const char *device, struct rt_run *out,
		      struct rt_error *err);

/* One line of `rtune history`. status is the effective one: a "running" run whose process is gone is interrupted. */
struct rt_store_run_summary {
	int64_t id;
	char uuid[40];
	char hostname[RT_TEXT_LEN];
	char device[RT_NAME_LEN];
	int port_num;
	int64_t started_ns, ended_ns;
	enum rt_run_status status;	  /* effective */
	enum rt_run_status stored_status; /* as written */
	size_t n_lat, n_rate;
	/* the profile stored from this run for (device, port, send, rc), when any: has_profile */
	bool has_profile;
	uint32_t inline_threshold, signal_interval;
};
/* Runs, oldest first (of device when not NULL). *out is malloc'd (free()); *n may be 0. */
int rt_store_run_list(struct rt_store *st, const char *device, struct rt_store_run_summary **out, size_t *n,
		      struct rt_error *err);

/* ---- application histograms (from the probe) -------------------------------------------------------------------- */

struct rt_store_histogram {
	int64_t id; /* set by put */
	char app[RT_NAME_LEN];
	enum rt_opcode op;
	enum rt_qp_type qpt;
	int64_t created_ns; /* 0 = now */
	uint64_t messages, bytes, inline_count, signaled_count, sq_full_enomem;
	uint64_t buckets[RT_HIST_BUCKETS]; /* message counts per rt_hist_bucket() */
};
/* Stores one histogram of an application on node (upserted) in one transaction; sets h->id. */
int rt_store_put_histogram(struct rt_store *st, const struct rt_node_info *node, struct rt_store_histogram *h,
			   struct rt_error *err);
/* The most recent histogram of app for op/qpt into out; ENOENT when there is none. */
int rt_store_get_histogram(struct rt_store *st, const char *app, enum rt_opcode op, enum rt_qp_type qpt,
			   struct rt_store_histogram *out, struct rt_error *err);

/* ---- profiles ------------------------------------------------------------------------------------------------- */

/*
 * Stores n profile entries for node in one transaction. Each entry is validated (ranges as in the JSON schema) and its
 * inline_limit_excl derived; an entry with the same (node, device, port, opcode, qp type, run id) already stored is
 * kept as is (idempotent). hw_signature may be NULL (kept / computed from the node's stored devices).
 * *added (may be NULL) receives the number of new rows.
 */
int rt_store_put_profile(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			 const struct rt_profile_entry *entries, size_t n, size_t *added, struct rt_error *err);

/*
 * As rt_store_put_profile(), but entries replace those already stored from the same run for the same device, port,
 * opcode and QP type (re-tuning a run, e.g. with an app histogram, supersedes the earlier tuning). All entries are
 * validated before anything is deleted; on failure the store is unchanged.
 */
int rt_store_replace_profile(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			     const struct rt_profile_entry *entries, size_t n, struct rt_error *err);

/*
 * The current profile of a node: per (device, port, opcode, qp type) the most recently measured entry, filtered to
 * device (name or GUID) when not NULL. node_key NULL = the local node if it has profiles, else the only node that has
 * any (EEXIST with the list in err when several do). *out is malloc'd (free()), *n may be 0; node_out (may be NULL)
 * receives the node's identity and hw_sig (may be NULL, 32 bytes) its signature.
 */
int rt_store_get_profile(struct rt_store *st, const char *node_key, const char *device, struct rt_profile_entry **out,
			 size_t *n, struct rt_node_info *node_out, char *hw_sig, struct rt_error *err);

/* Validates one entry (ranges, names, consistency); 0 or EINVAL with the field named in err. */
int rt_profile_entry_validate(const struct rt_profile_entry *e, struct rt_error *err);

/* ---- JSON profile v1, env and prometheus exports, import ---------------------------------------------------------- */

enum rt_export_format { RT_EXPORT_JSON, RT_EXPORT_ENV, RT_EXPORT_PROMETHEUS };
int rt_export_format_parse(const char *s, enum rt_export_format *out);

/*
 * Writes the current profile of node_key (NULL as in rt_store_get_profile) in fmt to path, atomically (a temporary
 * file in the same directory created O_EXCL|O_NOFOLLOW 0644, fsync, rename; a symlink at path is replaced, never
 * followed), or to stdout when path is NULL. For env, profile_path is the value printed for RTUNE_PROFILE (NULL: the
 * line is a comment telling to export the json). ENOENT when there is no profile.
 */
int rt_store_export(struct rt_store *st, const char *node_key, enum rt_export_format fmt, const char *path,
		    const char *profile_path, struct rt_error *err);

/*
 * Imports one JSON profile document (validated like librtune does) as the profiles of the node it names. Idempotent:
 * entries already stored (same node and run id) are skipped. *added / *skipped (may be NULL) count entries.
 */
int rt_store_import_file(struct rt_store *st, const char *path, size_t *added, size_t *skipped, struct rt_error *err);
/* As rt_store_import_file() on a document in memory; name is used in error messages. */
int rt_store_import_text(struct rt_store *st, const char *name, const char *text, size_t len, size_t *added,
			 size_t *skipped, struct rt_error *err);

/* The fate of one file in rt_store_import_files(). */
struct rt_import_result {
	const char *path;      /* borrowed from the caller's paths */
	int rc;		       /* 0: imported (committed); else an errno, with err */
	size_t added, skipped; /* entries new / already present */
	struct rt_error err;
};
/* Told, on the calling thread, the results of n files (in file order): one failed file, or the files of one batch
 * once its transaction committed (or all failed with the commit's error). */
typedef void (*rt_store_import_done_fn)(void *ctx, const struct rt_import_result *res, size_t n);

/*
 * Imports the profile files paths[0..n) as rt_store_import_file() does, at the rate of a fleet: files are read, parsed
 * and validated on `workers` threads (0: on this thread; see rt_pool_workers()) while this thread writes them in
 * order, `batch` files per transaction, and prepares files itself whenever the next one to write is not ready. Each
 * file is still all-or-nothing: a file that fails to parse ends (commits) the batch at once; one that fails inside
 * the transaction (the store refused a row) rolls the batch back, and the files before it are written again in a new
 * one, so only the failing file is lost (unless the store itself fails: then the batch's files all fail with its
 * error).
 * done() learns every file's fate exactly once, after its transaction ended. A failed file does not stop the others.
 * Returns 0 when every file was imported, else the errno of the first failure.
 */
int rt_store_import_files(struct rt_store *st, const char *const *paths, size_t n, unsigned workers, size_t batch,
			  rt_store_import_done_fn done, void *ctx);

/*
 * Writes len bytes to path atomically: temp file "<dir>/.<base>.XXXXXX" created O_EXCL|O_NOFOLLOW with mode, written,
 * fsync'd, renamed over path, directory fsync'd. On failure the temp file is removed and path is untouched.
 */
int rt_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, struct rt_error *err);

#endif
