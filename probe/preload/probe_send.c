// SPDX-License-Identifier: MIT
/*
 * The send path: the ops.post_send wrapper every hooked context carries (count each WR by opcode class, size bucket,
 * inline and signaled; apply mode's chain rewrite; the post->completion sample's start time) and the ops.poll_cq
 * wrapper that ends the samples and counts error completions. Rules: no allocation, no printing, no global lock,
 * errno preserved, the provider's return value and *bad_wr (mapped back from apply mode's copy) returned unchanged.
 */
#include "probe_int.h"

#include <errno.h>

/* poll_cq's one-entry cache of the last QP looked up by number (per thread). */
static __thread uintptr_t tls_pq_key __attribute__((tls_model("initial-exec")));
static __thread struct rtp_qp *tls_pq __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_pq_epoch __attribute__((tls_model("initial-exec")));

/* ---- recording ------------------------------------------------------------------------------------------------- */

/* See probe_int.h: queue a sample or count it dropped, never wait. */
void rtp_lat_push(struct rtp_qp *q, uint64_t seq, uint64_t t0, uint32_t bytes, unsigned flags)
{
	if (atomic_flag_test_and_set_explicit(&q->lat_lock, memory_order_acquire)) {
		atomic_fetch_add_explicit(&q->lat_dropped, 1, memory_order_relaxed);
		return;
	}
	if (q->ring_tail - q->ring_head >= RTP_LAT_RING) {
		atomic_fetch_add_explicit(&q->lat_dropped, 1, memory_order_relaxed);
	} else {
		q->ring[q->ring_tail % RTP_LAT_RING] = (struct rtp_lat_sample){ seq, t0, bytes, (uint8_t)flags };
		q->ring_tail++;
	}
	atomic_store_explicit(&q->ring_n, q->ring_tail - q->ring_head, memory_order_relaxed);
	atomic_flag_clear_explicit(&q->lat_lock, memory_order_release);
}

/* Tells an SQ-full ENOMEM from the other causes providers report with ENOMEM, using the failing WR and q's caps. */
void rtp_classify_error(const struct rtp_qp *q, struct rtp_entry *e, int ret, const struct ibv_send_wr *bad)
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

/* Whether bad is one of the WRs of the chain sent (bounded by the longest chain a provider could have taken). */
static bool bad_in_chain(const struct ibv_send_wr *sent, const struct ibv_send_wr *bad)
{
	unsigned n = 0;

	for (const struct ibv_send_wr *w = sent; w && n < (1u << 20); w = w->next, n++)
		if (w == bad)
			return true;
	return false;
}

/*
 * Everything after the provider's post_send except the plain success of the histogram-only path: records the WRs
 * before bad_wr, classifies the error, maps bad_wr back from apply mode's copy, queues latency samples. The probe
 * never writes *bad_wr before the call: after a failure, a *bad_wr that names none of the WRs sent means the provider
 * did not set it (or set it to something else), and nothing is known to be posted; *bad_wr is then left as the
 * provider left it, as the application would have seen it without the probe. (Should a provider that does not set it
 * leave a stale application value that happens to name a WR of the same chain, the WRs before it are counted as
 * posted: counters only, never what the application gets.) errno as the provider left it.
 */
static __attribute__((noinline)) int post_send_after(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
						     struct ibv_send_wr *sent, struct ibv_send_wr **bad_wr, int ret,
						     unsigned ncopy, struct rtp_rec *rc, uint64_t t0)
{
	struct ibv_send_wr *stop = NULL, *w;
	unsigned n = 0, nchain;
	bool unknown_bad = false;
	int err = errno;

	if (unlikely(ret)) {
		if (bad_in_chain(sent, *bad_wr)) {
			stop = *bad_wr;
		} else {
			unknown_bad = true;
			stop = sent;
		}
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
		rtp_classify_error(q, e, ret, unknown_bad ? NULL : stop);
		CTR_ADD(e->st.wrs_not_posted, nchain - n);
		if (ncopy && !unknown_bad && *bad_wr >= s->wr_copy && *bad_wr < s->wr_copy + ncopy)
			*bad_wr = s->wr_orig[*bad_wr - s->wr_copy];
	}
	record_batch(e, nchain);
	if (rc->nsig && g_cfg.sample_every)
		finish_samples(q, s, rc, t0);
	errno = err;
	return ret;
}

/* A failed post on the cached QP without sampling state to carry: see post_send_after(). */
static __attribute__((noinline)) int post_send_failed(struct rtp_slab *s, struct ibv_send_wr *wr,
						      struct ibv_send_wr **bad_wr, int ret)
{
	struct rtp_rec rc = { 0 };

	return post_send_after(s->c_q, s->c_e, s, wr, bad_wr, ret, 0, &rc, 0);
}

/*
 * Counts a successful one-WR post of key_lo (rtp_slot_key) and bytes in e's slot for them: the first of
 * RTP_SLOT_PROBE slots from its home that holds it, or the first free one, claimed. Returns the slot's count before
 * this post plus 1 (1 for a key this slot has just taken); 0, counting nothing, when no slot holds it or the key has
 * no slot (RTP_KEY_NONE; the caller counts the WR directly).
 */
static __attribute__((noinline)) uint64_t slot_count_probe(struct rtp_entry *e, uint64_t key_lo, uint32_t bytes)
{
	uint64_t key = key_lo | rtp_slot_bytes(bytes);
	unsigned h = rtp_slot_home(key);

	if (unlikely(!rtp_slot_count_ok(key_lo)))
		return 0;
	for (unsigned i = 0; i < RTP_SLOT_PROBE; i++) {
		struct rtp_slot *sl = &e->slots[(h + i) & (RTP_SLOTS - 1)];
		uint64_t n = CTR_GET(sl->n);

		if (atomic_load_explicit(&sl->key, memory_order_relaxed) == key) {
			CTR_SET(sl->n, n + 1);
			return n + 1;
		}
		if (!n) {
			atomic_store_explicit(&sl->key, key, memory_order_relaxed);
			atomic_store_explicit(&sl->n, 1, memory_order_release);
			return 1;
		}
	}
	return 0;
}

/* slot_count_probe(), the key's home looked at inline first (where a key of an entry with few keys sits). */
static inline uint64_t slot_count_key_n(struct rtp_entry *e, uint64_t key_lo, uint32_t bytes)
{
	uint64_t key = key_lo | rtp_slot_bytes(bytes);
	struct rtp_slot *sl = &e->slots[rtp_slot_home(key)];

	if (likely(atomic_load_explicit(&sl->key, memory_order_relaxed) == key && rtp_slot_count_ok(key_lo))) {
		uint64_t n = CTR_GET(sl->n) + 1;

		CTR_SET(sl->n, n); /* n == 1: key 0 in a free slot, which already holds that key */
		return n;
	}
	return slot_count_probe(e, key_lo, bytes);
}

/* slot_count_key_n() of the one-WR post w, bytes long, as a yes/no: whether a slot counted it. */
static inline bool slot_count(struct rtp_entry *e, const struct ibv_send_wr *w, uint32_t bytes)
{
	return slot_count_key_n(e, rtp_slot_key(w), bytes) != 0;
}

/* Sampling and/or apply mode: look at the chain before posting (copy it for apply mode, take t0 for a sample). */
static __attribute__((noinline)) int post_send_full(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
						    struct ibv_qp *qp, struct ibv_send_wr *wr,
						    struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *sent = wr, *w;
	struct rtp_rec rc = { 0 };
	unsigned ncopy = 0, nsig = 0, need = 0, len = 0;
	uint64_t t0 = 0, mask = 0;
	int ret;

	for (w = wr; w; w = w->next) {
		if (q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED))
			nsig++;
		if (q->apply_limit && !q->ctl && rtp_apply_wants(q, w)) {
			need++;
			if (len < 64)
				mask |= 1ull << len;
		}
		len++;
	}
	if (q->ctl && len <= RTP_APPLY_MAX_WRS) {
		mask = rtp_apply_ctl_decide(q, wr, &rc);
		need = mask != 0;
	}
	if (need) {
		if (len > RTP_APPLY_MAX_WRS)
			CTR_ADD(e->st.apply_chain_too_long, 1);
		else
			sent = rtp_apply_copy(q, s, wr, &ncopy, mask);
	}
	if (rc.ctl_k || (g_cfg.sample_every && nsig && s->sample_ctr + nsig >= g_cfg.sample_every)) {
		int err = errno;

		rc.timing = true;
		t0 = now_ns();
		errno = err;
	}
	ret = q->post_send(qp, sent, bad_wr);
	if (likely(ret == 0 && len == 1 && !ncopy) && slot_count(e, wr, wr_bytes(wr))) {
		/* one WR posted as the application built it: its slot counted it, only the sampling is left */
		if (nsig && g_cfg.sample_every) {
			rc.nsig = 1;
			if (++s->sample_ctr >= g_cfg.sample_every) {
				s->sample_ctr = 0;
				if (rc.timing)
					rc.samp_k[rc.nsamp++] = 1;
			}
			finish_samples(q, s, &rc, t0);
		}
		return 0;
	}
	return post_send_after(q, e, s, sent, bad_wr, ret, ncopy, &rc, t0);
}

/*
 * Histogram-only mode, after a successful post that the slot fast path did not count (a chain, several SGEs, or a
 * slot holding another key): counts each WR and the post in this thread's entry. Returns 0 (the provider's value).
 */
static __attribute__((noinline)) int record_chain(struct rtp_qp *q, struct rtp_entry *e, struct rtp_slab *s,
						  struct ibv_send_wr *wr)
{
	struct rtp_rec rc = { 0 }; /* only nsig is used without sampling */
	unsigned n = 0;

	if (wr && !wr->next && slot_count(e, wr, wr_bytes(wr)))
		return 0;
	for (struct ibv_send_wr *w = wr; w; w = w->next, n++)
		record_wr(q, e, s, rtp_op(w->opcode), wr_bytes(w), w->send_flags & IBV_SEND_INLINE,
			  w->send_flags & IBV_SEND_SIGNALED, &rc, false);
	record_batch(e, n);
	return 0;
}

/*
 * The histogram-only count of the one-WR post wr that succeeded on s's cached QP: its home slot when that holds its key
 * (a compare and an increment), else record_chain() (a chain, several SGEs, or a slot holding another key). Returns 0.
 */
static inline __attribute__((always_inline)) int count_posted(struct rtp_slab *s, struct ibv_send_wr *wr)
{
	struct rtp_entry *e = s->c_e;

	if (likely(wr && !wr->next && wr->num_sge == 1)) {
		uint64_t key_lo = rtp_slot_key(wr), key = key_lo | rtp_slot_bytes(wr->sg_list[0].length);
		struct rtp_slot *sl = &e->slots[rtp_slot_home(key)];

		/* one compare: a key_lo of RTP_KEY_NONE has bit 32 set, and a slot that holds it is never looked up */
		if (likely(atomic_load_explicit(&sl->key, memory_order_relaxed) == key && rtp_slot_count_ok(key_lo))) {
			CTR_ADD(sl->n, 1);
			return 0;
		}
	}
	return record_chain(s->c_q, e, s, wr);
}

/* One field of an application's WR read at its own width (see rtp_slot_key: no merged, wider load). */
#define RD_FIELD(x) (*(const volatile __typeof__(x) *)&(x))

/*
 * Copies the one-WR, one-SGE post w (a SEND or RDMA WRITE, with or without immediate: the opcodes apply mode inlines)
 * into d with send_flags flags and opcode as read by the caller, no next: the fields a provider reads for that opcode on
 * that QP. Always the WR id, the SGE list and the immediate (the SGE count is 1); the address union (an RDMA WRITE's
 * remote address and key, a UD send's address handle, QPN and Q_Key) and the XRC SRQ number only for an RDMA WRITE or
 * on a QP that is not RC or UC (addr: q->wr_addr). The rest (an atomic's values, the memory-window bind and TSO union,
 * the address union of an RC SEND) is not copied: d keeps what an earlier copy left there, which no provider reads for
 * these opcodes. Each field is read once at its own width: a block copy would load the fields the application has
 * just written with wider loads that stall behind its stores.
 */
static inline void wr_copy_one(struct ibv_send_wr *d, const struct ibv_send_wr *w, uint32_t flags, uint32_t opcode,
			       bool addr)
{
	d->wr_id = RD_FIELD(w->wr_id);
	d->next = NULL;
	d->sg_list = RD_FIELD(w->sg_list);
	d->num_sge = 1; /* the caller checked it */
	d->opcode = (enum ibv_wr_opcode)opcode;
	d->send_flags = flags;
	d->imm_data = RD_FIELD(w->imm_data);
	if (opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM || addr) {
		d->wr.rdma.remote_addr = RD_FIELD(w->wr.rdma.remote_addr); /* also ud.ah */
		d->wr.ud.remote_qpn = RD_FIELD(w->wr.ud.remote_qpn);	   /* also rdma.rkey */
		d->wr.ud.remote_qkey = RD_FIELD(w->wr.ud.remote_qkey);
		d->qp_type.xrc.remote_srqn = RD_FIELD(w->qp_type.xrc.remote_srqn);
	}
}

/*
 * Apply fast path, a send of b bytes in q's watched bands for which this thread holds no watched sends of the
 * controller's countdown: under the controller's lock, steps the countdown (rt_inline_ctl_decide: a pick on a WR the
 * application did not signal cannot be timed and is decided by the threshold, as in rtp_apply_ctl_decide), then takes
 * the watched sends before the next sample for this thread's next ones (rt_inline_ctl_take_watched, at most
 * RTP_CTL_TAKE: they are decided from the mirror without the lock, as the controller would). Returns 1 (inline) or 0;
 * -1 when the send must go the full way: the lock busy, the size no longer watched, an empty WR, or a signaled send the
 * controller may time. Never blocks, allocates or touches errno.
 */
static __attribute__((noinline)) int apply_band_visit(struct rtp_qp *q, struct rtp_slab *s, uint32_t b, bool sig)
{
	const struct rt_inline_ctl_hot *h = (const struct rt_inline_ctl_hot *)(const void *)q->ctl;
	unsigned f;

	if (!b || atomic_flag_test_and_set_explicit(&q->ctl_lock, memory_order_acquire))
		return -1;
	if (b - h->watch_lo > h->watch_span || (sig && h->countdown <= 1)) {
		atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
		return -1;
	}
	f = rt_inline_ctl_decide(q->ctl, b);
	if (f & RT_INLINE_CTL_SAMPLE)
		f = b < rt_inline_ctl_threshold(q->ctl) + 1u ? RT_INLINE_CTL_INLINE : 0u;
	s->ctl_band_q = q;
	s->ctl_band_left = rt_inline_ctl_take_watched(q->ctl, RTP_CTL_TAKE);
	/* the controller asked for frequent looks again (its bands or threshold changed): this thread follows */
	if (s->ctl_outside > h->outside + RTP_CTL_LOOK_MIN)
		s->ctl_outside = h->outside + RTP_CTL_LOOK_MIN;
	rtp_apply_ctl_mirror(q);
	atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
	return (f & RT_INLINE_CTL_INLINE) != 0;
}

/* Apply mode's one-WR post of key (as posted) failed: see post_send_after() (the copy, when posted, is mapped back). */
static __attribute__((noinline)) int apply_failed(struct rtp_slab *s, struct ibv_send_wr *wr,
						  struct ibv_send_wr **bad_wr, int ret, uint64_t key)
{
	struct rtp_rec rc = { 0 };
	bool copy = key & RTP_KEY_APPLIED;

	s->wr_orig[0] = wr; /* the copy's original, for post_send_after's mapping */
	return post_send_after(s->c_q, s->c_e, s, copy ? &s->wr_copy[0] : wr, bad_wr, ret, copy, &rc, 0);
}

/*
 * Apply mode's one-WR post of key (as posted) that found no slot: counts it directly (record_chain) and in
 * apply_inline_set when the probe inlined it; outside the controller's bands the thread's own countdown paces the
 * looks at such a key.
 */
static __attribute__((noinline)) void apply_count_direct(struct rtp_slab *s, struct ibv_send_wr *wr, uint64_t key,
							 bool outside)
{
	struct rtp_qp *q = s->c_q;
	struct rtp_entry *e = s->c_e;

	record_chain(q, e, s, key & RTP_KEY_APPLIED ? &s->wr_copy[0] : wr);
	if (key & RTP_KEY_APPLIED)
		CTR_ADD(e->st.apply_inline_set, 1);
	if (outside && s->ctl_outside-- == 0)
		rtp_apply_ctl_outside(q, s, wr->sg_list[0].length);
}

/*
 * Apply mode, the common case: a one-WR, one-SGE SEND or RDMA WRITE the application did not inline, not the one the
 * latency sampling times, decided from the QP's fixed limit or the controller's mirrored threshold without its lock:
 * outside the controller's watched bands (such sends are shown to the controller at its rate of looks,
 * rtp_apply_ctl_outside), or in them when this thread holds watched sends taken from the controller's countdown
 * (apply_band_visit takes them, and decides the send that reaches the sample unless it was signaled). A WR to inline is
 * posted as this thread's copy with IBV_SEND_INLINE added (the application's WR is never written); it is counted in
 * its slot as posted. Anything else goes to post_send_full(). The provider's return value and *bad_wr (mapped back to
 * the application's WR), errno as the provider left it.
 */
static __attribute__((noinline)) int post_send_apply(struct ibv_qp *qp, struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad_wr, struct rtp_slab *s)
{
	struct rtp_qp *q = s->c_q;
	struct ibv_send_wr *sent = wr;
	uint32_t b, flags, opcode;
	uint64_t key, n, look = ~0ull;
	bool sig, inl;
	int ret;

	flags = wr ? wr->send_flags : 0;
	opcode = wr ? wr->opcode : 0;
	/* the opcodes apply mode inlines: IBV_WR_RDMA_WRITE(_WITH_IMM) 0 and 1, IBV_WR_SEND(_WITH_IMM) 2 and 3 */
	if (unlikely(!wr || wr->next || wr->num_sge != 1 || (flags & IBV_SEND_INLINE) || opcode > IBV_WR_SEND_WITH_IMM))
		return post_send_full(q, s->c_e, s, qp, wr, bad_wr);
	sig = s->c_sig_all || (flags & IBV_SEND_SIGNALED);
	if (unlikely(sig && s->c_every && s->sample_ctr + 1 >= s->c_every))
		return post_send_full(q, s->c_e, s, qp, wr, bad_wr); /* this WR is the one timed */
	b = wr->sg_list[0].length;
	if (q->ctl) {
		uint32_t lo = atomic_load_explicit(&q->ctl_watch_lo, memory_order_relaxed);

		if (unlikely(b - lo <= atomic_load_explicit(&q->ctl_watch_span, memory_order_relaxed))) {
			if (likely(s->ctl_band_left && s->ctl_band_q == q)) {
				/* a watched send this thread took from the countdown: not the sample */
				s->ctl_band_left--;
				inl = b < atomic_load_explicit(&q->ctl_limit_excl, memory_order_relaxed);
			} else {
				int v = apply_band_visit(q, s, b, sig);

				if (v < 0)
					return post_send_full(q, s->c_e, s, qp, wr, bad_wr);
				inl = v;
			}
		} else {
			inl = b < atomic_load_explicit(&q->ctl_limit_excl, memory_order_relaxed);
			/* looked at below, at the controller's rate of looks: the nearest sizes re-target its bands */
			look = atomic_load_explicit(&q->ctl_look_mask, memory_order_relaxed);
		}
	} else {
		inl = b <= apply_lim_of(q, rtp_op(opcode));
	}
	/*
	 * The slot key from the fields as read once (not re-read from the copy); a WR this path inlines carries
	 * RTP_KEY_APPLIED in it (the writer counts it in apply_inline_set). What the accounting after the call needs is
	 * in the key, look and the slab, so that little lives across the provider's call.
	 */
	if (unlikely(flags & ~RTP_KEY_FLAGS))
		return post_send_full(q, s->c_e, s, qp, wr, bad_wr); /* no slot key (opcode checked above) */
	key = (uint64_t)opcode << 24 | flags;
	if (inl && b) {
		key |= IBV_SEND_INLINE | RTP_KEY_APPLIED;
		sent = &s->wr_copy[0];
		wr_copy_one(sent, wr, flags | IBV_SEND_INLINE, opcode, q->wr_addr);
	}
	ret = s->c_post(qp, sent, bad_wr);
	if (unlikely(ret))
		return apply_failed(s, wr, bad_wr, ret, key);
	b = wr->sg_list[0].length;
	n = slot_count_key_n(s->c_e, key, b);
	if (unlikely(!n)) {
		apply_count_direct(s, wr, key, look != ~0ull);
	} else if (unlikely(!((n - 1) & look))) {
		/* outside the bands, the first send of a key in this thread's slots, then one in look_mask + 1 of its
		   sends: no per-post countdown, and a size pattern cannot hide a size from the looks (each key counts its
		   own sends); elsewhere (look all ones) only a key's first send, which the controller takes for a stale
		   view of its bands (a watched size) or, without a controller, is not shown at all */
		rtp_apply_ctl_outside(s->c_q, s, b);
	}
	if ((s->c_sig_all || (key & IBV_SEND_SIGNALED)) && s->c_every) {
		struct rtp_qp *qq = s->c_q;

		s->sample_ctr++;
		if (likely(s->c_own))
			atomic_store_explicit(&qq->sig_own,
					      atomic_load_explicit(&qq->sig_own, memory_order_relaxed) + 1,
					      memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&qq->sig_shared, 1, memory_order_relaxed);
	}
	return 0;
}

/*
 * Sampling mode through slab s, whose cache holds qp. The common post, one unsignaled WR with one SGE on a QP that does
 * not signal every WR, touches no sampling state (only signaled WRs advance the sampling counter): it is posted and
 * counted as on the histogram-only path. A signaled one that is not the one timed is posted, counted in its slot, and
 * advances the sampling counter and the QP's signaled sequence (the owner slab without an atomic RMW). Anything else
 * goes to post_send_full(). The provider's return value, errno untouched. The arguments are the provider's in their
 * order, then the slab: rtp_w_post_send() reaches it with a jump.
 */
static __attribute__((noinline)) int post_send_sampling(struct ibv_qp *qp, struct ibv_send_wr *wr,
							struct ibv_send_wr **bad_wr, struct rtp_slab *s)
{
	struct rtp_qp *q;
	int ret;

	if (unlikely(!wr || wr->next || wr->num_sge != 1))
		return post_send_full(s->c_q, s->c_e, s, qp, wr, bad_wr);
	if (likely(!(wr->send_flags & IBV_SEND_SIGNALED) && !s->c_sig_all)) {
		ret = s->c_post(qp, wr, bad_wr);
		if (unlikely(ret))
			return post_send_failed(s, wr, bad_wr, ret);
		return count_posted(s, wr);
	}
	if (unlikely(s->sample_ctr + 1 >= s->c_every))
		return post_send_full(s->c_q, s->c_e, s, qp, wr, bad_wr); /* this WR is the one timed */
	ret = s->c_post(qp, wr, bad_wr);
	if (unlikely(ret))
		return post_send_failed(s, wr, bad_wr, ret);
	if (unlikely(!slot_count(s->c_e, wr, wr->sg_list[0].length)))
		record_chain(s->c_q, s->c_e, s, wr);
	q = s->c_q;
	s->sample_ctr++;
	if (likely(s->c_own))
		atomic_store_explicit(&q->sig_own, atomic_load_explicit(&q->sig_own, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&q->sig_shared, 1, memory_order_relaxed);
	return 0;
}

/* The post on a QP this thread's cache holds in sampling or apply mode: the path of that mode. */
static inline __attribute__((always_inline)) int post_send_cached(struct rtp_slab *s, struct ibv_qp *qp,
								  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	if (s->c_apply)
		return post_send_apply(qp, wr, bad_wr, s);
	return post_send_sampling(qp, wr, bad_wr, s);
}

/*
 * Histogram-only mode through slab s, whose cache holds qp: post, then count a one-WR, one-SGE post in its slot (a
 * compare and an increment), anything else in record_chain(). errno is not touched here (nothing called sets it), the
 * provider's return value is returned as is. Its own function, reached from rtp_w_post_send() by one jump after one
 * compare, so that only what lives across the provider's call is saved (three registers), and the sampling and apply
 * paths keep theirs; arguments ordered as post_send_sampling's.
 */
static __attribute__((noinline)) int post_send_hist(struct ibv_qp *qp, struct ibv_send_wr *wr,
						    struct ibv_send_wr **bad_wr, struct rtp_slab *s)
{
	int ret = s->c_post(qp, wr, bad_wr);

	if (unlikely(ret))
		return post_send_failed(s, wr, bad_wr, ret);
	return count_posted(s, wr);
}

/*
 * The post on a QP this thread's cache does not hold: look it up, claim a slab and an entry (forward uncounted when
 * there are none), cache them and take the path of the QP's mode.
 */
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
		s = rtp_slab_attach();
	if (unlikely(!s)) {
		atomic_fetch_add_explicit(&g_posts_no_slab, 1, memory_order_relaxed);
		return q->post_send(qp, wr, bad_wr);
	}
	e = rtp_entry_get(s, q);
	if (unlikely(!e)) {
		CTR_ADD(s->posts_no_entry, 1);
		return q->post_send(qp, wr, bad_wr);
	}
	if (rtp_cache_fill(s, qp, q, e))
		return post_send_cached(s, qp, wr, bad_wr);
	return post_send_hist(qp, wr, bad_wr, s);
}

/*
 * ops.post_send of every hooked context: this thread's cached QP, its key compared with and without RTP_CACHE_FULL
 * (the histogram-only path first), else the slow path.
 */
int rtp_w_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct rtp_slab *s = tls_slab;

	if (likely(s)) {
		uintptr_t k = atomic_load_explicit(&s->c_key, memory_order_relaxed);

		if (likely(k == (uintptr_t)qp))
			return post_send_hist(qp, wr, bad_wr, s);
		if (k == ((uintptr_t)qp | RTP_CACHE_FULL))
			return post_send_cached(s, qp, wr, bad_wr);
	}
	return w_post_send_slow(qp, wr, bad_wr);
}

/* ---- ops.poll_cq ----------------------------------------------------------------------------------------------- */

/* The QP of number qp_num on c (a one-entry per-thread cache, then the table); NULL when untracked. */
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
		if (r->flags & RTP_SAMP_CTL)
			rtp_apply_ctl_sample(q, r->bytes, r->flags & RTP_SAMP_INLINE, lat);
		if (!(r->flags & RTP_SAMP_STATS))
			continue;
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

/* ops.poll_cq of every hooked context: the provider's result and errno, after counting what it returned. */
int rtp_w_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct rtp_ctx *c = ctx_of(cq->context);
	struct rtp_qp *run_q = NULL;
	unsigned run_n = 0;
	uint32_t run_qpn = 0;
	bool sampling = g_cfg.sample_every != 0;
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
		} else if (sampling && !(wc[i].opcode & IBV_WC_RECV)) {
			/* runs of completions of one QP are accounted at once, looked up once */
			if (unlikely(!run_n || wc[i].qp_num != run_qpn)) {
				if (run_q)
					wc_send_done(run_q, run_n, &now);
				run_qpn = wc[i].qp_num;
				run_q = qp_by_num(c, run_qpn);
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
