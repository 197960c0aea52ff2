// SPDX-License-Identifier: MIT
/*
 * emunic_check: what a post returns must not depend on the cost-model shim. Run once plainly and once under
 * LD_PRELOAD=libemunic.so (tests/rxe/emulated.sh compares the two outputs), it posts on rxe0 chains whose outcome the
 * provider decides (a valid inline chain on a QP in RESET; a chain whose second WR has too many SGEs) and prints each
 * post's return value, errno and which WR bad_wr names, and checks itself that every WR's send_flags are as the
 * caller set them after the call (the shim strips IBV_SEND_INLINE for the provider and must restore it). Then two
 * threads post such chains concurrently on their own QPs, 20000 times each, checking the same after every post.
 * Then the timing of one post, the part the model adds being robust to a loaded host: per size (8, 64, 128, 512 B),
 * inline or not, signaled or not, the minimum over 600 single-WR posts (in rounds over the 16 kinds) of the time
 * ibv_post_send takes, as "timing SIZE INLINE SIGNALED MIN_NS" lines (a minimum: a preemption only ever adds; the
 * script subtracts a run with the shim's costs at 0 and compares with the model). Exits 1 on any failed check, 3
 * without a device.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAIN 3

struct qpctx {
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	int fails;
};

/* Builds a chain of CHAIN inline SENDs of 16 B on mr; bad_sge: the second WR gets more SGEs than the QP allows. */
static void build(struct ibv_send_wr *wr, struct ibv_sge *sge, struct ibv_mr *mr, int bad_sge)
{
	memset(wr, 0, sizeof(*wr) * CHAIN);
	for (int i = 0; i < CHAIN; i++) {
		sge[i].addr = (uintptr_t)mr->addr;
		sge[i].length = 16;
		sge[i].lkey = mr->lkey;
		wr[i].wr_id = (uint64_t)i + 1;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_INLINE | (i == CHAIN - 1 ? IBV_SEND_SIGNALED : 0);
		wr[i].next = i + 1 < CHAIN ? &wr[i + 1] : NULL;
	}
	if (bad_sge) {
		/* every SGE of the too-long list is a valid 16 B one: the shim adds the modeled DMA cost per byte of each
		   (uninitialised lengths made it spin for minutes per post: the timing check's old "hang") */
		for (int s = 0; s < 64; s++)
			sge[CHAIN + s] = sge[1];
		wr[1].sg_list = &sge[CHAIN];
		wr[1].num_sge = 64;
		wr[1].send_flags = 0;
	}
}

/* One post; returns the number of failed checks, prints the outcome when verbose. */
static int post_once(struct qpctx *q, int bad_sge, int verbose, const char *what)
{
	struct ibv_send_wr wr[CHAIN], *bad = NULL;
	struct ibv_sge sge[CHAIN * 64];
	unsigned flags[CHAIN];
	int ret, err, fails = 0;

	build(wr, sge, q->mr, bad_sge);
	for (int i = 0; i < CHAIN; i++)
		flags[i] = wr[i].send_flags;
	errno = 12345;
	ret = ibv_post_send(q->qp, wr, &bad);
	err = errno;
	for (int i = 0; i < CHAIN; i++)
		if (wr[i].send_flags != flags[i]) {
			fprintf(stderr, "FAIL %s: wr %d send_flags 0x%x after the post, 0x%x before\n", what, i,
				wr[i].send_flags, flags[i]);
			fails++;
		}
	if (verbose)
		printf("%s: ret %d errno %s bad_wr %s\n", what, ret, err == 12345 ? "unchanged" : strerror(err),
		       ret == 0			       ? "-"
		       : bad >= wr && bad < wr + CHAIN ? (bad == wr	  ? "wr 0"
							  : bad == wr + 1 ? "wr 1"
									  : "wr 2")
						       : "other");
	return fails;
}

static void *thread_main(void *arg)
{
	struct qpctx *q = arg;

	for (int i = 0; i < 20000; i++)
		q->fails += post_once(q, i & 1, 0, "thread");
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Prints the minimum time of one single-WR post per size / inline / signaled on q (a QP in RESET). The 16 kinds are
 * sampled in interleaved rounds, not one block after another: a slow stretch of the guest (its vCPU descheduled for a
 * few ms, seen to lift all 300 samples of one block by 6 us) then lifts one sample of each kind, never the minimum. */
static void timing(struct qpctx *q)
{
	enum { N_SIZES = 4, N_KINDS = N_SIZES * 4, N_ROUNDS = 600 };
	static const uint32_t sizes[N_SIZES] = { 8, 64, 128, 512 };
	uint64_t best[N_KINDS];

	for (int j = 0; j < N_KINDS; j++)
		best[j] = UINT64_MAX;
	for (int r = 0; r < N_ROUNDS; r++)
		for (int j = 0; j < N_KINDS; j++) {
			struct ibv_send_wr wr, *bad;
			struct ibv_sge sge = { (uintptr_t)q->mr->addr, sizes[j / 4], q->mr->lkey };
			uint64_t t0, t1;

			memset(&wr, 0, sizeof(wr));
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = ((j & 2) ? IBV_SEND_INLINE : 0) | ((j & 1) ? IBV_SEND_SIGNALED : 0);
			t0 = now_ns();
			(void)ibv_post_send(q->qp, &wr, &bad);
			t1 = now_ns();
			if (t1 - t0 < best[j])
				best[j] = t1 - t0;
		}
	for (int j = 0; j < N_KINDS; j++)
		printf("timing %u %d %d %llu\n", sizes[j / 4], (j & 2) != 0, (j & 1) != 0, (unsigned long long)best[j]);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct qpctx q[2];
	pthread_t t[2];
	static char buf[4096];
	int fails = 0;

	if (!list || !list[0]) {
		fprintf(stderr, "emunic_check: no RDMA device\n");
		return 3;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(stderr, "emunic_check: cannot open %s: %s\n", ibv_get_device_name(list[0]), strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "emunic_check: cannot create a pd / cq: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC };

		a.cap.max_send_wr = 64;
		a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = 512;
		q[i].fails = 0;
		q[i].mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		q[i].qp = q[i].mr ? ibv_create_qp(pd, &a) : NULL;
		if (!q[i].qp) {
			fprintf(stderr, "emunic_check: cannot create a qp: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("shim: %s\n", getenv("LD_PRELOAD") ? "preloaded" : "none");
	fails += post_once(&q[0], 0, 1, "inline chain on a RESET qp");
	fails += post_once(&q[0], 1, 1, "chain with a bad second WR");
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_main, &q[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		fails += q[i].fails;
	}
	printf("threads: %d failed checks\n", q[0].fails + q[1].fails);
	if (getenv("EMUNIC_CHECK_TIMING"))
		timing(&q[0]);
	for (int i = 0; i < 2; i++) {
		ibv_destroy_qp(q[i].qp);
		ibv_dereg_mr(q[i].mr);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return fails ? 1 : 0;
}
