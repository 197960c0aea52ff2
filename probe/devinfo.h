/* SPDX-License-Identifier: MIT */
/*
 * Device discovery for `rtune devices` and the calibration engine: what the node is, which RDMA devices and ports it has,
 * their capabilities, where they sit (NUMA node, local CPUs, PCIe link), and the largest max_inline_data each QP type
 * really accepts (found by creating QPs, since no verbs attribute reports it).
 */
#ifndef RT_DEVINFO_H
#define RT_DEVINFO_H

#include <infiniband/verbs.h>

#include <rtune/error.h>
#include "rt_model.h"

/* Fills out with this node's identity (hostname, machine-id, CPU model, kernel, CPU and NUMA node counts). Never fails:
 * what cannot be read is left empty / 0 (numa_nodes is at least 1). */
void rt_devinfo_node(struct rt_node_info *out);

/*
 * Lists every RDMA device: opens each, queries device and ports, reads the GID tables, probes max inline for RC and UD
 * (when probe_inline), reads sysfs. On success returns 0 with *out (caller frees with free()) and *n_out devices (0
 * when there are none: that is not an error). One failing device never fails the list: a device that cannot be
 * opened or queried is listed with its name, what sysfs tells and the error text in its error field.
 * Returns an errno (and err) only when libibverbs itself fails or memory runs out.
 */
int rt_devinfo_list(bool probe_inline, struct rt_device_info **out, int *n_out, struct rt_error *err);

/* Fills out from an open context (device, ports, GIDs, sysfs; max inline when probe_inline). Returns 0, or the errno of
 * ibv_query_device with err (and out->error) set; a failing max inline probe is not an error: the value stays -1 with
 * max_inline_*_errno saying why. */
int rt_devinfo_query(struct ibv_context *ctx, bool probe_inline, struct rt_device_info *out, struct rt_error *err);

/*
 * Finds the largest max_inline_data that ibv_create_qp accepts for qp_type on pd (doubling from 64, then bisecting, up to
 * limit bytes), so that value is accepted and value + 1 is refused as too big (or value == limit). Only EINVAL (or
 * EOPNOTSUPP, or a refusal without errno: what providers answer) means too big; any other failure of one size (ENOMEM, EAGAIN: locked memory, QPs exhausted)
 * is retried 3 times (1, 10, 100 ms apart) and then returned: the maximum is then unknown, never a smaller value.
 * *written_back receives what the provider wrote back into cap.max_inline_data for that value (may be NULL).
 * Returns 0; or, with *max_inline 0, the errno of creating a QP with 0 bytes of inline when even that fails
 * (EOPNOTSUPP/EINVAL: the QP type is unsupported; EOPNOTSUPP when the provider set no errno; ENOMEM and others: out
 * of resources), or of the failure that persisted at a larger size.
 */
int rt_devinfo_probe_max_inline(struct ibv_pd *pd, enum ibv_qp_type qp_type, uint32_t limit, uint32_t *max_inline,
				uint32_t *written_back);

/*
 * The default GID among gids[0..n) of a RoCE port: the lowest index of the most preferred kind -- RoCE v2 IPv4-mapped,
 * RoCE v2 IPv6 global, RoCE v2 IPv6 link-local, then the same three for RoCE v1, then GIDs of unknown type -- so the
 * run uses the routable, ECN/DSCP-capable address applications use. Returns its index and a one-line reason in why
 * (e.g. "first RoCE v2 IPv4-mapped GID 192.168.1.10 on eth0"), or -1 with why saying no GID qualifies.
 */
int rt_devinfo_gid_pick(const struct rt_gid_info *gids, int n, char *why, size_t len);

/* Fills the sysfs facts of the device called name (NUMA node, local CPUs, PCIe link, MPS/MRRS, VF's PF) under
 * $SYSFS_PATH or /sys. Never fails: unknown facts stay unknown (-1, 0, "") with pcie_ctrl_note saying why. */
void rt_devinfo_sysfs(const char *name, struct rt_device_info *out);

/* The receiver-not-ready counters of one port, as the port's hw_counters in sysfs have them (present ones only). */
#define RT_RNR_COUNTERS 6
struct rt_rnr_counters {
	int n;
	char name[RT_RNR_COUNTERS][28];
	uint64_t value[RT_RNR_COUNTERS];
};
/*
 * Reads the RNR-related counters of port of the device called name from $SYSFS_PATH (or /sys)
 * /class/infiniband/NAME/ports/PORT/hw_counters: mlx5 rnr_nak_retry_err (RNR NAKs received), out_of_buffer (receives
 * dropped for lack of a posted WQE) and req_rnr_retries_exceeded; rxe rcvd_rnr_err, send_rnr_err and
 * retry_rnr_exceeded_err. Never fails: out->n is 0 when the provider exposes none of them (or sysfs is unreadable).
 */
void rt_devinfo_rnr_counters(const char *name, int port, struct rt_rnr_counters *out);

/* Parses a Linux cpulist ("0-3,8,10-11") into cpus[0..max); returns how many CPUs it named, or -1 on a malformed list. */
int rt_cpulist_parse(const char *list, int *cpus, int max);

/* NUMA node of a CPU per sysfs, -1 when unknown. */
int rt_cpu_numa_node(int cpu);
/* The same under the sysfs mount sys_root ("/sys"; tests: a fake tree). */
int rt_cpu_numa_node_at(const char *sys_root, int cpu);

#endif
