// SPDX-License-Identifier: MIT
/*
 * `rtune serve`'s engine (see rt_engine.h): listens with librdmacm, accepts one calibrating client at a time (others
 * are rejected with "busy"), gives it a QP, CQs and buffer sized from its private data, runs the responder until the
 * client ends, disconnects or fails, releases everything, and stops cleanly when asked.
 */
#include "rt_engine.h"
#include "rt_link.h"
#include "devinfo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RT_SERVE_IDLE_NS 60000000000ull

static void logf_(const struct rt_serve_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(const struct rt_serve_opts *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->log(o->log_ctx, line);
}

static void peer_name(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char host[64] = "?";

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
	snprintf(buf, len, "%s", host);
}

static void reject(struct rdma_cm_id *id, int status, const char *reason)
{
	struct rt_hello_server hs;

	memset(&hs, 0, sizeof(hs));
	hs.magic = htonl(RT_HELLO_MAGIC);
	hs.version = htons(RT_PROTO_VERSION);
	hs.status = htons((uint16_t)status);
	snprintf(hs.reason, sizeof(hs.reason), "%.*s", (int)sizeof(hs.reason) - 1, reason);
	rdma_reject(id, &hs, sizeof(hs));
}

/* Handles CM events that arrive while a client is being served. Returns ECONNRESET when our client went away. */
static int side_events(struct rdma_event_channel *ch, struct rdma_cm_id *cur, const struct rt_serve_opts *o)
{
	struct rdma_cm_event *ev;
	int rc = 0;

	while (rt_cm_next(ch, 1, NULL, &ev, NULL) == 0) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			char who[64];

			peer_name(ev->id, who, sizeof(who));
			reject(ev->id, EBUSY, "busy: serving another client, retry later");
			logf_(o, "rejected %s: busy with another client", who);
		} else if (ev->id == cur &&
			   (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)) {
			rc = ECONNRESET;
		}
		rdma_ack_cm_event(ev);
		if (rc)
			break;
	}
	return rc;
}

/* The max inline data of each device clients came through, probed once per device. */
struct inline_cache {
	struct ibv_context *ctx[8];
	uint32_t max[8];
	int n;
};

/*
 * The server's max inline data on ctx: the device's (probed with pd on first use, then cached), capped by
 * o->max_inline. Returns 0 with *out, or the errno of the probe with err (QP creation failing for another reason than
 * the size).
 */
static int server_max_inline(struct inline_cache *ic, struct ibv_context *ctx, struct ibv_pd *pd,
			     const struct rt_serve_opts *o, uint32_t *out, struct rt_error *err)
{
	uint32_t v = 0;
	int i, rc;

	for (i = 0; i < ic->n && ic->ctx[i] != ctx; i++)
		;
	if (i == ic->n) {
		rc = rt_devinfo_probe_max_inline(pd, IBV_QPT_RC, 1u << 16, &v, NULL);
		if (rc && rc != EOPNOTSUPP && rc != EINVAL)
			return rt_error_set(err, rc, "cannot probe the device's max inline data: %s", strerror(rc));
		if (ic->n < 8) {
			ic->ctx[ic->n] = ctx;
			ic->max[ic->n++] = v;
		}
	} else {
		v = ic->max[i];
	}
	if (o->max_inline > 0 && (uint32_t)o->max_inline < v)
		v = (uint32_t)o->max_inline;
	*out = v;
	return 0;
}

/* Serves one client whose CONNECT_REQUEST (private data in hc) arrived on id. */
static void serve_client(struct rdma_event_channel *ch, struct rdma_cm_id *id, const struct rt_hello_client *hc_net,
			 const struct rt_serve_opts *o, struct inline_cache *ic)
{
	uint32_t own_max = 0;
	struct rt_ep ep;
	struct rt_ep_cfg cfg;
	struct rt_error err;
	struct rt_hello_server hs;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	struct rt_resp r;
	char who[64];
	int rc;
	bool accepted = false, vanished = false;
	uint64_t last_events, last_change;

	memset(&ep, 0, sizeof(ep));
	rt_error_clear(&err);
	peer_name(id, who, sizeof(who));
	if (ntohl(hc_net->magic) != RT_HELLO_MAGIC || ntohs(hc_net->version) != RT_PROTO_VERSION) {
		reject(id, EPROTO, "not an rtune calibrate client of this version");
		logf_(o, "rejected %s: not an rtune calibrate client of protocol version %d", who, RT_PROTO_VERSION);
		rdma_destroy_id(id);
		return;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.max_msg = ntohl(hc_net->max_msg);
	cfg.max_inline = ntohl(hc_net->max_inline);
	cfg.rq_depth = ntohl(hc_net->rq_depth);
	cfg.sq_depth = 64;
	if (cfg.max_msg == 0 || cfg.max_msg > RT_ENGINE_MAX_MSG || cfg.rq_depth == 0 || cfg.rq_depth > 16384) {
		reject(id, EINVAL, "bad parameters");
		logf_(o, "rejected %s: bad parameters (max message %u, receive queue %u)", who, cfg.max_msg,
		      cfg.rq_depth);
		rdma_destroy_id(id);
		return;
	}
	rc = rt_ep_create(&ep, id->verbs, &cfg, &err);
	if (!rc)
		rc = server_max_inline(ic, id->verbs, ep.pd, o, &own_max, &err);
	if (!rc) {
		/* negotiated: the client's value when this side can take it, else this side's maximum (the client
		 * then measures only sizes both sides send inline) */
		if (cfg.max_inline > own_max) {
			logf_(o, "client %s asks for %u bytes inline, this device takes %u: using %u", who,
			      cfg.max_inline, own_max, own_max);
			cfg.max_inline = own_max;
			ep.cfg.max_inline = own_max;
		}
		rt_ep_qp_init_attr(&ep, &qa);
		if (rdma_create_qp(id, ep.pd, &qa)) {
			rc = errno;
			rt_error_set(&err, rc, "cannot create an rc qp with max inline %u: %s", cfg.max_inline,
				     strerror(rc));
		} else {
			ep.qp = id->qp;
			ep.cm_id = id;
		}
	}
	if (!rc)
		rc = rt_ep_fill_recv(&ep, false, &err);
	if (rc) {
		reject(id, rc, err.text);
		logf_(o, "rejected %s: %s", who, err.text);
		goto out;
	}
	ep.raddr = be64toh(hc_net->addr);
	ep.rkey = ntohl(hc_net->rkey);
	memset(&hs, 0, sizeof(hs));
	hs.magic = htonl(RT_HELLO_MAGIC);
	hs.version = htons(RT_PROTO_VERSION);
	hs.max_inline = htonl(cfg.max_inline);
	hs.dev_max_inline = htonl(own_max);
	hs.rkey = htonl(ep.mr->rkey);
	hs.addr = htobe64(rt_ep_data_addr(&ep));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &hs;
	cp.private_data_len = sizeof(hs);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		logf_(o, "cannot accept %s: %s", who, strerror(errno));
		goto out;
	}
	accepted = true;
	{
		struct rdma_cm_event *ev;

		rc = rt_cm_next(ch, 8000, o->stop, &ev, &err);
		if (rc) {
			logf_(o, "client %s: %s", who, err.text);
			goto out;
		}
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			logf_(o, "client %s: %s instead of ESTABLISHED", who, rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			goto out;
		}
		rdma_ack_cm_event(ev);
	}
	logf_(o, "client %s connected (max message %u, max inline %u)", who, cfg.max_msg, cfg.max_inline);
	memset(&r, 0, sizeof(r));
	r.ep = &ep;
	r.mode = RT_MODE_SINK;
	last_events = 0;
	last_change = rt_clock_mono_ns();
	for (unsigned long step = 1;; step++) {
		rc = rt_resp_step(&r, &err);
		if (rc) {
			logf_(o, "client %s: %s", who, err.text);
			break;
		}
		if (r.ended) {
			logf_(o, "client %s finished", who);
			break;
		}
		if ((step & 4095) == 0) {
			if (o->stop && *o->stop) {
				logf_(o, "client %s: stopping on signal", who);
				break;
			}
			if (side_events(ch, id, o) == ECONNRESET) {
				struct rt_error ignored;

				vanished = true;
				/* the END may still sit in the receive CQ: the disconnect can overtake its completion */
				for (int k = 0; k < 100000 && !r.ended; k++)
					if (rt_resp_step(&r, &ignored))
						break;
				logf_(o, r.ended ? "client %s finished" : "client %s disconnected before finishing",
				      who);
				break;
			}
			/* a client sends a control word at least every rate cell (<= 100 ms) or sample: silence for this
			 * long means it is gone without a disconnect (e.g. the link went away) */
			if (r.events != last_events) {
				last_events = r.events;
				last_change = rt_clock_mono_ns();
			} else if (rt_clock_mono_ns() - last_change > RT_SERVE_IDLE_NS) {
				logf_(o, "client %s silent for %d s: dropping it", who,
				      (int)(RT_SERVE_IDLE_NS / 1000000000ull));
				break;
			}
		}
	}
out:
	if (accepted && !vanished) {
		struct rdma_cm_event *ev;

		rdma_disconnect(id);
		/* our DISCONNECTED, bounded */
		for (int i = 0; i < 10 && rt_cm_next(ch, 300, NULL, &ev, NULL) == 0; i++) {
			bool mine = ev->id == id && ev->event == RDMA_CM_EVENT_DISCONNECTED;

			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
				reject(ev->id, EBUSY, "busy: serving another client, retry later");
			rdma_ack_cm_event(ev);
			if (mine)
				break;
		}
	}
	rt_ep_destroy(&ep);
	rdma_destroy_id(id);
}

int rt_engine_serve(const struct rt_serve_opts *o, struct rt_error *err)
{
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *lid = NULL;
	struct addrinfo *ai = NULL;
	struct inline_cache ic = { .n = 0 };
	int rc, served = 0, port = o->port ? o->port : RT_ENGINE_DEFAULT_PORT;
	char spec[300];

	if (o->bind && strchr(o->bind, ':') && o->bind[0] != '[')
		snprintf(spec, sizeof(spec), "[%s]:%d", o->bind, port);
	else
		snprintf(spec, sizeof(spec), "%s:%d", o->bind ? o->bind : "0.0.0.0", port);
	rc = rt_resolve(spec, port, true, &ai, err);
	if (rc)
		return rc;
	ch = rdma_create_event_channel();
	if (!ch) {
		rc = errno ? errno : ENODEV;
		rt_error_set(err, rc, "cannot open the rdma_cm event channel: %s (is rdma_ucm loaded?)", strerror(rc));
		goto out;
	}
	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP)) {
		rc = errno;
		rt_error_set(err, rc, "cannot create an rdma_cm id: %s", strerror(rc));
		goto out;
	}
	if (rdma_bind_addr(lid, ai->ai_addr)) {
		rc = errno;
		rt_error_set(err, rc, "cannot bind to '%s': %s", spec, strerror(rc));
		goto out;
	}
	if (rdma_listen(lid, 4)) {
		rc = errno;
		rt_error_set(err, rc, "cannot listen on '%s': %s", spec, strerror(rc));
		goto out;
	}
	logf_(o, "listening on %s", spec);
	rc = 0;
	while (!(o->stop && *o->stop) && !(o->max_clients && served >= o->max_clients)) {
		struct rdma_cm_event *ev;
		struct rt_hello_client hc;
		struct rdma_cm_id *id;
		struct rt_error e;

		if (rt_cm_next(ch, 1000, o->stop, &ev, &e))
			continue; /* timeout or stop: the loop condition decides */
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		memset(&hc, 0, sizeof(hc));
		if (ev->param.conn.private_data)
			memcpy(&hc, ev->param.conn.private_data,
			       ev->param.conn.private_data_len < sizeof(hc) ? ev->param.conn.private_data_len
									    : sizeof(hc));
		id = ev->id;
		rdma_ack_cm_event(ev);
		serve_client(ch, id, &hc, o, &ic);
		served++;
	}
	logf_(o, "stopped after %d client(s)", served);
out:
	if (lid)
		rdma_destroy_id(lid);
	if (ch)
		rdma_destroy_event_channel(ch);
	if (ai)
		freeaddrinfo(ai);
	return rc;
}
