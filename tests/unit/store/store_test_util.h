/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the store's unit tests: a scratch directory per test run and realistic runs and profile entries
 * built in memory (the shapes the calibrate engine and the tuner hand to the store).
 */
#ifndef RT_STORE_TEST_UTIL_H
#define RT_STORE_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_store.h"

/* Creates a fresh directory under $TMPDIR (or /tmp); returns its path (static buffer per call site's copy). */
static inline void tu_tmpdir(char *out, size_t len)
{
	const char *base = getenv("TMPDIR");

	snprintf(out, len, "%s/rtune-store-test.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(out)) {
		perror("mkdtemp");
		abort();
	}
}

static inline void tu_rmdir(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static inline void tu_node(struct rt_node_info *n, const char *host)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->hostname, sizeof(n->hostname), "%s", host);
	snprintf(n->machine_id, sizeof(n->machine_id), "mid-%s", host);
	snprintf(n->cpu_model, sizeof(n->cpu_model), "Test CPU @ 3.0GHz");
	snprintf(n->kernel, sizeof(n->kernel), "6.1.0-test");
	n->cpu_count = 8;
	n->numa_nodes = 2;
}

/* A run on device dev of node host with n_lat latency points (each with 4 raw samples) and n_rate rate points. */
static inline void tu_run(struct rt_run *r, const char *host, const char *dev, size_t n_lat, size_t n_rate)
{
	memset(r, 0, sizeof(*r));
	tu_node(&r->node, host);
	snprintf(r->dev.name, sizeof(r->dev.name), "%s", dev);
	snprintf(r->dev.node_guid, sizeof(r->dev.node_guid), "0011:2233:4455:6677");
	snprintf(r->dev.fw_ver, sizeof(r->dev.fw_ver), "1.2.3");
	snprintf(r->dev.transport, sizeof(r->dev.transport), "InfiniBand");
	r->dev.vendor_id = 0x15b3;
	r->dev.vendor_part_id = 4119;
	r->dev.max_qp_wr = 32768;
	r->dev.max_inline_rc = 220;
	r->dev.max_inline_ud = 188;
	r->dev.numa_node = 1;
	snprintf(r->dev.local_cpus, sizeof(r->dev.local_cpus), "4-7");
	r->dev.port_count = 1;
	r->dev.ports[0].port_num = 1;
	snprintf(r->dev.ports[0].state, sizeof(r->dev.ports[0].state), "PORT_ACTIVE");
	snprintf(r->dev.ports[0].link_layer, sizeof(r->dev.ports[0].link_layer), "Ethernet");
	r->dev.ports[0].active_mtu_bytes = 1024;
	r->dev.ports[0].gid_count = 1;
	snprintf(r->dev.ports[0].gids[0].gid, sizeof(r->dev.ports[0].gids[0].gid),
		 "fe80:0000:0000:0000:0000:0000:0000:0001");
	r->port_num = 1;
	r->env.cpu = 5;
	r->env.cpu_numa_node = 1;
	r->env.device_numa_node = 1;
	r->env.numa_local = true;
	snprintf(r->env.clock, sizeof(r->env.clock), "clock_gettime(CLOCK_MONOTONIC)");
	snprintf(r->env.mode, sizeof(r->env.mode), "loopback");
	snprintf(r->params, sizeof(r->params), "{\"quick\":true}");
	r->sq_depth = 256;
	r->max_inline_used = 220;
	r->n_lat = n_lat;
	r->lat = calloc(n_lat ? n_lat : 1, sizeof(*r->lat));
	for (size_t i = 0; i < n_lat; i++) {
		struct rt_lat_point *p = &r->lat[i];

		p->op = (enum rt_opcode)(i % 2);
		p->msg_bytes = 1u << ((i / 4) % 12); /* each (op, size) inline and not, like the engine's grid */
		p->inl = (i / 2) % 2;
		p->n_samples = 1000;
		p->median_ns = 1000.0 + 2.0 * (double)p->msg_bytes - (p->inl ? 100.0 : 0.0) + (double)i;
		p->p99_ns = p->median_ns + 500.0;
		p->p999_ns = p->median_ns + 1000.0;
		p->n_kept = 4;
		p->samples_ns = malloc(4 * sizeof(float));
		for (int k = 0; k < 4; k++)
			p->samples_ns[k] = (float)(1000 + i + (size_t)k);
	}
	r->n_rate = n_rate;
	r->rate = calloc(n_rate ? n_rate : 1, sizeof(*r->rate));
	for (size_t i = 0; i < n_rate; i++) {
		r->rate[i].signal_interval = 1u << (i % 8);
		r->rate[i].msg_bytes = 64;
		r->rate[i].mops = 1.0 + (double)i / 10;
		r->rate[i].sq_depth = 256;
		r->rate[i].msgs = 100000;
	}
	r->cqmod[0].measured = true;
	r->cqmod[0].supported = false;
	snprintf(r->cqmod[0].reason, sizeof(r->cqmod[0].reason), "ibv_modify_cq: Operation not supported");
}

static inline void tu_entry(struct rt_profile_entry *e, const char *dev, enum rt_profile_opcode op, uint32_t threshold,
			    uint32_t interval, const char *run_id, int64_t measured_at)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->device, sizeof(e->device), "%s", dev);
	snprintf(e->guid, sizeof(e->guid), "0011:2233:4455:6677");
	e->port = 1;
	e->opcode = op;
	e->qp_type = RT_PROFILE_QPT_RC;
	e->inline_threshold = threshold;
	e->max_inline_data = threshold > 64 ? threshold : 64;
	e->signal_interval = interval;
	e->sq_depth = 256;
	e->cq_depth = 512;
	e->numa_node = 1;
	snprintf(e->cpus, sizeof(e->cpus), "5");
	e->confidence = RT_PROFILE_CONF_HIGH;
	e->n_reasons = 2;
	snprintf(e->reasons[0].code, sizeof(e->reasons[0].code), "crossover");
	snprintf(e->reasons[0].text, sizeof(e->reasons[0].text), "inline wins up to %u B \"quoted\"", threshold);
	snprintf(e->reasons[1].code, sizeof(e->reasons[1].code), "knee");
	snprintf(e->reasons[1].text, sizeof(e->reasons[1].text), "rate within 1%% of best from N=%u", interval);
	e->measured_at = measured_at;
	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	snprintf(e->rtune_version, sizeof(e->rtune_version), "0.1.0");
}

/* A run of mlx5_0 on host-a started at started_s whose device can inline max_inline_rc bytes, guid its GUID: send/rc
 * ping-pong sizes 1..max_inline_rc (powers of two), inline 300 ns faster at every one (the tuner's "better all the
 * way" case), 400 samples each. */
static inline void tu_inline_run(struct rt_run *r, int max_inline_rc, const char *guid, const char *fw,
				 int64_t started_s)
{
	size_t n = 0;

	tu_run(r, "host-a", "mlx5_0", 0, 0);
	snprintf(r->dev.node_guid, sizeof(r->dev.node_guid), "%s", guid);
	snprintf(r->dev.fw_ver, sizeof(r->dev.fw_ver), "%s", fw);
	r->dev.max_inline_rc = max_inline_rc;
	r->max_inline_used = (uint32_t)max_inline_rc;
	r->started_ns = started_s * 1000000000LL;
	free(r->lat);
	r->lat = calloc(64, sizeof(*r->lat));
	if (!r->lat)
		abort();
	for (uint32_t b = 1; b <= (uint32_t)max_inline_rc; b *= 2)
		for (int inl = 0; inl < 2; inl++) {
			struct rt_lat_point *p = &r->lat[n++];

			p->op = RT_OP_SEND;
			p->qpt = RT_QPT_RC;
			p->kind = RT_LAT_PINGPONG;
			p->msg_bytes = b;
			p->inl = inl;
			p->n_samples = 400;
			p->median_ns = 2000.0 + b - (inl ? 300.0 : 0.0);
			p->ci_lo_ns = p->median_ns - 5;
			p->ci_hi_ns = p->median_ns + 5;
			p->p99_ns = p->median_ns + 100;
		}
	r->n_lat = n;
}

#endif
