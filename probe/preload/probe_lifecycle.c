// SPDX-License-Identifier: MIT
/*
 * The probe's lifecycle and interposition: the rt_probe_<verb>() entry points preload.c's exported symbols forward to
 * (open, import and close a device; create, modify and destroy QPs and CQs; ibv_qp_to_qp_ex), hooking each context's
 * ops.post_send/ops.poll_cq and its verbs_context create_qp_ex/create_cq_ex, registering every QP (with apply mode's
 * raised max_inline_data when asked), init from the environment, configuration, and the fork handlers that give a
 * child its own empty record. Every entry point returns what the real verb returned, with its errno.
 */
#include "probe_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

struct rt_probe_real rt_probe_real;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ---- contexts and QPs ------------------------------------------------------------------------------------------ */

static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);

/* Hooks ctx (under g_lock); returns its record, or NULL when the table is full. */
static struct rtp_ctx *ctx_hook_locked(struct ibv_context *ctx)
{
	struct rtp_ctx *c = ctx_of(ctx);
	struct verbs_context *vctx;

	g_activity = true;
	if (c && !c->closed && ctx->ops.post_send == rtp_w_post_send)
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
	if (ctx->ops.post_send != rtp_w_post_send)
		c->post_send = ctx->ops.post_send;
	if (ctx->ops.poll_cq != rtp_w_poll_cq)
		c->poll_cq = ctx->ops.poll_cq;
	if (rtp_ht_put(&g_ht_ctx, (uintptr_t)ctx, c)) {
		atomic_fetch_add(&g_ctx_untracked, 1);
		return NULL;
	}
	rtp_pool_ensure(RTP_POOL_SPARE * 2);
	if (c->post_send)
		ctx->ops.post_send = rtp_w_post_send;
	if (c->poll_cq)
		ctx->ops.poll_cq = rtp_w_poll_cq;
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

/* See probe_core.h: 0, or ENOSPC (the context then runs unobserved). */
int rt_probe_hook_context(struct ibv_context *ctx)
{
	struct rtp_ctx *c;

	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	c = ctx_hook_locked(ctx);
	pthread_mutex_unlock(&g_lock);
	return c ? 0 : ENOSPC;
}

/* ctx's record, hooking ctx first when the probe has not seen it (or saw it closed); NULL when the table is full. */
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
	q->wr_addr = type != IBV_QPT_RC && type != IBV_QPT_UC;
	q->max_inline_data = cap->max_inline_data;
	q->max_send_wr = cap->max_send_wr;
	q->max_send_sge = cap->max_send_sge;
	q->max_recv_wr = cap->max_recv_wr;
	q->req_max_inline_data = req_inline;
	q->inline_raised = raised;
	q->ex_send = want_qpx;
	q->sq_sig_all = sq_sig_all != 0;
	q->via_ex = via_ex;
	atomic_flag_clear(&q->lat_lock);
	for (int k = 0; k < 2; k++) {
		q->apply_lim[k] = lim[k] < q->max_inline_data ? lim[k] : q->max_inline_data;
		if (q->apply_lim[k] > q->apply_limit)
			q->apply_limit = q->apply_lim[k];
	}
	rtp_apply_ctl_create(q);
	if (rtp_ht_put(&g_ht_qp, (uintptr_t)qp, q)) {
		free(q);
		atomic_fetch_add(&g_qps_untracked, 1);
		goto out;
	}
	rtp_ht_put(&g_ht_qpn, qpn_key(c, q->qp_num), q);
	g_qps[slot] = q;
	atomic_store(&g_nqp, slot + 1);
	c->qps++;
	rtp_pool_ensure(RTP_POOL_SPARE);
	if (want_qpx && rt_probe_real.qp_to_qp_ex) {
		struct ibv_qp_ex *qx = rt_probe_real.qp_to_qp_ex(qp);

		if (qx)
			rtp_qpx_wrap(q, qx);
	}
out:
	pthread_mutex_unlock(&g_lock);
}

/*
 * verbs_context create_qp_ex (ibv_create_qp_ex): apply mode's raised max_inline_data first, the application's caps
 * again when the raise fails; the provider's QP or NULL with its errno.
 */
static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct rtp_ctx *c = ctx_of(ctx);
	struct ibv_qp_cap saved;
	struct ibv_qp *qp;
	uint32_t lim[2], want;
	bool raised = false, ex_send;
	int err;

	if (unlikely(!c || !c->create_qp_ex)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	saved = attr->cap;
	rtp_apply_for(c, attr->qp_type, lim, &want);
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
	ex_send = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && attr->send_ops_flags;
	qp_register(qp, c, attr->qp_type, &attr->cap, attr->sq_sig_all, saved.max_inline_data, raised, true, ex_send,
		    lim);
	/* the raise is the probe's own: the application sees what it asked for (docs/probe.md); not on the extended
	 * send API, where the application's own IBV_SEND_INLINE is the one that works on every provider */
	if (raised && !ex_send)
		attr->cap.max_inline_data = saved.max_inline_data;
	errno = err;
	return qp;
}

/* verbs_context create_cq_ex: forwarded, counted; the provider's CQ or NULL with its errno. */
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

/* See probe_core.h. Hooks the context it opened; ENOSYS when the real verb is missing. */
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

/* See probe_core.h. Hooks the imported context; EOPNOTSUPP when the real verb is missing. */
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

/* See probe_core.h. A closed context is marked and the JSON rewritten (its counts are kept). */
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

/* See probe_core.h. Apply mode's raised max_inline_data first, the application's caps again when it fails. */
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
	rtp_apply_for(c, attr->qp_type, lim, &want);
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
	if (raised) /* the raise is the probe's own: the application sees what it asked for (docs/probe.md) */
		attr->cap.max_inline_data = saved.max_inline_data;
	errno = err;
	return qp;
}

/* See probe_core.h. A destroyed QP's records are folded into its aggregate and the thread caches invalidated. */
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
			rtp_ht_del(&g_ht_qp, (uintptr_t)qp);
			if (ht_get(&g_ht_qpn, qpn_key(q->ctx, q->qp_num)) == q)
				rtp_ht_del(&g_ht_qpn, qpn_key(q->ctx, q->qp_num));
			atomic_fetch_add_explicit(&g_epoch, 1, memory_order_release);
			rtp_cache_drop(qp);
			if (q->qpx && (void *)q->qpx != (void *)qp)
				rtp_cache_drop(q->qpx);
			rtp_qp_fold(q);
			q->destroyed = true;
			q->qpx = NULL;
		}
		pthread_mutex_unlock(&g_lock);
	}
	errno = err;
	return ret;
}

/* See probe_core.h. Counts the CQ and its size on its context. */
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

/* See probe_core.h. Forwarded. */
int rt_probe_destroy_cq(struct ibv_cq *cq)
{
	rt_probe_init();
	if (!rt_probe_real.destroy_cq)
		return ENOSYS;
	return rt_probe_real.destroy_cq(cq);
}

/* See probe_core.h. At RTS the QP's wr_* pointers are wrapped again (providers may replace them there). */
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
			rtp_qpx_wrap(q, q->qpx);
			q->ex_rewraps++;
			pthread_mutex_unlock(&g_lock);
		}
	}
	errno = err;
	return ret;
}

/*
 * See probe_core.h. An application that sets IBV_SEND_INLINE itself for every size up to the reported
 * max_inline_data (ibv_rc_pingpong does) would otherwise inline up to the probe's raise on its own, and apply mode
 * (which never undoes an application's IBV_SEND_INLINE) would decide nothing above what it asked for.
 */
int rt_probe_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct rtp_qp *q;
	int ret, err;

	rt_probe_init();
	if (!rt_probe_real.query_qp)
		return ENOSYS;
	ret = rt_probe_real.query_qp(qp, attr, attr_mask, init_attr);
	if (ret)
		return ret;
	err = errno;
	q = qp ? ht_get(&g_ht_qp, (uintptr_t)qp) : NULL;
	if (q && q->inline_raised && !q->ex_send) {
		/* at most what the provider reported: a grant of at least what was asked stays within the contract */
		if (attr && attr->cap.max_inline_data > q->req_max_inline_data)
			attr->cap.max_inline_data = q->req_max_inline_data;
		if (init_attr && init_attr->cap.max_inline_data > q->req_max_inline_data)
			init_attr->cap.max_inline_data = q->req_max_inline_data;
	}
	errno = err;
	return 0;
}

/* See probe_core.h. Wraps the returned ibv_qp_ex's wr_* pointers when the QP is tracked. */
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
		rtp_qpx_wrap(q, qx);
		pthread_mutex_unlock(&g_lock);
	}
	errno = err;
	return qx;
}

/* ---- init, fork, exit ------------------------------------------------------------------------------------------ */

/* Fork: hold g_lock across fork() so the child gets a consistent record. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
}

/* Fork, in the parent: release g_lock. */
static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_lock);
}

/* Clears every record as a forked child starts (under g_lock): the parent's counts are the parent's. Cannot fail. */
static void reset_locked(void)
{
	struct rtp_slab *mine = tls_slab;

	for (struct rtp_slab *s = atomic_load(&g_slabs); s; s = s->next) {
		/*
		 * Acquire pairs with rtp_slab_release() (a thread that exited, joined or not, before the fork): its last writes
		 * to the slab happen before ours. A free slab's c_key is already NULL. A slab still owned belonged to a
		 * thread the child does not have.
		 */
		if (atomic_load_explicit(&s->owned, memory_order_acquire) && s != mine)
			atomic_store(&s->owned, 0);
		atomic_store(&s->c_key, 0); /* the next post claims the QP's sequence ownership again (reset below) */
		s->sample_ctr = 0;
		s->ctl_band_left = 0;
		CTR_SET(s->posts_no_entry, 0);
		for (unsigned k = 0; k < RTP_SLAB_ENTRIES; k++) {
			if (atomic_load(&s->ent[k].state) == RTP_ENT_USED) {
				rtp_stat_zero(&s->ent[k].st);
				rtp_entry_clear_slots(&s->ent[k]);
				s->ent[k].npend = 0;
			}
		}
	}
	for (unsigned i = 0; i < atomic_load(&g_nqp); i++) {
		struct rtp_qp *q = g_qps[i];

		rtp_stat_zero(&q->agg);
		q->posters_folded = 0;
		q->posters_over = 0;
		atomic_flag_clear(&q->lat_lock);
		atomic_store(&q->owner, NULL); /* the owner may be a slab of a thread the child does not have */
		atomic_store(&q->sig_own, 0);
		atomic_store(&q->sig_shared, 0);
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
	rtp_writer_reset_child();
	g_activity = false;
	g_forked_child = true;
	g_start_ns = now_ns();
}

/* Fork, in the child: a fresh g_lock (the parent's holder does not exist here), then empty records. */
static void atfork_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	reset_locked();
}

/* See probe_core.h. */
void rt_probe_reset_for_child(void)
{
	pthread_mutex_lock(&g_lock);
	reset_locked();
	pthread_mutex_unlock(&g_lock);
}

/* Parses a decimal count <= max into *out; false (nothing written) for anything else. */
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

/* The adaptive apply mode learns from the latency ring: without RTUNE_PROBE_SAMPLE it still needs the poll path. */
static void adaptive_needs_sampling(void)
{
	if (g_cfg.apply_adaptive && !g_cfg.sample_every)
		g_cfg.sample_every = 64;
}

/* See rt_probe_init() in probe_core.h. Bad settings are reported on stderr once and ignored. */
static void init_once(void)
{
	const char *v;

	g_start_ns = now_ns();
	rtp_writer_init();
	if ((v = rtp_env("RTUNE_PROBE_SAMPLE")) && !parse_u32(v, 1u << 30, &g_cfg.sample_every))
		fprintf(stderr, "rtune-probe: ignoring RTUNE_PROBE_SAMPLE='%.64s': not a count\n", v);
	if ((v = rtp_env("RTUNE_INLINE_THRESHOLD")) && *v) {
		if (!parse_u32(v, 1u << 20, &g_cfg.apply_threshold)) {
			fprintf(stderr, "rtune-probe: ignoring RTUNE_INLINE_THRESHOLD='%.64s': not a byte count\n", v);
			g_cfg.apply_threshold = 0;
		} else {
			g_cfg.apply_max_inline = g_cfg.apply_threshold;
			snprintf(g_cfg.apply_source, sizeof(g_cfg.apply_source), "RTUNE_INLINE_THRESHOLD");
		}
	}
	g_key_ok = pthread_key_create(&g_key, rtp_slab_release) == 0;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (!g_cfg.apply_threshold && (v = rtp_env("RTUNE_PROFILE")) && *v && rt_probe_load_profile(v))
		fprintf(stderr, "rtune-probe: ignoring RTUNE_PROFILE='%.200s': no readable profile entries\n", v);
	if ((v = rtp_env("RTUNE_APPLY_ADAPTIVE")) && *v) {
		if (strcmp(v, "1") && strcmp(v, "0"))
			fprintf(stderr, "rtune-probe: ignoring RTUNE_APPLY_ADAPTIVE='%.64s': not 0 or 1\n", v);
		g_cfg.apply_adaptive = strcmp(v, "1") == 0;
	}
	adaptive_needs_sampling();
}

/* See probe_core.h. */
void rt_probe_init(void)
{
	pthread_once(&g_once, init_once);
}

/* See probe_core.h. Profile entries read earlier are forgotten. */
void rt_probe_configure(const struct rt_probe_config *cfg)
{
	rt_probe_init();
	pthread_mutex_lock(&g_lock);
	g_cfg = *cfg;
	g_nprof = 0;
	rtp_cache_drop(NULL); /* the slabs' cached QPs hold the old sampling setting */
	adaptive_needs_sampling();
	pthread_mutex_unlock(&g_lock);
}
