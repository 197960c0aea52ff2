/* SPDX-License-Identifier: MIT */
/*
 * What the probe's parts share (private to probe/preload, never installed): the per-QP and per-thread records and
 * their counters, the lock-free lookup tables, the process-wide state and the inline helpers the send path and the
 * extended-API wrappers both record with. The parts: probe_state.c (tables, slabs, folding), probe_send.c
 * (ops.post_send and ops.poll_cq), probe_ex.c (ibv_qp_ex wr_* wrappers), probe_apply.c (apply mode: profile entries,
 * per-QP inline limits, the WR chain rewrite), probe_lifecycle.c (contexts, QPs, init, fork) and probe_writer.c (the
 * rtune-probe.<pid>.json document).
 *
 * Send path rules: no allocation, no printing, no global lock, errno preserved, the real call's return value
 * returned unchanged. Every thread records into its own slab (preallocated, claimed lock-free from a pool the creation
 * paths keep topped up); a slab stays in the pool when its thread exits so nothing recorded is lost (merging at thread
 * exit is implicit: the next owner adds to the same counters), and the writer sums all slabs.
 * Records that cannot be kept (no free slab, no free entry, unknown QP, full latency ring) are counted as drops.
 * QPs and contexts are found through open-addressed tables that are read lock-free and written under g_lock (which only
 * creation, destruction, fork and the writer take).
 */
#ifndef RT_PROBE_INT_H
#define RT_PROBE_INT_H

#include "probe_core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#include "rt_hist.h"

#include <rtune/profile.h> /* rt_inline_ctl (ctl/), compiled into the probe */
/* Nothing here is exported from librtune_probe.so, and the send path reaches these without a GOT load. */
#pragma GCC visibility push(hidden)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define RTP_MAX_QPS 16384    /* QPs recorded over the process lifetime; later ones are counted, not recorded */
#define RTP_MAX_CTX 256	     /* contexts hooked over the process lifetime */
#define RTP_SLAB_ENTRIES 64  /* QPs one thread can record at a time */
#define RTP_EX_PENDING 128   /* WRs between wr_start and wr_complete held before an early commit */
#define RTP_APPLY_MAX_WRS 64 /* longest WR chain apply mode copies */
#define RTP_LAT_RING 64	     /* outstanding latency samples per QP */
#define RTP_BATCH_BUCKETS RT_BATCH_BUCKETS /* WRs per post: 1, 2, 3-4, 5-8, ..., > 32768 (rt_hist.h) */
#define RTP_WC_STATUS 32
#define RTP_POOL_SPARE 8    /* free slabs kept ready for threads that have not posted yet */
#define RTP_CACHE_FULL 1u   /* added to a slab's cached QP key in sampling or apply mode (QPs are aligned) */
#define RTP_CTL_TAKE 64	    /* watched sends one visit to a controller may take for its thread (apply fast path) */
#define RTP_CTL_LOOK_MIN 8u /* apply fast path: fewest sends outside a controller's bands between two looks */

enum { RTP_SEND, RTP_SEND_IMM, RTP_WRITE, RTP_WRITE_IMM, RTP_READ, RTP_ATOMIC, RTP_SEND_INV, RTP_OTHER, RTP_NOPS };

static const uint8_t rtp_op_of[16] = {
	[IBV_WR_RDMA_WRITE] = RTP_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = RTP_WRITE_IMM,
	[IBV_WR_SEND] = RTP_SEND,
	[IBV_WR_SEND_WITH_IMM] = RTP_SEND_IMM,
	[IBV_WR_RDMA_READ] = RTP_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = RTP_ATOMIC,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = RTP_ATOMIC,
	[IBV_WR_LOCAL_INV] = RTP_OTHER,
	[IBV_WR_BIND_MW] = RTP_OTHER,
	[IBV_WR_SEND_WITH_INV] = RTP_SEND_INV,
	[IBV_WR_TSO] = RTP_OTHER,
	[IBV_WR_DRIVER1] = RTP_OTHER,
	[12] = RTP_OTHER,
	[13] = RTP_OTHER,
	[14] = RTP_OTHER,
	[IBV_WR_ATOMIC_WRITE] = RTP_ATOMIC,
};

static inline unsigned rtp_op(unsigned opcode)
{
	return opcode < 16 ? rtp_op_of[opcode] : RTP_OTHER;
}

/* Apply mode may inline these (SEND and RDMA WRITE, with or without immediate). */
static inline bool rtp_op_inlinable(unsigned op)
{
	return op <= RTP_WRITE_IMM;
}
/*
 * Counters. Each is written by one thread at a time (the slab owner, or a holder of g_lock / the QP's latency lock)
 * and read by the writer from another thread, hence relaxed atomics: a plain load and store on x86, no RMW.
 */
typedef _Atomic uint64_t rt_ctr;
#define CTR_ADD(c, n) \
	atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + (n), memory_order_relaxed)
#define CTR_GET(c) atomic_load_explicit(&(c), memory_order_relaxed)
#define CTR_SET(c, v) atomic_store_explicit(&(c), (v), memory_order_relaxed)
/* The largest value seen, with the same single-writer discipline: merged by max, never summed. */
typedef _Atomic uint32_t rt_max;
#define MAX_PUT(m, v)                                                           \
	do {                                                                    \
		if ((v) > atomic_load_explicit(&(m), memory_order_relaxed))     \
			atomic_store_explicit(&(m), (v), memory_order_relaxed); \
	} while (0)

/* One opcode class: counters (summed as an array up to hist_max), then the largest size sent per bucket (0 = none
 * yet; merged by max), beside the counts so the send path reaches both from one base. */
struct rtp_op_stat {
	rt_ctr wrs, bytes, inl_wrs, inl_bytes, sig_wrs, sig_bytes;
	rt_ctr hist[RT_HIST_BUCKETS];
	rt_max hist_max[RT_HIST_BUCKETS];
};
#define RTP_OP_NCTR (offsetof(struct rtp_op_stat, hist_max) / sizeof(rt_ctr))
_Static_assert(sizeof(struct rtp_op_stat) % sizeof(rt_ctr) == 0, "rtp_op_stat: counters, then maxima");

/*
 * Everything recorded for one QP (per thread, or folded): the opcode classes, the QP's counters from post_calls to
 * batch_max (summed as an array), then the largest batch seen per post-list bucket (merged by max).
 */
struct rtp_qp_stat {
	struct rtp_op_stat op[RTP_NOPS];
	rt_ctr post_calls, batch[RTP_BATCH_BUCKETS];
	rt_ctr err_sq_full, err_inline_too_big, err_too_many_sge, err_enomem_other, err_einval, err_other;
	rt_ctr err_bad_wr_unset, wrs_not_posted;
	rt_ctr apply_inline_set, apply_chain_too_long;
	rt_ctr ex_early_commit, ex_complete_failed, ex_aborted;
	rt_max batch_max[RTP_BATCH_BUCKETS];
};
#define RTP_QP_NCTR \
	((offsetof(struct rtp_qp_stat, batch_max) - offsetof(struct rtp_qp_stat, post_calls)) / sizeof(rt_ctr))
_Static_assert(offsetof(struct rtp_qp_stat, post_calls) % sizeof(rt_ctr) == 0, "rtp_qp_stat: counters aligned");

struct rtp_pending {
	uint64_t wr_id;
	uint32_t bytes;
	uint8_t op;
	uint8_t inl;
	uint8_t applied;
	unsigned int flags;
};

enum { RTP_ENT_FREE = 0, RTP_ENT_USED = 1 };

/*
 * The send path's common case, one WR per post, counted by exact key: (send_flags, opcode) and bytes. A slot is
 * claimed once, by the entry's owner thread, while its count is 0 (key and bytes first, then the count with release
 * order), and keeps its key until the entry is freed, so a reader that sees a count sees its key (acquire), and the
 * count only grows: no flush, nothing counted twice. A zeroed slot is the key (0, 0) with no posts, which counting it
 * keeps true. The writer expands a slot into the counters it stands for (rtp_entry_expand). A post whose key is not
 * within RTP_SLOT_PROBE slots of its home is counted directly. A slot is 16 bytes, four to a cache line: the key
 * (rtp_slot_key: size, opcode and flags in one word, one compare on the send path) and the count.
 */
#define RTP_SLOTS 128
#define RTP_SLOT_BITS 7
#define RTP_SLOT_PROBE 8 /* slots a key may take from its home on (the send path looks at the home only) */
struct rtp_slot {
	_Atomic uint64_t key; /* rtp_slot_key() | rtp_slot_bytes(): bytes << 32 | opcode << 24 | flags */
	rt_ctr n;	      /* posts of one WR with this key */
};

struct rtp_entry {
	_Atomic int state;
	uint32_t slot;
	struct rtp_qp_stat st;
	struct rtp_slot slots[RTP_SLOTS];
	/* extended API: the WRs built since wr_start (owner thread only) */
	unsigned npend;
	struct rtp_pending pend[RTP_EX_PENDING];
};

struct rtp_qp;

struct rtp_slab {
	_Atomic int owned;
	struct rtp_slab *next; /* all slabs, newest first; immutable once published */
	uint32_t id;	       /* creation order (0, 1, ...): names the slab's threads in "posters" */
	size_t map_bytes;
	uint32_t sample_ctr; /* signaled WRs since the last latency sample */
	/* one-entry cache of the last QP posted to (rtp_cache_fill) */
	/* the cached QP (or its ibv_qp_ex), RTP_CACHE_FULL added in sampling or apply mode: the histogram-only send path's
	   one compare; cleared by whoever invalidates it: QP destruction, configure, fork (rtp_cache_drop) */
	_Atomic(uintptr_t) c_key;
	struct rtp_entry *c_e;
	int (*c_post)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr); /* c_q->post_send */
	bool c_apply;									       /* apply mode on c_q */
	bool c_sig_all;									       /* c_q->sq_sig_all */
	bool c_own;	  /* this slab owns c_q's sequence (sig_own) */
	uint32_t c_every; /* g_cfg.sample_every when filled (a configure bumps g_epoch) */
	struct rtp_qp *c_q;
	uint32_t ctl_outside; /* apply fast path: sends outside a controller's bands until the next look (0 = now) */
	uint32_t ctl_rng;     /* xorshift32 state of that countdown's jitter (0 = not seeded yet) */
	/* apply fast path: watched sends of ctl_band_q this thread took from its controller's countdown (not samples) */
	uint32_t ctl_band_left;
	const struct rtp_qp *ctl_band_q;
	rt_ctr posts_no_entry; /* posts on a tracked QP with this slab's entries all taken */
	struct ibv_send_wr wr_copy[RTP_APPLY_MAX_WRS];
	struct ibv_send_wr *wr_orig[RTP_APPLY_MAX_WRS];
	_Atomic uint16_t map[RTP_MAX_QPS]; /* QP slot -> entry index + 1 */
	struct rtp_entry ent[RTP_SLAB_ENTRIES];
};

struct rtp_ctx {
	struct ibv_context *ctx;
	uint32_t idx;
	bool closed;
	char dev_name[IBV_SYSFS_NAME_MAX];
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
	uint64_t cqs, cqs_ex, qps;
	uint32_t max_cqe;
};

/* Original ibv_qp_ex function pointers of one QP. */
struct rtp_qpx_orig {
	void (*wr_atomic_cmp_swp)(struct ibv_qp_ex *, uint32_t, uint64_t, uint64_t, uint64_t);
	void (*wr_atomic_fetch_add)(struct ibv_qp_ex *, uint32_t, uint64_t, uint64_t);
	void (*wr_bind_mw)(struct ibv_qp_ex *, struct ibv_mw *, uint32_t, const struct ibv_mw_bind_info *);
	void (*wr_local_inv)(struct ibv_qp_ex *, uint32_t);
	void (*wr_rdma_read)(struct ibv_qp_ex *, uint32_t, uint64_t);
	void (*wr_rdma_write)(struct ibv_qp_ex *, uint32_t, uint64_t);
	void (*wr_rdma_write_imm)(struct ibv_qp_ex *, uint32_t, uint64_t, __be32);
	void (*wr_send)(struct ibv_qp_ex *);
	void (*wr_send_imm)(struct ibv_qp_ex *, __be32);
	void (*wr_send_inv)(struct ibv_qp_ex *, uint32_t);
	void (*wr_send_tso)(struct ibv_qp_ex *, void *, uint16_t, uint16_t);
	void (*wr_set_inline_data)(struct ibv_qp_ex *, void *, size_t);
	void (*wr_set_inline_data_list)(struct ibv_qp_ex *, size_t, const struct ibv_data_buf *);
	void (*wr_set_sge)(struct ibv_qp_ex *, uint32_t, uint64_t, uint32_t);
	void (*wr_set_sge_list)(struct ibv_qp_ex *, size_t, const struct ibv_sge *);
	void (*wr_start)(struct ibv_qp_ex *);
	int (*wr_complete)(struct ibv_qp_ex *);
	void (*wr_abort)(struct ibv_qp_ex *);
	void (*wr_atomic_write)(struct ibv_qp_ex *, uint32_t, uint64_t, const void *);
};

struct rtp_lat_sample {
	uint64_t seq;
	uint64_t t_ns;
	uint32_t bytes; /* the WR's size (for the inline controller) */
	uint8_t flags;	/* RTP_SAMP_* */
};
#define RTP_SAMP_STATS 1u  /* one of the 1-in-K samples of the latency statistics */
#define RTP_SAMP_CTL 2u	   /* a sample for the QP's inline controller */
#define RTP_SAMP_INLINE 4u /* the WR went inline */

struct rtp_qp {
	uint32_t slot;
	struct ibv_qp *qp;
	struct rtp_ctx *ctx;
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr); /* the provider's */
	uint32_t qp_num;
	enum ibv_qp_type type;
	bool wr_addr; /* a send WR on this QP carries an address (not RC or UC): apply mode's copy takes wr.ud, xrc */
	uint32_t max_inline_data, max_send_wr, max_send_sge, max_recv_wr;
	uint32_t req_max_inline_data; /* what the application asked for */
	bool inline_raised;	      /* apply mode raised max_inline_data at creation */
	bool sq_sig_all, via_ex, destroyed;
	/* created for the extended send API (send_ops_flags): the application sees a raised max_inline_data, since
	 * apply mode's wr_set_sge -> wr_set_inline_data does not inline on every provider (rxe takes IBV_SEND_INLINE
	 * from wr_flags at the opcode's call, before the size is known) */
	bool ex_send;
	uint32_t apply_limit; /* max of apply_lim: nonzero = apply mode on this QP */
	rt_inline_ctl *ctl;   /* apply mode's adaptive inline threshold (RTUNE_APPLY_ADAPTIVE=1), or NULL */
	atomic_flag ctl_lock; /* held around every use of ctl: a poster or poller that finds it busy skips it */
	/*
	 * The send path's copy of ctl's hot fields (rtp_apply_ctl_mirror, written under ctl_lock): a WR outside the
	 * watched bands is decided from these without the lock (inline when bytes < ctl_limit_excl). Read one by one,
	 * they may mix two generations for one WR: every generation's limit is within the granted max_inline_data.
	 */
	_Atomic uint32_t ctl_limit_excl, ctl_watch_lo, ctl_watch_span;
	/*
	 * The controller's rate of looks outside its bands as a mask (its look period rounded up to a power of two, at
	 * least RTP_CTL_LOOK_MIN, minus 1): a thread looks at a send outside the bands when its slot for that send's key
	 * had counted a multiple of ctl_look_mask + 1 before it (so the first send of every new size is looked at).
	 */
	_Atomic uint32_t ctl_look_mask;
	_Atomic uint64_t ctl_looks; /* looks shown to the controller (rtp_apply_ctl_outside that got its lock) */
	uint32_t apply_lim[2];	    /* inline SEND (with imm) / RDMA WRITE (with imm) WRs of <= this; 0 = off */
	struct rtp_qp_stat agg;	    /* folded from thread entries at destroy (under g_lock) */
	uint64_t posters_folded;    /* slabs (id < 64, bit id) whose folded entry posted on this QP (under g_lock) */
	uint32_t posters_over;	    /* folded slabs with an id of 64 or more that posted (not told apart) */
	/* extended API */
	struct ibv_qp_ex *qpx;
	struct rtp_qpx_orig xo;
	uint64_t ex_rewraps;
	/* post -> completion latency: FIFO of sampled signaled WRs by signaled-sequence number */
	atomic_flag lat_lock;
	/*
	 * Signaled WRs posted: sig_own by the owner slab (the first to post; one thread at a time owns a slab, so it is
	 * the only writer: load and store, no RMW), sig_shared by every other thread (atomic add). Their sum numbers
	 * the signaled WRs for matching samples with completions.
	 */
	_Atomic(struct rtp_slab *) owner;
	_Atomic uint64_t sig_own, sig_shared, sig_completed;
	_Atomic uint32_t ring_n;
	uint32_t ring_head, ring_tail;
	struct rtp_lat_sample ring[RTP_LAT_RING];
	rt_ctr lat_n, lat_sum_ns, lat_min_ns, lat_max_ns, lat_hist[RT_HIST_BUCKETS];
	_Atomic uint64_t lat_dropped, lat_stale;
	_Atomic uint64_t wc_err[RTP_WC_STATUS];
};

/* Lock-free-read open addressing table: key 0 = empty, 1 = deleted. */
#define HT_EMPTY ((uintptr_t)0)
#define HT_TOMB ((uintptr_t)1)
#define HT_MAX_PROBE 128
struct ht_slot {
	_Atomic uintptr_t key;
	_Atomic(void *) val;
};
struct ht {
	unsigned bits;
	struct ht_slot *slots;
};

/* ---- process-wide state (probe_state.c) ------------------------------------------------------------------------ */

extern struct ht g_ht_qp, g_ht_qpn, g_ht_ctx; /* QP by ibv_qp *, QP by (context, qp_num), context by ibv_context * */
extern pthread_mutex_t g_lock;		      /* creation, destruction, fork, configuration and the writer */
extern pthread_key_t g_key;		      /* thread exit returns the thread's slab to the pool */
extern bool g_key_ok;
extern struct rt_probe_config g_cfg;
extern _Atomic(struct rtp_slab *) g_slabs;
extern unsigned g_nslabs;
extern struct rtp_ctx g_ctx[RTP_MAX_CTX];
extern unsigned g_nctx;
extern struct rtp_qp *g_qps[RTP_MAX_QPS];
extern _Atomic unsigned g_nqp;
extern _Atomic uint64_t g_epoch; /* bumped at every QP destruction: invalidates poll_cq's per-thread QP caches */
extern bool g_activity;
extern uint64_t g_start_ns;
extern bool g_forked_child;

/* Process-wide drop counters (rare paths, atomic RMW is fine there). */
extern _Atomic uint64_t g_posts_no_slab, g_posts_untracked_qp, g_qps_untracked, g_ctx_untracked;
extern _Atomic uint64_t g_wc_err_untracked, g_apply_raise_failed, g_ex_untracked;

/* Profile entries apply mode holds (probe_apply.c; under g_lock). */
extern unsigned g_nprof;

extern __thread struct rtp_slab *tls_slab __attribute__((tls_model("initial-exec")));

/* CLOCK_MONOTONIC in ns. Never fails on Linux; leaves errno alone there. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- tables ---------------------------------------------------------------------------------------------------- */

/* The home slot of key in t (Fibonacci hashing). */
static inline size_t ht_home(const struct ht *t, uintptr_t key)
{
	return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - t->bits));
}

/* Value stored under key, or NULL. Lock-free. */
static inline void *ht_get(const struct ht *t, uintptr_t key)
{
	size_t mask = ((size_t)1 << t->bits) - 1, i = ht_home(t, key);

	for (unsigned p = 0; p < HT_MAX_PROBE; p++, i = (i + 1) & mask) {
		uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_acquire);

		if (k == key)
			return atomic_load_explicit(&t->slots[i].val, memory_order_relaxed);
		if (k == HT_EMPTY)
			return NULL;
	}
	return NULL;
}

/* The qpn table key of QP number qp_num on context c. */
static inline uintptr_t qpn_key(const struct rtp_ctx *c, uint32_t qp_num)
{
	return ((uintptr_t)(c->idx + 1) << 32) | qp_num;
}

/* The record of a hooked context, or NULL. Lock-free. */
static inline struct rtp_ctx *ctx_of(struct ibv_context *ctx)
{
	return ht_get(&g_ht_ctx, (uintptr_t)ctx);
}

/*
 * Inserts or replaces key (under g_lock). Returns 0 or ENOSPC when no slot is free within the probe limit (the table
 * is unchanged then).
 */
int rtp_ht_put(struct ht *t, uintptr_t key, void *val);
/* Removes key when present (under g_lock); a tombstone keeps later keys reachable. */
void rtp_ht_del(struct ht *t, uintptr_t key);

/* ---- slabs and records (probe_state.c) ------------------------------------------------------------------------- */

/* Adds slabs until `spare` are unowned (under g_lock). An mmap failure leaves the pool smaller (posts count drops). */
void rtp_pool_ensure(unsigned spare);
/* Thread-exit destructor (pthread key): returns slab p to the pool, with everything it recorded kept. */
void rtp_slab_release(void *p);
/* Claims a free slab for this thread without locking or allocating; NULL when the pool is empty. */
struct rtp_slab *rtp_slab_attach(void);
/* This thread's entry for q, claimed from its slab on first use; NULL when all entries are taken. */
struct rtp_entry *rtp_entry_get(struct rtp_slab *s, const struct rtp_qp *q);
/* Adds src's counters to dst's and raises dst's maxima to src's. Cannot fail. */
void rtp_stat_add(struct rtp_qp_stat *dst, const struct rtp_qp_stat *src);
/* Clears every counter and maximum of st. Cannot fail. */
void rtp_stat_zero(struct rtp_qp_stat *st);
/* Moves every thread's record of q into q->agg and frees the entries (under g_lock; q is destroyed). */
void rtp_qp_fold(struct rtp_qp *q);
/* Adds what e's slots stand for (q's entry) to *out. Cannot fail. */
void rtp_entry_expand(const struct rtp_qp *q, const struct rtp_entry *e, struct rtp_qp_stat *out);
/* Frees e's slots (under g_lock, or the owner thread). */
void rtp_entry_clear_slots(struct rtp_entry *e);
/* Sum of q's folded and live records into *out (under g_lock). */
void rtp_qp_sum(const struct rtp_qp *q, struct rtp_qp_stat *out);
/* The threads that posted on q, as the slabs whose entry for q has post calls (a slab is one thread at a time: threads
 * that followed one another on a slab count once): *mask gets the slabs of id < 64; returns how many, all ids (under
 * g_lock). No allocation, nothing on the send path. */
unsigned rtp_qp_posters(const struct rtp_qp *q, uint64_t *mask);

/* ---- recording (shared by probe_send.c and probe_ex.c) --------------------------------------------------------- */

struct rtp_rec {
	unsigned nsig; /* signaled WRs recorded in this call */
	unsigned nsamp;
	unsigned samp_k[4]; /* 1-based index among this call's signaled WRs of each sampled WR */
	bool timing;	    /* t0 was taken: sampled WRs may be pushed */
	unsigned ctl_k;	    /* 1-based signaled index of the inline controller's sample in this call, 0 = none */
	uint32_t ctl_bytes;
	bool ctl_inline;
};

/* Bytes a WR carries (sum of its SGEs, saturated at UINT32_MAX). */
static inline uint32_t wr_bytes(const struct ibv_send_wr *w)
{
	uint64_t b = 0;

	for (int i = 0; i < w->num_sge; i++)
		b += w->sg_list[i].length;
	return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/*
 * Counts one WR of opcode class op in e (a thread-private entry: plain load+store counters). With sampling, every
 * sample_every-th signaled WR of this thread is marked in rc for post->completion timing.
 */
static inline __attribute__((always_inline)) void record_wr(const struct rtp_qp *q, struct rtp_entry *e,
							    struct rtp_slab *s, unsigned op, uint32_t bytes, bool inl,
							    bool sig, struct rtp_rec *rc, const bool sampling)
{
	struct rtp_op_stat *st = &e->st.op[op];
	unsigned hb = rt_hist_bucket(bytes);

	CTR_ADD(st->wrs, 1);
	CTR_ADD(st->bytes, bytes);
	CTR_ADD(st->hist[hb], 1);
	MAX_PUT(st->hist_max[hb], bytes);
	if (inl) {
		CTR_ADD(st->inl_wrs, 1);
		CTR_ADD(st->inl_bytes, bytes);
	}
	if (sig || q->sq_sig_all) {
		CTR_ADD(st->sig_wrs, 1);
		CTR_ADD(st->sig_bytes, bytes);
		rc->nsig++;
		if (sampling && g_cfg.sample_every && ++s->sample_ctr >= g_cfg.sample_every) {
			s->sample_ctr = 0;
			if (rc->timing && rc->nsamp < 4)
				rc->samp_k[rc->nsamp++] = rc->nsig;
		}
	}
}

/* Apply mode's inline limit for a WR of opcode class op on q (0 = leave the WR alone). */
static inline uint32_t apply_lim_of(const struct rtp_qp *q, unsigned op)
{
	return op <= RTP_SEND_IMM ? q->apply_lim[0] : op <= RTP_WRITE_IMM ? q->apply_lim[1] : 0;
}

/* Counts one post call of n WRs in e. */
static inline void record_batch(struct rtp_entry *e, unsigned n)
{
	unsigned b = rt_batch_bucket(n);

	CTR_ADD(e->st.post_calls, 1);
	CTR_ADD(e->st.batch[b], 1);
	if (b > 1) /* buckets 0 and 1 hold one batch each (1, 2 WRs): their largest is known */
		MAX_PUT(e->st.batch_max[b], n);
}

/*
 * Queues a sampled WR (signaled sequence number seq, posted at t0) for timing at its completion. Never blocks: a busy
 * ring lock or a full ring counts the sample as dropped.
 */
void rtp_lat_push(struct rtp_qp *q, uint64_t seq, uint64_t t0, uint32_t bytes, unsigned flags);

/*
 * After a successful post of rc->nsig signaled WRs through slab s: advance q's signaled sequence (the owner slab
 * without an atomic RMW) and queue the sampled ones.
 */
static inline void finish_samples(struct rtp_qp *q, struct rtp_slab *s, const struct rtp_rec *rc, uint64_t t0)
{
	uint64_t base;

	if (!g_cfg.sample_every || !rc->nsig)
		return;
	if (likely(atomic_load_explicit(&q->owner, memory_order_relaxed) == s)) {
		base = atomic_load_explicit(&q->sig_own, memory_order_relaxed);
		atomic_store_explicit(&q->sig_own, base + rc->nsig, memory_order_relaxed);
		base += atomic_load_explicit(&q->sig_shared, memory_order_relaxed);
	} else {
		base = atomic_fetch_add_explicit(&q->sig_shared, rc->nsig, memory_order_relaxed);
		base += atomic_load_explicit(&q->sig_own, memory_order_relaxed);
	}
	for (unsigned i = 0; i < rc->nsamp; i++)
		if (rc->samp_k[i] != rc->ctl_k)
			rtp_lat_push(q, base + rc->samp_k[i], t0, 0, RTP_SAMP_STATS);
	if (rc->ctl_k && rc->ctl_k <= rc->nsig) { /* a failed post may have stopped before it */
		unsigned f = RTP_SAMP_CTL | (rc->ctl_inline ? RTP_SAMP_INLINE : 0u);

		for (unsigned i = 0; i < rc->nsamp; i++)
			if (rc->samp_k[i] == rc->ctl_k)
				f |= RTP_SAMP_STATS;
		rtp_lat_push(q, base + rc->ctl_k, t0, rc->ctl_bytes, f);
	}
}

/* Counts a failed post by cause in e; bad = the WR the provider named (NULL: unknown). */
void rtp_classify_error(const struct rtp_qp *q, struct rtp_entry *e, int ret, const struct ibv_send_wr *bad);

/*
 * A slot key is one word: the WR's size in the high half, its opcode in bits 24..31 and its send_flags in bits 0..22
 * (rtp_slot_key() | rtp_slot_bytes()). Bit 23: the WR was inlined by apply mode (its IBV_SEND_INLINE is the probe's,
 * counted in apply_inline_set when the slot is expanded). A WR whose opcode or flags do not fit (no opcode of enum
 * ibv_wr_opcode is above 255, no IBV_SEND_* flag above bit 22) has no slot key: RTP_KEY_NONE, counted directly.
 */
#define RTP_KEY_APPLIED (1ull << 23)
#define RTP_KEY_FLAGS 0x7fffffu
#define RTP_KEY_NONE (1ull << 32) /* never the low half of a key: rtp_slot_count_ok() is false for it */

/*
 * The low half of the slot key of a one-WR post: its opcode and send_flags (RTP_KEY_NONE when they do not fit). Read
 * as two 4-byte loads, never merged into one 8-byte load: an application that has just written either field (most
 * set send_flags per post) would otherwise stall the load on a store that cannot be forwarded (a 4-byte store does
 * not forward to a wider load), ~10 ns per post.
 */
static inline uint64_t rtp_slot_key(const struct ibv_send_wr *w)
{
	uint32_t flags = *(const volatile unsigned int *)&w->send_flags;
	uint32_t opcode = *(const volatile enum ibv_wr_opcode *)&w->opcode;

	if (unlikely((flags & ~RTP_KEY_FLAGS) | (opcode >> 8)))
		return RTP_KEY_NONE;
	return (uint64_t)opcode << 24 | flags;
}

/* The high half of a slot key: the WR's size. */
static inline uint64_t rtp_slot_bytes(uint32_t bytes)
{
	return (uint64_t)bytes << 32;
}

/* Whether key_lo (rtp_slot_key, maybe | IBV_SEND_INLINE | RTP_KEY_APPLIED) can be counted in a slot. */
static inline bool rtp_slot_count_ok(uint64_t key_lo)
{
	return key_lo < RTP_KEY_NONE;
}

/* The home slot of a whole key in an entry (Fibonacci hashing: the size's bits and the flags' both reach the top). */
static inline unsigned rtp_slot_home(uint64_t key)
{
	return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> (64 - RTP_SLOT_BITS));
}
_Static_assert(RTP_SLOTS == 1u << RTP_SLOT_BITS, "rtp_slot_home hashes to RTP_SLOT_BITS bits");

/* The QP (or ibv_qp_ex) a slab's cached key c_key names, whatever its mode. */
static inline uintptr_t rtp_cache_key_qp(uintptr_t c_key)
{
	return c_key & ~(uintptr_t)RTP_CACHE_FULL;
}

/*
 * Makes (key, q, e) the slab's cached last QP (the post_send and wr_* paths share it: an ibv_qp_ex starts with its
 * ibv_qp) and claims q's sequence ownership for s when no slab has it yet. Owner thread only. Returns whether q is in
 * sampling or apply mode (the key cached with RTP_CACHE_FULL), not on the histogram-only path.
 */
static inline bool rtp_cache_fill(struct rtp_slab *s, void *key, struct rtp_qp *q, struct rtp_entry *e)
{
	struct rtp_slab *none = NULL;
	bool full;

	if (!atomic_load_explicit(&q->owner, memory_order_relaxed))
		atomic_compare_exchange_strong(&q->owner, &none, s);
	s->c_q = q;
	s->c_e = e;
	s->c_post = q->post_send;
	s->c_every = g_cfg.sample_every;
	s->c_apply = q->apply_limit != 0;
	full = s->c_every || s->c_apply;
	s->c_sig_all = q->sq_sig_all;
	s->c_own = atomic_load_explicit(&q->owner, memory_order_relaxed) == s;
	atomic_store_explicit(&s->c_key, (uintptr_t)key | (full ? RTP_CACHE_FULL : 0u), memory_order_relaxed);
	return full;
}

/* The cache hit test of the extended API: s is this thread's slab (or NULL), key the QP, in any mode. */
static inline bool rtp_cache_hit(const struct rtp_slab *s, const void *key)
{
	return s && rtp_cache_key_qp(atomic_load_explicit(&s->c_key, memory_order_relaxed)) == (uintptr_t)key;
}

/*
 * Drops every slab's cached QP that is key (NULL: all of them), so no thread reaches a destroyed QP's entry or keeps
 * an old sampling setting (under g_lock). A thread filling its cache meanwhile at worst loses it: a miss, not a stale
 * hit. Cannot fail.
 */
void rtp_cache_drop(const void *key);

/* ---- apply mode (probe_apply.c) -------------------------------------------------------------------------------- */

/* Whether apply mode inlines WR w on q (q->apply_limit is nonzero): not yet inline, inlinable, 0 < bytes <= limit. */
static inline bool rtp_apply_wants(const struct rtp_qp *q, const struct ibv_send_wr *w)
{
	uint32_t b;

	if ((w->send_flags & IBV_SEND_INLINE) || !rtp_op_inlinable(rtp_op(w->opcode)))
		return false;
	b = wr_bytes(w);
	return b && b <= apply_lim_of(q, rtp_op(w->opcode));
}

/*
 * Copies the chain wr (len WRs, len <= RTP_APPLY_MAX_WRS) into s->wr_copy with IBV_SEND_INLINE set where
 * rtp_apply_wants(); s->wr_orig maps each copy back to the application's WR. Returns the copy; *ncopy = len.
 */
struct ibv_send_wr *rtp_apply_copy(const struct rtp_qp *q, struct rtp_slab *s, struct ibv_send_wr *wr, unsigned *ncopy,
				   uint64_t mask);
/*
 * With an inline controller on q: which WRs of the chain wr (len <= RTP_APPLY_MAX_WRS) to inline, as a bit mask, from
 * the controller's per-WR decisions; the first signaled WR the controller wants timed is recorded in rc (ctl_k,
 * ctl_bytes, ctl_inline; the caller takes t0). A busy controller (another thread on this QP) leaves the fixed limits:
 * rtp_apply_wants(). Never blocks or allocates; never inlines above the QP's max_inline_data.
 */
uint64_t rtp_apply_ctl_decide(struct rtp_qp *q, struct ibv_send_wr *wr, struct rtp_rec *rc);
/* A controller sample completed after lat_ns (poll path); dropped when the controller is busy. */
void rtp_apply_ctl_sample(struct rtp_qp *q, uint32_t bytes, bool inlined, uint64_t lat_ns);
/*
 * The apply fast path's look at a send of bytes outside q->ctl's watched bands (at the controller's rate of looks, one in 8..23 of them per thread at most):
 * shows it to the controller (rt_inline_ctl_outside: it re-targets a band without traffic) and re-arms s's countdown.
 * Skipped when the controller is busy; never blocks, allocates or touches errno.
 */
void rtp_apply_ctl_outside(struct rtp_qp *q, struct rtp_slab *s, uint32_t bytes);
/* Copies q->ctl's hot fields to the send path's mirror (under q->ctl_lock, or before q is published). */
static inline void rtp_apply_ctl_mirror(struct rtp_qp *q)
{
	const struct rt_inline_ctl_hot *h = (const struct rt_inline_ctl_hot *)(const void *)q->ctl;

	atomic_store_explicit(&q->ctl_limit_excl, h->limit_excl, memory_order_relaxed);
	atomic_store_explicit(&q->ctl_watch_lo, h->watch_lo, memory_order_relaxed);
	atomic_store_explicit(&q->ctl_watch_span, h->watch_span, memory_order_relaxed);
	{
		uint32_t p = rt_inline_ctl_look_period(q->ctl), m = RTP_CTL_LOOK_MIN;

		while (m < p && m < (1u << 30))
			m <<= 1;
		atomic_store_explicit(&q->ctl_look_mask, m - 1, memory_order_relaxed);
	}
}
/* Creates q's inline controller when RTUNE_APPLY_ADAPTIVE is on and apply mode is on for q (at creation, g_lock). */
void rtp_apply_ctl_create(struct rtp_qp *q);
/*
 * Apply mode for a new QP of type t on c (c may be NULL): lim[] = inline thresholds for SEND and RDMA WRITE WRs, *want
 * = max_inline_data to request (0 = leave). Cannot fail.
 */
void rtp_apply_for(const struct rtp_ctx *c, enum ibv_qp_type t, uint32_t lim[2], uint32_t *want);

/* ---- the other parts' entry points ------------------------------------------------------------------------------ */

/* The ops.post_send and ops.poll_cq wrappers (probe_send.c): the provider's contract, return value and errno. */
int rtp_w_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int rtp_w_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
/* Installs the wr_* wrappers on qx, remembering any pointer that is not already ours (probe_ex.c; under g_lock). */
void rtp_qpx_wrap(struct rtp_qp *q, struct ibv_qp_ex *qx);
/* Writer state at init (probe_writer.c): AT_SECURE means no file; RTUNE_PROBE_OUT read into g_cfg.out_pattern. */
void rtp_writer_init(void);
/* Forgets the parent's output file and write count in a forked child (under g_lock). */
void rtp_writer_reset_child(void);

/* The probe's environment: nothing at all in a set-user-ID (AT_SECURE) process, whose caller must not steer it. */
static inline const char *rtp_env(const char *name)
{
	return secure_getenv(name);
}

#pragma GCC visibility pop

#endif
