// SPDX-License-Identifier: MIT
/*
 * The tuner's entry points: options and their checks, grouping the points by (opcode, QP type), running the inline
 * and signaling analyses for each group, the reason list, the result's release and the stable names.
 */
#include "tuner_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_hist.h"

void rt_tuner_opts_default(struct rt_tuner_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->seed = 1;
	opts->tolerance = 0.015;
	opts->sq_cap_divisor = 4;
	opts->flat_signal_interval = 16;
	opts->n_boot = 200;
	opts->ci_level = 0.95;
	opts->input_ci_level = 0.95;
	opts->floor_rel = 0.01;
	opts->floor_abs_ns = 20;
	opts->implausible_gain_ns = 2500;
	opts->hist_gain_keep = 0.99;
	opts->kind = -1;
}

void rt_tuner_input_from_run(struct rt_tuner_input *in, const struct rt_run *run)
{
	memset(in, 0, sizeof(*in));
	in->lat = run->lat;
	in->n_lat = run->n_lat;
	in->rate = run->rate;
	in->n_rate = run->n_rate;
	in->limits.max_inline[RT_QPT_RC] = run->dev.max_inline_rc;
	in->limits.max_inline[RT_QPT_UD] = run->dev.max_inline_ud;
	/* SRD exists on EFA only, whose UD and SRD QPs share the device's inline buffer (kernel efa_qp_validate_cap checks
	 * every QP type against inline_buf_size): a stored run (which keeps no SRD column) has UD's as SRD's limit */
	in->limits.max_inline[RT_QPT_SRD] =
		run->dev.max_inline_srd > 0 ? run->dev.max_inline_srd : run->dev.max_inline_ud;
	in->limits.max_qp_wr = run->dev.max_qp_wr > 0 ? (uint32_t)run->dev.max_qp_wr : 0;
	in->limits.max_cqe = run->dev.max_cqe > 0 ? (uint32_t)run->dev.max_cqe : 0;
	in->limits.sq_depth = run->sq_depth;
	in->limits.hardware = run->dev.pci_addr[0] != '\0';
	in->cqmod = run->cqmod;
}

void rt__reason(struct rt_reasons *r, enum rt_reason_code code, enum rt_reason_topic topic, enum rt_reason_severity sev,
		const char *fmt, ...)
{
	struct rt_tuner_decision *d = r->d;
	struct rt_tuner_reason *x;
	va_list ap;

	if (d->n_reasons == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct rt_tuner_reason *nr = realloc(d->reasons, cap * sizeof(*nr));

		if (!nr) {
			r->oom = 1;
			return;
		}
		d->reasons = nr;
		r->cap = cap;
	}
	x = &d->reasons[d->n_reasons++];
	x->code = code;
	x->topic = topic;
	x->severity = sev;
	va_start(ap, fmt);
	/* a text longer than the buffer ends in "..." where it was cut, never silently mid-word */
	if (vsnprintf(x->text, sizeof(x->text), fmt, ap) >= (int)sizeof(x->text))
		memcpy(x->text + sizeof(x->text) - 4, "...", 4);
	va_end(ap);
}

int rt__has_reason(const struct rt_tuner_decision *d, enum rt_reason_code code)
{
	for (size_t i = 0; i < d->n_reasons; i++)
		if (d->reasons[i].code == code)
			return 1;
	return 0;
}

static int check_opts(const struct rt_tuner_opts *o, struct rt_error *err)
{
	if (!(o->tolerance > 0 && o->tolerance < 0.5))
		return rt_error_set(err, EINVAL, "tolerance %g out of range (0, 0.5)", o->tolerance);
	if (o->sq_cap_divisor < 1)
		return rt_error_set(err, EINVAL, "sq_cap_divisor must be at least 1");
	if (o->flat_signal_interval < 1)
		return rt_error_set(err, EINVAL, "flat_signal_interval must be at least 1");
	if (o->n_boot < 20 || o->n_boot > 100000)
		return rt_error_set(err, EINVAL, "n_boot %u out of range 20..100000", o->n_boot);
	if (!(o->ci_level >= 0.5 && o->ci_level < 1) || !(o->input_ci_level >= 0.5 && o->input_ci_level < 1))
		return rt_error_set(err, EINVAL, "confidence levels must be in [0.5, 1)");
	if (!(o->floor_rel >= 0) || !(o->floor_abs_ns >= 0) || !(o->implausible_gain_ns > 0))
		return rt_error_set(err, EINVAL, "noise floor and implausibility bound must be non-negative");
	if (!(o->hist_gain_keep > 0 && o->hist_gain_keep <= 1))
		return rt_error_set(err, EINVAL, "hist_gain_keep %g out of range (0, 1]", o->hist_gain_keep);
	if (o->kind < -1 || o->kind >= RT_LAT__COUNT)
		return rt_error_set(err, EINVAL, "unknown latency kind %d", o->kind);
	return 0;
}

static int cmp_bin_lo(const void *pa, const void *pb)
{
	const struct rt_tuner_hist_bin *a = *(const struct rt_tuner_hist_bin *const *)pa;
	const struct rt_tuner_hist_bin *b = *(const struct rt_tuner_hist_bin *const *)pb;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

static int check_hist(const struct rt_tuner_app *app, enum rt_opcode op, struct rt_error *err)
{
	const struct rt_tuner_hist_bin **s;
	int rc = 0;

	if (!app->n_bins)
		return 0;
	if (!app->bins)
		return rt_error_set(err, EINVAL, "%s histogram: %zu bins but no array", rt_opcode_name(op),
				    app->n_bins);
	s = malloc(app->n_bins * sizeof(*s));
	if (!s)
		return rt_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < app->n_bins; i++) {
		s[i] = &app->bins[i];
		if (s[i]->hi < s[i]->lo) {
			rc = rt_error_set(err, EINVAL, "%s histogram: bin %zu has hi %u < lo %u", rt_opcode_name(op), i,
					  s[i]->hi, s[i]->lo);
			goto out;
		}
	}
	qsort(s, app->n_bins, sizeof(*s), cmp_bin_lo);
	for (size_t i = 1; i < app->n_bins; i++)
		if (s[i]->lo <= s[i - 1]->hi) {
			rc = rt_error_set(err, EINVAL, "%s histogram: bins %u..%u and %u..%u overlap",
					  rt_opcode_name(op), s[i - 1]->lo, s[i - 1]->hi, s[i]->lo, s[i]->hi);
			goto out;
		}
out:
	free(s);
	return rc;
}

static void decision_free(struct rt_tuner_decision *d)
{
	free(d->sizes);
	free(d->reasons);
	d->sizes = NULL;
	d->reasons = NULL;
	d->n_sizes = d->n_reasons = 0;
}

void rt_tuner_result_free(struct rt_tuner_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->n; i++)
		decision_free(&res->d[i]);
	free(res->d);
	res->d = NULL;
	res->n = 0;
}

int rt_tuner_run(const struct rt_tuner_input *in, const struct rt_tuner_opts *opts, struct rt_tuner_result *out,
		 struct rt_error *err)
{
	struct rt_tuner_opts defaults;
	struct rt_tctx *t = NULL;
	const struct rt_lat_point **lp = NULL;
	const struct rt_rate_point **rp = NULL;
	int rc = 0;

	if (!out)
		return rt_error_set(err, EINVAL, "tuner: no result to fill");
	memset(out, 0, sizeof(*out));
	if (!in || (in->n_lat && !in->lat) || (in->n_rate && !in->rate))
		return rt_error_set(err, EINVAL, "tuner: missing input arrays");
	if (!opts) {
		rt_tuner_opts_default(&defaults);
		opts = &defaults;
	}
	if ((rc = check_opts(opts, err)))
		return rc;
	for (int op = 0; op < RT_OP__COUNT; op++)
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++)
			if ((rc = check_hist(&in->app[op][qpt], (enum rt_opcode)op, err)))
				return rc;
	if (!in->n_lat && !in->n_rate)
		return rt_error_set(err, ENODATA, "tuner: no latency or rate points to tune from");

	t = malloc(sizeof(*t));
	lp = malloc((in->n_lat ? in->n_lat : 1) * sizeof(*lp));
	rp = malloc((in->n_rate ? in->n_rate : 1) * sizeof(*rp));
	out->d = calloc(RT_OP__COUNT * RT_QPT__COUNT, sizeof(*out->d));
	if (!t || !lp || !rp || !out->d) {
		rc = rt_error_set(err, ENOMEM, "tuner: out of memory");
		goto out;
	}
	t->o = opts;
	t->err = err;
	out->seed = opts->seed;
	rt_rng_seed(&t->rng, opts->seed);
	for (size_t i = 0; i < RT_POOL_SIZE; i++)
		t->pool[i] = (float)rt_rng_normal(&t->rng);
	t->z_ci = rt__norm_ppf(1 - (1 - opts->ci_level) / 2);
	t->z_in = rt__norm_ppf(1 - (1 - opts->input_ci_level) / 2);

	for (int op = 0; op < RT_OP__COUNT; op++) {
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++) {
			size_t nl = 0, nr = 0;
			struct rt_tuner_decision *d = &out->d[out->n];
			struct rt_reasons r = { .d = d };

			for (size_t i = 0; i < in->n_lat; i++)
				if ((int)in->lat[i].op == op && (int)in->lat[i].qpt == qpt)
					lp[nl++] = &in->lat[i];
			for (size_t i = 0; i < in->n_rate; i++)
				if ((int)in->rate[i].op == op && (int)in->rate[i].qpt == qpt)
					rp[nr++] = &in->rate[i];
			if (!nl && !nr)
				continue;
			out->n++;
			d->op = (enum rt_opcode)op;
			d->qpt = (enum rt_qp_type)qpt;
			/* each analysis draws from its own stream so adding rate points never moves the inline answer */
			rt_rng_seed(&t->rng,
				    opts->seed ^ (0x100u * (unsigned)op + (unsigned)qpt + 1) * 0x9e3779b97f4a7c15ull);
			if ((rc = rt__inline_analyse(t, lp, nl, in, d, &r)))
				goto fail;
			rt_rng_seed(&t->rng,
				    ~opts->seed ^ (0x100u * (unsigned)op + (unsigned)qpt + 1) * 0xbf58476d1ce4e5b9ull);
			if ((rc = rt__signal_analyse(t, rp, nr, in, d, &r)))
				goto fail;
			rt__app_reasons(in, d, &r);
			if (r.oom) {
				rc = ENOMEM;
				goto fail;
			}
			d->confidence = rt__conf_min(d->inline_confidence, d->signal_confidence);
		}
	}
	goto out;
fail:
	rt_error_set(err, rc, "tuner: %s", rc == ENOMEM ? "out of memory" : "analysis failed");
	rt_tuner_result_free(out);
out:
	free(t);
	free(lp);
	free(rp);
	return rc;
}

int rt_tuner_hist_from_buckets(const uint64_t *counts, struct rt_tuner_hist_bin **bins, size_t *n_bins,
			       struct rt_error *err)
{
	size_t n = 0;

	if (!counts || !bins || !n_bins)
		return rt_error_set(err, EINVAL, "histogram: NULL argument");
	*bins = NULL;
	*n_bins = 0;
	for (unsigned b = 0; b < RT_HIST_BUCKETS; b++)
		n += counts[b] != 0;
	if (!n)
		return 0;
	*bins = malloc(n * sizeof(**bins));
	if (!*bins)
		return rt_error_set(err, ENOMEM, "histogram: out of memory");
	for (unsigned b = 0; b < RT_HIST_BUCKETS; b++) {
		if (!counts[b])
			continue;
		(*bins)[*n_bins].lo = rt_hist_bucket_lo(b);
		(*bins)[*n_bins].hi = rt_hist_bucket_hi(b);
		(*bins)[*n_bins].count = counts[b];
		(*n_bins)++;
	}
	return 0;
}

/* ---- names ---- */

static const char *const conf_names[] = { "low", "medium", "high" };
static const char *const class_names[] = { "win", "not_worse", "loss", "inconclusive", "indifferent" };
static const char *const verdict_names[] = { "not_measured", "knee", "indifferent" };
static const char *const cqmod_names[] = { "not_measured", "unsupported", "off", "on" };
static const char *const reason_names[RT_R__COUNT] = {
	[RT_R_INLINE_THRESHOLD] = "inline_threshold",
	[RT_R_INLINE_NEVER_BETTER] = "inline_never_better",
	[RT_R_LIMITED_BY_DEVICE_MAX_INLINE] = "limited_by_device_max_inline",
	[RT_R_LIMITED_BY_MEASURED_RANGE] = "limited_by_measured_range",
	[RT_R_HISTOGRAM_THRESHOLD] = "histogram_threshold",
	[RT_R_EXPECTED_GAIN] = "expected_gain",
	[RT_R_KNEEDLE_KNEE] = "kneedle_knee",
	[RT_R_RANK_TEST_DISAGREES] = "rank_test_disagrees",
	[RT_R_SIGNAL_INTERVAL] = "signal_interval",
	[RT_R_SIGNAL_CAPPED_BY_SQ] = "signal_capped_by_sq_depth",
	[RT_R_SIGNAL_RAISED_TO_BATCH] = "signal_raised_to_batch",
	[RT_R_NO_LATENCY_DATA] = "no_latency_data",
	[RT_R_NO_RATE_DATA] = "no_rate_data",
	[RT_R_SQ_OVERFLOW_SEEN] = "sq_overflow_seen",
	[RT_R_QUEUE_DEPTHS] = "queue_depths",
	[RT_R_CQ_MODERATION] = "cq_moderation",
	[RT_R_CQ_MODERATION_NO_GAIN] = "cq_moderation_no_gain",
	[RT_R_CQ_MODERATION_UNSUPPORTED] = "cq_moderation_unsupported",
	[RT_R_CQ_MODERATION_NOT_MEASURED] = "cq_moderation_not_measured",
	[RT_R_INSUFFICIENT_DATA] = "insufficient_data",
	[RT_R_TOO_FEW_POINTS] = "too_few_points",
	[RT_R_NON_MONOTONE] = "non_monotone",
	[RT_R_MULTI_KNEE] = "multi_knee",
	[RT_R_IMPLAUSIBLE_GAIN] = "implausible_gain",
	[RT_R_INVALID_POINT] = "invalid_point",
	[RT_R_SIGNAL_INDIFFERENT] = "signal_indifferent",
	[RT_R_APP_SENT_NOTHING] = "app_sent_nothing",
	[RT_R_APP_SQ_FULL] = "app_sq_full",
	[RT_R_SERIES_DISAGREE] = "series_disagree",
};

#define NAME_OF(tab, v) ((unsigned)(v) < sizeof(tab) / sizeof((tab)[0]) && (tab)[v] ? (tab)[v] : "unknown")

const char *rt_confidence_name(enum rt_confidence c)
{
	return NAME_OF(conf_names, c);
}
const char *rt_size_class_name(enum rt_size_class c)
{
	return NAME_OF(class_names, c);
}
const char *rt_reason_code_name(enum rt_reason_code c)
{
	return NAME_OF(reason_names, c);
}
const char *rt_cq_mod_advice_name(enum rt_cq_mod_advice a)
{
	return NAME_OF(cqmod_names, a);
}
const char *rt_signal_verdict_name(enum rt_signal_verdict v)
{
	return NAME_OF(verdict_names, v);
}
