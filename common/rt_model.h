/* SPDX-License-Identifier: MIT */
/*
 * rtune's internal data model: what a node and its RDMA devices are (filled by probe/devinfo.c for `rtune devices`), what a
 * calibration run measured (filled by the benchmark engine, written by the store), and the names used for them in JSON,
 * SQLite and text output. Plain C structs with fixed-size strings and counted arrays; no verbs, SQLite or jansson types,
 * so the tuner and the tests can use them too.
 */
#ifndef RT_MODEL_H
#define RT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_NAME_LEN 64
#define RT_TEXT_LEN 256
#define RT_MAX_PORTS 8
#define RT_MAX_GIDS 64 /* valid GIDs kept per port (the pick sees the whole table; mlx5 RoCE has 255 slots) */

/* ---- node and devices ---------------------------------------------------------------------------------------- */

struct rt_node_info {
	char hostname[RT_TEXT_LEN];
	char machine_id[RT_NAME_LEN]; /* /etc/machine-id, "" when absent */
	char cpu_model[RT_TEXT_LEN];  /* "model name" of /proc/cpuinfo */
	char kernel[RT_TEXT_LEN];     /* uname -r */
	int cpu_count;		      /* online CPUs */
	int numa_nodes;		      /* nodes under /sys/devices/system/node, >= 1 */
};

struct rt_gid_info {
	int index;
	char gid[40];	 /* fe80:0000:...: the 8 groups of ibv_gid, as ibv_devinfo -v prints them */
	char type[12];	 /* "IB", "RoCE v1", "RoCE v2" ("IB/RoCE v1" when only sysfs said it), "" unknown */
	char netdev[16]; /* the netdev the GID belongs to (RoCE), "" when none or unknown */
};

struct rt_port_info {
	int port_num;
	char state[16];	      /* ibv_port_state_str(): "active", "down", ... */
	char link_layer[16];  /* "InfiniBand", "Ethernet" */
	int active_mtu_bytes; /* 256..4096 */
	int max_mtu_bytes;
	int lid;
	int gid_tbl_len;
	int gid_count;			      /* entries in gids[] */
	int gid_valid;			      /* valid GIDs in the whole table (> gid_count when over RT_MAX_GIDS) */
	char gid_source[24];		      /* "ibv_query_gid_table", "ibv_query_gid_ex" or "ibv_query_gid+sysfs" */
	int gid_pick;			      /* the default GID index (rt_devinfo_gid_pick), -1 = none */
	char gid_pick_reason[RT_TEXT_LEN];    /* why that one (or why none) */
	struct rt_gid_info gids[RT_MAX_GIDS]; /* valid (non-zero) GIDs only, by index */
};

struct rt_device_info {
	char name[RT_NAME_LEN]; /* ibv_get_device_name(): "mlx5_0", "rxe0" */
	char node_guid[24];	/* "0011:2233:4455:6677" */
	char transport[16];	/* "InfiniBand", "iWARP", ... */
	char fw_ver[RT_NAME_LEN];
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	/* key capabilities (ibv_query_device) */
	int max_qp;
	int max_qp_wr;
	int max_sge;
	int max_cqe;
	int max_qp_rd_atom;
	int max_mr;
	/* largest max_inline_data ibv_create_qp accepts, found by search; -1 = none: then *_errno says why (0 = not
	 * probed, EOPNOTSUPP = QP type unsupported, anything else = the probe failed and the maximum is unknown) */
	int max_inline_rc;
	int max_inline_ud;
	int max_inline_rc_errno;
	int max_inline_ud_errno;
	/* SRD (AWS EFA, through efadv): its max inline is the device's inline buffer (efadv inline_buf_size), -1 = none:
	 * then max_inline_srd_errno says why (0 = not probed, EOPNOTSUPP = not an EFA device, ENOENT = no libefa) */
	int max_inline_srd;
	int max_inline_srd_errno;
	/* EFA's device capabilities (efadv_query_device; rt_efa.h), efa false on every other device. Not stored. */
	struct {
		bool efa;
		uint32_t max_sq_wr, max_rq_wr, max_sq_sge, max_rq_sge;
		uint32_t inline_buf_size, max_rdma_size;
		bool rdma_read, rdma_write, rnr_retry;
	} efa;
	char error[RT_TEXT_LEN]; /* why the device could not be opened or queried, "" = fine (else only sysfs facts) */
	/* where the device sits: -1 = unknown / not a NUMA machine */
	int numa_node;
	char local_cpus[RT_TEXT_LEN]; /* cpulist, e.g. "0-15,32-47"; "" when unknown */
	/* PCIe, only for PCI devices (pci_addr != "") */
	char pci_addr[32];	     /* "0000:3b:00.0" */
	char pcie_speed[32];	     /* current_link_speed, e.g. "16.0 GT/s PCIe" */
	int pcie_width;		     /* current_link_width, 0 = unknown */
	int pcie_max_payload_bytes;  /* Device Control MPS, 0 = unknown (a VF's is its PF's) */
	int pcie_max_read_req_bytes; /* Device Control MRRS, 0 = unknown */
	char pcie_physfn[32];	     /* an SR-IOV VF: its PF's address, else "" */
	char pcie_ctrl_note[96];     /* why MPS/MRRS are unknown or where they came from, "" = read directly */
	int port_count;
	struct rt_port_info ports[RT_MAX_PORTS];
};

/* ---- calibration run ------------------------------------------------------------------------------------------ */

enum rt_opcode { RT_OP_SEND = 0, RT_OP_WRITE = 1, RT_OP__COUNT };
/* SRD: AWS EFA's Scalable Reliable Datagram (reliable, unordered, addressed like UD; created through efadv) */
enum rt_qp_type { RT_QPT_RC = 0, RT_QPT_UD = 1, RT_QPT_SRD = 2, RT_QPT__COUNT };
enum rt_lat_kind {
	RT_LAT_PINGPONG = 0, /* half of a ping-pong round trip */
	RT_LAT_POST_CQE = 1, /* ibv_post_send -> its send completion, one signaled WR in flight */
	RT_LAT__COUNT
};
enum rt_run_status { RT_RUN_RUNNING = 0, RT_RUN_COMPLETE, RT_RUN_INTERRUPTED, RT_RUN_FAILED };

/* One latency point: one (opcode, qp type, kind, size, inline?) cell of the latency grid. */
struct rt_lat_point {
	enum rt_opcode op;
	enum rt_qp_type qpt;
	enum rt_lat_kind kind;
	uint32_t msg_bytes;
	bool inl;
	uint32_t n_samples; /* samples measured for this point */
	double median_ns, p99_ns, p999_ns, mean_ns, min_ns;
	double ci_lo_ns, ci_hi_ns; /* CI of the median (level in the run), widened by the between-block spread */
	double cpu_ns_per_op;	   /* thread CPU time per operation */
	uint32_t n_blocks;	   /* engine only (not stored): blocks the samples were measured in, 0 = unknown */
	uint32_t n_rounds;	   /* engine only (not stored): scheduler rounds that sampled it, 0 = unknown */
	bool remeasured;	   /* engine only (not stored): re-measured for an isolated verdict */
	uint32_t n_kept;	   /* raw samples kept (bounded), in samples_ns; 0 when none */
	float *samples_ns;	   /* owned by the run */
};

/* One throughput point: message rate when one WR in signal_interval is signaled. */
struct rt_rate_point {
	enum rt_opcode op;
	enum rt_qp_type qpt;
	uint32_t msg_bytes;
	bool inl;
	uint32_t signal_interval; /* N: one signaled WR every N */
	uint32_t sq_depth;	  /* send queue depth used */
	uint32_t reps;		  /* repetitions measured */
	double mops;		  /* median message rate over the repetitions, millions/s */
	double mops_lo, mops_hi;  /* min and max over the repetitions */
	double cpu_ns_per_msg;	  /* sender CPU busy per message: time inside ibv_post_send + polls that reaped */
	double post_ns_per_msg;	  /* engine only (not stored): the ibv_post_send part of cpu_ns_per_msg */
	uint64_t msgs;		  /* messages sent in total */
	uint64_t enomem;	  /* ibv_post_send ENOMEM seen (must stay 0) */
	uint32_t post_list;	  /* WRs per ibv_post_send call (a post list); 0 or 1 = one WR per call */
	uint32_t qps;		  /* concurrency band: QPs posting at once (0 or 1 = one) */
	uint32_t threads;	  /* concurrency band: sending threads, each owning qps / threads QPs (0 or 1 = one) */
};

/* The rate sweep's load bands: the small-message band (msg_bytes < RT_LARGE_MSG_BYTES, one WR per call, one QP) is the
 * one the signaling decision has always used; large messages, post lists and concurrency (several QPs driven by several
 * threads) are bands of their own, decided separately. */
#define RT_LARGE_MSG_BYTES 4096u
enum rt_rate_band { RT_BAND_SMALL = 0, RT_BAND_LARGE, RT_BAND_POST_LIST, RT_BAND_CONCURRENCY, RT_BAND__COUNT };
/* The band of a rate point; never fails. */
static inline enum rt_rate_band rt_rate_band_of(const struct rt_rate_point *p)
{
	if (p->qps > 1)
		return RT_BAND_CONCURRENCY;
	if (p->post_list > 1)
		return RT_BAND_POST_LIST;
	return p->msg_bytes >= RT_LARGE_MSG_BYTES ? RT_BAND_LARGE : RT_BAND_SMALL;
}
const char *rt_rate_band_name(enum rt_rate_band b); /* "small", "large", "post_list", "concurrency" */

/* CQ moderation, as measured: supported == false means ibv_modify_cq refused it, never faked. */
struct rt_cq_moderation {
	bool measured;
	bool supported;
	char reason[RT_TEXT_LEN]; /* why unsupported, from the error */
	uint32_t best_count;
	uint32_t best_period_us;
	double mops_off, mops_best;
};

struct rt_run_env {
	int cpu;	   /* CPU the measuring thread ran on */
	int cpu_numa_node; /* its NUMA node, -1 = unknown */
	int device_numa_node;
	bool numa_local;	    /* cpu_numa_node == device_numa_node (or no NUMA information) */
	char clock[32];		    /* "rdtscp", "lfence+rdtsc", "cntvct_el0" or "clock_gettime(CLOCK_MONOTONIC)" */
	double tsc_ghz;		    /* counter frequency in GHz (TSC or cntvct), 0 for clock_gettime */
	double clock_tick_ns;	    /* one counter tick, ns (1 for clock_gettime) */
	double clock_resolution_ns; /* smallest non-zero step seen between two back-to-back reads, ns (0 unknown) */
	char clocksource[32];	    /* kernel clocksource */
	char mode[16];		    /* "loopback" or "two-node" */
	char peer[RT_TEXT_LEN];	    /* peer address in two-node mode */
	/* CPU placement (probe/engine/rt_cpuplace.h) */
	int resp_cpu;			     /* loopback responder's CPU, -1 = none (two-node) or not pinned */
	bool cpu_isolated;		     /* the measuring CPU is in the kernel's isolated list */
	bool smt_siblings;		     /* measuring and responder CPUs are SMT siblings of one core */
	char governor[24];		     /* cpufreq governor of the measuring CPU, "" = none (no cpufreq) */
	char placement_warning[RT_TEXT_LEN]; /* what makes the placement less trustworthy, "" = nothing */
	/* two-node: max inline data of each side (the QPs use the smaller), 0 = loopback */
	uint32_t client_max_inline, server_max_inline;
};

struct rt_run {
	int64_t id;    /* store row id, 0 before it is stored */
	char uuid[40]; /* globally unique run id (node+run identity for imports) */
	struct rt_node_info node;
	struct rt_device_info dev;
	int port_num;
	int gid_index;
	struct rt_run_env env;
	char params[RT_TEXT_LEN * 6]; /* the command line's parameters, JSON text */
	int64_t started_ns, ended_ns; /* CLOCK_REALTIME */
	enum rt_run_status status;
	uint32_t max_inline_used; /* max_inline_data the QPs were created with */
	uint32_t sq_depth;
	size_t n_lat, n_rate;
	struct rt_lat_point *lat;   /* owned */
	struct rt_rate_point *rate; /* owned: the small-message band (the signaling decision's input) */
	size_t n_band_rate;
	struct rt_rate_point *band_rate; /* owned: the other load bands (large messages, post lists), any order */
	struct rt_cq_moderation cqmod[RT_OP__COUNT];
};

/* ---- names used in JSON, SQLite and text (stable: part of the public formats) -------------------------------- */

const char *rt_opcode_name(enum rt_opcode op);	       /* "send", "write" */
const char *rt_qp_type_name(enum rt_qp_type qpt);      /* "rc", "ud", "srd" */
const char *rt_lat_kind_name(enum rt_lat_kind kind);   /* "pingpong", "post_cqe" */
const char *rt_run_status_name(enum rt_run_status st); /* "running", "complete", "interrupted", "failed" */
/* Parse the names above; return 0 and set *out, or EINVAL. */
int rt_opcode_parse(const char *s, enum rt_opcode *out);
int rt_qp_type_parse(const char *s, enum rt_qp_type *out);
int rt_lat_kind_parse(const char *s, enum rt_lat_kind *out);
int rt_run_status_parse(const char *s, enum rt_run_status *out);

/* Frees what a run owns (points and their samples) and zeroes the counts; run itself is the caller's. */
void rt_run_release(struct rt_run *run);

#endif
