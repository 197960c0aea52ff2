// SPDX-License-Identifier: MIT
/*
 * Apply mode: the probe sets IBV_SEND_INLINE on the application's WRs that a profile (RTUNE_PROFILE) or
 * RTUNE_INLINE_THRESHOLD says should be inline, for an unmodified application. This file holds its decisions: the
 * profile entries (read at init by a minimal reader, jansson stays out of the host application), the per-QP inline
 * limits a new QP gets (and the max_inline_data to request for it), and the rewrite of a post_send chain into the
 * thread's copy with the flag set. The send path (probe_send.c, probe_ex.c) asks rtp_apply_wants() per WR. With
 * RTUNE_APPLY_ADAPTIVE=1 a QP's threshold is not fixed: an rt_inline_ctl (ctl/, docs/controller.md) per QP starts at
 * the profile's threshold, stays within the max_inline_data the QP was granted, decides each WR of ibv_post_send
 * (SEND and RDMA WRITE alike), and learns from the post -> completion times of WRs the application signaled anyway
 * (signaling never changes): a WR it wants timed is one of those, timed through the probe's latency ring.
 */
#include "probe_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The QP types apply mode changes (those a send inline flag means something on). */
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
unsigned g_nprof;

/*
 * Apply mode for a new QP of type t on c: lim[] = inline thresholds for SEND and RDMA WRITE WRs, *want =
 * max_inline_data to request (0 = leave). RTUNE_INLINE_THRESHOLD applies to every device; a profile only to the devices
 * it has entries for (a device it does not name is left alone).
 */
void rtp_apply_for(const struct rtp_ctx *c, enum ibv_qp_type t, uint32_t lim[2], uint32_t *want)
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

/* See probe_int.h. The copy lives in this thread's slab: no allocation, nothing shared. */
struct ibv_send_wr *rtp_apply_copy(const struct rtp_qp *q, struct rtp_slab *s, struct ibv_send_wr *wr, unsigned *ncopy,
				   uint64_t mask)
{
	unsigned n = 0;

	(void)q;
	for (struct ibv_send_wr *w = wr; w; w = w->next, n++) {
		struct ibv_send_wr *c = &s->wr_copy[n];

		*c = *w;
		c->next = w->next ? c + 1 : NULL;
		s->wr_orig[n] = w;
		if (mask >> n & 1u)
			c->send_flags |= IBV_SEND_INLINE;
	}
	*ncopy = n;
	return s->wr_copy;
}

/* See probe_int.h. */
uint64_t rtp_apply_ctl_decide(struct rtp_qp *q, struct ibv_send_wr *wr, struct rtp_rec *rc)
{
	uint64_t mask = 0;
	unsigned n = 0, nsig = 0;
	bool locked = !atomic_flag_test_and_set_explicit(&q->ctl_lock, memory_order_acquire);

	for (struct ibv_send_wr *w = wr; w && n < RTP_APPLY_MAX_WRS; w = w->next, n++) {
		bool sig = q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
		uint32_t b;
		unsigned f;

		nsig += sig;
		if ((w->send_flags & IBV_SEND_INLINE) || !rtp_op_inlinable(rtp_op(w->opcode)) || !(b = wr_bytes(w)))
			continue;
		if (!locked) {
			if (rtp_apply_wants(q, w))
				mask |= 1ull << n;
			continue;
		}
		f = rt_inline_ctl_decide(q->ctl, b);
		if (f & RT_INLINE_CTL_SAMPLE) {
			/* only a WR the application signaled can be timed, and only one per call */
			if (!sig || rc->ctl_k)
				f = b < rt_inline_ctl_threshold(q->ctl) + 1u ? RT_INLINE_CTL_INLINE : 0u;
			else {
				rc->ctl_k = nsig;
				rc->ctl_bytes = b;
				rc->ctl_inline = f & RT_INLINE_CTL_INLINE;
			}
		}
		if (f & RT_INLINE_CTL_INLINE) /* never above the granted max_inline_data: the controller's bound */
			mask |= 1ull << n;
	}
	if (locked) {
		rtp_apply_ctl_mirror(q);
		atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
	}
	return mask;
}

/*
 * See probe_int.h. The send path calls it for the first send of a key in the thread's slots and then once in
 * ctl_look_mask + 1 of that key's sends (the controller's rate of looks: frequent while it finds the traffic, backed
 * off to about 1 in 1024 once looks change nothing; never more often than one in RTP_CTL_LOOK_MIN). A key without a
 * slot is paced by the thread's own countdown instead, re-armed here: the controller's period, at least 8..23 sends.
 */
void rtp_apply_ctl_outside(struct rtp_qp *q, struct rtp_slab *s, uint32_t bytes)
{
	const struct rt_inline_ctl_hot *h;
	uint32_t x = s->ctl_rng ? s->ctl_rng : 0x2545f491u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->ctl_rng = x;
	s->ctl_outside = RTP_CTL_LOOK_MIN + x % 16u; /* jittered, so a periodic size pattern cannot hide a size */
	if (!q->ctl || atomic_flag_test_and_set_explicit(&q->ctl_lock, memory_order_acquire))
		return;
	rt_inline_ctl_outside(q->ctl, bytes);
	atomic_fetch_add_explicit(&q->ctl_looks, 1, memory_order_relaxed);
	h = (const struct rt_inline_ctl_hot *)(const void *)q->ctl;
	if (h->outside > s->ctl_outside)
		s->ctl_outside = h->outside; /* the controller's period once it is longer */
	rtp_apply_ctl_mirror(q);
	atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
}

/* See probe_int.h. */
void rtp_apply_ctl_sample(struct rtp_qp *q, uint32_t bytes, bool inlined, uint64_t lat_ns)
{
	if (!q->ctl || atomic_flag_test_and_set_explicit(&q->ctl_lock, memory_order_acquire))
		return;
	if (lat_ns) {
		rt_inline_ctl_sample(q->ctl, bytes, inlined, lat_ns);
		rtp_apply_ctl_mirror(q);
	}
	atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
}

/* See probe_int.h. A controller that cannot be created leaves the QP on its fixed limits. */
void rtp_apply_ctl_create(struct rtp_qp *q)
{
	struct rt_inline_ctl_params p;

	atomic_flag_clear(&q->ctl_lock);
	if (!g_cfg.apply_adaptive || !q->apply_limit || !q->max_inline_data)
		return;
	rt_inline_ctl_params_init(&p);
	p.threshold_bytes = q->apply_lim[0] ? q->apply_lim[0] : q->apply_lim[1];
	p.min_bytes = 0;
	p.max_bytes = q->max_inline_data;
	p.granted_max_inline = q->max_inline_data;
	p.sample_every = 1; /* only signaled WRs can be timed: every watched one is a candidate */
	if (rt_inline_ctl_create(&p, &q->ctl))
		q->ctl = NULL;
	else
		rtp_apply_ctl_mirror(q);
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

/* See probe_core.h. Replaces the entries under g_lock; the file is read whole, up to 1 MiB. */
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
