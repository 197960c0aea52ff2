/* SPDX-License-Identifier: MIT */
/*
 * What the agent asks the kernel directly: how many QPs other processes hold on a device (the rdma netlink
 * resource-tracking dump, the source of `rdma resource show qp`), and the event sources that wake it when a device
 * appears or a netdev changes (kernel uevents and rtnetlink link messages). All sockets are non-blocking and
 * close-on-exec; nothing here polls.
 */
#ifndef RT_AGENT_RDMANL_H
#define RT_AGENT_RDMANL_H

#include <rtune/error.h>

#include <sys/types.h>

/*
 * Counts the QPs on device held by user processes other than self (kernel QPs such as the GSI QP, which have no pid,
 * are not counted). Returns 0 and *n, ENODEV when the kernel knows no such device, or an errno (EPROTONOSUPPORT: no
 * rdma netlink; EPERM...) with err set.
 */
int rt_agent_qp_count(const char *device, pid_t self, int *n, struct rt_error *err);

/* Opens the kernel uevent socket (NETLINK_KOBJECT_UEVENT, group 1). Returns the fd or -1 with err set. */
int rt_agent_uevent_open(struct rt_error *err);
/* Opens an rtnetlink socket on the link group (RTM_NEWLINK/DELLINK: MTU, state). Returns the fd or -1 with err set. */
int rt_agent_rtnl_open(struct rt_error *err);
/*
 * Drains fd (either socket). Returns the number of messages that matter (a uevent of subsystem "infiniband" or
 * "net", or any link message), 0 when none did.
 */
int rt_agent_events_drain(int fd, int is_uevent);

#endif
