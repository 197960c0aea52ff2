// SPDX-License-Identifier: MIT
/*
 * Test helper for `rtune tune --app`: stores a calibration run drawn from the tuner's ground-truth generator with its
 * latency curves measured on RC and on UD QPs (the same planted crossover), and the histograms of applications as
 * `rtune probe` stores them:
 *   udapp   sends only 64-byte SENDs, on UD QPs (500 of them)
 *   rcapp   sends only 64-byte SENDs, on RC QPs (500)
 *   batchy  64-byte SENDs on RC QPs posted in lists of 64 WRs, whose 32-WR send queue was full 7 times
 *   oldapp  64-byte SENDs on RC QPs, stored by an rtune that did not keep the largest size per bucket
 *   fanout  64-byte SENDs one WR per call on 6 RC QPs posted from 3 threads (the concurrency band's --app)
 *   oldfan  64-byte SENDs on 4 RC QPs, stored by a probe that did not record its posting threads
 * (rcapp, udapp and batchy: one QP, one thread)
 * Prints "planted THRESHOLD N" on stdout.
 * usage: app_fill DB SEED
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "rt_store.h"

/* A histogram of n SENDs of 64 bytes on qpt, in single-WR post calls unless changed by the caller. */
static void sends_64(struct rt_store_histogram *h, const char *app, enum rt_qp_type qpt, uint64_t n)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->app, sizeof(h->app), "%s", app);
	h->op = RT_OP_SEND;
	h->qpt = qpt;
	h->buckets[rt_hist_bucket(64)] = n;
	h->bucket_max[rt_hist_bucket(64)] = 64;
	h->messages = n;
	h->bytes = 64 * n;
	h->signaled_count = n;
	h->post_calls = n;
	h->batch[0] = n;
	h->batch_max[0] = 1;
	h->max_send_wr = 128;
	h->qps = 1;
	h->threads = 1;
}

int main(int argc, char **argv)
{
	struct rt_store_histogram h;
	struct gen_opts go;
	struct gen_case c;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run r;

	if (argc != 3) {
		fprintf(stderr, "usage: app_fill DB SEED\n");
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
	snprintf(r.node.hostname, sizeof(r.node.hostname), "app-host");
	snprintf(r.node.machine_id, sizeof(r.node.machine_id), "fedcba9876543210fedcba9876543210");
	r.node.cpu_count = 8;
	r.node.numa_nodes = 1;
	snprintf(r.dev.name, sizeof(r.dev.name), "mlx5_0");
	snprintf(r.dev.node_guid, sizeof(r.dev.node_guid), "0011:2233:4455:6677");
	r.dev.max_inline_rc = (int)c.max_inline;
	r.dev.max_inline_ud = (int)c.max_inline;
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
	/* the RC latency points, then a copy of each on UD (own samples), and the RC rate sweep */
	r.lat = calloc(2 * c.n_lat, sizeof(*r.lat));
	if (!r.lat)
		return 1;
	for (size_t i = 0; i < c.n_lat; i++) {
		r.lat[i] = c.lat[i];
		r.lat[c.n_lat + i] = c.lat[i];
		r.lat[c.n_lat + i].qpt = RT_QPT_UD;
		if (c.lat[i].n_kept) {
			r.lat[c.n_lat + i].samples_ns = malloc(c.lat[i].n_kept * sizeof(float));
			if (!r.lat[c.n_lat + i].samples_ns)
				return 1; // NOLINT(clang-analyzer-unix.Malloc): a test filler that exits on out-of-memory
			memcpy(r.lat[c.n_lat + i].samples_ns, c.lat[i].samples_ns, c.lat[i].n_kept * sizeof(float));
		}
	}
	r.n_lat = 2 * c.n_lat;
	free(c.lat);
	c.lat = NULL;
	c.n_lat = 0;
	r.rate = c.rate;
	r.n_rate = c.n_rate;
	c.rate = NULL;
	c.n_rate = 0;

	if (rt_store_open(argv[1], &st, &err) || rt_store_run_save(st, &r, &err))
		goto fail;
	sends_64(&h, "udapp", RT_QPT_UD, 500);
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	sends_64(&h, "rcapp", RT_QPT_RC, 500);
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	sends_64(&h, "batchy", RT_QPT_RC, 6400);
	h.post_calls = 100;
	h.batch[0] = 0;
	h.batch_max[0] = 0;
	h.batch[rt_batch_bucket(64)] = 100;
	h.batch_max[rt_batch_bucket(64)] = 64;
	h.sq_full_enomem = 7;
	h.max_send_wr = 32;
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	sends_64(&h, "oldapp", RT_QPT_RC, 500);
	memset(h.bucket_max, 0, sizeof(h.bucket_max));
	h.post_calls = 0;
	memset(h.batch, 0, sizeof(h.batch));
	memset(h.batch_max, 0, sizeof(h.batch_max));
	h.max_send_wr = 0;
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	sends_64(&h, "fanout", RT_QPT_RC, 6000);
	h.qps = 6;
	h.threads = 3;
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	sends_64(&h, "oldfan", RT_QPT_RC, 4000);
	h.qps = 4;
	h.threads = 0;
	if (rt_store_put_histogram(st, &r.node, &h, &err))
		goto fail;
	printf("planted %u %u\n", c.true_threshold, c.true_n);
	rt_store_close(st);
	rt_run_release(&r);
	gen_free(&c);
	return 0;
fail:
	fprintf(stderr, "app_fill: %s\n", err.text);
	rt_store_close(st);
	rt_run_release(&r);
	gen_free(&c);
	return 1;
}
