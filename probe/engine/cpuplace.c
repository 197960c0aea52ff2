// SPDX-License-Identifier: MIT
/*
 * CPU placement of the calibration threads (see rt_cpuplace.h): reads the isolated list, SMT siblings, NUMA nodes and
 * frequency governors under a sysfs root, ranks the allowed CPUs and picks a measuring and a responder CPU on two
 * different cores, saying what it could not avoid.
 */
#include "rt_cpuplace.h"
#include "devinfo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the first line of root/devices/system/cpu/[cpuN/]leaf (cpu < 0: no cpuN) into buf; false when unreadable. */
static bool read_line(const char *root, int cpu, const char *leaf, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	bool ok = false;

	if (cpu >= 0)
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/%s", root, cpu, leaf);
	else
		snprintf(path, sizeof(path), "%s/devices/system/cpu/%s", root, leaf);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, (int)len, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		ok = true;
	}
	fclose(f);
	return ok;
}

int rt_cpuplace_node(const char *sys_root, int cpu)
{
	return rt_cpu_numa_node_at(sys_root ? sys_root : "/sys", cpu);
}

struct cand {
	int cpu, node;
	bool isolated, local;
	int sib[8]; /* its SMT siblings (itself included), n_sib 0 = unknown */
	int n_sib;
};

static bool in_list(const int *l, size_t n, int cpu)
{
	for (size_t i = 0; i < n; i++)
		if (l[i] == cpu)
			return true;
	return false;
}

static bool siblings(const struct cand *a, int cpu)
{
	return in_list(a->sib, (size_t)a->n_sib, cpu) && a->cpu != cpu;
}

/* Rank of a candidate for a role: isolated first, then local to the device, then CPU 0 last, then the higher number. */
static long rank(const struct cand *c, bool want_local)
{
	return (c->isolated ? 1L << 40 : 0) + (c->local == want_local ? 1L << 30 : 0) + (c->cpu != 0 ? 1L << 20 : 0) +
	       c->cpu;
}

/* Appends one warning ("; "-separated) to out->warning, truncated to fit. */
static void warn(struct rt_cpuplace *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct rt_cpuplace *out, const char *fmt, ...)
{
	size_t l = strlen(out->warning);
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(out->warning + l, sizeof(out->warning) - l, "%s%s", l ? "; " : "", msg);
}

/* The best responder for measuring CPU m: another core when there is one, else a sibling, else m itself. */
static int pick_resp(const struct cand *cs, size_t n, const struct cand *m)
{
	int best = -1, best_sib = -1;
	long br = -1, brs = -1;

	for (size_t i = 0; i < n; i++) {
		long r = rank(&cs[i], true);

		if (cs[i].cpu == m->cpu)
			continue;
		if (siblings(m, cs[i].cpu) || siblings(&cs[i], m->cpu)) {
			if (r > brs) {
				brs = r;
				best_sib = (int)i;
			}
		} else if (r > br) {
			br = r;
			best = (int)i;
		}
	}
	return best >= 0 ? best : best_sib;
}

int rt_cpuplace_pick(const struct rt_cpuplace_req *req, struct rt_cpuplace *out, struct rt_error *err)
{
	const char *root = req->sys_root ? req->sys_root : "/sys";
	static int iso[RT_CPUPLACE_MAX];
	struct cand *cs;
	char buf[1024];
	int n_iso = 0, mi = -1, ri = -1;
	long best = -1;

	memset(out, 0, sizeof(*out));
	out->cpu = out->resp_cpu = out->cpu_node = -1;
	if (!req->n_allowed)
		return rt_error_set(err, EINVAL, "no cpu is allowed for this process");
	if (read_line(root, -1, "isolated", buf, sizeof(buf)) && buf[0])
		n_iso = rt_cpulist_parse(buf, iso, RT_CPUPLACE_MAX);
	if (n_iso < 0)
		n_iso = 0;
	cs = calloc(req->n_allowed, sizeof(*cs));
	if (!cs)
		return rt_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < req->n_allowed; i++) {
		struct cand *c = &cs[i];

		c->cpu = req->allowed[i];
		c->node = rt_cpuplace_node(root, c->cpu);
		c->isolated = in_list(iso, (size_t)n_iso, c->cpu);
		c->local = !req->n_local || in_list(req->local, req->n_local, c->cpu);
		if (read_line(root, c->cpu, "topology/thread_siblings_list", buf, sizeof(buf))) {
			c->n_sib = rt_cpulist_parse(buf, c->sib, 8);
			if (c->n_sib < 0 || c->n_sib > 8)
				c->n_sib = 0;
		}
	}
	for (size_t i = 0; i < req->n_allowed; i++) {
		const struct cand *c = &cs[i];
		long r;
		int resp;

		if (req->want_cpu >= 0) {
			if (c->cpu != req->want_cpu)
				continue;
		} else if (req->remote) {
			if (req->dev_node < 0 || c->node < 0 || c->node == req->dev_node)
				continue;
		}
		r = rank(c, !req->remote);
		/* a measuring CPU that leaves the responder another core beats a better-ranked one that does not */
		resp = req->need_two ? pick_resp(cs, req->n_allowed, c) : -1;
		if (resp >= 0 && !siblings(c, cs[resp].cpu) && !siblings(&cs[resp], c->cpu))
			r += 1L << 50;
		if (r > best) {
			best = r;
			mi = (int)i;
			ri = resp;
		}
	}
	if (mi < 0) {
		int rc;

		if (req->want_cpu >= 0)
			rc = rt_error_set(err, EINVAL, "cpu %d is not online or not allowed for this process",
					  req->want_cpu);
		else if (req->dev_node < 0)
			rc = rt_error_set(err, EINVAL,
					  "the device has no NUMA node (sysfs numa_node is -1): there is no remote CPU "
					  "to measure from");
		else
			rc = rt_error_set(err, EINVAL,
					  "no allowed CPU outside the device's NUMA node %d to measure from",
					  req->dev_node);
		free(cs);
		return rc;
	}
	out->cpu = cs[mi].cpu;
	out->cpu_node = cs[mi].node;
	out->cpu_isolated = cs[mi].isolated;
	out->siblings_known = cs[mi].n_sib > 0;
	read_line(root, out->cpu, "cpufreq/scaling_governor", out->governor, sizeof(out->governor));
	if (req->need_two) {
		const struct cand *r = ri >= 0 ? &cs[ri] : &cs[mi];

		out->resp_cpu = r->cpu;
		out->resp_isolated = r->isolated;
		out->shared = r->cpu == out->cpu;
		out->smt_siblings = !out->shared && (siblings(&cs[mi], r->cpu) || siblings(r, out->cpu));
		read_line(root, r->cpu, "cpufreq/scaling_governor", out->resp_governor, sizeof(out->resp_governor));
		if (out->shared)
			warn(out,
			     "only cpu %d is allowed: client and responder share it (latencies include context "
			     "switches)",
			     out->cpu);
		else if (out->smt_siblings)
			warn(out,
			     "cpus %d and %d are SMT siblings of one core: the responder's spinning slows the "
			     "measuring thread (no two cores are allowed here)",
			     out->cpu, r->cpu);
		if (!out->shared && !r->local && req->n_local)
			warn(out, "responder cpu %d is not local to the device", r->cpu);
	}
	if (out->governor[0] && strcmp(out->governor, "performance") != 0)
		warn(out, "cpu %d runs the '%s' frequency governor: its clock may change during the run", out->cpu,
		     out->governor);
	if (n_iso > 0 && !out->cpu_isolated && req->want_cpu < 0)
		warn(out, "cpu %d is not isolated although the host isolates cpus (none of them is allowed here)",
		     out->cpu);
	free(cs);
	return 0;
}
