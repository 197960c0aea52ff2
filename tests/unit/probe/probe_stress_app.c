// SPDX-License-Identifier: MIT
/*
 * A multi-threaded verbs application for test_probe's preload cases: run with librtune_probe.so and the hardening
 * tests' software device (fakedev.so) preloaded, so that the real LD_PRELOAD glue (symbol resolution once across
 * threads, the destructor's final write) is exercised, under TSan in the tsan job. Modes:
 *   threads N   N threads, each with its own loopback QP pair (receives posted and reposted), post 5000 signaled
 *               SENDs each and poll their completions; joined; prints "sent TOTAL" (ENOMEM refusals are retried
 *               and not counted) and exits 0 - the probe's file must count exactly TOTAL send WRs.
 *   early N     the same threads post without end; main calls exit(0) after 50 ms while they post: the destructor
 *               writes the file while they run.
 *   noverbs N   N threads that never call verbs: no file, nothing printed by the probe.
 *   ops N       one thread, one loopback RC pair: N signaled WRs each of SEND 64 B, RDMA WRITE 128 B, RDMA READ 256 B,
 *               atomic fetch-and-add and compare-and-swap (8 B); prints "ops N" (`rtune probe`'s tests).
 * Exit 0, or 1 with a message on stderr when a verbs call fails unexpectedly. PROBE_APP_EXIT=K makes a mode that
 * succeeded exit with K instead, PROBE_APP_SIGNAL=SIG raise SIG (exit statuses `rtune probe` must pass on).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define POSTS 5000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static _Atomic unsigned long sent;
static _Atomic int forever;

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	char buf[256];
};

static int connect_to(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.dest_qp_num = dest;
	at.path_mtu = IBV_MTU_1024;
	at.ah_attr.dlid = 1;
	at.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &at,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &at,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_recvs(struct pair *p, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = sizeof(p->buf), .lkey = p->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	for (int i = 0; i < n; i++)
		if (ibv_post_recv(p->b, &wr, &bad))
			return -1;
	return 0;
}

static void *poster(void *arg)
{
	struct pair *p = arg;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 32,
						.max_recv_wr = 64,
						.max_send_sge = 1,
						.max_recv_sge = 1,
						.max_inline_data = 64 } };
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
	struct ibv_wc wc[16];
	unsigned long mine = 0;

	p->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	p->mr = p->cq ? ibv_reg_mr(pd, p->buf, sizeof(p->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	ia.send_cq = ia.recv_cq = p->cq;
	p->a = p->mr ? ibv_create_qp(pd, &ia) : NULL;
	p->b = p->a ? ibv_create_qp(pd, &ia) : NULL;
	if (!p->b || connect_to(p->a, p->b->qp_num) || connect_to(p->b, p->a->qp_num) || post_recvs(p, 64)) {
		fprintf(stderr, "probe_stress_app: set-up failed: %s\n", strerror(errno));
		return (void *)1;
	}
	sge = (struct ibv_sge){ .addr = (uintptr_t)p->buf, .lkey = p->mr->lkey };
	for (unsigned long i = 0; atomic_load(&forever) || i < POSTS;) {
		int rc, n;

		sge.length = (uint32_t)(i % 200) + 1;
		wr.send_flags = IBV_SEND_SIGNALED | (sge.length <= 64 ? IBV_SEND_INLINE : 0);
		rc = ibv_post_send(p->a, &wr, &bad);
		if (rc == 0) {
			i++;
			mine++;
		} else if (rc != ENOMEM) {
			fprintf(stderr, "probe_stress_app: post_send: %s\n", strerror(rc));
			return (void *)1;
		}
		while ((n = ibv_poll_cq(p->cq, 16, wc)) > 0)
			for (int k = 0; k < n; k++)
				if (wc[k].opcode == IBV_WC_RECV && post_recvs(p, 1))
					return (void *)1;
		if (n < 0)
			return (void *)1;
	}
	atomic_fetch_add(&sent, mine);
	return NULL;
}

/* Posts one signaled WR and waits for its completion (receives reposted); 0 or -1 with a message. */
static int post_wait(struct pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc[16];
	bool done = false;
	int n, rc = ibv_post_send(p->a, wr, &bad);

	if (rc) {
		fprintf(stderr, "probe_stress_app: post_send opcode %d: %s\n", wr->opcode, strerror(rc));
		return -1;
	}
	for (int spins = 0; !done && spins < 1000000; spins++) {
		n = ibv_poll_cq(p->cq, 16, wc);
		if (n < 0)
			return -1;
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "probe_stress_app: completion status %d\n", wc[k].status);
				return -1;
			}
			if (wc[k].opcode == IBV_WC_RECV) {
				if (post_recvs(p, 1))
					return -1;
			} else {
				done = true;
			}
		}
	}
	return done ? 0 : -1;
}

/* Mode ops: N of each opcode class on one RC pair. 0 or 1. */
static int ops(long n)
{
	static struct pair pr;
	struct pair *p = &pr;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 32,
						.max_recv_wr = 64,
						.max_send_sge = 1,
						.max_recv_sge = 1,
						.max_inline_data = 64 } };
	static uint64_t target[4] __attribute__((aligned(8)));
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	static const struct {
		enum ibv_wr_opcode op;
		uint32_t len;
	} kinds[] = { { IBV_WR_SEND, 64 },
		      { IBV_WR_RDMA_WRITE, 128 },
		      { IBV_WR_RDMA_READ, 256 },
		      { IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },
		      { IBV_WR_ATOMIC_CMP_AND_SWP, 8 } };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	p->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	p->mr = p->cq ? ibv_reg_mr(pd, p->buf, sizeof(p->buf), acc) : NULL;
	ia.send_cq = ia.recv_cq = p->cq;
	p->a = p->mr ? ibv_create_qp(pd, &ia) : NULL;
	p->b = p->a ? ibv_create_qp(pd, &ia) : NULL;
	if (!p->b || connect_to(p->a, p->b->qp_num) || connect_to(p->b, p->a->qp_num) || post_recvs(p, 64)) {
		fprintf(stderr, "probe_stress_app: set-up failed: %s\n", strerror(errno));
		return 1;
	}
	for (long i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			sge = (struct ibv_sge){ .addr = (uintptr_t)p->buf,
						.length = kinds[k].len,
						.lkey = p->mr->lkey };
			wr = (struct ibv_send_wr){
				.sg_list = &sge, .num_sge = 1, .opcode = kinds[k].op, .send_flags = IBV_SEND_SIGNALED
			};
			if (kinds[k].op == IBV_WR_RDMA_WRITE || kinds[k].op == IBV_WR_RDMA_READ) {
				wr.wr.rdma.remote_addr = (uintptr_t)p->buf;
				wr.wr.rdma.rkey = p->mr->rkey;
			} else if (kinds[k].len == 8) {
				wr.wr.atomic.remote_addr = (uintptr_t)&target[0];
				wr.wr.atomic.rkey = p->mr->rkey;
				wr.wr.atomic.compare_add = 1;
			}
			if (post_wait(p, &wr))
				return 1;
		}
	printf("ops %ld\n", n);
	fflush(stdout);
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_dereg_mr(p->mr);
	ibv_destroy_cq(p->cq);
	return 0;
}

/* The mode's status, or PROBE_APP_EXIT's / PROBE_APP_SIGNAL's when it succeeded. */
static int finish(int rc)
{
	const char *e = getenv("PROBE_APP_EXIT"), *sig = getenv("PROBE_APP_SIGNAL");

	if (rc)
		return rc;
	if (sig && *sig)
		raise((int)strtol(sig, NULL, 10));
	return e && *e ? (int)strtol(e, NULL, 10) : 0;
}

static void *idler(void *arg)
{
	(void)arg;
	usleep(10000);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	struct ibv_device **l;
	struct pair *pairs;
	pthread_t th[16];
	bool noverbs = argc == 3 && !strcmp(argv[1], "noverbs"), is_ops = argc == 3 && !strcmp(argv[1], "ops");

	if (n < 1 || n > 16 || (strcmp(argv[1], "threads") && strcmp(argv[1], "early") && !noverbs && !is_ops)) {
		fprintf(stderr, "usage: probe_stress_app threads|early|noverbs|ops N (1..16)\n");
		return 2;
	}
	if (noverbs) {
		for (int t = 0; t < n; t++)
			pthread_create(&th[t], NULL, idler, NULL);
		for (int t = 0; t < n; t++)
			pthread_join(th[t], NULL);
		return 0;
	}
	l = ibv_get_device_list(NULL);
	ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	if (l)
		ibv_free_device_list(l);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	pairs = calloc((size_t)n, sizeof(*pairs));
	if (!pd || !pairs) {
		fprintf(stderr, "probe_stress_app: no device\n");
		free(pairs);
		return 1;
	}
	if (is_ops) {
		int rc = ops(n);

		free(pairs);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		return finish(rc);
	}
	atomic_store(&forever, !strcmp(argv[1], "early"));
	for (int t = 0; t < n; t++) {
		if (pthread_create(&th[t], NULL, poster, &pairs[t])) {
			fprintf(stderr, "probe_stress_app: cannot start a thread\n");
			_exit(1); /* threads may be running on pairs */
		}
	}
	if (atomic_load(&forever)) {
		usleep(50000);
		exit(0); /* threads still posting: the probe's destructor writes while they run */
	}
	for (int t = 0; t < n; t++) {
		void *ret;

		pthread_join(th[t], &ret);
		if (ret)
			_exit(1); /* the message is out; the other threads are done with pairs */
	}
	printf("sent %lu\n", atomic_load(&sent));
	for (int t = 0; t < n; t++) {
		ibv_destroy_qp(pairs[t].a);
		ibv_destroy_qp(pairs[t].b);
		ibv_dereg_mr(pairs[t].mr);
		ibv_destroy_cq(pairs[t].cq);
	}
	free(pairs);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return finish(0);
}
