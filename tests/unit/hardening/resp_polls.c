// SPDX-License-Identifier: MIT
/*
 * The responder spins only on what its current mode waits for (issue 16 item 13). Run with fakedev.so LD_PRELOADed:
 * two endpoints of fake0 (RC and UD QPs) connected in loopback, the responder stepped by hand in each mode with no
 * traffic, and the device's per-CQ poll counters (rt_fakedev_cq_polls) read after a fixed number of steps: SINK polls
 * both receive CQs, PP_SEND only the receive CQ of its QP type, PP_WRITE none on the hot path; the RC receive CQ
 * (control words) is polled every RT_RESP_CTL_EVERY steps where it is not hot, the send CQs never while nothing is
 * posted. Then each mode still answers: a SEND ping-pong on RC and on UD, a WRITE ping-pong, and an END sent in
 * PP_WRITE mode is seen within RT_RESP_CTL_EVERY steps. Exit 0 when every check holds, 77 without fakedev.so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rt_link.h"

#define STEPS 1000u

static int fails;

#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			putchar('\n');                              \
			fails++;                                    \
		}                                                   \
	} while (0)

static unsigned long (*cq_polls)(struct ibv_cq *);

struct polls {
	unsigned long scq, rcq, ud_scq, ud_rcq;
};

static struct polls snap(const struct rt_ep *ep)
{
	return (struct polls){ cq_polls(ep->scq), cq_polls(ep->rcq), cq_polls(ep->ud_scq), cq_polls(ep->ud_rcq) };
}

/* Steps the idle responder STEPS times in mode and returns the polls each CQ got meanwhile. */
static struct polls idle_polls(struct rt_resp *r, enum rt_resp_mode mode, bool ud)
{
	struct polls a, b;
	struct rt_error err;

	r->mode = mode;
	r->ud = ud;
	r->size = 8;
	r->seq = 0;
	a = snap(r->ep);
	for (unsigned i = 0; i < STEPS; i++)
		CHECK(rt_resp_step(r, &err) == 0, "step: %s", err.text);
	b = snap(r->ep);
	return (struct polls){ b.scq - a.scq, b.rcq - a.rcq, b.ud_scq - a.ud_scq, b.ud_rcq - a.ud_rcq };
}

/* Steps the responder until the client's receive CQ (ud or rc) has one completion; true when it came within 10000. */
static bool answered(struct rt_resp *r, struct rt_ep *cli, bool ud)
{
	struct rt_error err;
	struct ibv_wc wc;

	for (int i = 0; i < 10000; i++) {
		if (rt_resp_step(r, &err))
			return false;
		if (ibv_poll_cq(ud ? cli->ud_rcq : cli->rcq, 1, &wc) == 1) {
			(*(ud ? &cli->ud_rq_posted : &cli->rq_posted))--;
			return wc.status == IBV_WC_SUCCESS;
		}
	}
	return false;
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct rt_ep c, s;
	struct rt_ep_cfg cfg = { .max_msg = 256,
				 .max_inline = 64,
				 .ud_max_inline = 64,
				 .sq_depth = 64,
				 .rq_depth = 64,
				 .ud = true,
				 .rc_qp = true };
	struct rt_addr addr = { .port = 1, .gid_index = -1, .lid = 1, .mtu = IBV_MTU_1024 };
	struct rt_error err;
	struct rt_resp r;
	struct polls p;
	int n = 0;
	unsigned long ctl_max = STEPS / RT_RESP_CTL_EVERY + 1;

	cq_polls = (unsigned long (*)(struct ibv_cq *))dlsym(RTLD_DEFAULT, "rt_fakedev_cq_polls");
	if (!cq_polls) {
		printf("skip: fakedev.so is not preloaded\n");
		return 77;
	}
	list = ibv_get_device_list(&n);
	if (!list || n < 1 || !(ctx = ibv_open_device(list[0]))) {
		printf("FAIL: no fake device\n");
		return 1;
	}
	if (rt_ep_create(&c, ctx, &cfg, &err) || rt_ep_create(&s, ctx, &cfg, &err) ||
	    rt_ep_rc_connect(&c, &addr, s.qp->qp_num, &err) || rt_ep_rc_connect(&s, &addr, c.qp->qp_num, &err) ||
	    rt_ep_ud_connect(&c, &addr, s.ud_qp->qp_num, &err) || rt_ep_ud_connect(&s, &addr, c.ud_qp->qp_num, &err) ||
	    rt_ep_fill_recv(&c, false, &err) || rt_ep_fill_recv(&s, false, &err) || rt_ep_fill_recv(&c, true, &err) ||
	    rt_ep_fill_recv(&s, true, &err)) {
		printf("FAIL: set-up: %s\n", err.text);
		return 1;
	}
	c.raddr = rt_ep_data_addr(&s);
	c.rkey = s.mr->rkey;
	s.raddr = rt_ep_data_addr(&c);
	s.rkey = c.mr->rkey;
	memset(&r, 0, sizeof(r));
	r.ep = &s;

	p = idle_polls(&r, RT_MODE_SINK, false);
	printf("sink:        rc recv %lu, ud recv %lu, rc send %lu, ud send %lu\n", p.rcq, p.ud_rcq, p.scq, p.ud_scq);
	CHECK(p.rcq == STEPS && p.ud_rcq == STEPS, "sink waits on both receive CQs");
	CHECK(p.scq == 0 && p.ud_scq == 0, "sink polls no send CQ while nothing is posted");

	p = idle_polls(&r, RT_MODE_PP_SEND, false);
	printf("pp send rc:  rc recv %lu, ud recv %lu, rc send %lu, ud send %lu\n", p.rcq, p.ud_rcq, p.scq, p.ud_scq);
	CHECK(p.rcq == STEPS, "rc send ping-pong waits on the rc receive CQ");
	CHECK(p.ud_rcq == 0 && p.scq == 0 && p.ud_scq == 0, "rc send ping-pong polls nothing else");

	p = idle_polls(&r, RT_MODE_PP_SEND, true);
	printf("pp send ud:  rc recv %lu, ud recv %lu, rc send %lu, ud send %lu\n", p.rcq, p.ud_rcq, p.scq, p.ud_scq);
	CHECK(p.ud_rcq == STEPS, "ud send ping-pong waits on the ud receive CQ");
	CHECK(p.rcq <= ctl_max && p.rcq >= ctl_max - 1, "ud ping-pong: control words every %u steps, not %lu polls",
	      RT_RESP_CTL_EVERY, p.rcq);
	CHECK(p.scq == 0 && p.ud_scq == 0, "ud send ping-pong polls no send CQ");

	p = idle_polls(&r, RT_MODE_PP_WRITE, false);
	printf("pp write:    rc recv %lu, ud recv %lu, rc send %lu, ud send %lu\n", p.rcq, p.ud_rcq, p.scq, p.ud_scq);
	CHECK(p.rcq <= ctl_max && p.rcq >= ctl_max - 1, "write ping-pong: control words every %u steps, not %lu polls",
	      RT_RESP_CTL_EVERY, p.rcq);
	CHECK(p.ud_rcq == 0 && p.scq == 0 && p.ud_scq == 0, "write ping-pong polls no CQ on its hot path");

	/* each mode still answers */
	r.mode = RT_MODE_PP_SEND;
	r.ud = false;
	CHECK(rt_ep_post(&c, false, RT_OP_SEND, 8, true, false, 0, 0) == 0, "post rc send");
	CHECK(answered(&r, &c, false), "rc send ping-pong answered");
	r.ud = true;
	CHECK(rt_ep_post(&c, true, RT_OP_SEND, 8, true, false, 0, 0) == 0, "post ud send");
	CHECK(answered(&r, &c, true), "ud send ping-pong answered");
	r.mode = RT_MODE_PP_WRITE;
	r.ud = false;
	r.seq = 0;
	rt_ep_send_area(&c)[r.size - 1] = 1;
	CHECK(rt_ep_post(&c, false, RT_OP_WRITE, r.size, true, false, 0, 0) == 0, "post write");
	{
		volatile uint8_t *flag = rt_ep_data(&c) + r.size - 1;
		int i;

		for (i = 0; i < 10000 && *flag != 1; i++)
			CHECK(rt_resp_step(&r, &err) == 0, "step: %s", err.text);
		CHECK(*flag == 1, "write ping-pong answered");
	}
	/* the END of a write phase is seen within RT_RESP_CTL_EVERY steps */
	CHECK(rt_ep_post(&c, false, RT_OP_SEND, 0, false, false, 0, rt_ctl_pack(RT_CMD_END, 0, 0, 0, 0)) == 0,
	      "post end");
	for (unsigned i = 0; i <= RT_RESP_CTL_EVERY && !r.ended; i++)
		CHECK(rt_resp_step(&r, &err) == 0, "step: %s", err.text);
	CHECK(r.ended, "END seen within %u steps of a write phase", RT_RESP_CTL_EVERY);

	rt_ep_destroy(&c);
	rt_ep_destroy(&s);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (fails)
		printf("%d check(s) failed\n", fails);
	else
		printf("ok: the responder polls only what its mode waits for\n");
	return fails ? 1 : 0;
}
