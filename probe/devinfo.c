// SPDX-License-Identifier: MIT
/*
 * Device discovery: node identity from /proc, /etc and sysfs; device and port attributes from ibv_query_device/port and
 * ibv_query_gid; NUMA node, local CPUs and the PCIe link from sysfs and PCI config space; and the real max_inline_data per
 * QP type, found by creating throw-away QPs (doubling, then bisecting) because verbs has no attribute for it.
 */
#include "devinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define SYSFS_IB "/sys/class/infiniband"
#define INLINE_PROBE_LIMIT (1u << 16)

/* Reads the first line of path into buf (newline stripped); returns 0 or -1. */
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
	char path[128];
	DIR *d;
	struct dirent *de;
	int node = -1;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
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

int rt_devinfo_probe_max_inline(struct ibv_pd *pd, enum ibv_qp_type qp_type, uint32_t limit, uint32_t *max_inline,
				uint32_t *written_back)
{
	struct ibv_cq *cq;
	uint32_t ok = 0, bad = 0, ok_back = 0;
	int rc = 0;

	*max_inline = 0; /* defined on every path: 0 when the probe fails */
	if (written_back)
		*written_back = 0;
	cq = ibv_create_cq(pd->context, 4, NULL, NULL, 0);
	if (!cq)
		return errno ? errno : ENOMEM;

		/* try(v): creates a QP asking for v bytes of inline; true when the provider accepts it */
#define TRY_INLINE(v, back_out)                                                     \
	({                                                                          \
		struct ibv_qp_init_attr a_ = { .send_cq = cq,                       \
					       .recv_cq = cq,                       \
					       .qp_type = qp_type,                  \
					       .cap = { .max_send_wr = 1,           \
							.max_recv_wr = 1,           \
							.max_send_sge = 1,          \
							.max_recv_sge = 1,          \
							.max_inline_data = (v) } }; \
		struct ibv_qp *q_ = ibv_create_qp(pd, &a_);                         \
		if (q_) {                                                           \
			(back_out) = a_.cap.max_inline_data;                        \
			ibv_destroy_qp(q_);                                         \
		}                                                                   \
		q_ != NULL;                                                         \
	})

	errno = 0;
	if (!TRY_INLINE(0, ok_back)) {
		rc = errno ? errno
			   : EOPNOTSUPP; /* why not even a QP without inline: unsupported, or out of resources */
		goto out;
	}
	/* double until refused or at the limit */
	for (uint32_t v = 64;; v = v * 2 > limit ? limit : v * 2) {
		uint32_t back;

		if (TRY_INLINE(v, back)) {
			ok = v;
			ok_back = back;
			if (v == limit)
				break;
		} else {
			bad = v;
			break;
		}
	}
	/* bisect in (ok, bad): invariant ok accepted, bad refused */
	while (bad && bad - ok > 1) {
		uint32_t mid = ok + (bad - ok) / 2, back;

		if (TRY_INLINE(mid, back)) {
			ok = mid;
			ok_back = back;
		} else {
			bad = mid;
		}
	}
#undef TRY_INLINE
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

/* MPS and MRRS from the Device Control register of the PCI Express capability in config space (root reads it all;
 * others see only the first 64 bytes, then the values stay 0 = unknown). */
static void read_pcie_ctrl(const char *devdir, struct rt_device_info *out)
{
	char path[PATH_MAX];
	uint8_t cfg[256];
	ssize_t n;
	int fd, guard = 0;
	unsigned pos;

	snprintf(path, sizeof(path), "%s/config", devdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, cfg, sizeof(cfg));
	close(fd);
	if (n < 0x40 || !(cfg[6] & 0x10)) /* status: capability list present */
		return;
	pos = cfg[0x34] & 0xfc;
	while (pos >= 0x40 && pos + 10 < (unsigned)n && guard++ < 48) {
		if (cfg[pos] == 0x10) { /* PCI Express capability */
			unsigned ctl = cfg[pos + 8] | (unsigned)cfg[pos + 9] << 8;

			out->pcie_max_payload_bytes = 128 << ((ctl >> 5) & 7);
			out->pcie_max_read_req_bytes = 128 << ((ctl >> 12) & 7);
			return;
		}
		pos = cfg[pos + 1] & 0xfc;
	}
}

static void read_sysfs(const char *name, struct rt_device_info *out)
{
	char path[PATH_MAX], real[PATH_MAX], buf[256];
	const char *base;

	out->numa_node = -1;
	snprintf(path, sizeof(path), SYSFS_IB "/%s/device", name);
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
	if (strlen(base) == 12 && base[4] == ':' && base[7] == ':' && base[10] == '.' && access(path, R_OK) == 0) {
		snprintf(out->pci_addr, sizeof(out->pci_addr), "%s", base);
		snprintf(path, sizeof(path), "%s/current_link_speed", real);
		if (read_line(path, buf, sizeof(buf)) == 0)
			snprintf(out->pcie_speed, sizeof(out->pcie_speed), "%s", buf);
		snprintf(path, sizeof(path), "%s/current_link_width", real);
		out->pcie_width = read_int(path, 0);
		read_pcie_ctrl(real, out);
	}
}

static void query_port(struct ibv_context *ctx, const char *name, int port, struct rt_port_info *p)
{
	struct ibv_port_attr pa;
	char path[PATH_MAX], buf[64];

	memset(p, 0, sizeof(*p));
	p->port_num = port;
	if (ibv_query_port(ctx, (uint8_t)port, &pa)) {
		snprintf(p->state, sizeof(p->state), "unknown");
		return;
	}
	snprintf(p->state, sizeof(p->state), "%s", ibv_port_state_str(pa.state));
	snprintf(p->link_layer, sizeof(p->link_layer), "%s", link_layer_str(pa.link_layer));
	p->active_mtu_bytes = 128 << pa.active_mtu;
	p->max_mtu_bytes = 128 << pa.max_mtu;
	p->lid = pa.lid;
	p->gid_tbl_len = pa.gid_tbl_len;
	for (int i = 0; i < pa.gid_tbl_len && p->gid_count < RT_MAX_GIDS; i++) {
		union ibv_gid gid;
		struct rt_gid_info *g;
		static const uint8_t zero[16];

		if (ibv_query_gid(ctx, (uint8_t)port, i, &gid) || memcmp(gid.raw, zero, sizeof(zero)) == 0)
			continue;
		g = &p->gids[p->gid_count++];
		g->index = i;
		gid_to_str(&gid, g->gid, sizeof(g->gid));
		snprintf(path, sizeof(path), SYSFS_IB "/%s/ports/%d/gid_attrs/types/%d", name, port, i);
		if (read_line(path, buf, sizeof(buf)) == 0)
			snprintf(g->type, sizeof(g->type), "%s", buf);
	}
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
	read_sysfs(out->name, out);
	rc = ibv_query_device(ctx, &da);
	if (rc)
		return rt_error_set(err, rc, "cannot query device '%s': %s", out->name, strerror(rc));
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
		query_port(ctx, out->name, p + 1, &out->ports[p]);
	if (probe_inline) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		uint32_t v;

		if (!pd) {
			rc = errno ? errno : ENOMEM;
			return rt_error_set(err, rc, "cannot allocate a protection domain on '%s': %s", out->name,
					    strerror(rc));
		}
		if (rt_devinfo_probe_max_inline(pd, IBV_QPT_RC, INLINE_PROBE_LIMIT, &v, NULL) == 0)
			out->max_inline_rc = (int)v;
		if (rt_devinfo_probe_max_inline(pd, IBV_QPT_UD, INLINE_PROBE_LIMIT, &v, NULL) == 0)
			out->max_inline_ud = (int)v;
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
		struct ibv_context *ctx = ibv_open_device(list[i]);

		if (!ctx) {
			snprintf(devs[i].name, sizeof(devs[i].name), "%s", ibv_get_device_name(list[i]));
			devs[i].max_inline_rc = devs[i].max_inline_ud = -1;
			read_sysfs(devs[i].name, &devs[i]);
			continue;
		}
		rc = rt_devinfo_query(ctx, probe_inline, &devs[i], err);
		ibv_close_device(ctx);
		if (rc)
			goto out;
	}
	*out = devs;
	*n_out = n;
	devs = NULL;
out:
	free(devs);
	ibv_free_device_list(list);
	return rc;
}
