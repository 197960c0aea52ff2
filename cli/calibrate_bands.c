// SPDX-License-Identifier: MIT
/*
 * Per-band signaling decisions of `rtune calibrate` (see calibrate_bands.h): splits run->band_rate by band, tunes each
 * band on its own points (the tuner's input built from the run, with that band as its only rate points and no latency
 * points), and formats the result.
 */
#include "calibrate_bands.h"
#include "rt_tuner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Tunes the points of one band (pts[0..k)) and appends its decisions to out; returns 0 or an errno with err. */
static int tune_one(const struct rt_run *run, enum rt_rate_band band, const struct rt_rate_point *pts, size_t k,
		    struct rt_store_signal_band *out, size_t *n, size_t cap, struct rt_error *err)
{
	struct rt_tuner_input in;
	struct rt_tuner_result res;
	int rc;

	rt_tuner_input_from_run(&in, run);
	in.lat = NULL;
	in.n_lat = 0;
	in.rate = pts;
	in.n_rate = k;
	memset(&res, 0, sizeof(res));
	rc = rt_tuner_run(&in, NULL, &res, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < res.n && *n < cap; i++) {
		const struct rt_tuner_decision *d = &res.d[i];
		struct rt_store_signal_band *b;

		if (!d->signal_measured)
			continue;
		b = &out[(*n)++];
		memset(b, 0, sizeof(*b));
		b->band = band;
		b->op = d->op;
		b->qpt = d->qpt;
		b->msg_bytes_lo = UINT32_MAX;
		for (size_t j = 0; j < k; j++)
			if (pts[j].op == d->op && pts[j].qpt == d->qpt) {
				b->msg_bytes_lo =
					pts[j].msg_bytes < b->msg_bytes_lo ? pts[j].msg_bytes : b->msg_bytes_lo;
				b->msg_bytes_hi =
					pts[j].msg_bytes > b->msg_bytes_hi ? pts[j].msg_bytes : b->msg_bytes_hi;
				b->post_list = pts[j].post_list > 1 ? pts[j].post_list : 1;
				b->qps = pts[j].qps > 1 ? pts[j].qps : 1;
				b->threads = pts[j].threads > 1 ? pts[j].threads : 1;
			}
		b->signal_interval = d->signal_interval;
		snprintf(b->verdict, sizeof(b->verdict), "%s", rt_signal_verdict_name(d->signal_verdict));
		snprintf(b->confidence, sizeof(b->confidence), "%s", rt_confidence_name(d->signal_confidence));
	}
	rt_tuner_result_free(&res);
	return 0;
}

int rt_cli_tune_bands(const struct rt_run *run, struct rt_store_signal_band **out, size_t *n, struct rt_error *err)
{
	size_t cap = (size_t)RT_BAND__COUNT * RT_OP__COUNT * RT_QPT__COUNT;
	struct rt_rate_point *pts;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!run->n_band_rate)
		return 0;
	pts = malloc(run->n_band_rate * sizeof(*pts));
	*out = calloc(cap, sizeof(**out));
	if (!pts || !*out) {
		free(pts);
		free(*out);
		*out = NULL;
		return rt_error_set(err, ENOMEM, "out of memory");
	}
	for (int band = RT_BAND_SMALL + 1; !rc && band < RT_BAND__COUNT; band++) {
		size_t k = 0;

		for (size_t i = 0; i < run->n_band_rate; i++)
			if (rt_rate_band_of(&run->band_rate[i]) == (enum rt_rate_band)band)
				pts[k++] = run->band_rate[i];
		if (k)
			rc = tune_one(run, (enum rt_rate_band)band, pts, k, *out, n, cap, err);
	}
	free(pts);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void rt_cli_print_bands(FILE *f, const struct rt_store_signal_band *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i].band == RT_BAND_CONCURRENCY)
			fprintf(f, "signaling, concurrency %u qps x %u threads (%u B): ", b[i].qps, b[i].threads,
				b[i].msg_bytes_lo);
		else if (b[i].band == RT_BAND_POST_LIST)
			fprintf(f, "signaling, post lists of %u WRs (%u B): ", b[i].post_list, b[i].msg_bytes_lo);
		else
			fprintf(f, "signaling, large messages %u-%u B: ", b[i].msg_bytes_lo, b[i].msg_bytes_hi);
		fprintf(f, "%s/%s N = %u (%s, %s confidence)\n", rt_opcode_name(b[i].op), rt_qp_type_name(b[i].qpt),
			b[i].signal_interval, b[i].verdict, b[i].confidence);
	}
}
