// SPDX-License-Identifier: MIT
/*
 * The probe's records: the process-wide state every part shares, the lock-free lookup tables (QP by pointer, QP by
 * number, context by pointer; written under g_lock), the per-thread slabs the send path records into (mmap'd, claimed
 * lock-free, returned to the pool at thread exit with their counts kept), and folding a destroyed QP's per-thread
 * records into its aggregate. Nothing here allocates with malloc or prints.
 */
#include "probe_int.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

static struct ht_slot g_qp_slots[1u << 15], g_qpn_slots[1u << 15], g_ctx_slots[1u << 10];
struct ht g_ht_qp = { 15, g_qp_slots }, g_ht_qpn = { 15, g_qpn_slots }, g_ht_ctx = { 10, g_ctx_slots };

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_key_t g_key;
bool g_key_ok;
struct rt_probe_config g_cfg = { .sample_every = 64 };
_Atomic(struct rtp_slab *) g_slabs;
unsigned g_nslabs;
struct rtp_ctx g_ctx[RTP_MAX_CTX];
unsigned g_nctx;
struct rtp_qp *g_qps[RTP_MAX_QPS];
_Atomic unsigned g_nqp;
_Atomic uint64_t g_epoch = 1;
bool g_activity;
uint64_t g_start_ns;
bool g_forked_child;

/* Process-wide drop counters (rare paths, atomic RMW is fine there). */
_Atomic uint64_t g_posts_no_slab, g_posts_untracked_qp, g_qps_untracked, g_ctx_untracked;
_Atomic uint64_t g_wc_err_untracked, g_apply_raise_failed, g_ex_untracked;

__thread struct rtp_slab *tls_slab __attribute__((tls_model("initial-exec")));

/* Inserts or replaces key (under g_lock). Returns 0 or ENOSPC when no slot is free within the probe limit. */
int rtp_ht_put(struct ht *t, uintptr_t key, void *val)
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
void rtp_ht_del(struct ht *t, uintptr_t key)
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

/* ---- slabs ----------------------------------------------------------------------------------------------------- */

/* Adds slabs until `spare` are unowned (under g_lock). mmap'd: pages cost nothing until a thread touches them. */
void rtp_pool_ensure(unsigned spare)
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
		s->id = g_nslabs;
		atomic_store_explicit(&g_slabs, s, memory_order_release);
		g_nslabs++;
		free_n++;
	}
}

/* Thread-exit destructor: returns the slab to the pool, its counts kept for the writer and the next owner. */
void rtp_slab_release(void *p)
{
	struct rtp_slab *s = p;

	atomic_store_explicit(&s->c_key, 0, memory_order_relaxed);
	tls_slab = NULL;
	atomic_store_explicit(&s->owned, 0, memory_order_release);
}

/* Claims a free slab for this thread without locking or allocating; NULL when the pool is empty. */
struct rtp_slab *rtp_slab_attach(void)
{
	for (struct rtp_slab *s = atomic_load_explicit(&g_slabs, memory_order_acquire); s; s = s->next) {
		int zero = 0;

		if (atomic_load_explicit(&s->owned, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&s->owned, &zero, 1)) {
			atomic_store_explicit(&s->c_key, 0, memory_order_relaxed);
			tls_slab = s;
			if (g_key_ok)
				pthread_setspecific(g_key, s);
			return s;
		}
	}
	return NULL;
}

/* This thread's entry for q, claimed from its slab on first use; NULL when all entries are taken. */
struct rtp_entry *rtp_entry_get(struct rtp_slab *s, const struct rtp_qp *q)
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
void rtp_stat_add(struct rtp_qp_stat *dst, const struct rtp_qp_stat *src)
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
void rtp_stat_zero(struct rtp_qp_stat *st)
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

/* See probe_int.h. A slot's count is read before its key (acquire: the key it counts is set by then). */
void rtp_entry_expand(const struct rtp_qp *q, const struct rtp_entry *e, struct rtp_qp_stat *out)
{
	for (unsigned i = 0; i < RTP_SLOTS; i++) {
		uint64_t n = atomic_load_explicit(&e->slots[i].n, memory_order_acquire), key;
		uint32_t bytes;
		unsigned flags, hb;
		struct rtp_op_stat *st;

		if (!n)
			continue;
		key = atomic_load_explicit(&e->slots[i].key, memory_order_relaxed);
		bytes = (uint32_t)(key >> 32);
		flags = (unsigned)key & RTP_KEY_FLAGS;
		st = &out->op[rtp_op((uint32_t)(key >> 24) & 0xffu)];
		hb = rt_hist_bucket(bytes);
		CTR_ADD(st->wrs, n);
		CTR_ADD(st->bytes, n * bytes);
		CTR_ADD(st->hist[hb], n);
		MAX_PUT(st->hist_max[hb], bytes);
		if (flags & IBV_SEND_INLINE) {
			CTR_ADD(st->inl_wrs, n);
			CTR_ADD(st->inl_bytes, n * bytes);
		}
		if ((flags & IBV_SEND_SIGNALED) || q->sq_sig_all) {
			CTR_ADD(st->sig_wrs, n);
			CTR_ADD(st->sig_bytes, n * bytes);
		}
		if (key & RTP_KEY_APPLIED)
			CTR_ADD(out->apply_inline_set, n);
		CTR_ADD(out->post_calls, n);
		CTR_ADD(out->batch[0], n);
	}
}

/* See probe_int.h. */
void rtp_entry_clear_slots(struct rtp_entry *e)
{
	for (unsigned i = 0; i < RTP_SLOTS; i++) {
		CTR_SET(e->slots[i].n, 0);
		atomic_store_explicit(&e->slots[i].key, 0, memory_order_relaxed);
	}
}

/* See probe_int.h. */
void rtp_cache_drop(const void *key)
{
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		uintptr_t k = atomic_load_explicit(&s->c_key, memory_order_relaxed);

		if (k && (!key || rtp_cache_key_qp(k) == (uintptr_t)key))
			atomic_store_explicit(&s->c_key, 0, memory_order_relaxed);
	}
}

/* True when e recorded a post call: counted in its stats, or single WRs in its slots (the fast path's). */
static bool entry_posted(const struct rtp_entry *e)
{
	if (CTR_GET(e->st.post_calls))
		return true;
	for (unsigned i = 0; i < RTP_SLOTS; i++)
		if (atomic_load_explicit(&e->slots[i].n, memory_order_relaxed))
			return true;
	return false;
}

/* Moves every thread's record of q into q->agg and frees the entries (under g_lock; q is destroyed). */
void rtp_qp_fold(struct rtp_qp *q)
{
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		unsigned i = atomic_load(&s->map[q->slot]);
		struct rtp_entry *e;

		if (!i)
			continue;
		e = &s->ent[i - 1];
		if (entry_posted(e) && s->id < 64)
			q->posters_folded |= 1ull << s->id;
		else if (entry_posted(e))
			q->posters_over++;
		rtp_stat_add(&q->agg, &e->st);
		rtp_entry_expand(q, e, &q->agg);
		rtp_stat_zero(&e->st);
		rtp_entry_clear_slots(e);
		e->npend = 0;
		atomic_store(&s->map[q->slot], 0);
		atomic_store_explicit(&e->state, RTP_ENT_FREE, memory_order_release);
	}
}

unsigned rtp_qp_posters(const struct rtp_qp *q, uint64_t *mask)
{
	unsigned over = q->posters_over;

	*mask = q->posters_folded;
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		unsigned i = atomic_load(&s->map[q->slot]);

		if (!i || !entry_posted(&s->ent[i - 1]))
			continue;
		if (s->id < 64)
			*mask |= 1ull << s->id;
		else
			over++;
	}
	return (unsigned)__builtin_popcountll(*mask) + over;
}

/* Sum of q's folded and live records. */
void rtp_qp_sum(const struct rtp_qp *q, struct rtp_qp_stat *out)
{
	rtp_stat_zero(out);
	rtp_stat_add(out, &q->agg);
	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		unsigned i = atomic_load(&s->map[q->slot]);

		if (i) {
			rtp_stat_add(out, &s->ent[i - 1].st);
			rtp_entry_expand(q, &s->ent[i - 1], out);
		}
	}
}
