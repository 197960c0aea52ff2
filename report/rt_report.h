/* SPDX-License-Identifier: MIT */
/*
 * rtune's fleet report (`rtune report`): reads the profiles of many nodes (rtune stores and JSON profile v1 documents,
 * files or directories walked recursively), groups the nodes by hardware class, and per group gives the node count,
 * the median and spread of each decision (inline_threshold, signal_interval, and latency / message rate at the chosen
 * settings where a store holds the runs), a recommended group profile, robust outliers (median/MAD) each with the
 * likely cause and its evidence (remote-NUMA calibration, different PCIe MPS, different firmware, low confidence,
 * stale profile, ...), and drift (a node's latest run moved away from its own history). Output as a terminal table,
 * JSON, CSV, or one self-contained HTML page with inline SVG charts. See docs/report.md.
 *
 * Nothing here prints: every bad input becomes one line in the report's problem list (rt_report_problem_at), and the
 * rest of the inputs are still used. Functions return 0 or an errno value and fill the caller's struct rt_error.
 *
 * jansson's allocator: the first JSON input read installs, once per process, jansson allocation hooks
 * (json_set_alloc_funcs) that build the report's parse trees in per-thread arenas and pass every other jansson
 * allocation through to the functions installed before. A program that installs its own jansson allocator must do so
 * before its first rt_report_add_*() call, and never while one runs.
 */
#ifndef RT_REPORT_H
#define RT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rtune/error.h>

struct rt_report;

struct rt_report_opts {
	int64_t now;	  /* "now" in seconds since the epoch (0: time(NULL)); stale profiles are judged from it */
	double outlier_z; /* robust z beyond which a value is an outlier (0: 3.5) */
	int stale_days;	  /* a profile measured this many days before its group's median is stale (0: 90) */
	int min_group;	  /* nodes a group needs before outliers are judged (0: 4) */
	bool with_curves; /* keep runs' latency/rate curves for the HTML charts */
};

/* Creates an empty report; opts may be NULL (defaults). 0, or ENOMEM. */
int rt_report_create(const struct rt_report_opts *opts, struct rt_report **out);
/* Frees the report and everything it read; NULL is a no-op. */
void rt_report_free(struct rt_report *r);

/*
 * Adds one input: an rtune store (SQLite), a JSON profile document, or a directory walked recursively for *.json,
 * *.db, *.sqlite, *.sqlite3 and *.rtune files (a file named on the command line is tried whatever its name). Every
 * file that cannot be used (unreadable, not a database, corrupt, JSON of an unknown schema major, invalid values)
 * and an empty directory adds one problem line and is skipped. Returns the number of nodes this input contributed
 * (0 is not an error) or a negative errno only for out-of-memory.
 */
long rt_report_add_path(struct rt_report *r, const char *path);
/* As rt_report_add_path() for a JSON profile document in memory; name is used in problem lines. */
long rt_report_add_json_text(struct rt_report *r, const char *name, const char *text, size_t len);

/* Problems met while reading inputs, in order: "<path>: <why>". */
size_t rt_report_problem_count(const struct rt_report *r);
const char *rt_report_problem_at(const struct rt_report *r, size_t i);
/* Nodes read so far (a node — machine-id and hostname — present in several inputs counts once: its most recently
 * measured profile wins). */
size_t rt_report_node_count(const struct rt_report *r);

/* Groups the nodes, computes statistics, outliers with causes and drift. Call once, after the last add; 0 or ENOMEM. */
int rt_report_analyze(struct rt_report *r, struct rt_error *err);

/* Results, after rt_report_analyze(). */
size_t rt_report_group_count(const struct rt_report *r);
size_t rt_report_outlier_count(const struct rt_report *r);
size_t rt_report_drift_count(const struct rt_report *r);

/* One outlier, flattened for tests and tools. */
struct rt_report_outlier_view {
	const char *group; /* group id */
	const char *hostname;
	const char *device;
	int port;
	const char *opcode, *qp_type;
	const char *metric; /* "inline_threshold", "signal_interval", "latency_ns", "mops" */
	double value, group_median, robust_z;
	const char *cause;    /* stable code of the likely cause (first of causes), e.g. "remote_numa_calibration" */
	const char *causes;   /* every cause code found, comma-separated (the JSON report has them as an array) */
	const char *evidence; /* one human line naming the evidence */
};
/* The i-th outlier (group order, then host); false past the end. */
bool rt_report_outlier_at(const struct rt_report *r, size_t i, struct rt_report_outlier_view *out);

/* Outliers per node: the count of nodes with at least one outlier, and the i-th such node (group order) with the
 * number of its entries affected; NULL past the end. */
size_t rt_report_outlier_node_count(const struct rt_report *r);
const char *rt_report_outlier_node_at(const struct rt_report *r, size_t i, size_t *entries);

/* Stale nodes (newest profile entry more than stale_days before now) and nodes with no profile for a device they
 * have: the count, and the i-th hostname (group order) with *missing_device the device (NULL: a stale node). */
size_t rt_report_stale_count(const struct rt_report *r);
const char *rt_report_stale_at(const struct rt_report *r, size_t i, const char **missing_device);

/* Writes, per hardware class with a recommendation, an rtune-profile document (marked as a group profile: node
 * count and spread) that librtune loads, into dir (created when missing), as <group id>.json with ':' as '-'. A
 * regular file is replaced atomically; what is not a regular file is never replaced. The number of files written,
 * or -errno with err set. */
long rt_report_write_group_profiles(const struct rt_report *r, const char *dir, struct rt_error *err);

struct rt_report_drift_view {
	const char *hostname, *device, *source;
	int port;
	const char *metric;
	double latest, history_median;
	size_t history_runs;
	const char *evidence;
};
bool rt_report_drift_at(const struct rt_report *r, size_t i, struct rt_report_drift_view *out);

/* Group id ("hw:<16 hex>" from hardware facts, or the node's hardware signature when the input has none), its label
 * and node count; NULL past the end. */
const char *rt_report_group_id(const struct rt_report *r, size_t i);
const char *rt_report_group_label(const struct rt_report *r, size_t i);
size_t rt_report_group_nodes(const struct rt_report *r, size_t i);
/* The group a node (by hostname) was put in; NULL when unknown. */
const char *rt_report_group_of(const struct rt_report *r, const char *hostname);

/* Writers (after rt_report_analyze). Return 0 or an errno (EIO when the stream failed). */
int rt_report_write_text(const struct rt_report *r, FILE *f);
int rt_report_write_json(const struct rt_report *r, FILE *f);
int rt_report_write_csv(const struct rt_report *r, FILE *f);
/* A self-contained page (inline CSS and SVG, no script, nothing fetched from the network) into memory (*out malloc'd,
 * NUL-terminated, *len its length). */
int rt_report_render_html(const struct rt_report *r, char **out, size_t *len);

#endif
