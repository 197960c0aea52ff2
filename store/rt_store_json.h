/* SPDX-License-Identifier: MIT */
/*
 * JSON (jansson) forms of the store's objects, for `rtune show --json`, `rtune history --json` and the profile
 * document: the same field names as docs/profile-schema.md. Each returns a new reference (NULL when out of memory).
 */
#ifndef RT_STORE_JSON_H
#define RT_STORE_JSON_H

#include <jansson.h>

#include "rt_store.h"

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
