/* SPDX-License-Identifier: MIT */
/*
 * What `rtune agent` publishes after it decided a node's profile, and the targets it publishes to. The agent fills
 * one struct rt_agent_publication (read-only for every target) and calls rt_agent_publish_all(), which writes each
 * enabled target in turn: the JSON profile librtune loads (publish_profile.c), the Prometheus node_exporter textfile
 * (publish_prom.c), the Node Feature Discovery feature file (publish_nfd.c) and the stacks' own configuration
 * (ucx.conf section, libfabric and NCCL env files: publish_stacks.c). Every target writes atomically through
 * common/rt_out.h (a dot file in the same directory, fsync, rename): a reader never sees a partial file, a SIGTERM or
 * kill -9 leaves the previous version. This header is the contract between the agent and the targets: fields are
 * only ever appended.
 */
#ifndef RT_AGENT_PUBLISH_H
#define RT_AGENT_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rtune/error.h>
#include <rtune/profile.h>

#define RT_AGENT_PATH_LEN 4096

/*
 * Where to publish (the config file's "publish_*" keys, docs/agent.md). An empty path ("") disables that target.
 * Paths are absolute (the config parser refuses relative ones).
 */
struct rt_agent_publish_targets {
	char profile[RT_AGENT_PATH_LEN];       /* JSON profile (RT_PROFILE_DEFAULT_PATH unless configured) */
	char prom_textfile[RT_AGENT_PATH_LEN]; /* node_exporter textfile, e.g. .../textfile_collector/rtune.prom */
	char nfd_features[RT_AGENT_PATH_LEN];  /* NFD feature file, e.g. /etc/kubernetes/node-feature-discovery/
						* features.d/rtune */
	char ucx_conf[RT_AGENT_PATH_LEN];      /* file holding rtune's ucx.conf section (UCX reads /etc/ucx/ucx.conf) */
	char libfabric_env[RT_AGENT_PATH_LEN]; /* env file for libfabric's verbs provider (FI_VERBS_*) */
	char nccl_env[RT_AGENT_PATH_LEN];      /* env file for NCCL (NCCL_*) */
	uint32_t nfd_expiry_s; /* NFD feature expiry, seconds after generated_at (0 = target's default) */
	bool dry_run;	       /* log what would be written, write nothing (every target honours it) */
};

/* The outcome of the last calibration of a device/port the agent ran (or found in the store). */
enum rt_agent_cal_result {
	RT_AGENT_CAL_NONE = 0,	  /* never calibrated by the agent (values from an earlier `rtune calibrate`/import) */
	RT_AGENT_CAL_OK,	  /* complete, tuned */
	RT_AGENT_CAL_FAILED,	  /* the calibration failed (the previous decision is kept) */
	RT_AGENT_CAL_INTERRUPTED, /* the agent was stopped or killed during it (marked so in the store) */
	RT_AGENT_CAL_BUSY,	  /* due but deferred: another process holds QPs on the device */
};

/* "none", "ok", "failed", "interrupted", "busy" (Prometheus label values, log words); "unknown" out of range. */
const char *rt_agent_cal_result_name(enum rt_agent_cal_result r);

/*
 * One decision of the published profile: one entry of the JSON document (device, port, opcode, QP type, app), with
 * what the agent knows beyond it.
 */
struct rt_agent_decision {
	char device[64]; /* "mlx5_0", "rxe0" */
	char guid[24];	 /* node GUID "0011:2233:4455:6677", "" unknown */
	int port;	 /* 1-based */
	enum rt_profile_opcode opcode;
	enum rt_profile_qp_type qp_type;
	char app[64]; /* application the entry is tuned for ("" = the device's generic entry) */
	/* the decisions (as in struct rt_profile_entry) */
	uint32_t inline_threshold; /* bytes, 0 = never inline */
	uint32_t max_inline_data;
	uint32_t signal_interval; /* >= 1 */
	uint32_t sq_depth, cq_depth;
	enum rt_profile_confidence confidence; /* overall (the lower of the two below) */
	enum rt_profile_confidence inline_confidence;
	enum rt_profile_confidence signal_confidence;
	/* verdicts: what kind of answer each value is. inline: "threshold" (a measured crossover), "never" (inlining
	 * never helps), "always" (up to the device limit), "indifferent" (a flat curve: does not matter here),
	 * "not_measured". signal: the tuner's "knee", "indifferent", "not_measured". "pinned" when an operator pin sets
	 * the value (pinned_* below). */
	char inline_verdict[16];
	char signal_verdict[16];
	bool pinned_inline; /* inline_threshold comes from `rtune pin`, not from a measurement */
	bool pinned_signal; /* signal_interval comes from `rtune pin` */
	/* provenance and age */
	char run_id[40];     /* uuid of the calibration run the values came from ("" for a pure pin) */
	int64_t measured_at; /* seconds since the epoch of that run */
	int64_t age_s;	     /* generated_at - measured_at, >= 0 */
	/* hardware class: devices alike enough that their answers should agree (vendor:part:firmware), for fleet rules */
	char hw_class[96];
	int numa_node; /* -1 unknown */
	/* the device/port's last calibration by the agent (the same for every entry of that device/port) */
	enum rt_agent_cal_result last_cal_result;
	double last_cal_duration_s; /* wall time of that calibration (+ tuning), 0 when none */
	int64_t last_cal_at;	    /* seconds since the epoch it ended, 0 when none */
	/* why the agent published this entry now: "first", "hardware_changed", "aged", "app_histogram", "on_demand",
	 * "unchanged" (republished as it was), with one line in change_reason */
	char change[20];
	char change_reason[256];
};

/* Everything a target needs. Borrowed by the targets for the duration of the call. */
struct rt_agent_publication {
	/* the node's identity */
	char hostname[256];
	char machine_id[64];	/* /etc/machine-id, "" when absent */
	char node_key[320];	/* rt_store_node_key(): "<machine-id>/<hostname>" */
	char hw_signature[32];	/* rt_store_hw_signature(): "fnv1a64:..." */
	char cpu_model[256];	/* /proc/cpuinfo "model name" (UCX filters ucx.conf sections by it) */
	char rtune_version[32]; /* the agent's rtune version */
	int64_t generated_at;	/* seconds since the epoch this publication was made */
	/* the newly decided profile: the JSON document (schema rtune-profile 1.x) exactly as the JSON target writes it */
	const char *profile_json;
	size_t profile_json_len;
	/* the parsed decisions, in document order */
	const struct rt_agent_decision *decisions;
	size_t n_decisions;
};

struct rt_agent_config; /* agent/config.h */

/*
 * Publishes pub to every target enabled in cfg, in the order JSON profile, Prometheus, NFD, stacks. A failing target
 * does not stop the others; each failure is logged as one line. Returns 0 when every enabled target was written (or,
 * with dry_run, would have been), else the errno of the first failure with err naming its file.
 */
int rt_agent_publish_all(const struct rt_agent_publication *pub, const struct rt_agent_config *cfg,
			 struct rt_error *err);

/*
 * The targets. Each writes only its own file(s) named in t (doing nothing and returning 0 when its path is ""),
 * atomically, never replacing what is not a regular file. Returns 0, or an errno with err set to one line naming the
 * file ("cannot write '/x/rtune.prom': ..."); on failure the previous file is left as it was.
 */
int rt_agent_publish_profile(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			     struct rt_error *err); /* publish_profile.c */
int rt_agent_publish_prom(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			  struct rt_error *err); /* publish_prom.c */
int rt_agent_publish_nfd(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			 struct rt_error *err); /* publish_nfd.c */
int rt_agent_publish_stacks(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			    struct rt_error *err); /* publish_stacks.c: ucx_conf, libfabric_env, nccl_env */

#endif
