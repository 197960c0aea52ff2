// SPDX-License-Identifier: MIT
/*
 * Device discovery: node identity from /proc, /etc and sysfs; device and port attributes from ibv_query_device/port; the
 * whole GID table with types and netdevs (ibv_query_gid_table, else ibv_query_gid_ex, else ibv_query_gid and sysfs) and
 * the default GID pick; NUMA node, local CPUs and the PCIe link from sysfs and PCI config space (unknown stays unknown:
 * config space past 64 bytes needs root, a VF's MPS is its PF's); and the real max_inline_data per QP type, found by
 * creating throw-away QPs (doubling, then bisecting) because verbs has no attribute for it -- only EINVAL means "too
 * big", any other failure is retried and then reported, never taken for a smaller maximum. sysfs is read under
 * $SYSFS_PATH when set, as libibverbs does.
 */
#include "devinfo.h"
#include "rt_efa.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define INLINE_PROBE_LIMIT (1u << 16)
#define INLINE_PROBE_TRIES 4 /* attempts of one size before a failure that is not "too big" is reported */

/* The sysfs root: $SYSFS_PATH when set (libibverbs honours the same variable), else /sys. */
static const char *sysfs_root(void)
{
	const char *p = secure_getenv("SYSFS_PATH");

	return p && *p ? p : "/sys";
}

/* Reads the first line of path into buf (newline stripped); returns 0 or -1. */
static int read_line(const char *path, char *buf, size_t len);

void rt_devinfo_rnr_counters(const char *name, int port, struct rt_rnr_counters *out)
{
	static const char *const names[] = { "rnr_nak_retry_err", "out_of_buffer", "req_rnr_retries_exceeded",
					     "rcvd_rnr_err",	  "send_rnr_err",  "retry_rnr_exceeded_err" };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && out->n < RT_RNR_COUNTERS; i++) {
		char path[512], buf[32], *end;
		unsigned long long v;

		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/hw_counters/%s", sysfs_root(), name, port,
			 names[i]);
		if (read_line(path, buf, sizeof(buf)))
			continue;
		errno = 0;
		v = strtoull(buf, &end, 10);
		if (errno || end == buf)
			continue;
		snprintf(out->name[out->n], sizeof(out->name[0]), "%s", names[i]);
		out->value[out->n++] = v;
	}
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

static int read_int(const char *path, int fallback)
{
	char buf[64];
	char *end;
	long v;

	if (read_line(path, buf, sizeof(buf)))
		return fallback;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (errno || end == buf || v < INT_MIN || v > INT_MAX)
		return fallback;
	return (int)v;
}

void rt_devinfo_node(struct rt_node_info *out)
{
	struct utsname un;
	char line[512];
	FILE *f;
	DIR *d;
	struct dirent *de;
	long ncpu;

	memset(out, 0, sizeof(*out));
	if (gethostname(out->hostname, sizeof(out->hostname) - 1))
		out->hostname[0] = '\0';
	if (read_line("/etc/machine-id", out->machine_id, sizeof(out->machine_id)))
		out->machine_id[0] = '\0';
	if (uname(&un) == 0)
		snprintf(out->kernel, sizeof(out->kernel), "%s", un.release);
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (strncmp(line, "model name", 10) || !colon)
				continue;
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(out->cpu_model, sizeof(out->cpu_model), "%s", colon);
			break;
		}
		fclose(f);
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	out->cpu_count = ncpu > 0 ? (int)ncpu : 1;
	d = opendir("/sys/devices/system/node");
	if (d) {
		while ((de = readdir(d)))
			if (strncmp(de->d_name, "node", 4) == 0 && isdigit((unsigned char)de->d_name[4]))
				out->numa_nodes++;
		closedir(d);
	}
	if (out->numa_nodes < 1)
		out->numa_nodes = 1;
}

int rt_cpulist_parse(const char *list, int *cpus, int max)
{
	const char *p = list;
	int n = 0;

	while (*p && *p != '\n') {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(p, &end, 10);
		if (end == p || errno || a < 0 || a > 65535)
			return -1;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (end == p || errno || b < a || b > 65535)
				return -1;
			p = end;
		}
		for (long c = a; c <= b; c++) {
			if (n < max)
				cpus[n] = (int)c;
			n++;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -1;
	}
	return n;
}

int rt_cpu_numa_node(int cpu)
{
	return rt_cpu_numa_node_at("/sys", cpu);
}

int rt_cpu_numa_node_at(const char *sys_root, int cpu)
{
	char path[512];
	DIR *d;
	struct dirent *de;
	int node = -1;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d", sys_root, cpu);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "node", 4) == 0 && isdigit((unsigned char)de->d_name[4])) {
			char *end;
			long v;

			errno = 0;
			v = strtol(de->d_name + 4, &end, 10);
			if (!errno && !*end && v <= INT_MAX) /* "node<N>" exactly; anything else is not a NUMA link */
				node = (int)v;
			break;
		}
	}
	closedir(d);
	return node;
}

/*
 * Creates (and destroys) one QP of type t on pd asking for v bytes of inline. Returns 0 when the provider accepts it
 * (*back = what it wrote back into cap.max_inline_data); EINVAL or EOPNOTSUPP when it refuses the size (mlx4, mlx5, rxe, irdma,
 * bnxt_re and efa answer a too large max_inline_data with EINVAL, nbl with EOPNOTSUPP, returned as it is); -1
 * when it refused without setting errno (bnxt_re's variable-WQE check returns -EINVAL without setting it); any other
 * errno (ENOMEM, EAGAIN: RLIMIT_MEMLOCK, QPs exhausted by other processes) only after INLINE_PROBE_TRIES attempts 1, 10
 * and 100 ms apart.
 */
static int try_inline(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type t, uint32_t v, uint32_t *back)
{
	long wait_ns = 1000000;

	for (int k = 1;; k++, wait_ns *= 10) {
		struct ibv_qp_init_attr a = { .send_cq = cq,
					      .recv_cq = cq,
					      .qp_type = t,
					      .cap = { .max_send_wr = 1,
						       .max_recv_wr = 1,
						       .max_send_sge = 1,
						       .max_recv_sge = 1,
						       .max_inline_data = v } };
		struct timespec ts = { 0, wait_ns };
		struct ibv_qp *q;
		int e;

		errno = 0;
		q = ibv_create_qp(pd, &a);
		if (q) {
			*back = a.cap.max_inline_data;
			ibv_destroy_qp(q);
			return 0;
		}
		e = errno;
		if (e == EINVAL || e == EOPNOTSUPP)
			return e; /* a refusal of the parameters: deterministic, not retried */
		if (e == 0)
			return -1;
		if (k == INLINE_PROBE_TRIES)
			return e;
		nanosleep(&ts, NULL);
	}
}

int rt_devinfo_probe_max_inline(struct ibv_pd *pd, enum ibv_qp_type qp_type, uint32_t limit, uint32_t *max_inline,
				uint32_t *written_back)
{
	struct ibv_cq *cq;
	uint32_t ok = 0, bad = 0, ok_back = 0;
	int rc = 0, r;

	*max_inline = 0; /* defined on every path: 0 when the probe fails */
	if (written_back)
		*written_back = 0;
	errno = 0;
	cq = ibv_create_cq(pd->context, 4, NULL, NULL, 0);
	if (!cq)
		return errno ? errno : ENOMEM;
	/* not even a QP without inline: the QP type is unsupported, or the device is out of resources */
	r = try_inline(pd, cq, qp_type, 0, &ok_back);
	if (r) {
		rc = r < 0 ? EOPNOTSUPP : r;
		goto out;
	}
	/* double until refused or at the limit */
	for (uint32_t v = 64;; v = v * 2 > limit ? limit : v * 2) {
		uint32_t back;

		r = try_inline(pd, cq, qp_type, v, &back);
		if (r > 0 && r != EINVAL && r != EOPNOTSUPP) {
			rc = r; /* neither accepted nor refused as too big: the maximum is unknown */
			goto out;
		}
		if (r == 0) {
			ok = v;
			ok_back = back;
			if (v == limit)
				break;
		} else {
			bad = v;
			break;
		}
	}
	/* bisect in (ok, bad): invariant ok accepted, bad refused as too big */
	while (bad && bad - ok > 1) {
		uint32_t mid = ok + (bad - ok) / 2, back;

		r = try_inline(pd, cq, qp_type, mid, &back);
		if (r > 0 && r != EINVAL && r != EOPNOTSUPP) {
			rc = r;
			goto out;
		}
		if (r == 0) {
			ok = mid;
			ok_back = back;
		} else {
			bad = mid;
		}
	}
	*max_inline = ok;
	if (written_back)
		*written_back = ok_back;
out:
	ibv_destroy_cq(cq);
	return rc;
}

static void gid_to_str(const union ibv_gid *gid, char *buf, size_t len)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0], r[1], r[2],
		 r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "unspecified";
	}
}

static const char *transport_str(enum ibv_transport_type t)
{
	switch (t) {
	case IBV_TRANSPORT_IB: return "InfiniBand";
	case IBV_TRANSPORT_IWARP: return "iWARP";
	case IBV_TRANSPORT_USNIC: return "usNIC";
	case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
	case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
	default: return "unknown";
	}
}

/* ---- GIDs ---------------------------------------------------------------------------------------------------- */

/* The kinds of GID in the order of preference of the default pick (see rt_devinfo_gid_pick). */
static const char *const gid_kind_names[] = {
	"RoCE v2 IPv4-mapped", "RoCE v2 IPv6 global", "RoCE v2 IPv6 link-local",
	"RoCE v1 IPv4-mapped", "RoCE v1 IPv6 global", "RoCE v1 IPv6 link-local",
	"untyped IPv4-mapped", "untyped IPv6 global", "untyped IPv6 link-local",
};
#define GID_KINDS ((int)(sizeof(gid_kind_names) / sizeof(gid_kind_names[0])))

/* Rank of g in gid_kind_names: 3 * type (v2, v1, unknown) + address (IPv4-mapped, global, link-local); -1 for a GID
 * that is no RoCE address (all zero, multicast, an InfiniBand type). */
static int gid_kind(const struct rt_gid_info *g)
{
	int t, a;

	if (strcmp(g->type, "RoCE v2") == 0)
		t = 0;
	else if (strcmp(g->type, "RoCE v1") == 0 || strcmp(g->type, "IB/RoCE v1") == 0)
		t = 1;
	else if (g->type[0] == '\0')
		t = 2;
	else
		return -1;
	if (strncmp(g->gid, "0000:0000:0000:0000:0000:ffff:", 30) == 0)
		a = 0;
	else if (strncmp(g->gid, "fe80:", 5) == 0)
		a = 2;
	else if (strncmp(g->gid, "ff", 2) == 0 || strcmp(g->gid, "0000:0000:0000:0000:0000:0000:0000:0000") == 0)
		return -1;
	else
		a = 1;
	return 3 * t + a;
}

int rt_devinfo_gid_pick(const struct rt_gid_info *gids, int n, char *why, size_t len)
{
	int best = -1, best_kind = GID_KINDS;

	for (int i = 0; i < n; i++) {
		int k = gid_kind(&gids[i]);

		if (k >= 0 && (k < best_kind || (k == best_kind && gids[i].index < gids[best].index))) {
			best = i;
			best_kind = k;
		}
	}
	if (best < 0) {
		snprintf(why, len, "no RoCE GID among %d valid entries (is the netdev up with an address?)", n);
		return -1;
	}
	{
		const struct rt_gid_info *g = &gids[best];
		char addr[48] = "";

		if (best_kind % 3 == 0) { /* "...:ffff:c0a8:0115": the last two groups are the IPv4 address */
			char *end;
			unsigned long a = strtoul(g->gid + 30, &end, 16), b = 0;

			if (end == g->gid + 34 && *end == ':')
				b = strtoul(end + 1, &end, 16);
			if (end == g->gid + 39 && a <= 0xffff && b <= 0xffff)
				snprintf(addr, sizeof(addr), " %lu.%lu.%lu.%lu", a >> 8, a & 0xff, b >> 8, b & 0xff);
		}
		snprintf(why, len, "first %s GID%s%s%s%s%s", gid_kind_names[best_kind], addr,
			 g->netdev[0] ? " on " : "", g->netdev, best_kind ? "; none is " : "",
			 best_kind ? gid_kind_names[0] : "");
		return g->index;
	}
}

static const char *gid_type_str(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "";
	}
}

static int cmp_gid_index(const void *a, const void *b)
{
	const struct rt_gid_info *x = a, *y = b;

	return (x->index > y->index) - (x->index < y->index);
}

static void gid_from_entry(const struct ibv_gid_entry *e, struct rt_gid_info *g)
{
	char ifname[IF_NAMESIZE];

	memset(g, 0, sizeof(*g));
	g->index = (int)e->gid_index;
	gid_to_str(&e->gid, g->gid, sizeof(g->gid));
	snprintf(g->type, sizeof(g->type), "%s", gid_type_str(e->gid_type));
	if (e->ndev_ifindex && if_indextoname(e->ndev_ifindex, ifname))
		snprintf(g->netdev, sizeof(g->netdev), "%s", ifname);
}

/* One port's valid GIDs by ibv_query_gid_ex, entry by entry (ENODATA: an empty entry). Returns how many (in g), or -1
 * when the verb is not available at all (then the caller falls back to ibv_query_gid). */
static int gids_by_query_ex(struct ibv_context *ctx, int port, int tbl_len, struct rt_gid_info *g)
{
	int n = 0, answered = 0;

	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		int rc = ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)i, &e, 0);

		if (rc == 0) {
			gid_from_entry(&e, &g[n]);
			g[n].index = i;
			if (strcmp(g[n].gid, "0000:0000:0000:0000:0000:0000:0000:0000") != 0)
				n++;
			answered++;
		} else if (rc == ENODATA) {
			answered++;
		} else if (!answered && (rc == EOPNOTSUPP || rc == ENOSYS)) {
			return -1;
		}
	}
	return n;
}

/* One port's valid GIDs by ibv_query_gid with the type and netdev from sysfs (gid_attrs/types/N, gid_attrs/ndevs/N). */
static int gids_by_query(struct ibv_context *ctx, const char *name, int port, int tbl_len, struct rt_gid_info *g)
{
	static const uint8_t zero[16];
	int n = 0;

	for (int i = 0; i < tbl_len; i++) {
		char path[PATH_MAX];
		union ibv_gid gid;

		if (ibv_query_gid(ctx, (uint8_t)port, i, &gid) || memcmp(gid.raw, zero, sizeof(zero)) == 0)
			continue;
		memset(&g[n], 0, sizeof(g[n]));
		g[n].index = i;
		gid_to_str(&gid, g[n].gid, sizeof(g[n].gid));
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/gid_attrs/types/%d", sysfs_root(), name,
			 port, i);
		if (read_line(path, g[n].type, sizeof(g[n].type)))
			g[n].type[0] = '\0';
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", sysfs_root(), name,
			 port, i);
		if (read_line(path, g[n].netdev, sizeof(g[n].netdev)))
			g[n].netdev[0] = '\0';
		n++;
	}
	return n;
}

/* Stores port p's n valid GIDs (sorted by index; the first RT_MAX_GIDS kept) and its default pick. */
static void port_set_gids(struct rt_port_info *p, struct rt_gid_info *g, int n, const char *source)
{
	qsort(g, (size_t)n, sizeof(*g), cmp_gid_index);
	p->gid_valid = n;
	p->gid_count = n < RT_MAX_GIDS ? n : RT_MAX_GIDS;
	memcpy(p->gids, g, (size_t)p->gid_count * sizeof(*g));
	snprintf(p->gid_source, sizeof(p->gid_source), "%s", source);
	if (strcmp(p->link_layer, "Ethernet") == 0) {
		p->gid_pick = rt_devinfo_gid_pick(g, n, p->gid_pick_reason, sizeof(p->gid_pick_reason));
	} else if (strcmp(p->link_layer, "unspecified") == 0 && n > 0) {
		/* EFA: no LID and no RoCE GID types; its GID (one) is its address, which every address handle needs */
		p->gid_pick = g[0].index;
		snprintf(p->gid_pick_reason, sizeof(p->gid_pick_reason),
			 "unspecified link layer (EFA): the port's first GID is its address");
	} else {
		p->gid_pick = -1;
		snprintf(p->gid_pick_reason, sizeof(p->gid_pick_reason),
			 "%s link layer: addressed by LID, no GID needed", p->link_layer);
	}
}

/* Reads every port's whole GID table: ibv_query_gid_table, else per port ibv_query_gid_ex, else ibv_query_gid and
 * sysfs. Ports whose table cannot be read are left without GIDs (gid_pick -1 with the reason). */
static void read_gids(struct ibv_context *ctx, struct rt_device_info *out)
{
	size_t total = 0;
	struct ibv_gid_entry *e = NULL;
	struct rt_gid_info *g;
	ssize_t n = -1;

	for (int p = 0; p < out->port_count; p++) {
		out->ports[p].gid_pick = -1;
		total += (size_t)out->ports[p].gid_tbl_len;
	}
	if (!total)
		return;
	g = calloc(total, sizeof(*g));
	if (!g) {
		for (int p = 0; p < out->port_count; p++)
			snprintf(out->ports[p].gid_pick_reason, sizeof(out->ports[p].gid_pick_reason),
				 "out of memory reading the GID table");
		return;
	}
	e = calloc(total, sizeof(*e));
	if (e)
		n = ibv_query_gid_table(ctx, e, total, 0);
	for (int p = 0; p < out->port_count; p++) {
		struct rt_port_info *pi = &out->ports[p];
		int k = 0;

		if (pi->gid_tbl_len <= 0)
			continue; /* a port that could not be queried keeps its reason */
		if (n >= 0) {
			for (ssize_t i = 0; i < n; i++)
				if (e[i].port_num == (uint32_t)pi->port_num && k < pi->gid_tbl_len)
					gid_from_entry(&e[i], &g[k++]);
			port_set_gids(pi, g, k, "ibv_query_gid_table");
			continue;
		}
		k = gids_by_query_ex(ctx, pi->port_num, pi->gid_tbl_len, g);
		if (k >= 0) {
			port_set_gids(pi, g, k, "ibv_query_gid_ex");
			continue;
		}
		k = gids_by_query(ctx, out->name, pi->port_num, pi->gid_tbl_len, g);
		port_set_gids(pi, g, k, "ibv_query_gid+sysfs");
	}
	free(e);
	free(g);
}

/* ---- PCIe ---------------------------------------------------------------------------------------------------- */

/* Reads the Device Control register of the PCI Express capability from devdir/config into *mps and *mrrs (bytes).
 * Returns 0, or why not: ENOENT (no config file), EACCES (config space past the first 64 bytes is readable only by
 * root: the kernel returns 64 bytes to others), ENODATA (no PCI Express capability). */
static int read_pcie_ctrl(const char *devdir, int *mps, int *mrrs)
{
	char path[PATH_MAX];
	uint8_t cfg[256];
	ssize_t n;
	int fd, guard = 0;
	unsigned pos;

	snprintf(path, sizeof(path), "%s/config", devdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? EACCES : ENOENT;
	n = read(fd, cfg, sizeof(cfg));
	close(fd);
	if (n < 0)
		return EACCES;
	if (n < 0x40 || !(cfg[6] & 0x10)) /* status: capability list present */
		return n <= 0x40 ? EACCES : ENODATA;
	pos = cfg[0x34] & 0xfc;
	while (pos >= 0x40 && guard++ < 48) {
		if (pos + 10 > (unsigned)n)
			return n <= 0x40 ? EACCES : ENODATA;
		if (cfg[pos] == 0x10) { /* PCI Express capability */
			unsigned ctl = cfg[pos + 8] | (unsigned)cfg[pos + 9] << 8;

			*mps = 128 << ((ctl >> 5) & 7);
			*mrrs = 128 << ((ctl >> 12) & 7);
			return 0;
		}
		pos = cfg[pos + 1] & 0xfc;
	}
	return ENODATA;
}

static const char *ctrl_why(int rc)
{
	return rc == EACCES ? "needs root" : rc == ENOENT ? "no config space" : "no PCI Express capability";
}

/* MPS and MRRS of the function at devdir. An SR-IOV VF's MPS field is reserved (reads 0, which would decode as 128
 * bytes): the VF uses its PF's, read from physfn; its MRRS is its own. Unknown stays 0, with the reason in the note. */
static void read_pcie_caps(const char *devdir, struct rt_device_info *out)
{
	char path[PATH_MAX], pf[PATH_MAX];
	int mps = 0, mrrs = 0, rc, prc, pf_mps = 0, pf_mrrs = 0;

	snprintf(path, sizeof(path), "%s/physfn", devdir);
	if (realpath(path, pf)) {
		const char *b = strrchr(pf, '/');

		snprintf(out->pcie_physfn, sizeof(out->pcie_physfn), "%s", b ? b + 1 : pf);
		rc = read_pcie_ctrl(devdir, &mps, &mrrs);
		out->pcie_max_read_req_bytes = rc ? 0 : mrrs;
		prc = read_pcie_ctrl(pf, &pf_mps, &pf_mrrs);
		out->pcie_max_payload_bytes = prc ? 0 : pf_mps;
		if (prc)
			snprintf(out->pcie_ctrl_note, sizeof(out->pcie_ctrl_note),
				 "VF: max_payload is reserved, its PF's is unknown (%s)%s%s", ctrl_why(prc),
				 rc ? "; max_read_request " : "", rc ? ctrl_why(rc) : "");
		else
			snprintf(out->pcie_ctrl_note, sizeof(out->pcie_ctrl_note), "VF: max_payload is its PF's%s%s",
				 rc ? "; max_read_request " : "", rc ? ctrl_why(rc) : "");
		return;
	}
	rc = read_pcie_ctrl(devdir, &mps, &mrrs);
	if (rc) {
		snprintf(out->pcie_ctrl_note, sizeof(out->pcie_ctrl_note), "%s", ctrl_why(rc));
		return;
	}
	out->pcie_max_payload_bytes = mps;
	out->pcie_max_read_req_bytes = mrrs;
}

void rt_devinfo_sysfs(const char *name, struct rt_device_info *out)
{
	char path[PATH_MAX], real[PATH_MAX], buf[256];
	const char *base;

	out->numa_node = -1;
	out->local_cpus[0] = out->pci_addr[0] = out->pcie_speed[0] = out->pcie_physfn[0] = '\0';
	out->pcie_ctrl_note[0] = '\0';
	out->pcie_width = out->pcie_max_payload_bytes = out->pcie_max_read_req_bytes = 0;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", sysfs_root(), name);
	if (!realpath(path, real))
		return;
	snprintf(path, sizeof(path), "%s/numa_node", real);
	out->numa_node = read_int(path, -1);
	snprintf(path, sizeof(path), "%s/local_cpulist", real);
	if (read_line(path, out->local_cpus, sizeof(out->local_cpus)))
		out->local_cpus[0] = '\0';
	/* a PCI function's directory is named like 0000:3b:00.0 and has a class file */
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	snprintf(path, sizeof(path), "%s/class", real);
	if (strlen(base) == 12 && base[4] == ':' && base[7] == ':' && base[10] == '.' && access(path, F_OK) == 0) {
		snprintf(out->pci_addr, sizeof(out->pci_addr), "%s", base);
		snprintf(path, sizeof(path), "%s/current_link_speed", real);
		if (read_line(path, buf, sizeof(buf)) == 0)
			snprintf(out->pcie_speed, sizeof(out->pcie_speed), "%s", buf);
		snprintf(path, sizeof(path), "%s/current_link_width", real);
		out->pcie_width = read_int(path, 0);
		read_pcie_caps(real, out);
	}
}

/* ---- ports, devices ------------------------------------------------------------------------------------------ */

static void query_port(struct ibv_context *ctx, int port, struct rt_port_info *p)
{
	struct ibv_port_attr pa;

	memset(p, 0, sizeof(*p));
	p->port_num = port;
	p->gid_pick = -1;
	if (ibv_query_port(ctx, (uint8_t)port, &pa)) {
		snprintf(p->state, sizeof(p->state), "unknown");
		snprintf(p->gid_pick_reason, sizeof(p->gid_pick_reason), "the port could not be queried");
		return;
	}
	snprintf(p->state, sizeof(p->state), "%s", ibv_port_state_str(pa.state));
	snprintf(p->link_layer, sizeof(p->link_layer), "%s", link_layer_str(pa.link_layer));
	p->active_mtu_bytes = 128 << pa.active_mtu;
	p->max_mtu_bytes = 128 << pa.max_mtu;
	p->lid = pa.lid;
	p->gid_tbl_len = pa.gid_tbl_len;
}

/* EFA's caps and the SRD max inline (the device's inline buffer: no probing, efadv says it). */
static void query_efa(struct ibv_context *ctx, struct rt_device_info *out)
{
	struct rt_efa_caps ec;
	int rc = rt_efa_query(ctx, out->vendor_id, &ec);

	out->max_inline_srd_errno = rc;
	if (rc)
		return;
	out->efa.efa = true;
	out->efa.max_sq_wr = ec.max_sq_wr;
	out->efa.max_rq_wr = ec.max_rq_wr;
	out->efa.max_sq_sge = ec.max_sq_sge;
	out->efa.max_rq_sge = ec.max_rq_sge;
	out->efa.inline_buf_size = ec.inline_buf_size;
	out->efa.max_rdma_size = ec.max_rdma_size;
	out->efa.rdma_read = ec.rdma_read;
	out->efa.rdma_write = ec.rdma_write;
	out->efa.rnr_retry = ec.rnr_retry;
	out->max_inline_srd = (int)ec.inline_buf_size;
}

/* Probes the max inline of one QP type into *v (-1 when none) and *why (0, EOPNOTSUPP or the failure's errno). */
static void probe_one(struct ibv_pd *pd, enum ibv_qp_type t, int *v, int *why)
{
	uint32_t m;
	int rc = rt_devinfo_probe_max_inline(pd, t, INLINE_PROBE_LIMIT, &m, NULL);

	*v = rc ? -1 : (int)m;
	*why = rc == EINVAL ? EOPNOTSUPP : rc;
}

int rt_devinfo_query(struct ibv_context *ctx, bool probe_inline, struct rt_device_info *out, struct rt_error *err)
{
	struct ibv_device_attr da;
	uint64_t guid;
	uint8_t *g = (uint8_t *)&guid;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", ibv_get_device_name(ctx->device));
	snprintf(out->transport, sizeof(out->transport), "%s", transport_str(ctx->device->transport_type));
	out->max_inline_rc = -1;
	out->max_inline_ud = -1;
	out->max_inline_srd = -1;
	rt_devinfo_sysfs(out->name, out);
	rc = ibv_query_device(ctx, &da);
	if (rc) {
		rt_error_set(err, rc, "cannot query device '%s': %s", out->name, strerror(rc));
		snprintf(out->error, sizeof(out->error), "%s", err->text);
		return rc;
	}
	guid = da.node_guid; /* big endian in memory */
	snprintf(out->node_guid, sizeof(out->node_guid), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3],
		 g[4], g[5], g[6], g[7]);
	snprintf(out->fw_ver, sizeof(out->fw_ver), "%s", da.fw_ver);
	out->vendor_id = da.vendor_id;
	out->vendor_part_id = da.vendor_part_id;
	out->hw_ver = da.hw_ver;
	out->max_qp = da.max_qp;
	out->max_qp_wr = da.max_qp_wr;
	out->max_sge = da.max_sge;
	out->max_cqe = da.max_cqe;
	out->max_qp_rd_atom = da.max_qp_rd_atom;
	out->max_mr = da.max_mr;
	out->port_count = da.phys_port_cnt < RT_MAX_PORTS ? da.phys_port_cnt : RT_MAX_PORTS;
	for (int p = 0; p < out->port_count; p++)
		query_port(ctx, p + 1, &out->ports[p]);
	read_gids(ctx, out);
	query_efa(ctx, out);
	if (probe_inline) {
		struct ibv_pd *pd;

		errno = 0;
		pd = ibv_alloc_pd(ctx);
		if (!pd) {
			/* the device is listed; only its max inline is unknown */
			out->max_inline_rc_errno = out->max_inline_ud_errno = errno ? errno : ENOMEM;
			return 0;
		}
		probe_one(pd, IBV_QPT_RC, &out->max_inline_rc, &out->max_inline_rc_errno);
		probe_one(pd, IBV_QPT_UD, &out->max_inline_ud, &out->max_inline_ud_errno);
		ibv_dealloc_pd(pd);
	}
	return 0;
}

int rt_devinfo_list(bool probe_inline, struct rt_device_info **out, int *n_out, struct rt_error *err)
{
	struct ibv_device **list;
	struct rt_device_info *devs = NULL;
	int n = 0, rc = 0;

	*out = NULL;
	*n_out = 0;
	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		/* ENOSYS: no kernel support at all, which for the user is "no device" */
		if (errno == ENOSYS)
			return 0;
		return rt_error_set(err, errno ? errno : EIO, "cannot list RDMA devices: %s",
				    strerror(errno ? errno : EIO));
	}
	if (n == 0)
		goto out;
	devs = calloc((size_t)n, sizeof(*devs));
	if (!devs) {
		rc = rt_error_set(err, ENOMEM, "out of memory listing %d devices", n);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx;
		struct rt_error derr;

		errno = 0;
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			int e = errno ? errno : ENODEV;

			snprintf(devs[i].name, sizeof(devs[i].name), "%s", ibv_get_device_name(list[i]));
			devs[i].max_inline_rc = devs[i].max_inline_ud = devs[i].max_inline_srd = -1;
			rt_devinfo_sysfs(devs[i].name, &devs[i]);
			snprintf(devs[i].error, sizeof(devs[i].error), "cannot open device '%s': %s", devs[i].name,
				 strerror(e));
			continue;
		}
		/* a device that cannot be queried keeps its name, sysfs facts and the error (in devs[i].error) */
		rt_devinfo_query(ctx, probe_inline, &devs[i], &derr);
		ibv_close_device(ctx);
	}
	*out = devs;
	*n_out = n;
	devs = NULL;
out:
	free(devs);
	ibv_free_device_list(list);
	return rc;
}
