// SPDX-License-Identifier: MIT
/*
 * `rtune devices`: lists every RDMA device and port with the facts that matter for tuning sends — identity, firmware,
 * link layer, port state and MTU, GIDs, key capabilities, the probed max_inline_data for RC and UD, the NUMA node and local
 * CPUs, and the PCIe link — as text or, with --json, as one JSON document.
 */
#include "cli.h"
#include "devices_json.h"
#include "devinfo.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: rtune devices [-d DEVICE] [--json] [--no-probe]\n"
	"\n"
	"List RDMA devices and ports: identity, firmware, link layer, port state, MTU, GIDs, capabilities, the largest\n"
	"max_inline_data ibv_create_qp accepts for RC and UD QPs (probed by creating QPs), NUMA node, local CPUs and PCIe link.\n"
	"\n"
	"  -d, --ib-dev DEVICE  only this device\n"
	"  --json               print one JSON document on stdout\n"
	"  --no-probe           skip the max inline probe (no QPs are created)\n"
	"  -h, --help           this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure, 2 usage or unknown device, 3 no RDMA device\n";

static void print_inline(const char *label, int v)
{
	if (v < 0)
		printf("    max_inline_%s: unsupported\n", label);
	else
		printf("    max_inline_%s: %d bytes\n", label, v);
}

static void print_text(const struct rt_node_info *node, const struct rt_device_info *devs, int n)
{
	printf("node %s: %s, %d CPUs, %d NUMA node%s, kernel %s\n", node->hostname,
	       node->cpu_model[0] ? node->cpu_model : "unknown CPU", node->cpu_count, node->numa_nodes,
	       node->numa_nodes == 1 ? "" : "s", node->kernel);
	for (int i = 0; i < n; i++) {
		const struct rt_device_info *d = &devs[i];

		printf("\n%s\n", d->name);
		printf("    node_guid: %s\n", d->node_guid[0] ? d->node_guid : "unknown");
		printf("    transport: %s\n", d->transport[0] ? d->transport : "unknown");
		printf("    vendor: 0x%04x part %u hw %u, fw %s\n", d->vendor_id, d->vendor_part_id, d->hw_ver,
		       d->fw_ver[0] ? d->fw_ver : "unknown");
		printf("    caps: max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, max_qp_rd_atom %d, max_mr %d\n",
		       d->max_qp, d->max_qp_wr, d->max_sge, d->max_cqe, d->max_qp_rd_atom, d->max_mr);
		print_inline("rc", d->max_inline_rc);
		print_inline("ud", d->max_inline_ud);
		if (d->numa_node >= 0)
			printf("    numa_node: %d, local_cpus: %s\n", d->numa_node,
			       d->local_cpus[0] ? d->local_cpus : "unknown");
		else
			printf("    numa_node: none, local_cpus: %s\n", d->local_cpus[0] ? d->local_cpus : "unknown");
		if (d->pci_addr[0]) {
			printf("    pcie: %s, %s x%d", d->pci_addr, d->pcie_speed[0] ? d->pcie_speed : "unknown speed",
			       d->pcie_width);
			if (d->pcie_max_payload_bytes)
				printf(", max_payload %d, max_read_request %d", d->pcie_max_payload_bytes,
				       d->pcie_max_read_req_bytes);
			else
				printf(", max_payload/max_read_request unreadable (needs root)");
			printf("\n");
		} else {
			printf("    pcie: not a PCI device\n");
		}
		for (int p = 0; p < d->port_count; p++) {
			const struct rt_port_info *pi = &d->ports[p];

			printf("    port %d: %s, %s, active_mtu %d (max %d), lid %d\n", pi->port_num, pi->state,
			       pi->link_layer, pi->active_mtu_bytes, pi->max_mtu_bytes, pi->lid);
			for (int g = 0; g < pi->gid_count; g++)
				printf("        gid[%d] %s %s\n", pi->gids[g].index, pi->gids[g].gid, pi->gids[g].type);
		}
	}
}

int cmd_devices(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-probe", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rt_device_info *devs = NULL;
	struct rt_node_info node;
	struct rt_error err;
	const char *only = NULL;
	bool json = false, probe = true;
	int n = 0, c, rc = RT_EXIT_OK;

	optind = 1;
	while ((c = rt_cli_getopt("devices", argc, argv, "d:h", opts)) != -1) {
		switch (c) {
		case 'd': only = optarg; break;
		case 'j': json = true; break;
		case 'n': probe = false; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_cli_usage_error("devices", "unexpected argument '%s'", argv[optind]);

	if (rt_devinfo_list(probe, &devs, &n, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if (n == 0) {
		rt_cli_error("no RDMA device found: check 'ibv_devices', the driver module (e.g. mlx5_ib) and "
			     "/sys/class/infiniband; a software device: 'rdma link add rxe0 type rxe netdev IFACE'");
		free(devs);
		return RT_EXIT_NODEV;
	}
	if (only) {
		int k = -1;

		for (int i = 0; i < n; i++)
			if (strcmp(devs[i].name, only) == 0)
				k = i;
		if (k < 0) {
			fprintf(stderr, "rtune: unknown device '%s'; devices:", only);
			for (int i = 0; i < n; i++)
				fprintf(stderr, " %s", devs[i].name);
			fputc('\n', stderr);
			free(devs);
			return RT_EXIT_USAGE;
		}
		if (k)
			devs[0] = devs[k];
		n = 1;
	}
	rt_devinfo_node(&node);
	if (json) {
		json_t *doc = rt_devices_to_json(&node, devs, n);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF) {
			rt_cli_error("cannot write the device list as JSON");
			rc = RT_EXIT_FAIL;
		}
		json_decref(doc);
	} else {
		print_text(&node, devs, n);
	}
	free(devs);
	return rc;
}
