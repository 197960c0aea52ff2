// SPDX-License-Identifier: MIT
/*
 * The probe spool's import (spool.h): a finished probe file becomes the application's histograms in the store and
 * is then removed; one that never parses is set aside as "*.bad".
 */
#include "spool.h"
#include "agent_log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * The adaptive inline controllers of sum's QPs (apply mode, "inline_ctl") as store rows of app, stamped created_ns;
 * none for a file without them. 0 or an errno + err (nothing stored).
 */
static int store_ctls(struct rt_store *st, const struct rt_node_info *node, const char *app,
		      const struct rt_probe_summary *sum, int64_t created_ns, struct rt_error *err)
{
	struct rt_store_inline_ctl *v;
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < sum->n_qps; i++)
		n += sum->qps[i].ctl.present;
	if (!n)
		return 0;
	if (!(v = calloc(n, sizeof(*v))))
		return rt_error_set(err, ENOMEM, "out of memory");
	n = 0;
	for (size_t i = 0; i < sum->n_qps; i++) {
		const struct rt_probe_qp_summary *q = &sum->qps[i];
		const struct rt_probe_ctl_summary *c = &q->ctl;
		struct rt_store_inline_ctl *r = &v[n];
		size_t k;

		if (!c->present)
			continue;
		n++;
		snprintf(r->app, sizeof(r->app), "%s", app);
		snprintf(r->device, sizeof(r->device), "%s", q->device[0] ? q->device : "unknown");
		for (k = 0; k < sizeof(r->qp_type) - 1 && q->qp_type[k]; k++)
			r->qp_type[k] = (char)tolower((unsigned char)q->qp_type[k]);
		if (!k)
			snprintf(r->qp_type, sizeof(r->qp_type), "unknown");
		r->qp_num = q->qp_num;
		r->pid = q->pid;
		r->created_ns = created_ns;
		r->busy = c->busy;
		r->parked = c->parked;
		r->start_bytes = c->start_bytes;
		r->threshold_bytes = c->threshold_bytes;
		r->min_bytes = c->min_bytes;
		r->max_bytes = c->max_bytes;
		r->samples = c->samples;
		r->explored = c->explored;
		r->dropped = c->dropped;
		r->rounds = c->rounds;
		r->moves_up = c->moves_up;
		r->moves_down = c->moves_down;
		r->reverts = c->reverts;
		r->n_moves = c->n_moves;
		memcpy(r->moves, c->moves, sizeof(r->moves));
	}
	rc = rt_store_put_inline_ctl(st, node, v, n, err);
	free(v);
	return rc;
}

int rt_agent_store_probe_summary(struct rt_store *st, const struct rt_node_info *node, const char *app,
				 const struct rt_probe_summary *sum, int *stored, struct rt_error *err)
{
	struct timespec ts;
	int64_t now_ns;
	int n = 0, rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;

	for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++)
		for (int op = 0; op < RT_OP__COUNT; op++) {
			struct rt_store_histogram h = { 0 };
			struct rt_probe_op_summary o;
			struct rt_probe_class_queue q;

			if (!rt_probe_summary_class_queue(sum, (enum rt_opcode)op, (enum rt_qp_type)qpt, &o, &q))
				continue;
			snprintf(h.app, sizeof(h.app), "%s", app);
			h.created_ns = now_ns; /* one import: its histograms and controllers share the time */
			h.op = (enum rt_opcode)op;
			h.qpt = (enum rt_qp_type)qpt;
			h.messages = o.wrs;
			h.bytes = o.bytes;
			h.inline_count = o.inline_wrs;
			h.signaled_count = o.signaled_wrs;
			h.sq_full_enomem = q.sq_full;
			memcpy(h.buckets, o.hist, sizeof(h.buckets));
			memcpy(h.bucket_max, o.hist_max, sizeof(h.bucket_max));
			h.post_calls = q.post_calls;
			memcpy(h.batch, q.batch, sizeof(h.batch));
			memcpy(h.batch_max, q.batch_max, sizeof(h.batch_max));
			h.max_send_wr = q.max_send_wr;
			h.qps = q.qps > UINT32_MAX ? UINT32_MAX : (uint32_t)q.qps;
			h.threads = q.threads; /* 0 from a probe that did not record its posters */
			if ((rc = rt_store_put_histogram(st, node, &h, err))) {
				if (stored)
					*stored = n;
				return rc;
			}
			n++;
		}
	if (stored)
		*stored = n;
	return store_ctls(st, node, app, sum, now_ns, err);
}

void rt_agent_app_name(const struct rt_probe_summary *sum, char out[64])
{
	const char *base = strrchr(sum->exe, '/');

	base = base ? base + 1 : sum->exe;
	snprintf(out, 64, "%s", *base ? base : "unknown");
}

/* "rtune-probe.<pid>.json" -> pid, else 0. */
static long spool_pid(const char *name)
{
	const char *p = name + strlen("rtune-probe.");
	char *end;
	long pid;

	if (strncmp(name, "rtune-probe.", strlen("rtune-probe.")) != 0)
		return 0;
	pid = strtol(p, &end, 10);
	return pid > 0 && end != p && strcmp(end, ".json") == 0 ? pid : 0;
}

static void add_app(struct rt_agent_spool_result *res, const char *app)
{
	for (size_t i = 0; i < res->n_apps; i++)
		if (!strcmp(res->apps[i], app))
			return;
	if (res->n_apps < RT_AGENT_MAX_APPS)
		snprintf(res->apps[res->n_apps++], sizeof(res->apps[0]), "%s", app);
}

int rt_agent_spool_import(struct rt_store *st, const char *dir, int64_t now_s, struct rt_agent_spool_result *res,
			  struct rt_error *err)
{
	struct rt_node_info node;
	struct dirent *de;
	DIR *d;

	memset(res, 0, sizeof(*res));
	if (!(d = opendir(dir)))
		return rt_error_set(err, errno, "cannot read spool '%s': %s", dir, strerror(errno));
	rt_store_local_node(&node);
	while ((de = readdir(d))) {
		char path[4096], bad[4200], app[64];
		struct rt_probe_summary *sum = NULL;
		struct rt_error e = { 0 };
		long pid = spool_pid(de->d_name);
		struct stat sb;
		int stored = 0;

		if (!pid)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		/* the probe rewrites its file in place until its process exits */
		/* ... and a file modified in the last 2 s may be a recycled pid's (a clock far off: not "recent") */
		if ((kill((pid_t)pid, 0) == 0 || errno == EPERM) ||
		    (sb.st_mtime > now_s - 2 && sb.st_mtime <= now_s + 1)) {
			res->pending++;
			continue;
		}
		if (rt_probe_read_file(path, &sum, &e)) {
			snprintf(bad, sizeof(bad), "%s.bad", path);
			rt_agent_log(RT_LOG_WARNING, "spool: %s: set aside as '%s'", e.text, bad);
			if (rename(path, bad) != 0)
				rt_agent_log(RT_LOG_ERR, "spool: cannot rename '%s': %s", path, strerror(errno));
			res->bad++;
			continue;
		}
		rt_agent_app_name(sum, app);
		if (rt_agent_store_probe_summary(st, &node, app, sum, &stored, &e)) {
			rt_agent_log(RT_LOG_ERR, "spool: '%s': %s (kept for the next pass)", path, e.text);
			rt_probe_summary_free(sum);
			res->pending++;
			continue;
		}
		rt_probe_summary_free(sum);
		if (unlink(path) != 0)
			rt_agent_log(RT_LOG_ERR, "spool: cannot remove '%s': %s", path, strerror(errno));
		rt_agent_log(RT_LOG_INFO, "spool: imported '%s': %d histogram%s of '%s'", path, stored,
			     stored == 1 ? "" : "s", app);
		res->imported++;
		if (stored)
			add_app(res, app);
	}
	closedir(d);
	return 0;
}
