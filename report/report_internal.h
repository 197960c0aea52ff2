/* SPDX-License-Identifier: MIT */
/*
 * Internals of the fleet report: the compact per-node model every input is read into (a node's hardware facts, its
 * profile entries without their reason texts, calibration locality, latency/rate at the chosen settings), the groups,
 * outliers and drift the analysis produces, and a growable text buffer the writers share. Compact on purpose: a
 * report over 100,000 nodes must stay within a few hundred MB.
 */
#ifndef RT_REPORT_INTERNAL_H
#define RT_REPORT_INTERNAL_H

#include <math.h>
#include <stdarg.h>

#include "rt_buf.h"
#include "rt_json_arena.h"
#include "rt_report.h"

#include <rtune/profile.h>

#define RP_MAX_DEVS 16
#define RP_MAX_CURVE 64

/* What the hardware object / the store's device and port tables say about one device. Unknown ints are -1. */
struct rp_dev {
	char name[32];
	char guid[24];
	int vendor_id, vendor_part_id;
	char fw_ver[32];
	char link_layer[16];
	int active_mtu;
	int numa_node;
	bool has_pcie;
	char pcie_speed[24];
	int pcie_width;
	int mps, mrrs; /* max payload / max read request, bytes */
};

/* A latency or rate curve of the run behind an entry (HTML charts). */
struct rp_curve {
	uint16_t n_lat, n_rate;
	struct {
		uint32_t bytes;
		float inl_ns, noinl_ns;
	} lat[RP_MAX_CURVE];
	struct {
		uint32_t n;
		float mops;
	} rate[RP_MAX_CURVE];
};

/* One profile entry, compacted. */
struct rp_entry {
	char device[32];
	uint8_t port, opcode, qp_type, confidence; /* rt_profile_* enums */
	uint32_t inline_threshold, max_inline_data, signal_interval, sq_depth, cq_depth;
	int16_t numa_node;    /* device NUMA node per the entry, -1 unknown */
	int16_t cal_cpu_numa; /* NUMA node the calibration ran on, -1 unknown */
	int8_t cal_local;     /* 1 local, 0 remote, -1 unknown */
	int64_t measured_at;
	char run_id[40];
	float lat_ns, mops; /* at the chosen settings, NAN when unknown */
	/* the measured evidence (profile 1.3 "measured", or the run in a store); NAN when unknown */
	float lat_inl_ns, lat_noinl_ns, mops_n1, noise_pct;
	uint32_t lat_bytes;
	uint8_t lat_kind;	/* 0 unknown, 1 pingpong, 2 post_cqe */
	struct rp_curve *curve; /* NULL unless with_curves and the run was in a store */
	/* analysis */
	uint8_t outlier_mask; /* bit per metric */
};

struct rp_node {
	char *hostname;
	char *node_key; /* rt_store_node_key(): "<machine-id>/<hostname>", else the hostname */
	char *source;	/* file it came from */
	char *cpu_model;
	char hw_sig[40];
	int numa_nodes; /* -1 unknown */
	bool has_hw;	/* hardware facts known (JSON "hardware" object or a store's tables) */
	int n_devs;
	struct rp_dev *devs;
	int n_entries;
	struct rp_entry *entries;
	int64_t newest;	   /* newest measured_at of its entries */
	uint64_t key_hash; /* of node_key and hostname, set by rp_add_node */
	/* analysis */
	int group;
};

/* Metrics judged per slot. */
enum rp_metric { RP_M_THRESHOLD, RP_M_INTERVAL, RP_M_LAT, RP_M_MOPS, RP_M__COUNT };

/* Statistics of one metric over a group's slot. */
struct rp_stat {
	size_t n;
	double median, mad, min, max, p10, p90;
};

/* One (device, port, opcode, qp type) of a group. */
struct rp_slot {
	char device[32];
	uint8_t port, opcode, qp_type;
	size_t n; /* entries */
	struct rp_stat st[RP_M__COUNT];
	/* recommended profile (medians over inliers with at least medium confidence) */
	bool has_rec;
	uint32_t rec_threshold, rec_max_inline, rec_interval, rec_sq_depth, rec_cq_depth;
	size_t rec_basis; /* entries the recommendation stands on */
	const char *rec_confidence;
};

struct rp_group {
	char id[40];
	char *label;
	bool from_hw; /* id from hardware facts (else a bare hardware signature) */
	size_t n_nodes;
	size_t *nodes; /* node indices */
	size_t n_slots;
	struct rp_slot *slots;
};

struct rp_outlier {
	size_t group, node, entry;
	enum rp_metric metric;
	double value, median, z;
	char cause[48]; /* the likely one: first of causes */
	char causes[160];
	char evidence[512];
};

struct rp_drift {
	char *hostname, *device, *source;
	int port;
	enum rp_metric metric;
	double latest, hist_median;
	size_t hist_runs;
	char evidence[256];
};

/* A node whose profile is out of date: its newest entry older than --stale-days before "now", or a device the node
 * has (hardware facts) without any profile entry. */
struct rp_stale {
	size_t node;
	bool missing_device; /* else stale */
	char device[32];     /* missing_device: the device */
};

/* An outlier node: its outliers are outliers[by_node[first .. first + count)]. */
struct rp_onode {
	size_t node, first, count;
};

struct rt_report {
	struct rt_report_opts opts;
	int64_t generated_at; /* when the report was made (time(NULL)); opts.now is when ages are judged from */
	struct rp_node *nodes;
	size_t n_nodes, cap_nodes;
	char **problems;
	size_t n_problems, cap_problems;
	size_t n_inputs_ok;
	/* node_key -> node index (open addressing) */
	size_t *key_tab;
	size_t key_cap;
	/* analysis */
	bool analyzed;
	struct rp_group *groups;
	size_t n_groups;
	struct rp_outlier *outliers;
	size_t n_outliers, cap_outliers;
	struct rp_drift *drifts;
	size_t n_drifts, cap_drifts;
	struct rp_stale *stale;
	size_t n_stale;
	size_t *by_node; /* outlier indices ordered by group, node, entry, metric */
	struct rp_onode *onodes;
	size_t n_onodes;
};

/* ---- report.c ---- */
/* Records "<path>: <why>" as a problem (ENOMEM is swallowed: the problem is dropped). */
void rp_problem(struct rt_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of node (its strings and arrays) and merges it by node_key: the newer profile wins. -ENOMEM or the
 * node's index. */
long rp_add_node(struct rt_report *r, struct rp_node *node);
void rp_node_release(struct rp_node *n);
char *rp_strdup(const char *s);
const char *rp_metric_name(enum rp_metric m);
uint64_t rp_fnv1a(uint64_t h, const char *s);

/* Fills the entry's evidence fields from a librtune entry's "measured" figures (no-op when it has none), and its
 * latency / rate at the chosen settings from them. */
void rp_entry_evidence(struct rp_entry *o, const struct rt_profile_entry *e);
/* The causes of outlier o as codes: writes up to max pointers into o->causes' copy buf (split at ','); the count. */
size_t rp_outlier_causes(const struct rp_outlier *o, char *buf, size_t len, const char **codes, size_t max);

/* ---- report_group.c: deployable group profiles ---- */
/* Writes one rtune-profile document per group with a recommendation into dir (created when missing; never replacing
 * what is not a regular file), named <group id>.json with ':' as '-'. Returns the number written or -errno with err
 * set. */
long rp_write_group_profiles(const struct rt_report *r, const char *dir, struct rt_error *err);

/* ---- report_store.c: stores (the store API plus read-only SQL for node and device facts) ---- */
/* Reads every node of the store at path; problems recorded; returns nodes added or -ENOMEM. */
long rp_read_store(struct rt_report *r, const char *path);
/* Stores with at least this many nodes are read with one query per table instead of rt_store_get_profile() per node
 * (tests set it to compare both paths). */
extern int rp_store_bulk_min_nodes;
/* A bulk read is split into parts of at least this many nodes, one thread each (at most one per online CPU, 8): tests
 * lower it to compare split and whole reads. */
extern int rp_store_bulk_part_nodes;

/* ---- report_analyze.c ---- */
int rp_analyze(struct rt_report *r, struct rt_error *err);
/* Reports of at least this many nodes are analyzed one group per thread (tests lower it to compare both ways). */
extern int rp_analyze_parallel_nodes;
void rp_stat_compute(double *v, size_t n, struct rp_stat *out);

/* ---- streamed output (report_out.c): the text, JSON and CSV writers append to a fixed buffer that is written to
 * the stream whenever it fills, so a report over 100,000 nodes is never held in memory whole ---- */
#define RP_OUT_BUF (64u << 10)
struct rp_out {
	FILE *f;
	int err; /* first failure: EIO (the stream), ENOMEM; later appends do nothing */
	size_t len;
	char *buf; /* RP_OUT_BUF bytes */
};
/* Starts writing to f; 0 or ENOMEM. */
int rp_out_open(struct rp_out *o, FILE *f);
/* Writes what is buffered, flushes f and releases the buffer: 0 or the first error (EIO, ENOMEM). */
int rp_out_close(struct rp_out *o);
void rp_out_write(struct rp_out *o, const char *p, size_t n);
void rp_out_puts(struct rp_out *o, const char *s);
void rp_out_printf(struct rp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- text output helpers (report_out.c), on the shared growable buffer (common/rt_buf.h) ---- */
/* s escaped for HTML/XML text and attribute values. */
void rp_bescape(struct rt_buf *b, const char *s);
/* Formats a value for display: "-" for NAN. */
const char *rp_fmt(char *buf, size_t len, double v, int decimals);
const char *rp_time(int64_t t, char out[32]);

#endif
