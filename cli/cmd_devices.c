// SPDX-License-Identifier: MIT
/*
 * `rtune devices`: lists every RDMA device and port with the facts that matter for tuning sends — identity, firmware,
 * link layer, port state and MTU, the whole GID table with types and netdevs and the default GID pick with its reason,
 * key capabilities, the probed max_inline_data for RC and UD, the NUMA node and local CPUs, and the PCIe link — as text
 * or, with --json, as one JSON document. A device that cannot be opened or queried is listed with its error.
 */
#include "cli.h"
#include "devices_json.h"
#include "devinfo.h"

#include <errno.h>
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
	"A device that cannot be opened or queried is listed with its error; the others are listed in full.\n"
	"\n"
	"exit codes: 0 ok (at least one device listed without error), 1 failure (every listed device failed),\n"
	"2 usage or unknown device, 3 no RDMA device\n";

static void print_inline(const char *label, int v, int why)
{
	if (v >= 0)
		printf("    max_inline_%s: %d bytes\n", label, v);
	else if (why == 0)
		printf("    max_inline_%s: not probed\n", label);
	else if (why == EOPNOTSUPP)
		printf("    max_inline_%s: unsupported (no %s qp)\n", label, label);
	else
		printf("    max_inline_%s: unknown (%s)\n", label, strerror(why));
}

static void print_pcie(const struct rt_device_info *d)
{
	if (!d->pci_addr[0]) {
		printf("    pcie: not a PCI device\n");
		return;
	}
	printf("    pcie: %s, %s x%d", d->pci_addr, d->pcie_speed[0] ? d->pcie_speed : "unknown speed", d->pcie_width);
	if (d->pcie_physfn[0])
		printf(", VF of %s", d->pcie_physfn);
	printf(", max_payload ");
	if (d->pcie_max_payload_bytes)
		printf("%d", d->pcie_max_payload_bytes);
	else
		printf("unknown");
	printf(", max_read_request ");
	if (d->pcie_max_read_req_bytes)
		printf("%d", d->pcie_max_read_req_bytes);
	else
		printf("unknown");
	if (d->pcie_ctrl_note[0])
		printf(" (%s)", d->pcie_ctrl_note);
	printf("\n");
}

static void print_port(const struct rt_port_info *pi)
{
	printf("    port %d: %s, %s, active_mtu %d (max %d), lid %d\n", pi->port_num, pi->state, pi->link_layer,
	       pi->active_mtu_bytes, pi->max_mtu_bytes, pi->lid);
	printf("        gids: %d valid of %d", pi->gid_valid, pi->gid_tbl_len);
	if (pi->gid_source[0])
		printf(" (%s)", pi->gid_source);
	if (pi->gid_valid > pi->gid_count)
		printf(", first %d listed", pi->gid_count);
	printf("\n");
	for (int g = 0; g < pi->gid_count; g++) {
		const struct rt_gid_info *gi = &pi->gids[g];

		printf("        gid[%d] %s %s%s%s\n", gi->index, gi->gid, gi->type[0] ? gi->type : "type unknown",
		       gi->netdev[0] ? " " : "", gi->netdev);
	}
	if (pi->gid_pick >= 0)
		printf("        default gid: %d (%s)\n", pi->gid_pick, pi->gid_pick_reason);
	else if (pi->gid_pick_reason[0])
		printf("        default gid: none (%s)\n", pi->gid_pick_reason);
}

static void print_text(const struct rt_node_info *node, const struct rt_device_info *devs, int n)
{
	printf("node %s: %s, %d CPUs, %d NUMA node%s, kernel %s\n", node->hostname,
	       node->cpu_model[0] ? node->cpu_model : "unknown CPU", node->cpu_count, node->numa_nodes,
	       node->numa_nodes == 1 ? "" : "s", node->kernel);
	for (int i = 0; i < n; i++) {
		const struct rt_device_info *d = &devs[i];

		printf("\n%s\n", d->name);
		if (d->error[0])
			printf("    error: %s\n", d->error);
		if (d->error[0] && !d->node_guid[0]) {
			/* nothing from verbs: only what sysfs tells */
			if (d->numa_node >= 0)
				printf("    numa_node: %d, local_cpus: %s\n", d->numa_node,
				       d->local_cpus[0] ? d->local_cpus : "unknown");
			print_pcie(d);
			continue;
		}
		printf("    node_guid: %s\n", d->node_guid[0] ? d->node_guid : "unknown");
		printf("    transport: %s\n", d->transport[0] ? d->transport : "unknown");
		printf("    vendor: 0x%04x part %u hw %u, fw %s\n", d->vendor_id, d->vendor_part_id, d->hw_ver,
		       d->fw_ver[0] ? d->fw_ver : "unknown");
		printf("    caps: max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, max_qp_rd_atom %d, max_mr %d\n",
		       d->max_qp, d->max_qp_wr, d->max_sge, d->max_cqe, d->max_qp_rd_atom, d->max_mr);
		print_inline("rc", d->max_inline_rc, d->max_inline_rc_errno);
		print_inline("ud", d->max_inline_ud, d->max_inline_ud_errno);
		/* SRD exists on EFA only: the line is noise on every other device, except an Amazon one without libefa */
		if (d->efa.efa || d->max_inline_srd_errno == ENOENT)
			print_inline("srd", d->max_inline_srd, d->max_inline_srd_errno);
		if (d->max_inline_srd_errno == ENOENT)
			printf("    efa: unknown (libefa.so.1 not found: install rdma-core's efa provider)\n");
		if (d->efa.efa)
			printf("    efa: max_sq_wr %u, max_rq_wr %u, max_sq_sge %u, max_rq_sge %u, inline_buf_size %u B,"
			       " max_rdma_size %u B, rdma read %s, rdma write %s, rnr retry %s\n",
			       d->efa.max_sq_wr, d->efa.max_rq_wr, d->efa.max_sq_sge, d->efa.max_rq_sge,
			       d->efa.inline_buf_size, d->efa.max_rdma_size, d->efa.rdma_read ? "yes" : "no",
			       d->efa.rdma_write ? "yes" : "no", d->efa.rnr_retry ? "yes" : "no");
		if (d->numa_node >= 0)
			printf("    numa_node: %d, local_cpus: %s\n", d->numa_node,
			       d->local_cpus[0] ? d->local_cpus : "unknown");
		else
			printf("    numa_node: none, local_cpus: %s\n", d->local_cpus[0] ? d->local_cpus : "unknown");
		print_pcie(d);
		for (int p = 0; p < d->port_count; p++)
			print_port(&d->ports[p]);
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
	int n = 0, c, rc = RT_EXIT_OK, failed = 0;

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
	for (int i = 0; i < n; i++)
		failed += devs[i].error[0] != '\0';
	if (json) {
		json_t *doc = rt_devices_to_json(&node, devs, n);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF || fflush(stdout)) {
			rt_cli_error("cannot write the device list as JSON");
			rc = RT_EXIT_FAIL;
		}
		json_decref(doc);
	} else {
		print_text(&node, devs, n);
	}
	/* 0 when at least one listed device answered; 1 when every one failed (each is still listed with its error) */
	if (rc == RT_EXIT_OK && failed == n) {
		if (n == 1)
			rt_cli_error("%s", devs[0].error);
		else
			rt_cli_error("none of the %d devices could be queried (each is listed with its error)", n);
		rc = RT_EXIT_FAIL;
	}
	free(devs);
	return rc;
}
