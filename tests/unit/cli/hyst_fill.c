// SPDX-License-Identifier: MIT
/*
 * Test helper for the hysteresis of `rtune tune` and its run selection: stores one calibration run of a node's mlx5_0
 * whose inline comparison is planted size by size (send/RC ping-pong, raw samples under small gaussian noise) and
 * whose rate sweep is the same in every run (a knee at N = 16), one hour after the store's newest run. SHAPE gives,
 * for the sizes 16, 32, ..., 1024, the planted gain of inline in ns (non-inline - inline median; "0" = the same,
 * negative = a loss). STATUS: complete (default) or interrupted (its process "died" after storing the points).
 * Prints the run's id and uuid.
 * usage: hyst_fill DB SHAPE [STATUS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_store.h"

#define N_SIZES 7
#define N_SAMPLES 400

/* A deterministic gaussian (xorshift64* + Box-Muller): the same SHAPE gives the same run. */
static double gauss(uint64_t *s)
{
	double u1, u2;

	*s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
	u1 = ((double)((*s * 2685821657736338717ull) >> 11) + 1.0) / 9007199254740993.0;
	*s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
	u2 = (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Fills p (a send point of QP type qpt) with N_SAMPLES raw samples around median_ns (sd sd_ns) and their summary.
 * 0 or -1 (out of memory). */
static int point(struct rt_lat_point *p, enum rt_qp_type qpt, uint32_t size, bool inl, double median_ns, double sd_ns,
		 uint64_t *seed)
{
	double sum = 0;

	memset(p, 0, sizeof(*p));
	p->op = RT_OP_SEND;
	p->qpt = qpt;
	p->kind = RT_LAT_PINGPONG;
	p->msg_bytes = size;
	p->inl = inl;
	p->samples_ns = malloc(N_SAMPLES * sizeof(float));
	if (!p->samples_ns)
		return -1;
	for (int i = 0; i < N_SAMPLES; i++) {
		p->samples_ns[i] = (float)(median_ns + sd_ns * gauss(seed));
		sum += p->samples_ns[i];
	}
	p->n_samples = p->n_kept = N_SAMPLES;
	qsort(p->samples_ns, N_SAMPLES, sizeof(float), cmp_float);
	p->median_ns = p->samples_ns[N_SAMPLES / 2];
	p->p99_ns = p->samples_ns[N_SAMPLES * 99 / 100];
	p->p999_ns = p->samples_ns[N_SAMPLES - 1];
	p->min_ns = p->samples_ns[0];
	p->mean_ns = sum / N_SAMPLES;
	p->ci_lo_ns = p->samples_ns[N_SAMPLES / 2 - 20];
	p->ci_hi_ns = p->samples_ns[N_SAMPLES / 2 + 20];
	p->cpu_ns_per_op = p->median_ns;
	/* the engine shuffles its samples; sorted ones would look like drift to a stationarity check */
	for (int i = N_SAMPLES - 1; i > 0; i--) {
		int j = (int)((*seed = *seed * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (i + 1);
		float t = p->samples_ns[i];

		p->samples_ns[i] = p->samples_ns[j];
		p->samples_ns[j] = t;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const uint32_t ns[] = { 1, 2, 4, 8, 16, 32, 64 };
	struct rt_store_run_summary *v = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run r;
	double gain[N_SIZES];
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	const char *status = argc > 3 ? argv[3] : "complete";
	char *shape, *tok, *save = NULL;
	size_t n = 0, k = 0;

	bool warn = argc > 4 && !strcmp(argv[4], "warn"), ud = argc > 4 && !strcmp(argv[4], "ud");

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: hyst_fill DB SHAPE [STATUS [FLAGS]]\n");
		return 2;
	}
	shape = strdup(argv[2]);
	for (tok = strtok_r(shape, ",", &save); tok && k < N_SIZES; tok = strtok_r(NULL, ",", &save))
		gain[k++] = strtod(tok, NULL);
	free(shape);
	if (k != N_SIZES) {
		fprintf(stderr, "hyst_fill: SHAPE needs %d gains\n", N_SIZES);
		return 2;
	}
	if (rt_store_open(argv[1], &st, &err) || rt_store_run_list(st, NULL, &v, &n, &err)) {
		fprintf(stderr, "hyst_fill: %s\n", err.text);
		return 1;
	}
	memset(&r, 0, sizeof(r));
	snprintf(r.node.hostname, sizeof(r.node.hostname), "hyst-host");
	snprintf(r.node.machine_id, sizeof(r.node.machine_id), "fedcba9876543210fedcba9876543210");
	r.node.cpu_count = 8;
	r.node.numa_nodes = 1;
	snprintf(r.dev.name, sizeof(r.dev.name), "mlx5_0");
	snprintf(r.dev.node_guid, sizeof(r.dev.node_guid), "0011:2233:4455:6677");
	r.dev.max_inline_rc = 1024;
	r.dev.max_inline_ud = 1024;
	r.dev.max_qp_wr = 32768;
	r.dev.numa_node = 0;
	r.dev.port_count = 1;
	r.dev.ports[0].port_num = 1;
	snprintf(r.dev.ports[0].state, sizeof(r.dev.ports[0].state), "active");
	r.port_num = 1;
	r.env.cpu = 2;
	r.env.numa_local = true;
	snprintf(r.env.mode, sizeof(r.env.mode), "loopback");
	r.sq_depth = 256;
	r.started_ns = (1800000000LL + (int64_t)n * 3600) * 1000000000LL;
	r.ended_ns = r.started_ns + 20000000000LL;
	seed += n;
	free(v);

	r.lat = calloc(4 * N_SIZES, sizeof(*r.lat));
	r.rate = calloc(sizeof(ns) / sizeof(ns[0]), sizeof(*r.rate));
	if (!r.lat || !r.rate)
		return 1;
	for (int i = 0; i < N_SIZES; i++) {
		uint32_t size = 16u << i;
		double noninl = 2000.0 + 0.5 * size;

		if (point(&r.lat[r.n_lat++], RT_QPT_RC, size, false, noninl, 4.0, &seed) ||
		    point(&r.lat[r.n_lat++], RT_QPT_RC, size, true, noninl - gain[i], 4.0, &seed))
			return 1;
		if (ud && (point(&r.lat[r.n_lat++], RT_QPT_UD, size, false, noninl, 4.0, &seed) ||
			   point(&r.lat[r.n_lat++], RT_QPT_UD, size, true, noninl - gain[i], 4.0, &seed)))
			return 1;
	}
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct rt_rate_point *p = &r.rate[r.n_rate++];
		double mops = ns[i] >= 16 ? 4.0 : 4.0 * (0.5 + 0.5 * ns[i] / 16.0);

		p->op = RT_OP_SEND;
		p->qpt = RT_QPT_RC;
		p->msg_bytes = 64;
		p->inl = true;
		p->signal_interval = ns[i];
		p->sq_depth = 256;
		p->reps = 5;
		p->mops = mops;
		p->mops_lo = mops * 0.998;
		p->mops_hi = mops * 1.002;
		p->cpu_ns_per_msg = 1000.0 / mops;
		p->msgs = 1000000;
		if (warn && ns[i] == 4) /* SQ overflow seen, and a dip the isotonic fit must flatten */
			p->enomem = 3;
		if (warn && ns[i] == 32)
			p->mops = p->mops_lo = p->mops_hi = 3.2;
	}
	if (warn) {
		r.cqmod[RT_OP_SEND].measured = r.cqmod[RT_OP_SEND].supported = true;
		r.cqmod[RT_OP_SEND].best_count = 16;
		r.cqmod[RT_OP_SEND].best_period_us = 8;
		r.cqmod[RT_OP_SEND].mops_off = 4.0;
		r.cqmod[RT_OP_SEND].mops_best = 4.6;
	}
	if (!strcmp(status, "complete")) {
		r.status = RT_RUN_COMPLETE;
		if (rt_store_run_save(st, &r, &err))
			goto fail;
	} else if (!strcmp(status, "interrupted")) {
		if (rt_store_run_begin(st, &r, &err) ||
		    rt_store_run_add_points(st, r.id, r.lat, r.n_lat, r.rate, r.n_rate, &err) ||
		    rt_store_run_finish(st, r.id, RT_RUN_INTERRUPTED, &err))
			goto fail;
	} else if (!strcmp(status, "running")) {
		char c;

		if (rt_store_run_begin(st, &r, &err) ||
		    rt_store_run_add_points(st, r.id, r.lat, r.n_lat, r.rate, r.n_rate, &err))
			goto fail;
		printf("%lld %s\n", (long long)r.id, r.uuid);
		fflush(stdout);
		alarm(60);
		while (read(0, &c, 1) > 0)
			;
		rt_run_release(&r);
		rt_store_close(st);
		return 0;
	} else {
		fprintf(stderr, "hyst_fill: STATUS is complete, interrupted or running, not '%s'\n", status);
		return 2;
	}
	printf("%lld %s\n", (long long)r.id, r.uuid);
	rt_run_release(&r);
	rt_store_close(st);
	return 0;
fail:
	fprintf(stderr, "hyst_fill: %s\n", err.text);
	rt_run_release(&r);
	rt_store_close(st);
	return 1;
}
