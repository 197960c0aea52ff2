// SPDX-License-Identifier: MIT
/*
 * libemunic.so: an emulated-NIC cost model for the Soft-RoCE test tier (test code; rtune never knows it). Preloaded
 * between an application and the rxe provider, it adds modeled per-WR costs so that rxe0 gets a *planted* inline
 * crossover and a *planted* signaling knee that `rtune calibrate` -> `rtune tune` must recover.
 *
 * Model, per SEND / SEND_WITH_IMM / RDMA_WRITE / RDMA_WRITE_WITH_IMM WR of `bytes` payload bytes (sum of its SGEs):
 *   non-inline, bytes > 0:  EMUNIC_DMA_NS + EMUNIC_DMA_NS_PER_BYTE * bytes     (the NIC's DMA read of the payload)
 *   inline:                 EMUNIC_INLINE_CHUNK_NS * ceil(bytes / 64)          (the CPU writing 64 B WQE chunks)
 *   every such WR:          + EMUNIC_POST_NS                                   (building the WQE, the doorbell)
 *   IBV_SEND_SIGNALED:      + EMUNIC_CQE_NS                                    (the completion the sender reaps)
 * All in ns (doubles, default 0). EMUNIC_POST_NS is the same for inline and not: it only makes the modeled part of a
 * message's time large against rxe's own noise. Other opcodes cost nothing; a zero-byte WR has no payload cost. The cost of a post is the
 * sum over its chain, spent by spinning on the TSC *before* the provider's post_send is called, so it delays the WR
 * on the wire exactly as a slower NIC would: a ping-pong's half round trip grows by one WR's cost (both sides pay), and
 * a stream's time per message is t_post + t_cqe / N. The completion cost is charged at post time (not in poll_cq):
 * with one signaled WR in N that gives the same 1/rate = t_post + t_cqe/N, is deterministic, and needs no look at
 * which CQ a work completion came from.
 *
 * A model that changes in the middle of a run: EMUNIC_SWITCH_AFTER=K (posts) makes every post after the K-th use a
 * second model, EMUNIC2_POST_NS / EMUNIC2_DMA_NS / EMUNIC2_DMA_NS_PER_BYTE / EMUNIC2_INLINE_CHUNK_NS / EMUNIC2_CQE_NS
 * (each unset one keeps the first model's value). Counting posts (not time) keeps the switch point deterministic.
 *
 * Inline is stripped by default: rxe itself shows a small inline advantage (2-4 %) at every size, so every WR is
 * forwarded WITHOUT IBV_SEND_INLINE and inline and non-inline differ only by the model. That needs a valid lkey in
 * every SGE of an inline WR (rtune's engine always posts from its registered buffer); EMUNIC_KEEP_INLINE=1 forwards
 * the flag unchanged. The caller's WRs are restored before returning (flags of at most EMUNIC_MAX_CHAIN WRs of one
 * chain are stripped; longer chains keep the flag past that point, counted as `inline_kept`).
 *
 * Interposition as rdma-core's librdmacm/preload.c: ibv_open_device / ibv_import_device / ibv_close_device are
 * exported with libibverbs' symbol versions (emunic.map), the real ones found with dlvsym(RTLD_NEXT), and each
 * context's ops.post_send is replaced. Extended QPs (ibv_qp_ex wr_* calls) bypass ops.post_send and are not modeled:
 * rtune's engine does not use them; create_qp_ex requests for send ops are counted as `qp_ex_unmodeled`.
 * Send path: no allocation, no lock, no printing, no clock_gettime (in the guest that is a ~0.9 us HPET system call):
 * only lfence + rdtsc, the TSC rate being calibrated once in the constructor; errno and the return value of the real
 * call are returned unchanged. EMUNIC_REPORT=PATH writes counters as one JSON object at exit (a regular file only).
 *
 * What the device was given, over time: EMUNIC_TRACE_BLOCK=K (posts) counts, per block of K posts (the post's index
 * as the switch counts it) and per size band (the shared buckets of common/rt_hist.h: exact below 8 B, then 8 per
 * power of two), the WRs that came inline and those that did not; the report then has "trace": one object per
 * non-empty block {"block", "inline": {band: n}, "dma": {band: n}} and "band_lo" (the smallest size of each band
 * used). Blocks past EMUNIC_TRACE_BLOCKS count into the last one. Relaxed atomic counters in static memory.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define EMUNIC_MAX_CTX 64
#define EMUNIC_MAX_CHAIN 256
#define EMUNIC_TRACE_BLOCKS 1024
#define EMUNIC_TRACE_BANDS 104 /* bands of sizes up to 8191 B */

typedef int (*post_send_fn)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

struct emu_ctx {
	_Atomic(struct ibv_context *) ctx;
	post_send_fn real_post_send;
	struct ibv_qp *(*real_create_qp_ex)(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
};

struct emu_costs {
	double post_ns, dma_ns, dma_ns_per_byte, inline_chunk_ns, cqe_ns;
};

static struct {
	double post_ns, dma_ns, dma_ns_per_byte, inline_chunk_ns, cqe_ns;
	struct emu_costs m[2]; /* the model before and after the switch */
	uint64_t switch_after; /* posts; 0 = never */
	uint64_t trace_block;  /* posts per trace block; 0 = no trace */
	bool keep_inline;
	double cyc_per_ns;
	const char *report;
} g_model;

static struct {
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	struct ibv_context *(*import_device)(int cmd_fd);
	int (*close_device)(struct ibv_context *ctx);
} g_real;

static struct emu_ctx g_ctx[EMUNIC_MAX_CTX];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_posts, g_wrs, g_inline_wrs, g_dma_wrs, g_signaled, g_stripped, g_inline_kept, g_spent_cyc,
	g_untracked, g_qp_ex_unmodeled, g_ctx_hooked;
static _Thread_local uint8_t tls_strip[EMUNIC_MAX_CHAIN];
static _Atomic uint32_t g_trace[EMUNIC_TRACE_BLOCKS][2][EMUNIC_TRACE_BANDS]; /* [block][inline?][band] */
static _Atomic uint32_t g_trace_used;					     /* blocks used */

/* The band of a size: exact below 8 B, then 8 per power of two (common/rt_hist.h's buckets), capped. */
static unsigned band_of(uint64_t b)
{
	unsigned e, k;

	if (b < 8)
		return (unsigned)b;
	e = 63u - (unsigned)__builtin_clzll(b);
	k = 8 + (e - 3) * 8 + (unsigned)((b >> (e - 3)) & 7);
	return k < EMUNIC_TRACE_BANDS ? k : EMUNIC_TRACE_BANDS - 1;
}

/* The smallest size of band k. */
static uint64_t band_lo(unsigned k)
{
	unsigned e = k / 8 + 2;

	return k < 8 ? k : (1ull << e) + (uint64_t)(k % 8) * (1ull << (e - 3));
}

#define CTR_ADD(c, n) atomic_fetch_add_explicit(&(c), (n), memory_order_relaxed)

/* The TSC, ordered after earlier loads (lfence; rdtscp is not in every qemu CPU model). */
static inline uint64_t tsc_now(void)
{
	_mm_lfence();
	return __rdtsc();
}

/*
 * Spins until `cycles` TSC cycles have passed since the call. No pause instruction: under qemu TCG it leaves the
 * translated-code loop (about a microsecond each), which would overshoot the deadline by that much.
 */
static inline void spin_cycles(uint64_t cycles)
{
	uint64_t end = tsc_now() + cycles;

	while (tsc_now() < end)
		;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* TSC cycles per ns over ~50 ms of CLOCK_MONOTONIC (once; the median of three 16 ms windows). */
static double calibrate_tsc(void)
{
	double r[3];

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = mono_ns(), c0 = tsc_now(), t1, c1;
		struct timespec d = { 0, 16000000 };

		nanosleep(&d, NULL);
		t1 = mono_ns();
		c1 = tsc_now();
		r[i] = t1 > t0 ? (double)(c1 - c0) / (double)(t1 - t0) : 1.0;
	}
	if (r[0] > r[1]) {
		double t = r[0];
		r[0] = r[1];
		r[1] = t;
	}
	if (r[1] > r[2])
		r[1] = r[2];
	return r[0] > r[1] ? r[0] : r[1];
}

/* Reads one non-negative ns parameter; a malformed value is a test configuration error: one line, exit 2. */
static double env_ns(const char *name)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > 1e9) {
		fprintf(stderr, "emunic: bad %s '%s' (a number of ns, 0..1e9)\n", name, s);
		_exit(2);
	}
	return v;
}

static void *real_sym(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);

	return p ? p : dlsym(RTLD_NEXT, name);
}

__attribute__((constructor)) static void emunic_init(void)
{
	int err = errno;
	const char *k = getenv("EMUNIC_KEEP_INLINE");

	g_real.open_device = real_sym("ibv_open_device", "IBVERBS_1.1");
	g_real.import_device = real_sym("ibv_import_device", "IBVERBS_1.10");
	g_real.close_device = real_sym("ibv_close_device", "IBVERBS_1.1");
	g_model.post_ns = env_ns("EMUNIC_POST_NS");
	g_model.dma_ns = env_ns("EMUNIC_DMA_NS");
	g_model.dma_ns_per_byte = env_ns("EMUNIC_DMA_NS_PER_BYTE");
	g_model.inline_chunk_ns = env_ns("EMUNIC_INLINE_CHUNK_NS");
	g_model.cqe_ns = env_ns("EMUNIC_CQE_NS");
	g_model.m[0] = (struct emu_costs){ g_model.post_ns, g_model.dma_ns, g_model.dma_ns_per_byte,
					   g_model.inline_chunk_ns, g_model.cqe_ns };
	g_model.m[1] = g_model.m[0];
	g_model.switch_after = (uint64_t)env_ns("EMUNIC_SWITCH_AFTER");
	g_model.trace_block = (uint64_t)env_ns("EMUNIC_TRACE_BLOCK");
	if (g_model.switch_after) {
		static const char *const names[] = { "EMUNIC2_POST_NS", "EMUNIC2_DMA_NS", "EMUNIC2_DMA_NS_PER_BYTE",
						     "EMUNIC2_INLINE_CHUNK_NS", "EMUNIC2_CQE_NS" };
		double *f[] = { &g_model.m[1].post_ns, &g_model.m[1].dma_ns, &g_model.m[1].dma_ns_per_byte,
				&g_model.m[1].inline_chunk_ns, &g_model.m[1].cqe_ns };

		for (int i = 0; i < 5; i++) {
			const char *v = getenv(names[i]);

			if (v && *v)
				*f[i] = env_ns(names[i]);
		}
	}
	g_model.keep_inline = k && strcmp(k, "1") == 0;
	g_model.report = getenv("EMUNIC_REPORT");
	g_model.cyc_per_ns = calibrate_tsc();
	errno = err;
}

/* Appends ", \"trace_block\": K, \"band_lo\": {...}, \"trace\": [...]}\n" to the report on fd. 0, or -1 (errno). */
static int write_trace(int fd)
{
	unsigned used = atomic_load(&g_trace_used);
	bool seen[EMUNIC_TRACE_BANDS] = { false };
	const char *sep = "";

	if (dprintf(fd, ", \"trace_block\": %llu, \"trace\": [", (unsigned long long)g_model.trace_block) < 0)
		return -1;
	for (unsigned b = 0; b < used; b++) {
		if (dprintf(fd, "%s\n  {\"block\": %u", b ? "," : "", b) < 0)
			return -1;
		for (int inl = 1; inl >= 0; inl--) {
			const char *s2 = "";

			if (dprintf(fd, ", \"%s\": {", inl ? "inline" : "dma") < 0)
				return -1;
			for (unsigned k = 0; k < EMUNIC_TRACE_BANDS; k++) {
				uint32_t v = atomic_load_explicit(&g_trace[b][inl][k], memory_order_relaxed);

				if (!v)
					continue;
				seen[k] = true;
				if (dprintf(fd, "%s\"%u\": %u", s2, k, v) < 0)
					return -1;
				s2 = ", ";
			}
			if (dprintf(fd, "}") < 0)
				return -1;
		}
		if (dprintf(fd, "}") < 0)
			return -1;
	}
	if (dprintf(fd, "], \"band_lo\": {") < 0)
		return -1;
	for (unsigned k = 0; k < EMUNIC_TRACE_BANDS; k++) {
		if (!seen[k])
			continue;
		if (dprintf(fd, "%s\"%u\": %llu", sep, k, (unsigned long long)band_lo(k)) < 0)
			return -1;
		sep = ", ";
	}
	return dprintf(fd, "}}\n") < 0 ? -1 : 0;
}

/* Writes the counters to EMUNIC_REPORT (a regular file or a new one; anything else is left alone). */
__attribute__((destructor)) static void emunic_fini(void)
{
	struct stat st;
	char buf[1024];
	int fd, n, err = errno;

	if (!g_model.report || !*g_model.report)
		return;
	if (stat(g_model.report, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "emunic: not writing the report to '%s': not a regular file\n", g_model.report);
		return;
	}
	n = snprintf(
		buf, sizeof(buf),
		"{\"post_ns\": %.1f, \"dma_ns\": %.1f, \"dma_ns_per_byte\": %.3f, \"inline_chunk_ns\": %.1f, "
		"\"cqe_ns\": %.1f, "
		"\"keep_inline\": %s, \"tsc_cyc_per_ns\": %.4f, \"contexts\": %llu, \"posts\": %llu, \"wrs\": %llu, "
		"\"inline_wrs\": %llu, \"dma_wrs\": %llu, \"signaled\": %llu, \"stripped\": %llu, "
		"\"inline_kept\": %llu, \"untracked_posts\": %llu, \"qp_ex_unmodeled\": %llu, \"spent_ns\": %.0f, "
		"\"switch_after\": %llu, \"dma_ns_2\": %.1f, \"inline_chunk_ns_2\": %.1f}\n",
		g_model.post_ns, g_model.dma_ns, g_model.dma_ns_per_byte, g_model.inline_chunk_ns, g_model.cqe_ns,
		g_model.keep_inline ? "true" : "false", g_model.cyc_per_ns, (unsigned long long)g_ctx_hooked,
		(unsigned long long)g_posts, (unsigned long long)g_wrs, (unsigned long long)g_inline_wrs,
		(unsigned long long)g_dma_wrs, (unsigned long long)g_signaled, (unsigned long long)g_stripped,
		(unsigned long long)g_inline_kept, (unsigned long long)g_untracked,
		(unsigned long long)g_qp_ex_unmodeled, (double)g_spent_cyc / g_model.cyc_per_ns,
		(unsigned long long)g_model.switch_after, g_model.m[1].dma_ns, g_model.m[1].inline_chunk_ns);
	fd = open(g_model.report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (g_model.trace_block)
		n -= 2; /* the object goes on with the trace: not its closing "}\n" yet */
	if (fd < 0 || write(fd, buf, (size_t)n) != n || (g_model.trace_block && write_trace(fd) < 0))
		fprintf(stderr, "emunic: cannot write the report '%s': %s\n", g_model.report, strerror(errno));
	if (fd >= 0)
		close(fd);
	errno = err;
}

/* The record of ctx, or NULL (lock-free: entries are published with a release store after their fields). */
static struct emu_ctx *ctx_find(struct ibv_context *ctx)
{
	for (int i = 0; i < EMUNIC_MAX_CTX; i++)
		if (atomic_load_explicit(&g_ctx[i].ctx, memory_order_acquire) == ctx)
			return &g_ctx[i];
	return NULL;
}

static inline bool modeled_op(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/*
 * ops.post_send of a hooked context: sums the chain's modeled cost, strips IBV_SEND_INLINE (unless kept), spins the
 * cost, calls the provider, restores the caller's flags. Returns exactly what the provider returned, errno as it left
 * it. A QP of a context not found (closed meanwhile: an application bug) has no provider to call: EINVAL, counted.
 */
static int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct emu_ctx *c = ctx_find(qp->context);
	uint64_t n = 0, n_inl = 0, n_dma = 0, n_sig = 0, n_strip = 0, n_kept = 0, cyc;
	double cost_ns = 0;
	struct ibv_send_wr *w;
	const struct emu_costs *m = &g_model.m[0];
	uint64_t post_idx = atomic_load_explicit(&g_posts, memory_order_relaxed);
	_Atomic uint32_t(*trace)[EMUNIC_TRACE_BANDS] = NULL;
	unsigned i;
	int ret, err;

	if (g_model.switch_after && post_idx >= g_model.switch_after)
		m = &g_model.m[1];
	if (g_model.trace_block) {
		uint64_t blk = post_idx / g_model.trace_block;

		if (blk >= EMUNIC_TRACE_BLOCKS)
			blk = EMUNIC_TRACE_BLOCKS - 1;
		trace = g_trace[blk];
		if (atomic_load_explicit(&g_trace_used, memory_order_relaxed) < blk + 1)
			atomic_store_explicit(&g_trace_used, (uint32_t)blk + 1, memory_order_relaxed);
	}
	if (!c || !c->real_post_send) {
		CTR_ADD(g_untracked, 1);
		*bad_wr = wr;
		return EINVAL;
	}
	for (w = wr, i = 0; w; w = w->next, i++, n++) {
		uint64_t bytes = 0;

		if (i < EMUNIC_MAX_CHAIN)
			tls_strip[i] = 0;
		if (!modeled_op(w->opcode))
			continue;
		for (int s = 0; s < w->num_sge; s++)
			bytes += w->sg_list[s].length;
		if (trace)
			CTR_ADD(trace[(w->send_flags & IBV_SEND_INLINE) ? 1 : 0][band_of(bytes)], 1);
		cost_ns += m->post_ns;
		if (w->send_flags & IBV_SEND_INLINE) {
			n_inl++;
			cost_ns += m->inline_chunk_ns * (double)((bytes + 63) / 64);
			if (!g_model.keep_inline) {
				if (i < EMUNIC_MAX_CHAIN) {
					w->send_flags &= ~(unsigned)IBV_SEND_INLINE;
					tls_strip[i] = 1;
					n_strip++;
				} else {
					n_kept++;
				}
			}
		} else if (bytes) {
			n_dma++;
			cost_ns += m->dma_ns + m->dma_ns_per_byte * (double)bytes;
		}
		if (w->send_flags & IBV_SEND_SIGNALED) {
			n_sig++;
			cost_ns += m->cqe_ns;
		}
	}
	cyc = (uint64_t)(cost_ns * g_model.cyc_per_ns + 0.5);
	if (cyc)
		spin_cycles(cyc);
	ret = c->real_post_send(qp, wr, bad_wr);
	err = errno;
	if (n_strip)
		for (w = wr, i = 0; w && i < EMUNIC_MAX_CHAIN; w = w->next, i++)
			if (tls_strip[i])
				w->send_flags |= IBV_SEND_INLINE;
	CTR_ADD(g_posts, 1);
	CTR_ADD(g_wrs, n);
	if (n_inl)
		CTR_ADD(g_inline_wrs, n_inl);
	if (n_dma)
		CTR_ADD(g_dma_wrs, n_dma);
	if (n_sig)
		CTR_ADD(g_signaled, n_sig);
	if (n_strip)
		CTR_ADD(g_stripped, n_strip);
	if (n_kept)
		CTR_ADD(g_inline_kept, n_kept);
	if (cyc)
		CTR_ADD(g_spent_cyc, cyc);
	errno = err;
	return ret;
}

/* verbs_context create_qp_ex of a hooked context: QPs asking for ibv_qp_ex send ops are counted as unmodeled. */
static struct ibv_qp *emu_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct emu_ctx *c = ctx_find(ctx);

	if (attr && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && attr->send_ops_flags)
		CTR_ADD(g_qp_ex_unmodeled, 1);
	if (!c || !c->real_create_qp_ex) {
		errno = EINVAL;
		return NULL;
	}
	return c->real_create_qp_ex(ctx, attr);
}

/* Hooks a context the real open/import returned (errno preserved); a full table leaves it unhooked and counted. */
static struct ibv_context *hook(struct ibv_context *ctx)
{
	struct verbs_context *vctx;
	struct emu_ctx *c = NULL;
	int err = errno;

	if (!ctx)
		return NULL;
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < EMUNIC_MAX_CTX && !c; i++)
		if (!atomic_load_explicit(&g_ctx[i].ctx, memory_order_relaxed))
			c = &g_ctx[i];
	if (c && ctx->ops.post_send && ctx->ops.post_send != emu_post_send) {
		c->real_post_send = ctx->ops.post_send;
		c->real_create_qp_ex = NULL;
		vctx = verbs_get_ctx_op(ctx, create_qp_ex);
		if (vctx && vctx->create_qp_ex != emu_create_qp_ex) {
			c->real_create_qp_ex = vctx->create_qp_ex;
			vctx->create_qp_ex = emu_create_qp_ex;
		}
		atomic_store_explicit(&c->ctx, ctx, memory_order_release);
		ctx->ops.post_send = emu_post_send;
		CTR_ADD(g_ctx_hooked, 1);
	} else {
		CTR_ADD(g_untracked, 1);
	}
	pthread_mutex_unlock(&g_lock);
	errno = err;
	return ctx;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!g_real.open_device) {
		errno = ENOSYS;
		return NULL;
	}
	return hook(g_real.open_device(device));
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	if (!g_real.import_device) {
		errno = ENOSYS;
		return NULL;
	}
	return hook(g_real.import_device(cmd_fd));
}

int ibv_close_device(struct ibv_context *context)
{
	struct emu_ctx *c;

	if (!g_real.close_device)
		return ENOSYS;
	pthread_mutex_lock(&g_lock);
	c = ctx_find(context);
	if (c) {
		struct verbs_context *vctx = verbs_get_ctx_op(context, create_qp_ex);

		context->ops.post_send = c->real_post_send;
		if (vctx && c->real_create_qp_ex)
			vctx->create_qp_ex = c->real_create_qp_ex;
		atomic_store_explicit(&c->ctx, NULL, memory_order_release);
	}
	pthread_mutex_unlock(&g_lock);
	return g_real.close_device(context);
}
