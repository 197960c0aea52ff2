// SPDX-License-Identifier: MIT
/*
 * Unit tests of device discovery without a device: the PCIe facts read from a fake sysfs tree ($SYSFS_PATH) -- config
 * space readable in full (root) or only its first 64 bytes (everyone else), an SR-IOV VF whose MPS field is reserved,
 * no config space, a virtual device -- with unknown recorded as unknown and one hardware signature whether or not root
 * read it; and the default GID pick over a table of more than 16 entries of mixed types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devinfo.h"
#include "rt_store.h"

static char root[PATH_MAX];

static void put(const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void put_str(const char *rel, const char *s)
{
	put(rel, s, strlen(s));
}

static void mkdirs(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "mkdir -p '%s/%s'", root, rel);
	assert_int_equal(system(path), 0);
}

static void link_to(const char *target_rel, const char *link_rel)
{
	char t[PATH_MAX], l[PATH_MAX];

	snprintf(t, sizeof(t), "%s/%s", root, target_rel);
	snprintf(l, sizeof(l), "%s/%s", root, link_rel);
	unlink(l);
	assert_int_equal(symlink(t, l), 0);
}

/* A config space with a PCI Express capability at 0x40 whose Device Control encodes mps and mrrs (bytes; mps 0 = the
 * field reads 0 as on a VF); len bytes of it are written (256 as root reads it, 64 as anyone else). */
static void put_config(const char *fn_rel, int mps, int mrrs, size_t len)
{
	uint8_t cfg[256] = { 0 };
	char rel[PATH_MAX];
	unsigned ctl = 0;

	for (int c = 0; mps && (128 << c) < mps; c++)
		ctl = (unsigned)(c + 1) << 5;
	for (int c = 0; (128 << c) < mrrs; c++)
		ctl = (ctl & ~(7u << 12)) | (unsigned)(c + 1) << 12;
	cfg[0] = 0xb3; /* vendor 0x15b3 */
	cfg[1] = 0x15;
	cfg[6] = 0x10; /* capability list */
	cfg[0x34] = 0x40;
	cfg[0x40] = 0x10; /* PCI Express */
	cfg[0x41] = 0;
	cfg[0x48] = (uint8_t)ctl;
	cfg[0x49] = (uint8_t)(ctl >> 8);
	snprintf(rel, sizeof(rel), "%s/config", fn_rel);
	put(rel, cfg, len);
}

/* A PCI function directory with the world-readable sysfs facts. */
static void put_function(const char *fn_rel)
{
	char rel[PATH_MAX];

	mkdirs(fn_rel);
	snprintf(rel, sizeof(rel), "%s/class", fn_rel);
	put_str(rel, "0x020000\n");
	snprintf(rel, sizeof(rel), "%s/numa_node", fn_rel);
	put_str(rel, "1\n");
	snprintf(rel, sizeof(rel), "%s/local_cpulist", fn_rel);
	put_str(rel, "16-31\n");
	snprintf(rel, sizeof(rel), "%s/current_link_speed", fn_rel);
	put_str(rel, "16.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/current_link_width", fn_rel);
	put_str(rel, "16\n");
}

#define PF "devices/pci0000:00/0000:3b:00.0"
#define VF "devices/pci0000:00/0000:3b:00.2"

static int setup(void **state)
{
	char tmpl[] = "/tmp/rtune-sysfs-XXXXXX";

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(root, sizeof(root), "%s", tmpl);
	setenv("SYSFS_PATH", root, 1);
	mkdirs("class/infiniband/mlx5_0");
	mkdirs("class/infiniband/mlx5_2");
	put_function(PF);
	put_function(VF);
	link_to(PF, "class/infiniband/mlx5_0/device");
	link_to(VF, "class/infiniband/mlx5_2/device");
	link_to(PF, VF "/physfn");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	unsetenv("SYSFS_PATH");
	return system(cmd) == 0 ? 0 : -1;
}

/* The verbs facts of one device, as rt_devinfo_query would fill them, then the sysfs facts from the tree. */
static void device(const char *name, struct rt_device_info *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->fw_ver, sizeof(d->fw_ver), "22.31.1014");
	d->vendor_id = 0x02c9;
	d->vendor_part_id = 4123;
	d->port_count = 1;
	d->ports[0].port_num = 1;
	snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "Ethernet");
	d->ports[0].active_mtu_bytes = 4096;
	rt_devinfo_sysfs(name, d);
}

static void signature(const struct rt_device_info *d, char out[32])
{
	struct rt_node_info node;

	memset(&node, 0, sizeof(node));
	snprintf(node.cpu_model, sizeof(node.cpu_model), "Intel(R) Xeon(R) Gold 6338");
	rt_store_hw_signature(&node, d, 1, out);
}

/* Root reads MPS/MRRS, a user reads 64 bytes of config space: the user's are unknown (0, with the reason), not a
 * guess, and both runs of the node get one hardware signature. */
static void test_pcie_root_and_user(void **state)
{
	struct rt_device_info as_root, as_user;
	char s_root[32], s_user[32], s_other[32];

	(void)state;
	put_config(PF, 256, 512, 256);
	device("mlx5_0", &as_root);
	assert_string_equal(as_root.pci_addr, "0000:3b:00.0");
	assert_string_equal(as_root.pcie_speed, "16.0 GT/s PCIe");
	assert_int_equal(as_root.pcie_width, 16);
	assert_int_equal(as_root.numa_node, 1);
	assert_int_equal(as_root.pcie_max_payload_bytes, 256);
	assert_int_equal(as_root.pcie_max_read_req_bytes, 512);
	assert_string_equal(as_root.pcie_ctrl_note, "");
	assert_string_equal(as_root.pcie_physfn, "");

	put_config(PF, 256, 512, 64); /* what the kernel gives a non-root reader */
	device("mlx5_0", &as_user);
	assert_int_equal(as_user.pcie_max_payload_bytes, 0);
	assert_int_equal(as_user.pcie_max_read_req_bytes, 0);
	assert_non_null(strstr(as_user.pcie_ctrl_note, "needs root"));
	assert_int_equal(as_user.pcie_width, 16); /* the world-readable facts are the same */

	signature(&as_root, s_root);
	signature(&as_user, s_user);
	assert_string_equal(s_root, s_user);
	/* and the signature still moves with the facts that form it */
	as_user.pcie_width = 8;
	signature(&as_user, s_other);
	assert_string_not_equal(s_root, s_other);
}

/* An SR-IOV VF: its MPS field is reserved (reads 0, which decodes as 128 bytes): the value is its PF's, or unknown
 * when the PF cannot be read; its MRRS is its own. */
static void test_pcie_vf(void **state)
{
	struct rt_device_info vf, vf_user;
	char s1[32], s2[32];

	(void)state;
	put_config(PF, 256, 512, 256);
	put_config(VF, 0, 1024, 256);
	device("mlx5_2", &vf);
	assert_string_equal(vf.pci_addr, "0000:3b:00.2");
	assert_string_equal(vf.pcie_physfn, "0000:3b:00.0");
	assert_int_equal(vf.pcie_max_payload_bytes, 256);
	assert_int_equal(vf.pcie_max_read_req_bytes, 1024);
	assert_non_null(strstr(vf.pcie_ctrl_note, "PF's"));

	put_config(PF, 256, 512, 64);
	put_config(VF, 0, 1024, 64);
	device("mlx5_2", &vf_user);
	assert_int_equal(vf_user.pcie_max_payload_bytes, 0);
	assert_int_equal(vf_user.pcie_max_read_req_bytes, 0);
	assert_non_null(strstr(vf_user.pcie_ctrl_note, "reserved"));
	assert_non_null(strstr(vf_user.pcie_ctrl_note, "needs root"));
	signature(&vf, s1);
	signature(&vf_user, s2);
	assert_string_equal(s1, s2);
}

/* No config file, and a device that is not a PCI function (rxe): nothing made up. */
static void test_pcie_absent(void **state)
{
	struct rt_device_info d;
	char path[PATH_MAX];

	(void)state;
	snprintf(path, sizeof(path), "%s/" PF "/config", root);
	unlink(path);
	device("mlx5_0", &d);
	assert_string_equal(d.pci_addr, "0000:3b:00.0");
	assert_int_equal(d.pcie_max_payload_bytes, 0);
	assert_non_null(strstr(d.pcie_ctrl_note, "no config space"));

	mkdirs("class/infiniband/rxe0");
	mkdirs("devices/virtual/net/eth0");
	link_to("devices/virtual/net/eth0", "class/infiniband/rxe0/device");
	device("rxe0", &d);
	assert_string_equal(d.pci_addr, "");
	assert_int_equal(d.numa_node, -1);
	device("nosuch0", &d);
	assert_string_equal(d.pci_addr, "");
}

/* ---- GID pick ---------------------------------------------------------------------------------------------- */

static int add_gid(struct rt_gid_info *g, int n, int index, const char *gid, const char *type, const char *netdev)
{
	memset(&g[n], 0, sizeof(g[n]));
	g[n].index = index;
	snprintf(g[n].gid, sizeof(g[n].gid), "%s", gid);
	snprintf(g[n].type, sizeof(g[n].type), "%s", type);
	snprintf(g[n].netdev, sizeof(g[n].netdev), "%s", netdev);
	return n + 1;
}

/* A RoCE host with VLANs and containers: 24 valid GIDs, the IPv4 ones last. */
static int table(struct rt_gid_info *g, bool v4, bool v2_global, bool v2)
{
	char buf[48];
	int n = 0;

	for (int i = 0; i < 8; i++) { /* link-local of eth0 and its VLANs, v1 and v2 */
		snprintf(buf, sizeof(buf), "fe80:0000:0000:0000:0211:22ff:fe33:44%02x", i);
		if (v2 || i % 2 == 0)
			n = add_gid(g, n, i, buf, i % 2 ? "RoCE v2" : "RoCE v1", i < 2 ? "eth0" : "eth0.100");
	}
	for (int i = 8; i < 16; i++) { /* IPv6 global */
		snprintf(buf, sizeof(buf), "2001:0db8:0000:0000:0000:0000:0000:00%02x", i);
		if ((v2_global && v2) || i % 2 == 0)
			n = add_gid(g, n, i, buf, i % 2 ? "RoCE v2" : "RoCE v1", "eth0");
	}
	for (int i = 16; i < 24; i++) { /* IPv4-mapped 10.0.0.i */
		snprintf(buf, sizeof(buf), "0000:0000:0000:0000:0000:ffff:0a00:00%02x", i);
		if (v4 && (v2 || i % 2 == 0))
			n = add_gid(g, n, i, buf, i % 2 ? "RoCE v2" : "RoCE v1", i < 20 ? "eth0" : "veth3");
	}
	return n;
}

static void test_gid_pick(void **state)
{
	struct rt_gid_info g[32];
	char why[RT_TEXT_LEN];
	int n;

	(void)state;
	n = table(g, true, true, true);
	assert_int_equal(n, 24);
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 17);
	assert_string_equal(why, "first RoCE v2 IPv4-mapped GID 10.0.0.17 on eth0");
	/* the order of the input does not matter */
	for (int i = 0; i < n / 2; i++) {
		struct rt_gid_info t = g[i];

		g[i] = g[n - 1 - i];
		g[n - 1 - i] = t;
	}
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 17);
	/* no IPv4: the RoCE v2 IPv6 global one, and the reason says what was missing */
	n = table(g, false, true, true);
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 9);
	assert_non_null(strstr(why, "RoCE v2 IPv6 global"));
	assert_non_null(strstr(why, "none is RoCE v2 IPv4-mapped"));
	/* no IPv4, no v2 global: RoCE v2 link-local before any RoCE v1 */
	n = table(g, false, false, true);
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "RoCE v2 IPv6 link-local"));
	/* RoCE v1 only: IPv4-mapped, then global */
	n = table(g, true, false, false);
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 16);
	assert_non_null(strstr(why, "RoCE v1 IPv4-mapped"));
	n = table(g, false, false, false);
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 8);
	/* types unknown (sysfs without gid_attrs): still an IPv4-mapped one first */
	n = table(g, true, true, true);
	for (int i = 0; i < n; i++)
		g[i].type[0] = '\0';
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), 16);
	assert_non_null(strstr(why, "untyped"));
	/* nothing usable: -1 and a reason */
	n = add_gid(g, 0, 0, "ff02:0000:0000:0000:0000:0000:0000:0001", "RoCE v2", "eth0");
	n = add_gid(g, n, 1, "fe80:0000:0000:0000:0000:0000:0000:0001", "IB", "");
	assert_int_equal(rt_devinfo_gid_pick(g, n, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no RoCE GID"));
	assert_int_equal(rt_devinfo_gid_pick(g, 0, why, sizeof(why)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcie_root_and_user),
		cmocka_unit_test(test_pcie_vf),
		cmocka_unit_test(test_pcie_absent),
		cmocka_unit_test(test_gid_pick),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
