/* SPDX-License-Identifier: MIT */
/*
 * JSON (jansson) forms of the store's objects, for `rtune show --json`, `rtune history --json` and the profile
 * document: the same field names as docs/profile-schema.md. Each returns a new reference (NULL when out of memory).
 */
#ifndef RT_STORE_JSON_H
#define RT_STORE_JSON_H

#include <jansson.h>

#include "rt_store.h"

/*
 * Fills e's schema 1.3 "measured" figures from the calibration run it came from (the run's latency and rate points
 * of e's opcode and QP type): the latency kind (ping-pong when the run has it, else post->completion), the median
 * latency inline and not at the threshold's size (the smallest size when the threshold is 0), the rate at e's
 * signal_interval and at N = 1 (smallest message size measured), and the run's noise (median CI half-width of its
 * latency medians, % of the median). Leaves has_measured false when the run holds no point of that opcode/QP type.
 */
void rt_store_measure_entry(const struct rt_run *run, struct rt_profile_entry *e);
/* e's "measured" object ({"latency_kind", "msg_bytes", "latency_inline_ns", "latency_noinline_ns", "mops_at_n",
 * "mops_at_n1", "noise_pct"}, null for an unmeasured figure), or NULL when e has none (or out of memory). */
json_t *rt_store_measured_json(const struct rt_profile_entry *e);
/* Reads a "measured" object written by rt_store_measured_json back into e (lenient: what is not a number is NAN);
 * m NULL or not an object leaves has_measured false. */
void rt_store_measured_read(json_t *m, struct rt_profile_entry *e);
/* One profile entry exactly as it appears in a profile document's "entries". */
json_t *rt_store_entry_json(const struct rt_profile_entry *e);
/* A run's identity, status, environment and curves: {"run_id", "status", "env", "latency": [...], "rate": [...],
 * "cq_moderation": [...]} (raw samples left out). */
json_t *rt_store_run_json(const struct rt_run *run);
/* One history line: {"id", "run_id", "hostname", "device", "port", "started_at", "ended_at", "status",
 * "stored_status", "latency_points", "rate_points", "inline_threshold", "signal_interval"}. */
json_t *rt_store_run_summary_json(const struct rt_store_run_summary *r);
/* Node identity as in a profile document's "node". */
json_t *rt_store_node_json(const struct rt_node_info *node, const char *hw_signature);

#endif
