// SPDX-License-Identifier: MIT
/*
 * A calibration run as JSON (jansson): what `rtune calibrate --json` prints and `--out FILE` writes. Documented in
 * docs/calibrate.md; non-finite numbers are written as null.
 */
#include "rt_engine.h"
#include "rt_json_arena.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *node_json(const struct rt_node_info *n)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "hostname", n->hostname, "machine_id", n->machine_id,
			 "cpu_model", n->cpu_model, "kernel", n->kernel, "cpu_count", n->cpu_count, "numa_nodes",
			 n->numa_nodes);
}

static json_t *dev_json(const struct rt_device_info *d)
{
	/* max_inline_srd: EFA's inline buffer (SRD QPs), -1 on every other device */
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s}", "name", d->name,
			 "node_guid", d->node_guid, "transport", d->transport, "fw_ver", d->fw_ver, "vendor_id",
			 (json_int_t)d->vendor_id, "vendor_part_id", (json_int_t)d->vendor_part_id, "max_qp_wr",
			 d->max_qp_wr, "max_inline_rc", d->max_inline_rc, "max_inline_ud", d->max_inline_ud,
			 "max_inline_srd", d->max_inline_srd, "numa_node", d->numa_node, "port_count", d->port_count,
			 "local_cpus", d->local_cpus, "pci_addr", d->pci_addr);
}

static json_t *env_json(const struct rt_run_env *e)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:b, s:s, s:s, s:s, s:s}", "cpu", e->cpu, "cpu_numa_node",
			      e->cpu_numa_node, "device_numa_node", e->device_numa_node, "numa_local", e->numa_local,
			      "clock", e->clock, "clocksource", e->clocksource, "mode", e->mode, "peer", e->peer);

	if (o) {
		json_object_set_new(o, "tsc_ghz", num(e->tsc_ghz));
		json_object_set_new(o, "clock_tick_ns", num(e->clock_tick_ns));
		json_object_set_new(o, "clock_resolution_ns", num(e->clock_resolution_ns));
		json_object_set_new(o, "resp_cpu", json_integer(e->resp_cpu));
		json_object_set_new(o, "cpu_isolated", json_boolean(e->cpu_isolated));
		json_object_set_new(o, "smt_siblings", json_boolean(e->smt_siblings));
		json_object_set_new(o, "governor", json_string(e->governor));
		json_object_set_new(o, "placement_warning", json_string(e->placement_warning));
		if (e->client_max_inline || e->server_max_inline) {
			json_object_set_new(o, "client_max_inline", json_integer(e->client_max_inline));
			json_object_set_new(o, "server_max_inline", json_integer(e->server_max_inline));
		}
	}
	return o;
}

static json_t *lat_json(const struct rt_lat_point *l, bool with_samples)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:b, s:I}", "op", rt_opcode_name(l->op), "qp_type",
			      rt_qp_type_name(l->qpt), "kind", rt_lat_kind_name(l->kind), "msg_bytes",
			      (json_int_t)l->msg_bytes, "inline", l->inl, "n_samples", (json_int_t)l->n_samples);

	if (!o)
		return NULL;
	json_object_set_new(o, "median_ns", num(l->median_ns));
	json_object_set_new(o, "p99_ns", num(l->p99_ns));
	json_object_set_new(o, "p999_ns", num(l->p999_ns));
	json_object_set_new(o, "mean_ns", num(l->mean_ns));
	json_object_set_new(o, "min_ns", num(l->min_ns));
	json_object_set_new(o, "ci_lo_ns", num(l->ci_lo_ns));
	json_object_set_new(o, "ci_hi_ns", num(l->ci_hi_ns));
	json_object_set_new(o, "ci_level", json_real(0.95));
	json_object_set_new(o, "cpu_ns_per_op", num(l->cpu_ns_per_op));
	json_object_set_new(o, "n_blocks", json_integer(l->n_blocks));
	json_object_set_new(o, "n_rounds", json_integer(l->n_rounds));
	json_object_set_new(o, "remeasured", json_boolean(l->remeasured));
	json_object_set_new(o, "n_kept", json_integer(l->n_kept));
	if (with_samples) {
		json_t *a = json_array();

		for (uint32_t i = 0; a && i < l->n_kept; i++)
			json_array_append_new(a, num(l->samples_ns[i]));
		json_object_set_new(o, "samples_ns", a ? a : json_null());
	}
	return o;
}

static json_t *rate_json(const struct rt_rate_point *r)
{
	json_t *o =
		json_pack("{s:s, s:s, s:I, s:b, s:I, s:I, s:I, s:I, s:I}", "op", rt_opcode_name(r->op), "qp_type",
			  rt_qp_type_name(r->qpt), "msg_bytes", (json_int_t)r->msg_bytes, "inline", r->inl,
			  "signal_interval", (json_int_t)r->signal_interval, "sq_depth", (json_int_t)r->sq_depth,
			  "reps", (json_int_t)r->reps, "msgs", (json_int_t)r->msgs, "enomem", (json_int_t)r->enomem);

	if (!o)
		return NULL;
	json_object_set_new(o, "mops", num(r->mops));
	json_object_set_new(o, "mops_lo", num(r->mops_lo));
	json_object_set_new(o, "mops_hi", num(r->mops_hi));
	json_object_set_new(o, "cpu_ns_per_msg", num(r->cpu_ns_per_msg));
	json_object_set_new(o, "post_ns_per_msg", num(r->post_ns_per_msg));
	if (r->post_list > 1 || r->msg_bytes >= RT_LARGE_MSG_BYTES || r->qps > 1) {
		json_object_set_new(o, "band", json_string(rt_rate_band_name(rt_rate_band_of(r))));
		json_object_set_new(o, "post_list", json_integer(r->post_list > 1 ? r->post_list : 1));
		if (r->qps > 1) {
			json_object_set_new(o, "qps", json_integer(r->qps));
			json_object_set_new(o, "threads", json_integer(r->threads > 1 ? r->threads : 1));
		}
	}
	return o;
}

static json_t *cqmod_json(const struct rt_cq_moderation *m)
{
	json_t *o =
		json_pack("{s:b, s:b, s:s}", "measured", m->measured, "supported", m->supported, "reason", m->reason);

	if (!o)
		return NULL;
	if (m->supported) {
		json_object_set_new(o, "best_count", json_integer(m->best_count));
		json_object_set_new(o, "best_period_us", json_integer(m->best_period_us));
		json_object_set_new(o, "mops_off", num(m->mops_off));
		json_object_set_new(o, "mops_best", num(m->mops_best));
	}
	return o;
}

char *rt_engine_run_json(const struct rt_run *run, bool with_samples)
{
	json_t *root = json_object(), *lat = json_array(), *rate = json_array(), *cq = json_object(), *params;
	json_error_t je;
	char *s = NULL;

	if (!root || !lat || !rate || !cq)
		goto out;
	json_object_set_new(root, "schema", json_pack("{s:s, s:s}", "name", "rtune-run", "version", "1.0"));
	json_object_set_new(root, "rtune_version", json_string(RTUNE_VERSION));
	json_object_set_new(root, "id", json_integer(run->id));
	json_object_set_new(root, "run_id", json_string(run->uuid));
	json_object_set_new(root, "status", json_string(rt_run_status_name(run->status)));
	json_object_set_new(root, "started_ns", json_integer(run->started_ns));
	json_object_set_new(root, "ended_ns", json_integer(run->ended_ns));
	json_object_set_new(root, "node", node_json(&run->node));
	json_object_set_new(root, "device", dev_json(&run->dev));
	json_object_set_new(root, "port", json_integer(run->port_num));
	json_object_set_new(root, "gid_index", json_integer(run->gid_index));
	json_object_set_new(root, "env", env_json(&run->env));
	params = rt_json_loads(run->params[0] ? run->params : "{}", 0, &je);
	json_object_set_new(root, "params", params ? params : json_string(run->params));
	json_object_set_new(root, "max_inline_used", json_integer(run->max_inline_used));
	json_object_set_new(root, "sq_depth", json_integer(run->sq_depth));
	for (size_t i = 0; i < run->n_lat; i++)
		json_array_append_new(lat, lat_json(&run->lat[i], with_samples));
	for (size_t i = 0; i < run->n_rate; i++)
		json_array_append_new(rate, rate_json(&run->rate[i]));
	if (run->n_band_rate) {
		json_t *b = json_array();

		for (size_t i = 0; b && i < run->n_band_rate; i++)
			json_array_append_new(b, rate_json(&run->band_rate[i]));
		json_object_set_new(root, "rate_bands", b);
	}
	for (int op = 0; op < RT_OP__COUNT; op++)
		if (run->cqmod[op].measured)
			json_object_set_new(cq, rt_opcode_name((enum rt_opcode)op), cqmod_json(&run->cqmod[op]));
	json_object_set(root, "latency", lat);
	json_object_set(root, "rate", rate);
	json_object_set(root, "cq_moderation", cq);
	s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
out:
	json_decref(lat);
	json_decref(rate);
	json_decref(cq);
	json_decref(root);
	return s;
}
