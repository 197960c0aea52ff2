// SPDX-License-Identifier: MIT
/*
 * A software RDMA device for host tests of `rtune calibrate`, LD_PRELOADed into rtune in place of libibverbs' device
 * functions: one device "fake0" with one ACTIVE InfiniBand port (LID 1, no GRH needed), whose RC and UD QPs connect in
 * loopback with a data path in memory: SEND, SEND with immediate and RDMA WRITE copy the payload, RDMA READ copies
 * remote memory into the first SGE, the 8-byte atomics (fetch-and-add, compare-and-swap) act on remote memory and return
 * the old value in the first SGE (READ and atomics on RC only), receives complete in order, a send finds a posted receive or waits (in order) until one is posted, send queue slots are freed when the
 * signaled completion that retires them is polled (so a full send queue gives ENOMEM), QPs must be in RTS to post,
 * and max_inline_data above 256 is refused (EINVAL) as a provider would. Thread-safe with one lock (the engine's
 * responder thread polls while the client posts). CQ moderation is not supported (the engine then skips it).
 *
 * Fault injection: RT_FAKEDEV_FAIL="VERB:N[:ERRNO]" makes the N-th call of VERB (ibv_open_device, ibv_query_device,
 * ibv_query_port, ibv_alloc_pd, ibv_create_comp_channel, ibv_create_cq, ibv_reg_mr, ibv_create_qp, ibv_modify_qp,
 * ibv_post_recv, ibv_post_send, ibv_poll_cq) fail with ERRNO (default ENOMEM); RT_FAKEDEV_FAIL_FROM=1 makes every later
 * call of that verb fail too (a resource that stays exhausted). RT_FAKEDEV_REPORT=FILE receives at exit one
 * "VERB CALLS" line per verb and "live N", the device objects (contexts, PDs, channels, CQs, MRs, QPs, AHs) never
 * destroyed: 0 unless the program leaked one.
 *
 * Provider behaviours for device discovery: RT_FAKEDEV_DEVICES=N lists N devices fake0..fake<N-1> (at most 8; with
 * RT_FAKEDEV_FAIL on ibv_open_device or ibv_query_device one of them fails). RT_FAKEDEV_ROCE=1 makes the port a RoCE
 * port (Ethernet link layer) with a 32-slot GID table of 28 valid entries (holes at 2, 3, 30, 31): RoCE v1/v2
 * link-local, IPv6 global and IPv4-mapped GIDs on netdev ifindex 1, the first RoCE v2 IPv4-mapped one at index 21.
 * RT_FAKEDEV_GID_API=ex makes ibv_query_gid_table fail with EOPNOTSUPP (as a kernel without the ioctl does) and
 * =legacy ibv_query_gid_ex too, so that only ibv_query_gid answers (types then come from sysfs).
 * RT_FAKEDEV_INLINE_REFUSAL=ERRNO makes a too large max_inline_data fail with that errno instead of EINVAL (95: nbl's
 * EOPNOTSUPP; 0: no errno at all, as bnxt_re's variable-WQE check). RT_FAKEDEV_MAX_INLINE=N sets the largest
 * max_inline_data accepted (default 256; irdma reports about 100, mlx5 RC several hundred bytes).
 *
 * Provider behaviours for calibration (issue 16): RT_FAKEDEV_PORT_DOWN=LIST (device indices, comma-separated) makes
 * those devices' port DOWN (a management port listed first). RT_FAKEDEV_IWARP=1 makes the devices iWARP RNICs
 * (transport iWARP, Ethernet port): an RC QP cannot be moved to RTR by ibv_modify_qp (EINVAL, as iw_cxgb4 and irdma in
 * iWARP mode, whose RC QPs connect only through the iWARP CM) and UD QPs do not exist (EOPNOTSUPP). RT_FAKEDEV_NO_RC=1
 * refuses RC QPs with EOPNOTSUPP (EFA: UD and SRD only). RT_FAKEDEV_NO_INLINE_WRITE=1 accepts max_inline_data at
 * creation but refuses IBV_SEND_INLINE on RDMA WRITE at ibv_post_send (EINVAL). RT_FAKEDEV_INLINE_ENOMEM_ABOVE=N makes
 * an inline post of more than N bytes fail with ENOMEM whatever the queue's fill (mlx5 returns ENOMEM for an inline
 * size above what the QP's WQE can hold). RT_FAKEDEV_LIST_ENOMEM_FIRST=1 takes a list of more than 4 WRs posted on an
 * empty send queue only up to its 4th WR when those 4 are unsignaled, and fails it there with ENOMEM, *bad naming the
 * 5th (a send queue that filled mid-list; the report's "list_partial N" counts them). RT_FAKEDEV_RNR_EVERY=K counts every K-th RC SEND as RNR-NAKed once (the
 * responder fell behind) in the port's hw counter rnr_nak_retry_err, which RT_FAKEDEV_HW_COUNTERS=DIR (the port's
 * hw_counters directory of a fake sysfs tree) receives as a file; RT_FAKEDEV_RNR_EXC=1 instead completes the K-th
 * SEND, when signaled, with IBV_WC_RNR_RETRY_EXC_ERR (an RC QP whose rnr_retry is finite).
 *
 * Path attributes: RT_FAKEDEV_PKEYS=N gives the port a P_Key table of N entries (default 1; a pkey_index past it makes
 * ibv_modify_qp fail with EINVAL); RT_FAKEDEV_QP_LOG=FILE appends one line per ibv_modify_qp with a state ("modify_qp
 * qp QPN rc|ud state S pkey_index P sl L global G tclass T", -1 where the mask leaves the attribute out) and per
 * ibv_create_ah ("create_ah sl L global G tclass T"). rt_fakedev_cq_polls(cq) (dlsym) counts ibv_poll_cq calls per CQ.
 * The report also has "post_list_max N" (most WRs in one ibv_post_send), "post_list_calls N" (calls with more than
 * one) and "large_wrs N" (WRs of 4096 bytes or more), and per QP that took at least 64 data WRs (SEND or WRITE with a
 * payload; the engine's control words have none) one line "qp_wrs QPN WRS THREADS CQ" (THREADS: distinct threads that
 * posted them, CQ: the send CQ's number in creation order), then "send_threads N" (distinct threads that posted data
 * WRs) and "qps_per_send_cq_max N" (the most such QPs sharing one send CQ).
 *
 * AWS EFA (RT_FAKEDEV_EFA=1): vendor id 0x1d0f (Amazon), part 0xefa1, node type and transport unspecified, a port
 * with link layer unspecified, no LID and one GID (address handles without a GRH are refused, EINVAL, as EFA names
 * peers by GID), no RC QPs (EOPNOTSUPP), UD QPs, and EFA's direct verbs: efadv_query_device (inline_buf_size 32,
 * max_sq_wr/max_rq_wr 4096, 2/1 SGEs, RDMA READ and RNR retry caps, max_rdma_size 1 GiB; EOPNOTSUPP on a device that
 * is not EFA, as libefa answers) and efadv_create_qp_ex with EFADV_QP_DRIVER_TYPE_SRD (an IBV_QPT_DRIVER QP: SEND only,
 * addressed by AH and QP number as UD, receives without a GRH; any other driver type EINVAL). max_inline_data above 32
 * is refused on every QP type (RT_FAKEDEV_MAX_INLINE overrides). The report adds "srd_qps N" (SRD QPs created) and
 * "srd_sends N" (SENDs posted on them). rxe has no SRD: these tests are the proof the SRD path works end to end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#define FK_MAX_INLINE 256u
#define FK_MAX_WR 4096
#define FK_MAX_QPS 64
#define FK_MAX_DEVS 8
#define FK_GID_SLOTS 32

enum fk_verb {
	V_OPEN,
	V_QUERY_DEVICE,
	V_QUERY_PORT,
	V_ALLOC_PD,
	V_CHANNEL,
	V_CREATE_CQ,
	V_REG_MR,
	V_CREATE_QP,
	V_MODIFY_QP,
	V_POST_RECV,
	V_POST_SEND,
	V_POLL_CQ,
	V__COUNT
};
static const char *const fk_names[V__COUNT] = {
	"ibv_open_device",	   "ibv_query_device", "ibv_query_port", "ibv_alloc_pd",
	"ibv_create_comp_channel", "ibv_create_cq",    "ibv_reg_mr",	 "ibv_create_qp",
	"ibv_modify_qp",	   "ibv_post_recv",    "ibv_post_send",	 "ibv_poll_cq",
};

struct fk_wc {
	struct ibv_wc wc;
	uint32_t retire; /* send completions: SQ slots this completion frees */
};

struct fk_cq {
	struct ibv_cq cq;
	unsigned long polls; /* ibv_poll_cq calls on it (rt_fakedev_cq_polls) */
	unsigned head, n, cap;
	struct fk_wc *ring;
};

struct fk_recv {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t len;
};

struct fk_pend { /* a send or write waiting (in order) for a receive at its destination */
	struct fk_pend *next;
	struct fk_qp *src;
	uint64_t wr_id, raddr;
	uint64_t laddr, compare_add, swap; /* RDMA READ and atomics: the first SGE and the atomic's operands */
	enum ibv_wr_opcode op;
	bool signaled, ud, rnr_exc;
	uint32_t imm, len, retire;
	uint8_t data[];
};

struct fk_qp {
	struct ibv_qp qp;
	uint32_t max_send_wr, max_recv_wr, max_sge, max_inline;
	uint32_t dest_qpn;
	uint32_t sq_used, unsig;
	bool sig_all;
	unsigned rq_head, rq_n;
	struct fk_recv *rq;
	struct fk_pend *pend, **pend_tail;
};

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device fk_devs[FK_MAX_DEVS];
static int fk_ndevs = 1;
static bool fk_roce;
static int fk_gid_api; /* 0 table, 1 ex, 2 legacy */
static int fk_inline_refusal = EINVAL;
static int fk_pkeys = 1;				       /* RT_FAKEDEV_PKEYS: the port's P_Key table length */
static FILE *fk_qp_log;					       /* RT_FAKEDEV_QP_LOG: one line per ibv_modify_qp */
static unsigned long fk_list_max, fk_list_calls, fk_large_wrs; /* post lists and large WRs, for the report */
/* data WRs per QP and the threads that posted them, for the report (under fk_lock; QP numbers are never reused) */
#define FK_TALLY_QPS 256
#define FK_TALLY_THREADS 32
static struct {
	uint32_t qpn;
	const void *send_cq;
	unsigned long wrs;
	pthread_t tid[FK_TALLY_THREADS];
	unsigned n_tid;
} fk_tally[FK_TALLY_QPS];
static unsigned fk_n_tally;
static const void *fk_cqs[FK_TALLY_QPS]; /* send CQs in first-use order */
static unsigned fk_n_cqs;

/* Adds tid to set (of *n, at most FK_TALLY_THREADS) when new. */
static void fk_tid_add(pthread_t *set, unsigned *n, pthread_t tid)
{
	for (unsigned i = 0; i < *n; i++)
		if (pthread_equal(set[i], tid))
			return;
	if (*n < FK_TALLY_THREADS)
		set[(*n)++] = tid;
}

/* Counts k data WRs posted on qp by this thread. Under fk_lock. */
static void fk_tally_wrs(const struct ibv_qp *qp, unsigned long k)
{
	unsigned i;

	for (i = 0; i < fk_n_tally && fk_tally[i].qpn != qp->qp_num; i++)
		;
	if (i == FK_TALLY_QPS)
		return;
	if (i == fk_n_tally) {
		fk_n_tally++;
		fk_tally[i].qpn = qp->qp_num;
		fk_tally[i].send_cq = qp->send_cq;
	}
	fk_tally[i].wrs += k;
	fk_tid_add(fk_tally[i].tid, &fk_tally[i].n_tid, pthread_self());
}

static void fk_tally_report(FILE *f)
{
	unsigned per_cq_max = 0, n_threads = 0;
	pthread_t seen[FK_TALLY_THREADS];

	for (unsigned i = 0; i < fk_n_tally; i++) {
		unsigned cq, same = 0;

		if (fk_tally[i].wrs < 64)
			continue;
		for (cq = 0; cq < fk_n_cqs && fk_cqs[cq] != fk_tally[i].send_cq; cq++)
			;
		if (cq == fk_n_cqs && fk_n_cqs < FK_TALLY_QPS)
			fk_cqs[fk_n_cqs++] = fk_tally[i].send_cq;
		for (unsigned j = 0; j < fk_n_tally; j++)
			same += fk_tally[j].wrs >= 64 && fk_tally[j].send_cq == fk_tally[i].send_cq;
		per_cq_max = same > per_cq_max ? same : per_cq_max;
		for (unsigned t = 0; t < fk_tally[i].n_tid; t++)
			fk_tid_add(seen, &n_threads, fk_tally[i].tid[t]);
		fprintf(f, "qp_wrs %u %lu %u %u\n", fk_tally[i].qpn, fk_tally[i].wrs, fk_tally[i].n_tid, cq);
	}
	fprintf(f, "send_threads %u\nqps_per_send_cq_max %u\n", n_threads, per_cq_max);
}
static unsigned long fk_list_partial; /* lists taken in part (RT_FAKEDEV_LIST_ENOMEM_FIRST) */
static bool fk_list_enomem_first;
static bool fk_efa;			       /* RT_FAKEDEV_EFA: an EFA device (UD and SRD, efadv) */
static unsigned long fk_srd_qps, fk_srd_sends; /* for the report */
static struct fk_qp *fk_qps[FK_MAX_QPS];
static unsigned long fk_calls[V__COUNT];
static long fk_live;
static int fk_fail_verb = -1, fk_fail_errno = ENOMEM, fk_fail_from;
static unsigned long fk_fail_at;
static uint32_t fk_next_qpn = 0x40;
static uint32_t fk_max_inline = FK_MAX_INLINE;
static bool fk_port_down[FK_MAX_DEVS], fk_iwarp, fk_no_rc, fk_no_inline_write, fk_rnr_exc;
static uint32_t fk_inline_enomem_above; /* 0 = off */
static unsigned long fk_rnr_every, fk_rc_sends, fk_rnr_count;
static const char *fk_hw_dir;

/* Writes the RNR counter into the fake sysfs hw_counters directory (when one is given). Under fk_lock. */
static void fk_hw_write(void)
{
	char path[512];
	FILE *f;

	if (!fk_hw_dir)
		return;
	snprintf(path, sizeof(path), "%s/rnr_nak_retry_err", fk_hw_dir);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%lu\n", fk_rnr_count);
		fclose(f);
	}
}

__attribute__((constructor)) static void fk_init(void)
{
	const char *v;

	v = getenv("RT_FAKEDEV_DEVICES");
	if (v && *v) {
		fk_ndevs = (int)strtol(v, NULL, 10);
		if (fk_ndevs < 1 || fk_ndevs > FK_MAX_DEVS) {
			fprintf(stderr, "fakedev: bad RT_FAKEDEV_DEVICES '%s'\n", v);
			_exit(125);
		}
	}
	for (int i = 0; i < fk_ndevs; i++) {
		snprintf(fk_devs[i].name, sizeof(fk_devs[i].name), "fake%d", i);
		snprintf(fk_devs[i].dev_name, sizeof(fk_devs[i].dev_name), "uverbs%d", 9 + i);
		fk_devs[i].node_type = IBV_NODE_CA;
		fk_devs[i].transport_type = IBV_TRANSPORT_IB;
	}
	v = getenv("RT_FAKEDEV_MAX_INLINE");
	if (v && *v)
		fk_max_inline = (uint32_t)strtoul(v, NULL, 10);
	v = getenv("RT_FAKEDEV_PORT_DOWN");
	for (const char *t = v; t && *t; t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL) {
		long d = strtol(t, NULL, 10);

		if (d >= 0 && d < FK_MAX_DEVS)
			fk_port_down[d] = true;
	}
	fk_iwarp = (v = getenv("RT_FAKEDEV_IWARP")) && *v == '1';
	fk_efa = (v = getenv("RT_FAKEDEV_EFA")) && *v == '1';
	fk_no_rc = ((v = getenv("RT_FAKEDEV_NO_RC")) && *v == '1') || fk_efa;
	if (fk_efa && !getenv("RT_FAKEDEV_MAX_INLINE")) /* EFA's inline buffer, for UD and SRD alike */
		fk_max_inline = 32;
	for (int i = 0; fk_efa && i < fk_ndevs; i++) {
		fk_devs[i].node_type = IBV_NODE_UNSPECIFIED;
		fk_devs[i].transport_type = IBV_TRANSPORT_UNSPECIFIED;
	}
	fk_no_inline_write = (v = getenv("RT_FAKEDEV_NO_INLINE_WRITE")) && *v == '1';
	fk_rnr_exc = (v = getenv("RT_FAKEDEV_RNR_EXC")) && *v == '1';
	v = getenv("RT_FAKEDEV_INLINE_ENOMEM_ABOVE");
	if (v && *v)
		fk_inline_enomem_above = (uint32_t)strtoul(v, NULL, 10);
	fk_list_enomem_first = (v = getenv("RT_FAKEDEV_LIST_ENOMEM_FIRST")) && *v == '1';
	v = getenv("RT_FAKEDEV_RNR_EVERY");
	if (v && *v)
		fk_rnr_every = strtoul(v, NULL, 10);
	fk_hw_dir = getenv("RT_FAKEDEV_HW_COUNTERS");
	fk_hw_write();
	if (fk_iwarp)
		for (int i = 0; i < fk_ndevs; i++) {
			fk_devs[i].node_type = IBV_NODE_RNIC;
			fk_devs[i].transport_type = IBV_TRANSPORT_IWARP;
		}
	v = getenv("RT_FAKEDEV_ROCE");
	fk_roce = (v && *v == '1') || fk_iwarp;
	v = getenv("RT_FAKEDEV_INLINE_REFUSAL");
	if (v && *v)
		fk_inline_refusal = (int)strtol(v, NULL, 10);
	v = getenv("RT_FAKEDEV_PKEYS");
	if (v && *v)
		fk_pkeys = (int)strtol(v, NULL, 10);
	v = getenv("RT_FAKEDEV_QP_LOG");
	if (v && *v)
		fk_qp_log = fopen(v, "ae");
	v = getenv("RT_FAKEDEV_GID_API");
	fk_gid_api = v && !strcmp(v, "ex") ? 1 : v && !strcmp(v, "legacy") ? 2 : 0;
	v = getenv("RT_FAKEDEV_FAIL");
	if (v && *v) {
		const char *c1 = strchr(v, ':');

		for (int i = 0; c1 && i < V__COUNT; i++)
			if (strlen(fk_names[i]) == (size_t)(c1 - v) && !strncmp(v, fk_names[i], (size_t)(c1 - v)))
				fk_fail_verb = i;
		if (c1) {
			char *end;

			fk_fail_at = strtoul(c1 + 1, &end, 10);
			if (*end == ':')
				fk_fail_errno = (int)strtol(end + 1, NULL, 10);
		}
		if (fk_fail_verb < 0 || !fk_fail_at) {
			fprintf(stderr, "fakedev: bad RT_FAKEDEV_FAIL '%s'\n", v);
			_exit(125);
		}
	}
	v = getenv("RT_FAKEDEV_FAIL_FROM");
	fk_fail_from = v && *v == '1';
}

__attribute__((destructor)) static void fk_fini(void)
{
	const char *path = getenv("RT_FAKEDEV_REPORT");
	FILE *f;

	if (!path || !(f = fopen(path, "we")))
		return;
	for (int i = 0; i < V__COUNT; i++)
		fprintf(f, "%s %lu\n", fk_names[i], fk_calls[i]);
	fprintf(f, "live %ld\n", fk_live);
	fprintf(f, "post_list_max %lu\npost_list_calls %lu\nlarge_wrs %lu\nlist_partial %lu\n", fk_list_max,
		fk_list_calls, fk_large_wrs, fk_list_partial);
	fprintf(f, "srd_qps %lu\nsrd_sends %lu\n", fk_srd_qps, fk_srd_sends);
	fk_tally_report(f);
	fclose(f);
}

/* Counts a call of verb; true (errno set) when it must fail. Under fk_lock. */
static bool fk_fail(enum fk_verb verb)
{
	unsigned long k = ++fk_calls[verb];

	if ((int)verb != fk_fail_verb || (k != fk_fail_at && !(fk_fail_from && k > fk_fail_at)))
		return false;
	errno = fk_fail_errno;
	return true;
}

static void *fk_obj(size_t size)
{
	void *p = calloc(1, size);

	if (p)
		fk_live++;
	return p;
}

static void fk_unobj(void *p)
{
	if (p)
		fk_live--;
	free(p);
}

/* ---- device, context, port ----------------------------------------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **l = calloc((size_t)fk_ndevs + 1, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < fk_ndevs; i++)
		l[i] = &fk_devs[i];
	if (num_devices)
		*num_devices = fk_ndevs;
	return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	(void)device;
	return htobe64(0x0002c90300fa4e00ull);
}

static int fk_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int fk_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int fk_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int fk_req_notify(struct ibv_cq *cq, int solicited_only);

static bool fk_is_dev(const struct ibv_device *d)
{
	return d >= fk_devs && d < fk_devs + fk_ndevs;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx = NULL;

	pthread_mutex_lock(&fk_lock);
	if (fk_is_dev(device) && !fk_fail(V_OPEN) && (ctx = fk_obj(sizeof(*ctx)))) {
		ctx->device = device;
		ctx->cmd_fd = -1;
		ctx->async_fd = -1;
		ctx->ops.post_send = fk_post_send;
		ctx->ops.post_recv = fk_post_recv;
		ctx->ops.poll_cq = fk_poll_cq;
		ctx->ops.req_notify_cq = fk_req_notify;
		pthread_mutex_init(&ctx->mutex, NULL);
	} else if (!fk_is_dev(device)) {
		errno = ENODEV;
	}
	pthread_mutex_unlock(&fk_lock);
	return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
	pthread_mutex_lock(&fk_lock);
	fk_unobj(ctx);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	int rc = 0;

	pthread_mutex_lock(&fk_lock);
	if (fk_fail(V_QUERY_DEVICE)) {
		rc = errno;
	} else {
		memset(a, 0, sizeof(*a));
		snprintf(a->fw_ver, sizeof(a->fw_ver), "0.0.fake");
		a->node_guid = htobe64(0x0002c90300fa4e00ull + (uint64_t)(ctx->device - fk_devs));
		a->vendor_id = fk_efa ? 0x1d0f : 0xfa4e;
		a->vendor_part_id = fk_efa ? 0xefa1 : 0;
		a->max_qp = FK_MAX_QPS;
		a->max_qp_wr = FK_MAX_WR;
		a->max_sge = 4;
		a->max_cq = 64;
		a->max_cqe = 65536;
		a->max_mr = 64;
		a->max_pd = 64;
		a->max_qp_rd_atom = 16;
		a->phys_port_cnt = 1;
	}
	pthread_mutex_unlock(&fk_lock);
	return rc;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *compat)
{
	struct ibv_port_attr *pa = (struct ibv_port_attr *)compat; /* the inline wrapper passes the full struct */
	int rc = 0;

	pthread_mutex_lock(&fk_lock);
	if (fk_fail(V_QUERY_PORT)) {
		rc = errno;
	} else if (port != 1) {
		rc = EINVAL;
	} else {
		pa->state = fk_port_down[ctx->device - fk_devs] ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
		pa->max_mtu = IBV_MTU_4096;
		pa->active_mtu = IBV_MTU_1024;
		pa->gid_tbl_len = fk_roce ? FK_GID_SLOTS : 1;
		pa->lid = fk_efa ? 0 : 1;
		pa->max_msg_sz = 1u << 30;
		pa->pkey_tbl_len = fk_pkeys;
		pa->active_width = 2;
		pa->active_speed = 32;
		pa->phys_state = 5;
		pa->link_layer = fk_efa	   ? IBV_LINK_LAYER_UNSPECIFIED
				 : fk_roce ? IBV_LINK_LAYER_ETHERNET
					   : IBV_LINK_LAYER_INFINIBAND;
	}
	pthread_mutex_unlock(&fk_lock);
	return rc;
}

/* Entry index of the port's GID table: true with *gid and *type when valid. InfiniBand mode: one GID fe80::1 (IB). RoCE
 * mode: see the file comment. */
static bool fk_gid(int index, union ibv_gid *gid, uint32_t *type)
{
	memset(gid, 0, sizeof(*gid));
	if (!fk_roce) {
		if (index != 0)
			return false;
		gid->raw[0] = 0xfe;
		gid->raw[1] = 0x80;
		gid->raw[15] = 1;
		*type = IBV_GID_TYPE_IB;
		return true;
	}
	if (index < 0 || index >= FK_GID_SLOTS || index == 2 || index == 3 || index >= 30)
		return false;
	*type = index % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
	if (index < 2 || (index >= 14 && index < 20)) { /* link-local: the port's, then container interfaces' */
		gid->raw[0] = 0xfe;
		gid->raw[1] = 0x80;
		gid->raw[8] = 0x02;
		gid->raw[11] = 0xff;
		gid->raw[12] = 0xfe;
		gid->raw[15] = (uint8_t)(index < 2 ? 0x55 : index);
	} else if (index < 14) { /* IPv6 global 2001:db8::<index> */
		gid->raw[0] = 0x20;
		gid->raw[1] = 0x01;
		gid->raw[2] = 0x0d;
		gid->raw[3] = 0xb8;
		gid->raw[15] = (uint8_t)index;
	} else { /* IPv4-mapped: 192.168.1.<index> at 20 and 21, 10.1.0.<index> above */
		gid->raw[10] = gid->raw[11] = 0xff;
		gid->raw[12] = index < 22 ? 192 : 10;
		gid->raw[13] = index < 22 ? 168 : 1;
		gid->raw[14] = index < 22 ? 1 : 0;
		gid->raw[15] = (uint8_t)index;
	}
	return true;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	uint32_t type;

	(void)ctx;
	if (port != 1 || index < 0 || index >= (fk_roce ? FK_GID_SLOTS : 1))
		return EINVAL;
	fk_gid(index, gid, &type); /* an empty slot reads as zeros, as the kernel's sysfs and ioctl give */
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *e, uint32_t flags,
		      size_t entry_size);
int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *e, uint32_t flags,
		      size_t entry_size)
{
	(void)ctx;
	if (fk_gid_api == 2)
		return EOPNOTSUPP;
	if (flags || entry_size < sizeof(*e) || port != 1 || index >= (uint32_t)(fk_roce ? FK_GID_SLOTS : 1))
		return EINVAL;
	memset(e, 0, sizeof(*e));
	if (!fk_gid((int)index, &e->gid, &e->gid_type))
		return ENODATA;
	e->gid_index = index;
	e->port_num = 1;
	e->ndev_ifindex = fk_roce ? 1 : 0;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max_entries, uint32_t flags,
			     size_t entry_size);
ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max_entries, uint32_t flags,
			     size_t entry_size)
{
	size_t n = 0;

	(void)ctx;
	if (fk_gid_api)
		return -EOPNOTSUPP;
	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	for (int i = 0; i < (fk_roce ? FK_GID_SLOTS : 1); i++) {
		struct ibv_gid_entry e = { .gid_index = (uint32_t)i, .port_num = 1, .ndev_ifindex = fk_roce ? 1 : 0 };

		if (!fk_gid(i, &e.gid, &e.gid_type))
			continue;
		if (n == max_entries)
			return -EINVAL; /* more valid entries than the caller's array: the call fails (man page) */
		entries[n++] = e;
	}
	return (ssize_t)n;
}

/* ---- PD, MR, channel, CQ, AH ------------------------------------------------------------------------------------ */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = NULL;

	pthread_mutex_lock(&fk_lock);
	if (!fk_fail(V_ALLOC_PD) && (pd = fk_obj(sizeof(*pd))))
		pd->context = ctx;
	pthread_mutex_unlock(&fk_lock);
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	pthread_mutex_lock(&fk_lock);
	fk_unobj(pd);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = NULL;

	(void)access;
	pthread_mutex_lock(&fk_lock);
	if (!fk_fail(V_REG_MR) && (mr = fk_obj(sizeof(*mr)))) {
		mr->context = pd->context;
		mr->pd = pd;
		mr->addr = addr;
		mr->length = length;
		mr->lkey = mr->rkey = 0x4e00 + (uint32_t)fk_calls[V_REG_MR];
	}
	pthread_mutex_unlock(&fk_lock);
	return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	pthread_mutex_lock(&fk_lock);
	fk_unobj(mr);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = NULL;

	pthread_mutex_lock(&fk_lock);
	if (!fk_fail(V_CHANNEL) && (ch = fk_obj(sizeof(*ch)))) {
		ch->context = ctx;
		ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ch->fd < 0) {
			fk_unobj(ch);
			ch = NULL;
		}
	}
	pthread_mutex_unlock(&fk_lock);
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	pthread_mutex_lock(&fk_lock);
	close(ch->fd);
	fk_unobj(ch);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	(void)ch;
	(void)cq;
	(void)cq_context;
	errno = EAGAIN; /* no events: CQ moderation, the only user, is not supported here */
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch, int vec)
{
	struct fk_cq *c = NULL;

	(void)vec;
	pthread_mutex_lock(&fk_lock);
	if (cqe <= 0 || cqe > 65536) {
		errno = EINVAL;
	} else if (!fk_fail(V_CREATE_CQ) && (c = fk_obj(sizeof(*c)))) {
		c->cap = (unsigned)cqe;
		c->ring = calloc(c->cap, sizeof(*c->ring));
		if (!c->ring) {
			fk_unobj(c);
			c = NULL;
			errno = ENOMEM;
		} else {
			c->cq.context = ctx;
			c->cq.channel = ch;
			c->cq.cq_context = cq_context;
			c->cq.cqe = cqe;
		}
	}
	pthread_mutex_unlock(&fk_lock);
	return c ? &c->cq : NULL;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fk_cq *c = (struct fk_cq *)cq;

	pthread_mutex_lock(&fk_lock);
	free(c->ring);
	fk_unobj(c);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

static int fk_req_notify(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah;

	pthread_mutex_lock(&fk_lock);
	if (fk_qp_log) {
		fprintf(fk_qp_log, "create_ah sl %d global %d tclass %d\n", (int)attr->sl, (int)attr->is_global,
			(int)attr->grh.traffic_class);
		fflush(fk_qp_log);
	}
	ah = NULL;
	if (fk_efa && !attr->is_global)
		errno = EINVAL; /* EFA names the peer by GID */
	else
		ah = fk_obj(sizeof(*ah));
	if (ah) {
		ah->context = pd->context;
		ah->pd = pd;
	}
	pthread_mutex_unlock(&fk_lock);
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	pthread_mutex_lock(&fk_lock);
	fk_unobj(ah);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

/* ---- QPs ------------------------------------------------------------------------------------------------------- */

/* Creates a QP of type (a->qp_type, or IBV_QPT_DRIVER for EFA's SRD); NULL with errno. */
static struct ibv_qp *fk_create_qp(struct ibv_pd *pd, const struct ibv_qp_init_attr *a, enum ibv_qp_type type)
{
	struct fk_qp *q = NULL;
	int slot = -1;

	pthread_mutex_lock(&fk_lock);
	for (int i = 0; i < FK_MAX_QPS && slot < 0; i++)
		if (!fk_qps[i])
			slot = i;
	if (fk_fail(V_CREATE_QP)) {
		goto out;
	} else if (slot < 0) {
		errno = ENOMEM;
	} else if ((fk_no_rc && type == IBV_QPT_RC) || (fk_iwarp && type == IBV_QPT_UD)) {
		errno = EOPNOTSUPP;
	} else if (a->cap.max_inline_data > fk_max_inline && a->cap.max_inline_data <= 4 * fk_max_inline &&
		   type == IBV_QPT_RC) {
		errno = fk_inline_refusal; /* (RC only: UD keeps EINVAL, the two paths in one run) */
	} else if ((type != IBV_QPT_RC && type != IBV_QPT_UD && type != IBV_QPT_DRIVER) || !a->send_cq || !a->recv_cq ||
		   a->cap.max_send_wr == 0 || a->cap.max_send_wr > FK_MAX_WR || a->cap.max_recv_wr > FK_MAX_WR ||
		   a->cap.max_send_sge > 4 || a->cap.max_recv_sge > 4 || a->cap.max_inline_data > fk_max_inline) {
		errno = EINVAL;
	} else if ((q = fk_obj(sizeof(*q)))) {
		q->rq = calloc(a->cap.max_recv_wr ? a->cap.max_recv_wr : 1, sizeof(*q->rq));
		if (!q->rq) {
			fk_unobj(q);
			q = NULL;
			errno = ENOMEM;
			goto out;
		}
		q->qp.context = pd->context;
		q->qp.pd = pd;
		q->qp.send_cq = a->send_cq;
		q->qp.recv_cq = a->recv_cq;
		q->qp.qp_type = type;
		fk_srd_qps += type == IBV_QPT_DRIVER;
		q->qp.qp_num = fk_next_qpn++;
		q->qp.state = IBV_QPS_RESET;
		q->qp.qp_context = a->qp_context;
		q->max_send_wr = a->cap.max_send_wr;
		q->max_recv_wr = a->cap.max_recv_wr;
		q->max_sge = a->cap.max_send_sge ? a->cap.max_send_sge : 1;
		q->max_inline = a->cap.max_inline_data;
		q->sig_all = a->sq_sig_all;
		q->pend_tail = &q->pend;
		fk_qps[slot] = q;
	}
out:
	pthread_mutex_unlock(&fk_lock);
	return q ? &q->qp : NULL;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	if (a->qp_type == IBV_QPT_DRIVER) { /* only through efadv */
		errno = EINVAL;
		return NULL;
	}
	return fk_create_qp(pd, a, a->qp_type);
}

/* ---- EFA direct verbs (RT_FAKEDEV_EFA) -------------------------------------------------------------------------- */

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen);
int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
{
	if (!fk_efa || !ibvctx || !fk_is_dev(ibvctx->device))
		return EOPNOTSUPP; /* libefa on another provider's device */
	if (inlen < offsetof(struct efadv_device_attr, device_caps))
		return EINVAL;
	memset(attr, 0, inlen < sizeof(*attr) ? inlen : sizeof(*attr));
	attr->max_sq_wr = FK_MAX_WR;
	attr->max_rq_wr = FK_MAX_WR;
	attr->max_sq_sge = 2;
	attr->max_rq_sge = 1;
	attr->inline_buf_size = (uint16_t)fk_max_inline;
	if (inlen >= sizeof(*attr)) {
		attr->device_caps = EFADV_DEVICE_ATTR_CAPS_RDMA_READ | EFADV_DEVICE_ATTR_CAPS_RNR_RETRY;
		attr->max_rdma_size = 1u << 30;
	}
	return 0;
}

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen);
struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	struct ibv_qp_init_attr a;

	if (!fk_efa || !fk_is_dev(ibvctx->device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (inlen < sizeof(*efa_attr) || efa_attr->driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD ||
	    attr_ex->qp_type != IBV_QPT_DRIVER || !(attr_ex->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr_ex->pd) {
		errno = EINVAL;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = attr_ex->qp_context;
	a.send_cq = attr_ex->send_cq;
	a.recv_cq = attr_ex->recv_cq;
	a.cap = attr_ex->cap;
	a.sq_sig_all = attr_ex->sq_sig_all;
	return fk_create_qp(attr_ex->pd, &a, IBV_QPT_DRIVER);
}

static struct fk_qp *fk_qp_by_num(uint32_t qpn)
{
	for (int i = 0; i < FK_MAX_QPS; i++)
		if (fk_qps[i] && fk_qps[i]->qp.qp_num == qpn)
			return fk_qps[i];
	return NULL;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct fk_qp *q = (struct fk_qp *)qp;

	pthread_mutex_lock(&fk_lock);
	for (int i = 0; i < FK_MAX_QPS; i++) {
		if (fk_qps[i] == q)
			fk_qps[i] = NULL;
		/* sends of this QP still waiting elsewhere lose their source */
		for (struct fk_pend *p = fk_qps[i] ? fk_qps[i]->pend : NULL; p; p = p->next)
			if (p->src == q)
				p->src = NULL;
	}
	while (q->pend) {
		struct fk_pend *p = q->pend;

		q->pend = p->next;
		free(p);
	}
	free(q->rq);
	fk_unobj(q);
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	int rc = 0;

	pthread_mutex_lock(&fk_lock);
	if (fk_fail(V_MODIFY_QP)) {
		rc = errno;
	} else if (((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index >= fk_pkeys) ||
		   (fk_iwarp && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR && qp->qp_type == IBV_QPT_RC)) {
		/* an index past the P_Key table, as a provider refuses it; or iWARP, whose connection (and RTR/RTS) is the
		   iWARP CM's */
		rc = EINVAL;
	} else if (mask & IBV_QP_STATE) {
		if (fk_qp_log)
			fprintf(fk_qp_log, "modify_qp qp %u %s state %d pkey_index %d sl %d global %d tclass %d\n",
				qp->qp_num,
				qp->qp_type == IBV_QPT_RC	? "rc"
				: qp->qp_type == IBV_QPT_DRIVER ? "srd"
								: "ud",
				(int)attr->qp_state, mask & IBV_QP_PKEY_INDEX ? (int)attr->pkey_index : -1,
				mask & IBV_QP_AV ? (int)attr->ah_attr.sl : -1,
				mask & IBV_QP_AV ? (int)attr->ah_attr.is_global : -1,
				mask & IBV_QP_AV ? (int)attr->ah_attr.grh.traffic_class : -1);
		if (fk_qp_log)
			fflush(fk_qp_log);
		if ((mask & IBV_QP_DEST_QPN) && qp->qp_type == IBV_QPT_RC)
			q->dest_qpn = attr->dest_qp_num;
		qp->state = attr->qp_state;
	}
	pthread_mutex_unlock(&fk_lock);
	return rc;
}

/* ---- data path (under fk_lock) ------------------------------------------------------------------------------- */

static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, uint32_t retire)
{
	struct fk_cq *c = (struct fk_cq *)cq;

	if (c->n == c->cap)
		return; /* a CQ overrun: the engine sizes its CQs so that this cannot happen */
	c->ring[(c->head + c->n) % c->cap] = (struct fk_wc){ *wc, retire };
	c->n++;
}

static void send_done(struct fk_qp *src, uint64_t wr_id, enum ibv_wr_opcode op, bool signaled, uint32_t retire)
{
	struct ibv_wc wc = { .wr_id = wr_id,
			     .status = IBV_WC_SUCCESS,
			     .opcode = op == IBV_WR_RDMA_WRITE		   ? IBV_WC_RDMA_WRITE
				       : op == IBV_WR_RDMA_READ		   ? IBV_WC_RDMA_READ
				       : op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD
				       : op == IBV_WR_ATOMIC_CMP_AND_SWP   ? IBV_WC_COMP_SWAP
									   : IBV_WC_SEND };

	if (!src || !signaled)
		return;
	wc.qp_num = src->qp.qp_num;
	cq_push(src->qp.send_cq, &wc, retire);
}

/* Delivers the waiting sends of q in order while it has receives. */
static void deliver(struct fk_qp *q)
{
	while (q->pend) {
		struct fk_pend *p = q->pend;

		if (p->op == IBV_WR_RDMA_WRITE) {
			memcpy((void *)(uintptr_t)p->raddr, p->data, p->len);
		} else if (p->op == IBV_WR_RDMA_READ) {
			memcpy((void *)(uintptr_t)p->laddr, (void *)(uintptr_t)p->raddr, p->len);
		} else if (p->op == IBV_WR_ATOMIC_FETCH_AND_ADD || p->op == IBV_WR_ATOMIC_CMP_AND_SWP) {
			uint64_t old, *target = (uint64_t *)(uintptr_t)p->raddr;

			memcpy(&old, target, sizeof(old));
			if (p->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
				*target = old + p->compare_add;
			else if (old == p->compare_add)
				*target = p->swap;
			memcpy((void *)(uintptr_t)p->laddr, &old, sizeof(old));
		} else if (p->rnr_exc) {
			struct ibv_wc wc = { .wr_id = p->wr_id,
					     .status = IBV_WC_RNR_RETRY_EXC_ERR,
					     .opcode = IBV_WC_SEND };

			if (p->src) { /* (the QP stays usable: the engine must stop at the error completion itself) */
				wc.qp_num = p->src->qp.qp_num;
				cq_push(p->src->qp.send_cq, &wc, p->retire);
			}
			q->pend = p->next;
			if (!q->pend)
				q->pend_tail = &q->pend;
			free(p);
			continue;
		} else {
			struct fk_recv *r;
			struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .qp_num = q->qp.qp_num };
			uint32_t off = p->ud ? 40 : 0;

			if (!q->rq_n)
				return;
			r = &q->rq[q->rq_head];
			q->rq_head = (q->rq_head + 1) % q->max_recv_wr;
			q->rq_n--;
			if (p->len + off > r->len) {
				wc.status = IBV_WC_LOC_LEN_ERR;
			} else {
				memcpy((uint8_t *)(uintptr_t)r->addr + off, p->data, p->len);
				wc.byte_len = p->len + off;
			}
			wc.wr_id = r->wr_id;
			if (p->op == IBV_WR_SEND_WITH_IMM) {
				wc.wc_flags = IBV_WC_WITH_IMM;
				wc.imm_data = p->imm;
			}
			if (p->ud)
				wc.wc_flags |= IBV_WC_GRH;
			wc.src_qp = p->src ? p->src->qp.qp_num : 0;
			cq_push(q->qp.recv_cq, &wc, 0);
		}
		send_done(p->src, p->wr_id, p->op, p->signaled, p->retire);
		q->pend = p->next;
		if (!q->pend)
			q->pend_tail = &q->pend;
		free(p);
	}
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/* Opcodes the fake takes on RC QPs only (UD carries SENDs only). */
static bool rc_only_op(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ || is_atomic(op);
}

static int fk_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	int rc = 0;

	const struct ibv_send_wr *cut = NULL; /* the WR of a list at which RT_FAKEDEV_LIST_ENOMEM_EVERY fails it */

	pthread_mutex_lock(&fk_lock);
	{
		unsigned long k = 0, big = 0, data = 0;

		for (const struct ibv_send_wr *w = wr; w; w = w->next) {
			k++;
			big += w->num_sge && w->sg_list[0].length >= 4096;
			data += (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_RDMA_WRITE) && w->num_sge &&
				w->sg_list[0].length;
		}
		if (data)
			fk_tally_wrs(qp, data);
		fk_list_max = k > fk_list_max ? k : fk_list_max;
		fk_list_calls += k > 1;
		fk_large_wrs += big;
		/* a queue full mid-list: the first list on an empty send queue is taken up to its 4th WR when those
		   are unsignaled, then ENOMEM */
		if (k > 4 && fk_list_enomem_first && q->sq_used == 0) {
			cut = wr;
			for (int i = 0; i < 4 && cut; i++)
				cut = (cut->send_flags & IBV_SEND_SIGNALED) || q->sig_all ? NULL : cut->next;
			fk_list_partial += cut != NULL;
		}
	}
	if (fk_fail(V_POST_SEND)) {
		rc = errno;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		struct fk_qp *dst;
		struct fk_pend *p;
		uint32_t len = 0;
		bool sig = q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);

		if (wr == cut) {
			rc = ENOMEM;
			*bad = wr;
			break;
		}
		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		bool bad_wr = qp->state != IBV_QPS_RTS || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge ||
			      ((wr->send_flags & IBV_SEND_INLINE) && len > q->max_inline) ||
			      (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
			       !(rc_only_op(wr->opcode) && qp->qp_type == IBV_QPT_RC)) ||
			      (is_atomic(wr->opcode) && (wr->num_sge < 1 || wr->sg_list[0].length != 8));

		/* nothing at the other end is EINVAL too (a real RC QP would retry, then fail the WR) */
		/* UD and SRD are addressed per WR (AH and QP number) */
		bool dgram = qp->qp_type == IBV_QPT_UD || qp->qp_type == IBV_QPT_DRIVER;

		dst = bad_wr ? NULL : fk_qp_by_num(dgram ? wr->wr.ud.remote_qpn : q->dest_qpn);
		p = NULL;
		if (!bad_wr && (wr->send_flags & IBV_SEND_INLINE) && fk_no_inline_write &&
		    wr->opcode == IBV_WR_RDMA_WRITE) {
			rc = EINVAL; /* max_inline_data was accepted, IBV_SEND_INLINE on WRITE is not */
			*bad = wr;
			break;
		}
		if (!bad_wr && (wr->send_flags & IBV_SEND_INLINE) && fk_inline_enomem_above &&
		    len > fk_inline_enomem_above) {
			rc = ENOMEM; /* mlx5: an inline segment that does not fit the WQE */
			*bad = wr;
			break;
		}
		if (!dst)
			rc = EINVAL;
		else if (q->sq_used >= q->max_send_wr || !(p = malloc(sizeof(*p) + len)))
			rc = ENOMEM;
		if (rc) {
			*bad = wr;
			break;
		}
		*p = (struct fk_pend){ .src = q,
				       .wr_id = wr->wr_id,
				       .raddr = wr->wr.rdma.remote_addr,
				       .op = wr->opcode,
				       .signaled = sig,
				       .ud = qp->qp_type == IBV_QPT_UD,
				       .imm = wr->imm_data,
				       .len = len };
		if (dgram)
			p->raddr = 0;
		fk_srd_sends += qp->qp_type == IBV_QPT_DRIVER;
		if (is_atomic(wr->opcode)) {
			p->raddr = wr->wr.atomic.remote_addr;
			p->compare_add = wr->wr.atomic.compare_add;
			p->swap = wr->wr.atomic.swap;
		}
		p->laddr = wr->num_sge > 0 ? wr->sg_list[0].addr : 0;
		if (wr->opcode == IBV_WR_RDMA_READ && wr->num_sge > 0)
			p->len = wr->sg_list[0].length;
		len = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(p->data + len, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		if (qp->qp_type == IBV_QPT_RC && (wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM) &&
		    fk_rnr_every && ++fk_rc_sends % fk_rnr_every == 0) {
			if (fk_rnr_exc) {
				p->rnr_exc = sig; /* reported on a signaled WR */
			} else {
				fk_rnr_count++;
				fk_hw_write();
			}
		}
		q->sq_used++;
		q->unsig++;
		if (sig) {
			p->retire = q->unsig;
			q->unsig = 0;
		}
		*dst->pend_tail = p;
		dst->pend_tail = &p->next;
		deliver(dst);
	}
out:
	pthread_mutex_unlock(&fk_lock);
	return rc;
}

static int fk_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	int rc = 0;

	pthread_mutex_lock(&fk_lock);
	if (fk_fail(V_POST_RECV)) {
		rc = errno;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (q->rq_n >= q->max_recv_wr || wr->num_sge != 1) {
			rc = q->rq_n >= q->max_recv_wr ? ENOMEM : EINVAL;
			*bad = wr;
			break;
		}
		q->rq[(q->rq_head + q->rq_n) % q->max_recv_wr] =
			(struct fk_recv){ wr->wr_id, wr->sg_list[0].addr, wr->sg_list[0].length };
		q->rq_n++;
	}
	deliver(q);
out:
	pthread_mutex_unlock(&fk_lock);
	return rc;
}

/* Test hook (found with dlsym): ibv_poll_cq calls made on cq so far, 0 for a CQ that is not one of ours. */
unsigned long rt_fakedev_cq_polls(struct ibv_cq *cq);
unsigned long rt_fakedev_cq_polls(struct ibv_cq *cq)
{
	unsigned long n;

	pthread_mutex_lock(&fk_lock);
	n = cq ? ((struct fk_cq *)cq)->polls : 0;
	pthread_mutex_unlock(&fk_lock);
	return n;
}

static int fk_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fk_cq *c = (struct fk_cq *)cq;
	int k = 0;

	pthread_mutex_lock(&fk_lock);
	c->polls++;
	if (fk_fail(V_POLL_CQ)) {
		k = -1;
		goto out;
	}
	while (k < n && c->n) {
		struct fk_wc *w = &c->ring[c->head];
		struct fk_qp *q;

		wc[k++] = w->wc;
		if (w->retire && (q = fk_qp_by_num(w->wc.qp_num)))
			q->sq_used -= w->retire <= q->sq_used ? w->retire : q->sq_used;
		c->head = (c->head + 1) % c->cap;
		c->n--;
	}
out:
	pthread_mutex_unlock(&fk_lock);
	return k;
}

/* ---- rdma_cm: loopback only (the node's own address), for the iWARP connection path -------------------------------
 * rdma_create_event_channel .. rdma_destroy_id over the fake devices: every address resolves to fake0 port 1 (or the
 * first device whose port is up); rdma_connect queues CONNECT_REQUEST on the listener with a new id, rdma_accept joins
 * the two ids' QPs (RTS both, the way the iWARP CM moves them, not ibv_modify_qp) and queues ESTABLISHED for both.
 * Events are read through the channel's eventfd, as librdmacm's are through its fd. */
#include <rdma/rdma_cma.h>

struct fk_cm_ev {
	struct rdma_cm_event ev;
	struct fk_cm_ev *next;
};
struct fk_cm_ch {
	struct rdma_event_channel ch;
	struct fk_cm_ev *head, **tail;
};
static struct ibv_context *fk_cm_ctx; /* the context rdma_cm ids share, as librdmacm keeps one per device */
static struct rdma_cm_id *fk_cm_listener;

static void fk_cm_queue(struct rdma_cm_id *id, struct rdma_cm_id *listen_id, enum rdma_cm_event_type t)
{
	struct fk_cm_ch *ch = (struct fk_cm_ch *)id->channel;
	struct fk_cm_ev *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return;
	e->ev.id = id;
	e->ev.listen_id = listen_id;
	e->ev.event = t;
	*ch->tail = e;
	ch->tail = &e->next;
	if (write(ch->ch.fd, &one, sizeof(one)) < 0)
		return;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct fk_cm_ch *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ch->tail = &ch->head;
	return &ch->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct fk_cm_ch *ch = (struct fk_cm_ch *)channel;

	while (ch->head) {
		struct fk_cm_ev *e = ch->head;

		ch->head = e->next;
		free(e);
	}
	close(ch->ch.fd);
	free(ch);
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context, enum rdma_port_space ps)
{
	struct rdma_cm_id *i = calloc(1, sizeof(*i));

	if (!i) {
		errno = ENOMEM;
		return -1;
	}
	i->channel = channel;
	i->context = context;
	i->ps = ps;
	*id = i;
	return 0;
}

/* Binds id to the fake device (its own address: the first device whose port is up). */
static void fk_cm_bind(struct rdma_cm_id *id)
{
	int d = 0;

	while (d < fk_ndevs - 1 && fk_port_down[d])
		d++;
	if (!fk_cm_ctx) {
		fk_cm_ctx = calloc(1, sizeof(*fk_cm_ctx));
		if (!fk_cm_ctx)
			return;
		fk_cm_ctx->device = &fk_devs[d];
		fk_cm_ctx->cmd_fd = fk_cm_ctx->async_fd = -1;
		fk_cm_ctx->ops.post_send = fk_post_send;
		fk_cm_ctx->ops.post_recv = fk_post_recv;
		fk_cm_ctx->ops.poll_cq = fk_poll_cq;
		fk_cm_ctx->ops.req_notify_cq = fk_req_notify;
		pthread_mutex_init(&fk_cm_ctx->mutex, NULL);
	}
	id->verbs = fk_cm_ctx;
	id->port_num = 1;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	memcpy(&id->route.addr.src_addr, addr, sizeof(struct sockaddr_in));
	((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port = htons(40000);
	fk_cm_bind(id);
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	(void)backlog;
	fk_cm_listener = id;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return ((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	(void)src;
	(void)timeout_ms;
	memcpy(&id->route.addr.dst_addr, dst, sizeof(struct sockaddr_in));
	fk_cm_bind(id);
	fk_cm_queue(id, NULL, RDMA_CM_EVENT_ADDR_RESOLVED);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	(void)timeout_ms;
	fk_cm_queue(id, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct fk_cm_ch *ch = (struct fk_cm_ch *)channel;
	struct fk_cm_ev *e = ch->head;
	uint64_t v;

	if (!e) {
		errno = EAGAIN;
		return -1;
	}
	ch->head = e->next;
	if (!ch->head) {
		ch->tail = &ch->head;
		if (read(ch->ch.fd, &v, sizeof(v)) < 0)
			v = 0;
	}
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	free(event); /* ev is the first member of fk_cm_ev */
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	id->qp = ibv_create_qp(pd, attr);
	if (!id->qp)
		return -1;
	id->pd = pd;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct rdma_cm_id *child;

	(void)param;
	if (!fk_cm_listener) {
		fk_cm_queue(id, NULL, RDMA_CM_EVENT_REJECTED);
		return 0;
	}
	if (rdma_create_id(fk_cm_listener->channel, &child, NULL, RDMA_PS_TCP))
		return -1;
	child->verbs = fk_cm_listener->verbs;
	child->port_num = 1;
	child->context = id; /* the connecting id, joined at accept */
	fk_cm_queue(child, fk_cm_listener, RDMA_CM_EVENT_CONNECT_REQUEST);
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): the event queue owns child until rdma_accept/rdma_destroy_id */
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct rdma_cm_id *peer = id->context;
	struct fk_qp *a, *b;

	(void)param;
	if (!peer || !id->qp || !peer->qp) {
		errno = EINVAL;
		return -1;
	}
	a = (struct fk_qp *)id->qp;
	b = (struct fk_qp *)peer->qp;
	pthread_mutex_lock(&fk_lock);
	a->dest_qpn = b->qp.qp_num;
	b->dest_qpn = a->qp.qp_num;
	a->qp.state = b->qp.state = IBV_QPS_RTS;
	pthread_mutex_unlock(&fk_lock);
	fk_cm_queue(id, NULL, RDMA_CM_EVENT_ESTABLISHED);
	fk_cm_queue(peer, NULL, RDMA_CM_EVENT_ESTABLISHED);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	fk_cm_queue(id, NULL, RDMA_CM_EVENT_DISCONNECTED);
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (id == fk_cm_listener)
		fk_cm_listener = NULL;
	free(id);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = { "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
					     "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
					     "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
					     "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
					     "RDMA_CM_EVENT_REJECTED",	      "RDMA_CM_EVENT_ESTABLISHED",
					     "RDMA_CM_EVENT_DISCONNECTED" };

	return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event] : "RDMA_CM_EVENT_OTHER";
}
