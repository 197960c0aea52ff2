// SPDX-License-Identifier: MIT
/*
 * The SQLite store: default path, opening (permissions, no symlinks, not-a-database and newer-schema detection before
 * anything is written), the schema and its forward migrations, node identity and hardware signature, and the helpers
 * the other store files share.
 */
#include "store_internal.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 15000
/* PRAGMA application_id of an rtune store: "rtun". */
#define RT_STORE_APP_ID 0x7274756e

/* Schema v1: the first released layout. Kept verbatim: fresh stores are built by replaying every migration. */
static const char schema_v1[] =
	"CREATE TABLE nodes(id INTEGER PRIMARY KEY, node_key TEXT NOT NULL UNIQUE, hostname TEXT NOT NULL,"
	" machine_id TEXT NOT NULL DEFAULT '', cpu_model TEXT NOT NULL DEFAULT '', kernel TEXT NOT NULL DEFAULT '',"
	" cpu_count INTEGER NOT NULL DEFAULT 0, numa_nodes INTEGER NOT NULL DEFAULT 1,"
	" hw_signature TEXT NOT NULL DEFAULT '', updated_ns INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE devices(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, node_guid TEXT NOT NULL DEFAULT '', transport TEXT, fw_ver TEXT, vendor_id INTEGER,"
	" vendor_part_id INTEGER, hw_ver INTEGER, max_qp INTEGER, max_qp_wr INTEGER, max_sge INTEGER, max_cqe INTEGER,"
	" max_qp_rd_atom INTEGER, max_mr INTEGER, max_inline_rc INTEGER, max_inline_ud INTEGER, numa_node INTEGER,"
	" local_cpus TEXT, pci_addr TEXT, pcie_speed TEXT, pcie_width INTEGER, pcie_max_payload_bytes INTEGER,"
	" pcie_max_read_req_bytes INTEGER, UNIQUE(node_id, name, node_guid));"
	"CREATE TABLE ports(device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,"
	" port_num INTEGER NOT NULL, state TEXT, link_layer TEXT, active_mtu_bytes INTEGER, max_mtu_bytes INTEGER,"
	" lid INTEGER, gid_tbl_len INTEGER, gids TEXT, PRIMARY KEY(device_id, port_num));"
	"CREATE TABLE runs(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
	" node_id INTEGER NOT NULL REFERENCES nodes(id), device_id INTEGER NOT NULL REFERENCES devices(id),"
	" port_num INTEGER NOT NULL, gid_index INTEGER, params TEXT, env TEXT, started_ns INTEGER NOT NULL,"
	" ended_ns INTEGER, status TEXT NOT NULL CHECK(status IN ('running','complete','interrupted','failed')),"
	" owner_pid INTEGER, owner_host TEXT, max_inline_used INTEGER, sq_depth INTEGER);"
	"CREATE TABLE lat_points(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" op TEXT NOT NULL, qpt TEXT NOT NULL, kind TEXT NOT NULL, msg_bytes INTEGER NOT NULL, inl INTEGER NOT NULL,"
	" n_samples INTEGER, median_ns REAL, p99_ns REAL, p999_ns REAL, mean_ns REAL, min_ns REAL, ci_lo_ns REAL,"
	" ci_hi_ns REAL, cpu_ns_per_op REAL, n_kept INTEGER, samples BLOB);"
	"CREATE INDEX lat_points_run ON lat_points(run_id);"
	"CREATE TABLE rate_points(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE"
	" CASCADE,"
	" op TEXT NOT NULL, qpt TEXT NOT NULL, msg_bytes INTEGER NOT NULL, inl INTEGER NOT NULL,"
	" signal_interval INTEGER NOT NULL, sq_depth INTEGER, reps INTEGER, mops REAL, mops_lo REAL, mops_hi REAL,"
	" cpu_ns_per_msg REAL, msgs INTEGER, enomem INTEGER);"
	"CREATE INDEX rate_points_run ON rate_points(run_id);"
	"CREATE TABLE profiles(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	" device TEXT NOT NULL, guid TEXT NOT NULL DEFAULT '', port INTEGER NOT NULL, op TEXT NOT NULL,"
	" qpt TEXT NOT NULL, inline_threshold INTEGER NOT NULL, max_inline_data INTEGER NOT NULL,"
	" signal_interval INTEGER NOT NULL, sq_depth INTEGER NOT NULL, cq_depth INTEGER NOT NULL,"
	" cq_mod_count INTEGER, cq_mod_period_us INTEGER, numa_node INTEGER NOT NULL DEFAULT -1,"
	" cpus TEXT NOT NULL DEFAULT '', confidence TEXT NOT NULL, reasons TEXT NOT NULL DEFAULT '[]',"
	" measured_at INTEGER NOT NULL, run_uuid TEXT NOT NULL, rtune_version TEXT NOT NULL,"
	" stored_ns INTEGER NOT NULL, UNIQUE(node_id, device, port, op, qpt, run_uuid));";

/* v1 -> v2: application histograms from the probe; profiles remember the app/histogram; runs keep CQ moderation. */
static const char migrate_v2[] =
	"CREATE TABLE histograms(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE"
	" CASCADE,"
	" app TEXT NOT NULL, op TEXT NOT NULL, qpt TEXT NOT NULL, created_ns INTEGER NOT NULL,"
	" messages INTEGER NOT NULL, bytes INTEGER NOT NULL, inline_count INTEGER NOT NULL,"
	" signaled_count INTEGER NOT NULL, sq_full_enomem INTEGER NOT NULL, buckets BLOB NOT NULL);"
	"CREATE INDEX histograms_app ON histograms(app, op, qpt, created_ns);"
	"ALTER TABLE runs ADD COLUMN cqmod TEXT;"
	"ALTER TABLE profiles ADD COLUMN app TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE profiles ADD COLUMN histogram_id INTEGER REFERENCES histograms(id) ON DELETE SET NULL;"
	"CREATE INDEX profiles_current ON profiles(node_id, device, port, op, qpt, measured_at);"
	"CREATE INDEX profiles_run ON profiles(run_uuid);";

/* v2 -> v3: where an imported entry's calibration ran (the per-entry "calibration" object of a profile from another
 * node, whose run this store does not hold): the CPU's NUMA node and whether it was the device's own. NULL: unknown. */
static const char migrate_v3[] = "ALTER TABLE profiles ADD COLUMN cal_cpu_numa_node INTEGER;"
				 "ALTER TABLE profiles ADD COLUMN cal_numa_local INTEGER;";

/* v3 -> v4: one node identity everywhere and a run keeps what its device was.
 * - nodes.node_key becomes "<machine-id>/<hostname>" (the hostname alone without a machine-id), as rt_store_node_key()
 *   and `rtune report` define it: machines cloned from one image share /etc/machine-id but are different nodes.
 * - runs.device: the device as that run saw it (capabilities, firmware, ports; JSON), so re-tuning an old run uses its
 *   own max_inline_rc rather than whatever a later run wrote into the device row. NULL for runs stored before v4
 *   (they fall back to the device row).
 * - devices.seen_ns: when the newest evidence of that device row was taken (a run's start, an imported profile's
 *   newest measurement); current_devices, per node and device name, the row seen last: a node's current hardware (a
 *   replaced NIC, same name and a new GUID, is no longer part of it). */
static const char migrate_v4[] =
	"UPDATE nodes SET node_key = machine_id || '/' || hostname WHERE machine_id <> '';"
	"ALTER TABLE runs ADD COLUMN device TEXT;"
	"ALTER TABLE devices ADD COLUMN seen_ns INTEGER NOT NULL DEFAULT 0;"
	"UPDATE devices SET seen_ns = coalesce((SELECT max(started_ns) FROM runs r WHERE r.device_id = devices.id), 0);"
	"CREATE VIEW current_devices AS SELECT d.* FROM devices d WHERE d.id = (SELECT e.id FROM devices e"
	" WHERE e.node_id = d.node_id AND e.name = d.name ORDER BY e.seen_ns DESC, e.id DESC LIMIT 1);";

/* v4 -> v5: what an application's histogram rows leave out of the bucket counts: the largest size sent in each bucket
 * (so a threshold is a size the app sends), and the post-list batches, post calls and smallest send queue of the QPs
 * that sent it (the signaling interval and the SQ-full warning). NULL in rows of older stores: not recorded. */
static const char migrate_v5[] = "ALTER TABLE histograms ADD COLUMN bucket_max BLOB;"
				 "ALTER TABLE histograms ADD COLUMN post_calls INTEGER;"
				 "ALTER TABLE histograms ADD COLUMN batch BLOB;"
				 "ALTER TABLE histograms ADD COLUMN batch_max BLOB;"
				 "ALTER TABLE histograms ADD COLUMN max_send_wr INTEGER;";

/* v5 -> v6: each decision's own confidence, the signal verdict, and the hysteresis record of a tuned entry (JSON:
 * per decision what the run said, whether it changed the decision or was added as evidence, and why). NULL: a row
 * written before (or imported without them). */
static const char migrate_v6[] = "ALTER TABLE profiles ADD COLUMN inline_confidence TEXT;"
				 "ALTER TABLE profiles ADD COLUMN signal_confidence TEXT;"
				 "ALTER TABLE profiles ADD COLUMN signal_verdict TEXT;"
				 "ALTER TABLE profiles ADD COLUMN hysteresis TEXT;";

/* v6 -> v7: operator pins (`rtune pin`: a value no tuning or agent replaces; NULL = that decision not pinned) and the
 * agent's publications (every change `rtune agent` published, with its reason). */
static const char migrate_v7[] =
	"CREATE TABLE pins (device TEXT NOT NULL, port INTEGER NOT NULL, opcode TEXT NOT NULL,"
	" qp_type TEXT NOT NULL, inline_threshold INTEGER, signal_interval INTEGER,"
	" created_ns INTEGER NOT NULL, PRIMARY KEY (device, port, opcode, qp_type));"
	"CREATE TABLE agent_publications (id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL,"
	" device TEXT NOT NULL, port INTEGER NOT NULL, opcode TEXT NOT NULL, qp_type TEXT NOT NULL,"
	" app TEXT NOT NULL, inline_threshold INTEGER NOT NULL, signal_interval INTEGER NOT NULL,"
	" change TEXT NOT NULL, reason TEXT NOT NULL, dry_run INTEGER NOT NULL);";

/* v7 -> v8: the rate sweep's load bands other than the small-message one (large messages, post lists), beside
 * rate_points so that every reader of the sweep keeps reading the small band only, and the signaling interval chosen
 * per band. No rows in older stores: those runs measured the small band only. */
static const char migrate_v8[] =
	"CREATE TABLE band_rate_points(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE"
	" CASCADE, band TEXT NOT NULL, op TEXT NOT NULL, qpt TEXT NOT NULL, msg_bytes INTEGER NOT NULL,"
	" inl INTEGER NOT NULL, post_list INTEGER NOT NULL, signal_interval INTEGER NOT NULL, sq_depth INTEGER,"
	" reps INTEGER, mops REAL, mops_lo REAL, mops_hi REAL, cpu_ns_per_msg REAL, msgs INTEGER, enomem INTEGER);"
	"CREATE INDEX band_rate_points_run ON band_rate_points(run_id);"
	"CREATE TABLE signal_bands(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, band TEXT NOT NULL,"
	" op TEXT NOT NULL, qpt TEXT NOT NULL, msg_bytes_lo INTEGER NOT NULL, msg_bytes_hi INTEGER NOT NULL,"
	" post_list INTEGER NOT NULL, signal_interval INTEGER NOT NULL, verdict TEXT, confidence TEXT,"
	" PRIMARY KEY(run_id, band, op, qpt));";

/* v8 -> v9: the adaptive inline controller of each QP the probe ran in apply mode (`rtune probe`, the agent's spool):
 * per application, device, QP type and QP of one import (created_ns, shared with that import's histograms; pid: the
 * process), where its threshold started and ended, its evidence and counts, and its last moves. No rows in older
 * stores: their imports did not keep it. */
static const char migrate_v9[] =
	"CREATE TABLE inline_ctl(id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE"
	" CASCADE, app TEXT NOT NULL, device TEXT NOT NULL, qp_type TEXT NOT NULL, qp_num INTEGER NOT NULL,"
	" pid INTEGER NOT NULL, created_ns INTEGER NOT NULL, busy INTEGER NOT NULL, start_bytes INTEGER,"
	" threshold_bytes INTEGER, min_bytes INTEGER, max_bytes INTEGER, parked INTEGER, samples INTEGER,"
	" explored INTEGER, dropped INTEGER, rounds INTEGER, moves_up INTEGER, moves_down INTEGER, reverts INTEGER);"
	"CREATE INDEX inline_ctl_app ON inline_ctl(node_id, app, created_ns);"
	"CREATE TABLE inline_ctl_moves(ctl_id INTEGER NOT NULL REFERENCES inline_ctl(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, at_sample INTEGER NOT NULL, from_bytes INTEGER NOT NULL, to_bytes INTEGER NOT NULL,"
	" inline_ns INTEGER NOT NULL, noinline_ns INTEGER NOT NULL, revert INTEGER NOT NULL,"
	" PRIMARY KEY(ctl_id, seq));";

/* v9 -> v10: the concurrency band of the rate sweep (several QPs driven by several threads): its QPs and threads on
 * each band rate point and band decision (1 and 1 for the other bands, as in older stores), and the app's QP and
 * posting-thread counts beside its histogram (NULL: recorded before the probe counted them). */
static const char migrate_v10[] = "ALTER TABLE band_rate_points ADD COLUMN qps INTEGER NOT NULL DEFAULT 1;"
				  "ALTER TABLE band_rate_points ADD COLUMN threads INTEGER NOT NULL DEFAULT 1;"
				  "ALTER TABLE signal_bands ADD COLUMN qps INTEGER NOT NULL DEFAULT 1;"
				  "ALTER TABLE signal_bands ADD COLUMN threads INTEGER NOT NULL DEFAULT 1;"
				  "ALTER TABLE histograms ADD COLUMN qps INTEGER;"
				  "ALTER TABLE histograms ADD COLUMN threads INTEGER;";

/* v10 -> v11: an entry's measured evidence (profile 1.3 "measured", kept by `rtune import` inside the hysteresis
 * column) also as plain columns, written with it, so a report over a fleet store reads 100,000s of entries without
 * parsing JSON. measured_kind NULL: no evidence in the columns (none, or a row written before v11: then the hysteresis
 * column is the one to read); else "" or the latency kind, and NULL reals are unknown (NAN). Old rows are not
 * rewritten: the migration stays instant on a big store, and readers fall back to the hysteresis column. */
static const char migrate_v11[] = "ALTER TABLE profiles ADD COLUMN measured_kind TEXT;"
				  "ALTER TABLE profiles ADD COLUMN measured_msg_bytes INTEGER;"
				  "ALTER TABLE profiles ADD COLUMN measured_lat_inline_ns REAL;"
				  "ALTER TABLE profiles ADD COLUMN measured_lat_noinline_ns REAL;"
				  "ALTER TABLE profiles ADD COLUMN measured_mops_at_n REAL;"
				  "ALTER TABLE profiles ADD COLUMN measured_mops_at_n1 REAL;"
				  "ALTER TABLE profiles ADD COLUMN measured_noise_pct REAL;";

static const char *const migrations[RT_STORE_SCHEMA_VERSION] = { schema_v1,  migrate_v2,  migrate_v3, migrate_v4,
								 migrate_v5, migrate_v6,  migrate_v7, migrate_v8,
								 migrate_v9, migrate_v10, migrate_v11 };

int64_t rt_store_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int rt_store_default_path(char *buf, size_t len, struct rt_error *err)
{
	const char *env = getenv("RTUNE_DB"), *xdg, *home;
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/lib/rtune/rtune.db");
	else if ((xdg = getenv("XDG_STATE_HOME")) && xdg[0] == '/')
		n = snprintf(buf, len, "%s/rtune/rtune.db", xdg);
	else if ((home = getenv("HOME")) && *home)
		n = snprintf(buf, len, "%s/.local/state/rtune/rtune.db", home);
	else
		return rt_error_set(err, ENOENT, "no store path: set RTUNE_DB or HOME, or pass --db PATH");
	if (n < 0 || (size_t)n >= len)
		return rt_error_set(err, ENAMETOOLONG, "store path too long");
	return 0;
}

/* mkdir -p of path's directory; each created component gets mode; an existing final directory must not be a symlink
 * when it is the one we would create (rtune's own directory). */
static int make_parent_dirs(const char *path, mode_t mode, struct rt_error *err)
{
	char dir[4096];
	char *slash;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		bool last = *p == '\0';

		if (*p == '/' || last) {
			char save = *p;

			*p = '\0';
			if (mkdir(dir, mode) < 0 && errno != EEXIST)
				return rt_error_set(err, errno, "cannot create directory '%s': %s", dir,
						    strerror(errno));
			*p = save;
		}
		if (last)
			break;
	}
	if (lstat(dir, &sb) < 0)
		return rt_error_set(err, errno, "cannot use directory '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return rt_error_set(err, ENOTDIR, "cannot use directory '%s': not a directory (or a symlink)", dir);
	return 0;
}

/* EACCES with "cannot write store '<path>': read-only for this user (<why>check its owner and permissions, or use
 * --db PATH)"; why is "" or a clause ending in "; ". */
static int read_only_error(struct rt_store *st, struct rt_error *err, const char *why)
{
	return rt_error_set(
		err, EACCES,
		"cannot write store '%s': read-only for this user (%scheck its owner and permissions, or use "
		"--db PATH)",
		st->path, why);
}

int rt_store_sql_error(struct rt_store *st, const char *what, struct rt_error *err)
{
	int code = sqlite3_errcode(st->db), e;

	switch (code & 0xff) {
	case SQLITE_NOTADB: e = EINVAL; break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: e = EBUSY; break;
	case SQLITE_NOMEM: e = ENOMEM; break;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH: e = EACCES; break;
	case SQLITE_FULL: e = ENOSPC; break;
	case SQLITE_CANTOPEN: e = ENOENT; break;
	case SQLITE_CONSTRAINT: e = EEXIST; break;
	default: e = EIO; break;
	}
	if (e == EACCES && (code & 0xff) == SQLITE_READONLY)
		return read_only_error(st, err, "");
	return rt_error_set(err, e, "store '%s': %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

static int exec(struct rt_store *st, const char *sql, const char *what, struct rt_error *err)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, what, err);
	return 0;
}

static int step_stmt(struct rt_store *st, enum rt_stmt_id id, const char *sql, struct rt_error *err)
{
	sqlite3_stmt *s = rt_store_stmt(st, id, sql, err);
	int rc;

	if (!s)
		return err ? err->code : EIO;
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return rt_store_sql_error(st, sql, err);
	return 0;
}

int rt_store_begin(struct rt_store *st, struct rt_error *err)
{
	int rc;

	if (!st->batch)
		return step_stmt(st, STMT_BEGIN, "BEGIN IMMEDIATE", err);
	if (!st->batch_open) {
		if ((rc = step_stmt(st, STMT_BEGIN, "BEGIN IMMEDIATE", err)))
			return rc;
		st->batch_open = true;
	}
	return step_stmt(st, STMT_SAVEPOINT, "SAVEPOINT rt_batch_item", err);
}

int rt_store_commit(struct rt_store *st, struct rt_error *err)
{
	if (st->batch)
		return step_stmt(st, STMT_RELEASE, "RELEASE rt_batch_item", err);
	return step_stmt(st, STMT_COMMIT, "COMMIT", err);
}

void rt_store_rollback(struct rt_store *st)
{
	if (sqlite3_get_autocommit(st->db)) {
		/* no transaction left: SQLite rolled it back after the error; in batch mode that undid the whole batch */
		if (st->batch_open) {
			st->batch_open = false;
			st->batch_lost = true;
		}
		return;
	}
	if (st->batch) {
		step_stmt(st, STMT_ROLLBACK_TO, "ROLLBACK TO rt_batch_item", NULL);
		step_stmt(st, STMT_RELEASE, "RELEASE rt_batch_item", NULL);
		return;
	}
	step_stmt(st, STMT_ROLLBACK, "ROLLBACK", NULL);
}

int rt_store_batch_flush(struct rt_store *st, struct rt_error *err)
{
	int rc;

	if (st->batch_lost) {
		st->batch_lost = false;
		if (st->batch_open) /* a new batch began after the loss: keep it, the loss is what must be told */
			rt_store_batch_flush(st, NULL);
		return rt_error_set(err, EIO,
				    "store '%s': an error rolled the batch back: its earlier writes were not "
				    "stored",
				    st->path);
	}
	if (!st->batch_open)
		return 0;
	rc = step_stmt(st, STMT_COMMIT, "COMMIT", err);
	if (rc) {
		step_stmt(st, STMT_ROLLBACK, "ROLLBACK", NULL);
		st->batch_open = false;
		return rc;
	}
	st->batch_open = false;
	return 0;
}

int rt_store_batch(struct rt_store *st, bool on, struct rt_error *err)
{
	int rc = 0;

	if (!on)
		rc = rt_store_batch_flush(st, err);
	st->batch = on;
	return rc;
}

sqlite3_stmt *rt_store_stmt(struct rt_store *st, enum rt_stmt_id id, const char *sql, struct rt_error *err)
{
	sqlite3_stmt *s = st->stmts[id];

	if (!s) {
		if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
			rt_store_sql_error(st, "prepare", err);
			return NULL;
		}
		st->stmts[id] = s;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

/* Reads one integer pragma; SQLITE_NOTADB etc. come back as an error. */
static int pragma_int(struct rt_store *st, const char *sql, int *out, struct rt_error *err)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, sql, err);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return rt_store_sql_error(st, sql, err);
	return 0;
}

static int open_failed(struct rt_store *st, struct rt_error *err, int code, const char *why)
{
	return rt_error_set(err, code, "cannot open store '%s': %s", st->path, why);
}

/* Checks what the file is before anything is written: a database, an rtune one, a schema we know. */
static int check_identity(struct rt_store *st, struct rt_error *err)
{
	int version = 0, app_id = 0, tables = 0;
	bool in_txn;

	/* the three reads in one read transaction: another process may be creating this store right now, and its tables,
	 * version and id must be seen together (all or none), never "tables but no id yet" */
	in_txn = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	if (pragma_int(st, "PRAGMA user_version", &version, NULL) ||
	    pragma_int(st, "PRAGMA application_id", &app_id, NULL) ||
	    pragma_int(st, "SELECT count(*) FROM sqlite_master", &tables, NULL)) {
		int code = sqlite3_errcode(st->db);
		char msg[RT_ERROR_TEXT_LEN];

		snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(st->db));
		if (in_txn)
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
			return open_failed(st, err, EINVAL, "not a database");
		return rt_error_set(err, code == SQLITE_BUSY ? EBUSY : EIO, "cannot open store '%s': %s", st->path,
				    msg);
	}
	if (in_txn)
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	if (app_id != RT_STORE_APP_ID && (app_id != 0 || tables != 0))
		return open_failed(st, err, EINVAL, "not an rtune store (an SQLite database of another program)");
	if (version > RT_STORE_SCHEMA_VERSION)
		return rt_error_set(err, EPROTONOSUPPORT,
				    "cannot open store '%s': schema version %d is newer than this rtune supports (%d); "
				    "upgrade rtune",
				    st->path, version, RT_STORE_SCHEMA_VERSION);
	st->version = version;
	return 0;
}

/* Applies the migrations from the stored version up, in one transaction (re-checked inside it: another process may
 * have migrated meanwhile). */
static int migrate(struct rt_store *st, struct rt_error *err)
{
	char sql[64];
	int version = 0, rc;

	if (st->version == RT_STORE_SCHEMA_VERSION)
		return 0;
	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = pragma_int(st, "PRAGMA user_version", &version, err)))
		goto out;
	if (version > RT_STORE_SCHEMA_VERSION) {
		rc = rt_error_set(err, EPROTONOSUPPORT,
				  "cannot open store '%s': schema version %d is newer than this rtune "
				  "supports (%d); upgrade rtune",
				  st->path, version, RT_STORE_SCHEMA_VERSION);
		goto out;
	}
	for (int v = version; v < RT_STORE_SCHEMA_VERSION; v++) {
		snprintf(sql, sizeof(sql), "migrate schema to version %d", v + 1);
		if ((rc = exec(st, migrations[v], sql, err)))
			goto out;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", RT_STORE_SCHEMA_VERSION);
	if ((rc = exec(st, sql, "set schema version", err)))
		goto out;
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d", RT_STORE_APP_ID);
	if ((rc = exec(st, sql, "set application id", err)))
		goto out;
	if ((rc = rt_store_commit(st, err)))
		goto out;
	st->version = RT_STORE_SCHEMA_VERSION;
	return 0;
out:
	rt_store_rollback(st);
	return rc;
}

/* Writes path as an SQLite URI ("file:" + path with '%', '?' and '#' percent-encoded) with immutable=1. */
static void uri_encode(const char *path, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	o += (size_t)snprintf(out, len, "file:");
	for (const char *c = path; *c && o + 4 < len; c++) {
		if (*c == '%' || *c == '?' || *c == '#') {
			out[o++] = '%';
			out[o++] = hex[(unsigned char)*c >> 4];
			out[o++] = hex[(unsigned char)*c & 15];
		} else {
			out[o++] = *c;
		}
	}
	snprintf(out + o, len - o, "?immutable=1");
}

/*
 * Decides, for an existing store that is only to be read, whether it must be opened immutable: SQLite reads a WAL
 * store only through its -shm file, which it cannot create in a directory we may not write. When there is no -wal
 * file either, everything is in the main file and an immutable (lock-free, read-only) open reads it exactly; sets
 * st->readonly then. With a -wal but no -shm there is committed data only SQLite's shared memory could index: that is
 * an error (EROFS) naming the way out, never a silently stale read. Returns 0 otherwise (a normal open).
 */
static int check_readonly_dir(struct rt_store *st, struct rt_error *err)
{
	char dir[sizeof(st->path)], side[sizeof(st->path) + 8];
	char *slash;
	bool has_wal, has_shm;

	snprintf(dir, sizeof(dir), "%s", st->path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0)
		return 0;
	snprintf(side, sizeof(side), "%s-wal", st->path);
	has_wal = faccessat(AT_FDCWD, side, F_OK, AT_EACCESS) == 0;
	snprintf(side, sizeof(side), "%s-shm", st->path);
	has_shm = faccessat(AT_FDCWD, side, F_OK, AT_EACCESS) == 0;
	if (has_shm)
		return 0; /* SQLite reads through the existing -shm (read-only if need be) */
	if (has_wal)
		return rt_error_set(
			err, EROFS,
			"cannot open store '%s': its write-ahead log '%s-wal' needs a '-shm' "
			"file that cannot be created in the read-only directory '%s'; run rtune once as the "
			"store's owner, or copy the store with its -wal file",
			st->path, st->path, dir);
	st->readonly = true;
	return 0;
}

/* Switches the store to WAL. While another process holds the file (creating the same new store at the same moment),
 * SQLite refuses the switch with "database is locked" at once, without its busy handler (that could deadlock): retry
 * for up to the busy timeout, in 20 ms steps. */
static int set_wal(struct rt_store *st, struct rt_error *err)
{
	for (int waited_ms = 0; waited_ms <= BUSY_TIMEOUT_MS; waited_ms += 20) {
		if (sqlite3_exec(st->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) == SQLITE_OK)
			return 0;
		if ((sqlite3_errcode(st->db) & 0xff) != SQLITE_BUSY)
			break;
		usleep(20000);
	}
	return rt_store_sql_error(st, "set WAL", err);
}

static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

/* Process-wide SQLite settings, made once before SQLite initialises (sqlite3_config refuses them afterwards, when a
 * program used SQLite first: then they are simply not applied). Memory-use statistics off: with them on, every
 * allocation SQLite makes takes a global mutex, and nothing in rtune reads the statistics. */
static void sqlite_setup(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int do_open(const char *path, bool create, struct rt_store **out, struct rt_error *err)
{
	struct rt_store *st;
	struct stat sb;
	bool is_root = geteuid() == 0;
	int rc;

	*out = NULL;
	pthread_once(&sqlite_once, sqlite_setup);
	st = calloc(1, sizeof(*st));
	if (!st)
		return rt_error_set(err, ENOMEM, "out of memory");
	if (path) {
		if (strlen(path) >= sizeof(st->path)) {
			rc = rt_error_set(err, ENAMETOOLONG, "store path too long");
			goto out;
		}
		snprintf(st->path, sizeof(st->path), "%s", path);
	} else if ((rc = rt_store_default_path(st->path, sizeof(st->path), err))) {
		goto out;
	}
	if (lstat(st->path, &sb) == 0) {
		if (S_ISLNK(sb.st_mode)) {
			rc = open_failed(st, err, ELOOP, "is a symbolic link (refusing to follow it)");
			goto out;
		}
		if (!S_ISREG(sb.st_mode)) {
			rc = open_failed(st, err, EINVAL, "not a regular file");
			goto out;
		}
		/* a command that only reads never turns a file into a store: an empty one is not a store (yet) */
		if (!create && sb.st_size == 0) {
			rc = open_failed(st, err, EINVAL, "empty file, not an rtune store");
			goto out;
		}
	} else if (errno != ENOENT) {
		rc = rt_error_set(err, errno, "cannot open store '%s': %s", st->path, strerror(errno));
		goto out;
	} else if (!create) {
		rc = rt_error_set(err, ENOENT, "no store at '%s' (nothing recorded yet; use --db PATH or set RTUNE_DB)",
				  st->path);
		goto out;
	} else {
		int fd;

		if (!path && (rc = make_parent_dirs(st->path, is_root ? 0755 : 0700, err)))
			goto out;
		/* create the empty file ourselves so its mode is ours and a racing symlink is not followed */
		fd = open(st->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, is_root ? 0644 : 0600);
		if (fd < 0 && errno != EEXIST) {
			rc = rt_error_set(err, errno, "cannot create store '%s': %s", st->path, strerror(errno));
			goto out;
		}
		if (fd >= 0)
			close(fd);
	}
	if ((rc = check_readonly_dir(st, err)))
		goto out;
	if (st->readonly && create) {
		rc = read_only_error(st, err, "its directory is not writable; ");
		goto out;
	}
	/* SQLITE_OPEN_NOMUTEX: a store is used by one thread at a time (rt_store.h), so SQLite's per-call connection
	 * mutex is pure cost */
	if (st->readonly) {
		char uri[sizeof(st->path) * 3 + 32];

		uri_encode(st->path, uri, sizeof(uri));
		rc = sqlite3_open_v2(
			uri, &st->db,
			SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, NULL);
	} else {
		rc = sqlite3_open_v2(st->path, &st->db,
				     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, NULL);
	}
	if (rc != SQLITE_OK) {
		rc = rt_error_set(err, EIO, "cannot open store '%s': %s", st->path,
				  st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if ((rc = check_identity(st, err)))
		goto out;
	if (!create && st->version == 0) {
		/* an SQLite database without any table (nor rtune's id): creating rtune's tables in it is for a writer */
		rc = open_failed(st, err, EINVAL, "empty database, not an rtune store");
		goto out;
	}
	if (create && sqlite3_db_readonly(st->db, "main") == 1) {
		rc = read_only_error(st, err, "");
		goto out;
	}
	if (st->readonly) {
		if (st->version != RT_STORE_SCHEMA_VERSION) {
			rc = rt_error_set(err, EROFS,
					  "cannot open store '%s': schema version %d needs an upgrade to %d "
					  "but the store is read-only; run any rtune command as its owner once",
					  st->path, st->version, RT_STORE_SCHEMA_VERSION);
			goto out;
		}
		*out = st;
		return 0;
	}
	/* only now, knowing it is ours and not newer, may anything be written */
	if ((rc = set_wal(st, err)) || (rc = exec(st, "PRAGMA synchronous=NORMAL", "set synchronous", err)) ||
	    (rc = exec(st, "PRAGMA foreign_keys=ON", "enable foreign keys", err)) ||
	    (rc = exec(st, "PRAGMA temp_store=MEMORY", "keep temporary journals in memory", err)) ||
	    (rc = migrate(st, err)))
		goto out;
	{
		/* keep -wal/-shm after the last writer closes, so users who may read the store but not create files
		 * next to it (a root-owned /var/lib/rtune) can still open it */
		int one = 1;

		sqlite3_file_control(st->db, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
	}
	*out = st;
	return 0;
out:
	rt_store_close(st);
	return rc;
}

int rt_store_open(const char *path, struct rt_store **out, struct rt_error *err)
{
	return do_open(path, true, out, err);
}

int rt_store_open_existing(const char *path, struct rt_store **out, struct rt_error *err)
{
	return do_open(path, false, out, err);
}

void rt_store_close(struct rt_store *st)
{
	if (!st)
		return;
	if (st->db && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL); /* an unflushed batch is dropped, never half-kept */
	for (int i = 0; i < STMT__COUNT; i++)
		sqlite3_finalize(st->stmts[i]);
	sqlite3_close(st->db);
	free(st);
}

struct sqlite3 *rt_store_sqlite(struct rt_store *st)
{
	return st->db;
}

const char *rt_store_path(const struct rt_store *st)
{
	return st->path;
}

int rt_store_schema_version(const struct rt_store *st)
{
	return st->version;
}

int rt_store_check(struct rt_store *st, struct rt_error *err)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(st->db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK)
		return rt_store_sql_error(st, "integrity check", err);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(s);
		return rt_store_sql_error(st, "integrity check", err);
	}
	if (strcmp((const char *)sqlite3_column_text(s, 0), "ok") != 0) {
		rc = rt_error_set(err, EIO, "store '%s': integrity check: %s", st->path, sqlite3_column_text(s, 0));
		sqlite3_finalize(s);
		return rc;
	}
	sqlite3_finalize(s);
	return 0;
}

/* ---- node identity ------------------------------------------------------------------------------------------------ */

void rt_store_node_key_of(const char *machine_id, const char *hostname, char *out, size_t len)
{
	if (machine_id && machine_id[0])
		snprintf(out, len, "%s/%s", machine_id, hostname ? hostname : "");
	else
		snprintf(out, len, "%s", hostname ? hostname : "");
}

const char *rt_store_node_key(const struct rt_node_info *node, char out[RT_STORE_NODE_KEY_LEN])
{
	rt_store_node_key_of(node->machine_id, node->hostname, out, RT_STORE_NODE_KEY_LEN);
	return out;
}

void rt_store_local_node(struct rt_node_info *out)
{
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (gethostname(out->hostname, sizeof(out->hostname) - 1) < 0)
		snprintf(out->hostname, sizeof(out->hostname), "localhost");
	f = fopen("/etc/machine-id", "re");
	if (f) {
		if (fgets(out->machine_id, sizeof(out->machine_id), f))
			out->machine_id[strcspn(out->machine_id, "\r\n")] = '\0';
		fclose(f);
	}
	out->numa_nodes = 1;
}

static void fnv(uint64_t *h, const char *s)
{
	for (; *s; s++) {
		*h ^= (unsigned char)*s;
		*h *= 0x100000001b3ULL;
	}
	*h ^= 0xff; /* field separator */
	*h *= 0x100000001b3ULL;
}

static int cmp_dev(const void *a, const void *b)
{
	const struct rt_device_info *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

void rt_store_hw_signature(const struct rt_node_info *node, const struct rt_device_info *devs, size_t n_devs,
			   char out[32])
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const struct rt_device_info *sorted[64];
	size_t n = n_devs < 64 ? n_devs : 64;
	char buf[512];

	fnv(&h, node->cpu_model);
	for (size_t i = 0; i < n; i++)
		sorted[i] = &devs[i];
	qsort(sorted, n, sizeof(sorted[0]), cmp_dev);
	for (size_t i = 0; i < n; i++) {
		const struct rt_device_info *d = sorted[i];

		/* only facts every user reads alike: MPS and MRRS (PCI config space past 64 bytes, root only) are left
		 * out, so a node calibrated as root and as a user has one signature */
		snprintf(buf, sizeof(buf), "%s|%08x|%08x|%s|%d|%s|%d", d->name, d->vendor_id, d->vendor_part_id,
			 d->fw_ver, d->numa_node, d->pcie_speed, d->pcie_width);
		fnv(&h, buf);
		for (int p = 0; p < d->port_count && p < RT_MAX_PORTS; p++) {
			snprintf(buf, sizeof(buf), "%d|%s|%d", d->ports[p].port_num, d->ports[p].link_layer,
				 d->ports[p].active_mtu_bytes);
			fnv(&h, buf);
		}
	}
	snprintf(out, 32, "fnv1a64:%016" PRIx64, h);
}

/* Binds the node's columns ?1..?9 (node_key, hostname, machine_id, cpu_model, kernel, cpu_count, numa_nodes,
 * hw_signature, updated_ns) to s. */
static void bind_node(sqlite3_stmt *s, const struct rt_node_info *node, const char *hw_signature)
{
	char key[RT_STORE_NODE_KEY_LEN];

	sqlite3_bind_text(s, 1, rt_store_node_key(node, key), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, node->hostname, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, node->machine_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, node->cpu_model, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, node->kernel, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 6, node->cpu_count);
	sqlite3_bind_int(s, 7, node->numa_nodes > 0 ? node->numa_nodes : 1);
	sqlite3_bind_text(s, 8, hw_signature ? hw_signature : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 9, rt_store_now_ns());
}

/*
 * A node new to the store is inserted plainly (no upsert, no RETURNING: in a fleet import, most nodes are new and
 * the upsert machinery was a fifth of the writer's time); a known one, or one another process inserted in between,
 * goes through the upsert, which keeps what the new facts leave empty.
 */
int rt_store_node_upsert(struct rt_store *st, const struct rt_node_info *node, const char *hw_signature,
			 int64_t *node_id, bool *created, struct rt_error *err)
{
	char key[RT_STORE_NODE_KEY_LEN];
	sqlite3_stmt *s;
	int step;

	if (created)
		*created = false;
	if (!node->hostname[0] && !node->machine_id[0])
		return rt_error_set(err, EINVAL, "node has neither hostname nor machine-id");
	s = rt_store_stmt(st, STMT_NODE_FIND, "SELECT id FROM nodes WHERE node_key = ?1", err);
	if (!s)
		return err ? err->code : EIO;
	sqlite3_bind_text(s, 1, rt_store_node_key(node, key), -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step == SQLITE_DONE) {
		s = rt_store_stmt(st, STMT_NODE_INSERT,
				  "INSERT INTO nodes(node_key, hostname, machine_id, cpu_model, kernel, cpu_count,"
				  " numa_nodes, hw_signature, updated_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
				  " ON CONFLICT(node_key) DO NOTHING",
				  err);
		if (!s)
			return err ? err->code : EIO;
		bind_node(s, node, hw_signature);
		step = sqlite3_step(s);
		sqlite3_reset(s);
		if (step != SQLITE_DONE)
			return rt_store_sql_error(st, "store node", err);
		if (sqlite3_changes(st->db) == 1) {
			*node_id = sqlite3_last_insert_rowid(st->db);
			if (created)
				*created = true;
			return 0;
		}
	} else if (step != SQLITE_ROW) {
		return rt_store_sql_error(st, "store node", err);
	}
	s = rt_store_stmt(st, STMT_NODE_UPSERT,
			  "INSERT INTO nodes(node_key, hostname, machine_id, cpu_model, kernel, cpu_count, numa_nodes,"
			  " hw_signature,"
			  " updated_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(node_key) DO UPDATE SET"
			  " hostname = excluded.hostname, machine_id = excluded.machine_id,"
			  " cpu_model = coalesce(nullif(excluded.cpu_model, ''), cpu_model),"
			  " kernel = coalesce(nullif(excluded.kernel, ''), kernel),"
			  " cpu_count = CASE WHEN excluded.cpu_count > 0 THEN excluded.cpu_count ELSE cpu_count END,"
			  " numa_nodes = excluded.numa_nodes,"
			  " hw_signature = coalesce(nullif(excluded.hw_signature, ''), hw_signature),"
			  " updated_ns = excluded.updated_ns RETURNING id",
			  err);
	if (!s)
		return err ? err->code : EIO;
	bind_node(s, node, hw_signature);
	if (sqlite3_step(s) != SQLITE_ROW)
		return rt_store_sql_error(st, "store node", err);
	*node_id = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return 0;
}
