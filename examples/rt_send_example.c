// SPDX-License-Identifier: MIT
/*
 * rtune example: an RDMA sender that follows a node's rtune profile through librtune. It loads the profile (--profile
 * or $RTUNE_PROFILE), selects the entry of its device/port for RC SEND, creates its QP with the profile's sq_depth and
 * max_inline_data, then posts sends of mixed sizes to a second QP on the same port (loopback): IBV_SEND_INLINE below
 * the threshold (rt_should_inline), IBV_SEND_SIGNALED every signal_interval WRs, and the send CQ polled before the
 * queue can fill (struct rt_sendq), so ibv_post_send never fails with ENOMEM. It verifies every message arrived with
 * its size and payload and prints what it did; exit 0 only when all of that held.
 * With --adaptive the inline threshold is not fixed: an rt_inline_ctl starts at the profile's threshold (or at
 * --start-threshold), bounded by the profile's max_inline_data and the max_inline_data the QP was granted, and learns
 * from this sender's own completions: a send it flags for sampling is posted signaled after the queue drained and
 * timed to its completion (post -> completion), and every move of the threshold is printed
 * ("inline move at message M: A -> B B").
 *
 * Build against an installed rtune with: cc rt_send_example.c $(pkg-config --cflags --libs rtune) -libverbs
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rtune/profile.h>

#define RQ_DEPTH 512u
#define POLL_BATCH 32
#define SPIN_LIMIT_NS (10ull * 1000000000ull) /* a completion not seen in 10 s is a failure, not a hang */

struct opts {
	const char *profile;
	const char *device;
	int port;
	int gid_index;
	unsigned long count;
	uint32_t sizes[64];
	int n_sizes;
	bool adaptive;
	long start_threshold; /* -1: the profile's */
};

struct ctx {
	struct ibv_context *vctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *sqp, *rqp;
	struct ibv_mr *smr, *rmr;
	char *sbuf, *rbuf; /* sq_depth send slots, RQ_DEPTH receive slots, max_size bytes each */
	uint32_t max_size;
	uint32_t inline_cap; /* max_inline_data the provider granted */
	union ibv_gid gid;
	uint16_t lid;
};

struct stats {
	unsigned long posted, inlined, signaled, enomem, send_cqes, received, bad_recv, sampled;
	uint32_t max_outstanding;
};

static const char usage[] =
	"usage: rt_send_example [-d DEVICE] [-i PORT] [-g GID_INDEX] [-n COUNT] [-s SIZE,...] [--profile PATH]\n"
	"                       [--adaptive [--start-threshold BYTES]]\n"
	"Posts COUNT RC sends over a loopback pair of QPs following the rtune profile of DEVICE/PORT (RC SEND"
	" entry); --adaptive lets the inline threshold learn from the completions (rt_inline_ctl).\n";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_sizes(const char *s, struct opts *o)
{
	char *dup = strdup(s), *save = NULL;

	o->n_sizes = 0;
	for (char *t = strtok_r(dup, ",", &save); t && o->n_sizes < 64; t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(t, &end, 10);

		if (*end || v == 0 || v > 65536) {
			free(dup);
			return -1;
		}
		o->sizes[o->n_sizes++] = (uint32_t)v;
	}
	free(dup);
	return o->n_sizes ? 0 : -1;
}

/* Parses s as a whole decimal number in lo..hi into *out; returns 0, or -1 (*out untouched) if it is not one. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* The first IPv4-mapped GID (RoCE v2 over an IPv4 address), as ibv_rc_pingpong -g 1 uses on rxe. */
static int pick_gid(struct ibv_context *vctx, int port, int tbl_len)
{
	for (int i = 0; i < tbl_len && i < 64; i++) {
		union ibv_gid g;
		static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (ibv_query_gid(vctx, (uint8_t)port, i, &g) == 0 && memcmp(g.raw, v4map, 12) == 0)
			return i;
	}
	return -1;
}

static int to_rts(struct ctx *c, struct ibv_qp *qp, uint32_t remote_qpn, const struct opts *o)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)o->port;
	a.qp_access_flags = 0;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = (uint8_t)o->port;
	a.ah_attr.dlid = c->lid;
	if (o->gid_index >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = c->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)o->gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	if ((rc = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_recv(struct ctx *c, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(c->rbuf + (size_t)slot * c->max_size), c->max_size, c->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->rqp, &wr, &bad);
}

/* Payload byte i of message seq: lets the receiver check every message arrived intact and in order. */
static char payload(unsigned long seq, uint32_t i)
{
	return (char)((seq * 131u + i * 7u) & 0xff);
}

/* Polls the receive CQ (non-blocking), checks and reposts; returns -1 on an error completion. */
static int drain_recv(struct ctx *c, const struct opts *o, struct stats *s)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(c->rcq, POLL_BATCH, wc);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		unsigned long seq = s->received;
		uint32_t want = o->sizes[seq % (unsigned long)o->n_sizes];
		const char *p = c->rbuf + (size_t)wc[i].wr_id * c->max_size;

		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rt_send_example: receive completion error: %s\n",
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (wc[i].byte_len != want) {
			s->bad_recv++;
		} else {
			for (uint32_t k = 0; k < want; k++) {
				if (p[k] != payload(seq, k)) {
					s->bad_recv++;
					break;
				}
			}
		}
		s->received++;
		if (post_recv(c, (uint32_t)wc[i].wr_id))
			return -1;
	}
	return n;
}

/* Polls the send CQ until at least one completion (or for at most the spin limit when wait). */
static int poll_send(struct ctx *c, struct rt_sendq *q, struct stats *s, const struct opts *o, bool wait)
{
	uint64_t t0 = now_ns();

	for (;;) {
		struct ibv_wc wc[POLL_BATCH];
		int n = ibv_poll_cq(c->scq, POLL_BATCH, wc);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "rt_send_example: send completion error: %s\n",
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
		}
		if (n > 0) {
			s->send_cqes += (unsigned long)n;
			if (rt_sendq_completed(q, (uint32_t)n)) {
				fprintf(stderr, "rt_send_example: more send completions than signaled sends\n");
				return -1;
			}
			return n;
		}
		if (drain_recv(c, o, s) < 0)
			return -1;
		if (!wait)
			return 0;
		if (now_ns() - t0 > SPIN_LIMIT_NS) {
			fprintf(stderr, "rt_send_example: no send completion within 10 s\n");
			return -1;
		}
	}
}

/* Polls the send CQ until every signaled WR completed (the queue is empty afterwards). */
static int drain_send(struct ctx *c, struct rt_sendq *q, struct stats *s, const struct opts *o)
{
	while (rt_sendq_signaled_pending(q))
		if (poll_send(c, q, s, o, true) < 0)
			return -1;
	return 0;
}

/* The inline controller of --adaptive, or NULL (and 0) when the run uses the fixed threshold. */
static int make_ctl(const struct ctx *c, const struct rt_profile_entry *e, const struct opts *o, rt_inline_ctl **out)
{
	struct rt_inline_ctl_params p;

	*out = NULL;
	if (!o->adaptive)
		return 0;
	rt_inline_ctl_params_init(&p);
	p.threshold_bytes = o->start_threshold >= 0 ? (uint32_t)o->start_threshold : e->inline_threshold;
	p.min_bytes = 0;
	p.max_bytes = e->max_inline_data;
	p.granted_max_inline = c->inline_cap;
	p.sample_every = 1; /* a short run: every watched send is a candidate (the bands are ~ 1/20 of the mix) */
	return rt_inline_ctl_create(&p, out);
}

static void print_ctl(const rt_inline_ctl *ctl)
{
	struct rt_inline_ctl_state st;

	if (!ctl || rt_inline_ctl_get_state(ctl, &st))
		return;
	printf("inline controller: start %u B, final %u B (bounds %u..%u B), %llu up, %llu down, %llu reverts, %llu "
	       "rounds, %llu samples (%llu explored, %llu dropped), %s; last round: below %u..%u B inline %llu ns / not "
	       "%llu ns, above %u..%u B inline %llu ns / not %llu ns\n",
	       st.start_bytes, st.threshold_bytes, st.min_bytes, st.max_bytes, (unsigned long long)st.moves_up,
	       (unsigned long long)st.moves_down, (unsigned long long)st.reverts, (unsigned long long)st.rounds,
	       (unsigned long long)st.samples, (unsigned long long)st.explored, (unsigned long long)st.dropped,
	       st.parked ? "parked" : "exploring", st.below_lo, st.below_hi, (unsigned long long)st.below_inline_ns,
	       (unsigned long long)st.below_noinline_ns, st.above_lo, st.above_hi,
	       (unsigned long long)st.above_inline_ns, (unsigned long long)st.above_noinline_ns);
}

static int run(struct ctx *c, const struct rt_profile_entry *e, const struct opts *o, struct stats *s)
{
	struct rt_sendq q;
	rt_inline_ctl *ctl = NULL;
	int rc = -1;

	if (rt_sendq_init(&q, e->sq_depth, e->signal_interval)) {
		fprintf(stderr, "rt_send_example: bad queue policy sq_depth %u signal_interval %u\n", e->sq_depth,
			e->signal_interval);
		return -1;
	}
	if ((errno = make_ctl(c, e, o, &ctl))) {
		fprintf(stderr, "rt_send_example: cannot create the inline controller: %s\n", strerror(errno));
		goto out;
	}
	for (unsigned long seq = 0; seq < o->count; seq++) {
		uint32_t len = o->sizes[seq % (unsigned long)o->n_sizes];
		/* one buffer slot per send queue entry: when WR seq is posted, WR seq - sq_depth has been retired (its
		 * signaled successor completed), so its slot is free to rewrite */
		char *buf = c->sbuf + (size_t)(seq % e->sq_depth) * c->max_size;
		struct ibv_sge sge = { (uintptr_t)buf, len, c->smr->lkey };
		struct ibv_send_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
		bool last = seq + 1 == o->count;
		uint64_t t0 = now_ns();
		unsigned flags = 0;
		int prc;

		/* the receiver must have a buffer posted for this message */
		while (seq - s->received >= RQ_DEPTH) {
			if (drain_recv(c, o, s) < 0)
				goto out;
			if (now_ns() - t0 > SPIN_LIMIT_NS) {
				fprintf(stderr, "rt_send_example: receiver stalled\n");
				goto out;
			}
		}
		/* backpressure: never post into a full send queue */
		while (rt_sendq_must_poll(&q))
			if (poll_send(c, &q, s, o, true) < 0)
				goto out;
		for (uint32_t i = 0; i < len; i++)
			buf[i] = payload(seq, i);
		if (ctl) {
			flags = rt_inline_ctl_decide(ctl, len);
			/* a sample is timed alone: the queue drained first, so its completion is its own */
			if ((flags & RT_INLINE_CTL_SAMPLE) && drain_send(c, &q, s, o))
				goto out;
		} else if (rt_should_inline(e, len)) {
			flags = RT_INLINE_CTL_INLINE;
		}
		if ((flags & RT_INLINE_CTL_INLINE) && len <= c->inline_cap) {
			wr.send_flags |= IBV_SEND_INLINE;
			s->inlined++;
		}
		/* signal when the policy says so, a sample, and the last WR so the drain below knows when all are done */
		if (rt_sendq_should_signal(&q) || last || (flags & RT_INLINE_CTL_SAMPLE)) {
			wr.send_flags |= IBV_SEND_SIGNALED;
			s->signaled++;
		}
		t0 = now_ns();
		prc = ibv_post_send(c->sqp, &wr, &bad);
		if (prc == ENOMEM) {
			s->enomem++;
			fprintf(stderr, "rt_send_example: ibv_post_send: send queue full (ENOMEM) at WR %lu\n", seq);
			goto out;
		}
		if (prc) {
			fprintf(stderr, "rt_send_example: ibv_post_send: %s\n", strerror(prc));
			goto out;
		}
		if (rt_sendq_posted(&q, wr.send_flags & IBV_SEND_SIGNALED)) {
			fprintf(stderr, "rt_send_example: send queue bookkeeping refused WR %lu\n", seq);
			goto out;
		}
		s->posted++;
		if (rt_sendq_outstanding(&q) > s->max_outstanding)
			s->max_outstanding = rt_sendq_outstanding(&q);
		if (flags & RT_INLINE_CTL_SAMPLE) {
			uint32_t before = rt_inline_ctl_threshold(ctl);

			if (drain_send(c, &q, s, o))
				goto out;
			s->sampled++;
			rt_inline_ctl_sample(ctl, len, wr.send_flags & IBV_SEND_INLINE, now_ns() - t0);
			if (rt_inline_ctl_threshold(ctl) != before)
				printf("inline move at message %lu: %u -> %u B\n", seq + 1, before,
				       rt_inline_ctl_threshold(ctl));
		}
	}
	while (rt_sendq_signaled_pending(&q))
		if (poll_send(c, &q, s, o, true) < 0)
			goto out;
	{
		uint64_t t0 = now_ns();

		while (s->received < o->count) {
			if (drain_recv(c, o, s) < 0)
				goto out;
			if (now_ns() - t0 > SPIN_LIMIT_NS) {
				fprintf(stderr, "rt_send_example: %lu of %lu messages arrived\n", s->received,
					o->count);
				goto out;
			}
		}
	}
	rc = 0;
out:
	print_ctl(ctl);
	rt_inline_ctl_free(ctl);
	rt_sendq_fini(&q);
	return rc;
}

static void teardown(struct ctx *c)
{
	if (c->sqp)
		ibv_destroy_qp(c->sqp);
	if (c->rqp)
		ibv_destroy_qp(c->rqp);
	if (c->scq)
		ibv_destroy_cq(c->scq);
	if (c->rcq)
		ibv_destroy_cq(c->rcq);
	if (c->smr)
		ibv_dereg_mr(c->smr);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->vctx)
		ibv_close_device(c->vctx);
	free(c->sbuf);
	free(c->rbuf);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "profile", required_argument, NULL, 'p' },
		{ "adaptive", no_argument, NULL, 'a' },
		{ "start-threshold", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .port = 1, .gid_index = -2, .count = 20000, .start_threshold = -1 };
	struct rt_profile *prof = NULL;
	const struct rt_profile_entry *e;
	struct ibv_device **list = NULL;
	struct ctx c;
	struct stats s;
	struct rt_error err;
	struct ibv_port_attr pa;
	const char *what = "";
	int ch, n_dev = 0, rc = 1;

	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	parse_sizes("8,32,64,100,128,256,512,1024,4096", &o);
	while ((ch = getopt_long(argc, argv, "d:i:g:n:s:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'd': o.device = optarg; break;
		case 'i':
			if (parse_int(optarg, 1, 255, &o.port)) {
				fprintf(stderr, "rt_send_example: bad port '%s' (1..255)\n", optarg);
				return 2;
			}
			break;
		case 'g':
			if (parse_int(optarg, 0, 255, &o.gid_index)) {
				fprintf(stderr, "rt_send_example: bad gid index '%s' (0..255)\n", optarg);
				return 2;
			}
			break;
		case 'n': o.count = strtoul(optarg, NULL, 10); break;
		case 's':
			if (parse_sizes(optarg, &o)) {
				fprintf(stderr, "rt_send_example: bad sizes '%s' (1..65536, comma-separated)\n",
					optarg);
				return 2;
			}
			break;
		case 'p': o.profile = optarg; break;
		case 'a': o.adaptive = true; break;
		case 't': {
			int v;

			if (parse_int(optarg, 0, 65536, &v)) {
				fprintf(stderr, "rt_send_example: bad start threshold '%s' (0..65536)\n", optarg);
				return 2;
			}
			o.start_threshold = v;
			break;
		}
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (o.count == 0) {
		fprintf(stderr, "rt_send_example: -n must be at least 1\n");
		return 2;
	}
	if ((o.profile ? rt_profile_load(o.profile, &prof, &err) : rt_profile_load_env(&prof, &err))) {
		fprintf(stderr, "rt_send_example: %s\n", err.text);
		return 1;
	}
	list = ibv_get_device_list(&n_dev);
	if (!list || n_dev == 0) {
		fprintf(stderr,
			"rt_send_example: no RDMA device (load rdma_rxe and 'rdma link add rxe0 type rxe netdev "
			"IF' for a software one)\n");
		goto out;
	}
	for (int i = 0; i < n_dev; i++) {
		if (!o.device || strcmp(ibv_get_device_name(list[i]), o.device) == 0) {
			c.vctx = ibv_open_device(list[i]);
			o.device = ibv_get_device_name(list[i]);
			break;
		}
	}
	if (!c.vctx) {
		fprintf(stderr, "rt_send_example: cannot open device '%s'\n", o.device ? o.device : "?");
		goto out;
	}
	e = rt_profile_select(prof, o.device, o.port, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);
	if (!e) {
		fprintf(stderr, "rt_send_example: profile of %s has no RC send entry for %s port %d\n",
			rt_profile_hostname(prof), o.device, o.port);
		goto out;
	}
	printf("profile %s: %s port %d: inline_threshold %u B, max_inline_data %u B, signal every %u, sq_depth %u, "
	       "cq_depth %u (confidence"
	       " %s)\n",
	       rt_profile_hostname(prof), o.device, o.port, rt_profile_inline_threshold(e),
	       rt_profile_max_inline_data(e), rt_profile_signal_interval(e), rt_profile_sq_depth(e),
	       rt_profile_cq_depth(e), rt_profile_confidence_name(rt_profile_confidence(e)));
	if (ibv_query_port(c.vctx, (uint8_t)o.port, &pa)) {
		fprintf(stderr, "rt_send_example: cannot query port %d of %s\n", o.port, o.device);
		goto out;
	}
	c.lid = pa.lid;
	if (o.gid_index == -2)
		o.gid_index = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? pick_gid(c.vctx, o.port, pa.gid_tbl_len) : -1;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET && o.gid_index < 0) {
		fprintf(stderr, "rt_send_example: no IPv4 RoCE GID on %s port %d (is an address set?); use -g\n",
			o.device, o.port);
		goto out;
	}
	if (o.gid_index >= 0 && ibv_query_gid(c.vctx, (uint8_t)o.port, o.gid_index, &c.gid)) {
		fprintf(stderr, "rt_send_example: cannot read gid %d\n", o.gid_index);
		goto out;
	}
	c.max_size = 0;
	for (int i = 0; i < o.n_sizes; i++)
		if (o.sizes[i] > c.max_size)
			c.max_size = o.sizes[i];
	c.sbuf = calloc(e->sq_depth, c.max_size);
	c.rbuf = calloc(RQ_DEPTH, c.max_size);
	what = "memory";
	if (!c.sbuf || !c.rbuf)
		goto fail_res;
	what = "ibv_alloc_pd";
	if (!(c.pd = ibv_alloc_pd(c.vctx)))
		goto fail_res;
	what = "ibv_reg_mr (send buffers; check ulimit -l)";
	if (!(c.smr = ibv_reg_mr(c.pd, c.sbuf, (size_t)e->sq_depth * c.max_size, 0)))
		goto fail_res;
	what = "ibv_reg_mr (receive buffers; check ulimit -l)";
	if (!(c.rmr = ibv_reg_mr(c.pd, c.rbuf, (size_t)RQ_DEPTH * c.max_size, IBV_ACCESS_LOCAL_WRITE)))
		goto fail_res;
	what = "ibv_create_cq (send CQ of cq_depth entries)";
	if (!(c.scq = ibv_create_cq(c.vctx, (int)e->cq_depth, NULL, NULL, 0)))
		goto fail_res;
	what = "ibv_create_cq (receive CQ)";
	if (!(c.rcq = ibv_create_cq(c.vctx, (int)RQ_DEPTH, NULL, NULL, 0)))
		goto fail_res;
	{
		struct ibv_qp_init_attr sa = { .send_cq = c.scq,
					       .recv_cq = c.rcq,
					       .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = e->sq_depth,
							.max_recv_wr = 1,
							.max_send_sge = 1,
							.max_recv_sge = 1,
							.max_inline_data = e->max_inline_data } };
		struct ibv_qp_init_attr ra = {
			.send_cq = c.rcq,
			.recv_cq = c.rcq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1 }
		};

		c.sqp = ibv_create_qp(c.pd, &sa);
		if (!c.sqp) {
			fprintf(stderr, "rt_send_example: ibv_create_qp (max_send_wr %u, max_inline_data %u): %s\n",
				e->sq_depth, e->max_inline_data, strerror(errno));
			goto out;
		}
		c.inline_cap = sa.cap.max_inline_data;
		if (sa.cap.max_send_wr != e->sq_depth)
			printf("note: provider rounded max_send_wr %u up to %u; the helper keeps to the profile's %u\n",
			       e->sq_depth, sa.cap.max_send_wr, e->sq_depth);
		what = "ibv_create_qp (receiver)";
		c.rqp = ibv_create_qp(c.pd, &ra);
		if (!c.rqp)
			goto fail_res;
	}
	if (to_rts(&c, c.sqp, c.rqp->qp_num, &o) || to_rts(&c, c.rqp, c.sqp->qp_num, &o)) {
		fprintf(stderr, "rt_send_example: cannot connect the loopback QPs (gid index %d)\n", o.gid_index);
		goto out;
	}
	what = "ibv_post_recv"; /* receives can be posted once the QP left RESET */
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		if ((errno = post_recv(&c, i)))
			goto fail_res;
	if (run(&c, e, &o, &s) == 0 && s.bad_recv == 0 && s.enomem == 0 && s.received == o.count)
		rc = 0;
	printf("sent %lu messages on %s port %d: %lu inline (<= %u B), %lu signaled (every %u + last), %lu send "
	       "completions, max outstanding %u of sq_depth %u, %lu ENOMEM; received %lu, %lu"
	       " bad\n",
	       s.posted, o.device, o.port, s.inlined, e->inline_threshold, s.signaled, e->signal_interval, s.send_cqes,
	       s.max_outstanding, e->sq_depth, s.enomem, s.received, s.bad_recv);
	printf("%s\n", rc == 0 ? "OK" : "FAILED");
	goto out;
fail_res:
	fprintf(stderr, "rt_send_example: %s failed on %s: %s\n", what, o.device, strerror(errno));
out:
	teardown(&c);
	if (list)
		ibv_free_device_list(list);
	rt_profile_free(prof);
	return rc;
}
