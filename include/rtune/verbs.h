/* SPDX-License-Identifier: MIT */
/*
 * Optional verbs glue for librtune: the profile entry of a QP, taken from the QP itself (its device, port and type).
 * Header-only, so librtune itself stays free of libibverbs; a program including this header links with -libverbs
 * (it is a verbs program anyway).
 */
#ifndef RTUNE_VERBS_H
#define RTUNE_VERBS_H

#include <errno.h>

#include <infiniband/verbs.h>
#include <rtune/profile.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The entry of p for qp (its device name, its port, RC, UD or EFA's SRD) and opcode op, as rt_profile_select(). The port is the
 * QP's (ibv_query_qp, IBV_QP_PORT): call it once the QP is in INIT or later; a QP that reports no port (still in
 * RESET) is looked up on port 1. NULL with errno EINVAL for a NULL argument, ENOTSUP for a QP type the profile has no
 * entries for (UC, XRC, raw), ENOENT when the profile has no such entry. Thread-safe as rt_profile_select().
 */
static inline const struct rt_profile_entry *rt_profile_select_qp(const struct rt_profile *p, struct ibv_qp *qp,
								  enum rt_profile_opcode op)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	enum rt_profile_qp_type qpt;
	int port = 1;

	if (!p || !qp || !qp->context || !qp->context->device) {
		errno = EINVAL;
		return NULL;
	}
	if (qp->qp_type == IBV_QPT_RC) {
		qpt = RT_PROFILE_QPT_RC;
	} else if (qp->qp_type == IBV_QPT_UD) {
		qpt = RT_PROFILE_QPT_UD;
	} else if (qp->qp_type == IBV_QPT_DRIVER && qp->context->device->transport_type == IBV_TRANSPORT_UNSPECIFIED) {
		/* EFA (the kernel's RDMA_NODE_UNSPECIFIED, so transport unspecified) has one driver QP type, SRD
		 * (efadv_create_qp_ex); other providers' driver QPs (mlx5's DC, on an InfiniBand transport) are not */
		qpt = RT_PROFILE_QPT_SRD;
	} else {
		errno = ENOTSUP;
		return NULL;
	}
	if (ibv_query_qp(qp, &attr, IBV_QP_PORT, &init) == 0 && attr.port_num)
		port = attr.port_num;
	return rt_profile_select(p, ibv_get_device_name(qp->context->device), port, op, qpt);
}

#ifdef __cplusplus
}
#endif
#endif
