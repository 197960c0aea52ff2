// SPDX-License-Identifier: MIT
/*
 * Unit tests of the device model's JSON form (`rtune devices --json`): every documented key is present with its type,
 * absent facts are null rather than fake numbers, PCIe appears only for PCI devices, GIDs and ports are all listed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "devices_json.h"

static void fill_device(struct rt_device_info *d, bool pci)
{
	memset(d, 0, sizeof(*d));
	strcpy(d->name, "mlx5_0");
	strcpy(d->node_guid, "0011:2233:4455:6677");
	strcpy(d->transport, "InfiniBand");
	strcpy(d->fw_ver, "22.31.1014");
	d->vendor_id = 0x02c9;
	d->vendor_part_id = 4123;
	d->max_qp_wr = 32768;
	d->max_sge = 30;
	d->max_cqe = 4194303;
	d->max_qp_rd_atom = 16;
	d->max_inline_rc = 956;
	d->max_inline_ud = -1;
	d->max_inline_ud_errno = EOPNOTSUPP;
	d->numa_node = pci ? 1 : -1;
	if (pci) {
		strcpy(d->local_cpus, "16-31");
		strcpy(d->pci_addr, "0000:3b:00.0");
		strcpy(d->pcie_speed, "16.0 GT/s PCIe");
		d->pcie_width = 16;
		d->pcie_max_payload_bytes = 256;
		d->pcie_max_read_req_bytes = 0; /* unreadable */
	}
	d->port_count = 2;
	for (int p = 0; p < 2; p++) {
		d->ports[p].port_num = p + 1;
		strcpy(d->ports[p].state, p ? "down" : "active");
		strcpy(d->ports[p].link_layer, "Ethernet");
		d->ports[p].active_mtu_bytes = 4096;
		d->ports[p].gid_count = 2;
		for (int g = 0; g < 2; g++) {
			d->ports[p].gids[g].index = g;
			strcpy(d->ports[p].gids[g].gid, "fe80:0000:0000:0000:0211:22ff:fe33:4455");
		}
		strcpy(d->ports[p].gids[1].type, "RoCE v2");
		strcpy(d->ports[p].gids[1].netdev, "eth0");
		d->ports[p].gid_valid = 2;
		d->ports[p].gid_pick = p ? -1 : 1;
		strcpy(d->ports[p].gid_pick_reason, p ? "no RoCE GID among 0 valid entries" : "first RoCE v2 GID");
	}
}

static void test_pci_device(void **state)
{
	struct rt_device_info d;
	json_t *j, *pcie, *ports;

	(void)state;
	fill_device(&d, true);
	j = rt_device_to_json(&d);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "mlx5_0");
	assert_int_equal(json_integer_value(json_object_get(j, "vendor_id")), 0x02c9);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "caps"), "max_qp_wr")), 32768);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "max_inline_data"), "rc")), 956);
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_data"), "ud")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_error"), "rc")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "max_inline_error"), "ud")),
			    "unsupported");
	assert_true(json_is_null(json_object_get(j, "error")));
	assert_int_equal(json_integer_value(json_object_get(j, "numa_node")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "local_cpus")), "16-31");
	pcie = json_object_get(j, "pcie");
	assert_true(json_is_object(pcie));
	assert_string_equal(json_string_value(json_object_get(pcie, "address")), "0000:3b:00.0");
	assert_int_equal(json_integer_value(json_object_get(pcie, "link_width")), 16);
	assert_int_equal(json_integer_value(json_object_get(pcie, "max_payload_bytes")), 256);
	assert_true(json_is_null(json_object_get(pcie, "max_read_request_bytes")));
	assert_true(json_is_null(json_object_get(pcie, "physfn")));
	assert_true(json_is_null(json_object_get(pcie, "device_control_note")));
	ports = json_object_get(j, "ports");
	assert_int_equal(json_array_size(ports), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ports, 1), "state")), "down");
	assert_int_equal(json_array_size(json_object_get(json_array_get(ports, 0), "gids")), 2);
	assert_true(json_is_null(
		json_object_get(json_array_get(json_object_get(json_array_get(ports, 0), "gids"), 0), "type")));
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(json_array_get(ports, 0), "gids"), 1), "netdev")),
			    "eth0");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ports, 0), "gid_valid")), 2);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(json_array_get(ports, 0), "default_gid"), "index")),
		1);
	assert_true(json_is_null(json_object_get(json_object_get(json_array_get(ports, 1), "default_gid"), "index")));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(json_array_get(ports, 1), "default_gid"), "reason")),
		"no RoCE GID among 0 valid entries");
	json_decref(j);
}

/* 1.1: SRD's max inline and the EFA caps (efa null and srd "unsupported" on another device). */
static void test_efa_device(void **state)
{
	struct rt_device_info d;
	json_t *j, *efa;

	(void)state;
	fill_device(&d, false);
	d.max_inline_srd = -1;
	d.max_inline_srd_errno = EOPNOTSUPP;
	j = rt_device_to_json(&d);
	assert_true(json_is_null(json_object_get(j, "efa")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_data"), "srd")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "max_inline_error"), "srd")),
			    "unsupported");
	json_decref(j);
	d.max_inline_srd = 32;
	d.max_inline_srd_errno = 0;
	d.efa.efa = true;
	d.efa.inline_buf_size = 32;
	d.efa.max_sq_wr = 4096;
	d.efa.max_rdma_size = 1u << 30;
	d.efa.rdma_read = d.efa.rnr_retry = true;
	j = rt_device_to_json(&d);
	efa = json_object_get(j, "efa");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "max_inline_data"), "srd")), 32);
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_error"), "srd")));
	assert_int_equal(json_integer_value(json_object_get(efa, "inline_buf_size")), 32);
	assert_int_equal(json_integer_value(json_object_get(efa, "max_sq_wr")), 4096);
	assert_int_equal(json_integer_value(json_object_get(efa, "max_rdma_size")), 1 << 30);
	assert_true(json_is_true(json_object_get(efa, "rdma_read")));
	assert_true(json_is_false(json_object_get(efa, "rdma_write")));
	assert_true(json_is_true(json_object_get(efa, "rnr_retry")));
	json_decref(j);
}

/* A device that could not be opened: its error, nothing from verbs made up; a probe that failed: its error. */
static void test_failed_device(void **state)
{
	struct rt_device_info d;
	json_t *j;

	(void)state;
	memset(&d, 0, sizeof(d));
	strcpy(d.name, "mlx5_1");
	strcpy(d.error, "cannot open device 'mlx5_1': Permission denied");
	d.max_inline_rc = d.max_inline_ud = -1;
	d.numa_node = -1;
	j = rt_device_to_json(&d);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "error")), d.error);
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_data"), "rc")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "max_inline_error"), "rc"))); /* not probed */
	assert_int_equal(json_array_size(json_object_get(j, "ports")), 0);
	json_decref(j);
	fill_device(&d, true);
	d.max_inline_rc = -1;
	d.max_inline_rc_errno = ENOMEM;
	strcpy(d.pcie_physfn, "0000:3b:00.0");
	strcpy(d.pcie_ctrl_note, "VF: max_payload is its PF's");
	j = rt_device_to_json(&d);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "max_inline_error"), "rc")),
			    "Cannot allocate memory");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "pcie"), "physfn")), "0000:3b:00.0");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "pcie"), "device_control_note")),
			    "VF: max_payload is its PF's");
	json_decref(j);
}

static void test_virtual_device(void **state)
{
	struct rt_device_info d;
	json_t *j;

	(void)state;
	fill_device(&d, false);
	j = rt_device_to_json(&d);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "pcie")));
	assert_true(json_is_null(json_object_get(j, "numa_node")));
	assert_true(json_is_null(json_object_get(j, "local_cpus")));
	json_decref(j);
}

static void test_document(void **state)
{
	struct rt_device_info d[2];
	struct rt_node_info node;
	json_t *j;

	(void)state;
	fill_device(&d[0], true);
	fill_device(&d[1], false);
	strcpy(d[1].name, "rxe0");
	memset(&node, 0, sizeof(node));
	strcpy(node.hostname, "n1");
	node.cpu_count = 32;
	node.numa_nodes = 2;
	j = rt_devices_to_json(&node, d, 2);
	assert_non_null(j);
	assert_int_equal(json_object_size(j), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "schema"), "name")), "rtune-devices");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "schema"), "version")), "1.1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "node"), "numa_nodes")), 2);
	assert_int_equal(json_array_size(json_object_get(j, "devices")), 2);
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(json_object_get(j, "devices"), 1), "name")), "rxe0");
	json_decref(j);
	j = rt_devices_to_json(&node, d, 0);
	assert_int_equal(json_array_size(json_object_get(j, "devices")), 0);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci_device),    cmocka_unit_test(test_virtual_device),
		cmocka_unit_test(test_failed_device), cmocka_unit_test(test_efa_device),
		cmocka_unit_test(test_document),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
