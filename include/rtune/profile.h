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

#define RT_PROFILE_SCHEMA_NAME "rtune-profile"
#define RT_PROFILE_SCHEMA_MAJOR 1
#define RT_PROFILE_SCHEMA_MINOR 2

#define RT_PROFILE_MAX_REASONS 8

/* The node's profile where `rtune agent` publishes it and rt_profile_load_env() looks when $RTUNE_PROFILE is unset. */
#define RT_PROFILE_DEFAULT_PATH "/var/lib/rtune/profile.json"

/* Same values and names ("send"/"write", "rc"/"ud", "low"/"medium"/"high") as the JSON document uses. */
enum rt_profile_opcode { RT_PROFILE_OP_SEND = 0, RT_PROFILE_OP_WRITE = 1 };
enum rt_profile_qp_type { RT_PROFILE_QPT_RC = 0, RT_PROFILE_QPT_UD = 1 };
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
 * A send queue of sq_depth WRs where one WR in signal_interval is IBV_SEND_SIGNALED. Each signaled completion retires
 * every WR posted before it, so the queue never overflows (no ENOMEM from ibv_post_send) as long as the caller:
 *   1. while rt_sendq_must_poll(): polls the send CQ and reports each signaled completion with rt_sendq_completed();
 *   2. posts the WR with IBV_SEND_SIGNALED exactly when rt_sendq_should_signal() says so (it may signal more often);
 *   3. reports the successful post with rt_sendq_posted().
 * Pure bookkeeping: no verbs calls, no locks (one sendq per QP per thread).
 */
struct rt_sendq {
	uint32_t depth; /* WRs the send queue holds */
	uint32_t signal_interval;
	uint32_t outstanding;	 /* posted WRs not yet retired by a signaled completion */
	uint32_t unsignaled_run; /* WRs posted since the last signaled one */
	uint32_t *batches;	 /* ring: WRs each outstanding signaled WR retires */
	uint32_t head, count;	 /* ring position and number of outstanding signaled WRs */
};

/* Sets q up for a queue of sq_depth WRs (>= 1) signaled every signal_interval (1..sq_depth). Returns 0, EINVAL, or
 * ENOMEM; on failure q holds nothing to free. */
int rt_sendq_init(struct rt_sendq *q, uint32_t sq_depth, uint32_t signal_interval);
/* Releases what rt_sendq_init allocated; q may be NULL or already released. */
void rt_sendq_fini(struct rt_sendq *q);
/* True when no slot is free: poll the send CQ (and call rt_sendq_completed) before posting. */
bool rt_sendq_must_poll(const struct rt_sendq *q);
/* True when the next WR must carry IBV_SEND_SIGNALED. */
bool rt_sendq_should_signal(const struct rt_sendq *q);
/* Records one posted WR. Returns 0; ENOSPC when the queue was full (caller skipped step 1); EINVAL when the WR was not
 * signaled although rt_sendq_should_signal() required it. On error nothing is recorded. */
int rt_sendq_posted(struct rt_sendq *q, bool signaled);
/* Records n signaled send completions (in posting order) and frees their slots. Returns 0, or EINVAL when n exceeds
 * the signaled WRs outstanding (nothing is recorded then). */
int rt_sendq_completed(struct rt_sendq *q, uint32_t n);
/* WRs posted and not yet retired. */
uint32_t rt_sendq_outstanding(const struct rt_sendq *q);
/* Signaled WRs whose completion is still to be polled (a drain polls exactly this many). */
uint32_t rt_sendq_signaled_pending(const struct rt_sendq *q);

#ifdef __cplusplus
}
#endif
#endif
