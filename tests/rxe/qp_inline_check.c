// SPDX-License-Identifier: MIT
/*
 * Test helper for the rxe tier: tries once to create a QP of the given type asking for the given max_inline_data on a
 * device, independently of rtune's own probing code. Exit 0 = accepted (prints what the provider wrote back), 1 =
 * refused, 2 = usage or set-up failure.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr attr;
	int n, rc = 2;

	if (argc != 4 || (strcmp(argv[2], "rc") && strcmp(argv[2], "ud"))) {
		fprintf(stderr, "usage: qp_inline_check DEVICE rc|ud BYTES\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0)
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "qp_inline_check: cannot open '%s'\n", argv[1]);
		goto out;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "qp_inline_check: cannot create PD/CQ: %s\n", strerror(errno));
		goto out;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = attr.recv_cq = cq;
	attr.qp_type = strcmp(argv[2], "rc") == 0 ? IBV_QPT_RC : IBV_QPT_UD;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = (uint32_t)strtoul(argv[3], NULL, 0);
	qp = ibv_create_qp(pd, &attr);
	if (qp) {
		printf("accepted %s written back %u\n", argv[3], attr.cap.max_inline_data);
		ibv_destroy_qp(qp);
		rc = 0;
	} else {
		printf("refused %s: %s\n", argv[3], strerror(errno));
		rc = 1;
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
out:
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return rc;
}
