/* SPDX-License-Identifier: MIT */
/*
 * Where `rtune calibrate` runs its two loopback threads (the measuring thread and the responder): two different
 * physical cores when there are (never SMT siblings of one core, read from topology/thread_siblings_list), isolated
 * CPUs first (the kernel's isolated list), NUMA-local to the device, CPU 0 last; with the CPU frequency governor of
 * each and a warning for every fact that makes the run less trustworthy. Reads a sysfs tree under a root directory
 * (tests use a fake one); pure otherwise: the caller pins.
 */
#ifndef RT_CPUPLACE_H
#define RT_CPUPLACE_H

#include <stdbool.h>
#include <stddef.h>

#include <rtune/error.h>

#define RT_CPUPLACE_MAX 4096

struct rt_cpuplace_req {
	const char *sys_root; /* the sysfs mount ("/sys"); NULL = "/sys" */
	const int *allowed;   /* CPUs this process may run on (online and in its affinity mask), ascending */
	size_t n_allowed;
	const int *local; /* the device's local CPUs (its local_cpus), n_local 0 = unknown: every CPU counts as local */
	size_t n_local;
	int dev_node;  /* the device's NUMA node, -1 unknown */
	int want_cpu;  /* --cpu, -1 = choose */
	bool remote;   /* measure from a CPU outside dev_node (--numa remote) */
	bool need_two; /* a responder thread needs its own CPU too (loopback) */
};

struct rt_cpuplace {
	int cpu;	     /* measuring thread */
	int resp_cpu;	     /* responder thread (== cpu when there is no other choice), -1 when !need_two */
	int cpu_node;	     /* NUMA node of cpu, -1 unknown */
	bool cpu_isolated;   /* in the isolated list */
	bool resp_isolated;  /* likewise */
	bool smt_siblings;   /* cpu and resp_cpu are two hardware threads of one core */
	bool shared;	     /* cpu == resp_cpu */
	bool siblings_known; /* thread_siblings_list was readable for cpu */
	char governor[24];   /* cpufreq scaling_governor of cpu, "" when there is none (a VM, no cpufreq) */
	char resp_governor[24];
	char warning[320]; /* "; "-separated warnings, "" when none */
};

/*
 * Chooses the CPUs. Returns 0 with out filled, or EINVAL with err: want_cpu not allowed, no allowed CPU outside the
 * device's node for remote (or the device has no node), no allowed CPU at all. Never pins anything.
 */
int rt_cpuplace_pick(const struct rt_cpuplace_req *req, struct rt_cpuplace *out, struct rt_error *err);

/* NUMA node of cpu under sys_root (the nodeN link in its cpu directory), -1 when unknown. */
int rt_cpuplace_node(const char *sys_root, int cpu);

#endif
