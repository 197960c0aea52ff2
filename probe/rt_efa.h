/* SPDX-License-Identifier: MIT */
/*
 * AWS EFA's direct verbs (libefa's efadv_query_device and efadv_create_qp_ex), found at run time: EFA devices expose UD
 * and SRD (Scalable Reliable Datagram: reliable, unordered, address-handle addressed like UD, receives without a GRH)
 * and no RC, and SRD QPs exist only through efadv. rtune does not link libefa: a host without it (any non-EFA node,
 * and distributions that package the provider separately) runs rtune unchanged, and only the EFA facts are missing.
 */
#ifndef RT_EFA_H
#define RT_EFA_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define RT_EFA_VENDOR_ID 0x1d0fu /* Amazon.com: the PCI vendor id ibv_query_device reports for EFA */

/* EFA's device capabilities (efadv_device_attr; the RDMA READ and RNR retry bits of device_caps split out). */
struct rt_efa_caps {
	bool efa; /* efadv_query_device answered: the rest is valid */
	uint32_t max_sq_wr, max_rq_wr;
	uint32_t max_sq_sge, max_rq_sge;
	uint32_t inline_buf_size; /* largest max_inline_data of any QP (UD and SRD share the device's inline buffer) */
	uint32_t max_rdma_size;	  /* largest RDMA READ/WRITE, 0 when the device has none */
	uint32_t device_caps;	  /* EFADV_DEVICE_ATTR_CAPS_* as reported */
	bool rdma_read;		  /* SRD carries RDMA READ */
	bool rdma_write;	  /* SRD carries RDMA WRITE (rdma-core 45+ reports it; false when unknown) */
	bool rnr_retry;		  /* the SRD QP's rnr_retry can be set (IBV_QP_RNR_RETRY at RTS) */
};

/*
 * Queries the EFA capabilities of ctx into *out (zeroed first). Only a device whose vendor id is Amazon's is asked:
 * efadv on another provider's context is not defined. Returns 0 (out->efa true), EOPNOTSUPP (not an EFA device),
 * ENOENT (no efadv in the process and libefa.so.1 not loadable), or efadv_query_device's error. Thread-safe.
 */
int rt_efa_query(struct ibv_context *ctx, uint32_t vendor_id, struct rt_efa_caps *out);

/*
 * Creates an SRD QP on pd with the caps, CQs and context of a (an ibv_create_qp-style request; qp_type is ignored) via
 * efadv_create_qp_ex with EFADV_QP_DRIVER_TYPE_SRD. Returns the QP, or NULL with errno set (ENOENT: no efadv).
 */
struct ibv_qp *rt_efa_create_srd_qp(struct ibv_pd *pd, const struct ibv_qp_init_attr *a);

#endif
