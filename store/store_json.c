// SPDX-License-Identifier: MIT
/*
 * JSON forms of runs and history lines for the CLI's --json outputs (the profile entry and node forms live next to
 * the profile document in store_profile.c).
 */
#include <string.h>

#include "rt_store_json.h"
#include "store_internal.h"
#include "lib/profile_internal.h"

static json_t *iso_or_null(int64_t ns)
{
	char buf[32];

	if (ns <= 0)
		return json_null();
	rt_profile_time_format(ns / 1000000000, buf);
	return json_string(buf);
}

json_t *rt_store_run_json(const struct rt_run *run)
{
	json_t *lat = json_array(), *rate = json_array(), *cqm = json_array();

	for (size_t i = 0; lat && i < run->n_lat; i++) {
		const struct rt_lat_point *p = &run->lat[i];

		json_array_append_new(
			lat, json_pack("{s:s, s:s, s:s, s:I, s:b, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "opcode",
				       rt_opcode_name(p->op), "qp_type", rt_qp_type_name(p->qpt), "kind",
				       rt_lat_kind_name(p->kind), "msg_bytes", (json_int_t)p->msg_bytes, "inline",
				       p->inl, "samples", (json_int_t)p->n_samples, "median_ns", p->median_ns, "p99_ns",
				       p->p99_ns, "p999_ns", p->p999_ns, "min_ns", p->min_ns, "ci_lo_ns", p->ci_lo_ns,
				       "ci_hi_ns", p->ci_hi_ns, "cpu_ns_per_op", p->cpu_ns_per_op));
	}
	for (size_t i = 0; rate && i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];

		json_array_append_new(rate,
				      json_pack("{s:s, s:s, s:I, s:b, s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:I}",
						"opcode", rt_opcode_name(p->op), "qp_type", rt_qp_type_name(p->qpt),
						"msg_bytes", (json_int_t)p->msg_bytes, "inline", p->inl,
						"signal_interval", (json_int_t)p->signal_interval, "sq_depth",
						(json_int_t)p->sq_depth, "mops", p->mops, "mops_lo", p->mops_lo,
						"mops_hi", p->mops_hi, "cpu_ns_per_msg", p->cpu_ns_per_msg, "msgs",
						(json_int_t)p->msgs, "enomem", (json_int_t)p->enomem));
	}
	for (int i = 0; cqm && i < RT_OP__COUNT; i++) {
		const struct rt_cq_moderation *m = &run->cqmod[i];

		if (!m->measured)
			continue;
		json_array_append_new(cqm, json_pack("{s:s, s:b, s:s, s:I, s:I, s:f, s:f}", "opcode",
						     rt_opcode_name((enum rt_opcode)i), "supported", m->supported,
						     "reason", m->reason, "count", (json_int_t)m->best_count,
						     "period_us", (json_int_t)m->best_period_us, "mops_off",
						     m->mops_off, "mops_best", m->mops_best));
	}
	return json_pack("{s:s, s:I, s:s, s:s, s:i, s:o, s:o, s:s, s:{s:i, s:i, s:i, s:b, s:s, s:s}, s:I, s:I,"
			 " s:o, s:o, s:o}",
			 "run_id", run->uuid, "id", (json_int_t)run->id, "hostname", run->node.hostname, "device",
			 run->dev.name, "port", run->port_num, "started_at", iso_or_null(run->started_ns), "ended_at",
			 iso_or_null(run->ended_ns), "status", rt_run_status_name(run->status), "env", "cpu",
			 run->env.cpu, "cpu_numa_node", run->env.cpu_numa_node, "device_numa_node",
			 run->env.device_numa_node, "numa_local", run->env.numa_local, "clock", run->env.clock, "mode",
			 run->env.mode, "max_inline_used", (json_int_t)run->max_inline_used, "sq_depth",
			 (json_int_t)run->sq_depth, "latency", lat ? lat : json_null(), "rate",
			 rate ? rate : json_null(), "cq_moderation", cqm ? cqm : json_null());
}

json_t *rt_store_run_summary_json(const struct rt_store_run_summary *r)
{
	return json_pack("{s:I, s:s, s:s, s:s, s:i, s:o, s:o, s:s, s:s, s:I, s:I, s:o, s:o}", "id", (json_int_t)r->id,
			 "run_id", r->uuid, "hostname", r->hostname, "device", r->device, "port", r->port_num,
			 "started_at", iso_or_null(r->started_ns), "ended_at", iso_or_null(r->ended_ns), "status",
			 rt_run_status_name(r->status), "stored_status", rt_run_status_name(r->stored_status),
			 "latency_points", (json_int_t)r->n_lat, "rate_points", (json_int_t)r->n_rate,
			 "inline_threshold", r->has_profile ? json_integer(r->inline_threshold) : json_null(),
			 "signal_interval", r->has_profile ? json_integer(r->signal_interval) : json_null());
}

void rt_store_json_copy_str(char *dst, size_t len, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	size_t n = json_is_string(v) ? rt_profile_utf8_fit(json_string_value(v), json_string_length(v), len) : 0;

	if (n)
		memcpy(dst, json_string_value(v), n);
	dst[n] = '\0';
}
