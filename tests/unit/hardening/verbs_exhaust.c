// SPDX-License-Identifier: MIT
/*
 * An RDMA application that exhausts a device resource, for the rxe tier's hardening test (tests/rxe/hardening.sh
 * runs it in the guest on rxe0, with and without librtune_probe.so preloaded, and compares): prints one line of
 * results on stdout so that the two runs can be compared byte for byte.
 *   sq DEV   an RC QP connected to a QP number nobody has (send queue of 16, long retry timeout: nothing completes
 *            for seconds), signaled SENDs posted until ibv_post_send refuses one: prints how many were accepted
 *            (at least the send queue's size), the return value, errno and bad_wr of the refusal (the probe must
 *            return exactly what the provider returned); the QP is then destroyed with the sends outstanding.
 *   qp DEV   RC QPs with a 4096-entry send queue created until ibv_create_qp fails (the caller lowers RLIMIT_AS, so
 *            mapping the next queue fails), at most 4096: prints whether it failed and the errno. The count is
 *            printed apart ("created N"), since the probe's own memory may move the limit by a QP.
 * Exit 0 when the resource ran out as expected, 1 otherwise, 2 on a set-up error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

static int to_rts(struct ibv_qp *qp, struct ibv_context *ctx, uint32_t dest_qpn)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	union ibv_gid gid;
	int gidx = -1;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len && i < 16 && gidx < 0; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) && (gid.global.subnet_prefix || gid.global.interface_id))
			gidx = i;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = dest_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = pa.lid;
	if (gidx >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gidx;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20; /* 4 s per try */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC)
		       ? -1
		       : 0;
}

static int mode_sq(struct ibv_context *ctx)
{
	static char buf[4096];
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 }
	};
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp *qp = cq && mr ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = { .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;
	unsigned accepted = 0;
	int ret = 0, err = 0;

	if (!qp || to_rts(qp, ctx, qp->qp_num + 0x1000)) {
		fprintf(stderr, "verbs_exhaust: set-up failed: %s\n", strerror(errno));
		return 2;
	}
	for (unsigned i = 0; i < 4 * ia.cap.max_send_wr + 64; i++) {
		bad = NULL;
		errno = 4242;
		ret = ibv_post_send(qp, &wr, &bad);
		err = errno;
		if (ret)
			break;
		accepted++;
	}
	printf("sq %u: accepted %u, then ret %d (%s), errno %d, bad_wr %s\n", ia.cap.max_send_wr, accepted, ret,
	       ret > 0 ? strerror(ret) : "-", err,
	       bad == &wr ? "the refused wr"
	       : bad	  ? "other"
			  : "unset");
	ibv_destroy_qp(qp); /* with the sends outstanding */
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	/* the queue may hold more than the size written back (rxe: 16 asked, 31 taken), never less */
	return ret == ENOMEM && accepted >= ia.cap.max_send_wr ? 0 : 1;
}

static int mode_qp(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp **qps = calloc(4096, sizeof(*qps));
	int n = 0, err = 0;

	if (!cq || !qps) {
		fprintf(stderr, "verbs_exhaust: set-up failed: %s\n", strerror(errno));
		free(qps);
		return 2;
	}
	for (; n < 4096; n++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4096, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 }
		};

		errno = 0;
		qps[n] = ibv_create_qp(pd, &ia);
		if (!qps[n]) {
			err = errno;
			break;
		}
	}
	printf("qp: %s, errno %d (%s)\n", n < 4096 ? "ibv_create_qp failed" : "never failed", err, strerror(err));
	fprintf(stderr, "created %d\n", n);
	for (int i = 0; i < n; i++)
		ibv_destroy_qp(qps[i]);
	free(qps);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return n < 4096 && err ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	int rc;

	if (argc != 3 || (strcmp(argv[1], "sq") && strcmp(argv[1], "qp"))) {
		fprintf(stderr, "usage: verbs_exhaust sq|qp DEVICE\n");
		return 2;
	}
	ctx = open_dev(argv[2]);
	if (!ctx) {
		fprintf(stderr, "verbs_exhaust: cannot open '%s'\n", argv[2]);
		return 2;
	}
	rc = !strcmp(argv[1], "sq") ? mode_sq(ctx) : mode_qp(ctx);
	ibv_close_device(ctx);
	return rc;
}
