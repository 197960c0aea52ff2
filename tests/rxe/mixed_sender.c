// SPDX-License-Identifier: MIT
/*
 * Test application for the rxe tier that knows nothing of rtune (plain libibverbs, no librtune): one process, two RC
 * QPs on one device connected to each other, the sender posting SEND_WITH_IMM messages of a mix of sizes (a fixed
 * pseudo-random order over the given sizes, so every size is signaled alike), one WR in N signaled, never inline
 * (it asks for no max_inline_data and never sets IBV_SEND_INLINE), a bounded send queue it keeps safe itself (at most
 * depth - N WRs unretired). The receiver checks each message: its length, its immediate (the sequence number) and
 * every byte. The sender checks that ibv_post_send left every WR exactly as it built it. It measures its own signaled
 * post -> completion times and prints their median. tests/rxe/inline-ctl-apply.sh runs it under the probe's adaptive
 * apply mode and the emulated-NIC shim.
 *
 * usage: mixed_sender -d DEV [-g GID_INDEX] -n MESSAGES -s SIZE,SIZE,... [-N SIGNAL_EVERY] [-q SQ_DEPTH]
 * Prints one summary line: "sent M messages (S signaled), E ENOMEM; received R, B bad; C WRs changed by post_send;
 * median signaled post->completion L ns". Exit 0 when every message arrived intact and nothing else went wrong,
 * 1 when not, 2 usage, 3 no device.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZES 128
#define MAX_BYTES 4096
#define RX_DEPTH 256
#define LAT_KEEP 65536

struct opts {
	const char *dev;
	int gid_index;
	unsigned long count;
	unsigned sizes[MAX_SIZES], nsizes, sig_every, sq_depth;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The size of message seq: a fixed pseudo-random pick among the sizes (the same in sender and receiver). */
static unsigned size_of(const struct opts *o, uint64_t seq)
{
	uint64_t x = seq * 0x9E3779B97F4A7C15ull;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return o->sizes[x % o->nsizes];
}

/* Byte k of message seq. */
static uint8_t pattern(uint64_t seq, unsigned k)
{
	return (uint8_t)(seq * 131 + k * 7 + (k >> 8));
}

/* Every field of a SEND WR the application set, compared one by one (a struct has padding: no memcmp). */
static bool same_wr(const struct ibv_send_wr *a, const struct ibv_send_wr *b)
{
	return a->wr_id == b->wr_id && a->next == b->next && a->sg_list == b->sg_list && a->num_sge == b->num_sge &&
	       a->opcode == b->opcode && a->send_flags == b->send_flags && a->imm_data == b->imm_data;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!v)
			return -1;
		i++;
		if (!strcmp(a, "-d")) {
			o->dev = v;
		} else if (!strcmp(a, "-g")) {
			o->gid_index = (int)strtol(v, &end, 10);
			if (*end || o->gid_index < 0 || o->gid_index > 255)
				return -1;
		} else if (!strcmp(a, "-n")) {
			o->count = strtoul(v, &end, 10);
			if (*end || !o->count || o->count > 100000000ul)
				return -1;
		} else if (!strcmp(a, "-N")) {
			o->sig_every = (unsigned)strtoul(v, &end, 10);
			if (*end || !o->sig_every || o->sig_every > 64)
				return -1;
		} else if (!strcmp(a, "-q")) {
			o->sq_depth = (unsigned)strtoul(v, &end, 10);
			if (*end || o->sq_depth < 2 || o->sq_depth > 4096)
				return -1;
		} else if (!strcmp(a, "-s")) {
			for (const char *p = v; *p; p = *end == ',' ? end + 1 : end) {
				unsigned long s = strtoul(p, &end, 10);

				if (end == p || !s || s > MAX_BYTES || o->nsizes == MAX_SIZES || (*end && *end != ','))
					return -1;
				o->sizes[o->nsizes++] = (unsigned)s;
			}
		} else {
			return -1;
		}
	}
	if (!o->dev || !o->count || !o->nsizes || o->sig_every * 2 > o->sq_depth)
		return -1;
	return 0;
}

/* Moves qp to RTR and RTS towards remote QP number dqpn on the same port (RoCE: through the GID). 0 or an errno. */
static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, int port, int gid_index, const union ibv_gid *gid,
		      enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = (uint8_t)port, .pkey_index = 0, .qp_access_flags = 0
	};
	int ret;

	if ((ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = (uint8_t)port;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 1;
	if ((ret = ibv_modify_qp(qp, &a,
				 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	struct opts o = { .gid_index = 1, .sig_every = 4, .sq_depth = 64 };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *sq, *rq;
	struct ibv_mr *smr, *rmr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint8_t *sbuf, *rbuf;
	static uint64_t lat[LAT_KEEP], t_post[4096];
	unsigned long sent = 0, retired = 0, received = 0, bad = 0, enomem = 0, changed = 0, signaled = 0, nlat = 0;
	int n, ret;

	if (parse_opts(argc, argv, &o)) {
		fprintf(stderr,
			"usage: mixed_sender -d DEV [-g GID_INDEX] -n MESSAGES -s SIZE,SIZE,... [-N SIGNAL_EVERY] "
			"[-q SQ_DEPTH] (sizes 1..%d, N <= SQ_DEPTH / 2)\n",
			MAX_BYTES);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), o.dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "mixed_sender: no device '%s'\n", o.dev);
		return 3;
	}
	if (ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, o.gid_index, &gid)) {
		fprintf(stderr, "mixed_sender: cannot query port 1 / gid %d of '%s'\n", o.gid_index, o.dev);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, (int)o.sq_depth * 2, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, RX_DEPTH * 2, NULL, NULL, 0);
	sbuf = aligned_alloc(4096, (size_t)o.sq_depth * MAX_BYTES);
	rbuf = aligned_alloc(4096, (size_t)RX_DEPTH * MAX_BYTES);
	if (!pd || !scq || !rcq || !sbuf || !rbuf) {
		fprintf(stderr, "mixed_sender: cannot set up the PD, CQs or buffers\n");
		return 1;
	}
	smr = ibv_reg_mr(pd, sbuf, (size_t)o.sq_depth * MAX_BYTES, 0);
	rmr = ibv_reg_mr(pd, rbuf, (size_t)RX_DEPTH * MAX_BYTES, IBV_ACCESS_LOCAL_WRITE);
	{
		struct ibv_qp_init_attr a = {
			.send_cq = scq,
			.recv_cq = scq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = o.sq_depth, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 }
		};
		struct ibv_qp_init_attr b = {
			.send_cq = rcq,
			.recv_cq = rcq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = RX_DEPTH, .max_send_sge = 1, .max_recv_sge = 1 }
		};

		sq = smr && rmr ? ibv_create_qp(pd, &a) : NULL;
		rq = sq ? ibv_create_qp(pd, &b) : NULL;
	}
	if (!sq || !rq) {
		fprintf(stderr, "mixed_sender: cannot register memory or create the QPs: %s\n", strerror(errno));
		return 1;
	}
	if ((ret = connect_qp(sq, rq->qp_num, 1, o.gid_index, &gid, port.active_mtu)) ||
	    (ret = connect_qp(rq, sq->qp_num, 1, o.gid_index, &gid, port.active_mtu))) {
		fprintf(stderr, "mixed_sender: cannot connect the QPs: %s\n", strerror(ret));
		return 1;
	}
	for (unsigned i = 0; i < RX_DEPTH; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)(rbuf + (size_t)i * MAX_BYTES),
				     .length = MAX_BYTES,
				     .lkey = rmr->lkey };
		struct ibv_recv_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bw;

		if (ibv_post_recv(rq, &w, &bw)) {
			fprintf(stderr, "mixed_sender: cannot post receives\n");
			return 1;
		}
	}

	while (received < o.count) {
		struct ibv_wc wc[32];
		int k;

		/* room: the send queue stays below depth - N unretired WRs, the receiver RX_DEPTH / 2 ahead */
		if (sent < o.count && sent - retired + o.sig_every < o.sq_depth && sent - received < RX_DEPTH / 2) {
			unsigned len = size_of(&o, sent);
			uint8_t *p = sbuf + (size_t)(sent % o.sq_depth) * MAX_BYTES;
			struct ibv_sge s = { .addr = (uintptr_t)p, .length = len, .lkey = smr->lkey };
			struct ibv_send_wr w = { 0 }, before, *bw = NULL;
			bool sig = sent % o.sig_every == o.sig_every - 1 || sent + 1 == o.count;

			for (unsigned b = 0; b < len; b++)
				p[b] = pattern(sent, b);
			w.wr_id = sent;
			w.sg_list = &s;
			w.num_sge = 1;
			w.opcode = IBV_WR_SEND_WITH_IMM;
			w.send_flags = sig ? IBV_SEND_SIGNALED : 0;
			w.imm_data = htonl((uint32_t)sent);
			before = w;
			if (sig)
				t_post[sent % 4096] = now_ns();
			ret = ibv_post_send(sq, &w, &bw);
			if (!same_wr(&before, &w) || s.length != len || s.lkey != smr->lkey)
				changed++;
			if (ret == ENOMEM) {
				enomem++;
			} else if (ret) {
				fprintf(stderr, "mixed_sender: ibv_post_send of message %lu (%u B): %s\n", sent, len,
					strerror(ret));
				return 1;
			} else {
				signaled += sig;
				sent++;
			}
		}
		k = ibv_poll_cq(scq, 32, wc);
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "mixed_sender: send completion of message %llu: %s\n",
					(unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
				return 1;
			}
			if (nlat < LAT_KEEP)
				lat[nlat++] = now_ns() - t_post[wc[i].wr_id % 4096];
			retired = wc[i].wr_id + 1;
		}
		k = ibv_poll_cq(rcq, 32, wc);
		for (int i = 0; i < k; i++) {
			uint64_t seq = received;
			unsigned len = size_of(&o, seq);
			const uint8_t *p = rbuf + (size_t)wc[i].wr_id * MAX_BYTES;
			bool ok = wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV &&
				  (wc[i].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[i].imm_data) == (uint32_t)seq &&
				  wc[i].byte_len == len;
			struct ibv_sge s = { .addr = (uintptr_t)p, .length = MAX_BYTES, .lkey = rmr->lkey };
			struct ibv_recv_wr w = { .wr_id = wc[i].wr_id, .sg_list = &s, .num_sge = 1 }, *bw;

			for (unsigned b = 0; ok && b < len; b++)
				ok = p[b] == pattern(seq, b);
			if (!ok && bad++ < 5)
				fprintf(stderr,
					"mixed_sender: message %llu (%u B) arrived wrong: status %s, %u B, imm %u\n",
					(unsigned long long)seq, len, ibv_wc_status_str(wc[i].status), wc[i].byte_len,
					ntohl(wc[i].imm_data));
			received++;
			if (wc[i].status != IBV_WC_SUCCESS)
				return 1;
			if (ibv_post_recv(rq, &w, &bw)) {
				fprintf(stderr, "mixed_sender: cannot repost a receive\n");
				return 1;
			}
		}
	}
	qsort(lat, nlat, sizeof(lat[0]), cmp_u64);
	printf("sent %lu messages (%lu signaled), %lu ENOMEM; received %lu, %lu bad; %lu WRs changed by post_send; "
	       "median signaled post->completion %llu ns\n",
	       sent, signaled, enomem, received, bad, changed, (unsigned long long)(nlat ? lat[nlat / 2] : 0));
	ibv_destroy_qp(sq);
	ibv_destroy_qp(rq);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(sbuf);
	free(rbuf);
	return received == sent && !bad && !changed && !enomem ? 0 : 1;
}
