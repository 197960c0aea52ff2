/* SPDX-License-Identifier: MIT */
/*
 * The calibration engine behind `rtune calibrate` and `rtune serve`: measures, on a real RDMA device, latency vs message
 * size inline and not (ping-pong half round trip and post->completion), message rate vs signaling interval, and CQ
 * moderation, either in loopback (two QPs of one device/port connected to each other, the responder in a thread) or
 * against a `rtune serve` peer reached through librdmacm. Fills a struct rt_run (common/rt_model.h); nothing prints.
 */
#ifndef RT_ENGINE_H
#define RT_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rtune/error.h>
#include "rt_model.h"

#define RT_ENGINE_DEFAULT_PORT 18520 /* TCP-style port of `rtune serve` (rdma_cm port space RDMA_PS_TCP) */
#define RT_ENGINE_DEFAULT_BUDGET_S 20.0
#define RT_ENGINE_DEFAULT_SIZE_CAP 1024 /* largest size of the default grid, bytes */
#define RT_ENGINE_MAX_MSG (1u << 20)	/* largest --sizes value */
#define RT_ENGINE_MAX_SIZES 64
#define RT_ENGINE_MAX_LARGE 4

enum rt_numa_mode { RT_NUMA_LOCAL = 0, RT_NUMA_REMOTE, RT_NUMA_ALL };
/* How loopback RC QPs are connected: by the transport (rdma_cm on iWARP, by hand elsewhere), through rdma_cm to the
 * node's own address, or by hand (ibv_modify_qp INIT/RTR/RTS). */
enum rt_connect_mode { RT_CONNECT_AUTO = 0, RT_CONNECT_CM, RT_CONNECT_MANUAL };

struct rt_cal_opts {
	const char *dev_name;		     /* loopback: NULL = the first device with an ACTIVE port */
	int port;			     /* 0 = the first ACTIVE port */
	int gid_index;			     /* -1 = automatic (a RoCE v2 IPv4-mapped GID when there is one) */
	int tclass;			     /* GRH traffic class 0..255 (rdma_cm: the TOS), -1 = not set (0) */
	int sl;				     /* service level 0..15, -1 = not set (0); loopback only */
	int pkey_index;			     /* P_Key index, -1 = not set (0); loopback only */
	uint32_t sizes[RT_ENGINE_MAX_SIZES]; /* explicit sizes, ascending; n_sizes 0 = powers of two up to the limit */
	size_t n_sizes;
	uint32_t size_cap;	/* 0 = RT_ENGINE_DEFAULT_SIZE_CAP */
	bool ops[RT_OP__COUNT]; /* opcodes to measure */
	bool qpts
		[RT_QPT__COUNT]; /* QP types; UD is skipped (and said so in run->params) when unsupported or two-node */
	double budget_s;	 /* whole run, 0 = default */
	bool quick;
	uint64_t seed;
	int cpu;		/* -1 = automatic per numa */
	enum rt_numa_mode numa; /* RT_NUMA_ALL is handled by the caller (two runs); the engine takes LOCAL or REMOTE */
	uint32_t sq_depth;	/* 0 = default (256, quick 128, capped by the device) */
	/* load bands of the rate sweep (run->band_rate), besides the small-message band */
	uint32_t large_sizes[RT_ENGINE_MAX_LARGE]; /* large non-inline sizes (default 4096, 65536), n_large 0 = none */
	size_t n_large;
	uint32_t post_list; /* WRs per ibv_post_send of the post-list band (default 8), 0 or 1 = no such band */
	/* the concurrency band (loopback RC only): conc_qps QPs driven by conc_threads threads (default 4 x 2), capped
	 * by the device's max_qp and the CPUs the run may use; conc_qps 0 or 1 = no such band */
	uint32_t conc_qps, conc_threads;
	const char *peer;	      /* NULL = loopback, else "host[:port]" of `rtune serve` */
	enum rt_connect_mode connect; /* loopback only */
	const char *cm_addr;	      /* rdma_cm loopback: the own IPv4 address, NULL = from the port's GIDs/netdev */
	volatile sig_atomic_t *stop;  /* set asynchronously (SIGINT): the run ends as interrupted */
	/* optional callbacks, ctx passed back */
	void (*progress)(void *ctx, const char *phase, double frac, double eta_s);
	/* called once the device, port, environment and parameters are known and before measuring */
	int (*on_begin)(void *ctx, struct rt_run *run, struct rt_error *err);
	void *cb_ctx;
};

/* Sets defaults: both opcodes, RC and UD, auto device/port/GID/CPU, default budget, seed 1. */
void rt_cal_opts_init(struct rt_cal_opts *o);

/*
 * Runs one calibration into run (zeroed by the caller; release with rt_run_release()). run->status is set to complete,
 * interrupted (opts->stop was set: EINTR) or failed, and keeps every point measured before an interruption or failure.
 * Returns 0 or an errno with err: ENODEV no device, ENOENT unknown device (err lists the names), ENETDOWN port not
 * active, EHOSTUNREACH/ETIMEDOUT/ECONNREFUSED/ECONNRESET peer problems, EIO a completion error (err has
 * ibv_wc_status_str), EINTR interrupted, or what verbs returned. Every verbs and rdma_cm resource is released on return.
 */
int rt_engine_calibrate(const struct rt_cal_opts *opts, struct rt_run *run, struct rt_error *err);

/* One ACTIVE port of one device (`calibrate -d all`). */
struct rt_dev_port {
	char name[64];
	int port;
};
/*
 * Lists every ACTIVE port of every device, in device then port order, at most max into out (*n_out of them; 0 is not
 * an error: no port is active). Devices that cannot be opened or queried are passed over. Returns 0, or ENODEV with err
 * when there is no RDMA device at all.
 */
int rt_engine_active_ports(struct rt_dev_port *out, size_t max, size_t *n_out, struct rt_error *err);

struct rt_serve_opts {
	const char *bind; /* NULL = any address */
	int port;	  /* 0 = RT_ENGINE_DEFAULT_PORT */
	int max_clients;  /* stop after this many clients, 0 = until stopped */
	int max_inline;	  /* > 0: at most this much inline per client QP; 0 = the device's maximum */
	volatile sig_atomic_t *stop;
	void (*log)(void *ctx, const char *line); /* one line per client event, may be NULL */
	void *log_ctx;
};

/*
 * Serves calibrating clients one at a time until *stop (or max_clients). Each client gets its own QP, CQs and buffer,
 * released when it disconnects, vanishes (bounded waits) or errs; a client's failure is logged, not fatal. Returns 0
 * after a clean stop, or an errno + err when the listener cannot be set up (EADDRINUSE, EADDRNOTAVAIL, ENODEV...).
 */
int rt_engine_serve(const struct rt_serve_opts *opts, struct rt_error *err);

/* The run as JSON text (malloc'd, caller frees), including raw samples when with_samples; NULL when out of memory. */
char *rt_engine_run_json(const struct rt_run *run, bool with_samples);

#endif
