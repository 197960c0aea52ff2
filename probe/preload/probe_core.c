// SPDX-License-Identifier: MIT
/*
 * The probe's wrapping logic: hooks verbs contexts (ops.post_send, ops.poll_cq, verbs_context create_qp_ex and
 * create_cq_ex) and extended QPs (ibv_qp_ex wr_* pointers), and records per QP and opcode what the application sends.
 *
 * Send path rules: no allocation, no printing, no global lock, errno preserved, the real call's return value
 * returned unchanged. Every thread records into its own slab (preallocated, claimed lock-free from a pool the creation
 * paths keep topped up); a slab stays in the pool when its thread exits so nothing recorded is lost (merging at thread
 * exit is implicit: the next owner adds to the same counters), and the writer sums all slabs.
 * Records that cannot be kept (no free slab, no free entry, unknown QP, full latency ring) are counted as drops.
 * QPs and contexts are found through open-addressed tables that are read lock-free and written under g_lock (which only
 * creation, destruction, fork and the writer take).
 */
#include "probe_core.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_hist.h"

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
#define RTP_POOL_SPARE 8 /* free slabs kept ready for threads that have not posted yet */

enum { RTP_SEND, RTP_SEND_IMM, RTP_WRITE, RTP_WRITE_IMM, RTP_READ, RTP_ATOMIC, RTP_SEND_INV, RTP_OTHER, RTP_NOPS };
static const char *const rtp_op_name[RTP_NOPS] = {
	"send", "send_imm", "rdma_write", "rdma_write_imm", "rdma_read", "atomic", "send_inv", "other",
};
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

struct rtp_qp;
static inline uint32_t apply_lim_of(const struct rtp_qp *q, unsigned op);

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

struct rtp_entry {
	_Atomic int state;
	uint32_t slot;
	struct rtp_qp_stat st;
	/* extended API: the WRs built since wr_start (owner thread only) */
	unsigned npend;
	struct rtp_pending pend[RTP_EX_PENDING];
};

struct rtp_qp;

struct rtp_slab {
	_Atomic int owned;
	struct rtp_slab *next; /* all slabs, newest first; immutable once published */
	size_t map_bytes;
	uint32_t sample_ctr; /* signaled WRs since the last latency sample */
	/* one-entry cache of the last QP posted to */
	void *c_key;
	struct rtp_qp *c_q;
	struct rtp_entry *c_e;
	uint64_t c_epoch;
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
};

struct rtp_qp {
	uint32_t slot;
	struct ibv_qp *qp;
	struct rtp_ctx *ctx;
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr); /* the provider's */
	uint32_t qp_num;
	enum ibv_qp_type type;
	uint32_t max_inline_data, max_send_wr, max_send_sge, max_recv_wr;
	uint32_t req_max_inline_data; /* what the application asked for */
	bool inline_raised;	      /* apply mode raised max_inline_data at creation */
	bool sq_sig_all, via_ex, destroyed;
	uint32_t apply_limit;	/* max of apply_lim: nonzero = apply mode on this QP */
	uint32_t apply_lim[2];	/* inline SEND (with imm) / RDMA WRITE (with imm) WRs of <= this; 0 = off */
	struct rtp_qp_stat agg; /* folded from thread entries at destroy (under g_lock) */
	/* extended API */
	struct ibv_qp_ex *qpx;
	struct rtp_qpx_orig xo;
	uint64_t ex_rewraps;
	/* post -> completion latency: FIFO of sampled signaled WRs by signaled-sequence number */
	atomic_flag lat_lock;
	_Atomic uint64_t sig_posted, sig_completed;
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

static struct ht_slot g_qp_slots[1u << 15], g_qpn_slots[1u << 15], g_ctx_slots[1u << 10];
static struct ht g_ht_qp = { 15, g_qp_slots }, g_ht_qpn = { 15, g_qpn_slots }, g_ht_ctx = { 10, g_ctx_slots };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_ok;
static struct rt_probe_config g_cfg = { .sample_every = 64 };
static _Atomic(struct rtp_slab *) g_slabs;
static unsigned g_nslabs;
static struct rtp_ctx g_ctx[RTP_MAX_CTX];
static unsigned g_nctx;
static struct rtp_qp *g_qps[RTP_MAX_QPS];
static _Atomic unsigned g_nqp;
static _Atomic uint64_t g_epoch = 1;
static bool g_activity;
static uint64_t g_start_ns;
static bool g_forked_child;

/* Process-wide drop counters (rare paths, atomic RMW is fine there). */
static _Atomic uint64_t g_posts_no_slab, g_posts_untracked_qp, g_qps_untracked, g_ctx_untracked;
static _Atomic uint64_t g_wc_err_untracked, g_apply_raise_failed, g_ex_untracked;

/* Output state (under g_lock). */
static int g_out_fd = -1;
static dev_t g_out_dev;
static ino_t g_out_ino;
static char g_out_path[4096];
static int g_out_errno;
static char g_out_err_path[4096];
static bool g_out_off;	  /* set-user-ID/AT_SECURE process: never write a file */
static int g_out_cfg_err; /* RTUNE_PROBE_OUT unusable (too long): reported at exit, nothing written */
static bool g_out_reported;
static uint64_t g_writes;

static struct ibv_send_wr g_bad_sentinel;

static __thread struct rtp_slab *tls_slab __attribute__((tls_model("initial-exec")));
static __thread uintptr_t tls_pq_key __attribute__((tls_model("initial-exec")));
static __thread struct rtp_qp *tls_pq __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_pq_epoch __attribute__((tls_model("initial-exec")));

struct rt_probe_real rt_probe_real;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- tables ---------------------------------------------------------------------------------------------------- */

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

/* Inserts or replaces key (under g_lock). Returns 0 or ENOSPC when no slot is free within the probe limit. */
static int ht_put(struct ht *t, uintptr_t key, void *val)
{
	size_t mask = ((size_t)1 << t->bits) - 1, i = ht_home(t, key), free_i = SIZE_MAX;

	for (unsigned p = 0; p < HT_MAX_PROBE; p++, i = (i + 1) & mask) {
		uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);

		if (k == key) {
			atomic_store_explicit(&t->slots[i].val, val, memory_order_release);
			return 0;
		}
		if (k == HT_TOMB && free_i == SIZE_MAX)
			free_i = i;
		if (k == HT_EMPTY) {
			if (free_i == SIZE_MAX)
				free_i = i;
			break;
		}
	}
	if (free_i == SIZE_MAX)
		return ENOSPC;
	atomic_store_explicit(&t->slots[free_i].val, val, memory_order_relaxed);
	atomic_store_explicit(&t->slots[free_i].key, key, memory_order_release);
	return 0;
}

/* Removes key when present (under g_lock). */
static void ht_del(struct ht *t, uintptr_t key)
{
	size_t mask = ((size_t)1 << t->bits) - 1, i = ht_home(t, key);

	for (unsigned p = 0; p < HT_MAX_PROBE; p++, i = (i + 1) & mask) {
		uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);

		if (k == key) {
			atomic_store_explicit(&t->slots[i].key, HT_TOMB, memory_order_release);
			return;
		}
		if (k == HT_EMPTY)
			return;
	}
}

static inline uintptr_t qpn_key(const struct rtp_ctx *c, uint32_t qp_num)
{
	return ((uintptr_t)(c->idx + 1) << 32) | qp_num;
}

/* ---- slabs ----------------------------------------------------------------------------------------------------- */

/* Adds slabs until `spare` are unowned (under g_lock). mmap'd: pages cost nothing until a thread touches them. */
static void pool_ensure(unsigned spare)
{
	unsigned free_n = 0;

	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next)
		if (!atomic_load_explicit(&s->owned, memory_order_relaxed))
			free_n++;
	while (free_n < spare) {
		void *p =
			mmap(NULL, sizeof(struct rtp_slab), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct rtp_slab *s;

		if (p == MAP_FAILED)
			return;
		s = p;
		s->next = atomic_load_explicit(&g_slabs, memory_order_relaxed);
		atomic_store_explicit(&g_slabs, s, memory_order_release);
		g_nslabs++;
		free_n++;
	}
}

static void slab_release(void *p)
{
	struct rtp_slab *s = p;

	s->c_key = NULL;
	tls_slab = NULL;
	atomic_store_explicit(&s->owned, 0, memory_order_release);
}

/* Claims a free slab for this thread without locking or allocating; NULL when the pool is empty. */
static struct rtp_slab *slab_attach(void)
{
	for (struct rtp_slab *s = atomic_load_explicit(&g_slabs, memory_order_acquire); s; s = s->next) {
		int zero = 0;

		if (atomic_load_explicit(&s->owned, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&s->owned, &zero, 1)) {
			s->c_key = NULL;
			tls_slab = s;
			if (g_key_ok)
				pthread_setspecific(g_key, s);
			return s;
		}
	}
	return NULL;
}

/* This thread's entry for q, claimed from its slab on first use; NULL when all entries are taken. */
static struct rtp_entry *entry_get(struct rtp_slab *s, const struct rtp_qp *q)
{
	unsigned i = atomic_load_explicit(&s->map[q->slot], memory_order_acquire);

	if (likely(i))
		return &s->ent[i - 1];
	for (unsigned k = 0; k < RTP_SLAB_ENTRIES; k++) {
		struct rtp_entry *e = &s->ent[k];

		if (atomic_load_explicit(&e->state, memory_order_acquire) == RTP_ENT_FREE) {
			e->slot = q->slot;
			e->npend = 0;
			atomic_store_explicit(&e->state, RTP_ENT_USED, memory_order_relaxed);
			atomic_store_explicit(&s->map[q->slot], (uint16_t)(k + 1), memory_order_release);
			return e;
		}
	}
	return NULL;
}

/* Adds src's counters to dst's and raises dst's maxima to src's. */
static void stat_add(struct rtp_qp_stat *dst, const struct rtp_qp_stat *src)
{
	rt_ctr *d = &dst->post_calls;
	const rt_ctr *sv = &src->post_calls;

	for (unsigned o = 0; o < RTP_NOPS; o++) {
		rt_ctr *od = &dst->op[o].wrs;
		const rt_ctr *os = &src->op[o].wrs;

		for (size_t i = 0; i < RTP_OP_NCTR; i++)
			CTR_ADD(od[i], CTR_GET(os[i]));
		for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
			MAX_PUT(dst->op[o].hist_max[b],
				atomic_load_explicit(&src->op[o].hist_max[b], memory_order_relaxed));
	}
	for (size_t i = 0; i < RTP_QP_NCTR; i++)
		CTR_ADD(d[i], CTR_GET(sv[i]));
	for (unsigned b = 0; b < RTP_BATCH_BUCKETS; b++)
		MAX_PUT(dst->batch_max[b], atomic_load_explicit(&src->batch_max[b], memory_order_relaxed));
}

/* Clears every counter and maximum of st. */
static void stat_zero(struct rtp_qp_stat *st)
{
	rt_ctr *d = &st->post_calls;

	for (unsigned o = 0; o < RTP_NOPS; o++) {
		rt_ctr *od = &st->op[o].wrs;

		for (size_t i = 0; i < RTP_OP_NCTR; i++)
			CTR_SET(od[i], 0);
		for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
			atomic_store_explicit(&st->op[o].hist_max[b], 0, memory_order_relaxed);
	}
	for (size_t i = 0; i < RTP_QP_NCTR; i++)
		CTR_SET(d[i], 0);
	for (unsigned b = 0; b < RTP_BATCH_BUCKETS; b++)
		atomic_store_explicit(&st->batch_max[b], 0, memory_order_relaxed);
}

/* Moves every thread's record of q into q->agg and frees the entries (under g_lock; q is destroyed). */
static void qp_fold(struct rtp_qp *q)
{
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		unsigned i = atomic_load(&s->map[q->slot]);
		struct rtp_entry *e;

		if (!i)
			continue;
		e = &s->ent[i - 1];
		stat_add(&q->agg, &e->st);
		stat_zero(&e->st);
		e->npend = 0;
		atomic_store(&s->map[q->slot], 0);
		atomic_store_explicit(&e->state, RTP_ENT_FREE, memory_order_release);
	}
}

/* Sum of q's folded and live records. */
static void qp_sum(const struct rtp_qp *q, struct rtp_qp_stat *out)
{
	stat_zero(out);
	stat_add(out, &q->agg);
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		unsigned i = atomic_load(&s->map[q->slot]);

		if (i)
			stat_add(out, &s->ent[i - 1].st);
	}
}

/* ---- recording ------------------------------------------------------------------------------------------------- */

struct rtp_rec {
	unsigned nsig; /* signaled WRs recorded in this call */
	unsigned nsamp;
	unsigned samp_k[4]; /* 1-based index among this call's signaled WRs of each sampled WR */
	bool timing;	    /* t0 was taken: sampled WRs may be pushed */
};

static inline uint32_t wr_bytes(const struct ibv_send_wr *w)
{
	uint64_t b = 0;

	for (int i = 0; i < w->num_sge; i++)
		b += w->sg_list[i].length;
	return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

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

static inline void record_batch(struct rtp_entry *e, unsigned n)
{
	unsigned b = rt_batch_bucket(n);

	CTR_ADD(e->st.post_calls, 1);
	CTR_ADD(e->st.batch[b], 1);
	if (b > 1) /* buckets 0 and 1 hold one batch each (1, 2 WRs): their largest is known */
		MAX_PUT(e->st.batch_max[b], n);
}

static void lat_push(struct rtp_qp *q, uint64_t seq, uint64_t t0)
{
	if (atomic_flag_test_and_set_explicit(&q->lat_lock, memory_order_acquire)) {
		atomic_fetch_add_explicit(&q->lat_dropped, 1, memory_order_relaxed);
		return;
	}
	if (q->ring_tail - q->ring_head >= RTP_LAT_RING) {
		atomic_fetch_add_explicit(&q->lat_dropped, 1, memory_order_relaxed);
	} else {
		q->ring[q->ring_tail % RTP_LAT_RING] = (struct rtp_lat_sample){ seq, t0 };
		q->ring_tail++;
	}
	atomic_store_explicit(&q->ring_n, q->ring_tail - q->ring_head, memory_order_relaxed);
	atomic_flag_clear_explicit(&q->lat_lock, memory_order_release);
}

/* After a successful post of rc->nsig signaled WRs: advance q's sequence and queue the sampled ones. */
static inline void finish_samples(struct rtp_qp *q, const struct rtp_rec *rc, uint64_t t0)
{
	uint64_t base;

	if (!g_cfg.sample_every || !rc->nsig)
		return;
	base = atomic_fetch_add_explicit(&q->sig_posted, rc->nsig, memory_order_relaxed);
	for (unsigned i = 0; i < rc->nsamp; i++)
		lat_push(q, base + rc->samp_k[i], t0);
}

/* Tells an SQ-full ENOMEM from the other causes providers report with ENOMEM, using the failing WR and q's caps. */
static void classify_error(const struct rtp_qp *q, struct rtp_entry *e, int ret, const struct ibv_send_wr *bad)
{
	int code = ret < 0 ? -ret : ret;

	if (code == ENOMEM) {
		if (!bad)
			CTR_ADD(e->st.err_enomem_other, 1);
		else if ((bad->send_flags & IBV_SEND_INLINE) && wr_bytes(bad) > q->max_inline_data)
			CTR_ADD(e->st.err_inline_too_big, 1);
		else if ((uint32_t)bad->num_sge > q->max_send_sge)
			CTR_ADD(e->st.err_too_many_sge, 1);
		else
			CTR_ADD(e->st.err_sq_full, 1);
	} else if (code == EINVAL) {
		CTR_ADD(e->st.err_einval, 1);
	} else {
		CTR_ADD(e->st.err_other, 1);
	}
}

/* ---- ops.post_send --------------------------------------------------------------------------------------------- */

/*
 * Everything after the provider's post_send except the plain success of the histogram-only path: records the WRs
 * before bad_wr, classifies the error, maps bad_wr back from apply mode's copy, queues latency samples. errno as the
 * provider left it.
 */
static __attribute__((noinline)) int post_send_after(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
						     struct ibv_send_wr *sent, struct ibv_send_wr **bad_wr,
						     struct ibv_send_wr *saved_bad, int ret, unsigned ncopy,
						     struct rtp_rec *rc, uint64_t t0)
{
	struct ibv_send_wr *stop = NULL, *w;
	unsigned n = 0, nchain;
	bool unknown_bad = false;
	int err = errno;

	if (likely(ret == 0)) {
		*bad_wr = saved_bad;
	} else if (*bad_wr == &g_bad_sentinel) {
		/* the provider failed without naming the WR: nothing is known to be posted */
		*bad_wr = saved_bad;
		unknown_bad = true;
		stop = sent;
	} else {
		stop = *bad_wr;
	}

	for (w = sent; w != stop && w; w = w->next, n++) {
		unsigned op = rtp_op(w->opcode);

		record_wr(q, e, s, op, wr_bytes(w), w->send_flags & IBV_SEND_INLINE, w->send_flags & IBV_SEND_SIGNALED,
			  rc, true);
		if (ncopy && !(s->wr_orig[n]->send_flags & IBV_SEND_INLINE) && (w->send_flags & IBV_SEND_INLINE))
			CTR_ADD(e->st.apply_inline_set, 1);
	}
	nchain = n;
	if (unlikely(ret)) {
		for (w = stop; w; w = w->next)
			nchain++;
		if (unknown_bad)
			CTR_ADD(e->st.err_bad_wr_unset, 1);
		classify_error(q, e, ret, unknown_bad ? NULL : stop);
		CTR_ADD(e->st.wrs_not_posted, nchain - n);
		if (ncopy && !unknown_bad && *bad_wr >= s->wr_copy && *bad_wr < s->wr_copy + ncopy)
			*bad_wr = s->wr_orig[*bad_wr - s->wr_copy];
	}
	record_batch(e, nchain);
	if (rc->nsig && g_cfg.sample_every)
		finish_samples(q, rc, t0);
	errno = err;
	return ret;
}

/* Sampling and/or apply mode: look at the chain before posting (copy it for apply mode, take t0 for a sample). */
static __attribute__((noinline)) int post_send_full(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
						    struct ibv_qp *qp, struct ibv_send_wr *wr,
						    struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *sent = wr, *saved_bad, *w;
	struct rtp_rec rc = { 0 };
	unsigned ncopy = 0, nsig = 0, need = 0, len = 0;
	uint64_t t0 = 0;
	int ret;

	for (w = wr; w; w = w->next) {
		len++;
		if (q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED))
			nsig++;
		if (q->apply_limit && !(w->send_flags & IBV_SEND_INLINE) && rtp_op_inlinable(rtp_op(w->opcode))) {
			uint32_t b = wr_bytes(w);

			if (b && b <= apply_lim_of(q, rtp_op(w->opcode)))
				need++;
		}
	}
	if (need) {
		if (len > RTP_APPLY_MAX_WRS) {
			CTR_ADD(e->st.apply_chain_too_long, 1);
		} else {
			for (w = wr; w; w = w->next, ncopy++) {
				struct ibv_send_wr *c = &s->wr_copy[ncopy];
				uint32_t b;

				*c = *w;
				c->next = w->next ? c + 1 : NULL;
				s->wr_orig[ncopy] = w;
				b = wr_bytes(w);
				if (!(w->send_flags & IBV_SEND_INLINE) && rtp_op_inlinable(rtp_op(w->opcode)) && b &&
				    b <= apply_lim_of(q, rtp_op(w->opcode)))
					c->send_flags |= IBV_SEND_INLINE;
			}
			sent = s->wr_copy;
		}
	}
	if (g_cfg.sample_every && nsig && s->sample_ctr + nsig >= g_cfg.sample_every) {
		int err = errno;

		rc.timing = true;
		t0 = now_ns();
		errno = err;
	}
	saved_bad = *bad_wr;
	*bad_wr = &g_bad_sentinel;
	ret = q->post_send(qp, sent, bad_wr);
	return post_send_after(q, e, s, sent, bad_wr, saved_bad, ret, ncopy, &rc, t0);
}

/*
 * The send path. Histogram-only mode and success: post, then count the chain in this thread's entry. errno is not
 * touched here (nothing called sets it), the provider's return value is returned as is.
 */
static inline __attribute__((always_inline)) int post_send_rec(struct rtp_qp *q, struct rtp_entry *e,
							       struct rtp_slab *s, struct ibv_qp *qp,
							       struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *saved_bad, *w;
	struct rtp_rec rc; /* only nsig is used without sampling */
	unsigned n = 0;
	int ret;

	rc.nsig = 0;
	rc.nsamp = 0;
	rc.timing = false;

	if (unlikely(g_cfg.sample_every || q->apply_limit))
		return post_send_full(q, e, s, qp, wr, bad_wr);
	saved_bad = *bad_wr;
	*bad_wr = &g_bad_sentinel;
	ret = q->post_send(qp, wr, bad_wr);
	if (unlikely(ret))
		return post_send_after(q, e, s, wr, bad_wr, saved_bad, ret, 0, &rc, 0);
	*bad_wr = saved_bad;
	for (w = wr; w; w = w->next, n++)
		record_wr(q, e, s, rtp_op(w->opcode), wr_bytes(w), w->send_flags & IBV_SEND_INLINE,
			  w->send_flags & IBV_SEND_SIGNALED, &rc, false);
	record_batch(e, n);
	return 0;
}

static struct rtp_ctx *ctx_of(struct ibv_context *ctx)
{
	return ht_get(&g_ht_ctx, (uintptr_t)ctx);
}

static __attribute__((noinline)) int w_post_send_slow(struct ibv_qp *qp, struct ibv_send_wr *wr,
						      struct ibv_send_wr **bad_wr)
{
	struct rtp_slab *s = tls_slab;
	struct rtp_qp *q = ht_get(&g_ht_qp, (uintptr_t)qp);
	struct rtp_entry *e;

	if (unlikely(!q)) {
		struct rtp_ctx *c = ctx_of(qp->context);

		atomic_fetch_add_explicit(&g_posts_untracked_qp, 1, memory_order_relaxed);
		if (unlikely(!c))
			return EINVAL; /* unreachable: the wrapper is only installed on hooked contexts */
		return c->post_send(qp, wr, bad_wr);
	}
	if (!s)
		s = slab_attach();
	if (unlikely(!s)) {
		atomic_fetch_add_explicit(&g_posts_no_slab, 1, memory_order_relaxed);
		return q->post_send(qp, wr, bad_wr);
	}
	e = entry_get(s, q);
	if (unlikely(!e)) {
		CTR_ADD(s->posts_no_entry, 1);
		return q->post_send(qp, wr, bad_wr);
	}
	s->c_key = qp;
	s->c_q = q;
	s->c_e = e;
	s->c_epoch = atomic_load_explicit(&g_epoch, memory_order_acquire);
	return post_send_rec(q, e, s, qp, wr, bad_wr);
}

static int w_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct rtp_slab *s = tls_slab;

	if (likely(s && s->c_key == qp && s->c_epoch == atomic_load_explicit(&g_epoch, memory_order_relaxed)))
		return post_send_rec(s->c_q, s->c_e, s, qp, wr, bad_wr);
	return w_post_send_slow(qp, wr, bad_wr);
}

/* ---- ops.poll_cq ----------------------------------------------------------------------------------------------- */

static struct rtp_qp *qp_by_num(const struct rtp_ctx *c, uint32_t qp_num)
{
	uintptr_t key = qpn_key(c, qp_num);
	uint64_t ep = atomic_load_explicit(&g_epoch, memory_order_relaxed);

	if (tls_pq_key == key && tls_pq_epoch == ep)
		return tls_pq;
	tls_pq = ht_get(&g_ht_qpn, key);
	tls_pq_key = key;
	tls_pq_epoch = ep;
	return tls_pq;
}

/* k successful send completions of q were polled: advance its completed sequence and time the sampled ones. */
static void wc_send_done(struct rtp_qp *q, unsigned k, uint64_t *now)
{
	uint64_t hi = atomic_fetch_add_explicit(&q->sig_completed, k, memory_order_relaxed) + k, lo = hi - k + 1;

	if (!atomic_load_explicit(&q->ring_n, memory_order_relaxed))
		return;
	if (atomic_flag_test_and_set_explicit(&q->lat_lock, memory_order_acquire))
		return; /* the entries left behind are found stale later */
	while (q->ring_head != q->ring_tail) {
		struct rtp_lat_sample *r = &q->ring[q->ring_head % RTP_LAT_RING];
		uint64_t lat;

		if (r->seq > hi)
			break;
		q->ring_head++;
		if (r->seq < lo) {
			/* its completion went by while the sample was being queued or the lock was busy */
			atomic_fetch_add_explicit(&q->lat_stale, 1, memory_order_relaxed);
			continue;
		}
		if (!*now)
			*now = now_ns();
		lat = *now > r->t_ns ? *now - r->t_ns : 0;
		CTR_ADD(q->lat_n, 1);
		CTR_ADD(q->lat_sum_ns, lat);
		if (CTR_GET(q->lat_n) == 1 || lat < CTR_GET(q->lat_min_ns))
			CTR_SET(q->lat_min_ns, lat);
		if (lat > CTR_GET(q->lat_max_ns))
			CTR_SET(q->lat_max_ns, lat);
		CTR_ADD(q->lat_hist[rt_hist_bucket(lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat)], 1);
	}
	atomic_store_explicit(&q->ring_n, q->ring_tail - q->ring_head, memory_order_relaxed);
	atomic_flag_clear_explicit(&q->lat_lock, memory_order_release);
}

static int w_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct rtp_ctx *c = ctx_of(cq->context);
	struct rtp_qp *run_q = NULL;
	unsigned run_n = 0;
	uint64_t now = 0;
	int ret, err;

	if (unlikely(!c))
		return -1; /* unreachable: the wrapper is only installed on hooked contexts */
	ret = c->poll_cq(cq, num_entries, wc);
	if (ret <= 0)
		return ret;
	err = errno;
	for (int i = 0; i < ret; i++) {
		if (unlikely(wc[i].status != IBV_WC_SUCCESS)) {
			struct rtp_qp *q = qp_by_num(c, wc[i].qp_num);
			unsigned st = wc[i].status < RTP_WC_STATUS ? wc[i].status : RTP_WC_STATUS - 1;

			if (q)
				atomic_fetch_add_explicit(&q->wc_err[st], 1, memory_order_relaxed);
			else
				atomic_fetch_add_explicit(&g_wc_err_untracked, 1, memory_order_relaxed);
		} else if (g_cfg.sample_every && !(wc[i].opcode & IBV_WC_RECV)) {
			/* runs of completions of one QP are accounted at once */
			struct rtp_qp *q = qp_by_num(c, wc[i].qp_num);

			if (q != run_q) {
				if (run_q)
					wc_send_done(run_q, run_n, &now);
				run_q = q;
				run_n = 0;
			}
			run_n++;
		}
	}
	if (run_q)
		wc_send_done(run_q, run_n, &now);
	errno = err;
	return ret;
}

/* ---- extended QP API ------------------------------------------------------------------------------------------- */

/* q, and this thread's slab and entry for it (NULL when they cannot be had: then the call is only forwarded). */
static inline struct rtp_qp *ex_get(struct ibv_qp_ex *qx, struct rtp_slab **so, struct rtp_entry **eo)
{
	struct rtp_slab *s = tls_slab;
	struct rtp_qp *q;
	struct rtp_entry *e = NULL;

	if (likely(s && s->c_key == (void *)qx && s->c_epoch == atomic_load_explicit(&g_epoch, memory_order_relaxed))) {
		*so = s;
		*eo = s->c_e;
		return s->c_q;
	}
	q = ht_get(&g_ht_qp, (uintptr_t)&qx->qp_base);
	if (!q)
		return NULL;
	if (!s)
		s = slab_attach();
	if (s) {
		e = entry_get(s, q);
		if (e) {
			s->c_key = qx;
			s->c_q = q;
			s->c_e = e;
			s->c_epoch = atomic_load_explicit(&g_epoch, memory_order_acquire);
		}
	}
	*so = s;
	*eo = e;
	return q;
}

static void ex_commit(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s, bool timing, uint64_t t0)
{
	struct rtp_rec rc = { .timing = timing };

	for (unsigned i = 0; i < e->npend; i++) {
		struct rtp_pending *p = &e->pend[i];

		record_wr(q, e, s, p->op, p->bytes, p->inl, p->flags & IBV_SEND_SIGNALED, &rc, true);
		if (p->applied)
			CTR_ADD(e->st.apply_inline_set, 1);
	}
	record_batch(e, e->npend);
	if (rc.nsig && g_cfg.sample_every)
		finish_samples(q, &rc, t0);
	e->npend = 0;
}

/* Starts a pending WR of opcode class op (the builder call itself is forwarded by the caller). */
static inline struct rtp_pending *ex_begin(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
					   struct ibv_qp_ex *qx, unsigned op)
{
	struct rtp_pending *p;

	if (!e)
		return NULL;
	if (unlikely(e->npend == RTP_EX_PENDING)) {
		/* longer batch than we hold: count these as posted now */
		CTR_ADD(e->st.ex_early_commit, 1);
		ex_commit(q, e, s, false, 0);
	}
	p = &e->pend[e->npend++];
	p->wr_id = qx->wr_id;
	p->flags = qx->wr_flags;
	p->op = (uint8_t)op;
	p->bytes = 0;
	p->inl = 0;
	p->applied = 0;
	return p;
}

static inline struct rtp_pending *ex_cur(struct rtp_entry *e)
{
	return e && e->npend ? &e->pend[e->npend - 1] : NULL;
}

#define EX_PROLOGUE(qx)                               \
	struct rtp_slab *s;                           \
	struct rtp_entry *e;                          \
	struct rtp_qp *q = ex_get((qx), &s, &e);      \
	if (unlikely(!q)) {                           \
		atomic_fetch_add(&g_ex_untracked, 1); \
		return;                               \
	}

static void x_wr_start(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	q->xo.wr_start(qx);
	if (e)
		e->npend = 0;
}

static int x_wr_complete(struct ibv_qp_ex *qx)
{
	struct rtp_slab *s;
	struct rtp_entry *e;
	struct rtp_qp *q = ex_get(qx, &s, &e);
	bool timing = false;
	uint64_t t0 = 0;
	int ret, err;

	if (unlikely(!q)) {
		atomic_fetch_add(&g_ex_untracked, 1);
		return EINVAL; /* unreachable: only hooked QPs carry this wrapper */
	}
	if (e && g_cfg.sample_every) {
		unsigned nsig = 0;

		for (unsigned i = 0; i < e->npend; i++)
			if (q->sq_sig_all || (e->pend[i].flags & IBV_SEND_SIGNALED))
				nsig++;
		if (nsig && s->sample_ctr + nsig >= g_cfg.sample_every) {
			timing = true;
			t0 = now_ns();
		}
	}
	ret = q->xo.wr_complete(qx);
	err = errno;
	if (e) {
		if (ret == 0) {
			ex_commit(q, e, s, timing, t0);
		} else {
			bool too_big = false;

			for (unsigned i = 0; i < e->npend; i++)
				if (e->pend[i].inl && e->pend[i].bytes > q->max_inline_data)
					too_big = true;
			CTR_ADD(e->st.ex_complete_failed, 1);
			CTR_ADD(e->st.wrs_not_posted, e->npend);
			if ((ret < 0 ? -ret : ret) == ENOMEM)
				CTR_ADD(*(too_big ? &e->st.err_inline_too_big : &e->st.err_sq_full), 1);
			else
				classify_error(q, e, ret, NULL);
			e->npend = 0;
		}
	}
	errno = err;
	return ret;
}

static void x_wr_abort(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	q->xo.wr_abort(qx);
	if (e) {
		CTR_ADD(e->st.ex_aborted, 1);
		e->npend = 0;
	}
}

static void x_wr_send(struct ibv_qp_ex *qx)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND);
	q->xo.wr_send(qx);
}

static void x_wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND_IMM);
	q->xo.wr_send_imm(qx, imm);
}

static void x_wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_SEND_INV);
	q->xo.wr_send_inv(qx, rkey);
}

static void x_wr_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_send_tso(qx, hdr, hdr_sz, mss);
}

static void x_wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_WRITE);
	q->xo.wr_rdma_write(qx, rkey, raddr);
}

static void x_wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_WRITE_IMM);
	q->xo.wr_rdma_write_imm(qx, rkey, raddr, imm);
}

static void x_wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_READ);
	q->xo.wr_rdma_read(qx, rkey, raddr);
}

static void x_wr_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, uint64_t cmp, uint64_t swp)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_cmp_swp(qx, rkey, raddr, cmp, swp);
}

static void x_wr_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_fetch_add(qx, rkey, raddr, add);
}

static void x_wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, const void *data)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_ATOMIC);
	q->xo.wr_atomic_write(qx, rkey, raddr, data);
}

static void x_wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_local_inv(qx, rkey);
}

static void x_wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	EX_PROLOGUE(qx);
	ex_begin(q, e, s, qx, RTP_OTHER);
	q->xo.wr_bind_mw(qx, mw, rkey, bi);
}

static void x_wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		p->bytes = length;
		if (q->apply_limit && length && length <= apply_lim_of(q, p->op) && rtp_op_inlinable(p->op) &&
		    q->xo.wr_set_inline_data) {
			p->inl = 1;
			p->applied = 1;
			q->xo.wr_set_inline_data(qx, (void *)(uintptr_t)addr, length);
			return;
		}
	}
	q->xo.wr_set_sge(qx, lkey, addr, length);
}

static void x_wr_set_sge_list(struct ibv_qp_ex *qx, size_t num_sge, const struct ibv_sge *sg)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		uint64_t b = 0;

		for (size_t i = 0; i < num_sge; i++)
			b += sg[i].length;
		p->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	}
	q->xo.wr_set_sge_list(qx, num_sge, sg);
}

static void x_wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t length)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		p->bytes = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length;
		p->inl = 1;
	}
	q->xo.wr_set_inline_data(qx, addr, length);
}

static void x_wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t num_buf, const struct ibv_data_buf *buf)
{
	struct rtp_pending *p;

	EX_PROLOGUE(qx);
	(void)s;
	p = ex_cur(e);
	if (p) {
		uint64_t b = 0;

		for (size_t i = 0; i < num_buf; i++)
			b += buf[i].length;
		p->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
		p->inl = 1;
	}
	q->xo.wr_set_inline_data_list(qx, num_buf, buf);
}

/* Installs the wr_* wrappers on qx, remembering any pointer that is not already ours (under g_lock). */
static void qpx_wrap(struct rtp_qp *q, struct ibv_qp_ex *qx)
{
	q->qpx = qx;
#define WRAP(f)                                \
	do {                                   \
		if (qx->f && qx->f != x_##f) { \
			q->xo.f = qx->f;       \
			qx->f = x_##f;         \
		}                              \
	} while (0)
	WRAP(wr_atomic_cmp_swp);
	WRAP(wr_atomic_fetch_add);
	WRAP(wr_bind_mw);
	WRAP(wr_local_inv);
	WRAP(wr_rdma_read);
	WRAP(wr_rdma_write);
	WRAP(wr_rdma_write_imm);
	WRAP(wr_send);
	WRAP(wr_send_imm);
	WRAP(wr_send_inv);
	WRAP(wr_send_tso);
	WRAP(wr_set_inline_data);
	WRAP(wr_set_inline_data_list);
	WRAP(wr_set_sge);
	WRAP(wr_set_sge_list);
	WRAP(wr_start);
	WRAP(wr_complete);
	WRAP(wr_abort);
	WRAP(wr_atomic_write);
#undef WRAP
}

/* ---- contexts and QPs ------------------------------------------------------------------------------------------ */

static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);

/* Hooks ctx (under g_lock); returns its record, or NULL when the table is full. */
static struct rtp_ctx *ctx_hook_locked(struct ibv_context *ctx)
{
	struct rtp_ctx *c = ctx_of(ctx);
	struct verbs_context *vctx;

	g_activity = true;
	if (c && !c->closed && ctx->ops.post_send == w_post_send)
		return c;
	if (!c) {
		if (g_nctx >= RTP_MAX_CTX) {
			atomic_fetch_add(&g_ctx_untracked, 1);
			return NULL;
		}
		c = &g_ctx[g_nctx];
		c->idx = g_nctx++;
	}
	c->ctx = ctx;
	c->closed = false;
	if (ctx->device)
		snprintf(c->dev_name, sizeof(c->dev_name), "%s", ctx->device->name);
	if (ctx->ops.post_send != w_post_send)
		c->post_send = ctx->ops.post_send;
	if (ctx->ops.poll_cq != w_poll_cq)
		c->poll_cq = ctx->ops.poll_cq;
	if (ht_put(&g_ht_ctx, (uintptr_t)ctx, c)) {
		atomic_fetch_add(&g_ctx_untracked, 1);
		return NULL;
	}
	pool_ensure(RTP_POOL_SPARE * 2);
	if (c->post_send)
		ctx->ops.post_send = w_post_send;
	if (c->poll_cq)
		ctx->ops.poll_cq = w_poll_cq;
	vctx = verbs_get_ctx_op(ctx, create_qp_ex);
	if (vctx && vctx->create_qp_ex != w_create_qp_ex) {
		c->create_qp_ex = vctx->create_qp_ex;
		vctx->create_qp_ex = w_create_qp_ex;
	}
	vctx = verbs_get_ctx_op(ctx, create_cq_ex);
	if (vctx && vctx->create_cq_ex != w_create_cq_ex) {
		c->create_cq_ex = vctx->create_cq_ex;
		vctx->create_cq_ex = w_create_cq_ex;
	}
	return c;
}

int rt_probe_hook_context(struct ibv_context *ctx)
{
	struct rtp_ctx *c;

	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	c = ctx_hook_locked(ctx);
	pthread_mutex_unlock(&g_lock);
	return c ? 0 : ENOSPC;
}

static struct rtp_ctx *ctx_get(struct ibv_context *ctx)
{
	struct rtp_ctx *c = ctx_of(ctx);

	if (c && !c->closed)
		return c;
	pthread_mutex_lock(&g_lock);
	c = ctx_hook_locked(ctx);
	pthread_mutex_unlock(&g_lock);
	return c;
}

/* Records a created QP (errno preserved by the callers). */
static void qp_register(struct ibv_qp *qp, struct rtp_ctx *c, enum ibv_qp_type type, const struct ibv_qp_cap *cap,
			int sq_sig_all, uint32_t req_inline, bool raised, bool via_ex, bool want_qpx,
			const uint32_t lim[2])
{
	struct rtp_qp *q;
	unsigned slot;

	if (!c)
		return;
	pthread_mutex_lock(&g_lock);
	g_activity = true;
	q = ht_get(&g_ht_qp, (uintptr_t)qp);
	if (q && !q->destroyed)
		goto out; /* seen twice (ibv_create_qp through the context's create_qp_ex) */
	slot = atomic_load(&g_nqp);
	if (slot >= RTP_MAX_QPS || !(q = calloc(1, sizeof(*q)))) {
		atomic_fetch_add(&g_qps_untracked, 1);
		goto out;
	}
	q->slot = slot;
	q->qp = qp;
	q->ctx = c;
	q->post_send = c->post_send;
	q->qp_num = qp->qp_num;
	q->type = type;
	q->max_inline_data = cap->max_inline_data;
	q->max_send_wr = cap->max_send_wr;
	q->max_send_sge = cap->max_send_sge;
	q->max_recv_wr = cap->max_recv_wr;
	q->req_max_inline_data = req_inline;
	q->inline_raised = raised;
	q->sq_sig_all = sq_sig_all != 0;
	q->via_ex = via_ex;
	atomic_flag_clear(&q->lat_lock);
	for (int k = 0; k < 2; k++) {
		q->apply_lim[k] = lim[k] < q->max_inline_data ? lim[k] : q->max_inline_data;
		if (q->apply_lim[k] > q->apply_limit)
			q->apply_limit = q->apply_lim[k];
	}
	if (ht_put(&g_ht_qp, (uintptr_t)qp, q)) {
		free(q);
		atomic_fetch_add(&g_qps_untracked, 1);
		goto out;
	}
	ht_put(&g_ht_qpn, qpn_key(c, q->qp_num), q);
	g_qps[slot] = q;
	atomic_store(&g_nqp, slot + 1);
	c->qps++;
	pool_ensure(RTP_POOL_SPARE);
	if (want_qpx && rt_probe_real.qp_to_qp_ex) {
		struct ibv_qp_ex *qx = rt_probe_real.qp_to_qp_ex(qp);

		if (qx)
			qpx_wrap(q, qx);
	}
out:
	pthread_mutex_unlock(&g_lock);
}

static bool apply_type_ok(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_UD || t == IBV_QPT_XRC_SEND;
}

/* Profile entries apply mode uses (device, opcode class, QP class), read at init from RTUNE_PROFILE. */
#define RTP_MAX_PROF 64
struct rtp_prof {
	char device[64];
	int op;	 /* 0 send, 1 write */
	int qpt; /* 0 rc (RC, UC, XRC), 1 ud */
	uint32_t thr, max_inline;
};
static struct rtp_prof g_prof[RTP_MAX_PROF];
static unsigned g_nprof;

/*
 * Apply mode for a new QP of type t on c: lim[] = inline thresholds for SEND and RDMA WRITE WRs, *want =
 * max_inline_data to request (0 = leave). RTUNE_INLINE_THRESHOLD applies to every device; a profile only to the devices
 * it has entries for (a device it does not name is left alone).
 */
static void apply_for(const struct rtp_ctx *c, enum ibv_qp_type t, uint32_t lim[2], uint32_t *want)
{
	int qpt = t == IBV_QPT_UD;

	lim[0] = lim[1] = 0;
	*want = 0;
	if (!apply_type_ok(t))
		return;
	if (!g_nprof) {
		lim[0] = lim[1] = g_cfg.apply_threshold;
		*want = g_cfg.apply_threshold ? g_cfg.apply_max_inline : 0;
		return;
	}
	for (unsigned i = 0; c && i < g_nprof; i++) {
		const struct rtp_prof *e = &g_prof[i];

		if (e->qpt != qpt || strcmp(e->device, c->dev_name))
			continue;
		lim[e->op] = e->thr;
		if (e->max_inline > *want)
			*want = e->max_inline;
	}
}

static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct rtp_ctx *c = ctx_of(ctx);
	struct ibv_qp_cap saved;
	struct ibv_qp *qp;
	uint32_t lim[2], want;
	bool raised = false;
	int err;

	if (unlikely(!c || !c->create_qp_ex)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	saved = attr->cap;
	apply_for(c, attr->qp_type, lim, &want);
	if (want > saved.max_inline_data) {
		attr->cap.max_inline_data = want;
		qp = c->create_qp_ex(ctx, attr);
		if (qp) {
			raised = true;
		} else {
			atomic_fetch_add(&g_apply_raise_failed, 1);
			attr->cap = saved;
			qp = c->create_qp_ex(ctx, attr);
		}
	} else {
		qp = c->create_qp_ex(ctx, attr);
	}
	if (!qp)
		return NULL;
	err = errno;
	qp_register(qp, c, attr->qp_type, &attr->cap, attr->sq_sig_all, saved.max_inline_data, raised, true,
		    (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && attr->send_ops_flags, lim);
	errno = err;
	return qp;
}

static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct rtp_ctx *c = ctx_of(ctx);
	struct ibv_cq_ex *cq;

	if (unlikely(!c || !c->create_cq_ex)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = c->create_cq_ex(ctx, attr);
	if (cq) {
		pthread_mutex_lock(&g_lock);
		c->cqs_ex++;
		if (attr->cqe > c->max_cqe)
			c->max_cqe = attr->cqe;
		pthread_mutex_unlock(&g_lock);
	}
	return cq;
}

struct ibv_context *rt_probe_open_device(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	int err;

	rt_probe_init();
	if (!rt_probe_real.open_device) {
		errno = ENOSYS;
		return NULL;
	}
	ctx = rt_probe_real.open_device(dev);
	if (ctx) {
		err = errno;
		rt_probe_hook_context(ctx);
		errno = err;
	}
	return ctx;
}

struct ibv_context *rt_probe_import_device(int cmd_fd)
{
	struct ibv_context *ctx;
	int err;

	rt_probe_init();
	if (!rt_probe_real.import_device) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ctx = rt_probe_real.import_device(cmd_fd);
	if (ctx) {
		err = errno;
		rt_probe_hook_context(ctx);
		errno = err;
	}
	return ctx;
}

int rt_probe_close_device(struct ibv_context *ctx)
{
	struct rtp_ctx *c;
	int ret, err;

	rt_probe_init();
	if (!rt_probe_real.close_device)
		return ENOSYS;
	c = ctx ? ctx_of(ctx) : NULL;
	ret = rt_probe_real.close_device(ctx);
	err = errno;
	if (ret == 0 && c) {
		pthread_mutex_lock(&g_lock);
		c->closed = true;
		pthread_mutex_unlock(&g_lock);
		rt_probe_write_now(false, NULL, 0);
	}
	errno = err;
	return ret;
}

struct ibv_qp *rt_probe_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_cap saved;
	struct ibv_qp *qp;
	struct rtp_ctx *c;
	uint32_t lim[2], want;
	bool raised = false;
	int err;

	rt_probe_init();
	if (!rt_probe_real.create_qp) {
		errno = ENOSYS;
		return NULL;
	}
	if (!pd || !attr)
		return rt_probe_real.create_qp(pd, attr);
	c = ctx_get(pd->context);
	saved = attr->cap;
	apply_for(c, attr->qp_type, lim, &want);
	if (want > saved.max_inline_data) {
		attr->cap.max_inline_data = want;
		qp = rt_probe_real.create_qp(pd, attr);
		if (qp) {
			raised = true;
		} else {
			atomic_fetch_add(&g_apply_raise_failed, 1);
			attr->cap = saved;
			qp = rt_probe_real.create_qp(pd, attr);
		}
	} else {
		qp = rt_probe_real.create_qp(pd, attr);
	}
	if (!qp)
		return NULL;
	err = errno;
	if (!c || c->ctx != qp->context)
		c = ctx_get(qp->context);
	qp_register(qp, c, attr->qp_type, &attr->cap, attr->sq_sig_all, saved.max_inline_data, raised, false, false,
		    lim);
	errno = err;
	return qp;
}

int rt_probe_destroy_qp(struct ibv_qp *qp)
{
	struct rtp_qp *q;
	int ret, err;

	rt_probe_init();
	if (!rt_probe_real.destroy_qp)
		return ENOSYS;
	q = qp ? ht_get(&g_ht_qp, (uintptr_t)qp) : NULL;
	ret = rt_probe_real.destroy_qp(qp);
	err = errno;
	if (ret == 0 && q) {
		pthread_mutex_lock(&g_lock);
		if (ht_get(&g_ht_qp, (uintptr_t)qp) == q) {
			ht_del(&g_ht_qp, (uintptr_t)qp);
			if (ht_get(&g_ht_qpn, qpn_key(q->ctx, q->qp_num)) == q)
				ht_del(&g_ht_qpn, qpn_key(q->ctx, q->qp_num));
			atomic_fetch_add_explicit(&g_epoch, 1, memory_order_release);
			qp_fold(q);
			q->destroyed = true;
			q->qpx = NULL;
		}
		pthread_mutex_unlock(&g_lock);
	}
	errno = err;
	return ret;
}

struct ibv_cq *rt_probe_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
				  int comp_vector)
{
	struct ibv_cq *cq;
	struct rtp_ctx *c;
	int err;

	rt_probe_init();
	if (!rt_probe_real.create_cq) {
		errno = ENOSYS;
		return NULL;
	}
	cq = rt_probe_real.create_cq(ctx, cqe, cq_context, ch, comp_vector);
	if (cq) {
		err = errno;
		c = ctx_get(cq->context);
		if (c) {
			pthread_mutex_lock(&g_lock);
			c->cqs++;
			if ((uint32_t)cq->cqe > c->max_cqe)
				c->max_cqe = (uint32_t)cq->cqe;
			pthread_mutex_unlock(&g_lock);
		}
		errno = err;
	}
	return cq;
}

int rt_probe_destroy_cq(struct ibv_cq *cq)
{
	rt_probe_init();
	if (!rt_probe_real.destroy_cq)
		return ENOSYS;
	return rt_probe_real.destroy_cq(cq);
}

int rt_probe_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	int ret, err;

	rt_probe_init();
	if (!rt_probe_real.modify_qp)
		return ENOSYS;
	ret = rt_probe_real.modify_qp(qp, attr, attr_mask);
	err = errno;
	if (ret == 0 && attr && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTS) {
		struct rtp_qp *q = ht_get(&g_ht_qp, (uintptr_t)qp);

		if (q && q->qpx) {
			/* some providers install their fast wr_* functions when the QP reaches RTS */
			pthread_mutex_lock(&g_lock);
			qpx_wrap(q, q->qpx);
			q->ex_rewraps++;
			pthread_mutex_unlock(&g_lock);
		}
	}
	errno = err;
	return ret;
}

struct ibv_qp_ex *rt_probe_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct ibv_qp_ex *qx;
	struct rtp_qp *q;
	int err;

	rt_probe_init();
	if (!rt_probe_real.qp_to_qp_ex) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qx = rt_probe_real.qp_to_qp_ex(qp);
	if (!qx)
		return NULL;
	err = errno;
	q = ht_get(&g_ht_qp, (uintptr_t)qp);
	if (q) {
		pthread_mutex_lock(&g_lock);
		qpx_wrap(q, qx);
		pthread_mutex_unlock(&g_lock);
	}
	errno = err;
	return qx;
}

/* ---- init, fork, exit ------------------------------------------------------------------------------------------ */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_lock);
}

static void reset_locked(void)
{
	struct rtp_slab *mine = tls_slab;

	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		/*
		 * Acquire pairs with slab_release() (a thread that exited, joined or not, before the fork): its last writes
		 * to the slab happen before ours. A free slab's c_key is already NULL. A slab still owned belonged to a
		 * thread the child does not have.
		 */
		if (atomic_load_explicit(&s->owned, memory_order_acquire) && s != mine) {
			s->c_key = NULL;
			atomic_store(&s->owned, 0);
		}
		s->sample_ctr = 0;
		CTR_SET(s->posts_no_entry, 0);
		for (unsigned k = 0; k < RTP_SLAB_ENTRIES; k++) {
			if (atomic_load(&s->ent[k].state) == RTP_ENT_USED) {
				stat_zero(&s->ent[k].st);
				s->ent[k].npend = 0;
			}
		}
	}
	for (unsigned i = 0; i < atomic_load(&g_nqp); i++) {
		struct rtp_qp *q = g_qps[i];

		stat_zero(&q->agg);
		atomic_flag_clear(&q->lat_lock);
		atomic_store(&q->sig_posted, 0);
		atomic_store(&q->sig_completed, 0);
		atomic_store(&q->ring_n, 0);
		q->ring_head = q->ring_tail = 0;
		CTR_SET(q->lat_n, 0);
		CTR_SET(q->lat_sum_ns, 0);
		CTR_SET(q->lat_min_ns, 0);
		CTR_SET(q->lat_max_ns, 0);
		for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
			CTR_SET(q->lat_hist[b], 0);
		atomic_store(&q->lat_dropped, 0);
		atomic_store(&q->lat_stale, 0);
		for (unsigned b = 0; b < RTP_WC_STATUS; b++)
			atomic_store(&q->wc_err[b], 0);
	}
	atomic_store(&g_posts_no_slab, 0);
	atomic_store(&g_posts_untracked_qp, 0);
	atomic_store(&g_wc_err_untracked, 0);
	atomic_store(&g_ex_untracked, 0);
	atomic_store(&g_apply_raise_failed, 0);
	if (g_out_fd >= 0)
		close(g_out_fd); /* the parent's file: the child writes its own */
	g_out_fd = -1;
	g_out_errno = 0;
	g_out_reported = false;
	g_writes = 0;
	g_activity = false;
	g_forked_child = true;
	g_start_ns = now_ns();
}

static void atfork_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	reset_locked();
}

void rt_probe_reset_for_child(void)
{
	pthread_mutex_lock(&g_lock);
	reset_locked();
	pthread_mutex_unlock(&g_lock);
}

static bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/*
 * Minimal reader of a profile's entries (schema rtune-profile 1.x, docs/profile-schema.md) for apply mode: for each
 * object of the "entries" array, its "device", "opcode", "qp_type", "inline_threshold" and "max_inline_data". Not a
 * validating JSON parser (librtune is not linked into the probe, to keep jansson out of the host application): a
 * document librtune would refuse may still give entries here, which is why `rtune probe --apply` is the safer path.
 * Returns the number of entries read.
 */
static unsigned profile_parse(const char *p)
{
	struct rtp_prof cur;
	char key[32] = "", str[64];
	int depth = 0;
	bool want_key = false, has_thr = false;

	g_nprof = 0;
	p = strstr(p, "\"entries\"");
	if (!p || !(p = strchr(p, '[')))
		return 0;
	for (p++; *p; p++) {
		if (*p == '"') {
			size_t n = 0;

			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (n + 1 < sizeof(str))
					str[n++] = *p;
			}
			str[n] = '\0';
			if (!*p)
				break;
			if (depth != 1)
				continue;
			if (want_key) {
				snprintf(key, sizeof(key), "%s", str);
				want_key = false;
			} else if (!strcmp(key, "device")) {
				snprintf(cur.device, sizeof(cur.device), "%s", str);
			} else if (!strcmp(key, "opcode")) {
				cur.op = !strcmp(str, "write");
			} else if (!strcmp(key, "qp_type")) {
				cur.qpt = !strcmp(str, "ud");
			}
		} else if (*p == '{' || *p == '[') {
			if (++depth == 1) {
				memset(&cur, 0, sizeof(cur));
				has_thr = false;
				want_key = true;
			}
		} else if (*p == '}' || *p == ']') {
			if (depth == 0)
				break; /* end of "entries" */
			if (depth-- == 1 && has_thr && cur.device[0] && g_nprof < RTP_MAX_PROF) {
				if (cur.max_inline < cur.thr)
					cur.max_inline = cur.thr;
				g_prof[g_nprof++] = cur;
			}
		} else if (*p == ',' && depth == 1) {
			want_key = true;
		} else if (depth == 1 && !want_key && *p >= '0' && *p <= '9') {
			char *end;
			unsigned long v = strtoul(p, &end, 10);

			if (v > (1u << 20))
				v = 0;
			if (!strcmp(key, "inline_threshold")) {
				cur.thr = (uint32_t)v;
				has_thr = true;
			} else if (!strcmp(key, "max_inline_data")) {
				cur.max_inline = (uint32_t)v;
			}
			p = end - 1;
		}
	}
	return g_nprof;
}

int rt_probe_load_profile(const char *path)
{
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd, ret = 0;

	pthread_mutex_lock(&g_lock);
	g_nprof = 0;
	g_cfg.apply_threshold = g_cfg.apply_max_inline = 0;
	g_cfg.apply_source[0] = '\0';
	if (!path) {
		pthread_mutex_unlock(&g_lock);
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf = malloc(1 << 20);
	if (fd < 0 || !buf) {
		ret = fd < 0 ? errno : ENOMEM;
		goto out;
	}
	while (len < (1 << 20) - 1 && (n = read(fd, buf + len, (1 << 20) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	if (!profile_parse(buf)) {
		ret = ENOENT;
		goto out;
	}
	for (unsigned i = 0; i < g_nprof; i++) {
		if (g_prof[i].thr > g_cfg.apply_threshold)
			g_cfg.apply_threshold = g_prof[i].thr;
		if (g_prof[i].max_inline > g_cfg.apply_max_inline)
			g_cfg.apply_max_inline = g_prof[i].max_inline;
	}
	snprintf(g_cfg.apply_source, sizeof(g_cfg.apply_source), "%s", path);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	pthread_mutex_unlock(&g_lock);
	return ret;
}

/* The probe's environment: nothing at all in a set-user-ID (AT_SECURE) process, whose caller must not steer it. */
static const char *probe_env(const char *name)
{
	return secure_getenv(name);
}

static void init_once(void)
{
	const char *v;

	g_start_ns = now_ns();
	/* a privileged process writes no file (its caller would choose the path or the directory) and prints nothing */
	g_out_off = getauxval(AT_SECURE) != 0;
	if ((v = probe_env("RTUNE_PROBE_SAMPLE")) && !parse_u32(v, 1u << 30, &g_cfg.sample_every))
		fprintf(stderr, "rtune-probe: ignoring RTUNE_PROBE_SAMPLE='%.64s': not a count\n", v);
	if ((v = probe_env("RTUNE_PROBE_OUT"))) {
		if (strlen(v) >= sizeof(g_cfg.out_pattern) - 32)
			g_out_cfg_err = ENAMETOOLONG; /* never write to a truncated name */
		else
			snprintf(g_cfg.out_pattern, sizeof(g_cfg.out_pattern), "%s", v);
	}
	if ((v = probe_env("RTUNE_INLINE_THRESHOLD")) && *v) {
		if (!parse_u32(v, 1u << 20, &g_cfg.apply_threshold)) {
			fprintf(stderr, "rtune-probe: ignoring RTUNE_INLINE_THRESHOLD='%.64s': not a byte count\n", v);
			g_cfg.apply_threshold = 0;
		} else {
			g_cfg.apply_max_inline = g_cfg.apply_threshold;
			snprintf(g_cfg.apply_source, sizeof(g_cfg.apply_source), "RTUNE_INLINE_THRESHOLD");
		}
	}
	g_key_ok = pthread_key_create(&g_key, slab_release) == 0;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (!g_cfg.apply_threshold && (v = probe_env("RTUNE_PROFILE")) && *v && rt_probe_load_profile(v))
		fprintf(stderr, "rtune-probe: ignoring RTUNE_PROFILE='%.200s': no readable profile entries\n", v);
}

void rt_probe_init(void)
{
	pthread_once(&g_once, init_once);
}

void rt_probe_configure(const struct rt_probe_config *cfg)
{
	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	g_cfg = *cfg;
	g_nprof = 0;
	pthread_mutex_unlock(&g_lock);
}

/* ---- output ---------------------------------------------------------------------------------------------------- */

struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		char *np = realloc(b->p, b->cap * 2 + (size_t)n);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

static void jb_str(struct jbuf *b, const char *s)
{
	jb_printf(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			jb_printf(b, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			jb_printf(b, "\\u%04x", ch);
		else
			jb_printf(b, "%c", ch);
	}
	jb_printf(b, "\"");
}

static const char *qpt_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_SEND";
	case IBV_QPT_XRC_RECV: return "XRC_RECV";
	case IBV_QPT_DRIVER: return "DRIVER";
	default: return "unknown";
	}
}

/* [lo, hi, count] per non-empty bucket: lo the bucket's lowest size, hi the largest size seen in it (mx, may be
 * NULL: the bucket's highest size). */
static void jb_hist(struct jbuf *b, const rt_ctr *h, const rt_max *mx)
{
	bool first = true;

	jb_printf(b, "[");
	for (unsigned i = 0; i < RT_HIST_BUCKETS; i++) {
		uint64_t n = CTR_GET(h[i]);
		uint32_t hi = mx ? atomic_load_explicit(&mx[i], memory_order_relaxed) : 0;

		if (!n)
			continue;
		if (hi < rt_hist_bucket_lo(i) || hi > rt_hist_bucket_hi(i))
			hi = rt_hist_bucket_hi(i);
		jb_printf(b, "%s[%u,%u,%llu]", first ? "" : ",", rt_hist_bucket_lo(i), hi, (unsigned long long)n);
		first = false;
	}
	jb_printf(b, "]");
}

static void jb_ops(struct jbuf *b, const struct rtp_qp_stat *st)
{
	bool first = true;

	jb_printf(b, "{");
	for (unsigned o = 0; o < RTP_NOPS; o++) {
		const struct rtp_op_stat *os = &st->op[o];

		if (!CTR_GET(os->wrs))
			continue;
		jb_printf(b,
			  "%s\"%s\":{\"wrs\":%llu,\"bytes\":%llu,\"inline_wrs\":%llu,\"inline_bytes\":%llu,"
			  "\"signaled_wrs\":%llu,\"signaled_bytes\":%llu,\"hist\":",
			  first ? "" : ",", rtp_op_name[o], (unsigned long long)CTR_GET(os->wrs),
			  (unsigned long long)CTR_GET(os->bytes), (unsigned long long)CTR_GET(os->inl_wrs),
			  (unsigned long long)CTR_GET(os->inl_bytes), (unsigned long long)CTR_GET(os->sig_wrs),
			  (unsigned long long)CTR_GET(os->sig_bytes));
		jb_hist(b, os->hist, os->hist_max);
		jb_printf(b, "}");
		first = false;
	}
	jb_printf(b, "}");
}

static void jb_cmdline(struct jbuf *b)
{
	char buf[4096];
	ssize_t n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	bool first = true;

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	jb_printf(b, "[");
	if (n > 0) {
		buf[n] = '\0';
		for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
			jb_printf(b, "%s", first ? "" : ",");
			jb_str(b, p);
			first = false;
		}
	}
	jb_printf(b, "]");
}

/* Renders the document (under g_lock). *has_data: any verbs activity or any count. */
static int render_locked(bool final, char **out, size_t *len, bool *has_data)
{
	struct jbuf b = { .cap = 1 << 16 };
	struct rtp_qp_stat *sum = malloc(sizeof(*sum)), *tot = malloc(sizeof(*tot));
	char exe[4096] = "", host[256] = "";
	ssize_t n;
	uint64_t no_entry = 0, lat_dropped = 0, lat_stale = 0;
	unsigned nqp = atomic_load(&g_nqp);
	bool any = g_activity;

	b.p = malloc(b.cap);
	if (!b.p || !sum || !tot) {
		free(b.p);
		free(sum);
		free(tot);
		return ENOMEM;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	gethostname(host, sizeof(host) - 1);
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next)
		no_entry += CTR_GET(s->posts_no_entry);

	jb_printf(&b,
		  "{\"schema\":{\"name\":\"rtune-probe\",\"version\":\"1.0\"},\"rtune_version\":\"%s\","
		  "\"pid\":%ld,\"ppid\":%ld,\"forked_child\":%s,\"final\":%s,\"exe\":",
		  RTUNE_VERSION, (long)getpid(), (long)getppid(), g_forked_child ? "true" : "false",
		  final ? "true" : "false");
	jb_str(&b, exe);
	jb_printf(&b, ",\"hostname\":");
	jb_str(&b, host);
	jb_printf(&b, ",\"cmdline\":");
	jb_cmdline(&b);
	jb_printf(&b,
		  ",\"start_ns\":%llu,\"written_ns\":%llu,\"sample_every\":%u,"
		  "\"hist_scheme\":{\"name\":\"log-linear\",\"sub_buckets\":%u,\"buckets\":%u},",
		  (unsigned long long)g_start_ns, (unsigned long long)now_ns(), g_cfg.sample_every, RT_HIST_SUB,
		  RT_HIST_BUCKETS);
	jb_printf(&b, "\"apply\":{\"enabled\":%s,\"inline_threshold\":%u,\"max_inline_data\":%u,\"source\":",
		  g_cfg.apply_threshold ? "true" : "false", g_cfg.apply_threshold, g_cfg.apply_max_inline);
	jb_str(&b, g_cfg.apply_source);
	jb_printf(&b, ",\"profile_entries\":%u,\"raise_failed\":%llu},", g_nprof,
		  (unsigned long long)atomic_load(&g_apply_raise_failed));

	jb_printf(&b, "\"devices\":[");
	for (unsigned i = 0; i < g_nctx; i++) {
		const struct rtp_ctx *c = &g_ctx[i];

		jb_printf(&b, "%s{\"name\":", i ? "," : "");
		jb_str(&b, c->dev_name);
		jb_printf(&b, ",\"closed\":%s,\"qps\":%llu,\"cqs\":%llu,\"cqs_ex\":%llu,\"max_cqe\":%u}",
			  c->closed ? "true" : "false", (unsigned long long)c->qps, (unsigned long long)c->cqs,
			  (unsigned long long)c->cqs_ex, c->max_cqe);
	}
	jb_printf(&b, "],\"qps\":[");
	stat_zero(tot);
	for (unsigned i = 0; i < nqp; i++) {
		struct rtp_qp *q = g_qps[i];
		bool first;

		qp_sum(q, sum);
		stat_add(tot, sum);
		lat_dropped += atomic_load(&q->lat_dropped);
		lat_stale += atomic_load(&q->lat_stale);
		if (CTR_GET(sum->post_calls))
			any = true;
		jb_printf(&b, "%s{\"id\":%u,\"device\":", i ? "," : "", q->slot);
		jb_str(&b, q->ctx->dev_name);
		jb_printf(&b,
			  ",\"qp_num\":%u,\"qp_type\":\"%s\",\"max_inline_data\":%u,\"requested_max_inline_data\":%u,"
			  "\"inline_raised\":%s,\"max_send_wr\":%u,\"max_send_sge\":%u,\"max_recv_wr\":%u,"
			  "\"sq_sig_all\":%s,\"created_via\":\"%s\",\"ex_api\":%s,\"destroyed\":%s,\"post_calls\":%llu,"
			  "\"wrs_per_post\":[",
			  q->qp_num, qpt_name(q->type), q->max_inline_data, q->req_max_inline_data,
			  q->inline_raised ? "true" : "false", q->max_send_wr, q->max_send_sge, q->max_recv_wr,
			  q->sq_sig_all ? "true" : "false", q->via_ex ? "create_qp_ex" : "ibv_create_qp",
			  q->xo.wr_start ? "true" : "false", q->destroyed ? "true" : "false",
			  (unsigned long long)CTR_GET(sum->post_calls));
		first = true;
		for (unsigned k = 0; k < RTP_BATCH_BUCKETS; k++) {
			uint64_t c = CTR_GET(sum->batch[k]);
			uint32_t hi = atomic_load_explicit(&sum->batch_max[k], memory_order_relaxed);

			if (!c)
				continue;
			if (hi < rt_batch_bucket_lo(k) || hi > rt_batch_bucket_hi(k))
				hi = rt_batch_bucket_hi(k);
			jb_printf(&b, "%s[%u,%u,%llu]", first ? "" : ",", rt_batch_bucket_lo(k), hi,
				  (unsigned long long)c);
			first = false;
		}
		jb_printf(&b,
			  "],\"errors\":{\"sq_full\":%llu,\"enomem_inline_too_big\":%llu,"
			  "\"enomem_too_many_sge\":%llu,\"enomem_other\":%llu,\"einval\":%llu,\"other\":%llu,"
			  "\"bad_wr_unset\":%llu,\"wrs_not_posted\":%llu},",
			  (unsigned long long)CTR_GET(sum->err_sq_full),
			  (unsigned long long)CTR_GET(sum->err_inline_too_big),
			  (unsigned long long)CTR_GET(sum->err_too_many_sge),
			  (unsigned long long)CTR_GET(sum->err_enomem_other),
			  (unsigned long long)CTR_GET(sum->err_einval), (unsigned long long)CTR_GET(sum->err_other),
			  (unsigned long long)CTR_GET(sum->err_bad_wr_unset),
			  (unsigned long long)CTR_GET(sum->wrs_not_posted));
		jb_printf(
			&b,
			"\"apply\":{\"limit_send\":%u,\"limit_write\":%u,\"inline_set\":%llu,\"chain_too_long\":%llu},"
			"\"ex\":{\"early_commits\":%llu,\"complete_failed\":%llu,\"aborted\":%llu,\"rewraps\":%llu},",
			q->apply_lim[0], q->apply_lim[1], (unsigned long long)CTR_GET(sum->apply_inline_set),
			(unsigned long long)CTR_GET(sum->apply_chain_too_long),
			(unsigned long long)CTR_GET(sum->ex_early_commit),
			(unsigned long long)CTR_GET(sum->ex_complete_failed),
			(unsigned long long)CTR_GET(sum->ex_aborted), (unsigned long long)q->ex_rewraps);
		jb_printf(&b, "\"ops\":");
		jb_ops(&b, sum);
		jb_printf(&b,
			  ",\"latency\":{\"samples\":%llu,\"sum_ns\":%llu,\"min_ns\":%llu,\"max_ns\":%llu,"
			  "\"dropped\":%llu,\"stale\":%llu,\"hist\":",
			  (unsigned long long)CTR_GET(q->lat_n), (unsigned long long)CTR_GET(q->lat_sum_ns),
			  (unsigned long long)CTR_GET(q->lat_min_ns), (unsigned long long)CTR_GET(q->lat_max_ns),
			  (unsigned long long)atomic_load(&q->lat_dropped),
			  (unsigned long long)atomic_load(&q->lat_stale));
		jb_hist(&b, q->lat_hist, NULL);
		jb_printf(&b, "},\"wc_errors\":{");
		first = true;
		for (unsigned k = 0; k < RTP_WC_STATUS; k++) {
			uint64_t c = atomic_load(&q->wc_err[k]);

			if (!c)
				continue;
			any = true;
			jb_printf(&b, "%s\"%s\":%llu", first ? "" : ",", ibv_wc_status_str((enum ibv_wc_status)k),
				  (unsigned long long)c);
			first = false;
		}
		jb_printf(&b, "}}");
	}
	jb_printf(&b, "],\"totals\":{\"post_calls\":%llu,\"ops\":", (unsigned long long)CTR_GET(tot->post_calls));
	jb_ops(&b, tot);
	jb_printf(&b,
		  "},\"drops\":{\"posts_no_slab\":%llu,\"posts_no_entry\":%llu,\"posts_untracked_qp\":%llu,"
		  "\"qps_untracked\":%llu,\"contexts_untracked\":%llu,\"ex_calls_untracked\":%llu,"
		  "\"wc_errors_untracked_qp\":%llu,\"latency_samples_dropped\":%llu,\"latency_samples_stale\":%llu},"
		  "\"slabs\":%u,\"writes\":%llu}\n",
		  (unsigned long long)atomic_load(&g_posts_no_slab), (unsigned long long)no_entry,
		  (unsigned long long)atomic_load(&g_posts_untracked_qp),
		  (unsigned long long)atomic_load(&g_qps_untracked), (unsigned long long)atomic_load(&g_ctx_untracked),
		  (unsigned long long)atomic_load(&g_ex_untracked),
		  (unsigned long long)atomic_load(&g_wc_err_untracked), (unsigned long long)lat_dropped,
		  (unsigned long long)lat_stale, g_nslabs, (unsigned long long)g_writes + 1);
	if (atomic_load(&g_posts_no_slab) || no_entry || atomic_load(&g_posts_untracked_qp))
		any = true;
	free(sum);
	free(tot);
	if (b.oom) {
		free(b.p);
		return ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	*has_data = any;
	return 0;
}

int rt_probe_render_json(bool final, char **out, size_t *len)
{
	bool has;
	int ret;

	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	ret = render_locked(final, out, len, &has);
	pthread_mutex_unlock(&g_lock);
	return ret;
}

/*
 * The output path for this process: RTUNE_PROBE_OUT with %p = pid (a forked child without %p appends .<pid>).
 * Returns 0, or ENAMETOOLONG when the expansion does not fit (never a truncated name).
 */
static int out_path(char *buf, size_t len)
{
	const char *pat = g_cfg.out_pattern;
	size_t o = 0;
	bool had_pid = false;
	int n;

	if (!*pat) {
		n = snprintf(buf, len, "./rtune-probe.%ld.json", (long)getpid());
		return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
	}
	for (const char *p = pat; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n = snprintf(buf + o, len - o, "%ld", (long)getpid());
			if (n < 0 || (size_t)n >= len - o)
				return ENAMETOOLONG;
			o += (size_t)n;
			had_pid = true;
			p++;
		} else {
			if (o + 1 >= len)
				return ENAMETOOLONG;
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	if (!had_pid && g_forked_child) {
		n = snprintf(buf + o, len - o, ".%ld", (long)getpid());
		if (n < 0 || (size_t)n >= len - o)
			return ENAMETOOLONG;
	}
	return 0;
}

static int write_locked(bool final, char *path_out, size_t path_len)
{
	char *doc = NULL;
	size_t len = 0, off = 0;
	struct stat st;
	bool has = false;
	int ret;

	if (!g_activity && !g_nctx && !atomic_load(&g_nqp))
		return 0; /* never touched verbs (a shell, a tool run under LD_PRELOAD): nothing to render */
	if (g_out_off)
		return EPERM; /* set-user-ID process: no file, and nothing said at exit */
	if (g_out_cfg_err && !g_out_errno) {
		g_out_errno = g_out_cfg_err;
		snprintf(g_out_err_path, sizeof(g_out_err_path), "%.64s... (RTUNE_PROBE_OUT)",
			 probe_env("RTUNE_PROBE_OUT"));
	}
	ret = render_locked(final, &doc, &len, &has);
	if (ret)
		return ret;
	if (!has) {
		free(doc);
		return 0; /* no verbs activity: no file */
	}
	if (g_out_fd < 0) {
		if (g_out_errno) {
			free(doc);
			return g_out_errno; /* reported once at exit */
		}
		if ((ret = out_path(g_out_path, sizeof(g_out_path)))) {
			g_out_errno = ret;
			snprintf(g_out_err_path, sizeof(g_out_err_path), "%.64s...", g_out_path);
			free(doc);
			return ret;
		}
		g_out_fd = open(g_out_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (g_out_fd < 0 || fstat(g_out_fd, &st)) {
			g_out_errno = errno ? errno : EIO;
			snprintf(g_out_err_path, sizeof(g_out_err_path), "%s", g_out_path);
			if (g_out_fd >= 0)
				close(g_out_fd);
			g_out_fd = -1;
			free(doc);
			return g_out_errno;
		}
		g_out_dev = st.st_dev;
		g_out_ino = st.st_ino;
	} else if (fstat(g_out_fd, &st) || st.st_dev != g_out_dev || st.st_ino != g_out_ino) {
		/* the application closed or reused our descriptor: stop rather than write into its file */
		g_out_fd = -1;
		g_out_errno = EBADF;
		snprintf(g_out_err_path, sizeof(g_out_err_path), "%s", g_out_path);
		free(doc);
		return EBADF;
	}
	if (ftruncate(g_out_fd, 0)) {
		ret = errno;
		goto fail;
	}
	while (off < len) {
		ssize_t n = pwrite(g_out_fd, doc + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? errno : EIO;
			goto fail;
		}
		off += (size_t)n;
	}
	g_writes++;
	free(doc);
	if (path_out)
		snprintf(path_out, path_len, "%s", g_out_path);
	return 0;
fail:
	g_out_errno = ret;
	snprintf(g_out_err_path, sizeof(g_out_err_path), "%s", g_out_path);
	free(doc);
	return ret;
}

int rt_probe_write_now(bool final, char *path_out, size_t path_len)
{
	int ret, err = errno;

	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	ret = write_locked(final, path_out, path_len);
	pthread_mutex_unlock(&g_lock);
	errno = err;
	return ret;
}

void rt_probe_fini(void)
{
	int err = errno;

	pthread_mutex_lock(&g_lock);
	write_locked(true, NULL, 0);
	if (g_out_errno && !g_out_reported && !g_out_off) {
		g_out_reported = true;
		fprintf(stderr, "rtune-probe: cannot write '%.300s': %s (the application was not affected)\n",
			g_out_err_path, strerror(g_out_errno));
	}
	/* the descriptor stays open (O_CLOEXEC): a later close_device from another destructor rewrites the same file */
	pthread_mutex_unlock(&g_lock);
	errno = err;
}
