/* SPDX-License-Identifier: MIT */
/*
 * JSON (jansson) forms of the store's objects, for `rtune show --json`, `rtune history --json` and the profile
 * document: the same field names as docs/profile-schema.md. Each returns a new reference (NULL when out of memory).
 */
#ifndef RT_STORE_JSON_H
#define RT_STORE_JSON_H

#include <stdbool.h>

#include <jansson.h>

#include "rt_buf.h"
#include "rt_store.h"

struct rt_profile;

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

/* ---- schema 1.4: load bands and skipped measurements (store_profile_bands.c) ---- */
/* One band as in an entry's "bands": {"kind", "post_list", "msg_bytes_lo", "msg_bytes_hi", "signal_interval",
 * "verdict", "confidence"} (null for an unknown verdict or confidence). */
json_t *rt_store_band_json(const struct rt_profile_band *b);
/* One item of the document's "skipped": {"device", "port", "what", "kind", "opcode", "qp_type", "reason", "run_id"}. */
json_t *rt_store_skip_json(const struct rt_profile_skip *k);
/* Fills k's what, reason, kind, opcode and qp_type from one item of a run's params.skipped (the engine's names:
 * "inline <op>/<qpt>", "<qpt>", "<op>", "cq moderation"; anything else is kind other, every opcode and QP type). */
void rt_store_skip_from_run(const char *what, const char *reason, struct rt_profile_skip *k);
/* Entry e's "bands" array: the signal_bands of its run for its opcode and QP type when the store holds the run, else
 * the bands its imported profile carried; empty when there are none, and when e's signal_interval is not the one
 * stored for its run (a caller such as the agent replaced it: that N then holds for every message). Never NULL unless
 * out of memory. */
json_t *rt_store_entry_bands_json(struct rt_store *st, const struct rt_profile_entry *e);
/* The document's "skipped" array: per device and port, what the runs behind v[0..n) skipped (from each run's params
 * when the store holds it, else from what the import kept), newest run first, each measurement once. NULL when out of
 * memory. */
json_t *rt_store_skipped_json(struct rt_store *st, const struct rt_profile_entry *v, size_t n);
/* What the import keeps of entry i of p beyond the public entry: 0 and *out {"bands": [...], "skipped": [...]} (the
 * skips of its device, port and run), each member only when non-empty, or NULL when neither; ENOMEM. */
int rt_store_import_extra(const struct rt_profile *p, size_t i, json_t **out);

/* ---- bands and skips outside the profile (store_bands_out.c) ---- */
/* One band object of an entry's "bands" as one line: "large messages 4096-65536 B: N = 16 (knee, high)", "post lists
 * of 8 WRs (64 B): N = 32 (indifferent)"; a kind it does not know by its name. Truncated to len; never fails. */
void rt_store_band_line(const json_t *band, char *buf, size_t len);
/* One item of the document's "skipped" as one line: "efa0 port 1: rc: the device has no rc qps ...". */
void rt_store_skip_line(const json_t *skip, char *buf, size_t len);
/* The env lines of an entry's "bands" (docs/json-formats.md, "env"): per band a comment with its line, then
 * RTUNE_SIGNAL_INTERVAL_<KIND>_[<K>_]<sfx>=N and RTUNE_MSG_BYTES_<KIND>_[<K>_]<sfx>=LO-HI (K: a post list's WRs per
 * call, when above 1; sfx: "<DEV>_P<PORT>"). Nothing for an empty or absent array. Allocation failures: b->oom. */
void rt_store_env_bands(struct rt_buf *b, const json_t *bands, const char *sfx);
/* The Prometheus families rtune_band_signal_interval, rtune_band_confidence, rtune_band_info (one series per band of
 * each entry of the profile document doc) and rtune_skipped_measurement_info (one per item of its "skipped"), HELP and
 * TYPE always written; node: the value of a leading node label (rtune export), NULL for none (the agent's textfile).
 * The one writer of these families for both files. Allocation failures: b->oom. */
void rt_store_prom_bands(struct rt_buf *b, const json_t *doc, const char *node);
/* One Prometheus label, name="value" (preceded by ',' unless first), the value's backslash, double quote and newline
 * escaped (exposition format 0.0.4): the one label writer of every rtune textfile. Allocation failures: b->oom. */
void rt_store_prom_label(struct rt_buf *b, const char *name, const char *v, bool first);

#endif
