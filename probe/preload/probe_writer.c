// SPDX-License-Identifier: MIT
/*
 * The probe's writer: renders everything recorded (devices, per-QP counters, histograms, latency samples, drops) as
 * the rtune-probe 1.1 JSON document (docs/probe.md, read back by reader.c) and writes it to rtune-probe.<pid>.json
 * (RTUNE_PROBE_OUT, %p = pid): created O_EXCL|O_NOFOLLOW, rewritten in place at each device close and at exit, never
 * into a descriptor the application has since reused; a set-user-ID process writes nothing. Called under g_lock,
 * never from the send path; an unwritable file is remembered and reported once at exit.
 */
#include "probe_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const rtp_op_name[RTP_NOPS] = {
	"send", "send_imm", "rdma_write", "rdma_write_imm", "rdma_read", "atomic", "send_inv", "other",
};

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

/* See probe_int.h. */
void rtp_writer_init(void)
{
	const char *v;

	/* a privileged process writes no file (its caller would choose the path or the directory) and prints nothing */
	g_out_off = getauxval(AT_SECURE) != 0;
	if ((v = rtp_env("RTUNE_PROBE_OUT"))) {
		if (strlen(v) >= sizeof(g_cfg.out_pattern) - 32)
			g_out_cfg_err = ENAMETOOLONG; /* never write to a truncated name */
		else
			snprintf(g_cfg.out_pattern, sizeof(g_cfg.out_pattern), "%s", v);
	}
}

/* See probe_int.h. */
void rtp_writer_reset_child(void)
{
	if (g_out_fd >= 0)
		close(g_out_fd); /* the parent's file: the child writes its own */
	g_out_fd = -1;
	g_out_errno = 0;
	g_out_reported = false;
	g_writes = 0;
}

/* A growing output buffer; oom latches the first failed allocation (the render then fails with ENOMEM). */
struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Appends printf output to b, growing it; on failure sets b->oom and appends nothing more. */
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

/* Appends s as a JSON string (quotes, backslashes and control characters escaped). */
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

/* The schema name of a QP type ("unknown" for a type it does not name). */
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

/* Appends st's opcode classes that carried WRs: counts and size histogram per class. */
/*
 * "inline_ctl" of a QP with apply mode's adaptive threshold: where it started and is, its evidence and its moves, or
 * nothing without one. The state is read under the QP's controller lock, retried a bounded number of times (the
 * writer is not on the send path); a controller busy throughout is written as {"busy": true}.
 */
static void jb_ctl(struct jbuf *b, struct rtp_qp *q)
{
	struct rt_inline_ctl_state st;
	int got = -1;

	if (!q->ctl)
		return;
	for (int i = 0; i < 100000 && got; i++) {
		if (atomic_flag_test_and_set_explicit(&q->ctl_lock, memory_order_acquire))
			continue;
		got = rt_inline_ctl_get_state(q->ctl, &st);
		atomic_flag_clear_explicit(&q->ctl_lock, memory_order_release);
	}
	if (got) {
		jb_printf(b, "\"inline_ctl\":{\"busy\":true},");
		return;
	}
	jb_printf(b,
		  "\"inline_ctl\":{\"start\":%u,\"threshold\":%u,\"min\":%u,\"max\":%u,\"parked\":%s,"
		  "\"samples\":%llu,\"explored\":%llu,\"dropped\":%llu,\"rounds\":%llu,\"moves_up\":%llu,"
		  "\"moves_down\":%llu,\"reverts\":%llu,\"moves\":[",
		  st.start_bytes, st.threshold_bytes, st.min_bytes, st.max_bytes, st.parked ? "true" : "false",
		  (unsigned long long)st.samples, (unsigned long long)st.explored, (unsigned long long)st.dropped,
		  (unsigned long long)st.rounds, (unsigned long long)st.moves_up, (unsigned long long)st.moves_down,
		  (unsigned long long)st.reverts);
	for (unsigned i = 0; i < st.n_moves; i++)
		jb_printf(b,
			  "%s{\"at_sample\":%llu,\"from\":%u,\"to\":%u,\"inline_ns\":%llu,\"noinline_ns\":%llu,"
			  "\"revert\":%s}",
			  i ? "," : "", (unsigned long long)st.moves[i].at_sample, st.moves[i].from_bytes,
			  st.moves[i].to_bytes, (unsigned long long)st.moves[i].inline_ns,
			  (unsigned long long)st.moves[i].noinline_ns, st.moves[i].revert ? "true" : "false");
	jb_printf(b, "]},");
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

/* Appends the process's argv (/proc/self/cmdline, first 4 KiB) as a JSON array; [] when unreadable. */
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
		  "{\"schema\":{\"name\":\"rtune-probe\",\"version\":\"1.1\"},\"rtune_version\":\"%s\","
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
	rtp_stat_zero(tot);
	for (unsigned i = 0; i < nqp; i++) {
		struct rtp_qp *q = g_qps[i];
		bool first;

		rtp_qp_sum(q, sum);
		rtp_stat_add(tot, sum);
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
		{
			uint64_t mask;
			unsigned n_posters = rtp_qp_posters(q, &mask);

			/* the threads that posted on it (issue 16: the app's concurrency), and which (slab ids < 64) */
			jb_printf(&b, "],\"posting_threads\":%u,\"posters\":[", n_posters);
			for (unsigned k = 0, any_k = 0; k < 64; k++)
				if (mask >> k & 1)
					jb_printf(&b, "%s%u", any_k++ ? "," : "", k);
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
		jb_ctl(&b, q);
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

/* See probe_core.h. */
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

/* Renders and (re)writes the file (under g_lock). 0 (also when there is nothing to write), or the errno remembered. */
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
			 rtp_env("RTUNE_PROBE_OUT"));
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

/* See probe_core.h. errno preserved. */
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

/* See probe_core.h. errno preserved; the descriptor stays open for a later close_device. */
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
