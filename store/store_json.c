// SPDX-License-Identifier: MIT
/*
 * JSON forms of runs and history lines for the CLI's --json outputs, and the measured evidence of a profile entry
 * (schema 1.3 "measured": computed from the entry's run, written and read back); the profile entry and node forms live
 * next to the profile document in store_profile.c.
 */
#include <math.h>
#include <stdlib.h>
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

/* ---- the "measured" evidence of an entry (schema 1.3) ---------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void rt_store_measure_entry(const struct rt_run *run, struct rt_profile_entry *e)
{
	enum rt_lat_kind kind = RT_LAT_POST_CQE;
	uint32_t target = e->inline_threshold, bytes, below = UINT32_MAX, smallest = UINT32_MAX,
		 rate_bytes = UINT32_MAX;
	double *noise = NULL;
	size_t n_noise = 0, n_match = 0;
	bool rate_inl = false;

	e->has_measured = false;
	e->lat_kind[0] = '\0';
	e->lat_bytes = 0;
	e->lat_inline_ns = e->lat_noinline_ns = e->mops_at_n = e->mops_at_n1 = e->noise_pct = NAN;
	for (size_t i = 0; i < run->n_lat; i++)
		if ((int)run->lat[i].op == (int)e->opcode && (int)run->lat[i].qpt == (int)e->qp_type &&
		    run->lat[i].kind == RT_LAT_PINGPONG)
			kind = RT_LAT_PINGPONG;
	/* the size: the largest measured size <= the threshold, else (threshold 0, or nothing that small) the smallest */
	for (size_t i = 0; i < run->n_lat; i++) {
		const struct rt_lat_point *p = &run->lat[i];

		if ((int)p->op != (int)e->opcode || (int)p->qpt != (int)e->qp_type || p->kind != kind)
			continue;
		n_match++;
		if (p->msg_bytes < smallest)
			smallest = p->msg_bytes;
		if (target && p->msg_bytes <= target && (below == UINT32_MAX || p->msg_bytes > below))
			below = p->msg_bytes;
	}
	bytes = below != UINT32_MAX ? below : smallest;
	noise = n_match ? malloc(n_match * sizeof(*noise)) : NULL;
	for (size_t i = 0; i < run->n_lat; i++) {
		const struct rt_lat_point *p = &run->lat[i];

		if ((int)p->op != (int)e->opcode || (int)p->qpt != (int)e->qp_type || p->kind != kind)
			continue;
		if (noise && p->median_ns > 0 && p->ci_hi_ns >= p->ci_lo_ns)
			noise[n_noise++] = 100.0 * (p->ci_hi_ns - p->ci_lo_ns) / 2 / p->median_ns;
		if (p->msg_bytes != bytes)
			continue;
		if (p->inl)
			e->lat_inline_ns = p->median_ns;
		else
			e->lat_noinline_ns = p->median_ns;
	}
	if (n_noise) {
		qsort(noise, n_noise, sizeof(*noise), cmp_dbl);
		e->noise_pct = n_noise % 2 ? noise[n_noise / 2] : (noise[n_noise / 2 - 1] + noise[n_noise / 2]) / 2;
	}
	free(noise);
	/* rates: the smallest message size measured (inline preferred, as the tuner's sweep) */
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];

		if ((int)p->op != (int)e->opcode || (int)p->qpt != (int)e->qp_type)
			continue;
		if (p->msg_bytes < rate_bytes || (p->msg_bytes == rate_bytes && p->inl)) {
			rate_bytes = p->msg_bytes;
			rate_inl = p->inl;
		}
	}
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];

		if ((int)p->op != (int)e->opcode || (int)p->qpt != (int)e->qp_type || p->msg_bytes != rate_bytes ||
		    p->inl != rate_inl)
			continue;
		if (p->signal_interval == e->signal_interval && (isnan(e->mops_at_n) || p->mops > e->mops_at_n))
			e->mops_at_n = p->mops;
		if (p->signal_interval == 1 && (isnan(e->mops_at_n1) || p->mops > e->mops_at_n1))
			e->mops_at_n1 = p->mops;
	}
	if (!n_match && rate_bytes == UINT32_MAX)
		return;
	e->has_measured = true;
	snprintf(e->lat_kind, sizeof(e->lat_kind), "%s", n_match ? rt_lat_kind_name(kind) : "");
	e->lat_bytes = bytes == UINT32_MAX ? 0 : bytes;
}

static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *rt_store_measured_json(const struct rt_profile_entry *e)
{
	if (!e->has_measured)
		return NULL;
	return json_pack("{s:o, s:I, s:o, s:o, s:o, s:o, s:o}", "latency_kind",
			 e->lat_kind[0] ? json_string(e->lat_kind) : json_null(), "msg_bytes", (json_int_t)e->lat_bytes,
			 "latency_inline_ns", real_or_null(e->lat_inline_ns), "latency_noinline_ns",
			 real_or_null(e->lat_noinline_ns), "mops_at_n", real_or_null(e->mops_at_n), "mops_at_n1",
			 real_or_null(e->mops_at_n1), "noise_pct", real_or_null(e->noise_pct));
}

static double num_or_nan(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

void rt_store_measured_read(json_t *m, struct rt_profile_entry *e)
{
	const char *k = json_string_value(json_object_get(m, "latency_kind"));
	json_int_t b = json_integer_value(json_object_get(m, "msg_bytes"));

	e->has_measured = false;
	e->lat_kind[0] = '\0';
	e->lat_bytes = 0;
	e->lat_inline_ns = e->lat_noinline_ns = e->mops_at_n = e->mops_at_n1 = e->noise_pct = NAN;
	if (!json_is_object(m))
		return;
	snprintf(e->lat_kind, sizeof(e->lat_kind), "%s", k ? k : "");
	e->lat_bytes = b > 0 && b <= UINT32_MAX ? (uint32_t)b : 0;
	e->lat_inline_ns = num_or_nan(m, "latency_inline_ns");
	e->lat_noinline_ns = num_or_nan(m, "latency_noinline_ns");
	e->mops_at_n = num_or_nan(m, "mops_at_n");
	e->mops_at_n1 = num_or_nan(m, "mops_at_n1");
	e->noise_pct = num_or_nan(m, "noise_pct");
	e->has_measured = true;
}
