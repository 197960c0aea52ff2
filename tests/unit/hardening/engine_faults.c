// SPDX-License-Identifier: MIT
/*
 * The calibration engine's verbs failure paths on the host, without a device. This program defines the libibverbs
 * functions the engine's link code calls to create and connect its endpoint (ibv_alloc_pd, ibv_create_comp_channel,
 * ibv_create_cq, ibv_reg_mr, ibv_create_qp, ibv_modify_qp, ibv_create_ah and their destroy calls): a definition in the
 * executable wins over libibverbs' for the statically linked engine. They hand out objects of a hand-built context
 * whose ops.post_send / post_recv / poll_cq are plain functions here (as tests/unit/probe/fake_verbs.h does for the
 * probe), and count the objects alive.
 *   set-up sweep   the whole set-up (rt_ep_create with an RC and a UD QP, rt_ep_rc_connect, rt_ep_ud_connect,
 *                  rt_ep_fill_recv) with its k-th verbs call failing, for every k, with ENOMEM (a device out of
 *                  resources), EINVAL (a refused attribute) and with NULL but errno left 0: the provider's errno
 *                  (some error for 0) comes back, with one line naming the failing object and the reason, and after
 *                  rt_ep_destroy no object is alive.
 *   post_send      EINVAL on a control send (rt_client_phase), EINVAL in the middle of a throughput run and a send
 *                  queue that stays full (ENOMEM forever: the run gives up after the client's timeout, counting the
 *                  ENOMEMs), a failing poll: the errno and one line naming ibv_post_send / the cq.
 * Memory is checked by valgrind (plain build) or LeakSanitizer (sanitizer builds). Exit 0 when every check holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_clock.h"
#include "rt_link.h"

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

/* ---- the fake provider ------------------------------------------------------------------------------------------ */

static struct ibv_context fctx;
static struct ibv_device fdev;
static int live;	   /* objects created and not yet destroyed */
static int calls;	   /* verbs calls that may fail, since the last reset */
static int fail_at;	   /* the call (1-based) that fails; 0 = none */
static int fail_errno;	   /* errno it leaves (0: NULL/-1 with errno untouched, as a sloppy provider might) */
static const char *failed; /* which call failed */

enum post_mode { POST_OK, POST_EINVAL_AT, POST_ENOMEM_ALWAYS };
static enum post_mode post_mode;
static unsigned post_ok_left; /* POST_EINVAL_AT: posts that still succeed */
static int poll_fails;

struct fcq {
	struct ibv_cq cq;
	unsigned pending; /* completions to hand out */
	uint64_t wr_id[4096];
};

/* True when this call must fail: sets errno and records the call's name. */
static int must_fail(const char *what)
{
	if (++calls != fail_at)
		return 0;
	failed = what;
	errno = fail_errno;
	return 1;
}

static void *obj(size_t size)
{
	void *p = calloc(1, size);

	if (p)
		live++;
	return p;
}

static void unobj(void *p)
{
	if (p)
		live--;
	free(p);
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd;

	if (must_fail("ibv_alloc_pd"))
		return NULL;
	pd = obj(sizeof(*pd));
	if (pd)
		pd->context = ctx;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	unobj(pd);
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch;

	if (must_fail("ibv_create_comp_channel"))
		return NULL;
	ch = obj(sizeof(*ch));
	if (ch) {
		ch->context = ctx;
		ch->fd = -1;
	}
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	unobj(ch);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch, int vec)
{
	struct fcq *c;

	(void)vec;
	if (must_fail("ibv_create_cq"))
		return NULL;
	c = obj(sizeof(*c));
	if (c) {
		c->cq.context = ctx;
		c->cq.cqe = cqe;
		c->cq.cq_context = cq_context;
		c->cq.channel = ch;
	}
	return c ? &c->cq : NULL;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	unobj(cq);
	return 0;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr;

	(void)access;
	if (must_fail("ibv_reg_mr"))
		return NULL;
	mr = obj(sizeof(*mr));
	if (mr) {
		mr->context = pd->context;
		mr->pd = pd;
		mr->addr = addr;
		mr->length = length;
		mr->lkey = mr->rkey = 0x1234;
	}
	return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	unobj(mr);
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	static uint32_t qpn = 100;
	struct ibv_qp *qp;

	if (must_fail("ibv_create_qp"))
		return NULL;
	qp = obj(sizeof(*qp));
	if (qp) {
		qp->context = pd->context;
		qp->pd = pd;
		qp->send_cq = a->send_cq;
		qp->recv_cq = a->recv_cq;
		qp->qp_type = a->qp_type;
		qp->qp_num = qpn++;
	}
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	unobj(qp);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (must_fail("ibv_modify_qp"))
		return errno ? errno : EIO; /* verbs return the errno itself */
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah;

	(void)attr;
	if (must_fail("ibv_create_ah"))
		return NULL;
	ah = obj(sizeof(*ah));
	if (ah) {
		ah->context = pd->context;
		ah->pd = pd;
	}
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	unobj(ah);
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	if (must_fail("ibv_post_recv")) {
		*bad = wr;
		return errno ? errno : EIO;
	}
	return 0;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fcq *c = (struct fcq *)qp->send_cq;

	for (; wr; wr = wr->next) {
		if (post_mode == POST_ENOMEM_ALWAYS || (post_mode == POST_EINVAL_AT && post_ok_left == 0)) {
			*bad = wr;
			return post_mode == POST_ENOMEM_ALWAYS ? ENOMEM : EINVAL;
		}
		if (post_mode == POST_EINVAL_AT)
			post_ok_left--;
		if ((wr->send_flags & IBV_SEND_SIGNALED) && c->pending < 4096)
			c->wr_id[c->pending++] = wr->wr_id;
	}
	return 0;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fcq *c = (struct fcq *)cq;
	int k = 0;

	if (poll_fails)
		return -1;
	while (k < n && c->pending) {
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].wr_id = c->wr_id[--c->pending];
		wc[k].status = IBV_WC_SUCCESS;
		wc[k].opcode = IBV_WC_SEND;
		k++;
	}
	return k;
}

static void fake_reset(void)
{
	memset(&fctx, 0, sizeof(fctx));
	snprintf(fdev.name, sizeof(fdev.name), "fake0");
	fctx.device = &fdev;
	fctx.ops.post_send = f_post_send;
	fctx.ops.post_recv = f_post_recv;
	fctx.ops.poll_cq = f_poll_cq;
	calls = 0;
	fail_at = 0;
	failed = NULL;
	post_mode = POST_OK;
	poll_fails = 0;
}

/* ---- checks ------------------------------------------------------------------------------------------------------ */

static const struct rt_ep_cfg cfg = { .max_msg = 4096,
				      .max_inline = 64,
				      .ud_max_inline = 64,
				      .sq_depth = 64,
				      .rq_depth = 64,
				      .ud = true,
				      .rc_qp = true };

/* The whole set-up of one loopback endpoint (its QPs connected to themselves). */
static int setup(struct rt_ep *ep, struct rt_error *err)
{
	struct rt_addr addr = { .port = 1, .gid_index = 0, .mtu = IBV_MTU_1024 };
	int rc;

	rc = rt_ep_create(ep, &fctx, &cfg, err);
	if (rc)
		return rc;
	if ((rc = rt_ep_rc_connect(ep, &addr, ep->qp->qp_num, err)) ||
	    (rc = rt_ep_ud_connect(ep, &addr, ep->ud_qp->qp_num, err)) || (rc = rt_ep_fill_recv(ep, false, err)) ||
	    (rc = rt_ep_fill_recv(ep, true, err)))
		return rc;
	return 0;
}

/* What the error line must name for a failure of the verbs call `call`. */
static const char *names(const char *call)
{
	static const struct {
		const char *call, *words;
	} map[] = {
		{ "ibv_alloc_pd", "protection domain" },
		{ "ibv_create_comp_channel", "completion channel" },
		{ "ibv_create_cq", " cq" },
		{ "ibv_reg_mr", "memory region" },
		{ "ibv_create_qp", " qp" },
		{ "ibv_modify_qp", " qp to " },
		{ "ibv_create_ah", "address handle" },
		{ "ibv_post_recv", "receives" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].call, call))
			return map[i].words;
	return "?";
}

static void sweep(int err_no)
{
	struct rt_error err;
	struct rt_ep ep;
	int rc, total, k;

	fake_reset();
	memset(&err, 0, sizeof(err));
	rc = setup(&ep, &err);
	CHECK(rc == 0, "set-up without failures: %s", err.text);
	total = calls;
	rt_ep_destroy(&ep);
	CHECK(live == 0, "%d objects alive after a successful set-up and rt_ep_destroy", live);
	for (k = 1; k <= total; k++) {
		int want = err_no;

		fake_reset();
		fail_at = k;
		fail_errno = err_no;
		memset(&err, 0, sizeof(err));
		rc = setup(&ep, &err);
		CHECK(failed != NULL, "call %d of %d did not fail", k, total);
		if (!failed)
			continue;
		/* NULL with errno 0: any errno will do, but an error it must be (int-returning calls give EIO here) */
		if (!want)
			want = rc ? rc : EIO;
		CHECK(rc == want, "%s failing with errno %d (call %d): rc %d, want %d (%s)", failed, err_no, k, rc,
		      want, err.text);
		CHECK(err.code == rc, "%s failing: err.code %d, rc %d", failed, err.code, rc);
		CHECK(strstr(err.text, names(failed)) != NULL, "%s failing: the error does not name it: '%s'", failed,
		      err.text);
		CHECK(strstr(err.text, strerror(want)) != NULL, "%s failing: the error does not give the reason: '%s'",
		      failed, err.text);
		CHECK(strchr(err.text, '\n') == NULL && err.text[0] && err.text[0] != ' ',
		      "%s failing: not one line: '%s'", failed, err.text);
		rt_ep_destroy(&ep); /* what calibrate does after a failed connect; after a failed create: a no-op */
		CHECK(live == 0, "%s failing (call %d): %d objects left alive", failed, k, live);
		if (err_no == ENOMEM)
			printf("ok   %-24s failing (call %2d): %s\n", failed, k, err.text);
	}
	printf("%s: %d failure points, errno %d\n", fails ? "FAILED" : "ok", total, err_no);
}

static void post_failures(void)
{
	struct rt_client c = { .timeout_ns = 2e8 };
	struct rt_rate_rep rep;
	struct rt_error err;
	struct rt_ep ep;
	int rc;

	fake_reset();
	if (setup(&ep, &err)) {
		CHECK(0, "set-up: %s", err.text);
		return;
	}
	c.ep = &ep;

	/* a control send refused by the provider */
	post_mode = POST_EINVAL_AT;
	post_ok_left = 0;
	rc = rt_client_phase(&c, RT_MODE_SINK, false, false, 8, &err);
	CHECK(rc == EINVAL && strstr(err.text, "ibv_post_send") && strstr(err.text, strerror(EINVAL)),
	      "phase with post_send EINVAL: rc %d '%s'", rc, err.text);
	printf("ok   post_send EINVAL on a control send: %s\n", err.text);

	/* refused in the middle of a throughput run */
	post_ok_left = 1000;
	rc = rt_client_rate(&c, RT_OP_SEND, 64, true, 16, 5e9, &rep, &err);
	CHECK(rc == EINVAL && strstr(err.text, "ibv_post_send"), "rate with post_send EINVAL after 1000: rc %d '%s'",
	      rc, err.text);
	CHECK(rep.msgs == 1000, "rate: %llu messages counted before the failure, want 1000",
	      (unsigned long long)rep.msgs);
	printf("ok   post_send EINVAL after 1000 sends in a rate run: %s\n", err.text);

	/* ENOMEM with nothing in flight cannot be a full queue (nothing would ever free it; mlx5 answers ENOMEM to an
	 * inline size its WQE cannot hold): named at once, not given up after the client's timeout as "peer did not
	 * answer" */
	post_mode = POST_ENOMEM_ALWAYS;
	((struct fcq *)ep.scq)->pending = 0;
	ep.sq_out = 0;
	rc = rt_client_rate(&c, RT_OP_SEND, 64, true, 16, 5e9, &rep, &err);
	CHECK(rc == ENOMEM && rep.msgs == 0 && strstr(err.text, "not a full send queue") &&
		      !strstr(err.text, "did not answer"),
	      "rate with ENOMEM and an empty SQ: rc %d, %llu ENOMEM '%s'", rc, (unsigned long long)rep.enomem,
	      err.text);
	printf("ok   post_send ENOMEM with an empty send queue: %s\n", err.text);

	/* the send CQ cannot be polled */
	post_mode = POST_OK;
	poll_fails = 1;
	rc = rt_client_rate(&c, RT_OP_SEND, 64, true, 16, 5e9, &rep, &err);
	CHECK(rc == EIO && strstr(err.text, "cq"), "rate with poll_cq failing: rc %d '%s'", rc, err.text);
	printf("ok   poll_cq failing: %s\n", err.text);

	rt_ep_destroy(&ep);
	CHECK(live == 0, "%d objects alive after the post_send failures", live);
}

int main(void)
{
	rt_clock_mono_ns(); /* the engine's monotonic clock, used by the timeouts */
	sweep(ENOMEM);
	sweep(EINVAL);
	sweep(0);
	post_failures();
	printf("%s\n", fails ? "FAILED" : "all engine verbs-failure checks passed");
	return fails ? 1 : 0;
}
