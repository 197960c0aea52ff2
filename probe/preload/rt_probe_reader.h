/* SPDX-License-Identifier: MIT */
/*
 * Reader of the probe's per-process JSON (format "rtune-probe", version 1, docs/probe.md): parses one file into a
 * summary with, per QP and per opcode, the counts and the message-size histogram on the shared bucket scheme
 * (rt_hist.h) with the largest size sent per bucket, per QP the post-list batches and apply mode's adaptive inline
 * controller ("inline_ctl": its state and last moves), merges the files of several
 * processes, and folds them into the store's (opcode, QP type) classes.
 * Used by `rtune probe` and the store's import; jansson lives here, never in the preloaded probe.
 */
#ifndef RT_PROBE_READER_H
#define RT_PROBE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rtune/error.h>
#include <rtune/profile.h>

#include "rt_hist.h"
#include "rt_model.h"

#define RT_PROBE_FORMAT "rtune-probe"
#define RT_PROBE_FORMAT_VERSION 1

/* Opcode classes, in the order and with the names of the JSON "ops" objects. */
enum rt_probe_op {
	RT_PROBE_OP_SEND,
	RT_PROBE_OP_SEND_IMM,
	RT_PROBE_OP_WRITE,
	RT_PROBE_OP_WRITE_IMM,
	RT_PROBE_OP_READ,
	RT_PROBE_OP_ATOMIC,
	RT_PROBE_OP_SEND_INV,
	RT_PROBE_OP_OTHER,
	RT_PROBE_OP__COUNT
};

/* "send", "send_imm", "rdma_write", "rdma_write_imm", "rdma_read", "atomic", "send_inv", "other". */
const char *rt_probe_op_name(enum rt_probe_op op);

struct rt_probe_op_summary {
	uint64_t wrs, bytes, inline_wrs, inline_bytes, signaled_wrs, signaled_bytes;
	uint64_t hist[RT_HIST_BUCKETS];	    /* WR counts per rt_hist_bucket(bytes) */
	uint32_t hist_max[RT_HIST_BUCKETS]; /* largest size sent in each non-empty bucket (the bucket's top for files
					       of a probe that did not record it) */
};

/*
 * A QP's adaptive inline controller as the probe wrote it ("inline_ctl", apply mode with RTUNE_APPLY_ADAPTIVE=1):
 * where the threshold started and is, its evidence, its moves and the last RT_INLINE_CTL_MOVES of them, oldest first.
 */
struct rt_probe_ctl_summary {
	bool present; /* the QP had a controller (the file has "inline_ctl") */
	bool busy;    /* the probe found the controller held throughout and wrote {"busy": true}: no figures */
	bool parked;
	uint32_t start_bytes, threshold_bytes, min_bytes, max_bytes;
	uint64_t samples, explored, dropped, rounds, moves_up, moves_down, reverts;
	unsigned n_moves;
	struct rt_inline_ctl_move moves[RT_INLINE_CTL_MOVES];
};

struct rt_probe_qp_summary {
	char device[64];
	char qp_type[16]; /* "RC", "UD", ... as the probe wrote it */
	uint32_t qp_num, max_inline_data, requested_max_inline_data, max_send_wr;
	bool sq_sig_all, inline_raised, ex_api;
	uint64_t post_calls;
	uint64_t batch[RT_BATCH_BUCKETS];     /* post calls per rt_batch_bucket(WRs per call) */
	uint32_t batch_max[RT_BATCH_BUCKETS]; /* largest batch seen in each non-empty bucket */
	uint64_t sq_full, enomem_other, einval, other_errors, wrs_not_posted; /* enomem_other: inline/sge/unknown */
	uint64_t apply_inline_set, apply_chain_too_long;
	uint64_t lat_samples, lat_sum_ns, lat_min_ns, lat_max_ns;
	uint64_t wc_errors; /* error completions, all statuses */
	struct rt_probe_op_summary op[RT_PROBE_OP__COUNT];
	long pid; /* of the process whose file held the QP */
	struct rt_probe_ctl_summary ctl;
	/* the threads that posted on it ("posting_threads", "posters": the probe's per-thread slabs, a slab one thread at
	 * a time); 0 = not recorded (a probe before it) */
	uint32_t posting_threads;
	uint64_t posters; /* bit k: slab k (k < 64) posted on it */
};

struct rt_probe_summary {
	int version;
	long pid; /* of the first file */
	char exe[4096];
	size_t n_files; /* files merged in */
	bool apply_enabled;
	uint32_t apply_threshold;
	uint32_t sample_every;
	uint64_t drops; /* every drop counter of every file, summed */
	size_t n_qps;
	struct rt_probe_qp_summary *qps; /* owned */
};

/*
 * Parses a probe document. Returns 0 and *out (free with rt_probe_summary_free), or EINVAL (not JSON, with line and
 * column; not the "rtune-probe" format; a field of the wrong type), ENOTSUP (a newer format version) or ENOMEM, with
 * err filled. Unknown fields are ignored.
 */
int rt_probe_parse(const char *text, size_t len, struct rt_probe_summary **out, struct rt_error *err);
/* As rt_probe_parse() on the file at path (errors name the file; ENOENT/EACCES when it cannot be read). */
int rt_probe_read_file(const char *path, struct rt_probe_summary **out, struct rt_error *err);
/* Frees a summary; NULL is a no-op. */
void rt_probe_summary_free(struct rt_probe_summary *s);
/* Appends src's QPs and counters to dst (the files of one application's processes). 0 or ENOMEM (dst unchanged). */
int rt_probe_summary_merge(struct rt_probe_summary *dst, const struct rt_probe_summary *src);

/* What the QPs of one (opcode class, QP type) did as queues: the post calls of those QPs (all their opcodes). */
struct rt_probe_class_queue {
	uint64_t qps;			      /* QPs of type qpt that posted at least one WR of the class */
	uint64_t post_calls;		      /* their ibv_post_send / wr_complete calls */
	uint64_t batch[RT_BATCH_BUCKETS];     /* of those calls, per rt_batch_bucket(WRs per call) */
	uint32_t batch_max[RT_BATCH_BUCKETS]; /* largest batch seen per bucket */
	uint64_t sq_full;		      /* SQ-full ENOMEM events on those QPs */
	uint32_t max_send_wr;		      /* the smallest max_send_wr among them (0 when none) */
	uint32_t threads; /* distinct threads (per process: its slabs) that posted on those QPs, 0 = not recorded */
};

/*
 * As rt_probe_summary_class(), and fills *q with the queue behaviour of the QPs that sent the class (post-list batches,
 * SQ-full ENOMEM, the smallest send queue). Returns the number of WRs summed.
 */
uint64_t rt_probe_summary_class_queue(const struct rt_probe_summary *s, enum rt_opcode op, enum rt_qp_type qpt,
				      struct rt_probe_op_summary *out, struct rt_probe_class_queue *q);

/*
 * Sums, over the QPs of type qpt (RC or UD), the opcode class op (RT_OP_SEND = send, send with immediate and send with
 * invalidate; RT_OP_WRITE = RDMA write with and without immediate) into out, and their SQ-full ENOMEM events into
 * *sq_full (may be NULL). Returns the number of WRs summed.
 */
uint64_t rt_probe_summary_class(const struct rt_probe_summary *s, enum rt_opcode op, enum rt_qp_type qpt,
				struct rt_probe_op_summary *out, uint64_t *sq_full);

#endif
