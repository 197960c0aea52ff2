// SPDX-License-Identifier: MIT
/*
 * Calibration runs in the store: begin (node, device, ports and the run, status "running", in one transaction), points
 * appended in transactions, results and finish; loading a run back with its points for the tuner, and the run list of
 * `rtune history` with each run's effective status (a "running" run whose process is gone was interrupted).
 * Also the application histograms the probe records.
 */
#include "store_internal.h"
#include "rt_buf.h"
#include "rt_json_arena.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int make_uuid(char out[40], struct rt_error *err)
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return rt_error_set(err, errno ? errno : EIO, "cannot make a run id: getrandom failed");
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
		 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

static char *env_to_json(const struct rt_run_env *e)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:b, s:s, s:f, s:s, s:s, s:s}", "cpu", e->cpu, "cpu_numa_node",
			      e->cpu_numa_node, "device_numa_node", e->device_numa_node, "numa_local", e->numa_local,
			      "clock", e->clock, "tsc_ghz", e->tsc_ghz, "clocksource", e->clocksource, "mode", e->mode,
			      "peer", e->peer);
	char *s;

	/* the clock's tick and measured resolution (ns), the CPU placement and the two sides' max inline, kept in the
	 * env JSON: no column of their own */
	if (o && (json_object_set_new(o, "clock_tick_ns", json_real(e->clock_tick_ns)) ||
		  json_object_set_new(o, "clock_resolution_ns", json_real(e->clock_resolution_ns)) ||
		  json_object_set_new(o, "resp_cpu", json_integer(e->resp_cpu)) ||
		  json_object_set_new(o, "cpu_isolated", json_boolean(e->cpu_isolated)) ||
		  json_object_set_new(o, "smt_siblings", json_boolean(e->smt_siblings)) ||
		  json_object_set_new(o, "governor", json_string(e->governor)) ||
		  json_object_set_new(o, "placement_warning", json_string(e->placement_warning)) ||
		  json_object_set_new(o, "client_max_inline", json_integer(e->client_max_inline)) ||
		  json_object_set_new(o, "server_max_inline", json_integer(e->server_max_inline)))) {
		json_decref(o);
		o = NULL;
	}
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

static void env_from_json(const char *text, struct rt_run_env *e)
{
	json_t *o = text ? rt_json_loads(text, 0, NULL) : NULL;

	memset(e, 0, sizeof(*e));
	e->cpu = e->cpu_numa_node = e->device_numa_node = -1;
	if (!o)
		return;
	e->cpu = (int)json_integer_value(json_object_get(o, "cpu"));
	e->cpu_numa_node = (int)json_integer_value(json_object_get(o, "cpu_numa_node"));
	e->device_numa_node = (int)json_integer_value(json_object_get(o, "device_numa_node"));
	e->numa_local = json_is_true(json_object_get(o, "numa_local"));
	e->tsc_ghz = json_number_value(json_object_get(o, "tsc_ghz"));
	e->clock_tick_ns = json_number_value(json_object_get(o, "clock_tick_ns"));
	e->clock_resolution_ns = json_number_value(json_object_get(o, "clock_resolution_ns"));
	rt_store_json_copy_str(e->clock, sizeof(e->clock), o, "clock");
	rt_store_json_copy_str(e->clocksource, sizeof(e->clocksource), o, "clocksource");
	rt_store_json_copy_str(e->mode, sizeof(e->mode), o, "mode");
	rt_store_json_copy_str(e->peer, sizeof(e->peer), o, "peer");
	e->resp_cpu = json_is_integer(json_object_get(o, "resp_cpu"))
			      ? (int)json_integer_value(json_object_get(o, "resp_cpu"))
			      : -1; /* a run stored before placement was recorded */
	e->cpu_isolated = json_is_true(json_object_get(o, "cpu_isolated"));
	e->smt_siblings = json_is_true(json_object_get(o, "smt_siblings"));
	rt_store_json_copy_str(e->governor, sizeof(e->governor), o, "governor");
	rt_store_json_copy_str(e->placement_warning, sizeof(e->placement_warning), o, "placement_warning");
	e->client_max_inline = (uint32_t)json_integer_value(json_object_get(o, "client_max_inline"));
	e->server_max_inline = (uint32_t)json_integer_value(json_object_get(o, "server_max_inline"));
	json_decref(o);
}

static char *cqmod_to_json(const struct rt_cq_moderation *m)
{
	json_t *a = json_array();
	char *s;

	for (int i = 0; a && i < RT_OP__COUNT; i++)
		json_array_append_new(a, json_pack("{s:s, s:b, s:b, s:s, s:i, s:i, s:f, s:f}", "opcode",
						   rt_opcode_name((enum rt_opcode)i), "measured", m[i].measured,
						   "supported", m[i].supported, "reason", m[i].reason, "best_count",
						   (int)m[i].best_count, "best_period_us", (int)m[i].best_period_us,
						   "mops_off", m[i].mops_off, "mops_best", m[i].mops_best));
	s = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return s;
}

static void cqmod_from_json(const char *text, struct rt_cq_moderation *m)
{
	json_t *a = text ? rt_json_loads(text, 0, NULL) : NULL;

	memset(m, 0, sizeof(*m) * RT_OP__COUNT);
	for (size_t i = 0; a && i < json_array_size(a) && i < RT_OP__COUNT; i++) {
		json_t *o = json_array_get(a, i);

		m[i].measured = json_is_true(json_object_get(o, "measured"));
		m[i].supported = json_is_true(json_object_get(o, "supported"));
		rt_store_json_copy_str(m[i].reason, sizeof(m[i].reason), o, "reason");
		m[i].best_count = (uint32_t)json_integer_value(json_object_get(o, "best_count"));
		m[i].best_period_us = (uint32_t)json_integer_value(json_object_get(o, "best_period_us"));
		m[i].mops_off = json_number_value(json_object_get(o, "mops_off"));
		m[i].mops_best = json_number_value(json_object_get(o, "mops_best"));
	}
	json_decref(a);
}

static char *gids_to_json(const struct rt_port_info *p)
{
	json_t *a = json_array();
	char *s;

	for (int i = 0; a && i < p->gid_count && i < RT_MAX_GIDS; i++)
		json_array_append_new(a, json_pack("{s:i, s:s, s:s}", "index", p->gids[i].index, "gid", p->gids[i].gid,
						   "type", p->gids[i].type));
	s = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return s;
}

static void gids_from_json(const char *text, struct rt_port_info *p)
{
	json_t *a = text ? rt_json_loads(text, 0, NULL) : NULL;

	p->gid_count = 0;
	for (size_t i = 0; a && i < json_array_size(a) && i < RT_MAX_GIDS; i++) {
		json_t *o = json_array_get(a, i);

		p->gids[i].index = (int)json_integer_value(json_object_get(o, "index"));
		rt_store_json_copy_str(p->gids[i].gid, sizeof(p->gids[i].gid), o, "gid");
		rt_store_json_copy_str(p->gids[i].type, sizeof(p->gids[i].type), o, "type");
		p->gid_count++;
	}
	json_decref(a);
}

/* The device as a run saw it, as the JSON text runs.device keeps (every field of struct rt_device_info, ports with
 * their GIDs); NULL when out of memory. */
static char *device_to_json(const struct rt_device_info *d)
{
	json_t *o, *ports = json_array();
	char *s = NULL;

	for (int i = 0; ports && i < d->port_count && i < RT_MAX_PORTS; i++) {
		const struct rt_port_info *p = &d->ports[i];
		json_t *gids = json_array();

		for (int g = 0; gids && g < p->gid_count && g < RT_MAX_GIDS; g++)
			json_array_append_new(gids, json_pack("{s:i, s:s, s:s}", "index", p->gids[g].index, "gid",
							      p->gids[g].gid, "type", p->gids[g].type));
		json_array_append_new(ports,
				      json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:o}", "port_num", p->port_num,
						"state", p->state, "link_layer", p->link_layer, "active_mtu_bytes",
						p->active_mtu_bytes, "max_mtu_bytes", p->max_mtu_bytes, "lid", p->lid,
						"gid_tbl_len", p->gid_tbl_len, "gids", gids ? gids : json_null()));
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s,"
		      " s:i, s:i, s:i, s:o}",
		      "name", d->name, "node_guid", d->node_guid, "transport", d->transport, "fw_ver", d->fw_ver,
		      "vendor_id", (json_int_t)d->vendor_id, "vendor_part_id", (json_int_t)d->vendor_part_id, "hw_ver",
		      (json_int_t)d->hw_ver, "max_qp", d->max_qp, "max_qp_wr", d->max_qp_wr, "max_sge", d->max_sge,
		      "max_cqe", d->max_cqe, "max_qp_rd_atom", d->max_qp_rd_atom, "max_mr", d->max_mr, "max_inline_rc",
		      d->max_inline_rc, "max_inline_ud", d->max_inline_ud, "numa_node", d->numa_node, "local_cpus",
		      d->local_cpus, "pci_addr", d->pci_addr, "pcie_speed", d->pcie_speed, "pcie_width", d->pcie_width,
		      "pcie_max_payload_bytes", d->pcie_max_payload_bytes, "pcie_max_read_req_bytes",
		      d->pcie_max_read_req_bytes, "ports", ports ? ports : json_null());
	if (o)
		s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static int json_int(json_t *o, const char *key)
{
	return (int)json_integer_value(json_object_get(o, key));
}

/* Fills d from device_to_json()'s text; ENOENT when text is NULL (a run stored before schema v4), EINVAL when it is
 * not such a document (d is then left as it was). */
static int device_from_json(const char *text, struct rt_device_info *d)
{
	json_t *o, *ports;

	if (!text)
		return ENOENT;
	o = rt_json_loads(text, 0, NULL);
	if (!json_is_object(o) || !json_is_string(json_object_get(o, "name"))) {
		json_decref(o);
		return EINVAL;
	}
	memset(d, 0, sizeof(*d));
	rt_store_json_copy_str(d->name, sizeof(d->name), o, "name");
	rt_store_json_copy_str(d->node_guid, sizeof(d->node_guid), o, "node_guid");
	rt_store_json_copy_str(d->transport, sizeof(d->transport), o, "transport");
	rt_store_json_copy_str(d->fw_ver, sizeof(d->fw_ver), o, "fw_ver");
	d->vendor_id = (uint32_t)json_integer_value(json_object_get(o, "vendor_id"));
	d->vendor_part_id = (uint32_t)json_integer_value(json_object_get(o, "vendor_part_id"));
	d->hw_ver = (uint32_t)json_integer_value(json_object_get(o, "hw_ver"));
	d->max_qp = json_int(o, "max_qp");
	d->max_qp_wr = json_int(o, "max_qp_wr");
	d->max_sge = json_int(o, "max_sge");
	d->max_cqe = json_int(o, "max_cqe");
	d->max_qp_rd_atom = json_int(o, "max_qp_rd_atom");
	d->max_mr = json_int(o, "max_mr");
	d->max_inline_rc = json_int(o, "max_inline_rc");
	d->max_inline_ud = json_int(o, "max_inline_ud");
	d->numa_node = json_int(o, "numa_node");
	rt_store_json_copy_str(d->local_cpus, sizeof(d->local_cpus), o, "local_cpus");
	rt_store_json_copy_str(d->pci_addr, sizeof(d->pci_addr), o, "pci_addr");
	rt_store_json_copy_str(d->pcie_speed, sizeof(d->pcie_speed), o, "pcie_speed");
	d->pcie_width = json_int(o, "pcie_width");
	d->pcie_max_payload_bytes = json_int(o, "pcie_max_payload_bytes");
	d->pcie_max_read_req_bytes = json_int(o, "pcie_max_read_req_bytes");
	ports = json_object_get(o, "ports");
	for (size_t i = 0; i < json_array_size(ports) && d->port_count < RT_MAX_PORTS; i++) {
		json_t *po = json_array_get(ports, i), *gids = json_object_get(po, "gids");
		struct rt_port_info *p = &d->ports[d->port_count++];

		p->port_num = json_int(po, "port_num");
		rt_store_json_copy_str(p->state, sizeof(p->state), po, "state");
		rt_store_json_copy_str(p->link_layer, sizeof(p->link_layer), po, "link_layer");
		p->active_mtu_bytes = json_int(po, "active_mtu_bytes");
		p->max_mtu_bytes = json_int(po, "max_mtu_bytes");
		p->lid = json_int(po, "lid");
		p->gid_tbl_len = json_int(po, "gid_tbl_len");
		for (size_t g = 0; g < json_array_size(gids) && p->gid_count < RT_MAX_GIDS; g++) {
			json_t *go = json_array_get(gids, g);
			struct rt_gid_info *x = &p->gids[p->gid_count++];

			x->index = json_int(go, "index");
			rt_store_json_copy_str(x->gid, sizeof(x->gid), go, "gid");
			rt_store_json_copy_str(x->type, sizeof(x->type), go, "type");
		}
	}
	json_decref(o);
	return 0;
}

/* Runs one statement to completion (no rows expected); errors name what. */
static int step_done(struct rt_store *st, sqlite3_stmt *s, const char *what, struct rt_error *err)
{
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return rt_store_sql_error(st, what, err);
	return 0;
}

void rt_store_rate_from_row(sqlite3_stmt *s, struct rt_rate_point *p)
{
	memset(p, 0, sizeof(*p));
	if (sqlite3_column_text(s, 0))
		rt_opcode_parse((const char *)sqlite3_column_text(s, 0), &p->op);
	if (sqlite3_column_text(s, 1))
		rt_qp_type_parse((const char *)sqlite3_column_text(s, 1), &p->qpt);
	p->msg_bytes = (uint32_t)sqlite3_column_int64(s, 2);
	p->inl = sqlite3_column_int(s, 3) != 0;
	p->signal_interval = (uint32_t)sqlite3_column_int64(s, 4);
	p->sq_depth = (uint32_t)sqlite3_column_int64(s, 5);
	p->reps = (uint32_t)sqlite3_column_int64(s, 6);
	p->mops = sqlite3_column_double(s, 7);
	p->mops_lo = sqlite3_column_double(s, 8);
	p->mops_hi = sqlite3_column_double(s, 9);
	p->cpu_ns_per_msg = sqlite3_column_double(s, 10);
	p->msgs = (uint64_t)sqlite3_column_int64(s, 11);
	p->enomem = (uint64_t)sqlite3_column_int64(s, 12);
}

static int prepare(struct rt_store *st, const char *sql, sqlite3_stmt **s, struct rt_error *err)
{
	if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK) {
		*s = NULL;
		return rt_store_sql_error(st, "prepare", err);
	}
	return 0;
}

/* Binds the device's columns ?1..?24 (node_id, name, node_guid, transport, ... pcie_max_read_req_bytes, seen_ns) to s. */
static void bind_device(sqlite3_stmt *s, int64_t node_id, const struct rt_device_info *d, int64_t seen_ns)
{
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_text(s, 2, d->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, d->node_guid, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, d->transport, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, d->fw_ver, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, d->vendor_id);
	sqlite3_bind_int64(s, 7, d->vendor_part_id);
	sqlite3_bind_int64(s, 8, d->hw_ver);
	sqlite3_bind_int(s, 9, d->max_qp);
	sqlite3_bind_int(s, 10, d->max_qp_wr);
	sqlite3_bind_int(s, 11, d->max_sge);
	sqlite3_bind_int(s, 12, d->max_cqe);
	sqlite3_bind_int(s, 13, d->max_qp_rd_atom);
	sqlite3_bind_int(s, 14, d->max_mr);
	sqlite3_bind_int(s, 15, d->max_inline_rc);
	sqlite3_bind_int(s, 16, d->max_inline_ud);
	sqlite3_bind_int(s, 17, d->numa_node);
	sqlite3_bind_text(s, 18, d->local_cpus, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 19, d->pci_addr, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 20, d->pcie_speed, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 21, d->pcie_width);
	sqlite3_bind_int(s, 22, d->pcie_max_payload_bytes);
	sqlite3_bind_int(s, 23, d->pcie_max_read_req_bytes);
	sqlite3_bind_int64(s, 24, seen_ns);
}

#define DEVICE_COLUMNS                                                                                                 \
	"node_id, name, node_guid, transport, fw_ver, vendor_id, vendor_part_id, hw_ver, max_qp, max_qp_wr, max_sge,"  \
	" max_cqe, max_qp_rd_atom, max_mr, max_inline_rc, max_inline_ud, numa_node, local_cpus, pci_addr, pcie_speed," \
	" pcie_width, pcie_max_payload_bytes, pcie_max_read_req_bytes, seen_ns"

/* The row id of node_id's device (name, GUID) into *dev_id: 0, ENOENT (no such row) or an errno + err. */
static int device_find(struct rt_store *st, int64_t node_id, const struct rt_device_info *d, int64_t *dev_id,
		       struct rt_error *err)
{
	sqlite3_stmt *s =
		rt_store_stmt(st, STMT_DEVICE_FIND,
			      "SELECT id FROM devices WHERE node_id = ?1 AND name = ?2 AND node_guid = ?3", err);
	int step;

	if (!s)
		return err ? err->code : EIO;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_text(s, 2, d->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, d->node_guid, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		*dev_id = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (step == SQLITE_DONE)
		return ENOENT;
	return step == SQLITE_ROW ? 0 : rt_store_sql_error(st, "store device", err);
}

/* As rt_store_node_upsert(): a device new to the store is inserted plainly (without even a lookup when its node is
 * new); a known one is updated, with its ports, only when this evidence is not older than what the row holds (an old
 * profile imported late does not roll the device back). */
int rt_store_device_upsert(struct rt_store *st, int64_t node_id, const struct rt_device_info *d, bool node_created,
			   int64_t seen_ns, int64_t *dev_id, struct rt_error *err)
{
	sqlite3_stmt *s;
	int rc = 0, step;
	bool have_id = false;

	if (!node_created) {
		rc = device_find(st, node_id, d, dev_id, err);
		if (rc && rc != ENOENT)
			return rc;
		have_id = rc == 0;
		rc = 0;
	}
	if (!have_id) {
		s = rt_store_stmt(
			st, STMT_DEVICE_INSERT,
			"INSERT INTO devices(" DEVICE_COLUMNS ")"
			" VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)"
			" ON CONFLICT(node_id, name, node_guid) DO NOTHING",
			err);
		if (!s)
			return err ? err->code : EIO;
		bind_device(s, node_id, d, seen_ns);
		step = sqlite3_step(s);
		sqlite3_reset(s);
		if (step != SQLITE_DONE)
			return rt_store_sql_error(st, "store device", err);
		if (sqlite3_changes(st->db) == 1) {
			*dev_id = sqlite3_last_insert_rowid(st->db);
			goto ports;
		}
		/* inserted meanwhile (another process): update it as a known one */
		if ((rc = device_find(st, node_id, d, dev_id, err)))
			return rc == ENOENT ? rt_error_set(err, EIO, "store '%s': device row vanished", st->path) : rc;
	}
	s = rt_store_stmt(st, STMT_DEVICE_UPSERT,
			  "UPDATE devices SET transport=?4, fw_ver=?5, vendor_id=?6, vendor_part_id=?7, hw_ver=?8,"
			  " max_qp=?9, max_qp_wr=?10, max_sge=?11, max_cqe=?12, max_qp_rd_atom=?13, max_mr=?14,"
			  " max_inline_rc=?15, max_inline_ud=?16, numa_node=?17, local_cpus=?18, pci_addr=?19,"
			  " pcie_speed=?20, pcie_width=?21, pcie_max_payload_bytes=?22, pcie_max_read_req_bytes=?23,"
			  " seen_ns=?24 WHERE id = ?25 AND node_id = ?1 AND seen_ns <= ?24",
			  err);
	if (!s)
		return err ? err->code : EIO;
	bind_device(s, node_id, d, seen_ns);
	sqlite3_bind_int64(s, 25, *dev_id);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE)
		return rt_store_sql_error(st, "store device", err);
	if (sqlite3_changes(st->db) == 0)
		return 0; /* older evidence: the row and its ports stay as the newer one left them */
ports:
	s = rt_store_stmt(st, STMT_PORT_UPSERT,
			  "INSERT OR REPLACE INTO ports(device_id, port_num, state, link_layer,"
			  " active_mtu_bytes, max_mtu_bytes, lid, gid_tbl_len, gids) VALUES(?,?,?,?,?,?,?,?,?)",
			  err);
	if (!s)
		return err ? err->code : EIO;
	for (int i = 0; i < d->port_count && i < RT_MAX_PORTS; i++) {
		const struct rt_port_info *p = &d->ports[i];
		/* no GIDs (an imported device's port): no JSON to build */
		char *gids = p->gid_count > 0 ? gids_to_json(p) : NULL;

		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, *dev_id);
		sqlite3_bind_int(s, 2, p->port_num);
		sqlite3_bind_text(s, 3, p->state, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, p->link_layer, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 5, p->active_mtu_bytes);
		sqlite3_bind_int(s, 6, p->max_mtu_bytes);
		sqlite3_bind_int(s, 7, p->lid);
		sqlite3_bind_int(s, 8, p->gid_tbl_len);
		if (p->gid_count > 0 && !gids) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			break;
		}
		sqlite3_bind_text(s, 9, gids ? gids : "[]", -1, SQLITE_TRANSIENT);
		free(gids);
		if ((rc = step_done(st, s, "store port", err)))
			break;
	}
	sqlite3_reset(s);
	return rc;
}

/* Loads the devices of table (devices, or the view current_devices) matching where (one ? bound to key), by name;
 * *devs malloc'd. Ports filled. */
static int load_devices(struct rt_store *st, const char *table, const char *where, int64_t key,
			struct rt_device_info **devs, size_t *n, struct rt_error *err);

static int update_signature(struct rt_store *st, int64_t node_id, const struct rt_node_info *node, struct rt_error *err)
{
	struct rt_device_info *devs = NULL;
	sqlite3_stmt *s = NULL;
	char sig[32];
	size_t n = 0;
	int rc;

	/* of the node's current hardware: a replaced NIC no longer counts */
	if ((rc = load_devices(st, "current_devices", "node_id = ?", node_id, &devs, &n, err)))
		return rc;
	rt_store_hw_signature(node, devs, n, sig);
	free(devs);
	if ((rc = prepare(st, "UPDATE nodes SET hw_signature = ? WHERE id = ?", &s, err)))
		return rc;
	sqlite3_bind_text(s, 1, sig, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, node_id);
	rc = step_done(st, s, "store hardware signature", err);
	sqlite3_finalize(s);
	return rc;
}

static int insert_run(struct rt_store *st, struct rt_run *run, struct rt_error *err)
{
	int64_t node_id = 0, dev_id = 0;
	sqlite3_stmt *s = NULL;
	char host[256] = "";
	char *env = NULL, *cqmod = NULL, *dev = NULL;
	bool created;
	int rc;

	if (!run->uuid[0] && (rc = make_uuid(run->uuid, err)))
		return rc;
	if (!run->dev.name[0])
		return rt_error_set(err, EINVAL, "run has no device name");
	if (!run->started_ns)
		run->started_ns = rt_store_now_ns();
	if ((rc = rt_store_node_upsert(st, &run->node, NULL, &node_id, &created, err)) ||
	    (rc = rt_store_device_upsert(st, node_id, &run->dev, created, run->started_ns, &dev_id, err)) ||
	    (rc = update_signature(st, node_id, &run->node, err)))
		return rc;
	env = env_to_json(&run->env);
	cqmod = cqmod_to_json(run->cqmod);
	dev = device_to_json(&run->dev);
	if (!env || !cqmod || !dev) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	if ((rc = prepare(st,
			  "INSERT INTO runs(uuid, node_id, device_id, port_num, gid_index, params, env, started_ns,"
			  " ended_ns, status, owner_pid, owner_host, max_inline_used, sq_depth, cqmod, device)"
			  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			  &s, err)))
		goto out;
	sqlite3_bind_text(s, 1, run->uuid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, node_id);
	sqlite3_bind_int64(s, 3, dev_id);
	sqlite3_bind_int(s, 4, run->port_num);
	sqlite3_bind_int(s, 5, run->gid_index);
	sqlite3_bind_text(s, 6, run->params[0] ? run->params : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, env, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 8, run->started_ns);
	if (run->status == RT_RUN_RUNNING)
		sqlite3_bind_null(s, 9);
	else
		sqlite3_bind_int64(s, 9, run->ended_ns ? run->ended_ns : rt_store_now_ns());
	sqlite3_bind_text(s, 10, rt_run_status_name(run->status), -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 11, (int64_t)getpid());
	sqlite3_bind_text(s, 12, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 13, run->max_inline_used);
	sqlite3_bind_int64(s, 14, run->sq_depth);
	sqlite3_bind_text(s, 15, cqmod, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 16, dev, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE) {
		if ((sqlite3_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT)
			rc = rt_error_set(err, EEXIST, "store '%s': run %s is already stored", st->path, run->uuid);
		else
			rc = rt_store_sql_error(st, "store run", err);
		goto out;
	}
	run->id = sqlite3_last_insert_rowid(st->db);
out:
	sqlite3_finalize(s);
	free(env);
	free(cqmod);
	free(dev);
	return rc;
}

int rt_store_run_begin(struct rt_store *st, struct rt_run *run, struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	run->status = RT_RUN_RUNNING;
	if ((rc = insert_run(st, run, err)) || (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		run->id = 0;
		return rc;
	}
	return 0;
}

static int add_points(struct rt_store *st, int64_t run_id, const struct rt_lat_point *lat, size_t n_lat,
		      const struct rt_rate_point *rate, size_t n_rate, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if ((rc = prepare(st,
			  "INSERT INTO lat_points(run_id, op, qpt, kind, msg_bytes, inl, n_samples, median_ns, p99_ns,"
			  " p999_ns, mean_ns, min_ns, ci_lo_ns, ci_hi_ns, cpu_ns_per_op, n_kept, samples)"
			  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			  &s, err)))
		return rc;
	for (size_t i = 0; i < n_lat; i++) {
		const struct rt_lat_point *p = &lat[i];

		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_text(s, 2, rt_opcode_name(p->op), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, rt_qp_type_name(p->qpt), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, rt_lat_kind_name(p->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, p->msg_bytes);
		sqlite3_bind_int(s, 6, p->inl);
		sqlite3_bind_int64(s, 7, p->n_samples);
		sqlite3_bind_double(s, 8, p->median_ns);
		sqlite3_bind_double(s, 9, p->p99_ns);
		sqlite3_bind_double(s, 10, p->p999_ns);
		sqlite3_bind_double(s, 11, p->mean_ns);
		sqlite3_bind_double(s, 12, p->min_ns);
		sqlite3_bind_double(s, 13, p->ci_lo_ns);
		sqlite3_bind_double(s, 14, p->ci_hi_ns);
		sqlite3_bind_double(s, 15, p->cpu_ns_per_op);
		sqlite3_bind_int64(s, 16, p->samples_ns ? p->n_kept : 0);
		if (p->samples_ns && p->n_kept)
			sqlite3_bind_blob(s, 17, p->samples_ns, (int)(p->n_kept * sizeof(float)), SQLITE_STATIC);
		else
			sqlite3_bind_null(s, 17);
		if ((rc = step_done(st, s, "store latency point", err)))
			goto out;
	}
	sqlite3_finalize(s);
	s = NULL;
	if ((rc = prepare(st,
			  "INSERT INTO rate_points(run_id, op, qpt, msg_bytes, inl, signal_interval, sq_depth, reps,"
			  " mops, mops_lo, mops_hi, cpu_ns_per_msg, msgs, enomem) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			  &s, err)))
		return rc;
	for (size_t i = 0; i < n_rate; i++) {
		const struct rt_rate_point *p = &rate[i];

		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_text(s, 2, rt_opcode_name(p->op), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, rt_qp_type_name(p->qpt), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, p->msg_bytes);
		sqlite3_bind_int(s, 5, p->inl);
		sqlite3_bind_int64(s, 6, p->signal_interval);
		sqlite3_bind_int64(s, 7, p->sq_depth);
		sqlite3_bind_int64(s, 8, p->reps);
		sqlite3_bind_double(s, 9, p->mops);
		sqlite3_bind_double(s, 10, p->mops_lo);
		sqlite3_bind_double(s, 11, p->mops_hi);
		sqlite3_bind_double(s, 12, p->cpu_ns_per_msg);
		sqlite3_bind_int64(s, 13, (int64_t)p->msgs);
		sqlite3_bind_int64(s, 14, (int64_t)p->enomem);
		if ((rc = step_done(st, s, "store rate point", err)))
			goto out;
	}
out:
	sqlite3_finalize(s);
	return rc;
}

int rt_store_run_add_points(struct rt_store *st, int64_t run_id, const struct rt_lat_point *lat, size_t n_lat,
			    const struct rt_rate_point *rate, size_t n_rate, struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = add_points(st, run_id, lat, n_lat, rate, n_rate, err)) || (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		return rc;
	}
	return 0;
}

static int set_results(struct rt_store *st, const struct rt_run *run, struct rt_error *err)
{
	char *env = env_to_json(&run->env), *cqmod = cqmod_to_json(run->cqmod), *dev = device_to_json(&run->dev);
	sqlite3_stmt *s = NULL;
	int rc;

	if (!env || !cqmod || !dev) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	/* params too: the engine adds what it learnt while measuring (notes such as "budget too small", phase times); and
	 * the device as the run ends knowing it */
	if ((rc = prepare(
		     st,
		     "UPDATE runs SET env = ?, cqmod = ?, max_inline_used = ?, sq_depth = ?, params = ?, device = ?"
		     " WHERE id = ?",
		     &s, err)))
		goto out;
	sqlite3_bind_text(s, 1, env, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, cqmod, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, run->max_inline_used);
	sqlite3_bind_int64(s, 4, run->sq_depth);
	sqlite3_bind_text(s, 5, run->params, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, dev, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 7, run->id);
	if ((rc = step_done(st, s, "store run results", err)))
		goto out;
	if (sqlite3_changes(st->db) == 0)
		rc = rt_error_set(err, ENOENT, "store '%s': no run %lld", st->path, (long long)run->id);
out:
	sqlite3_finalize(s);
	free(env);
	free(cqmod);
	free(dev);
	return rc;
}

int rt_store_run_set_results(struct rt_store *st, const struct rt_run *run, struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = set_results(st, run, err)) || (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		return rc;
	}
	return 0;
}

static int finish(struct rt_store *st, int64_t run_id, enum rt_run_status status, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if ((rc = prepare(st, "UPDATE runs SET status = ?, ended_ns = ? WHERE id = ?", &s, err)))
		return rc;
	sqlite3_bind_text(s, 1, rt_run_status_name(status), -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, rt_store_now_ns());
	sqlite3_bind_int64(s, 3, run_id);
	rc = step_done(st, s, "finish run", err);
	if (!rc && sqlite3_changes(st->db) == 0)
		rc = rt_error_set(err, ENOENT, "store '%s': no run %lld", st->path, (long long)run_id);
	sqlite3_finalize(s);
	return rc;
}

int rt_store_run_finish(struct rt_store *st, int64_t run_id, enum rt_run_status status, struct rt_error *err)
{
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = finish(st, run_id, status, err)) || (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		return rc;
	}
	return 0;
}

int rt_store_run_save(struct rt_store *st, struct rt_run *run, struct rt_error *err)
{
	enum rt_run_status status = run->status == RT_RUN_RUNNING ? RT_RUN_COMPLETE : run->status;
	int rc;

	if ((rc = rt_store_begin(st, err)))
		return rc;
	run->status = RT_RUN_RUNNING;
	if ((rc = insert_run(st, run, err)) ||
	    (rc = add_points(st, run->id, run->lat, run->n_lat, run->rate, run->n_rate, err)) ||
	    (rc = finish(st, run->id, status, err)) || (rc = rt_store_commit(st, err))) {
		rt_store_rollback(st);
		run->id = 0;
		run->status = status;
		return rc;
	}
	run->status = status;
	return 0;
}

/* ---- reading ------------------------------------------------------------------------------------------------------ */

static const char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

#define COPY_COL(dst, s, i) snprintf((dst), sizeof(dst), "%s", col_text((s), (i)))

static int load_devices(struct rt_store *st, const char *table, const char *where, int64_t key,
			struct rt_device_info **devs, size_t *n, struct rt_error *err)
{
	char sql[1024];
	sqlite3_stmt *s = NULL, *ps = NULL;
	struct rt_device_info *v = NULL;
	size_t cap = 0;
	int rc, step;

	*devs = NULL;
	*n = 0;
	snprintf(sql, sizeof(sql),
		 "SELECT id, name, node_guid, transport, fw_ver, vendor_id, vendor_part_id, hw_ver,"
		 " max_qp, max_qp_wr, max_sge, max_cqe, max_qp_rd_atom, max_mr, max_inline_rc, max_inline_ud,"
		 " numa_node,"
		 " local_cpus, pci_addr, pcie_speed, pcie_width, pcie_max_payload_bytes, pcie_max_read_req_bytes"
		 " FROM %s WHERE %s ORDER BY name",
		 table, where);
	if ((rc = prepare(st, sql, &s, err)) ||
	    (rc = prepare(st,
			  "SELECT port_num, state, link_layer, active_mtu_bytes, max_mtu_bytes, lid, gid_tbl_len,"
			  " gids FROM ports WHERE device_id = ? ORDER BY port_num",
			  &ps, err)))
		goto out;
	sqlite3_bind_int64(s, 1, key);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_device_info *d;

		struct rt_device_info *nv = rt_array_reserve(v, *n, &cap, sizeof(*v));

		if (!nv) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		v = nv;
		d = &v[*n];
		memset(d, 0, sizeof(*d));
		COPY_COL(d->name, s, 1);
		COPY_COL(d->node_guid, s, 2);
		COPY_COL(d->transport, s, 3);
		COPY_COL(d->fw_ver, s, 4);
		d->vendor_id = (uint32_t)sqlite3_column_int64(s, 5);
		d->vendor_part_id = (uint32_t)sqlite3_column_int64(s, 6);
		d->hw_ver = (uint32_t)sqlite3_column_int64(s, 7);
		d->max_qp = sqlite3_column_int(s, 8);
		d->max_qp_wr = sqlite3_column_int(s, 9);
		d->max_sge = sqlite3_column_int(s, 10);
		d->max_cqe = sqlite3_column_int(s, 11);
		d->max_qp_rd_atom = sqlite3_column_int(s, 12);
		d->max_mr = sqlite3_column_int(s, 13);
		d->max_inline_rc = sqlite3_column_int(s, 14);
		d->max_inline_ud = sqlite3_column_int(s, 15);
		d->numa_node = sqlite3_column_int(s, 16);
		COPY_COL(d->local_cpus, s, 17);
		COPY_COL(d->pci_addr, s, 18);
		COPY_COL(d->pcie_speed, s, 19);
		d->pcie_width = sqlite3_column_int(s, 20);
		d->pcie_max_payload_bytes = sqlite3_column_int(s, 21);
		d->pcie_max_read_req_bytes = sqlite3_column_int(s, 22);
		sqlite3_reset(ps);
		sqlite3_bind_int64(ps, 1, sqlite3_column_int64(s, 0));
		while (sqlite3_step(ps) == SQLITE_ROW && d->port_count < RT_MAX_PORTS) {
			struct rt_port_info *p = &d->ports[d->port_count++];

			p->port_num = sqlite3_column_int(ps, 0);
			COPY_COL(p->state, ps, 1);
			COPY_COL(p->link_layer, ps, 2);
			p->active_mtu_bytes = sqlite3_column_int(ps, 3);
			p->max_mtu_bytes = sqlite3_column_int(ps, 4);
			p->lid = sqlite3_column_int(ps, 5);
			p->gid_tbl_len = sqlite3_column_int(ps, 6);
			gids_from_json((const char *)sqlite3_column_text(ps, 7), p);
		}
		(*n)++;
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read devices", err);
out:
	sqlite3_finalize(s);
	sqlite3_finalize(ps);
	if (rc) {
		free(v);
		*n = 0;
	} else {
		*devs = v;
	}
	return rc;
}

static int load_points(struct rt_store *st, struct rt_run *run, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc, step;
	size_t cap = 0;

	if ((rc = prepare(st,
			  "SELECT op, qpt, kind, msg_bytes, inl, n_samples, median_ns, p99_ns, p999_ns, mean_ns,"
			  " min_ns, ci_lo_ns, ci_hi_ns, cpu_ns_per_op, n_kept, samples FROM lat_points WHERE run_id = ?"
			  " ORDER BY id",
			  &s, err)))
		return rc;
	sqlite3_bind_int64(s, 1, run->id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_lat_point *p;
		int blob_bytes;

		struct rt_lat_point *nv = rt_array_reserve(run->lat, run->n_lat, &cap, sizeof(*nv));

		if (!nv)
			goto nomem;
		run->lat = nv;
		p = &run->lat[run->n_lat];
		memset(p, 0, sizeof(*p));
		rt_opcode_parse(col_text(s, 0), &p->op);
		rt_qp_type_parse(col_text(s, 1), &p->qpt);
		rt_lat_kind_parse(col_text(s, 2), &p->kind);
		p->msg_bytes = (uint32_t)sqlite3_column_int64(s, 3);
		p->inl = sqlite3_column_int(s, 4) != 0;
		p->n_samples = (uint32_t)sqlite3_column_int64(s, 5);
		p->median_ns = sqlite3_column_double(s, 6);
		p->p99_ns = sqlite3_column_double(s, 7);
		p->p999_ns = sqlite3_column_double(s, 8);
		p->mean_ns = sqlite3_column_double(s, 9);
		p->min_ns = sqlite3_column_double(s, 10);
		p->ci_lo_ns = sqlite3_column_double(s, 11);
		p->ci_hi_ns = sqlite3_column_double(s, 12);
		p->cpu_ns_per_op = sqlite3_column_double(s, 13);
		blob_bytes = sqlite3_column_bytes(s, 15);
		run->n_lat++;
		if (blob_bytes > 0) {
			p->samples_ns = malloc((size_t)blob_bytes);
			if (!p->samples_ns)
				goto nomem;
			memcpy(p->samples_ns, sqlite3_column_blob(s, 15), (size_t)blob_bytes);
			p->n_kept = (uint32_t)((size_t)blob_bytes / sizeof(float));
		}
	}
	if (step != SQLITE_DONE) {
		rc = rt_store_sql_error(st, "read latency points", err);
		goto out;
	}
	sqlite3_finalize(s);
	s = NULL;
	cap = 0;
	if ((rc = prepare(st,
			  "SELECT op, qpt, msg_bytes, inl, signal_interval, sq_depth, reps, mops, mops_lo, mops_hi,"
			  " cpu_ns_per_msg, msgs, enomem FROM rate_points WHERE run_id = ? ORDER BY id",
			  &s, err)))
		return rc;
	sqlite3_bind_int64(s, 1, run->id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_rate_point *p;

		struct rt_rate_point *nv = rt_array_reserve(run->rate, run->n_rate, &cap, sizeof(*nv));

		if (!nv)
			goto nomem;
		run->rate = nv;
		p = &run->rate[run->n_rate++];
		rt_store_rate_from_row(s, p);
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read rate points", err);
	goto out;
nomem:
	rc = rt_error_set(err, ENOMEM, "out of memory");
out:
	sqlite3_finalize(s);
	return rc;
}

/* A "running" run whose owner process on this host is gone was interrupted (kill -9, power loss, crash). */
static enum rt_run_status effective_status(enum rt_run_status stored, int64_t pid, const char *owner_host)
{
	char host[256] = "";

	if (stored != RT_RUN_RUNNING)
		return stored;
	gethostname(host, sizeof(host) - 1);
	if (pid <= 0 || strcmp(host, owner_host) != 0)
		return RT_RUN_INTERRUPTED; /* no process to ask; it cannot be this session's live run */
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return RT_RUN_INTERRUPTED;
	return RT_RUN_RUNNING;
}

int rt_store_run_load(struct rt_store *st, const char *which, const char *device, struct rt_run *out,
		      struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	struct rt_device_info *devs = NULL;
	size_t n_devs = 0;
	char *end = NULL;
	long long id = 0;
	int rc, step;
	int64_t node_id = 0, dev_id = 0;
	bool snap_ok;

	memset(out, 0, sizeof(*out));
	if (which)
		id = strtoll(which, &end, 10);
	if ((rc = prepare(st,
			  "SELECT r.id, r.uuid, r.node_id, r.device_id, r.port_num, r.gid_index, r.params, r.env,"
			  " r.started_ns, r.ended_ns, r.status, r.max_inline_used, r.sq_depth, r.cqmod, n.hostname,"
			  " n.machine_id, n.cpu_model, n.kernel, n.cpu_count, n.numa_nodes, r.owner_pid, r.owner_host,"
			  " r.device FROM runs r JOIN nodes n ON n.id = r.node_id JOIN devices d ON d.id = r.device_id"
			  " WHERE (?1 IS NULL OR r.uuid = ?1 OR r.id = ?2) AND (?3 IS NULL OR d.name = ?3 OR"
			  " d.node_guid = ?3)"
			  " ORDER BY r.started_ns DESC, r.id DESC LIMIT 1",
			  &s, err)))
		return rc;
	if (which)
		sqlite3_bind_text(s, 1, which, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, which && end && *end == '\0' ? id : -1);
	if (device)
		sqlite3_bind_text(s, 3, device, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE) {
		rc = rt_error_set(err, ENOENT, "no run %s%s%s%s in store '%s'", which ? "'" : "", which ? which : "",
				  which ? "'" : "", device ? " for that device" : "", st->path);
		goto out;
	}
	if (step != SQLITE_ROW) {
		rc = rt_store_sql_error(st, "read run", err);
		goto out;
	}
	out->id = sqlite3_column_int64(s, 0);
	COPY_COL(out->uuid, s, 1);
	node_id = sqlite3_column_int64(s, 2);
	dev_id = sqlite3_column_int64(s, 3);
	(void)node_id;
	out->port_num = sqlite3_column_int(s, 4);
	out->gid_index = sqlite3_column_int(s, 5);
	COPY_COL(out->params, s, 6);
	env_from_json((const char *)sqlite3_column_text(s, 7), &out->env);
	out->started_ns = sqlite3_column_int64(s, 8);
	out->ended_ns = sqlite3_column_int64(s, 9);
	rt_run_status_parse(col_text(s, 10), &out->status);
	out->status = effective_status(out->status, sqlite3_column_int64(s, 20), col_text(s, 21));
	out->max_inline_used = (uint32_t)sqlite3_column_int64(s, 11);
	out->sq_depth = (uint32_t)sqlite3_column_int64(s, 12);
	cqmod_from_json((const char *)sqlite3_column_text(s, 13), out->cqmod);
	COPY_COL(out->node.hostname, s, 14);
	COPY_COL(out->node.machine_id, s, 15);
	COPY_COL(out->node.cpu_model, s, 16);
	COPY_COL(out->node.kernel, s, 17);
	out->node.cpu_count = sqlite3_column_int(s, 18);
	out->node.numa_nodes = sqlite3_column_int(s, 19);
	snap_ok = device_from_json((const char *)sqlite3_column_text(s, 22), &out->dev) == 0;
	sqlite3_finalize(s);
	s = NULL;
	if (!snap_ok) { /* a run stored before schema v4: the device as its row says now */
		if ((rc = load_devices(st, "devices", "id = ?", dev_id, &devs, &n_devs, err)))
			goto out;
		if (n_devs)
			out->dev = devs[0];
		free(devs);
	}
	rc = load_points(st, out, err);
out:
	sqlite3_finalize(s);
	if (rc)
		rt_run_release(out);
	return rc;
}

int rt_store_run_list(struct rt_store *st, const char *device, struct rt_store_run_summary **out, size_t *n,
		      struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	struct rt_store_run_summary *v = NULL;
	size_t cap = 0;
	int rc, step;

	*out = NULL;
	*n = 0;
	if ((rc = prepare(st,
			  "SELECT r.id, r.uuid, n.hostname, d.name, r.port_num, r.started_ns, r.ended_ns, r.status,"
			  " (SELECT count(*) FROM lat_points WHERE run_id = r.id),"
			  " (SELECT count(*) FROM rate_points WHERE run_id = r.id),"
			  " p.inline_threshold, p.signal_interval, r.owner_pid, r.owner_host"
			  " FROM runs r JOIN nodes n ON n.id = r.node_id JOIN devices d ON d.id = r.device_id"
			  " LEFT JOIN profiles p ON p.id = (SELECT id FROM profiles WHERE run_uuid = r.uuid"
			  "  AND device = d.name AND port = r.port_num AND op = 'send' AND qpt = 'rc'"
			  "  ORDER BY measured_at DESC LIMIT 1)"
			  " WHERE ?1 IS NULL OR d.name = ?1 OR d.node_guid = ?1 ORDER BY r.started_ns, r.id",
			  &s, err)))
		return rc;
	if (device)
		sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_run_summary *r;

		struct rt_store_run_summary *nv = rt_array_reserve(v, *n, &cap, sizeof(*nv));

		if (!nv) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		v = nv;
		r = &v[(*n)++];
		memset(r, 0, sizeof(*r));
		r->id = sqlite3_column_int64(s, 0);
		COPY_COL(r->uuid, s, 1);
		COPY_COL(r->hostname, s, 2);
		COPY_COL(r->device, s, 3);
		r->port_num = sqlite3_column_int(s, 4);
		r->started_ns = sqlite3_column_int64(s, 5);
		r->ended_ns = sqlite3_column_int64(s, 6);
		rt_run_status_parse(col_text(s, 7), &r->stored_status);
		r->status = effective_status(r->stored_status, sqlite3_column_int64(s, 12), col_text(s, 13));
		r->n_lat = (size_t)sqlite3_column_int64(s, 8);
		r->n_rate = (size_t)sqlite3_column_int64(s, 9);
		r->has_profile = sqlite3_column_type(s, 10) != SQLITE_NULL;
		r->inline_threshold = (uint32_t)sqlite3_column_int64(s, 10);
		r->signal_interval = (uint32_t)sqlite3_column_int64(s, 11);
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read runs", err);
out:
	sqlite3_finalize(s);
	if (rc) {
		free(v);
		*n = 0;
	} else {
		*out = v;
	}
	return rc;
}

/* ---- application histograms ------------------------------------------------------------------------------------- */

/* n values of `width` bytes (8 or 4) from v (uint64_t or uint32_t) into out, little-endian. */
static void blob_put(unsigned char *out, const void *v, size_t n, int width)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t x = width == 8 ? ((const uint64_t *)v)[k] : ((const uint32_t *)v)[k];

		for (int i = 0; i < width; i++)
			out[k * (size_t)width + (size_t)i] = (unsigned char)(x >> (8 * i));
	}
}

/* The inverse of blob_put for column col of s: as many values as the blob holds, at most n; the rest stay 0 (a NULL
 * column, written by an older rtune, gives all zeros). */
static void blob_get(sqlite3_stmt *s, int col, void *v, size_t n, int width)
{
	const unsigned char *blob = sqlite3_column_blob(s, col);
	size_t bytes = (size_t)sqlite3_column_bytes(s, col);

	for (size_t k = 0; blob && k < n && (k + 1) * (size_t)width <= bytes; k++) {
		uint64_t x = 0;

		for (int i = 0; i < width; i++)
			x |= (uint64_t)blob[k * (size_t)width + (size_t)i] << (8 * i);
		if (width == 8)
			((uint64_t *)v)[k] = x;
		else
			((uint32_t *)v)[k] = (uint32_t)x;
	}
}

int rt_store_put_histogram(struct rt_store *st, const struct rt_node_info *node, struct rt_store_histogram *h,
			   struct rt_error *err)
{
	unsigned char blob[RT_HIST_BUCKETS * 8], maxb[RT_HIST_BUCKETS * 4], batch[RT_BATCH_BUCKETS * 8],
		batch_max[RT_BATCH_BUCKETS * 4];
	sqlite3_stmt *s = NULL;
	int64_t node_id;
	int rc;

	if (!h->app[0])
		return rt_error_set(err, EINVAL, "histogram has no application name");
	blob_put(blob, h->buckets, RT_HIST_BUCKETS, 8);
	blob_put(maxb, h->bucket_max, RT_HIST_BUCKETS, 4);
	blob_put(batch, h->batch, RT_BATCH_BUCKETS, 8);
	blob_put(batch_max, h->batch_max, RT_BATCH_BUCKETS, 4);
	if ((rc = rt_store_begin(st, err)))
		return rc;
	if ((rc = rt_store_node_upsert(st, node, NULL, &node_id, NULL, err)))
		goto out;
	if ((rc = prepare(
		     st,
		     "INSERT INTO histograms(node_id, app, op, qpt, created_ns, messages, bytes, inline_count,"
		     " signaled_count, sq_full_enomem, buckets, bucket_max, post_calls, batch, batch_max, max_send_wr,"
		     " qps, threads) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		     &s, err)))
		goto out;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_text(s, 2, h->app, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, rt_opcode_name(h->op), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, rt_qp_type_name(h->qpt), -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, h->created_ns ? h->created_ns : rt_store_now_ns());
	sqlite3_bind_int64(s, 6, (int64_t)h->messages);
	sqlite3_bind_int64(s, 7, (int64_t)h->bytes);
	sqlite3_bind_int64(s, 8, (int64_t)h->inline_count);
	sqlite3_bind_int64(s, 9, (int64_t)h->signaled_count);
	sqlite3_bind_int64(s, 10, (int64_t)h->sq_full_enomem);
	sqlite3_bind_blob(s, 11, blob, sizeof(blob), SQLITE_STATIC);
	sqlite3_bind_blob(s, 12, maxb, sizeof(maxb), SQLITE_STATIC);
	sqlite3_bind_int64(s, 13, (int64_t)h->post_calls);
	sqlite3_bind_blob(s, 14, batch, sizeof(batch), SQLITE_STATIC);
	sqlite3_bind_blob(s, 15, batch_max, sizeof(batch_max), SQLITE_STATIC);
	sqlite3_bind_int64(s, 16, (int64_t)h->max_send_wr);
	if (h->qps)
		sqlite3_bind_int64(s, 17, h->qps);
	if (h->threads)
		sqlite3_bind_int64(s, 18, h->threads);
	if ((rc = step_done(st, s, "store histogram", err)))
		goto out;
	h->id = sqlite3_last_insert_rowid(st->db);
	rc = rt_store_commit(st, err);
out:
	sqlite3_finalize(s);
	if (rc)
		rt_store_rollback(st);
	return rc;
}

int rt_store_get_histogram(struct rt_store *st, const char *app, enum rt_opcode op, enum rt_qp_type qpt,
			   struct rt_store_histogram *out, struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc, step;

	memset(out, 0, sizeof(*out));
	if ((rc = prepare(st,
			  "SELECT id, created_ns, messages, bytes, inline_count, signaled_count, sq_full_enomem,"
			  " buckets, bucket_max, post_calls, batch, batch_max, max_send_wr, qps, threads"
			  " FROM histograms WHERE app = ? AND op = ? AND qpt = ?"
			  " ORDER BY created_ns DESC, id DESC LIMIT 1",
			  &s, err)))
		return rc;
	sqlite3_bind_text(s, 1, app, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rt_opcode_name(op), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, rt_qp_type_name(qpt), -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE) {
		rc = rt_error_set(err, ENOENT, "no histogram of app '%s' (%s/%s) in store '%s'", app,
				  rt_opcode_name(op), rt_qp_type_name(qpt), st->path);
		goto out;
	}
	if (step != SQLITE_ROW) {
		rc = rt_store_sql_error(st, "read histogram", err);
		goto out;
	}
	snprintf(out->app, sizeof(out->app), "%s", app);
	out->op = op;
	out->qpt = qpt;
	out->id = sqlite3_column_int64(s, 0);
	out->created_ns = sqlite3_column_int64(s, 1);
	out->messages = (uint64_t)sqlite3_column_int64(s, 2);
	out->bytes = (uint64_t)sqlite3_column_int64(s, 3);
	out->inline_count = (uint64_t)sqlite3_column_int64(s, 4);
	out->signaled_count = (uint64_t)sqlite3_column_int64(s, 5);
	out->sq_full_enomem = (uint64_t)sqlite3_column_int64(s, 6);
	blob_get(s, 7, out->buckets, RT_HIST_BUCKETS, 8);
	blob_get(s, 8, out->bucket_max, RT_HIST_BUCKETS, 4);
	out->post_calls = (uint64_t)sqlite3_column_int64(s, 9);
	blob_get(s, 10, out->batch, RT_BATCH_BUCKETS, 8);
	blob_get(s, 11, out->batch_max, RT_BATCH_BUCKETS, 4);
	out->max_send_wr = (uint32_t)sqlite3_column_int64(s, 12);
	out->qps = (uint32_t)sqlite3_column_int64(s, 13);
	out->threads = (uint32_t)sqlite3_column_int64(s, 14);
	/* a largest size outside its bucket is not one the probe wrote: unknown */
	for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
		if (out->bucket_max[b] &&
		    (out->bucket_max[b] < rt_hist_bucket_lo(b) || out->bucket_max[b] > rt_hist_bucket_hi(b)))
			out->bucket_max[b] = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* ---- nodes ---------------------------------------------------------------------------------------------------- */

int rt_store_node_list(struct rt_store *st, struct rt_store_node **out, size_t *n, struct rt_error *err)
{
	struct rt_store_node *v = NULL;
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc, step;

	*out = NULL;
	*n = 0;
	if ((rc = prepare(st,
			  "SELECT id, node_key, hostname, machine_id, cpu_model, kernel, cpu_count, numa_nodes,"
			  " hw_signature, (SELECT count(*) FROM profiles WHERE node_id = n.id),"
			  " (SELECT count(*) FROM runs WHERE node_id = n.id) FROM nodes n ORDER BY id",
			  &s, err)))
		return rc;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		struct rt_store_node *x;

		struct rt_store_node *nv = rt_array_reserve(v, *n, &cap, sizeof(*nv));

		if (!nv) {
			rc = rt_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		v = nv;
		x = &v[(*n)++];
		memset(x, 0, sizeof(*x));
		x->id = sqlite3_column_int64(s, 0);
		COPY_COL(x->node_key, s, 1);
		COPY_COL(x->info.hostname, s, 2);
		COPY_COL(x->info.machine_id, s, 3);
		COPY_COL(x->info.cpu_model, s, 4);
		COPY_COL(x->info.kernel, s, 5);
		x->info.cpu_count = sqlite3_column_int(s, 6);
		x->info.numa_nodes = sqlite3_column_int(s, 7);
		COPY_COL(x->hw_signature, s, 8);
		x->n_profile_entries = (size_t)sqlite3_column_int64(s, 9);
		x->n_runs = (size_t)sqlite3_column_int64(s, 10);
	}
	if (step != SQLITE_DONE)
		rc = rt_store_sql_error(st, "read nodes", err);
out:
	sqlite3_finalize(s);
	if (rc) {
		free(v);
		*n = 0;
	} else {
		*out = v;
	}
	return rc;
}

int rt_store_node_devices(struct rt_store *st, const char *node_key, struct rt_device_info **out, size_t *n,
			  struct rt_error *err)
{
	sqlite3_stmt *s = NULL;
	int64_t node_id;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = prepare(st, "SELECT id FROM nodes WHERE node_key = ?1 OR hostname = ?1 ORDER BY id LIMIT 1", &s,
			  err)))
		return rc;
	sqlite3_bind_text(s, 1, node_key, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? rt_error_set(err, ENOENT, "no node '%s' in store '%s'", node_key, st->path)
				       : rt_store_sql_error(st, "read nodes", err);
		sqlite3_finalize(s);
		return rc;
	}
	node_id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return load_devices(st, "current_devices", "node_id = ?", node_id, out, n, err);
}
