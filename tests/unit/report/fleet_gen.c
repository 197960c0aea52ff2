// SPDX-License-Identifier: MIT
/*
 * Fleet generator (see fleet_gen.h): JSON profile documents of planted hardware groups with planted outliers of known
 * cause, and small rtune stores written through the store API with runs, curves, a remote-NUMA calibration and drift.
 * Values jitter the way a real fleet's do (threshold within +-15 %, N one power of two away for some nodes) so that a
 * clean fleet exercises the report's noise tolerance.
 */
#include "fleet_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "rt_buf.h"
#include "rt_store.h"

const char *fg_cause_code(enum fg_cause c)
{
	static const char *const codes[] = { "none",	       "remote_numa_calibration",
					     "different_mps",  "different_firmware",
					     "low_confidence", "stale_profile" };

	return (unsigned)c < FG__COUNT ? codes[c] : "unknown";
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static void uuid(uint64_t *s, char out[40])
{
	uint64_t a = rng_next(s), b = rng_next(s);

	snprintf(out, 40, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-8%03" PRIx64 "-%012" PRIx64, a >> 32,
		 (a >> 16) & 0xffff, a & 0xfff, b >> 52, (uint64_t)(b & 0xffffffffffffULL));
}

static void iso(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Per group: the decisions its hardware leads to, and its hardware. */
static const uint32_t base_threshold[8] = { 256, 128, 512, 64, 192, 384, 96, 320 };
static const uint32_t base_interval[8] = { 16, 32, 8, 64, 16, 32, 8, 16 };

/* Re-lays a compact document out as `rtune export` writes it (JSON_INDENT(2)). 0 or ENOMEM. */
static int indent_doc(struct rt_buf *b)
{
	json_t *d = json_loadb(b->p, b->len, 0, NULL);
	char *t = d ? json_dumps(d, JSON_INDENT(2)) : NULL;

	json_decref(d);
	if (!t)
		return ENOMEM;
	free(b->p);
	b->p = t;
	b->len = strlen(t);
	b->p = realloc(t, b->len + 2);
	if (!b->p) {
		free(t);
		return ENOMEM;
	}
	b->p[b->len++] = '\n';
	b->p[b->len] = '\0';
	return 0;
}

static int build_one(const struct fg_opts *o, uint64_t *rng, int g, int idx, enum fg_cause cause, enum fg_trait trait,
		     struct fg_node *out)
{
	static const char *const ops[] = { "send", "write", "send", "write" };
	static const char *const qpts[] = { "rc", "rc", "ud", "ud" };
	uint32_t thr = base_threshold[g % 8], iv = base_interval[g % 8];
	int numa_nodes = g % 2 ? 1 : 2, dev_numa = numa_nodes == 2 ? 1 : 0, mps = 256;
	int n_devs = o->mixed_shape ? 1 + (g % 4 == 3) : o->devices == 2 ? 2 : 1;
	int n_ent = o->mixed_shape ? 4 - g % 2 : o->entries_per_node;
	const char *fw = "20.31.1014";
	int64_t measured = o->now - 86400 * (int64_t)(1 + rng_unit(rng) * 20);
	const char *conf = "high";
	char when[32], run[40];
	struct rt_buf b = { 0 };
	double j, lat_f = 1.0, noise = 0.5 + rng_unit(rng);
	bool remote = cause == FG_REMOTE_NUMA || trait == FG_T_REMOTE_LAT;

	snprintf(out->hostname, sizeof(out->hostname), "g%d-node%04d", g, idx);
	out->group = g;
	out->cause = cause;
	out->trait = trait;
	/* jitter as a real fleet: threshold +-15 % in 8-byte steps, N one power of two away on ~15 % of nodes */
	j = 0.85 + 0.3 * rng_unit(rng);
	thr = (uint32_t)(thr * j / 8 + 0.5) * 8;
	if (rng_unit(rng) < 0.15)
		iv = rng_unit(rng) < 0.5 ? iv * 2 : iv / 2;
	if (rng_unit(rng) < 0.2)
		conf = "medium";
	lat_f = 0.98 + 0.04 * rng_unit(rng);
	switch (cause) {
	case FG_REMOTE_NUMA: thr /= 4; break;
	case FG_MPS:
		mps = 128;
		thr /= 4;
		break;
	case FG_FIRMWARE:
		fw = "16.23.1020";
		iv *= 8;
		break;
	case FG_LOW_CONF:
		conf = "low";
		thr = 0;
		break;
	case FG_STALE:
		measured = o->now - 400 * 86400;
		thr *= 4;
		break;
	default: break;
	}
	switch (trait) {
	case FG_T_FW_UPGRADE: fw = "20.35.1012"; break;
	case FG_T_NEAR_MISS:
		thr = (uint32_t)(base_threshold[g % 8] * 1.25 / 8 + 0.5) * 8;
		lat_f = 1.06;
		break;
	case FG_T_REMOTE_LAT: lat_f *= 1.15; break;
	case FG_T_STALE: measured = o->now - 200 * 86400; break;
	default: break;
	}
	iso(measured, when);
	uuid(rng, run);
	rt_buf_printf(
		&b,
		"{\"schema\":{\"name\":\"rtune-profile\",\"version\":\"%s\"},\"rtune_version\":\"0.1.0\","
		"\"generated_at\":\"%s\",\"node\":{\"hostname\":\"%s\",\"machine_id\":\"%016" PRIx64 "%016" PRIx64 "\","
		"\"cpu_model\":\"Synthetic Xeon G%d\",\"kernel\":\"6.1.0-synthetic\",\"cpu_count\":%d,\"numa_nodes\":%d,"
		"\"hardware_signature\":\"fnv1a64:%016" PRIx64 "\"},",
		o->with_measured ? "1.3" : "1.0", when, out->hostname, rng_next(rng), rng_next(rng), g, numa_nodes * 16,
		numa_nodes,
		/* signatures differ when anything in the hardware differs, as the store's does */
		(uint64_t)((uint64_t)(0x1000 + g) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(cause == FG_MPS	      ? 1
										       : cause == FG_FIRMWARE ? 2
													      : 0)));
	if (o->with_hardware) {
		rt_buf_printf(&b, "\"hardware\":{\"cpu_model\":\"Synthetic Xeon G%d\",\"numa_nodes\":%d,\"devices\":[",
			      g, numa_nodes);
		for (int d = 0; d < n_devs; d++)
			rt_buf_printf(
				&b,
				"%s{\"name\":\"mlx5_%d\",\"guid\":\"0c42:a103:%02x%02x:%04x\",\"vendor_id\":5555,"
				"\"vendor_part_id\":%d,\"fw_ver\":\"%s\",\"link_layer\":\"Ethernet\",\"active_mtu\":4096,"
				"\"numa_node\":%d,\"pcie\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16,"
				"\"max_payload_bytes\":%d,\"max_read_request_bytes\":512}}",
				d ? "," : "", d, d, g, idx, 4123 + g, fw, d ? (numa_nodes - 1 - dev_numa) : dev_numa,
				mps);
		rt_buf_printf(&b, "]},");
	}
	rt_buf_printf(&b, "\"entries\":[");
	for (int d = 0; d < n_devs; d++) {
		int dn = d ? (numa_nodes - 1 - dev_numa) : dev_numa;

		if (d == 1 && trait == FG_T_MISSING_DEV)
			break;
		for (int e = 0; e < n_ent && e < 4; e++) {
			uint32_t t = thr, mi = thr < 64 ? 64 : thr;

			if (e >= 2 && mi > 188) /* UD inline limit is smaller */
				t = mi = 188;
			rt_buf_printf(
				&b,
				"%s{\"device\":\"mlx5_%d\",\"guid\":\"0c42:a103:%02x%02x:%04x\",\"port\":1,\"opcode\":\"%s\","
				"\"qp_type\":\"%s\",\"inline_threshold\":%u,\"max_inline_data\":%u,\"signal_interval\":%u,"
				"\"sq_depth\":1024,\"cq_depth\":2048,\"cq_moderation\":null,\"numa_node\":%d,\"cpus\":\"%d\","
				"\"confidence\":\"%s\",\"reasons\":[{\"code\":\"synthetic\",\"text\":\"generated by "
				"fleet_gen\"}],"
				"\"measured_at\":\"%s\",\"run_id\":\"%s\",\"app\":null,\"rtune_version\":\"0.1.0\"",
				d || e ? "," : "", d, d, g, idx, ops[e], qpts[e], t, mi, iv, dn,
				remote ? (1 - dn) * 16 : dn * 16, conf, when, run);
			if (o->with_measured) {
				double base = (1800.0 + 150 * g) * (e & 1 ? 1.1 : 1.0) * lat_f;

				rt_buf_printf(
					&b,
					",\"inline_confidence\":\"%s\",\"signal_confidence\":\"%s\",\"evidence\":{"
					"\"inline\":{\"runs\":1,\"since_run\":\"%s\"},\"signal\":{\"runs\":1,"
					"\"since_run\":\"%s\"}},\"measured\":{\"latency_kind\":\"pingpong\","
					"\"msg_bytes\":%u,\"latency_inline_ns\":%.1f,\"latency_noinline_ns\":%.1f,"
					"\"mops_at_n\":%.3f,\"mops_at_n1\":%.3f,\"noise_pct\":%.2f}",
					conf, conf, run, run, t ? t : 1, base, base * 1.12,
					(9.0 - g * 0.5) * (0.98 + 0.04 * rng_unit(rng)), (9.0 - g * 0.5) * 0.55, noise);
			}
			if (o->with_hardware && !o->no_calibration)
				rt_buf_printf(&b, ",\"calibration\":{\"cpu_numa_node\":%d,\"numa_local\":%s}",
					      remote ? 1 - dn : dn, remote ? "false" : "true");
			rt_buf_printf(&b, "}");
		}
	}
	rt_buf_printf(&b, "]}\n");
	if (b.oom || (o->indent && indent_doc(&b))) {
		free(b.p);
		return ENOMEM;
	}
	out->json = b.p;
	out->len = b.len;
	return 0;
}

void fg_realistic(struct fg_opts *o)
{
	o->with_hardware = true;
	o->with_measured = true;
	o->indent = true;
	o->mixed_shape = true;
	o->fw_upgrade_pct = 30;
	o->near_miss_pct = 10;
}

int fg_build(const struct fg_opts *o, struct fg_node **out, size_t *n)
{
	size_t total = (size_t)o->groups * (size_t)o->nodes_per_group, k = 0;
	struct fg_node *v = calloc(total ? total : 1, sizeof(*v));
	uint64_t rng = o->seed;

	*out = NULL;
	*n = 0;
	if (!v)
		return ENOMEM;
	for (int g = 0; g < o->groups; g++)
		for (int i = 0; i < o->nodes_per_group; i++) {
			/* planted outliers spread over the group, causes cycling */
			enum fg_cause c = FG_NONE;

			enum fg_trait t = FG_T_NONE;

			if (i % 7 == 3 && i / 7 < o->outliers_per_group)
				c = (enum fg_cause)(1 + (i / 7 + g) % (FG__COUNT - 1));
			/* traits on clean nodes: i % 7 == 5 for the counted ones, percentages by the node's index */
			if (c == FG_NONE && i % 7 == 5) {
				int slot = i / 7;

				if (slot < o->remote_lat_nodes)
					t = FG_T_REMOTE_LAT;
				else if ((slot -= o->remote_lat_nodes) < o->stale_ordinary)
					t = FG_T_STALE;
				else if (slot - o->stale_ordinary < o->missing_device &&
					 (o->mixed_shape ? g % 4 == 3 : o->devices == 2))
					t = FG_T_MISSING_DEV;
			}
			if (c == FG_NONE && t == FG_T_NONE && i % 7 != 5) {
				int pct = (int)((i * 37 + g * 11) % 100);

				if (pct < o->fw_upgrade_pct)
					t = FG_T_FW_UPGRADE;
				else if (pct < o->fw_upgrade_pct + o->near_miss_pct)
					t = FG_T_NEAR_MISS;
			}
			if (build_one(o, &rng, g, i, c, t, &v[k])) {
				fg_free(v, k);
				return ENOMEM;
			}
			k++;
		}
	*out = v;
	*n = k;
	return 0;
}

void fg_free(struct fg_node *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].json);
	free(v);
}

int fg_write_dir(const char *dir, const struct fg_node *v, size_t n)
{
	char path[4096];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return errno;
	for (size_t i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/g%d", dir, v[i].group);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return errno;
		snprintf(path, sizeof(path), "%s/g%d/%s.json", dir, v[i].group, v[i].hostname);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return errno;
		if (write(fd, v[i].json, v[i].len) != (ssize_t)v[i].len) {
			close(fd);
			return EIO;
		}
		close(fd);
	}
	return 0;
}

/* See fleet_gen.h. */
int fg_import_store(const char *path, const struct fg_node *v, size_t n)
{
	struct rt_error err = { 0 };
	struct rt_store *st;
	int rc = rt_store_open(path, &st, &err);

	for (size_t i = 0; !rc && i < n; i++)
		rc = rt_store_import_text(st, v[i].hostname, v[i].json, v[i].len, NULL, NULL, &err);
	if (!rc)
		rt_store_close(st);
	if (rc)
		fprintf(stderr, "fg_import_store: %s\n", err.text);
	return rc;
}

/* ---- stores -------------------------------------------------------------------------------------------------------- */

static uint32_t fnv32(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void fill_node(struct rt_node_info *node, const char *prefix, int i)
{
	memset(node, 0, sizeof(*node));
	snprintf(node->hostname, sizeof(node->hostname), "%s-%d", prefix, i);
	snprintf(node->machine_id, sizeof(node->machine_id), "%08x%024d", (unsigned)fnv32(prefix), i);
	snprintf(node->cpu_model, sizeof(node->cpu_model), "Synthetic EPYC S");
	snprintf(node->kernel, sizeof(node->kernel), "6.1.0-synthetic");
	node->cpu_count = 32;
	node->numa_nodes = 2;
}

/* Saves one run (curves crossing over at thr, rate knee at iv) and the profile stored from it. */
static int save_run(struct rt_store *st, const struct rt_node_info *node, int64_t when, uint32_t thr, uint32_t iv,
		    bool remote, struct rt_error *err)
{
	struct rt_run run;
	struct rt_profile_entry e;
	int rc;

	memset(&run, 0, sizeof(run));
	run.node = *node;
	snprintf(run.dev.name, sizeof(run.dev.name), "mlx5_0");
	snprintf(run.dev.node_guid, sizeof(run.dev.node_guid), "0c42:a103:0077:%04x", (unsigned)node->hostname[0]);
	snprintf(run.dev.transport, sizeof(run.dev.transport), "InfiniBand");
	snprintf(run.dev.fw_ver, sizeof(run.dev.fw_ver), "22.36.1010");
	run.dev.vendor_id = 0x02c9;
	run.dev.vendor_part_id = 4129;
	run.dev.max_qp_wr = 32768;
	run.dev.max_inline_rc = 1024;
	run.dev.max_inline_ud = 188;
	run.dev.numa_node = 0;
	snprintf(run.dev.local_cpus, sizeof(run.dev.local_cpus), "0-15");
	snprintf(run.dev.pci_addr, sizeof(run.dev.pci_addr), "0000:3b:00.0");
	snprintf(run.dev.pcie_speed, sizeof(run.dev.pcie_speed), "16.0 GT/s PCIe");
	run.dev.pcie_width = 16;
	run.dev.pcie_max_payload_bytes = 256;
	run.dev.pcie_max_read_req_bytes = 512;
	run.dev.port_count = 1;
	run.dev.ports[0].port_num = 1;
	snprintf(run.dev.ports[0].state, sizeof(run.dev.ports[0].state), "active");
	snprintf(run.dev.ports[0].link_layer, sizeof(run.dev.ports[0].link_layer), "Ethernet");
	run.dev.ports[0].active_mtu_bytes = 4096;
	run.port_num = 1;
	run.env.cpu = remote ? 16 : 2;
	run.env.cpu_numa_node = remote ? 1 : 0;
	run.env.device_numa_node = 0;
	run.env.numa_local = !remote;
	snprintf(run.env.clock, sizeof(run.env.clock), "clock_gettime(CLOCK_MONOTONIC)");
	snprintf(run.env.mode, sizeof(run.env.mode), "loopback");
	run.started_ns = when * 1000000000LL;
	run.status = RT_RUN_COMPLETE;
	run.sq_depth = 1024;
	run.max_inline_used = 1024;
	run.n_lat = 2 * 11;
	run.n_rate = 7;
	run.lat = calloc(run.n_lat, sizeof(*run.lat));
	run.rate = calloc(run.n_rate, sizeof(*run.rate));
	if (!run.lat || !run.rate) {
		rt_run_release(&run);
		return ENOMEM;
	}
	for (int i = 0; i < 11; i++)
		for (int inl = 0; inl < 2; inl++) {
			struct rt_lat_point *p = &run.lat[i * 2 + inl];
			uint32_t s = 1u << i;

			p->op = RT_OP_SEND;
			p->qpt = RT_QPT_RC;
			p->kind = RT_LAT_PINGPONG;
			p->msg_bytes = s;
			p->inl = inl;
			p->n_samples = 1000;
			/* inline wins by 200 ns up to thr, then loses */
			p->median_ns = 1500 + s * 0.3 + (inl ? (s <= thr ? -200 : 150) : 0);
			p->p99_ns = p->median_ns * 1.3;
			p->p999_ns = p->median_ns * 1.6;
			p->mean_ns = p->median_ns * 1.05;
			p->min_ns = p->median_ns * 0.9;
			p->ci_lo_ns = p->median_ns - 5;
			p->ci_hi_ns = p->median_ns + 5;
		}
	for (int i = 0; i < 7; i++) {
		struct rt_rate_point *p = &run.rate[i];
		uint32_t n = 1u << i;

		p->op = RT_OP_SEND;
		p->qpt = RT_QPT_RC;
		p->msg_bytes = 8;
		p->inl = true;
		p->signal_interval = n;
		p->sq_depth = 1024;
		p->reps = 5;
		p->mops = 10.0 * (n >= iv ? 1.0 : 0.5 + 0.5 * (double)n / iv);
		p->mops_lo = p->mops * 0.98;
		p->mops_hi = p->mops * 1.02;
		p->msgs = 1000000;
	}
	if ((rc = rt_store_run_save(st, &run, err))) {
		rt_run_release(&run);
		return rc;
	}
	memset(&e, 0, sizeof(e));
	snprintf(e.device, sizeof(e.device), "mlx5_0");
	snprintf(e.guid, sizeof(e.guid), "%s", run.dev.node_guid);
	e.port = 1;
	e.opcode = RT_PROFILE_OP_SEND;
	e.qp_type = RT_PROFILE_QPT_RC;
	e.inline_threshold = thr;
	e.max_inline_data = thr < 64 ? 64 : thr;
	e.signal_interval = iv;
	e.sq_depth = 1024;
	e.cq_depth = 2048;
	e.numa_node = 0;
	snprintf(e.cpus, sizeof(e.cpus), "%d", run.env.cpu);
	e.confidence = RT_PROFILE_CONF_HIGH;
	e.measured_at = when;
	snprintf(e.run_id, sizeof(e.run_id), "%s", run.uuid);
	rc = rt_store_put_profile(st, node, NULL, &e, 1, NULL, err);
	rt_run_release(&run);
	return rc;
}

int fg_write_store(const char *path, const char *prefix, int n_nodes, bool plant_remote, bool plant_drift, int64_t now)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	int rc;

	if ((rc = rt_store_open(path, &st, &err))) {
		fprintf(stderr, "fleet_gen: %s\n", err.text);
		return rc;
	}
	for (int i = 0; i < n_nodes; i++) {
		struct rt_node_info node;
		uint32_t thr = 256 + (uint32_t)(i % 3) * 16;

		fill_node(&node, prefix, i);
		if (plant_drift && i == 1) {
			for (int k = 0; k < 3 && !rc; k++)
				rc = save_run(st, &node, now - (10 - k) * 86400, thr, 16, false, &err);
			if (!rc) /* the latest run moved far away from its history */
				rc = save_run(st, &node, now - 86400, 64, 16, false, &err);
		} else if (plant_remote && i == 0) {
			rc = save_run(st, &node, now - 2 * 86400, 48, 16, true, &err);
		} else {
			rc = save_run(st, &node, now - 2 * 86400, thr, 16, false, &err);
		}
		if (rc) {
			fprintf(stderr, "fleet_gen: %s\n", err.text);
			break;
		}
	}
	rt_store_close(st);
	return rc;
}
