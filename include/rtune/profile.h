/* SPDX-License-Identifier: MIT */
/*
 * librtune: the application side of rtune. Loads a node's JSON profile (schema "rtune-profile" 1.x, see
 * docs/profile-schema.md), selects the entry for a device (by name or node GUID), port, opcode and QP type, and answers
 * the two questions an RDMA sender has on its fast path: inline this message? signal this WR / poll the send CQ first?
 * Nothing in this library prints or exits; errors come back as an errno plus a caller-owned struct rt_error.
 * Link with `pkg-config --cflags --libs rtune`.
 */
#ifndef RTUNE_PROFILE_H
#define RTUNE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rtune/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* librtune's version: RTUNE_VERSION_NUMBER is major * 10000 + minor * 100 + patch (compare with rt_version_number()
 * for the library actually loaded). */
#define RTUNE_VERSION_MAJOR 0
#define RTUNE_VERSION_MINOR 1
#define RTUNE_VERSION_PATCH 0
#define RTUNE_VERSION_STRING "0.1.0"
#define RTUNE_VERSION_NUMBER (RTUNE_VERSION_MAJOR * 10000 + RTUNE_VERSION_MINOR * 100 + RTUNE_VERSION_PATCH)

/*
 * Thread safety, for every call of this header: a loaded struct rt_profile is immutable, so every rt_profile_* read
 * (select, entry_at, getters, names, is_for_this_host) may run on any number of threads at once; rt_profile_free must
 * not race with them. rt_profile_live_* and rt_profile_reload may be called from any thread at any time (they lock
 * internally). struct rt_sendq and rt_inline_ctl are per QP and per thread: no two threads may use one at once.
 * rt_version*, rt_profile_*_name and rt_inline_ctl_params_init are pure. rt_error_* touch only the caller's struct.
 */

#define RT_PROFILE_SCHEMA_NAME "rtune-profile"
#define RT_PROFILE_SCHEMA_MAJOR 1
#define RT_PROFILE_SCHEMA_MINOR 4

#define RT_PROFILE_MAX_REASONS 8

/* The node's profile where `rtune agent` publishes it and rt_profile_load_env() looks when $RTUNE_PROFILE is unset. */
#define RT_PROFILE_DEFAULT_PATH "/var/lib/rtune/profile.json"

/* Same values and names ("send"/"write", "rc"/"ud", "low"/"medium"/"high") as the JSON document uses. */
enum rt_profile_opcode { RT_PROFILE_OP_SEND = 0, RT_PROFILE_OP_WRITE = 1 };
/* SRD: AWS EFA's Scalable Reliable Datagram QP (efadv_create_qp_ex, EFADV_QP_DRIVER_TYPE_SRD); since rtune 0.1's
 * profile 1.4 writers ("srd"); a librtune before it refuses such an entry's document as an unknown qp_type. */
enum rt_profile_qp_type { RT_PROFILE_QPT_RC = 0, RT_PROFILE_QPT_UD = 1, RT_PROFILE_QPT_SRD = 2 };
enum rt_profile_confidence { RT_PROFILE_CONF_LOW = 0, RT_PROFILE_CONF_MEDIUM = 1, RT_PROFILE_CONF_HIGH = 2 };

/* Why a value was chosen: a stable machine code ("inline_never_better", ...) and one human line. */
struct rt_profile_reason {
	char code[48];
	char text[256];
};

/*
 * One profile entry: the decisions for one device/port/opcode/QP type. Read-only for applications (they receive
 * pointers owned by the loaded profile); new fields are only ever appended, so code compiled against an older header
 * keeps working. rtune's store uses the same struct to write profiles.
 */
struct rt_profile_entry {
	/* rt_should_inline() compares against this: inline_threshold + 1, or 0 when inline_threshold is 0 (never). */
	uint32_t inline_limit_excl;
	uint32_t inline_threshold; /* bytes, inline messages of at most this size; 0 = never inline */
	uint32_t max_inline_data;  /* request this in ibv_qp_init_attr.cap.max_inline_data */
	uint32_t signal_interval;  /* signal one WR every signal_interval (>= 1) */
	uint32_t sq_depth;	   /* max_send_wr */
	uint32_t cq_depth;	   /* send CQ entries */
	bool cq_moderation;	   /* false = no moderation recommended / not supported ("cq_moderation": null) */
	uint32_t cq_mod_count;
	uint32_t cq_mod_period_us;
	char device[64]; /* "mlx5_0", "rxe0" */
	char guid[24];	 /* node GUID "0011:2233:4455:6677", "" when unknown */
	int port;	 /* 1-based port number */
	enum rt_profile_opcode opcode;
	enum rt_profile_qp_type qp_type;
	int numa_node;	/* device's NUMA node, -1 = unknown */
	char cpus[256]; /* cpulist the measurement ran on, e.g. "2" or "0-7" */
	enum rt_profile_confidence confidence;
	unsigned n_reasons;
	struct rt_profile_reason reasons[RT_PROFILE_MAX_REASONS];
	int64_t measured_at;	/* seconds since the epoch, UTC */
	char run_id[40];	/* uuid of the calibration run the values came from */
	char app[64];		/* application histogram the threshold was weighted by, "" = none */
	char rtune_version[32]; /* rtune that produced the entry */
	/* since schema 1.2 (an older document: both confidences are `confidence`, one run each, since run_id) */
	enum rt_profile_confidence inline_confidence; /* of inline_threshold / max_inline_data */
	enum rt_profile_confidence signal_confidence; /* of signal_interval (and the queue depths sized for it) */
	uint32_t inline_runs;  /* calibration runs that support inline_threshold (>= 1): the run that set it and every
				* later run whose own answer stayed within the between-run noise (hysteresis) */
	uint32_t signal_runs;  /* the same for signal_interval */
	char inline_since[40]; /* uuid of the run that set inline_threshold (run_id is the newest run considered) */
	char signal_since[40]; /* uuid of the run that set signal_interval */
	/* since schema 1.3, the "measured" object: what the calibration run measured at the decision, for fleet reports.
	 * has_measured is false when the entry has none; a figure the run did not measure is NAN. */
	bool has_measured;	/* the figures below are meaningful only when true */
	char lat_kind[16];	/* "pingpong" (half round trip) or "post_cqe" (post -> its completion) */
	uint32_t lat_bytes;	/* message size the latencies are of: the threshold, the smallest size when it is 0 */
	double lat_inline_ns;	/* median latency at lat_bytes, posted inline */
	double lat_noinline_ns; /* the same, not inline */
	double mops_at_n;	/* message rate at signal_interval, millions/s */
	double mops_at_n1;	/* message rate at N = 1 (every WR signaled) */
	double noise_pct; /* the run's noise: median over its latency points of the CI half-width, % of the median */
};

/* A loaded profile document (opaque). */
struct rt_profile;

/*
 * Loads and validates the profile document at path. On success returns 0 and *out (free with rt_profile_free()).
 * On failure returns an errno and fills err (which may be NULL): ENOENT/EACCES/... when the file cannot be read,
 * EINVAL for a parse error (with line and column) or an invalid value (naming the field), ENOTSUP for a schema whose
 * major version this library does not know. Unknown fields are ignored. *out is left NULL on failure.
 */
int rt_profile_load(const char *path, struct rt_profile **out, struct rt_error *err);

/* As rt_profile_load() on the file named by $RTUNE_PROFILE, or, when the variable is unset or empty (and always in a
 * set-user-ID/set-group-ID program: secure_getenv), on RT_PROFILE_DEFAULT_PATH; ENOENT (and err) when that is
 * absent too. */
int rt_profile_load_env(struct rt_profile **out, struct rt_error *err);

/* As rt_profile_load() on a document in memory (len bytes, need not be NUL-terminated). */
int rt_profile_parse(const char *text, size_t len, struct rt_profile **out, struct rt_error *err);

/* Frees a profile and every entry pointer obtained from it; NULL is a no-op. */
void rt_profile_free(struct rt_profile *p);

/* Entries of the document, in document order; entry_at returns NULL past the end. */
size_t rt_profile_entry_count(const struct rt_profile *p);
const struct rt_profile_entry *rt_profile_entry_at(const struct rt_profile *p, size_t i);

/*
 * The entry for a device (matched against the entry's device name, else its GUID), port, opcode and QP type, or NULL
 * (errno = ENOENT) when the profile has none. When several entries match, the most recently measured one wins.
 */
const struct rt_profile_entry *rt_profile_select(const struct rt_profile *p, const char *device_or_guid, int port,
						 enum rt_profile_opcode op, enum rt_profile_qp_type qpt);

/* Document-level facts: the node the profile was made on, its hardware signature, the rtune that wrote it. */
const char *rt_profile_hostname(const struct rt_profile *p);
const char *rt_profile_hw_signature(const struct rt_profile *p);
const char *rt_profile_rtune_version(const struct rt_profile *p);
/* Schema minor version of the loaded document (major is always RT_PROFILE_SCHEMA_MAJOR). */
int rt_profile_schema_minor(const struct rt_profile *p);
/* A group profile (schema 1.3 "group" object, written by `rtune report --group-profiles` for nodes of one hardware
 * class that have not calibrated yet): the number of nodes its values were taken from; 0 for a node's own profile. */
unsigned rt_profile_group_nodes(const struct rt_profile *p);

/* The machine-id of the node the profile was made on ("" when the document has none). */
const char *rt_profile_machine_id(const struct rt_profile *p);

/*
 * True when p was made on this node: the same hostname, and the same /etc/machine-id when the document has one (the
 * store's node key `<machine-id>/<hostname>`: clones of one image share a machine-id, so the hostname must match too).
 * False for NULL. Apply a profile for which this is false only on purpose (a profile copied across identical nodes).
 */
bool rt_profile_is_for_this_host(const struct rt_profile *p);

/* librtune's version at run time: "0.1.0" and RTUNE_VERSION_NUMBER of the library loaded. */
const char *rt_version(void);
unsigned rt_version_number(void);

/*
 * ---- a profile that changes while the application runs ------------------------------------------------------------
 * A live handle holds the current document of a profile file. Any thread acquires it (a reference: its entries stay
 * valid, unchanged, until released), reads entries, and releases it; any thread may call rt_profile_reload (e.g. once
 * a second, or on SIGHUP from a thread of its own), which re-reads the file when it changed (device, inode, size or
 * mtime) and swaps the document in; the old one is freed when its last reader releases it. A file that no longer
 * loads leaves the current document in place. rt_profile_live_generation() tells a reader cheaply that it should
 * acquire again and re-select its entries.
 */
typedef struct rt_profile_live rt_profile_live;

/* Opens path (NULL: $RTUNE_PROFILE, as rt_profile_load_env) and loads it. 0 and *out (close with
 * rt_profile_live_close), or the errno and err of rt_profile_load (ENOENT for an unset $RTUNE_PROFILE); *out NULL. */
int rt_profile_live_open(const char *path, rt_profile_live **out, struct rt_error *err);
/* The current document, with a reference the caller owns (never NULL). Takes a short shared lock. */
const struct rt_profile *rt_profile_live_acquire(rt_profile_live *h);
/* Drops a reference of rt_profile_live_acquire(); entry pointers from p are invalid afterwards. NULL is a no-op. A
 * document from rt_profile_live_acquire() is released with this, never with rt_profile_free(). */
void rt_profile_live_release(rt_profile_live *h, const struct rt_profile *p);
/*
 * Re-reads the file if it changed and makes it current. Returns 0 (*changed, if not NULL, true when the document was
 * swapped), or the errno and err of rt_profile_load when the file no longer loads (the current document stays).
 * Concurrent reloads are serialised.
 */
int rt_profile_reload(rt_profile_live *h, bool *changed, struct rt_error *err);
/* Swaps so far (0 after open). */
uint64_t rt_profile_live_generation(const rt_profile_live *h);
/* Frees the handle; every reference must have been released first. NULL is a no-op. */
void rt_profile_live_close(rt_profile_live *h);

/* Getters (entry must not be NULL). */
uint32_t rt_profile_inline_threshold(const struct rt_profile_entry *e);
uint32_t rt_profile_max_inline_data(const struct rt_profile_entry *e);
uint32_t rt_profile_signal_interval(const struct rt_profile_entry *e);
uint32_t rt_profile_sq_depth(const struct rt_profile_entry *e);
uint32_t rt_profile_cq_depth(const struct rt_profile_entry *e);
enum rt_profile_confidence rt_profile_confidence(const struct rt_profile_entry *e);
/* Confidence of each decision (schema 1.2; for an older document both equal rt_profile_confidence()). */
enum rt_profile_confidence rt_profile_inline_confidence(const struct rt_profile_entry *e);
enum rt_profile_confidence rt_profile_signal_confidence(const struct rt_profile_entry *e);

/*
 * ---- load bands and skipped measurements (schema 1.4) -------------------------------------------------------------
 * Besides the small-message rate sweep behind signal_interval, calibrate measures load bands -- large non-inline
 * messages (e.g. 4096-65536 B, one WR per ibv_post_send), post lists of K WRs per ibv_post_send, and concurrency (Q QPs
 * driven by T threads, one WR per call) -- and tunes an N per band. A band of a kind this librtune does not know (a
 * later addition) is passed over when the document is read. They are kept beside the entry (not in struct rt_profile_entry, whose layout only grows at its end) and
 * read with the calls below, which take the profile the entry came from. A document older than 1.4 has no bands and
 * no skips: every call then falls back to the entry (rt_profile_signal_interval_for() returns e->signal_interval).
 */
enum rt_profile_band_kind { RT_PROFILE_BAND_LARGE = 1, RT_PROFILE_BAND_POST_LIST = 2, RT_PROFILE_BAND_CONCURRENCY = 3 };

/* One load band of an entry (its opcode and QP type): "bands" in the JSON document. */
struct rt_profile_band {
	enum rt_profile_band_kind kind;
	uint32_t post_list;		     /* WRs per ibv_post_send measured (1 for a large band) */
	uint32_t msg_bytes_lo, msg_bytes_hi; /* message sizes measured */
	uint32_t signal_interval;	     /* the N the band's own sweep chose (>= 1) */
	bool has_confidence;		     /* false: the document had none (null) */
	enum rt_profile_confidence confidence;
	char verdict[32]; /* the tuner's signal verdict ("knee", "indifferent", ...), "" when none */
	/* appended: a concurrency band's QPs and sending threads (1 and 1 for the other kinds) */
	uint32_t qps, threads;
};

/* Bands of entry e of p (0 when e is not an entry of p, or the document has none). */
size_t rt_profile_band_count(const struct rt_profile *p, const struct rt_profile_entry *e);
/* The i-th band of e, or NULL past the end (or when e is not an entry of p). */
const struct rt_profile_band *rt_profile_band_at(const struct rt_profile *p, const struct rt_profile_entry *e,
						 size_t i);
/*
 * The signal interval to use for WRs of msg_bytes posted post_list at a time (0 and 1 both mean one WR per
 * ibv_post_send): for a large message (msg_bytes at least a large band's msg_bytes_lo) that band's N (the one with the
 * largest such msg_bytes_lo), in a list or not; else, for lists, the post-list band with the largest post_list not
 * above post_list; else the entry's own signal_interval (the small-message sweep). Never 0. NULL p or e: 1.
 */
uint32_t rt_profile_signal_interval_for(const struct rt_profile *p, const struct rt_profile_entry *e,
					uint32_t msg_bytes, uint32_t post_list);
/*
 * As rt_profile_signal_interval_for(), for an application that posts on qps QPs from threads threads (0 and 1 both
 * mean one): a large message is still the large band's and a list the post-list band's; otherwise, with qps >= 2, the
 * concurrency band with the largest qps not above the application's (among those, the largest threads not above its
 * threads, else the fewest threads) answers; else the entry's own signal_interval. Never 0. NULL p or e: 1.
 */
uint32_t rt_profile_signal_interval_for_load(const struct rt_profile *p, const struct rt_profile_entry *e,
					     uint32_t msg_bytes, uint32_t post_list, uint32_t qps, uint32_t threads);

/* What a skipped measurement concerns (the "kind" of a "skipped" item). */
enum rt_profile_skip_kind {
	RT_PROFILE_SKIP_OTHER = 0,	   /* a kind this librtune does not know */
	RT_PROFILE_SKIP_INLINE = 1,	   /* IBV_SEND_INLINE of one opcode/QP type: the inline side was not measured */
	RT_PROFILE_SKIP_QP_TYPE = 2,	   /* a whole QP type (no RC QPs on an EFA-like device) */
	RT_PROFILE_SKIP_OPCODE = 3,	   /* a whole opcode */
	RT_PROFILE_SKIP_CQ_MODERATION = 4, /* the CQ moderation measurement */
};

/* A measurement the calibration run behind the profile skipped on a device, and why ("skipped" in the document). */
struct rt_profile_skip {
	char device[64];
	int port;
	enum rt_profile_skip_kind kind;
	char what[32];	  /* as calibrate named it: "inline write/rc", "rc", "write", "cq moderation", ... */
	int opcode;	  /* enum rt_profile_opcode it concerns, -1 = every opcode */
	int qp_type;	  /* enum rt_profile_qp_type it concerns, -1 = every QP type */
	char reason[256]; /* one human line: what the device refused */
	char run_id[40];  /* the calibration run that skipped it, "" when unknown */
};

/* Skipped measurements of the document, in document order; skip_at returns NULL past the end. */
size_t rt_profile_skip_count(const struct rt_profile *p);
const struct rt_profile_skip *rt_profile_skip_at(const struct rt_profile *p, size_t i);
/* The i-th skip that concerns entry e: same device name and port, and e's opcode and QP type (or every one). NULL
 * past the end. E.g. a write/rc entry with inline_threshold 0 and a skip of kind RT_PROFILE_SKIP_INLINE: the device
 * refused inline RDMA WRITE, so the 0 was not measured. */
const struct rt_profile_skip *rt_profile_entry_skip(const struct rt_profile *p, const struct rt_profile_entry *e,
						    size_t i);

/* Names as in the JSON document ("send", "rc", "high"); "unknown" for out-of-range values. */
const char *rt_profile_opcode_name(enum rt_profile_opcode op);
const char *rt_profile_qp_type_name(enum rt_profile_qp_type qpt);
const char *rt_profile_confidence_name(enum rt_profile_confidence c);

/* The fast-path decision: true when a message of msg_bytes should be posted with IBV_SEND_INLINE. One compare. */
static inline bool rt_should_inline(const struct rt_profile_entry *e, uint32_t msg_bytes)
{
	return msg_bytes < e->inline_limit_excl;
}

/*
 * ---- the safe-send pattern ----------------------------------------------------------------------------------------
 * A send queue of sq_depth slots where one WR in signal_interval is IBV_SEND_SIGNALED. Each signaled completion
 * retires every WR posted before it, so the queue never overflows (no ENOMEM from ibv_post_send) as long as the caller:
 *   1. while rt_sendq_must_poll(): polls the send CQ and reports each signaled completion with rt_sendq_completed();
 *   2. posts the WR with IBV_SEND_SIGNALED exactly when rt_sendq_should_signal() says so (it may signal more often);
 *   3. reports the successful post with rt_sendq_posted().
 * Extended use (since 0.2): a WR taking several slots (a large inline WQE) is reported with its slot count
 * (rt_sendq_*_slots); the last WR of a burst, when the sender has nothing more queued, is signaled
 * (rt_sendq_should_signal_burst), so no buffer waits behind an unsignaled WR while the sender is idle, and
 * rt_sendq_unsignaled_age_ns() tells a sender that cannot know a burst's end how long its oldest unsignaled WR has
 * waited; sendqs sharing one send CQ attach to a struct rt_sendq_cq, which bounds each QP's unsignaled run by its
 * share of a CQ-wide limit (with many QPs each alone may never reach N, and credits that wait for its completions
 * would never return) and keeps the CQ from overflowing; an error or flush completion puts the queue into the failed state (rt_sendq_failed) instead of being
 * miscounted; rt_sendq_enable_adaptive() lets N follow the message rate. A signal_interval larger than the queue is
 * adapted to it (half the depth) instead of refused.
 * Pure bookkeeping: no verbs calls, no locks (one sendq per QP per thread; one rt_sendq_cq per thread).
 */

/* Sendqs sharing one send CQ (see above): fields are the library's. */
struct rt_sendq_cq {
	uint32_t cq_depth;	   /* CQ entries */
	uint32_t unsignaled_limit; /* unsignaled slots of all QPs together stay below this (each QP: its share) */
	uint32_t pending_cqes;	   /* signaled WRs of all QPs whose completion is still to be polled */
	uint32_t unsignaled;	   /* slots posted unsignaled and not yet covered by a signaled WR, all QPs */
	uint32_t n_qps;		   /* sendqs attached */
};

struct rt_sendq {
	uint32_t depth; /* slots the send queue holds */
	uint32_t signal_interval;
	uint32_t outstanding;	 /* posted slots not yet retired by a signaled completion */
	uint32_t unsignaled_run; /* slots posted since the last signaled WR */
	uint32_t *batches;	 /* ring: slots each outstanding signaled WR retires */
	uint32_t head, count;	 /* ring position and number of outstanding signaled WRs */
	/* since 0.2 */
	struct rt_sendq_cq *cq;		     /* shared send CQ, or NULL */
	bool failed;			     /* an error completion was seen: nothing outstanding, posts refused */
	bool adaptive;			     /* N follows the message rate (rt_sendq_enable_adaptive) */
	uint32_t min_interval, max_interval; /* adaptive bounds */
	uint64_t run_start_ns; /* time of the first unsignaled WR of the current run (0 = none or untimed) */
	uint64_t win_start_ns; /* adaptation window: start, WRs retired, highest occupancy */
	uint32_t win_wrs, win_peak;
	uint64_t prev_rate; /* WRs per second of the previous window (0 = none) */
	int dir;	    /* last change of N: +1 doubled, -1 halved, 0 none */
	uint32_t stable;    /* windows without a significant change */
	uint32_t changes;   /* changes of N so far */
};

/* Sets q up for a queue of sq_depth slots (>= 1) signaled every signal_interval (>= 1; one larger than sq_depth is
 * taken as max(1, sq_depth / 2)). Returns 0, EINVAL (a zero), or ENOMEM; on failure q holds nothing to free. */
int rt_sendq_init(struct rt_sendq *q, uint32_t sq_depth, uint32_t signal_interval);
/* Releases what rt_sendq_init allocated; q may be NULL or already released. */
void rt_sendq_fini(struct rt_sendq *q);
/* True when no slot is free (or the shared CQ has no room for another completion): poll the send CQ (and call
 * rt_sendq_completed) before posting. */
bool rt_sendq_must_poll(const struct rt_sendq *q);
/* As rt_sendq_must_poll() for a WR of slots slots. */
bool rt_sendq_must_poll_slots(const struct rt_sendq *q, uint32_t slots);
/* True when the next WR must carry IBV_SEND_SIGNALED. */
bool rt_sendq_should_signal(const struct rt_sendq *q);
/* As rt_sendq_should_signal() for a WR of slots slots, and true as well for the last WR of a burst (more == false:
 * nothing else queued to send now) when it would leave unsignaled WRs behind. */
bool rt_sendq_should_signal_burst(const struct rt_sendq *q, uint32_t slots, bool more);
/* Records one posted WR. Returns 0; ENOSPC when the queue was full (caller skipped step 1); EINVAL when the WR was not
 * signaled although rt_sendq_should_signal() required it; EIO after rt_sendq_failed (until rt_sendq_reset). On error
 * nothing is recorded. */
int rt_sendq_posted(struct rt_sendq *q, bool signaled);
/* As rt_sendq_posted() for a WR of slots slots (1..depth / 2, or 1 when depth is 1) posted at now_ns (CLOCK_MONOTONIC;
 * 0 = untimed: no idle age, no adaptation). EINVAL also for a slot count out of range. */
int rt_sendq_posted_slots(struct rt_sendq *q, bool signaled, uint32_t slots, uint64_t now_ns);
/* Records n signaled send completions (in posting order) and frees their slots. Returns 0, or EINVAL when n exceeds
 * the signaled WRs outstanding (nothing is recorded then). In the failed state every completion (flushes) is absorbed:
 * 0. */
int rt_sendq_completed(struct rt_sendq *q, uint32_t n);
/* As rt_sendq_completed() at now_ns: an adaptive queue measures its message rate from these (0 = untimed). */
int rt_sendq_completed_at(struct rt_sendq *q, uint32_t n, uint64_t now_ns);
/* An error or flush completion was polled on this QP: the QP flushes every posted WR (signaled or not), so the queue
 * forgets them all (their buffers are the caller's again) and absorbs the remaining flush completions. Returns the
 * slots that were outstanding. */
uint32_t rt_sendq_failed(struct rt_sendq *q);
/* After the QP was brought back to RTS: an empty, working queue with the same depth and N. */
void rt_sendq_reset(struct rt_sendq *q);
/* Slots posted and not yet retired. */
uint32_t rt_sendq_outstanding(const struct rt_sendq *q);
/* Signaled WRs whose completion is still to be polled (a drain polls exactly this many). */
uint32_t rt_sendq_signaled_pending(const struct rt_sendq *q);
/* How long the oldest WR not covered by a signaled one has waited at now_ns (0 when none, or untimed). A sender that
 * cannot tell a burst's end posts a signaled WR (even an empty one) when this exceeds its bound. */
uint64_t rt_sendq_unsignaled_age_ns(const struct rt_sendq *q, uint64_t now_ns);
/* The current signal interval. */
uint32_t rt_sendq_interval(const struct rt_sendq *q);

/*
 * Lets N follow the application's own traffic within [min_interval, max_interval] (clamped to 1..depth / 2): every
 * window of 8 N retired WRs (timed: rt_sendq_posted_slots / rt_sendq_completed_at with times) N doubles while the
 * message rate improves by more than 10 % and the queue had headroom (peak occupancy below 3/4 of it), halves when
 * headroom ran short (and stays below that N from then on) or the rate fell by more than 10 % (going back), and stays after 3 windows without a
 * significant change until the rate moves by more than 10 % again. Returns 0 or EINVAL (min > max).
 */
int rt_sendq_enable_adaptive(struct rt_sendq *q, uint32_t min_interval, uint32_t max_interval);

/* Sets up a shared send CQ of cq_depth entries; unsignaled_limit 0 takes cq_depth / 2. Returns 0 or EINVAL. */
int rt_sendq_cq_init(struct rt_sendq_cq *cq, uint32_t cq_depth, uint32_t unsignaled_limit);
/* Attaches q (empty, not attached yet) to cq, before its first post; rt_sendq_fini detaches it. EINVAL otherwise. */
int rt_sendq_attach(struct rt_sendq *q, struct rt_sendq_cq *cq);

/*
 * ---- the adaptive inline threshold (docs/controller.md) -----------------------------------------------------------
 * rt_inline_ctl starts at the profile's inline_threshold and keeps learning from the application's own completions. It
 * watches the nearest size band with traffic either side of the current threshold (the shared buckets: exact below 8 B,
 * then 8 per power of two; the adjacent bands at first, re-targeted over bands nobody sends), times one watched send in
 * sample_every (post -> completion, measured by the caller: this library makes no verbs call), alternating inline and
 * not so that both choices are measured in both bands, and every round_samples samples per choice and band it compares
 * the medians: the threshold moves up to just cover the band above when inlining it is better by more than
 * significance_pct %, down to just uncover the band below when not inlining it is, goes back (and stops trying that
 * direction for a while) when the band it crossed then measures worse, and parks (samples 8 times less) after
 * park_after_rounds rounds without a move. It stays within [min_bytes, max_bytes] and never answers "inline" above
 * granted_max_inline (the QP's cap.max_inline_data after ibv_create_qp).
 *
 * Thread safety: one controller per QP, used by one thread at a time (the thread that posts on the QP); calls on
 * different controllers need no synchronisation. rt_inline_ctl_get_state from another thread must be serialised by
 * the caller with that thread's calls.
 */
typedef struct rt_inline_ctl rt_inline_ctl;

struct rt_inline_ctl_params {
	uint32_t threshold_bytes;    /* start: the profile entry's inline_threshold (0 = never inline) */
	uint32_t min_bytes;	     /* lowest threshold allowed (profile's bound, usually 0) */
	uint32_t max_bytes;	     /* highest threshold allowed (profile's max_inline_data) */
	uint32_t granted_max_inline; /* the QP's granted cap.max_inline_data: nothing larger is ever inline */
	uint32_t sample_every;	     /* time 1 watched send in this many (1..65536; default 4) */
	uint32_t round_samples;	     /* samples per band and choice before a decision (4..64; default 8) */
	uint32_t significance_pct;   /* move only on a median difference above this (1..100; default 10) */
	uint32_t park_after_rounds;  /* rounds without a move before parking (1..1000; default 3) */
};

/* One move of the threshold. */
struct rt_inline_ctl_move {
	uint64_t at_sample;   /* samples used before the move */
	uint32_t from_bytes;  /* threshold before */
	uint32_t to_bytes;    /* threshold after */
	uint64_t inline_ns;   /* median of the crossed band, inline */
	uint64_t noinline_ns; /* median of the crossed band, not inline */
	bool revert;	      /* a return over the band crossed by the move before */
};

#define RT_INLINE_CTL_MOVES 8 /* moves kept in the state (the last ones) */

/* A snapshot of the controller: where it is, its evidence and its history. */
struct rt_inline_ctl_state {
	uint32_t threshold_bytes;		     /* current threshold */
	uint32_t start_bytes;			     /* where it started */
	uint32_t min_bytes, max_bytes;		     /* effective bounds (max is min(max_bytes, granted_max_inline)) */
	uint32_t below_lo, below_hi;		     /* band below the threshold (inline), 0..0 when threshold is 0 */
	uint32_t above_lo, above_hi;		     /* band above the threshold (not inline) */
	uint64_t below_inline_ns, below_noinline_ns; /* medians of the last complete round, 0 = none */
	uint64_t above_inline_ns, above_noinline_ns;
	bool parked;	   /* stable: sampling 8 times less */
	uint64_t watched;  /* watched sends (in the two bands) counted down so far */
	uint64_t samples;  /* samples reported and used */
	uint64_t explored; /* sampled sends posted with the choice the threshold would not make */
	uint64_t dropped;  /* samples reported for a size no longer watched (a move in between) */
	uint64_t rounds;   /* decisions taken */
	uint64_t moves_up, moves_down, reverts;
	unsigned n_moves; /* valid entries in moves (<= RT_INLINE_CTL_MOVES), oldest first */
	struct rt_inline_ctl_move moves[RT_INLINE_CTL_MOVES];
};

/* Sets p to the defaults (sample_every 4, round_samples 8, significance 10 %, park after 3 rounds) with threshold,
 * bounds and granted inline all 0: the caller fills those four. Never fails. Thread-safe. */
void rt_inline_ctl_params_init(struct rt_inline_ctl_params *p);

/*
 * Creates a controller. The start threshold is clamped into [min_bytes, min(max_bytes, granted_max_inline)].
 * Returns 0 and *out (free with rt_inline_ctl_free); EINVAL when a parameter is out of its range or
 * min_bytes > max_bytes; ENOMEM. *out is left NULL on failure. Thread-safe (touches only what it allocates).
 */
int rt_inline_ctl_create(const struct rt_inline_ctl_params *p, rt_inline_ctl **out);

/* Frees a controller; NULL is a no-op. */
void rt_inline_ctl_free(rt_inline_ctl *c);

/* Flags of rt_inline_ctl_decide(). */
#define RT_INLINE_CTL_INLINE 1u /* post this send with IBV_SEND_INLINE */
#define RT_INLINE_CTL_SAMPLE 2u /* time this send: post it signaled, report it with rt_inline_ctl_sample() */

/* The hot fields, first member of every controller: read and written only by rt_inline_ctl_decide() and
 * rt_inline_ctl_take_watched(). */
struct rt_inline_ctl_hot {
	uint32_t limit_excl; /* inline when msg_bytes < limit_excl */
	uint32_t watch_lo;   /* smallest size of the two watched bands */
	uint32_t watch_span; /* their largest size minus watch_lo */
	uint32_t countdown;  /* watched sends until the next sample (>= 1) */
	uint32_t outside;    /* sends outside the watched bands until the next look at one (>= 1) */
};

/* The out-of-line part of rt_inline_ctl_decide() for a send that is due to be sampled. */
unsigned rt_inline_ctl_pick(rt_inline_ctl *c, uint32_t msg_bytes);

/*
 * A look at one send of msg_bytes outside the watched bands (rt_inline_ctl_decide() calls it when the hot field
 * `outside` counts down to 0; a caller deciding such sends itself may call it at about the rate that field asks for
 * after each call): it notes the nearest sizes sent below and above the threshold, from which the controller
 * re-targets a watched band that has no traffic, and sets the rate of the next looks (about one in 4 * sample_every
 * while it finds the traffic, backed off to about one in 1024 once looks change nothing; docs/controller.md).
 * Never fails; may change the watched bands, never the threshold.
 */
void rt_inline_ctl_outside(rt_inline_ctl *c, uint32_t msg_bytes);

/*
 * The per-send decision: RT_INLINE_CTL_INLINE and/or RT_INLINE_CTL_SAMPLE. Outside the watched bands (almost every
 * send) it is one subtraction, one compare, a counter decrement and the inline compare (one in 4 * sample_every to
 * about one in 1024 in steady state also calls rt_inline_ctl_outside()); a watched send decrements another counter, and one in
 * sample_every calls rt_inline_ctl_pick(). Never fails; never answers inline above granted_max_inline.
 */
static inline unsigned rt_inline_ctl_decide(rt_inline_ctl *c, uint32_t msg_bytes)
{
	struct rt_inline_ctl_hot *h = (struct rt_inline_ctl_hot *)(void *)c;

	if (msg_bytes - h->watch_lo > h->watch_span) {
		if (__builtin_expect(!--h->outside, 0))
			rt_inline_ctl_outside(c, msg_bytes);
		return msg_bytes < h->limit_excl ? RT_INLINE_CTL_INLINE : 0u;
	}
	if (--h->countdown)
		return msg_bytes < h->limit_excl ? RT_INLINE_CTL_INLINE : 0u;
	return rt_inline_ctl_pick(c, msg_bytes);
}

/*
 * Takes up to max_sends of the watched sends before the next sample at once, for a caller that decides them itself
 * (inline when msg_bytes < the limit rt_inline_ctl_decide() uses, which only a sample or a look outside can change)
 * instead of calling rt_inline_ctl_decide() for each: they count as watched now, and the watched send after them is
 * the sample. Returns how many were taken: 0 when the next watched send is the sample. Never fails. Same thread rules
 * as rt_inline_ctl_decide().
 */
static inline uint32_t rt_inline_ctl_take_watched(rt_inline_ctl *c, uint32_t max_sends)
{
	struct rt_inline_ctl_hot *h = (struct rt_inline_ctl_hot *)(void *)c;
	uint32_t n = h->countdown - 1u; /* countdown >= 1: the send it reaches 0 on is the sample */

	if (n > max_sends)
		n = max_sends;
	h->countdown -= n;
	return n;
}

/*
 * Reports the post -> completion time of a send that rt_inline_ctl_decide() flagged RT_INLINE_CTL_SAMPLE: its size,
 * whether it was posted inline, lat_ns. May take a decision (and move the threshold). Returns 0; EINVAL for lat_ns 0
 * (not recorded); ESTALE when the size is no longer watched (the threshold moved meanwhile: counted as dropped).
 */
int rt_inline_ctl_sample(rt_inline_ctl *c, uint32_t msg_bytes, bool inlined, uint64_t lat_ns);

/* The current threshold in bytes. */
uint32_t rt_inline_ctl_threshold(const rt_inline_ctl *c);

/*
 * The mean number of sends outside the watched bands between two looks that the controller asks for now (the rate
 * behind the hot field `outside`): 4 * sample_every while it finds the traffic, doubled per look that changed nothing up
 * to 1024. For a caller that drives the looks from its own counters instead of the countdown (the probe looks at a size
 * once in this many of its sends, rounded up to a power of two). Never 0. Same thread rules as rt_inline_ctl_decide().
 */
uint32_t rt_inline_ctl_look_period(const rt_inline_ctl *c);

/* Fills *out with a snapshot of the state. Returns 0, or EINVAL when c or out is NULL. */
int rt_inline_ctl_get_state(const rt_inline_ctl *c, struct rt_inline_ctl_state *out);

#ifdef __cplusplus
}
#endif
#endif
