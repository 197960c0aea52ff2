/* SPDX-License-Identifier: MIT */
/*
 * Internal to the engine: one side of a calibration link (an RC QP, optionally a UD QP, their CQs and one registered
 * buffer), the loopback and rdma_cm connection set-up, the control protocol (SEND with immediate, no payload), the
 * responder state machine shared by the loopback thread and `rtune serve`, and the client's measuring loops.
 */
#ifndef RT_LINK_H
#define RT_LINK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <netdb.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rtune/error.h>
#include "rt_clock.h"
#include "rt_model.h"

#define RT_DATA_OFF 64u /* payload offset in the receive area (UD receives put the 40-byte GRH before it) */
#define RT_GRH_BYTES 40u
#define RT_QKEY 0x11111111u
#define RT_HELLO_MAGIC 0x5254554eu /* "RTUN" */
#define RT_PROTO_VERSION 1

/* Control words carried in the immediate data of zero-length SENDs on the RC QP. */
enum rt_ctl_cmd { RT_CMD_PHASE = 1, RT_CMD_ACK = 2, RT_CMD_END = 3 };
enum rt_resp_mode { RT_MODE_SINK = 0, RT_MODE_PP_SEND = 1, RT_MODE_PP_WRITE = 2 };

/* In a PHASE word: the datagram phases of the new phase use the SRD QP (EFA), not the UD one (loopback only: a peer
 * never sees it). Mode values stay below 8. */
#define RT_CTL_SRD (1u << 27)

static inline uint32_t rt_ctl_pack(enum rt_ctl_cmd cmd, enum rt_resp_mode mode, bool ud, bool inl, uint32_t size)
{
	return ((uint32_t)cmd << 28) | ((uint32_t)mode << 24) | ((uint32_t)ud << 23) | ((uint32_t)inl << 22) |
	       (size & 0x3fffffu);
}

struct rt_ep_cfg {
	uint32_t max_msg;	/* largest payload */
	uint32_t max_inline;	/* max_inline_data requested for the RC QP */
	uint32_t ud_max_inline; /* for the UD QP */
	uint32_t sq_depth, rq_depth;
	bool ud;    /* also create a UD QP */
	bool rc_qp; /* create the RC QP here (false: rdma_cm creates it) */
};

/* A datagram QP with its CQs and addressing: the one of an ep not in use now (rt_ep_dgram_use swaps it in). */
struct rt_dgram {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint32_t rqpn, max_inline, sq_out, rq_posted;
};

struct rt_ep {
	struct ibv_context *ctx; /* borrowed */
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *scq, *rcq, *ud_scq, *ud_rcq;
	struct ibv_qp *qp, *ud_qp;
	struct rdma_cm_id *cm_id; /* when the RC QP belongs to rdma_cm (rdma_destroy_qp) */
	struct ibv_ah *ud_ah;
	uint32_t ud_rqpn;
	uint8_t *buf;
	size_t buf_len;
	struct ibv_mr *mr;
	struct rt_ep_cfg cfg;
	uint64_t raddr; /* the peer's payload area and its rkey, for RDMA WRITE */
	uint32_t rkey;
	uint32_t sq_out, ud_sq_out; /* posted send WRs not yet retired by a completion */
	uint32_t rq_posted, ud_rq_posted;
	/* SRD (EFA) beside UD: the ud_* fields (and cfg.ud_max_inline) hold the datagram QP in use, dg_srd says which;
	 * dg_other holds the other one (all NULL when the ep has one datagram QP type only) */
	bool dg_srd;
	bool srd_rnr_retry; /* the SRD QP takes IBV_QP_RNR_RETRY at RTS (efadv caps) */
	struct rt_dgram dg_other;
};

static inline uint8_t *rt_ep_send_area(const struct rt_ep *ep)
{
	return ep->buf;
}
static inline uint8_t *rt_ep_data(const struct rt_ep *ep)
{
	return ep->buf + ep->cfg.max_msg + RT_DATA_OFF;
}
static inline uint64_t rt_ep_data_addr(const struct rt_ep *ep)
{
	return (uintptr_t)rt_ep_data(ep);
}

/* Creates PD, CQs, buffer + MR and (cfg->rc_qp) the RC QP in INIT-less RESET state, plus the UD QP when cfg->ud.
 * On failure everything created is released and err names the object ("cannot create cq: ..."). */
int rt_ep_create(struct rt_ep *ep, struct ibv_context *ctx, const struct rt_ep_cfg *cfg, struct rt_error *err);
void rt_ep_destroy(struct rt_ep *ep);
/* Adds the UD CQs and QP (max inline ud_max_inline) to a created ep (rt_ep_create does it when cfg->ud). On failure
 * err names the object; what was created stays for rt_ep_destroy. */
int rt_ep_create_ud(struct rt_ep *ep, const struct rt_ep_cfg *cfg, uint32_t ud_max_inline, struct rt_error *err);
/* Adds an SRD QP (EFA, efadv_create_qp_ex; max inline max_inline) with its CQs to a created ep, beside its UD QP (in
 * dg_other until rt_ep_dgram_use selects it). rnr_retry: the device lets RTS set the RNR retry count. On failure err
 * names the object; what was created stays for rt_ep_destroy. */
int rt_ep_create_srd(struct rt_ep *ep, const struct rt_ep_cfg *cfg, uint32_t max_inline, bool rnr_retry,
		     struct rt_error *err);
/* Makes the ud_* fields of ep hold the SRD QP (srd) or the UD QP; a no-op when they already do. Never fails: a QP type
 * the ep does not have leaves ud_qp NULL (callers check). Only between phases: nothing of the other may be in use. */
void rt_ep_dgram_use(struct rt_ep *ep, bool srd);
/* The UD (srd false) or SRD QP of ep, in use or not; NULL when it has none. */
struct ibv_qp *rt_ep_dgram_qp(const struct rt_ep *ep, bool srd);
/* "srd" or "ud": the datagram QP type the ud_* fields hold now (for messages). */
const char *rt_ep_dgram_name(const struct rt_ep *ep);
/* The RC QP init attributes used for this ep (for rdma_create_qp). */
void rt_ep_qp_init_attr(const struct rt_ep *ep, struct ibv_qp_init_attr *a);

/* Loopback addressing of one port. */
struct rt_addr {
	int port;
	int gid_index; /* -1: no GRH (InfiniBand with LID only) */
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	uint8_t tclass;	     /* GRH traffic class (RoCE: DSCP << 2 | ECN), only with a GRH */
	uint8_t sl;	     /* service level (RoCE: the priority the provider maps it to) */
	uint16_t pkey_index; /* P_Key table index of both QPs */
};
/* Moves ep's RC QP to RTS connected to QP number rqpn at addr (INIT/RTR/RTS). */
int rt_ep_rc_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err);
/* Moves ep's UD QP to RTS and creates the address handle to the peer UD QP rqpn at addr. */
int rt_ep_ud_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err);
/* The same for ep's SRD QP and the peer SRD QP rqpn (INIT with P_Key index, port and Q_Key, RTR, RTS with the send
 * PSN and, where the device allows it, rnr_retry 7: as libfabric's efa provider brings SRD QPs up), and posts its
 * receives. */
int rt_ep_srd_connect(struct rt_ep *ep, const struct rt_addr *addr, uint32_t rqpn, struct rt_error *err);

/* Posts receives until rq_posted (or ud_rq_posted) reaches the configured depth. */
int rt_ep_fill_recv(struct rt_ep *ep, bool ud, struct rt_error *err);
/* Posts one send WR: op SEND/WRITE of size bytes from the send area (inline or from the MR), imm_cmd != 0: a control
 * SEND_WITH_IMM with no payload. wr_id = number of WRs the completion retires (0 unsignaled). Returns 0 or the errno of
 * ibv_post_send (ENOMEM when the SQ is full). */
int rt_ep_post(struct rt_ep *ep, bool ud, enum rt_opcode op, uint32_t size, bool inl, bool signaled, uint64_t retires,
	       uint32_t imm_cmd);
/* Largest post list rt_ep_post_list takes. */
#define RT_POST_LIST_MAX 64u
/* Posts k WRs (op, size from the send area, inline or not) on the RC QP in one ibv_post_send call, signaling the WR
 * that completes each interval of n_sig (*since counts the unsignaled WRs before it and is advanced). Counts every WR
 * the provider took (those before *bad on failure) in sq_out. Returns 0 or the errno of ibv_post_send (ENOMEM: full). */
int rt_ep_post_list(struct rt_ep *ep, enum rt_opcode op, uint32_t size, bool inl, uint32_t k, uint32_t n_sig,
		    uint32_t *since);
/* Polls a send CQ once (up to 16 completions), retiring WRs; returns completions seen (>= 0) or -EIO with err. */
int rt_ep_poll_send(struct rt_ep *ep, bool ud, struct rt_error *err);

/* Sets err for a completion with an error status (EIO; RNR and transport retries exceeded say what they mean). */
int rt_wc_error(const struct ibv_wc *wc, const char *what, struct rt_error *err);
/* Sets err for a failed ibv_post_send of ep and returns the errno: ENOMEM while the send queue is not full (by the
 * engine's count of WRs not yet retired) is named as such, not as a full queue; an error completion already
 * waiting on the send CQ (the QP failed before this post) is reported instead, as EIO. */
int rt_post_error(struct rt_ep *ep, bool ud, int rc, enum rt_opcode op, uint32_t size, bool inl, struct rt_error *err);

/*
 * The loopback control channel of a device without RC QPs (EFA: UD and SRD only): the control words of the RC path,
 * passed through memory between the measuring thread and the responder thread. seq counts words posted, ack the
 * words the responder has applied.
 */
struct rt_local_ctl {
	_Atomic uint32_t word, seq, ack;
};

/* Responder: reflects ping-pongs, sinks receives, follows PHASE commands, stops at END. */
struct rt_resp {
	struct rt_local_ctl *ctl; /* no RC QP: control words come from here (NULL: on the RC QP) */
	uint32_t ctl_seen;
	struct rt_ep *ep;
	enum rt_resp_mode mode;
	bool ud, inl, ended;
	uint32_t size, seq;
	uint64_t events;     /* messages, control words and write flags handled: progress, for idle detection */
	unsigned idle_steps; /* steps since the RC receive CQ was last polled (modes that wait on something else) */
};
/* Steps between two polls of the RC receive CQ (control words) in a mode that waits for something else. */
#define RT_RESP_CTL_EVERY 64u
/* One non-blocking step: polls only what the current mode waits for (SINK: the receive CQs; PP_SEND: the receive CQ
 * of its QP type; PP_WRITE: the flag byte), the RC receive CQ every RT_RESP_CTL_EVERY steps otherwise, and its own
 * send CQ only when half a send queue is posted. Returns 0 (call again), or an errno + err (a completion error: EIO). */
int rt_resp_step(struct rt_resp *r, struct rt_error *err);

/* Client side of a link. */
struct rt_client {
	struct rt_ep *ep;
	const struct rt_clock *clk;
	volatile sig_atomic_t *stop;
	volatile sig_atomic_t *peer_dead; /* loopback: set by the responder thread when it fails */
	double timeout_ns;		  /* longest wait for any single answer */
	struct rdma_event_channel *cm_ch; /* two-node: checked for DISCONNECTED while waiting */
	bool yield;			  /* sched_yield() while waiting: the responder shares our only CPU */
	bool in_sink;			  /* the last phase the responder acknowledged is SINK */
	uint32_t post_list;		  /* rt_client_rate: WRs per ibv_post_send, 0 or 1 = one */
	struct rt_local_ctl *ctl;	  /* no RC QP (loopback only): control words through memory */
	bool rate_ud;			  /* rt_client_rate sends on the UD QP (no RC QP) */
	bool dg_srd; /* the next phase's datagram QP is the SRD one (EFA), not UD: rt_client_phase switches both sides */
};
/* Sends PHASE and waits for its ACK. */
int rt_client_phase(struct rt_client *c, enum rt_resp_mode mode, bool ud, bool inl, uint32_t size,
		    struct rt_error *err);
/* Sends END (no answer expected) after draining the send queues. */
int rt_client_end(struct rt_client *c, struct rt_error *err);
/* n latency samples (ns) of one cell; adds thread CPU time to *cpu_ns. Sets the responder's phase itself (not for a
 * post->completion cell when the responder is already in SINK, which ignores size, inline and QP type). */
int rt_client_lat(struct rt_client *c, enum rt_opcode op, enum rt_qp_type qpt, enum rt_lat_kind kind, uint32_t size,
		  bool inl, size_t n, double *out, double *cpu_ns, struct rt_error *err);
/* One throughput repetition on RC: posts for about duration_ns with one signaled WR every n_sig; responder must be in
 * SINK. Fills msgs, wall ns, thread CPU ns, ENOMEM count, and the busy time: ns spent inside ibv_post_send (post_ns)
 * and inside the ibv_poll_cq calls that returned completions (reap_ns), timed with rdtsc around each call and converted
 * with the TSC rate measured over the repetition itself (no clock_gettime per WR); busy_timed is false where there is
 * no TSC (then post_ns = reap_ns = 0). */
struct rt_rate_rep {
	uint64_t msgs, enomem;
	double wall_ns, cpu_ns;
	double post_ns, reap_ns;
	bool busy_timed;
};
int rt_client_rate(struct rt_client *c, enum rt_opcode op, uint32_t size, bool inl, uint32_t n_sig, double duration_ns,
		   struct rt_rate_rep *out, struct rt_error *err);
/* CQ moderation on the RC send CQ: fills m (supported=false with the reason when ibv_modify_cq refuses). */
int rt_client_cqmod(struct rt_client *c, enum rt_opcode op, double duration_ns, struct rt_cq_moderation *m,
		    struct rt_error *err);

/* rdma_cm private data (network byte order on the wire). */
struct rt_hello_client {
	uint32_t magic;
	uint16_t version, flags;
	uint32_t max_msg, max_inline, rq_depth, rkey;
	uint64_t addr;
} __attribute__((packed));
struct rt_hello_server {
	uint32_t magic;
	uint16_t version, status; /* status 0 ok, else an errno and reason */
	uint32_t max_inline, rkey;
	uint64_t addr;
	char reason[64];
	uint32_t dev_max_inline; /* the server's own max inline data (its device, capped by --max-inline); absent (0)
				    from servers before it: then max_inline is the client's value */
} __attribute__((packed));

/* Waits (bounded) for the next CM event on ch; returns 0 with *ev (ack it), ETIMEDOUT, EINTR (stop) or an errno. */
int rt_cm_next(struct rdma_event_channel *ch, int timeout_ms, volatile sig_atomic_t *stop, struct rdma_cm_event **ev,
	       struct rt_error *err);
/* Splits "host[:port]" (IPv6 in brackets) and resolves it; *ai freed with freeaddrinfo. */
int rt_resolve(const char *spec, int default_port, bool passive, struct addrinfo **ai, struct rt_error *err);

#endif
