/* SPDX-License-Identifier: MIT */
/*
 * Fleet generator for the report's tests and benchmark: synthetic JSON profile v1 documents (with the optional
 * "hardware" object and per-entry "calibration") for a fleet of nodes in planted hardware groups, with planted
 * outliers whose cause is known (remote-NUMA calibration, different PCIe MPS, different firmware, low confidence,
 * stale profile), and rtune stores of a few nodes (through the store API) with runs, curves and drift.
 * Deterministic for a given seed.
 */
#ifndef FLEET_GEN_H
#define FLEET_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fg_cause { FG_NONE, FG_REMOTE_NUMA, FG_MPS, FG_FIRMWARE, FG_LOW_CONF, FG_STALE, FG__COUNT };

/* Planted traits that are not outliers of the decisions (fg_node.trait). */
enum fg_trait { FG_T_NONE, FG_T_FW_UPGRADE, FG_T_NEAR_MISS, FG_T_REMOTE_LAT, FG_T_STALE, FG_T_MISSING_DEV };

/* The cause code the report must name for each planted cause. */
const char *fg_cause_code(enum fg_cause c);

struct fg_opts {
	uint64_t seed;
	int groups; /* hardware groups (1..8) */
	int nodes_per_group;
	int outliers_per_group; /* planted outliers per group, causes cycling through FG_REMOTE_NUMA..FG_STALE */
	int64_t now;		/* seconds since the epoch */
	bool with_hardware;	/* write the "hardware" object and "calibration" (else: signature only) */
	int entries_per_node;	/* 1..4 per device: send/write x rc/ud on port 1 */
	/* the realistic shape (docs/report.md, bench_report): as `rtune export` writes profiles */
	int devices;	     /* 0/1: mlx5_0; 2: also mlx5_1 (the same model, on the other NUMA node when there are 2) */
	bool indent;	     /* laid out as the export does (jansson JSON_INDENT(2)), else compact */
	bool with_measured;  /* each entry's 1.3 "measured" evidence (latency, rate, noise) */
	bool no_calibration; /* keep "hardware" but leave out each entry's "calibration" (placement unknown) */
	int fw_upgrade_pct;  /* % of clean nodes already on the next firmware, values ordinary (an upgrade under way) */
	int near_miss_pct; /* % of clean nodes with values off by less than the noise (threshold +25 %, latency +6 %) */
	int remote_lat_nodes; /* per group: clean-valued nodes calibrated NUMA-remote, latency +15 % (with_measured) */
	int stale_ordinary;   /* per group: clean-valued nodes whose profile is 200 days old */
	int missing_device;   /* per group (2 devices): nodes whose mlx5_1 has no profile entry */
	bool mixed_shape;     /* overrides devices and entries_per_node per group: 2 devices in groups 3 mod 4 (else 1),
				* 4 entries per device in even groups, 3 in odd ones */
};

struct fg_node {
	char hostname[64];
	int group;
	enum fg_cause cause;
	enum fg_trait trait;
	char *json; /* the document (malloc'd) */
	size_t len;
};

/* The realistic shape a fleet operator sees (as `rtune export` writes profiles; bench_report, the report's tests):
 * with_hardware, with_measured, indent, mixed_shape, a firmware upgrade under way on 30 % of the nodes and near
 * misses on 10 %. Other fields of *o are kept. */
void fg_realistic(struct fg_opts *o);

/* Builds the fleet in memory; *out (free with fg_free) holds groups * nodes_per_group nodes. 0 or ENOMEM. */
int fg_build(const struct fg_opts *o, struct fg_node **out, size_t *n);
void fg_free(struct fg_node *v, size_t n);
/* Writes each node's document to dir/<group>/<hostname>.json (directories created). 0 or an errno. */
int fg_write_dir(const char *dir, const struct fg_node *v, size_t n);
/* Imports each node's document into the store at path (created when missing) as `rtune import` does, once: a fleet
 * store. 0 or the store's errno (its message on stderr). */
int fg_import_store(const char *path, const struct fg_node *v, size_t n);

/*
 * Writes an rtune store at path holding n_nodes nodes of one hardware class (through the store API: a calibration run
 * per node with latency and rate curves and the profile from it). Node 0's latest calibration ran NUMA-remote and
 * chose a threshold far below the rest (when plant_remote); node 1 has 4 runs whose latest threshold drifted from
 * the 3 before (when plant_drift). Hostnames are "<prefix>-<i>". 0 or an errno (message on stderr).
 */
int fg_write_store(const char *path, const char *prefix, int n_nodes, bool plant_remote, bool plant_drift, int64_t now);

#endif
