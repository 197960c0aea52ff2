// SPDX-License-Identifier: MIT
/*
 * JSON form of the node and device model (struct rt_node_info, struct rt_device_info) shared by `rtune devices --json`
 * and the run documents: one function per struct, field names stable (they are part of rtune's public JSON output).
 */
#include "devices_json.h"

#include <errno.h>
#include <string.h>

/* json_object_set_new on a fresh object never fails except on allocation failure, which jansson reports by returning
 * NULL from the constructors; json_pack is used so one NULL anywhere makes the whole result NULL. */

json_t *rt_node_to_json(const struct rt_node_info *node)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "hostname", node->hostname, "machine_id", node->machine_id,
			 "cpu_model", node->cpu_model, "kernel", node->kernel, "cpu_count", node->cpu_count,
			 "numa_nodes", node->numa_nodes);
}

static json_t *int_or_null(int v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *str_or_null(const char *s)
{
	return s[0] ? json_string(s) : json_null();
}

static json_t *port_to_json(const struct rt_port_info *p)
{
	json_t *gids = json_array();

	if (!gids)
		return NULL;
	for (int i = 0; i < p->gid_count; i++) {
		json_t *g = json_pack("{s:i, s:s, s:o, s:o}", "index", p->gids[i].index, "gid", p->gids[i].gid, "type",
				      str_or_null(p->gids[i].type), "netdev", str_or_null(p->gids[i].netdev));

		if (!g || json_array_append_new(gids, g)) {
			json_decref(gids);
			return NULL;
		}
	}
	return json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:{s:o, s:o}}", "port", p->port_num,
			 "state", p->state, "link_layer", p->link_layer, "active_mtu_bytes", p->active_mtu_bytes,
			 "max_mtu_bytes", p->max_mtu_bytes, "lid", p->lid, "gid_tbl_len", p->gid_tbl_len, "gid_valid",
			 p->gid_valid, "gid_source", str_or_null(p->gid_source), "gids", gids, "default_gid", "index",
			 int_or_null(p->gid_pick), "reason", str_or_null(p->gid_pick_reason));
}

/* Why a max inline value is absent: null when measured or not probed, "unsupported", or the probe's error text. */
static json_t *inline_why(int v, int why)
{
	if (v >= 0 || why == 0)
		return json_null();
	return json_string(why == EOPNOTSUPP ? "unsupported" : strerror(why));
}

json_t *rt_device_to_json(const struct rt_device_info *d)
{
	json_t *ports = json_array(), *pcie;

	if (!ports)
		return NULL;
	for (int i = 0; i < d->port_count; i++) {
		json_t *p = port_to_json(&d->ports[i]);

		if (!p || json_array_append_new(ports, p)) {
			json_decref(ports);
			return NULL;
		}
	}
	if (d->pci_addr[0])
		pcie = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "address", d->pci_addr, "link_speed",
				 str_or_null(d->pcie_speed), "link_width",
				 int_or_null(d->pcie_width ? d->pcie_width : -1), "max_payload_bytes",
				 int_or_null(d->pcie_max_payload_bytes ? d->pcie_max_payload_bytes : -1),
				 "max_read_request_bytes",
				 int_or_null(d->pcie_max_read_req_bytes ? d->pcie_max_read_req_bytes : -1), "physfn",
				 str_or_null(d->pcie_physfn), "device_control_note", str_or_null(d->pcie_ctrl_note));
	else
		pcie = json_null();
	/* 1.1: SRD's max inline and EFA's direct-verbs caps (null on every other device) */
	json_t *efa = d->efa.efa ? json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:b}", "max_sq_wr",
					     (json_int_t)d->efa.max_sq_wr, "max_rq_wr", (json_int_t)d->efa.max_rq_wr,
					     "max_sq_sge", (json_int_t)d->efa.max_sq_sge, "max_rq_sge",
					     (json_int_t)d->efa.max_rq_sge, "inline_buf_size",
					     (json_int_t)d->efa.inline_buf_size, "max_rdma_size",
					     (json_int_t)d->efa.max_rdma_size, "rdma_read", d->efa.rdma_read,
					     "rdma_write", d->efa.rdma_write, "rnr_retry", d->efa.rnr_retry)
				 : json_null();
	json_t *o =
		json_pack("{s:s, s:o, s:s, s:s, s:s, s:I, s:I, s:I, s:{s:i, s:i, s:i, s:i, s:i, s:i},"
			  " s:{s:o, s:o}, s:{s:o, s:o}, s:o, s:o, s:o, s:o}",
			  "name", d->name, "error", str_or_null(d->error), "node_guid", d->node_guid, "transport",
			  d->transport, "fw_ver", d->fw_ver, "vendor_id", (json_int_t)d->vendor_id, "vendor_part_id",
			  (json_int_t)d->vendor_part_id, "hw_ver", (json_int_t)d->hw_ver, "caps", "max_qp", d->max_qp,
			  "max_qp_wr", d->max_qp_wr, "max_sge", d->max_sge, "max_cqe", d->max_cqe, "max_qp_rd_atom",
			  d->max_qp_rd_atom, "max_mr", d->max_mr, "max_inline_data", "rc",
			  int_or_null(d->max_inline_rc), "ud", int_or_null(d->max_inline_ud), "max_inline_error", "rc",
			  inline_why(d->max_inline_rc, d->max_inline_rc_errno), "ud",
			  inline_why(d->max_inline_ud, d->max_inline_ud_errno), "numa_node", int_or_null(d->numa_node),
			  "local_cpus", str_or_null(d->local_cpus), "pcie", pcie, "ports", ports);

	if (!o || json_object_set_new(json_object_get(o, "max_inline_data"), "srd", int_or_null(d->max_inline_srd)) ||
	    json_object_set_new(json_object_get(o, "max_inline_error"), "srd",
				inline_why(d->max_inline_srd, d->max_inline_srd_errno)) ||
	    json_object_set_new(o, "efa", efa)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *rt_devices_to_json(const struct rt_node_info *node, const struct rt_device_info *devs, int n)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	for (int i = 0; i < n; i++) {
		json_t *d = rt_device_to_json(&devs[i]);

		if (!d || json_array_append_new(arr, d)) {
			json_decref(arr);
			return NULL;
		}
	}
	return json_pack("{s:{s:s, s:s}, s:o, s:o}", "schema", "name", "rtune-devices", "version", "1.1", "node",
			 rt_node_to_json(node), "devices", arr);
}
