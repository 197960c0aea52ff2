/* SPDX-License-Identifier: MIT */
/*
 * `rtune agent`, the per-node service (docs/agent.md): watches the node's RDMA devices, calibrates a port when it is
 * due and may be disturbed, imports the probe spool and re-tunes per application, and publishes the resulting
 * profile (with operator pins and the confidence guard applied) to every configured target.
 */
#ifndef RT_AGENT_H
#define RT_AGENT_H

#include <stdbool.h>

struct rt_agent_opts {
	const char *config;   /* config file; NULL = RT_AGENT_CONFIG_DEFAULT, absent = built-in defaults */
	bool once;	      /* one pass (calibrating what is due, on demand), then exit */
	bool dry_run;	      /* decide and log what would be published; calibrate nothing, write nothing */
	const char *self_exe; /* the rtune binary that runs calibrate/tune (NULL = /proc/self/exe) */
};

/* Runs the agent. Returns an exit code: 0 ok (a SIGTERM ends a long-running agent with 0), 1 failure (with --once:
 * a publication or a calibration failed), 2 bad configuration. */
int rt_agent_run(const struct rt_agent_opts *o);

#endif
