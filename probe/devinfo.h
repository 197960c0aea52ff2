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
 * Lists every RDMA device: opens each, queries device and ports, probes max inline for RC and UD (when probe_inline),
 * reads sysfs. On success returns 0 with *out (caller frees with free()) and *n_out devices (0 when there are none:
 * that is not an error). A device that cannot be opened is still listed with what sysfs tells, and its name.
 * Returns an errno (and err) when libibverbs itself fails or memory runs out.
 */
int rt_devinfo_list(bool probe_inline, struct rt_device_info **out, int *n_out, struct rt_error *err);

/* Fills out from an open context (device, ports, sysfs; max inline when probe_inline). Returns 0 or an errno + err. */
int rt_devinfo_query(struct ibv_context *ctx, bool probe_inline, struct rt_device_info *out, struct rt_error *err);

/*
 * Finds the largest max_inline_data that ibv_create_qp accepts for qp_type on pd (doubling from 64, then bisecting, up to
 * limit bytes), so that value is accepted and value + 1 is not (or value == limit). *written_back receives what the
 * provider wrote back into cap.max_inline_data for that value (may be NULL). Returns 0, or the errno of creating a QP
 * with 0 bytes of inline when even that fails (EOPNOTSUPP/EINVAL: the QP type is unsupported; ENOMEM and others: the
 * device is out of resources; EOPNOTSUPP when the provider set no errno), or another errno.
 */
int rt_devinfo_probe_max_inline(struct ibv_pd *pd, enum ibv_qp_type qp_type, uint32_t limit, uint32_t *max_inline,
				uint32_t *written_back);

/* Parses a Linux cpulist ("0-3,8,10-11") into cpus[0..max); returns how many CPUs it named, or -1 on a malformed list. */
int rt_cpulist_parse(const char *list, int *cpus, int max);

/* NUMA node of a CPU per sysfs, -1 when unknown. */
int rt_cpu_numa_node(int cpu);

#endif
