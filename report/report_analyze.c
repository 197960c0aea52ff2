// SPDX-License-Identifier: MIT
/*
 * The fleet report's analysis: groups nodes by hardware class, computes per group and (device, port, opcode, QP type)
 * slot the median and spread of each decision, finds robust outliers (median and MAD on a log scale, with a floor per
 * metric so that the tuner's own resolution — one size step, one power of two of N — never makes an outlier), names
 * each outlier's likely cause from the facts that set it apart from its group's majority, and derives a recommended
 * group profile from the inliers.
 *
 * Hardware class: CPU model, NUMA node count and, per device, name, vendor/part and link layer. Firmware, PCIe MPS /
 * MRRS / link, MTU and the device's NUMA node are left out on purpose: nodes that differ only in those belong to the
 * same class, and the difference is what explains an outlier. A node without hardware facts is grouped by its
 * hardware signature alone.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <rtune/profile.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void sort_double_depth(double *v, size_t n, int depth)
{
	while (n > 16) {
		double a = v[0], b = v[n / 2], c = v[n - 1], p, t;
		size_t lt = 0, i = 0, gt = n;

		if (depth-- == 0) {
			qsort(v, n, sizeof(*v), cmp_double);
			return;
		}
		p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		/* v[0, lt) < p, v[lt, i) == p, v[gt, n) > p */
		while (i < gt) {
			if (v[i] < p) {
				t = v[lt];
				v[lt++] = v[i];
				v[i++] = t;
			} else if (p < v[i]) {
				t = v[--gt];
				v[gt] = v[i];
				v[i] = t;
			} else {
				i++;
			}
		}
		/* recurse into the smaller side, loop on the larger */
		if (lt < n - gt) {
			sort_double_depth(v, lt, depth);
			v += gt;
			n -= gt;
		} else {
			sort_double_depth(v + gt, n - gt, depth);
			n = lt;
		}
	}
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		for (; j > 0 && x < v[j - 1]; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Sorts v (no NAN) ascending: a three-way quicksort (a fleet's values repeat a lot: a slot of 12,500 nodes holds a
 * handful of distinct thresholds), insertion sort for short ranges, and qsort() once the recursion is deeper than
 * 2 log2(n) + 8 (adversarial input). */
static void sort_double(double *v, size_t n)
{
	int depth = 8;

	for (size_t k = n; k > 1; k >>= 1)
		depth += 2;
	sort_double_depth(v, n, depth);
}

static double quantile_sorted(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double f = pos - (double)i;

	return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[n - 1];
}

/* Median, MAD (raw), min, max, p10, p90 of v, which is sorted ascending (no NAN). n == 0 leaves NANs. */
static void stat_sorted(const double *v, size_t n, struct rp_stat *out)
{
	double *dev;
	size_t lo, hi, k = 0;

	memset(out, 0, sizeof(*out));
	out->n = n;
	if (!n) {
		out->median = out->mad = out->min = out->max = out->p10 = out->p90 = NAN;
		return;
	}
	out->median = quantile_sorted(v, n, 0.5);
	out->min = v[0];
	out->max = v[n - 1];
	out->p10 = quantile_sorted(v, n, 0.1);
	out->p90 = quantile_sorted(v, n, 0.9);
	dev = malloc(n * sizeof(*dev));
	if (!dev) {
		out->mad = NAN;
		return;
	}
	/* the absolute deviations of a sorted array, sorted without sorting: those below the median grow leftwards,
	 * those above it rightwards, so one merge from the median outwards orders them */
	hi = 0;
	while (hi < n && v[hi] < out->median)
		hi++;
	lo = hi;
	while (lo > 0 || hi < n) {
		double dl = lo > 0 ? out->median - v[lo - 1] : INFINITY, dh = hi < n ? v[hi] - out->median : INFINITY;

		if (dl <= dh) {
			dev[k++] = fabs(v[lo - 1] - out->median);
			lo--;
		} else {
			dev[k++] = fabs(v[hi] - out->median);
			hi++;
		}
	}
	out->mad = quantile_sorted(dev, n, 0.5);
	free(dev);
}

/* Sorts v in place; median, MAD (raw), min, max, p10, p90. n == 0 leaves NANs. */
void rp_stat_compute(double *v, size_t n, struct rp_stat *out)
{
	sort_double(v, n);
	stat_sorted(v, n, out);
}

/* ---- groups ------------------------------------------------------------------------------------------------------ */

static int cmp_dev_name(const void *a, const void *b)
{
	return strcmp(((const struct rp_dev *)a)->name, ((const struct rp_dev *)b)->name);
}

/* The group id of node n: its hardware signature when the input had no hardware facts, else "hw:" and a hash of the
 * class (see the file comment). Sorts n's devices by name. */
static void group_id(struct rp_node *n, char id[40])
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char num[16];

	if (!n->has_hw) {
		snprintf(id, 40, "%s", n->hw_sig[0] ? n->hw_sig : "unknown");
		return;
	}
	if (n->n_devs > 1)
		qsort(n->devs, (size_t)n->n_devs, sizeof(*n->devs), cmp_dev_name);
	h = rp_fnv1a(h, n->cpu_model);
	snprintf(num, sizeof(num), "%d", n->numa_nodes);
	h = rp_fnv1a(h, num);
	for (int i = 0; i < n->n_devs; i++) {
		const struct rp_dev *d = &n->devs[i];
		char dk[128];

		snprintf(dk, sizeof(dk), "%s|%d|%d|%s", d->name, d->vendor_id, d->vendor_part_id, d->link_layer);
		h = rp_fnv1a(h, dk);
	}
	snprintf(id, 40, "hw:%016" PRIx64, h);
}

/* The label of the group whose first node is n (malloc'd; NULL when out of memory). */
static char *group_label(const struct rp_node *n)
{
	char buf[512];
	size_t off = 0;

	if (!n->has_hw) {
		snprintf(buf, sizeof(buf), "hardware signature %s (no hardware facts in the input)",
			 n->hw_sig[0] ? n->hw_sig : "unknown");
		return strdup(buf);
	}
	off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s, %d NUMA node%s",
				n->cpu_model[0] ? n->cpu_model : "unknown CPU", n->numa_nodes,
				n->numa_nodes == 1 ? "" : "s");
	for (int i = 0; i < n->n_devs; i++) {
		const struct rp_dev *d = &n->devs[i];

		if (off < sizeof(buf))
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "; %s %04x:%04x %s", d->name,
						(unsigned)d->vendor_id, (unsigned)d->vendor_part_id,
						d->link_layer[0] ? d->link_layer : "?");
	}
	return strdup(buf);
}

static int cmp_group(const void *a, const void *b)
{
	const struct rp_group *x = a, *y = b;

	if (x->n_nodes != y->n_nodes)
		return x->n_nodes > y->n_nodes ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int build_groups(struct rt_report *r)
{
	size_t cap = 0, tcap = 64;
	size_t *tab;

	while (tcap < r->n_nodes * 2)
		tcap *= 2;
	tab = malloc(tcap * sizeof(*tab));
	if (!tab)
		return ENOMEM;
	for (size_t i = 0; i < tcap; i++)
		tab[i] = SIZE_MAX;
	for (size_t i = 0; i < r->n_nodes; i++) {
		struct rp_node *n = &r->nodes[i];
		struct rp_group *g;
		char id[40];
		size_t h;

		group_id(n, id);
		h = (size_t)rp_fnv1a(0xcbf29ce484222325ULL, id) & (tcap - 1);
		while (tab[h] != SIZE_MAX && strcmp(r->groups[tab[h]].id, id) != 0)
			h = (h + 1) & (tcap - 1);
		if (tab[h] == SIZE_MAX) {
			char *label = group_label(n);

			if (!label)
				goto oom;
			if (r->n_groups == cap) {
				struct rp_group *ng = realloc(r->groups, (cap = cap ? cap * 2 : 16) * sizeof(*ng));

				if (!ng) {
					free(label);
					goto oom;
				}
				r->groups = ng;
			}
			g = &r->groups[r->n_groups];
			memset(g, 0, sizeof(*g));
			snprintf(g->id, sizeof(g->id), "%s", id);
			g->label = label;
			g->from_hw = n->has_hw;
			tab[h] = r->n_groups++;
		} else {
			g = &r->groups[tab[h]];
		}
		/* nodes are appended in a second pass once counts are known */
		g->n_nodes++;
		n->group = (int)tab[h];
	}
	free(tab);
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		r->groups[gi].nodes = malloc(r->groups[gi].n_nodes * sizeof(size_t));
		if (!r->groups[gi].nodes)
			return ENOMEM;
		r->groups[gi].n_nodes = 0;
	}
	for (size_t i = 0; i < r->n_nodes; i++) {
		struct rp_group *g = &r->groups[r->nodes[i].group];

		g->nodes[g->n_nodes++] = i;
	}
	/* biggest groups first; renumber the nodes' group index */
	if (r->n_groups > 1)
		qsort(r->groups, r->n_groups, sizeof(*r->groups), cmp_group);
	for (size_t gi = 0; gi < r->n_groups; gi++)
		for (size_t k = 0; k < r->groups[gi].n_nodes; k++)
			r->nodes[r->groups[gi].nodes[k]].group = (int)gi;
	return 0;
oom:
	free(tab);
	return ENOMEM;
}

/* ---- slots, statistics, outliers ---------------------------------------------------------------------------------- */

struct ref {
	size_t node, entry;
};

static bool same_slot(const struct rp_slot *s, const struct rp_entry *e)
{
	return s->port == e->port && s->opcode == e->opcode && s->qp_type == e->qp_type &&
	       !strcmp(s->device, e->device);
}

static double metric_value(const struct rp_entry *e, enum rp_metric m)
{
	switch (m) {
	case RP_M_THRESHOLD: return e->inline_threshold;
	case RP_M_INTERVAL: return e->signal_interval;
	case RP_M_LAT: return e->lat_ns;
	default: return e->mops;
	}
}

/* The log scale outliers are judged on, and the smallest robust scale per metric (see the file comment). */
static double metric_t(double x, enum rp_metric m)
{
	return m == RP_M_THRESHOLD ? log2(x + 8) : log2(x > 1e-9 ? x : 1e-9);
}

/* Latency: 0.04 (a 2.8 % step, so at z 3.5 a node 10 % or more slower than its group): a remote-NUMA calibration
 * (+10-20 %) stands out, a node within a few % of its group does not; the floor is raised to 1.5x the group's
 * measured noise where the profiles carry it. */
static const double metric_floor[RP_M__COUNT] = { 0.2, 0.55, 0.04, 0.1 };

/* The smallest robust scale of metric m in a slot: its floor, or 1.5 times the slot's median run noise (on the log2
 * scale) when the entries carry it and that is larger. */
static double slot_floor(const struct rt_report *r, const struct ref *refs, size_t n, enum rp_metric m, double *tmp)
{
	size_t k = 0;
	double fl = metric_floor[m], noise;

	if (m != RP_M_LAT && m != RP_M_MOPS)
		return fl;
	for (size_t i = 0; i < n; i++) {
		float x = r->nodes[refs[i].node].entries[refs[i].entry].noise_pct;

		if (!isnan(x))
			tmp[k++] = x;
	}
	if (!k)
		return fl;
	sort_double(tmp, k);
	noise = 1.5 * log2(1 + tmp[(k - 1) / 2] / 100);
	return noise > fl ? noise : fl;
}

static const struct rp_dev *find_dev(const struct rp_node *n, const char *name)
{
	for (int i = 0; i < n->n_devs; i++)
		if (!strcmp(n->devs[i].name, name))
			return &n->devs[i];
	return n->n_devs == 1 ? &n->devs[0] : NULL;
}

/* Most common integer among the group's devices of that name (or entries); share in *cnt / *tot. */
struct mode_int {
	int val;
	size_t cnt, tot;
};
struct mode_str {
	const char *val;
	size_t cnt, tot;
};

enum dev_field { F_MPS, F_MRRS, F_MTU, F_NUMA, F_WIDTH };

static int dev_int(const struct rp_dev *d, enum dev_field f)
{
	switch (f) {
	case F_MPS: return d->mps;
	case F_MRRS: return d->mrrs;
	case F_MTU: return d->active_mtu;
	case F_NUMA: return d->numa_node;
	default: return d->pcie_width;
	}
}

static struct mode_int mode_dev_int(const struct rt_report *r, const struct rp_group *g, const char *dev,
				    enum dev_field f)
{
	struct mode_int best = { -1, 0, 0 };

	/* O(n^2) over distinct values is avoided: values are few, count them with a small table */
	int vals[16];
	size_t cnts[16], nv = 0;

	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_dev *d = find_dev(&r->nodes[g->nodes[k]], dev);
		int v;
		size_t j;

		if (!d || (v = dev_int(d, f)) < 0)
			continue;
		best.tot++;
		for (j = 0; j < nv && vals[j] != v; j++)
			;
		if (j == nv) {
			if (nv == 16)
				continue;
			vals[nv] = v;
			cnts[nv++] = 0;
		}
		cnts[j]++;
	}
	for (size_t j = 0; j < nv; j++)
		if (cnts[j] > best.cnt) {
			best.cnt = cnts[j];
			best.val = vals[j];
		}
	return best;
}

enum dev_sfield { S_FW, S_SPEED };

static struct mode_str mode_dev_str(const struct rt_report *r, const struct rp_group *g, const char *dev,
				    enum dev_sfield f)
{
	struct mode_str best = { NULL, 0, 0 };
	const char *vals[16];
	size_t cnts[16], nv = 0;

	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_dev *d = find_dev(&r->nodes[g->nodes[k]], dev);
		const char *v;
		size_t j;

		if (!d)
			continue;
		v = f == S_FW ? d->fw_ver : d->pcie_speed;
		if (!v[0])
			continue;
		best.tot++;
		for (j = 0; j < nv && strcmp(vals[j], v) != 0; j++)
			;
		if (j == nv) {
			if (nv == 16)
				continue;
			vals[nv] = v;
			cnts[nv++] = 0;
		}
		cnts[j]++;
	}
	for (size_t j = 0; j < nv; j++)
		if (cnts[j] > best.cnt) {
			best.cnt = cnts[j];
			best.val = vals[j];
		}
	return best;
}

static void add_cause(struct rp_outlier *o, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_cause(struct rp_outlier *o, const char *code, const char *fmt, ...)
{
	size_t cl = strlen(o->causes), el = strlen(o->evidence);
	va_list ap;

	snprintf(o->causes + cl, sizeof(o->causes) - cl, "%s%s", cl ? "," : "", code);
	if (el && el + 2 < sizeof(o->evidence)) {
		snprintf(o->evidence + el, sizeof(o->evidence) - el, "; ");
		el += 2;
	}
	va_start(ap, fmt);
	vsnprintf(o->evidence + el, sizeof(o->evidence) - el, fmt, ap);
	va_end(ap);
}

/* What explain() compares against, computed once per slot (and device name): a group of 100,000 nodes with many
 * outliers must not rescan the group per outlier. */
struct slot_ctx {
	bool counted;
	size_t local, known, lowconf;
	char dev[32];
	bool have_modes;
	struct mode_int mps, mrrs, mtu, numa, width;
	struct mode_str fw, speed;
};

/* Names what sets node/entry apart from its group: calibration locality, PCIe, firmware, link, confidence, age. */
static void explain(const struct rt_report *r, const struct rp_group *g, const struct ref *refs, size_t n_refs,
		    int64_t median_measured, struct slot_ctx *c, struct rp_outlier *o)
{
	const struct rp_node *node = &r->nodes[o->node];
	const struct rp_entry *e = &node->entries[o->entry];
	const struct rp_dev *d = find_dev(node, e->device);
	char when[32], gwhen[32];

	if (!c->counted) {
		for (size_t i = 0; i < n_refs; i++) {
			const struct rp_entry *x = &r->nodes[refs[i].node].entries[refs[i].entry];

			if (x->cal_local >= 0) {
				c->known++;
				c->local += x->cal_local == 1;
			}
			c->lowconf += x->confidence == RT_PROFILE_CONF_LOW;
		}
		c->counted = true;
	}
	/* remote calibrations must be the exception in the group for one to explain an outlier */
	if (e->cal_local == 0 && (c->known - c->local) * 2 < n_refs)
		add_cause(
			o, "remote_numa_calibration",
			"calibrated from a CPU on NUMA node %d while the device is on node %d; %zu of %zu nodes in the group "
			"calibrated NUMA-local",
			e->cal_cpu_numa, e->numa_node >= 0 ? e->numa_node : (d ? d->numa_node : -1), c->local,
			c->known);
	if (d && (!c->have_modes || strcmp(c->dev, d->name))) {
		snprintf(c->dev, sizeof(c->dev), "%s", d->name);
		c->mps = mode_dev_int(r, g, d->name, F_MPS);
		c->fw = mode_dev_str(r, g, d->name, S_FW);
		c->speed = mode_dev_str(r, g, d->name, S_SPEED);
		c->width = mode_dev_int(r, g, d->name, F_WIDTH);
		c->mrrs = mode_dev_int(r, g, d->name, F_MRRS);
		c->mtu = mode_dev_int(r, g, d->name, F_MTU);
		c->numa = mode_dev_int(r, g, d->name, F_NUMA);
		c->have_modes = true;
	}
	if (d) {
		const struct mode_int m = c->mps, w = c->width, rr = c->mrrs, mtu = c->mtu, dn = c->numa;
		const struct mode_str fw = c->fw, sp = c->speed;

		if (d->mps >= 0 && m.cnt * 2 > m.tot && d->mps != m.val)
			add_cause(o, "different_mps", "PCIe max payload %d B on %s while %zu of %zu nodes have %d B",
				  d->mps, d->name, m.cnt, m.tot, m.val);
		if (d->fw_ver[0] && fw.val && fw.cnt * 2 > fw.tot && strcmp(d->fw_ver, fw.val) != 0)
			add_cause(o, "different_firmware", "firmware %s on %s while %zu of %zu nodes run %s", d->fw_ver,
				  d->name, fw.cnt, fw.tot, fw.val);
		if (d->mrrs >= 0 && rr.cnt * 2 > rr.tot && d->mrrs != rr.val)
			add_cause(o, "different_mrrs",
				  "PCIe max read request %d B on %s while %zu of %zu nodes have %d B", d->mrrs, d->name,
				  rr.cnt, rr.tot, rr.val);
		if ((d->pcie_width >= 0 && w.cnt * 2 > w.tot && d->pcie_width != w.val) ||
		    (d->pcie_speed[0] && sp.val && sp.cnt * 2 > sp.tot && strcmp(d->pcie_speed, sp.val) != 0))
			add_cause(o, "different_pcie_link", "PCIe link %s x%d on %s while most nodes have %s x%d",
				  d->pcie_speed[0] ? d->pcie_speed : "?", d->pcie_width, d->name, sp.val ? sp.val : "?",
				  w.val);
		if (d->active_mtu >= 0 && mtu.cnt * 2 > mtu.tot && d->active_mtu != mtu.val)
			add_cause(o, "different_mtu", "active MTU %d on %s while %zu of %zu nodes have %d",
				  d->active_mtu, d->name, mtu.cnt, mtu.tot, mtu.val);
		if (d->numa_node >= 0 && dn.cnt * 2 > dn.tot && d->numa_node != dn.val)
			add_cause(o, "different_device_numa",
				  "%s sits on NUMA node %d while %zu of %zu nodes have it on %d", d->name, d->numa_node,
				  dn.cnt, dn.tot, dn.val);
	}
	if (e->confidence == RT_PROFILE_CONF_LOW && c->lowconf * 2 < n_refs)
		add_cause(o, "low_confidence",
			  "the tuner's confidence is low (%zu of %zu profiles in the group are low)", c->lowconf,
			  n_refs);
	if (e->measured_at < median_measured - (int64_t)r->opts.stale_days * 86400)
		add_cause(o, "stale_profile", "measured %s, %" PRId64 " days before the group's median profile (%s)",
			  rp_time(e->measured_at, when), (median_measured - e->measured_at) / 86400,
			  rp_time(median_measured, gwhen));
	for (size_t i = 0; i < r->n_drifts; i++) {
		const struct rp_drift *dr = &r->drifts[i];

		if (!strcmp(dr->hostname, node->hostname) && !strcmp(dr->device, e->device) && dr->port == e->port) {
			add_cause(o, "drift",
				  "the node's latest run moved away from its own history: %s %.0f now, %.0f "
				  "before (median of %zu runs)",
				  rp_metric_name(dr->metric), dr->latest, dr->hist_median, dr->hist_runs);
			break;
		}
	}
	if (!o->causes[0] && e->cal_local < 0)
		/* unknown is not different: without the calibration facts a remote-NUMA calibration is not ruled out */
		add_cause(
			o, "placement_unknown",
			"placement unknown: the profile does not say which NUMA node %s was calibrated from (no "
			"calibration facts), so a remote-NUMA calibration cannot be ruled out; no PCIe, firmware, link, "
			"confidence or age difference from the group was found; recalibrate it pinned to the device's "
			"NUMA node",
			e->device);
	else if (!o->causes[0])
		add_cause(o, "unexplained",
			  "no calibration, PCIe, firmware, link, confidence or age difference from the "
			  "group was found; recalibrate %s and compare its curves",
			  e->device);
}

/* A group's outliers, in the order found (each group is analyzed on its own, possibly on another thread). */
struct olist {
	struct rp_outlier *v;
	size_t n, cap;
};

/* Makes room for need outliers in *v of capacity *cap (doubling from 16). 0 or ENOMEM (*v kept). */
static int outliers_reserve(struct rp_outlier **v, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 16;
	struct rp_outlier *no;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (!(no = realloc(*v, c * sizeof(*no))))
		return ENOMEM;
	*v = no;
	*cap = c;
	return 0;
}

static int add_outlier(struct olist *l, const struct rp_outlier *o)
{
	if (outliers_reserve(&l->v, &l->cap, l->n + 1))
		return ENOMEM;
	l->v[l->n++] = *o;
	return 0;
}

/* Lower median of the inliers' values (an actually chosen value, never an average of two); sorts v. The values are
 * uint32_t held exactly in doubles. */
static uint32_t lower_median_u32(double *v, size_t n)
{
	sort_double(v, n);
	return (uint32_t)v[(n - 1) / 2];
}

static void recommend(const struct rt_report *r, struct rp_slot *s, const struct ref *refs, size_t n)
{
	double *a = malloc(n * sizeof(*a) * 5 + 1);
	double *th, *mi, *iv, *sq, *cq;
	size_t k = 0;
	bool use_low = false;

	if (!a)
		return;
	th = a;
	mi = a + n;
	iv = a + 2 * n;
	sq = a + 3 * n;
	cq = a + 4 * n;
again:
	for (size_t i = 0; i < n; i++) {
		const struct rp_entry *e = &r->nodes[refs[i].node].entries[refs[i].entry];

		if (e->outlier_mask & ((1u << RP_M_THRESHOLD) | (1u << RP_M_INTERVAL)))
			continue;
		if (!use_low && e->confidence == RT_PROFILE_CONF_LOW)
			continue;
		th[k] = e->inline_threshold;
		mi[k] = e->max_inline_data;
		iv[k] = e->signal_interval;
		sq[k] = e->sq_depth;
		cq[k] = e->cq_depth;
		k++;
	}
	if (k == 0 && !use_low) {
		use_low = true;
		goto again;
	}
	if (k) {
		double spread;

		s->has_rec = true;
		s->rec_basis = k;
		s->rec_threshold = lower_median_u32(th, k);
		s->rec_max_inline = lower_median_u32(mi, k);
		if (s->rec_max_inline < s->rec_threshold)
			s->rec_max_inline = s->rec_threshold;
		s->rec_interval = lower_median_u32(iv, k);
		s->rec_sq_depth = lower_median_u32(sq, k);
		s->rec_cq_depth = lower_median_u32(cq, k);
		if (s->rec_interval > s->rec_sq_depth)
			s->rec_interval = s->rec_sq_depth;
		spread = (th[k - 1 - (k - 1) / 10] + 8.0) / (th[(k - 1) / 10] + 8.0);
		/* low when the group's entries are themselves low-confidence, or too few to agree on anything */
		if (!use_low && k >= 5 && spread <= 1.5)
			s->rec_confidence = "high";
		else if (!use_low && k >= 3)
			s->rec_confidence = "medium";
		else
			s->rec_confidence = "low";
	}
	free(a);
}

/* Analyzes group gi: its slots, statistics, outliers (into ol) and recommendations. Writes only the group, its nodes'
 * entries (outlier_mask) and ol: groups may be analyzed in parallel. 0 or ENOMEM. */
static int analyze_group(struct rt_report *r, size_t gi, struct olist *ol)
{
	struct rp_group *g = &r->groups[gi];
	struct ref *refs = NULL;
	double *vals = NULL, *tv = NULL;
	double *times = NULL; /* seconds since the epoch: exact in a double */
	size_t cap_slots = 0, total = 0;
	int rc = ENOMEM;

	/* slots */
	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *n = &r->nodes[g->nodes[k]];

		total += (size_t)n->n_entries;
		for (int i = 0; i < n->n_entries; i++) {
			const struct rp_entry *e = &n->entries[i];
			size_t j;

			for (j = 0; j < g->n_slots && !same_slot(&g->slots[j], e); j++)
				;
			if (j == g->n_slots) {
				if (g->n_slots == cap_slots) {
					struct rp_slot *ns = realloc(
						g->slots, (cap_slots = cap_slots ? cap_slots * 2 : 4) * sizeof(*ns));

					if (!ns)
						return ENOMEM;
					g->slots = ns;
				}
				memset(&g->slots[j], 0, sizeof(g->slots[j]));
				snprintf(g->slots[j].device, sizeof(g->slots[j].device), "%s", e->device);
				g->slots[j].port = e->port;
				g->slots[j].opcode = e->opcode;
				g->slots[j].qp_type = e->qp_type;
				g->n_slots++;
			}
			g->slots[j].n++;
		}
	}
	refs = malloc((total + 1) * sizeof(*refs));
	vals = malloc((total + 1) * sizeof(*vals));
	tv = malloc((total + 1) * sizeof(*tv));
	times = malloc((total + 1) * sizeof(*times));
	if (!refs || !vals || !tv || !times)
		goto out;
	for (size_t si = 0; si < g->n_slots; si++) {
		struct rp_slot *s = &g->slots[si];
		struct slot_ctx ctx;
		size_t n = 0;
		int64_t med_time;

		memset(&ctx, 0, sizeof(ctx));

		for (size_t k = 0; k < g->n_nodes; k++) {
			const struct rp_node *nd = &r->nodes[g->nodes[k]];

			for (int i = 0; i < nd->n_entries; i++)
				if (same_slot(s, &nd->entries[i])) {
					refs[n].node = g->nodes[k];
					refs[n].entry = (size_t)i;
					times[n] = (double)nd->entries[i].measured_at;
					n++;
				}
		}
		sort_double(times, n);
		med_time = (int64_t)times[(n - 1) / 2];
		for (int m = 0; m < RP_M__COUNT; m++) {
			size_t nv = 0;
			struct rp_stat ts;
			bool sorted = true;

			for (size_t i = 0; i < n; i++) {
				double x =
					metric_value(&r->nodes[refs[i].node].entries[refs[i].entry], (enum rp_metric)m);

				if (!isnan(x))
					vals[nv++] = x;
			}
			rp_stat_compute(vals, nv, &s->st[m]);
			if (nv < (size_t)r->opts.min_group)
				continue;
			/* metric_t is non-decreasing: the transformed sorted values are sorted (checked, as log2 is not
			 * promised to be monotonic to the last bit) */
			for (size_t i = 0; i < nv; i++) {
				tv[i] = metric_t(vals[i], (enum rp_metric)m);
				if (i && tv[i] < tv[i - 1])
					sorted = false;
			}
			if (!sorted)
				sort_double(tv, nv);
			stat_sorted(tv, nv, &ts);
			{
				double scale = 1.4826 * ts.mad, fl = slot_floor(r, refs, n, (enum rp_metric)m, times);

				if (scale < fl)
					scale = fl;
				for (size_t i = 0; i < n; i++) {
					struct rp_entry *e = &r->nodes[refs[i].node].entries[refs[i].entry];
					double x = metric_value(e, (enum rp_metric)m), z;
					struct rp_outlier o;

					if (isnan(x))
						continue;
					z = (metric_t(x, (enum rp_metric)m) - ts.median) / scale;
					if (fabs(z) <= r->opts.outlier_z)
						continue;
					memset(&o, 0, sizeof(o));
					o.group = gi;
					o.node = refs[i].node;
					o.entry = refs[i].entry;
					o.metric = (enum rp_metric)m;
					o.value = x;
					o.median = s->st[m].median;
					o.z = z;
					e->outlier_mask |= (uint8_t)(1u << m);
					explain(r, g, refs, n, med_time, &ctx, &o);
					snprintf(o.cause, sizeof(o.cause), "%.*s", (int)strcspn(o.causes, ","),
						 o.causes);
					if (add_outlier(ol, &o))
						goto out;
				}
			}
		}
		recommend(r, s, refs, n);
	}
	rc = 0;
out:
	free(refs);
	free(vals);
	free(tv);
	free(times);
	return rc;
}

/* Orders outlier indices by group, node, entry, metric (qsort_r). */
static int cmp_by_node(const void *a, const void *b, void *arg)
{
	const struct rt_report *r = arg;
	const struct rp_outlier *x = &r->outliers[*(const size_t *)a], *y = &r->outliers[*(const size_t *)b];

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	return (x->metric > y->metric) - (x->metric < y->metric);
}

/* The outliers per node (an operator acts on nodes: one node with three outlying entries is one thing to fix). */
static int build_outlier_nodes(struct rt_report *r)
{
	if (!r->n_outliers)
		return 0;
	r->by_node = malloc(r->n_outliers * sizeof(*r->by_node));
	r->onodes = malloc(r->n_outliers * sizeof(*r->onodes));
	if (!r->by_node || !r->onodes)
		return ENOMEM;
	for (size_t i = 0; i < r->n_outliers; i++)
		r->by_node[i] = i;
	qsort_r(r->by_node, r->n_outliers, sizeof(*r->by_node), cmp_by_node, r);
	for (size_t i = 0; i < r->n_outliers; i++) {
		size_t node = r->outliers[r->by_node[i]].node;

		if (!r->n_onodes || r->onodes[r->n_onodes - 1].node != node)
			r->onodes[r->n_onodes++] = (struct rp_onode){ node, i, 0 };
		r->onodes[r->n_onodes - 1].count++;
	}
	return 0;
}

static bool has_entry_for(const struct rp_node *n, const char *dev)
{
	for (int i = 0; i < n->n_entries; i++)
		if (!strcmp(n->entries[i].device, dev))
			return true;
	return false;
}

/* Stale nodes (newest entry older than stale_days before now) and devices a node has without a profile entry, in
 * group order. */
static int build_stale(struct rt_report *r)
{
	int64_t limit = r->opts.now - (int64_t)r->opts.stale_days * 86400;
	size_t cap = 0;

	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];

		for (size_t k = 0; k < g->n_nodes; k++) {
			const struct rp_node *n = &r->nodes[g->nodes[k]];

			for (int d = -1; d < n->n_devs; d++) {
				struct rp_stale *ns;

				if (d < 0 ? n->newest >= limit : has_entry_for(n, n->devs[d].name))
					continue;
				if (r->n_stale == cap) {
					ns = realloc(r->stale, (cap = cap ? cap * 2 : 16) * sizeof(*ns));
					if (!ns)
						return ENOMEM;
					r->stale = ns;
				}
				ns = &r->stale[r->n_stale++];
				memset(ns, 0, sizeof(*ns));
				ns->node = g->nodes[k];
				ns->missing_device = d >= 0;
				if (d >= 0)
					snprintf(ns->device, sizeof(ns->device), "%s", n->devs[d].name);
			}
		}
	}
	return 0;
}

/* The groups being analyzed: each thread takes the next group until none is left. */
struct group_pool {
	struct rt_report *r;
	struct olist *ol; /* per group */
	int *rc;	  /* per group */
	size_t next;	  /* atomically incremented */
};

static void *group_worker(void *arg)
{
	struct group_pool *p = arg;
	size_t gi;

	while ((gi = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->r->n_groups)
		p->rc[gi] = analyze_group(p->r, gi, &p->ol[gi]);
	return NULL;
}

/* Analyzes every group, on up to one thread per online CPU (at most 8) when there are several groups and enough
 * nodes to pay for the threads; the outliers are then appended group by group, so the result does not depend on the
 * threads. 0 or ENOMEM. */
static int analyze_groups(struct rt_report *r)
{
	struct group_pool p = { r, calloc(r->n_groups + 1, sizeof(*p.ol)), calloc(r->n_groups + 1, sizeof(*p.rc)), 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t tid[7];
	int nt = 0, rc = 0;

	if (!p.ol || !p.rc) {
		free(p.ol);
		free(p.rc);
		return ENOMEM;
	}
	if (r->n_groups > 1 && r->n_nodes >= (size_t)rp_analyze_parallel_nodes && cpus > 1) {
		long want = cpus < 8 ? cpus - 1 : 7;

		for (; nt < want && (size_t)nt < r->n_groups - 1; nt++)
			if (pthread_create(&tid[nt], NULL, group_worker, &p))
				break;
	}
	group_worker(&p);
	for (int t = 0; t < nt; t++)
		pthread_join(tid[t], NULL);
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		struct olist *l = &p.ol[gi];

		if (!rc && p.rc[gi])
			rc = p.rc[gi];
		if (!rc && l->n)
			rc = outliers_reserve(&r->outliers, &r->cap_outliers, r->n_outliers + l->n);
		if (!rc && l->n) {
			memcpy(r->outliers + r->n_outliers, l->v, l->n * sizeof(*l->v));
			r->n_outliers += l->n;
		}
		free(l->v);
	}
	free(p.ol);
	free(p.rc);
	return rc;
}

int rp_analyze_parallel_nodes = 4096;

int rp_analyze(struct rt_report *r, struct rt_error *err)
{
	int rc;

	if (r->analyzed)
		return 0;
	if ((rc = build_groups(r)) || (rc = analyze_groups(r)))
		return rt_error_set(err, rc, "report: out of memory");
	if ((rc = build_outlier_nodes(r)) || (rc = build_stale(r)))
		return rt_error_set(err, rc, "report: out of memory");
	r->analyzed = true;
	return 0;
}

size_t rp_outlier_causes(const struct rp_outlier *o, char *buf, size_t len, const char **codes, size_t max)
{
	size_t n = 0;

	snprintf(buf, len, "%s", o->causes);
	for (char *p = buf, *save = NULL, *t; n < max && (t = strtok_r(p, ",", &save)); p = NULL)
		codes[n++] = t;
	return n;
}

size_t rt_report_outlier_node_count(const struct rt_report *r)
{
	return r->n_onodes;
}

const char *rt_report_outlier_node_at(const struct rt_report *r, size_t i, size_t *entries)
{
	if (i >= r->n_onodes)
		return NULL;
	if (entries) {
		const struct rp_onode *on = &r->onodes[i];
		size_t n = 0;

		for (size_t k = 0; k < on->count; k++)
			n += k == 0 || r->outliers[r->by_node[on->first + k]].entry !=
					       r->outliers[r->by_node[on->first + k - 1]].entry;
		*entries = n;
	}
	return r->nodes[r->onodes[i].node].hostname;
}

size_t rt_report_stale_count(const struct rt_report *r)
{
	return r->n_stale;
}

const char *rt_report_stale_at(const struct rt_report *r, size_t i, const char **missing_device)
{
	if (i >= r->n_stale)
		return NULL;
	if (missing_device)
		*missing_device = r->stale[i].missing_device ? r->stale[i].device : NULL;
	return r->nodes[r->stale[i].node].hostname;
}

int rt_report_analyze(struct rt_report *r, struct rt_error *err)
{
	return rp_analyze(r, err);
}

/* ---- accessors --------------------------------------------------------------------------------------------------- */

size_t rt_report_group_count(const struct rt_report *r)
{
	return r->n_groups;
}
size_t rt_report_outlier_count(const struct rt_report *r)
{
	return r->n_outliers;
}
size_t rt_report_drift_count(const struct rt_report *r)
{
	return r->n_drifts;
}

const char *rt_report_group_id(const struct rt_report *r, size_t i)
{
	return i < r->n_groups ? r->groups[i].id : NULL;
}

const char *rt_report_group_label(const struct rt_report *r, size_t i)
{
	return i < r->n_groups ? r->groups[i].label : NULL;
}

size_t rt_report_group_nodes(const struct rt_report *r, size_t i)
{
	return i < r->n_groups ? r->groups[i].n_nodes : 0;
}

const char *rt_report_group_of(const struct rt_report *r, const char *hostname)
{
	for (size_t i = 0; i < r->n_nodes; i++)
		if (!strcmp(r->nodes[i].hostname, hostname) && r->nodes[i].group >= 0)
			return r->groups[r->nodes[i].group].id;
	return NULL;
}

bool rt_report_outlier_at(const struct rt_report *r, size_t i, struct rt_report_outlier_view *out)
{
	const struct rp_outlier *o;
	const struct rp_entry *e;

	if (i >= r->n_outliers)
		return false;
	o = &r->outliers[i];
	e = &r->nodes[o->node].entries[o->entry];
	out->group = r->groups[o->group].id;
	out->hostname = r->nodes[o->node].hostname;
	out->device = e->device;
	out->port = e->port;
	out->opcode = rt_profile_opcode_name((enum rt_profile_opcode)e->opcode);
	out->qp_type = rt_profile_qp_type_name((enum rt_profile_qp_type)e->qp_type);
	out->metric = rp_metric_name(o->metric);
	out->value = o->value;
	out->group_median = o->median;
	out->robust_z = o->z;
	out->cause = o->cause;
	out->causes = o->causes;
	out->evidence = o->evidence;
	return true;
}

bool rt_report_drift_at(const struct rt_report *r, size_t i, struct rt_report_drift_view *out)
{
	const struct rp_drift *d;

	if (i >= r->n_drifts)
		return false;
	d = &r->drifts[i];
	out->hostname = d->hostname;
	out->device = d->device;
	out->source = d->source;
	out->port = d->port;
	out->metric = rp_metric_name(d->metric);
	out->latest = d->latest;
	out->history_median = d->hist_median;
	out->history_runs = d->hist_runs;
	out->evidence = d->evidence;
	return true;
}
