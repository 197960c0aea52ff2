// SPDX-License-Identifier: MIT
/*
 * The agent's kernel sockets. The busy check sends RDMA_NLDEV_CMD_GET (device name -> index) and then a
 * RDMA_NLDEV_CMD_RES_QP_GET dump for that index, and counts the QP entries that carry a pid (user QPs) other than
 * the agent's own. Chosen over parsing `rdma resource show qp`: no fork/exec of iproute2 at each retry, no dependence
 * on its text format, and it works in a unit without /usr/sbin/rdma. Device and link events come from the uevent and
 * rtnetlink multicast groups, which need no udev and no polling.
 */
#include "rdmanl.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NL_BUF_BYTES 32768

static int nl_socket(int proto, unsigned groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, proto);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Sends one nldev request (flags NLM_F_REQUEST | extra) with an optional u32 DEV_INDEX attribute. */
static int nl_send(int fd, int cmd, unsigned extra, int dev_index, uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct nlattr a;
		uint32_t v;
	} req;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(0);
	req.h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	req.h.nlmsg_flags = NLM_F_REQUEST | extra;
	req.h.nlmsg_seq = seq;
	if (dev_index >= 0) {
		req.a.nla_len = NLA_HDRLEN + sizeof(uint32_t);
		req.a.nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
		req.v = (uint32_t)dev_index;
		req.h.nlmsg_len = NLMSG_LENGTH(NLA_HDRLEN + sizeof(uint32_t));
	}
	return sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? -1 : 0;
}

struct walk {
	const char *device; /* GET: the name looked for */
	int dev_index;	    /* GET: found index */
	pid_t self;
	int qps; /* RES_QP_GET: user QPs of other processes */
};

/* Visits the attributes in [p, p+len) at nesting depth; counts QP entries with a foreign pid. */
static void walk_attrs(const unsigned char *p, size_t len, struct walk *w, int depth)
{
	while (len >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		size_t alen = a->nla_len, step = NLA_ALIGN(alen);
		const unsigned char *data = p + NLA_HDRLEN;
		int type = a->nla_type & NLA_TYPE_MASK;

		if (alen < NLA_HDRLEN || alen > len)
			return;
		if (depth == 0 && type == RDMA_NLDEV_ATTR_DEV_INDEX && alen >= NLA_HDRLEN + 4)
			memcpy(&w->dev_index, data, 4);
		if (depth == 0 && type == RDMA_NLDEV_ATTR_DEV_NAME && w->device &&
		    strncmp((const char *)data, w->device, alen - NLA_HDRLEN) == 0 &&
		    strlen(w->device) < alen - NLA_HDRLEN)
			w->device = NULL; /* matched: the index of this message is the one */
		if (type == RDMA_NLDEV_ATTR_RES_QP && depth == 0)
			walk_attrs(data, alen - NLA_HDRLEN, w, 1);
		if (type == RDMA_NLDEV_ATTR_RES_QP_ENTRY && depth == 1) {
			struct walk e = { .self = w->self, .dev_index = -1 };

			walk_attrs(data, alen - NLA_HDRLEN, &e, 2);
			w->qps += e.qps;
		}
		if (type == RDMA_NLDEV_ATTR_RES_PID && depth == 2 && alen >= NLA_HDRLEN + 4) {
			uint32_t pid;

			memcpy(&pid, data, 4);
			if (pid && (pid_t)pid != w->self)
				w->qps = 1;
		}
		if (step > len)
			return;
		p += step;
		len -= step;
	}
}

/* Reads the replies of request seq until NLMSG_DONE (or the one reply of a non-dump). Returns 0 or an errno. */
static int nl_collect(int fd, uint32_t seq, bool dump, struct walk *w, bool name_lookup)
{
	static unsigned char buf[NL_BUF_BYTES];

	for (int rounds = 0; rounds < 100000; rounds++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t got;

		if (poll(&pfd, 1, 2000) <= 0)
			return ETIMEDOUT;
		got = recv(fd, buf, sizeof(buf), 0);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)got); h = NLMSG_NEXT(h, got)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error)
					return -e->error;
				return 0;
			}
			if (name_lookup) {
				struct walk one = { .device = w->device, .dev_index = -1 };

				walk_attrs(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, &one, 0);
				if (!one.device && w->dev_index < 0)
					w->dev_index = one.dev_index;
			} else {
				walk_attrs(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, w, 0);
			}
			if (!dump)
				return 0;
		}
	}
	return EIO;
}

int rt_agent_qp_count(const char *device, pid_t self, int *n, struct rt_error *err)
{
	struct walk w = { .device = device, .dev_index = -1, .self = self };
	int fd = nl_socket(NETLINK_RDMA, 0), rc;

	*n = 0;
	if (fd < 0)
		return rt_error_set(err, errno, "rdma netlink: %s", strerror(errno));
	if (nl_send(fd, RDMA_NLDEV_CMD_GET, NLM_F_DUMP, -1, 1) != 0) {
		rc = rt_error_set(err, errno, "rdma netlink: device list: %s", strerror(errno));
		goto out;
	}
	if ((rc = nl_collect(fd, 1, true, &w, true))) {
		rt_error_set(err, rc, "rdma netlink: device list: %s", strerror(rc));
		goto out;
	}
	if (w.dev_index < 0) {
		rc = rt_error_set(err, ENODEV, "rdma netlink: no device '%s'", device);
		goto out;
	}
	if (nl_send(fd, RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_DUMP, w.dev_index, 2) != 0) {
		rc = rt_error_set(err, errno, "rdma netlink: QPs of '%s': %s", device, strerror(errno));
		goto out;
	}
	if ((rc = nl_collect(fd, 2, true, &w, false))) {
		rt_error_set(err, rc, "rdma netlink: QPs of '%s': %s", device, strerror(rc));
		goto out;
	}
	*n = w.qps;
out:
	close(fd);
	return rc;
}

int rt_agent_uevent_open(struct rt_error *err)
{
	int fd = nl_socket(NETLINK_KOBJECT_UEVENT, 1);

	if (fd < 0)
		rt_error_set(err, errno, "uevent socket: %s", strerror(errno));
	return fd;
}

int rt_agent_rtnl_open(struct rt_error *err)
{
	int fd = nl_socket(NETLINK_ROUTE, RTMGRP_LINK);

	if (fd < 0)
		rt_error_set(err, errno, "rtnetlink socket: %s", strerror(errno));
	return fd;
}

int rt_agent_events_drain(int fd, int is_uevent)
{
	static char buf[NL_BUF_BYTES];
	int hits = 0;

	for (int i = 0; i < 1000; i++) {
		ssize_t got = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			/* EAGAIN: drained; ENOBUFS: events were lost, a rescan covers them */
			return errno == ENOBUFS ? hits + 1 : hits;
		}
		if (got == 0)
			return hits;
		buf[got] = '\0';
		if (!is_uevent) {
			hits++;
			continue;
		}
		/* "ACTION@DEVPATH\0KEY=VALUE\0...": wake for infiniband and net devices */
		for (ssize_t off = 0; off < got; off += (ssize_t)strlen(buf + off) + 1)
			if (!strcmp(buf + off, "SUBSYSTEM=infiniband") || !strcmp(buf + off, "SUBSYSTEM=net")) {
				hits++;
				break;
			}
	}
	return hits;
}
