// SPDX-License-Identifier: MIT
/*
 * Deployable group profiles (`rtune report --group-profiles DIR`): per hardware class with a recommendation, one
 * rtune-profile document (schema 1.3) holding the group's recommended values per slot, marked as a group profile
 * ("group": node count, and per entry the spread the values were taken from), for nodes of that class that have not
 * calibrated yet. Each document is checked with librtune's own validator before it is written, and written as every
 * rtune output file is (common/rt_out.h: a regular file replaced atomically, anything else never replaced).
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/profile_internal.h"
#include "rt_out.h"

/* The newest measured_at among the slot's entries in group g (what the recommendation stands on). */
static int64_t slot_newest(const struct rt_report *r, const struct rp_group *g, const struct rp_slot *s)
{
	int64_t t = 0;

	for (size_t k = 0; k < g->n_nodes; k++) {
		const struct rp_node *n = &r->nodes[g->nodes[k]];

		for (int i = 0; i < n->n_entries; i++) {
			const struct rp_entry *e = &n->entries[i];

			if (e->port == s->port && e->opcode == s->opcode && e->qp_type == s->qp_type &&
			    !strcmp(e->device, s->device) && e->measured_at > t)
				t = e->measured_at;
		}
	}
	return t;
}

static json_t *spread_json(const struct rp_stat *st)
{
	if (!st->n)
		return json_null();
	return json_pack("{s:f, s:f, s:f, s:f, s:f}", "median", st->median, "p10", st->p10, "p90", st->p90, "min",
			 st->min, "max", st->max);
}

/* One entry of the group profile from slot s; NULL when out of memory. */
static json_t *slot_entry(const struct rt_report *r, const struct rp_group *g, const struct rp_slot *s, char *id)
{
	char when[32], text[256];

	rp_time(slot_newest(r, g, s), when);
	snprintf(text, sizeof(text),
		 "group profile of %s: lower medians over %zu of the group's %zu nodes (inliers, at least medium "
		 "confidence where there are any); calibrate the node to replace it",
		 g->id, s->rec_basis, g->n_nodes);
	return json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:n, s:s, s:s, s:s, s:s, s:[{s:s, s:s}],"
			 " s:s, s:s, s:n, s:{s:I, s:I, s:o, s:o, s:o, s:o}}",
			 "device", s->device, "guid", "", "port", (int)s->port, "opcode",
			 rt_profile_opcode_name((enum rt_profile_opcode)s->opcode), "qp_type",
			 rt_profile_qp_type_name((enum rt_profile_qp_type)s->qp_type), "inline_threshold",
			 (json_int_t)s->rec_threshold, "max_inline_data", (json_int_t)s->rec_max_inline,
			 "signal_interval", (json_int_t)s->rec_interval, "sq_depth", (json_int_t)s->rec_sq_depth,
			 "cq_depth", (json_int_t)s->rec_cq_depth, "cq_moderation", "cpus", "", "confidence",
			 s->rec_confidence, "inline_confidence", s->rec_confidence, "signal_confidence",
			 s->rec_confidence, "reasons", "code", "group_profile", "text", text, "measured_at", when,
			 "run_id", id, "app", "group", "entries", (json_int_t)s->n, "basis_nodes",
			 (json_int_t)s->rec_basis, "inline_threshold", spread_json(&s->st[RP_M_THRESHOLD]),
			 "signal_interval", spread_json(&s->st[RP_M_INTERVAL]), "latency_ns",
			 spread_json(&s->st[RP_M_LAT]), "mops", spread_json(&s->st[RP_M_MOPS]));
}

/* The group profile document of g (NULL when it has no recommendation, or out of memory: *oom set). */
static json_t *group_doc(const struct rt_report *r, const struct rp_group *g, bool *oom)
{
	const struct rp_node *first = &r->nodes[g->nodes[0]];
	char ver[16], now[32], host[64], id[48];
	json_t *entries = json_array(), *doc;
	size_t n = 0;

	*oom = !entries;
	snprintf(host, sizeof(host), "group-%s", g->id);
	for (char *p = host; *p; p++)
		if (*p == ':')
			*p = '-';
	{
		/* run_id must be a uuid: one derived from the group id, the same for every report of that class */
		uint64_t a = rp_fnv1a(0xcbf29ce484222325ULL, g->id), b = rp_fnv1a(a, "group-profile");

		snprintf(id, sizeof(id), "%08" PRIx64 "-%04" PRIx64 "-8%03" PRIx64 "-8%03" PRIx64 "-%012" PRIx64,
			 a >> 32, (a >> 16) & 0xffff, a & 0xfff, b >> 52, (uint64_t)(b & 0xffffffffffffULL));
	}
	for (size_t si = 0; entries && si < g->n_slots; si++) {
		json_t *e;

		if (!g->slots[si].has_rec)
			continue;
		e = slot_entry(r, g, &g->slots[si], id);
		if (!e || json_array_append_new(entries, e)) {
			*oom = true;
			json_decref(entries);
			return NULL;
		}
		n++;
	}
	if (!entries || !n) {
		json_decref(entries);
		return NULL;
	}
	snprintf(ver, sizeof(ver), "%d.%d", RT_PROFILE_SCHEMA_MAJOR, 3);
	rp_time(r->generated_at, now);
	doc = json_pack("{s:{s:s, s:s}, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i, s:i, s:s}, s:{s:s, s:s, s:b, s:I}, s:o}",
			"schema", "name", RT_PROFILE_SCHEMA_NAME, "version", ver, "rtune_version", RTUNE_VERSION,
			"generated_at", now, "node", "hostname", host, "machine_id", "", "cpu_model",
			first->cpu_model ? first->cpu_model : "", "kernel", "", "cpu_count", 0, "numa_nodes",
			first->numa_nodes > 0 ? first->numa_nodes : 1, "hardware_signature",
			g->from_hw ? "" : first->hw_sig, "group", "id", g->id, "label", g->label, "from_hardware",
			g->from_hw, "node_count", (json_int_t)g->n_nodes, "entries", entries);
	*oom = !doc;
	return doc;
}

long rp_write_group_profiles(const struct rt_report *r, const char *dir, struct rt_error *err)
{
	struct stat sb;
	long written = 0;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -rt_error_set(err, errno, "cannot create directory '%s': %s", dir, strerror(errno));
	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return -rt_error_set(err, ENOTDIR, "cannot write group profiles into '%s': not a directory", dir);
	for (size_t gi = 0; gi < r->n_groups; gi++) {
		const struct rp_group *g = &r->groups[gi];
		struct rt_profile *check = NULL;
		char path[4096], *text;
		bool oom;
		json_t *doc = group_doc(r, g, &oom);
		int rc;

		if (!doc) {
			if (oom)
				return -rt_error_set(err, ENOMEM, "group profiles: out of memory");
			continue;
		}
		/* what applications will load: checked by librtune's validator before it is written */
		if ((rc = rt_profile_from_json(doc, g->id, &check, err))) {
			json_decref(doc);
			return -rc;
		}
		rt_profile_free(check);
		text = json_dumps(doc, JSON_INDENT(2));
		json_decref(doc);
		if (!text)
			return -rt_error_set(err, ENOMEM, "group profiles: out of memory");
		snprintf(path, sizeof(path), "%s/%s.json", dir, g->id);
		for (char *p = path + strlen(dir) + 1; *p; p++)
			if (*p == ':')
				*p = '-';
		rc = rt_out_write_file(path, text, strlen(text), 0644, err);
		free(text);
		if (rc)
			return -rc;
		written++;
	}
	return written;
}

long rt_report_write_group_profiles(const struct rt_report *r, const char *dir, struct rt_error *err)
{
	return rp_write_group_profiles(r, dir, err);
}
