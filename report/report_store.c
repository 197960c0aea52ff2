// SPDX-License-Identifier: MIT
/*
 * The fleet report's store input. The store's public API gives each node's current profile (rt_store_get_profile),
 * the runs with the profile each produced (rt_store_run_list, for drift) and a run's environment and curves
 * (rt_store_run_load: where the calibration ran, latency vs size, rate vs N). What the API does not expose yet — the
 * list of nodes in a store, their hardware facts (devices, ports, PCIe) and where an imported entry's calibration ran
 * (profiles.cal_*) — is read here with read-only SQL on the store's own connection (rt_store_sqlite) against the
 * store's schema (store/store.c, schema version 3); this file is the only place in report/ that knows it.
 */
#include "report_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "rt_store.h"
#include "rt_store_json.h"
#include "lib/profile_internal.h"
#include "lib/profile_lex.h"
#include "rt_json_arena.h"
#include <rtune/profile.h>

static const char *col(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? t : "";
}

static int col_int(sqlite3_stmt *s, int i, int unknown_if_zero)
{
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		return -1;
	if (unknown_if_zero && sqlite3_column_int(s, i) == 0)
		return -1;
	return sqlite3_column_int(s, i);
}

/* The current devices of node_id (view current_devices) with their first port's link layer and MTU (read-only SQL). */
static int read_devices(sqlite3 *db, int64_t node_id, struct rp_node *n)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(
		    db,
		    "SELECT d.name, d.node_guid, d.vendor_id, d.vendor_part_id, d.fw_ver, d.numa_node, d.pci_addr,"
		    " d.pcie_speed, d.pcie_width, d.pcie_max_payload_bytes, d.pcie_max_read_req_bytes,"
		    " (SELECT link_layer FROM ports p WHERE p.device_id = d.id ORDER BY port_num LIMIT 1),"
		    " (SELECT active_mtu_bytes FROM ports p WHERE p.device_id = d.id ORDER BY port_num LIMIT 1)"
		    " FROM current_devices d WHERE d.node_id = ?1 ORDER BY d.name LIMIT 16",
		    -1, &s, NULL) != SQLITE_OK)
		return EIO;
	sqlite3_bind_int64(s, 1, node_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct rp_dev *nd = realloc(n->devs, (size_t)(n->n_devs + 1) * sizeof(*nd)), *d;

		if (!nd) {
			sqlite3_finalize(s);
			return ENOMEM;
		}
		n->devs = nd;
		d = &nd[n->n_devs++];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", col(s, 0));
		snprintf(d->guid, sizeof(d->guid), "%s", col(s, 1));
		d->vendor_id = col_int(s, 2, 0);
		d->vendor_part_id = col_int(s, 3, 0);
		snprintf(d->fw_ver, sizeof(d->fw_ver), "%s", col(s, 4));
		d->numa_node = col_int(s, 5, 0);
		d->has_pcie = col(s, 6)[0] != '\0';
		snprintf(d->pcie_speed, sizeof(d->pcie_speed), "%s", col(s, 7));
		d->pcie_width = col_int(s, 8, 1);
		d->mps = col_int(s, 9, 1);
		d->mrrs = col_int(s, 10, 1);
		snprintf(d->link_layer, sizeof(d->link_layer), "%s", col(s, 11));
		d->active_mtu = col_int(s, 12, 1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return EIO;
	n->has_hw = n->n_devs > 0;
	return 0;
}

/* Where an imported entry's calibration ran, as its own node's profile said (kept by `rtune import`); unknown (-1)
 * when the store has nothing. */
static void imported_cal(sqlite3 *db, int64_t node_id, struct rp_entry *e)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(db,
			       "SELECT cal_cpu_numa_node, cal_numa_local FROM profiles WHERE node_id = ?1"
			       " AND run_uuid = ?2 AND device = ?3 AND port = ?4 LIMIT 1",
			       -1, &s, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_text(s, 2, e->run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, e->device, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 4, e->port);
	if (sqlite3_step(s) == SQLITE_ROW) {
		e->cal_cpu_numa = (int16_t)col_int(s, 0, 0);
		e->cal_local = (int8_t)col_int(s, 1, 0);
	}
	sqlite3_finalize(s);
}

/* The measured evidence (latency at the threshold inline and not, rate at N and at N = 1, noise: the store's own
 * rt_store_measure_entry, as `rtune export` writes it), the latency and rate at the chosen settings from it, and
 * (optionally) the curves, from the entry's run. */
static void from_run(const struct rt_run *run, struct rp_entry *e, bool with_curves)
{
	enum rt_lat_kind kind;
	uint32_t min_rate_bytes = UINT32_MAX;
	bool rate_inl = false;
	struct rt_profile_entry pe = { 0 }; /* only the fields rt_store_measure_entry reads are set */

	e->cal_cpu_numa = (int16_t)run->env.cpu_numa_node;
	e->cal_local = run->env.numa_local ? 1 : 0;
	pe.opcode = (enum rt_profile_opcode)e->opcode;
	pe.qp_type = (enum rt_profile_qp_type)e->qp_type;
	pe.inline_threshold = e->inline_threshold;
	pe.signal_interval = e->signal_interval;
	rt_store_measure_entry(run, &pe);
	rp_entry_evidence(e, &pe);
	kind = e->lat_kind == 2 ? RT_LAT_POST_CQE : RT_LAT_PINGPONG;
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];

		if ((int)p->op != e->opcode || (int)p->qpt != e->qp_type)
			continue;
		if (p->msg_bytes < min_rate_bytes || (p->msg_bytes == min_rate_bytes && p->inl)) {
			min_rate_bytes = p->msg_bytes;
			rate_inl = p->inl;
		}
	}
	if (!with_curves || (!run->n_lat && !run->n_rate))
		return;
	e->curve = calloc(1, sizeof(*e->curve));
	if (!e->curve)
		return;
	for (size_t i = 0; i < run->n_lat; i++) {
		const struct rt_lat_point *p = &run->lat[i];
		struct rp_curve *c = e->curve;
		int k;

		if ((int)p->op != e->opcode || (int)p->qpt != e->qp_type || p->kind != kind)
			continue;
		for (k = 0; k < c->n_lat && c->lat[k].bytes != p->msg_bytes; k++)
			;
		if (k == c->n_lat) {
			if (c->n_lat == RP_MAX_CURVE)
				continue;
			c->n_lat++;
			c->lat[k].bytes = p->msg_bytes;
			c->lat[k].inl_ns = c->lat[k].noinl_ns = NAN;
		}
		if (p->inl)
			c->lat[k].inl_ns = (float)p->median_ns;
		else
			c->lat[k].noinl_ns = (float)p->median_ns;
	}
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];
		struct rp_curve *c = e->curve;
		int k;

		if ((int)p->op != e->opcode || (int)p->qpt != e->qp_type || p->msg_bytes != min_rate_bytes ||
		    p->inl != rate_inl)
			continue;
		for (k = 0; k < c->n_rate && c->rate[k].n != p->signal_interval; k++)
			;
		if (k == c->n_rate) {
			if (c->n_rate == RP_MAX_CURVE)
				continue;
			c->n_rate++;
			c->rate[k].n = p->signal_interval;
			c->rate[k].mops = (float)p->mops;
		} else if (p->mops > c->rate[k].mops) {
			c->rate[k].mops = (float)p->mops;
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double median_u32(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static int add_drift(struct rt_report *r, const char *path, const struct rt_store_run_summary *last, enum rp_metric m,
		     double latest, double hist, size_t hist_n)
{
	struct rp_drift *d;

	if (r->n_drifts == r->cap_drifts) {
		size_t cap = r->cap_drifts ? r->cap_drifts * 2 : 16;
		struct rp_drift *nd = realloc(r->drifts, cap * sizeof(*nd));

		if (!nd)
			return ENOMEM;
		r->drifts = nd;
		r->cap_drifts = cap;
	}
	d = &r->drifts[r->n_drifts];
	memset(d, 0, sizeof(*d));
	d->hostname = rp_strdup(last->hostname);
	d->device = rp_strdup(last->device);
	d->source = rp_strdup(path);
	if (!d->hostname || !d->device || !d->source) {
		free(d->hostname);
		free(d->device);
		free(d->source);
		return ENOMEM;
	}
	d->port = last->port_num;
	d->metric = m;
	d->latest = latest;
	d->hist_median = hist;
	d->hist_runs = hist_n;
	snprintf(d->evidence, sizeof(d->evidence),
		 "latest run %.36s chose %s %.0f, its %zu earlier runs' median is %.0f", last->uuid, rp_metric_name(m),
		 latest, hist_n, hist);
	r->n_drifts++;
	return 0;
}

/*
 * Drift: per (host, device, port), the complete runs that produced a profile, oldest first. With at least two earlier
 * runs, the latest drifted when its threshold is at least 1.5x (or 1/1.5x) away from the earlier runs' median and
 * more than 16 bytes, or its signal interval at least 2x away.
 */
static int find_drift(struct rt_report *r, struct rt_store *st, const char *path)
{
	struct rt_store_run_summary *v = NULL;
	struct rt_error err;
	uint32_t *a = NULL, *b = NULL;
	size_t n = 0;
	int rc = 0;

	if (rt_store_run_list(st, NULL, &v, &n, &err)) {
		rp_problem(r, "%s: runs not read (no drift): %s", path, err.text);
		return 0;
	}
	a = malloc((n + 1) * sizeof(*a));
	b = malloc((n + 1) * sizeof(*b));
	if (!a || !b) {
		rc = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct rt_store_run_summary *last = NULL;
		size_t k = 0;

		if (!v[i].has_profile || v[i].status != RT_RUN_COMPLETE)
			continue;
		/* is i the latest of its series? collect the earlier ones */
		for (size_t j = i + 1; j < n && !last; j++)
			if (v[j].has_profile && v[j].status == RT_RUN_COMPLETE && v[j].port_num == v[i].port_num &&
			    !strcmp(v[j].hostname, v[i].hostname) && !strcmp(v[j].device, v[i].device))
				last = &v[j];
		if (last)
			continue;
		last = &v[i];
		for (size_t j = 0; j < i; j++)
			if (v[j].has_profile && v[j].status == RT_RUN_COMPLETE && v[j].port_num == last->port_num &&
			    !strcmp(v[j].hostname, last->hostname) && !strcmp(v[j].device, last->device)) {
				a[k] = v[j].inline_threshold;
				b[k] = v[j].signal_interval;
				k++;
			}
		if (k < 2)
			continue;
		{
			double mt = median_u32(a, k), mi = median_u32(b, k);
			double lt = last->inline_threshold, li = last->signal_interval;

			bool thr_moved =
				fabs(lt - mt) > 16 && ((lt + 1) / (mt + 1) >= 1.5 || (mt + 1) / (lt + 1) >= 1.5);

			if (thr_moved && (rc = add_drift(r, path, last, RP_M_THRESHOLD, lt, mt, k)))
				goto out;
			if ((li / mi >= 2 || mi / li >= 2) && (rc = add_drift(r, path, last, RP_M_INTERVAL, li, mi, k)))
				goto out;
		}
	}
out:
	free(a);
	free(b);
	free(v);
	return rc;
}

int rp_store_bulk_min_nodes = 256;
int rp_store_bulk_part_nodes = 8192;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Index of node id in the sorted ids, or -1. */
static long node_index(const int64_t *ids, size_t n, int64_t id)
{
	const int64_t *hit = n ? bsearch(&id, ids, n, sizeof(*ids), cmp_i64) : NULL;

	return hit ? (long)(hit - ids) : -1;
}

/*
 * An imported entry's measured evidence from its profile row's hysteresis column (text, len bytes; NULL for none) into
 * pe, as rt_store_measured_read() reads the column's "measured" object: a column that is not a JSON object, or whose
 * "measured" is not an object, gives none (has_measured false, figures NAN). Read in place with librtune's lexer, no
 * tree built: the bulk read does this for every entry of a fleet. Never fails.
 */
static void measured_from_hysteresis(const char *text, size_t len, struct rt_profile_entry *pe)
{
	static const char *const keys[] = { "latency_kind",	   "mops_at_n",	 "msg_bytes", "latency_inline_ns",
					    "latency_noinline_ns", "mops_at_n1", "noise_pct" };
	double *const reals[] = {
		NULL, &pe->mops_at_n, NULL, &pe->lat_inline_ns, &pe->lat_noinline_ns, &pe->mops_at_n1, &pe->noise_pct
	};
	struct rt_jv doc, m, v[7];
	struct rt_jlex l;

	pe->has_measured = false;
	pe->lat_kind[0] = '\0';
	pe->lat_bytes = 0;
	pe->lat_inline_ns = pe->lat_noinline_ns = pe->mops_at_n = pe->mops_at_n1 = pe->noise_pct = NAN;
	if (!text)
		return;
	rt_jlex_init(&l, text, len);
	if (rt_jlex_expect_container(&l) || rt_jlex_value(&l, &doc) || rt_jlex_end(&l) || doc.t != RT_JV_OBJ ||
	    rt_jlex_member(&l, &doc, "measured", &m) || m.t != RT_JV_OBJ || rt_jlex_members(&l, &m, keys, 7, v))
		goto out;
	if (v[0].t == RT_JV_STR)
		snprintf(pe->lat_kind, sizeof(pe->lat_kind), "%.*s", (int)v[0].n, v[0].s);
	if (v[2].t == RT_JV_INT && v[2].i > 0 && v[2].i <= UINT32_MAX)
		pe->lat_bytes = (uint32_t)v[2].i;
	for (int i = 1; i < 7; i++)
		if (reals[i] && (v[i].t == RT_JV_INT || v[i].t == RT_JV_REAL))
			*reals[i] = v[i].t == RT_JV_INT ? (double)v[i].i : v[i].d;
	pe->has_measured = true;
out:
	rt_jlex_fini(&l);
}

/* The measured evidence columns (schema v11: kind, msg_bytes, then the five reals; NULL reals unknown) of the row at
 * s from column i into pe, as written from the entry whose hysteresis column holds the same evidence. */
static void measured_from_columns(sqlite3_stmt *s, int i, struct rt_profile_entry *pe)
{
	double *const reals[] = { &pe->lat_inline_ns, &pe->lat_noinline_ns, &pe->mops_at_n, &pe->mops_at_n1,
				  &pe->noise_pct };
	int64_t b = sqlite3_column_int64(s, i + 1);

	pe->has_measured = true;
	snprintf(pe->lat_kind, sizeof(pe->lat_kind), "%s", col(s, i));
	pe->lat_bytes = b > 0 && b <= UINT32_MAX ? (uint32_t)b : 0;
	for (int k = 0; k < 5; k++)
		*reals[k] =
			sqlite3_column_type(s, i + 2 + k) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i + 2 + k);
}

/* A text column's value kept to recognise the next row's (the key of a profile row): exact, or never equal when it is
 * longer than the buffer. */
struct col_key {
	char s[64];
	int n; /* bytes, -1: too long to keep */
};

static bool col_key_eq(const struct col_key *k, sqlite3_stmt *s, int i)
{
	int n = sqlite3_column_bytes(s, i);

	return k->n >= 0 && k->n == n && (n == 0 || !memcmp(k->s, sqlite3_column_text(s, i), (size_t)n));
}

static void col_key_set(struct col_key *k, sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	int n = sqlite3_column_bytes(s, i);

	k->n = t && n < (int)sizeof(k->s) ? n : -1;
	if (k->n > 0)
		memcpy(k->s, t, (size_t)n);
}

/* One part of a bulk read: the nodes [0, n) of a contiguous range of node ids, filled by one thread on its own
 * connection (part 0 on the caller's). */
struct bulk_part {
	const struct rt_report *r;
	const char *path;
	struct rt_store *st; /* the caller's store for part 0; NULL: the worker opens its own */
	struct rp_node *nodes;
	const int64_t *ids;
	size_t n;
	int rc; /* 0, ENOMEM, or EIO with msg */
	char msg[RT_ERROR_TEXT_LEN];
	pthread_t tid;
	bool started;
};

/* Appends a zeroed entry to node (the array grows by doubling: n_entries is its own capacity hint). NULL: ENOMEM. */
static struct rp_entry *node_entry_add(struct rp_node *node)
{
	size_t n = node->n_entries;

	if (n == 0 || (n >= 4 && !(n & (n - 1)))) {
		struct rp_entry *ne = realloc(node->entries, (n ? 2 * n : 4) * sizeof(*ne));

		if (!ne)
			return NULL;
		node->entries = ne;
	}
	node->n_entries++;
	memset(&node->entries[n], 0, sizeof(node->entries[n]));
	return &node->entries[n];
}

/* The part's nodes' current devices (per name the one seen last, as an export lists them) with their first port. */
static int bulk_devices(struct bulk_part *p, sqlite3 *db)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (sqlite3_prepare_v2(
		    db,
		    "SELECT d.node_id, d.name, d.node_guid, d.vendor_id, d.vendor_part_id, d.fw_ver, d.numa_node, d.pci_addr,"
		    " d.pcie_speed, d.pcie_width, d.pcie_max_payload_bytes, d.pcie_max_read_req_bytes,"
		    " (SELECT link_layer FROM ports p WHERE p.device_id = d.id ORDER BY port_num LIMIT 1),"
		    " (SELECT active_mtu_bytes FROM ports p WHERE p.device_id = d.id ORDER BY port_num LIMIT 1)"
		    " FROM current_devices d WHERE d.node_id BETWEEN ?1 AND ?2 ORDER BY d.node_id, d.name",
		    -1, &s, NULL) != SQLITE_OK)
		return EIO;
	sqlite3_bind_int64(s, 1, p->ids[0]);
	sqlite3_bind_int64(s, 2, p->ids[p->n - 1]);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		long k = node_index(p->ids, p->n, sqlite3_column_int64(s, 0));
		struct rp_node *node;
		struct rp_dev *nd, *d;

		if (k < 0 || p->nodes[k].n_devs >= RP_MAX_DEVS)
			continue;
		node = &p->nodes[k];
		nd = realloc(node->devs, (size_t)(node->n_devs + 1) * sizeof(*nd));
		if (!nd) {
			sqlite3_finalize(s);
			return ENOMEM;
		}
		node->devs = nd;
		d = &nd[node->n_devs++];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", col(s, 1));
		snprintf(d->guid, sizeof(d->guid), "%s", col(s, 2));
		d->vendor_id = col_int(s, 3, 0);
		d->vendor_part_id = col_int(s, 4, 0);
		snprintf(d->fw_ver, sizeof(d->fw_ver), "%s", col(s, 5));
		d->numa_node = col_int(s, 6, 0);
		d->has_pcie = col(s, 7)[0] != '\0';
		snprintf(d->pcie_speed, sizeof(d->pcie_speed), "%s", col(s, 8));
		d->pcie_width = col_int(s, 9, 1);
		d->mps = col_int(s, 10, 1);
		d->mrrs = col_int(s, 11, 1);
		snprintf(d->link_layer, sizeof(d->link_layer), "%s", col(s, 12));
		d->active_mtu = col_int(s, 13, 1);
		node->has_hw = true;
	}
	sqlite3_finalize(s);
	return step == SQLITE_DONE ? 0 : EIO;
}

/*
 * The part's nodes' current profiles: per node, device, port, opcode and QP type the most recently measured entry
 * (measured_at, then the row id: rt_store_get_profile's definition). One scan in that key order (the profiles_current
 * index), each row replacing the previous one of its key, instead of a lookup of the newest row per row.
 */
static int bulk_profiles(struct bulk_part *p, struct rt_store *st, sqlite3 *db)
{
	struct col_key dev = { .n = -1 }, op = { .n = -1 }, qpt = { .n = -1 };
	int64_t prev_node = -1;
	int prev_port = -1, step;
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(
		    db,
		    "SELECT node_id, device, port, op, qpt, inline_threshold, max_inline_data, signal_interval, sq_depth,"
		    " cq_depth, numa_node, confidence, measured_at, run_uuid,"
		    " EXISTS (SELECT 1 FROM runs r WHERE r.uuid = p.run_uuid), cal_cpu_numa_node, cal_numa_local,"
		    " hysteresis, measured_kind, measured_msg_bytes, measured_lat_inline_ns, measured_lat_noinline_ns,"
		    " measured_mops_at_n, measured_mops_at_n1, measured_noise_pct"
		    " FROM profiles p WHERE node_id BETWEEN ?1 AND ?2"
		    " ORDER BY node_id, device, port, op, qpt, measured_at, id",
		    -1, &s, NULL) != SQLITE_OK)
		return EIO;
	sqlite3_bind_int64(s, 1, p->ids[0]);
	sqlite3_bind_int64(s, 2, p->ids[p->n - 1]);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		int port = sqlite3_column_int(s, 2);
		long k = node_index(p->ids, p->n, id);
		const char *conf = col(s, 11);
		struct rp_node *node;
		struct rp_entry *e;
		enum rt_profile_qp_type qt;

		if (k < 0)
			continue;
		node = &p->nodes[k];
		if (node->n_entries && id == prev_node && port == prev_port && col_key_eq(&dev, s, 1) &&
		    col_key_eq(&op, s, 3) && col_key_eq(&qpt, s, 4)) {
			/* a newer row of the same key: it replaces the one read before */
			e = &node->entries[node->n_entries - 1];
			free(e->curve);
			memset(e, 0, sizeof(*e));
		} else if (!(e = node_entry_add(node))) {
			sqlite3_finalize(s);
			return ENOMEM;
		}
		prev_node = id;
		prev_port = port;
		col_key_set(&dev, s, 1);
		col_key_set(&op, s, 3);
		col_key_set(&qpt, s, 4);
		snprintf(e->device, sizeof(e->device), "%s", col(s, 1));
		e->port = (uint8_t)port;
		e->opcode = strcmp(col(s, 3), "write") == 0 ? RT_PROFILE_OP_WRITE : RT_PROFILE_OP_SEND;
		e->qp_type = rt_profile_qp_type_parse(col(s, 4), &qt) ? RT_PROFILE_QPT_RC : (uint8_t)qt;
		e->inline_threshold = (uint32_t)sqlite3_column_int64(s, 5);
		e->max_inline_data = (uint32_t)sqlite3_column_int64(s, 6);
		e->signal_interval = (uint32_t)sqlite3_column_int64(s, 7);
		e->sq_depth = (uint32_t)sqlite3_column_int64(s, 8);
		e->cq_depth = (uint32_t)sqlite3_column_int64(s, 9);
		e->numa_node = (int16_t)sqlite3_column_int(s, 10);
		e->confidence = !strcmp(conf, "high")	  ? RT_PROFILE_CONF_HIGH
				: !strcmp(conf, "medium") ? RT_PROFILE_CONF_MEDIUM
							  : RT_PROFILE_CONF_LOW;
		e->measured_at = sqlite3_column_int64(s, 12);
		snprintf(e->run_id, sizeof(e->run_id), "%s", col(s, 13));
		/* an imported entry: where its own node said it calibrated (a run of this store overrides it) */
		e->cal_cpu_numa = (int16_t)col_int(s, 15, 0);
		e->cal_local = (int8_t)col_int(s, 16, 0);
		e->lat_ns = e->mops = NAN;
		e->lat_inl_ns = e->lat_noinl_ns = e->mops_n1 = e->noise_pct = NAN;
		if (sqlite3_column_type(s, 18) != SQLITE_NULL) {
			/* an imported entry's evidence, kept by `rtune import` (its run is on its own node): the columns */
			struct rt_profile_entry pe;

			measured_from_columns(s, 18, &pe);
			rp_entry_evidence(e, &pe);
		} else if (sqlite3_column_type(s, 17) == SQLITE_TEXT) {
			/* none in the columns: a row written before schema v11 may still hold it in the hysteresis */
			struct rt_profile_entry pe;

			measured_from_hysteresis((const char *)sqlite3_column_text(s, 17),
						 (size_t)sqlite3_column_bytes(s, 17), &pe);
			rp_entry_evidence(e, &pe);
		}
		if (sqlite3_column_int(s, 14)) {
			struct rt_run run;

			if (rt_store_run_load(st, e->run_id, NULL, &run, NULL) == 0) {
				from_run(&run, e, p->r->opts.with_curves);
				rt_run_release(&run);
			}
		}
	}
	sqlite3_finalize(s);
	if (step != SQLITE_DONE)
		return EIO;
	for (size_t i = 0; i < p->n; i++)
		for (int j = 0; j < p->nodes[i].n_entries; j++)
			if (p->nodes[i].entries[j].measured_at > p->nodes[i].newest)
				p->nodes[i].newest = p->nodes[i].entries[j].measured_at;
	return 0;
}

/* Reads one part (a thread's body): devices, then profiles, on the part's own connection. */
static void *bulk_part_read(void *arg)
{
	struct bulk_part *p = arg;
	struct rt_store *st = p->st;
	struct rt_error err;
	sqlite3 *db;

	if (!st && rt_store_open_existing(p->path, &st, &err)) {
		p->rc = EIO;
		snprintf(p->msg, sizeof(p->msg), "%s", err.text);
		return NULL;
	}
	db = rt_store_sqlite(st);
	if (!(p->rc = bulk_devices(p, db)))
		p->rc = bulk_profiles(p, st, db);
	if (p->rc == EIO)
		snprintf(p->msg, sizeof(p->msg), "cannot read store '%s': %s", p->path, sqlite3_errmsg(db));
	if (st != p->st)
		rt_store_close(st);
	return NULL;
}

/*
 * A store holding many nodes (profiles imported from a fleet): rt_store_get_profile() reads one node per call and
 * picks it with a scan, which is quadratic over 10,000s of nodes, so here the nodes are read in one query, then their
 * devices and current profiles in one scan each per part: the nodes are split into contiguous id ranges of at least
 * rp_store_bulk_part_nodes, one per online CPU (at most 8), each read by its own thread on its own connection (WAL:
 * readers do not wait for each other), and the parts are added in node id order, so the report is the same whatever
 * the split. Returns nodes added or -ENOMEM; problems recorded (a part that cannot be read: its nodes are left out).
 */
static long read_store_bulk(struct rt_report *r, struct rt_store *st, sqlite3 *db, const char *path)
{
	struct bulk_part parts[8];
	struct rp_node *nodes = NULL;
	int64_t *ids = NULL;
	size_t n = 0, cap = 0, np = 1;
	sqlite3_stmt *s = NULL;
	long added = 0, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int step;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, node_key, hostname, cpu_model, numa_nodes, hw_signature FROM nodes n"
			       " WHERE EXISTS (SELECT 1 FROM profiles p WHERE p.node_id = n.id) ORDER BY id",
			       -1, &s, NULL) != SQLITE_OK)
		goto sqlfail;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rp_node *nd;

		if (n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			struct rp_node *nn = realloc(nodes, nc * sizeof(*nn));
			int64_t *ni = realloc(ids, nc * sizeof(*ni));

			if (nn)
				nodes = nn;
			if (ni)
				ids = ni;
			if (!nn || !ni)
				goto oom;
			cap = nc;
		}
		nd = &nodes[n];
		memset(nd, 0, sizeof(*nd));
		ids[n++] = sqlite3_column_int64(s, 0);
		nd->group = -1;
		nd->node_key = rp_strdup(col(s, 1));
		nd->hostname = rp_strdup(col(s, 2));
		nd->cpu_model = rp_strdup(col(s, 3));
		nd->source = rp_strdup(path);
		nd->numa_nodes = col_int(s, 4, 1);
		snprintf(nd->hw_sig, sizeof(nd->hw_sig), "%s", col(s, 5));
		if (!nd->node_key || !nd->hostname || !nd->cpu_model || !nd->source)
			goto oom;
	}
	if (step != SQLITE_DONE)
		goto sqlfail;
	sqlite3_finalize(s);
	s = NULL;
	if (n == 0)
		goto out;
	if (cpus > 1 && rp_store_bulk_part_nodes > 0) {
		size_t by_size = n / (size_t)rp_store_bulk_part_nodes;

		np = (size_t)(cpus < 8 ? cpus : 8);
		if (by_size < np)
			np = by_size ? by_size : 1;
	}
	memset(parts, 0, sizeof(parts));
	for (size_t i = 0; i < np; i++) {
		size_t lo = n * i / np, hi = n * (i + 1) / np;

		parts[i] = (struct bulk_part){
			.r = r, .path = path, .st = i ? NULL : st, .nodes = nodes + lo, .ids = ids + lo, .n = hi - lo
		};
	}
	for (size_t i = 1; i < np; i++)
		parts[i].started = pthread_create(&parts[i].tid, NULL, bulk_part_read, &parts[i]) == 0;
	bulk_part_read(&parts[0]);
	for (size_t i = 1; i < np; i++) {
		if (parts[i].started)
			pthread_join(parts[i].tid, NULL);
		else
			bulk_part_read(&parts[i]); /* no thread: read it here */
	}
	for (size_t i = 0; i < np; i++) {
		if (parts[i].rc == ENOMEM)
			goto oom;
		if (parts[i].rc) {
			rp_problem(r, "%s", parts[i].msg);
			for (size_t k = 0; k < parts[i].n; k++)
				rp_node_release(&parts[i].nodes[k]); /* not reported */
		}
	}
	for (size_t i = 0; i < n; i++) {
		long idx;

		if (nodes[i].n_entries == 0) {
			rp_node_release(&nodes[i]);
			continue;
		}
		idx = rp_add_node(r, &nodes[i]);
		if (idx < 0) {
			for (size_t k = i + 1; k < n; k++)
				rp_node_release(&nodes[k]);
			n = 0;
			added = idx;
			goto out;
		}
		added++;
	}
	n = 0;
	goto out;
sqlfail:
	rp_problem(r, "cannot read store '%s': %s", path, sqlite3_errmsg(db));
	goto out;
oom:
	added = -ENOMEM;
out:
	sqlite3_finalize(s);
	for (size_t i = 0; i < n; i++)
		rp_node_release(&nodes[i]);
	free(nodes);
	free(ids);
	return added;
}

long rp_read_store(struct rt_report *r, const char *path)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long added = 0;
	int rc, step;

	if (rt_store_open_existing(path, &st, &err)) {
		rp_problem(r, "%s", err.text);
		return 0;
	}
	db = rt_store_sqlite(st);
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT id, node_key, hostname, machine_id, cpu_model, numa_nodes, hw_signature"
		    " FROM nodes n WHERE EXISTS (SELECT 1 FROM profiles p WHERE p.node_id = n.id) ORDER BY id",
		    -1, &s, NULL) != SQLITE_OK) {
		rp_problem(r, "cannot read store '%s': %s", path, sqlite3_errmsg(db));
		goto out;
	}
	{
		int nodes = 0;
		sqlite3_stmt *c = NULL;

		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM nodes", -1, &c, NULL) == SQLITE_OK &&
		    sqlite3_step(c) == SQLITE_ROW)
			nodes = sqlite3_column_int(c, 0);
		sqlite3_finalize(c);
		if (nodes >= rp_store_bulk_min_nodes) {
			added = read_store_bulk(r, st, db, path);
			goto done;
		}
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_profile_entry *v = NULL;
		struct rp_node n;
		size_t cnt = 0;
		long idx;

		memset(&n, 0, sizeof(n));
		n.group = -1;
		n.node_key = rp_strdup(col(s, 1));
		n.hostname = rp_strdup(col(s, 2));
		n.cpu_model = rp_strdup(col(s, 4));
		n.source = rp_strdup(path);
		n.numa_nodes = col_int(s, 5, 1);
		snprintf(n.hw_sig, sizeof(n.hw_sig), "%s", col(s, 6));
		if (!n.node_key || !n.hostname || !n.cpu_model || !n.source) {
			rp_node_release(&n);
			added = -ENOMEM;
			goto out;
		}
		if (rt_store_get_profile(st, n.node_key, NULL, &v, &cnt, NULL, NULL, &err)) {
			rp_problem(r, "%s: node '%s': %s", path, n.hostname, err.text);
			rp_node_release(&n);
			continue;
		}
		if ((rc = read_devices(db, sqlite3_column_int64(s, 0), &n))) {
			free(v);
			rp_node_release(&n);
			if (rc == ENOMEM) {
				added = -ENOMEM;
				goto out;
			}
			rp_problem(r, "%s: node '%s': devices not read: %s", path, n.hostname, sqlite3_errmsg(db));
			continue;
		}
		n.entries = cnt ? calloc(cnt, sizeof(*n.entries)) : NULL;
		if (cnt && !n.entries) {
			free(v);
			rp_node_release(&n);
			added = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < cnt; i++) {
			struct rp_entry *e = &n.entries[n.n_entries++];
			struct rt_run run;

			memset(e, 0, sizeof(*e));
			snprintf(e->device, sizeof(e->device), "%s", v[i].device);
			e->port = (uint8_t)v[i].port;
			e->opcode = (uint8_t)v[i].opcode;
			e->qp_type = (uint8_t)v[i].qp_type;
			e->confidence = (uint8_t)v[i].confidence;
			e->inline_threshold = v[i].inline_threshold;
			e->max_inline_data = v[i].max_inline_data;
			e->signal_interval = v[i].signal_interval;
			e->sq_depth = v[i].sq_depth;
			e->cq_depth = v[i].cq_depth;
			e->numa_node = (int16_t)v[i].numa_node;
			e->cal_cpu_numa = -1;
			e->cal_local = -1;
			e->measured_at = v[i].measured_at;
			snprintf(e->run_id, sizeof(e->run_id), "%s", v[i].run_id);
			e->lat_ns = e->mops = NAN;
			e->lat_inl_ns = e->lat_noinl_ns = e->mops_n1 = e->noise_pct = NAN;
			if (e->measured_at > n.newest)
				n.newest = e->measured_at;
			/* the run behind the entry, when this store has it (an imported profile's run stays on its node:
			 * then where that node said it calibrated, kept by the import) */
			if (rt_store_run_load(st, e->run_id, NULL, &run, NULL) == 0) {
				from_run(&run, e, r->opts.with_curves);
				rt_run_release(&run);
			} else {
				imported_cal(db, sqlite3_column_int64(s, 0), e);
				rp_entry_evidence(e, &v[i]);
			}
		}
		free(v);
		if (n.n_entries == 0) {
			rp_node_release(&n);
			continue;
		}
		idx = rp_add_node(r, &n);
		if (idx < 0) {
			added = idx;
			goto out;
		}
		added++;
	}
	if (step != SQLITE_DONE) {
		rp_problem(r, "cannot read store '%s': %s", path, sqlite3_errmsg(db));
		goto out;
	}
done:
	if (added < 0)
		goto out;
	if (added == 0)
		rp_problem(r, "%s: store holds no profiles (run 'rtune calibrate' and 'rtune tune', or 'rtune import')",
			   path);
	else
		r->n_inputs_ok++;
	if ((rc = find_drift(r, st, path)))
		added = -rc;
out:
	sqlite3_finalize(s);
	rt_store_close(st);
	return added;
}
