// SPDX-License-Identifier: MIT
/*
 * Test helper for `rtune tune`: stores a calibration run drawn from the tuner's ground-truth generator (a planted
 * inline crossover and signaling knee under gaussian noise, raw samples kept) and an application histogram, so the CLI
 * can be checked against known answers without a device. Prints "planted THRESHOLD N GRID" (GRID = the measured sizes,
 * comma-separated) on stdout.
 * usage: tune_fill DB SEED
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "rt_store.h"

int main(int argc, char **argv)
{
	struct rt_store_histogram h;
	struct gen_opts go;
	struct gen_case c;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run r;

	if (argc != 3) {
		fprintf(stderr, "usage: tune_fill DB SEED\n");
		return 2;
	}
	gen_opts_default(&go);
	go.noise = GEN_GAUSS;
	go.raw = 1;
	go.refine = 0;
	go.edges = 0;
	go.with_rate = 1;
	if (gen_make(strtoull(argv[2], NULL, 0), &go, &c))
		return 1;

	memset(&r, 0, sizeof(r));
	snprintf(r.node.hostname, sizeof(r.node.hostname), "tune-host");
	snprintf(r.node.machine_id, sizeof(r.node.machine_id), "0123456789abcdef0123456789abcdef");
	r.node.cpu_count = 8;
	r.node.numa_nodes = 1;
	snprintf(r.dev.name, sizeof(r.dev.name), "mlx5_0");
	snprintf(r.dev.node_guid, sizeof(r.dev.node_guid), "0011:2233:4455:6677");
	r.dev.max_inline_rc = (int)c.max_inline;
	r.dev.max_inline_ud = -1;
	r.dev.max_qp_wr = 32768;
	r.dev.numa_node = 0;
	r.dev.port_count = 1;
	r.dev.ports[0].port_num = 1;
	snprintf(r.dev.ports[0].state, sizeof(r.dev.ports[0].state), "active");
	r.port_num = 1;
	r.env.cpu = 2;
	r.env.numa_local = true;
	snprintf(r.env.mode, sizeof(r.env.mode), "loopback");
	r.sq_depth = c.sq_depth;
	r.status = RT_RUN_COMPLETE;
	/* the run takes over the generated arrays */
	r.lat = c.lat;
	r.n_lat = c.n_lat;
	r.rate = c.rate;
	r.n_rate = c.n_rate;
	c.lat = NULL;
	c.n_lat = 0;
	c.rate = NULL;
	c.n_rate = 0;

	if (rt_store_open(argv[1], &st, &err) || rt_store_run_save(st, &r, &err))
		goto fail;
	/* an application that sends mostly small messages */
	memset(&h, 0, sizeof(h));
	snprintf(h.app, sizeof(h.app), "kv");
	h.op = RT_OP_SEND;
	h.qpt = RT_QPT_RC;
	h.buckets[rt_hist_bucket(16)] = 9000;
	h.buckets[rt_hist_bucket(4096)] = 1000;
	h.messages = 10000;
	h.bytes = 9000 * 16 + 1000 * 4096;
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	printf("planted %u %u ", c.true_threshold, c.true_n);
	for (size_t i = 0; i < c.n_grid; i++)
		printf("%s%u", i ? "," : "", c.grid[i]);
	printf("\n");
	rt_store_close(st);
	rt_run_release(&r);
	gen_free(&c);
	return 0;
fail:
	fprintf(stderr, "tune_fill: %s\n", err.text);
	rt_store_close(st);
	rt_run_release(&r);
	gen_free(&c);
	return 1;
}
