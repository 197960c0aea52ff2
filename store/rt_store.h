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
#define RT_STORE_SCHEMA_VERSION 11

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
/* As rt_store_open() but never creates a store: ENOENT ("no store at '<path>'") when it does not exist, EINVAL ("cannot
 * open store '<path>': empty file, not an rtune store", or "empty database, ...") for an empty file or an SQLite
 * database without tables, which are left as they are (not a byte written, no -wal/-shm created). For commands that
 * read a store (show, history, export, report, tune); an rtune store of an older schema is still migrated forward
 * when it is writable (the one write such a command makes, in one transaction). A store
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

/* Room for a node key: a machine-id, '/', a hostname and the NUL. */
#define RT_STORE_NODE_KEY_LEN (RT_NAME_LEN + RT_TEXT_LEN)
/*
 * The identity of a node in stores, imports, exports and `rtune report`: "<machine-id>/<hostname>", or the hostname
 * alone when there is no machine-id. Two machines cloned from one image (same /etc/machine-id, different hostnames)
 * are two nodes; a renamed host starts a new node. Writes it into out (len bytes, cut when longer; NULL strings read
 * as "").
 */
void rt_store_node_key_of(const char *machine_id, const char *hostname, char *out, size_t len);
/* rt_store_node_key_of() of node into out; returns out. */
const char *rt_store_node_key(const struct rt_node_info *node, char out[RT_STORE_NODE_KEY_LEN]);
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
	char node_key[RT_STORE_NODE_KEY_LEN]; /* rt_store_node_key() */
	struct rt_node_info info;	      /* kernel and cpu_count may be empty/0 for imported nodes */
	char hw_signature[32];
	size_t n_profile_entries; /* profile rows stored (all, not only current) */
	size_t n_runs;
};
/* Every node, oldest first; *out malloc'd (free()), *n may be 0. */
int rt_store_node_list(struct rt_store *st, struct rt_store_node **out, size_t *n, struct rt_error *err);
/* The node's current hardware: per device name, the device (with ports) seen last, by a calibration run or in an
 * imported profile's "hardware" (a NIC replaced by one with a new GUID: only the new one). node_key: a key
 * (rt_store_node_key) or a hostname. *out malloc'd, *n may be 0 (an imported node without "hardware"). ENOENT when
 * the store has no such node. */
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
/* Stores the run's CQ moderation results (one per opcode), and its environment, parameters and device record again
 * (the engine refines them while measuring: notes, phase times); the device's own row is left as it is. */
int rt_store_run_set_results(struct rt_store *st, const struct rt_run *run, struct rt_error *err);
/* Marks a run complete/interrupted/failed and sets its end time (now). ENOENT when there is no such run. */
int rt_store_run_finish(struct rt_store *st, int64_t run_id, enum rt_run_status status, struct rt_error *err);
/* Convenience for a run measured in memory: begin + add_points + set_results + finish(run->status, or complete when
 * running) in one transaction. */
int rt_store_run_save(struct rt_store *st, struct rt_run *run, struct rt_error *err);

/*
 * Loads a run with its points into out (release with rt_run_release()). which: a uuid, a row id ("12"), or NULL for
 * the most recent run (of device when device is not NULL). out->dev is the device as that run recorded it
 * (capabilities such as max_inline_rc, firmware, ports), not as a later run found it; a run stored before schema v4
 * has no such record and gets the device's row. ENOENT when none matches.
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

/* ---- load bands of the rate sweep (schema v8) ------------------------------------------------------------------ */

/* Stores run->band_rate-style points (bands other than the small one) of a run in one transaction; n 0: nothing. */
int rt_store_run_add_bands(struct rt_store *st, int64_t run_id, const struct rt_rate_point *pts, size_t n,
			   struct rt_error *err);
/* Loads the band points of run->id into run->band_rate (replacing what it held); none stored: n_band_rate 0. */
int rt_store_run_load_bands(struct rt_store *st, struct rt_run *run, struct rt_error *err);

/* The signaling interval the tuner chose for one load band of a run (one row per band, opcode and QP type). */
struct rt_store_signal_band {
	enum rt_rate_band band;
	enum rt_opcode op;
	enum rt_qp_type qpt;
	uint32_t msg_bytes_lo, msg_bytes_hi; /* the band's message sizes measured */
	uint32_t post_list;		     /* WRs per ibv_post_send of the band (1 = one) */
	uint32_t signal_interval;	     /* N */
	char verdict[32];		     /* the tuner's signal verdict name */
	char confidence[16];		     /* "high", "medium", "low" */
	uint32_t qps, threads;		     /* concurrency band: QPs and sending threads (1 and 1 otherwise) */
};
/* Replaces the signal bands of run_id with b[0..n) in one transaction. */
int rt_store_put_signal_bands(struct rt_store *st, int64_t run_id, const struct rt_store_signal_band *b, size_t n,
			      struct rt_error *err);
/* The signal bands of run_id into *out (malloc'd, free()), *n may be 0. */
int rt_store_get_signal_bands(struct rt_store *st, int64_t run_id, struct rt_store_signal_band **out, size_t *n,
			      struct rt_error *err);

/* ---- application histograms (from the probe) -------------------------------------------------------------------- */

struct rt_store_histogram {
	int64_t id; /* set by put */
	char app[RT_NAME_LEN];
	enum rt_opcode op;
	enum rt_qp_type qpt;
	int64_t created_ns; /* 0 = now */
	uint64_t messages, bytes, inline_count, signaled_count, sq_full_enomem;
	uint64_t buckets[RT_HIST_BUCKETS];    /* message counts per rt_hist_bucket() */
	uint32_t bucket_max[RT_HIST_BUCKETS]; /* largest size sent per bucket; 0 = not recorded (schema < 4) */
	/* the QPs that sent this opcode class: their post calls (all opcodes), post-list batches, smallest SQ */
	uint64_t post_calls;		      /* 0 = not recorded */
	uint64_t batch[RT_BATCH_BUCKETS];     /* post calls per rt_batch_bucket(WRs per call) */
	uint32_t batch_max[RT_BATCH_BUCKETS]; /* largest batch seen per bucket, 0 = not recorded */
	uint32_t max_send_wr;		      /* smallest max_send_wr of those QPs, 0 = unknown */
	/* the concurrency the app posted with (schema v10): its QPs of this class and the distinct threads that posted
	 * on them (the largest count of any of its processes); 0 = not recorded */
	uint32_t qps, threads;
};
/* Stores one histogram of an application on node (upserted) in one transaction; sets h->id. */
int rt_store_put_histogram(struct rt_store *st, const struct rt_node_info *node, struct rt_store_histogram *h,
			   struct rt_error *err);
/* The most recent histogram of app for op/qpt into out; ENOENT when there is none. */
int rt_store_get_histogram(struct rt_store *st, const char *app, enum rt_opcode op, enum rt_qp_type qpt,
			   struct rt_store_histogram *out, struct rt_error *err);

/* ---- the probe's adaptive inline controllers (schema v9) --------------------------------------------------------- */

/*
 * One QP's adaptive inline controller as `rtune probe` (or the agent's spool) imported it from the probe's file
 * ("inline_ctl", docs/probe.md): per application, device, QP type and QP, where the threshold started and ended, its
 * evidence and its last moves. The rows of one import share created_ns with that import's histograms.
 */
struct rt_store_inline_ctl {
	int64_t id; /* set by put */
	char app[RT_NAME_LEN];
	char device[64];
	char qp_type[16]; /* as the probe names it, lower case: "rc", "ud", "uc", "xrc_send", ... */
	uint32_t qp_num;
	int64_t pid;	    /* of the process that had the QP */
	int64_t created_ns; /* when imported; 0 = now */
	bool busy;	    /* the probe could not read the controller: no figures below */
	bool parked;
	uint32_t start_bytes, threshold_bytes, min_bytes, max_bytes;
	uint64_t samples, explored, dropped, rounds, moves_up, moves_down, reverts;
	unsigned n_moves; /* the last moves, oldest first (<= RT_INLINE_CTL_MOVES) */
	struct rt_inline_ctl_move moves[RT_INLINE_CTL_MOVES];
};

/*
 * Stores the n controllers c[0..n) of node (with their moves) in one transaction and sets each c[i].id; on failure
 * nothing is stored. EINVAL for a controller without application, device or QP type, or with more moves than kept.
 */
int rt_store_put_inline_ctl(struct rt_store *st, const struct rt_node_info *node, struct rt_store_inline_ctl *c,
			    size_t n, struct rt_error *err);

/*
 * The controllers of each application's latest import (its rows with the newest created_ns) into *out (malloc'd,
 * free(); *n may be 0), ordered by application, device, QP type and QP number. node_key (rt_store_node_key(); NULL:
 * every node) and device (a device name; NULL: all) filter. A store without the table (read-only, older schema)
 * gives none.
 */
int rt_store_get_inline_ctl(struct rt_store *st, const char *node_key, const char *device,
			    struct rt_store_inline_ctl **out, size_t *n, struct rt_error *err);

/* ---- profiles ------------------------------------------------------------------------------------------------- */

/*
 * Stores n profile entries for node in one transaction. Each entry is validated (ranges as in the JSON schema) and its
 * inline_limit_excl derived (an entry whose inline_confidence and signal_confidence are both low while confidence is
 * not, i.e. made by a caller that does not set them, stores both as confidence); an entry with the same (node, device,
 * port, opcode, qp type, run id) already stored is kept as is (idempotent). hw_signature may be NULL (kept / computed
 * from the node's stored devices).
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
 * The current profile of a node: per (device, port, opcode, qp type) the most recently measured entry (with
 * hysteresis, a run that did not change the decision stores it again, as evidence: the latest row is always the
 * node's current decision), filtered to
 * device (name or GUID) when not NULL. node_key NULL = the local node if it has profiles, else the only node that has
 * any (EEXIST with the list in err when several do). *out is malloc'd (free()), *n may be 0; node_out (may be NULL)
 * receives the node's identity and hw_sig (may be NULL, 32 bytes) its signature. Each entry carries at most
 * RT_PROFILE_MAX_REASONS of its stored reasons (all of them: rt_store_profile_reasons()), chosen as the profile
 * document does (docs/profile-schema.md): one explanation per decision first, then the warnings, then the rest.
 */
int rt_store_get_profile(struct rt_store *st, const char *node_key, const char *device, struct rt_profile_entry **out,
			 size_t *n, struct rt_node_info *node_out, char *hw_sig, struct rt_error *err);

/* ---- tuned entries: every reason, and the hysteresis record (`rtune tune`) ------------------------------------- */

#define RT_STORE_REASON_LEN 512 /* as the tuner's RT_TUNER_REASON_LEN: a stored reason is never cut shorter */

/* One reason as the store keeps it: every reason of a tuned entry is stored, with the decision it explains. */
struct rt_store_reason {
	char code[48];
	char text[RT_STORE_REASON_LEN];
	char topic[16]; /* "inline", "signal", "queue", "cq_moderation", "input", "profile" (the hysteresis) */
	bool warn;	/* a warning (else an explanation) */
};

/* What one run did to one decision of the node's current profile (docs/tuner.md, "Hysteresis"). */
struct rt_store_change {
	char action[12];    /* "first" (no earlier decision), "kept" (the run is added as evidence), "replaced",
			     * "forced" (replaced by --force); "" = not recorded (a row from before, or imported) */
	uint32_t run_value; /* the run's own answer: threshold bytes, or N */
	uint32_t previous;  /* the decision before this run (kept / replaced / forced) */
	char why[RT_STORE_REASON_LEN];
};

/* A tuned profile entry with what the store keeps beyond the public entry. */
struct rt_store_tuned {
	struct rt_profile_entry e; /* the decision stored (after hysteresis); e.reasons is not read by the writer */
	struct rt_store_reason *reasons; /* every reason in order: borrowed by the writer, malloc'd by the readers */
	size_t n_reasons;
	char signal_verdict[16]; /* "knee", "indifferent", "not_measured"; "" unknown */
	struct rt_store_change inl, sig;
};

/* Frees what a reader allocated in t (its reasons); t stays valid and empty of them. NULL is a no-op. */
void rt_store_tuned_release(struct rt_store_tuned *t);

/*
 * As rt_store_replace_profile() for tuned entries: every reason is stored (the public entry and the JSON profile
 * carry a bounded choice of them, see rt_store_get_profile()), with each decision's confidence, the signal verdict
 * and the hysteresis record. All entries are validated first; on failure the store is unchanged.
 */
int rt_store_replace_tuned(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			   const struct rt_store_tuned *t, size_t n, struct rt_error *err);

/*
 * The node's decision for key's device (name, and GUID when both are known: a replaced NIC starts afresh), port,
 * opcode and QP type as it stood before the run key->run_id: the latest stored entry measured no later than
 * key->measured_at from another run. 0 and *out (release with rt_store_tuned_release()), ENOENT when there is none
 * (no err text then), or an errno + err.
 */
int rt_store_profile_base(struct rt_store *st, const struct rt_node_info *node, const struct rt_profile_entry *key,
			  struct rt_store_tuned *out, struct rt_error *err);

/* Every stored reason of the entry e (of the node node_key, NULL as in rt_store_get_profile()) read back from the
 * store: *out malloc'd (free()), *n may be 0. ENOENT when the entry is not stored. */
int rt_store_profile_reasons(struct rt_store *st, const char *node_key, const struct rt_profile_entry *e,
			     struct rt_store_reason **out, size_t *n, struct rt_error *err);

/* Every stored entry of the store's runs (device name or GUID when not NULL), oldest measurement first, with its
 * hysteresis record (what `rtune history` shows); reasons are not read (n_reasons 0). *out malloc'd: free() it. */
int rt_store_profile_changes(struct rt_store *st, const char *device, struct rt_store_tuned **out, size_t *n,
			     struct rt_error *err);

/* Validates one entry (ranges, names, consistency); 0 or EINVAL with the field named in err. */
int rt_profile_entry_validate(const struct rt_profile_entry *e, struct rt_error *err);

/* ---- operator pins (`rtune pin`) and the agent's publications ------------------------------------------------ */

/* A value the operator fixed for one device/port/opcode/QP type: `rtune agent` publishes it whatever it measures. */
struct rt_store_pin {
	char device[64];
	int port;
	enum rt_profile_opcode opcode;
	enum rt_profile_qp_type qp_type;
	int64_t inline_threshold; /* bytes, -1 = not pinned */
	int64_t signal_interval;  /* >= 1, -1 = not pinned */
	int64_t created_ns;	  /* set by rt_store_pin_set() */
};
/* Stores p in one transaction: a pinned field (not -1) replaces that field of an existing pin of the same key, -1
 * keeps it. EINVAL (with the field named) for a threshold outside 0..65536, an interval outside 1..65536, a port outside
 * 1..255, no device or nothing pinned; nothing stored then. */
int rt_store_pin_set(struct rt_store *st, const struct rt_store_pin *p, struct rt_error *err);
/* Removes pins of device (port 0 = every port; all_ops: every opcode/QP type, else only op/qpt); what: 'i' the
 * inline threshold, 's' the signal interval, 'b' both (a pin left with neither is deleted). *removed (may be NULL):
 * pins changed. ENOENT (with err) when none matched; nothing changed then. */
int rt_store_pin_clear(struct rt_store *st, const char *device, int port, bool all_ops, enum rt_profile_opcode op,
		       enum rt_profile_qp_type qpt, char what, size_t *removed, struct rt_error *err);
/* Every pin, by device, port, opcode, QP type: *out malloc'd (free()), *n may be 0. */
int rt_store_pin_list(struct rt_store *st, struct rt_store_pin **out, size_t *n, struct rt_error *err);

/* One change `rtune agent` published (or, dry_run, would have). */
struct rt_store_publication {
	int64_t at_ns;
	char device[64];
	int port;
	enum rt_profile_opcode opcode;
	enum rt_profile_qp_type qp_type;
	char app[64];
	uint32_t inline_threshold, signal_interval;
	char change[20];  /* "first", "hardware_changed", "aged", "app_histogram", "on_demand", "pinned", ... */
	char reason[256]; /* one line */
	bool dry_run;
};
/* Appends n publications in one transaction (at_ns 0 = now). 0 or an errno + err; nothing stored on failure. */
int rt_store_publication_add(struct rt_store *st, const struct rt_store_publication *p, size_t n, struct rt_error *err);
/* Every publication, oldest first: *out malloc'd (free()), *n may be 0. */
int rt_store_publication_list(struct rt_store *st, struct rt_store_publication **out, size_t *n, struct rt_error *err);

/* ---- JSON profile v1, env and prometheus exports, import ---------------------------------------------------------- */

enum rt_export_format { RT_EXPORT_JSON, RT_EXPORT_ENV, RT_EXPORT_PROMETHEUS };
int rt_export_format_parse(const char *s, enum rt_export_format *out);

/*
 * Writes the current profile of node_key (NULL as in rt_store_get_profile) in fmt to path with rt_write_file_atomic()
 * (a regular file replaced atomically, a new one 0644, a FIFO or device written in place, "-" standard output), or to
 * stdout when path is NULL. For env, profile_path is the value printed for RTUNE_PROFILE (NULL: the
 * line is a comment telling to export the json). ENOENT when there is no profile.
 */
int rt_store_export(struct rt_store *st, const char *node_key, enum rt_export_format fmt, const char *path,
		    const char *profile_path, struct rt_error *err);

/* The JSON profile document (as `rtune export --format json` writes it) of the entries v[0..n) of node (signature
 * hw_sig): *text malloc'd (free()), NUL-terminated, *len its length. 0 or ENOMEM + err. */
int rt_store_profile_document(struct rt_store *st, const struct rt_node_info *node, const char *hw_sig,
			      const struct rt_profile_entry *v, size_t n, char **text, size_t *len,
			      struct rt_error *err);

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
 * Writes len bytes to path with rt_out_write_file() (rt_out.h): "-" is standard output; a regular file or new name is
 * replaced atomically (temp file "<dir>/.<base>.XXXXXX", fsync, rename, directory fsync; a new file gets mode, an
 * existing one keeps its permissions); a FIFO or character device is written in place; anything else is refused.
 * On failure path is untouched (no temp file left).
 */
int rt_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, struct rt_error *err);

#endif
