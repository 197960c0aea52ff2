// SPDX-License-Identifier: MIT
/*
 * `rtune tune`: recomputes the decisions (inline threshold, max_inline_data, signaling interval, queue depths, CQ
 * moderation) from a stored calibration run, optionally weighted by an application's message-size histogram, prints
 * them with their confidence and reasons, and stores them as the node's profile. Needs no device.
 */
#include "cli.h"
#include "rt_store.h"
#include "rt_tuner.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: rtune tune [RUN] [--app NAME] [--tolerance PCT] [--seed N] [--json] [--dry-run] [--db PATH]\n"
	"\n"
	"Compute the inline threshold, max_inline_data, signaling interval, queue depths and CQ moderation from a stored\n"
	"calibration run (RUN: its id or uuid; default the most recent run), print the decisions with their confidence\n"
	"and reasons, and store them as this node's profile (see 'rtune show', 'rtune export').\n"
	"\n"
	"  --app NAME         weight the inline threshold by the message sizes application NAME sends (recorded with\n"
	"                     'rtune probe --name NAME')\n"
	"  -d, --ib-dev DEV   the most recent run of this device (when RUN is not given)\n"
	"  --tolerance PCT    signaling interval: smallest N whose rate is within PCT %% of the best (default 1.5)\n"
	"  --seed N           seed of the bootstrap (default 1: the same input gives the same decisions)\n"
	"  --json             print the decisions as JSON on stdout\n"
	"  --dry-run          do not store the profile\n"
	"  --db PATH          the store (default $RTUNE_DB, /var/lib/rtune/rtune.db for root, else\n"
	"                     $XDG_STATE_HOME/rtune/rtune.db)\n"
	"  -h, --help         this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure (no run, store error), 2 usage\n";

/* Maps one tuner decision to a profile entry of run's device. */
static void decision_to_entry(const struct rt_run *run, const struct rt_tuner_decision *d, const char *app,
			      struct rt_profile_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->inline_threshold = d->inline_threshold;
	e->inline_limit_excl = d->inline_threshold ? d->inline_threshold + 1 : 0;
	e->max_inline_data = d->max_inline_data;
	e->signal_interval = d->signal_interval ? d->signal_interval : 1;
	e->sq_depth = d->sq_depth;
	e->cq_depth = d->cq_depth;
	e->cq_moderation = d->cq_mod == RT_CQMOD_ON;
	e->cq_mod_count = e->cq_moderation ? d->cq_mod_count : 0;
	e->cq_mod_period_us = e->cq_moderation ? d->cq_mod_period_us : 0;
	snprintf(e->device, sizeof(e->device), "%s", run->dev.name);
	snprintf(e->guid, sizeof(e->guid), "%s", run->dev.node_guid);
	e->port = run->port_num;
	e->opcode = d->op == RT_OP_WRITE ? RT_PROFILE_OP_WRITE : RT_PROFILE_OP_SEND;
	e->qp_type = d->qpt == RT_QPT_UD ? RT_PROFILE_QPT_UD : RT_PROFILE_QPT_RC;
	e->numa_node = run->dev.numa_node;
	if (run->env.cpu >= 0)
		snprintf(e->cpus, sizeof(e->cpus), "%d", run->env.cpu);
	e->confidence = (enum rt_profile_confidence)d->confidence;
	/* the most telling reasons first: warnings, then the decisions' own explanations */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < d->n_reasons && e->n_reasons < RT_PROFILE_MAX_REASONS; i++) {
			const struct rt_tuner_reason *r = &d->reasons[i];

			if ((pass == 0) != (r->severity == RT_SEV_WARN))
				continue;
			snprintf(e->reasons[e->n_reasons].code, sizeof(e->reasons[0].code), "%s",
				 rt_reason_code_name(r->code));
			snprintf(e->reasons[e->n_reasons].text, sizeof(e->reasons[0].text), "%s", r->text);
			e->n_reasons++;
		}
	}
	e->measured_at = (run->ended_ns ? run->ended_ns : run->started_ns) / 1000000000;
	snprintf(e->run_id, sizeof(e->run_id), "%s", run->uuid);
	snprintf(e->app, sizeof(e->app), "%s", app ? app : "");
	snprintf(e->rtune_version, sizeof(e->rtune_version), "%s", RTUNE_VERSION);
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *decision_to_json(const struct rt_tuner_decision *d)
{
	json_t *reasons = json_array(), *sizes = json_array(), *o;

	for (size_t i = 0; i < d->n_reasons; i++)
		json_array_append_new(reasons,
				      json_pack("{s:s, s:s, s:s}", "code", rt_reason_code_name(d->reasons[i].code),
						"severity", d->reasons[i].severity == RT_SEV_WARN ? "warn" : "info",
						"text", d->reasons[i].text));
	for (size_t i = 0; i < d->n_sizes; i++) {
		const struct rt_tuner_size *s = &d->sizes[i];

		json_array_append_new(sizes,
				      json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "msg_bytes",
						(json_int_t)s->msg_bytes, "noninline_ns", num_or_null(s->noninl_ns),
						"inline_ns", num_or_null(s->inl_ns), "d_ns", num_or_null(s->d_ns),
						"d_lo_ns", num_or_null(s->d_lo_ns), "d_hi_ns", num_or_null(s->d_hi_ns),
						"floor_ns", num_or_null(s->floor_ns), "rank_p", num_or_null(s->rank_p),
						"class", rt_size_class_name(s->cls)));
	}
	o = json_pack("{s:s, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:s, s:b, s:o, s:o, s:b, s:I, s:o, s:o, s:s,"
		      " s:I, s:I, s:s, s:I, s:I, s:s, s:o, s:o, s:o}",
		      "opcode", rt_opcode_name(d->op), "qp_type", rt_qp_type_name(d->qpt), "inline_measured",
		      d->inline_measured, "latency_kind", rt_lat_kind_name(d->kind), "inline_threshold",
		      (json_int_t)d->inline_threshold, "max_inline_data", (json_int_t)d->max_inline_data,
		      "crossover_bytes", (json_int_t)d->crossover_bytes, "kneedle_bytes", (json_int_t)d->kneedle_bytes,
		      "inline_confidence", rt_confidence_name(d->inline_confidence), "gain_from_histogram",
		      d->gain_from_histogram, "gain_ns_per_msg", num_or_null(d->gain_ns_per_msg), "gain_pct",
		      num_or_null(d->gain_pct), "signal_measured", d->signal_measured, "signal_interval",
		      (json_int_t)d->signal_interval, "mops_at_n", num_or_null(d->mops_at_n), "mops_best",
		      num_or_null(d->mops_best), "signal_confidence", rt_confidence_name(d->signal_confidence),
		      "sq_depth", (json_int_t)d->sq_depth, "cq_depth", (json_int_t)d->cq_depth, "cq_moderation",
		      rt_cq_mod_advice_name(d->cq_mod), "cq_mod_count", (json_int_t)d->cq_mod_count, "cq_mod_period_us",
		      (json_int_t)d->cq_mod_period_us, "confidence", rt_confidence_name(d->confidence),
		      "budget_needed_s", num_or_null(d->budget_needed_s), "sizes", sizes, "reasons", reasons);
	return o;
}

struct tune_opts {
	const char *db, *which, *device, *app;
	double tolerance_pct;
	uint64_t seed;
	bool json, dry_run;
};

static int parse_args(int argc, char **argv, struct tune_opts *o)
{
	static const struct option opts[] = {
		{ "app", required_argument, NULL, 'a' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "tolerance", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "db", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->tolerance_pct = 1.5;
	o->seed = 1;
	optind = 1;
	while ((c = rt_cli_getopt("tune", argc, argv, "d:h", opts)) != -1) {
		switch (c) {
		case 'a': o->app = optarg; break;
		case 'd': o->device = optarg; break;
		case 't':
			errno = 0;
			o->tolerance_pct = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->tolerance_pct > 0 && o->tolerance_pct < 50))
				return rt_cli_usage_error(
					"tune", "option '--tolerance' takes a percentage in (0, 50), not '%s'", optarg);
			break;
		case 's':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end)
				return rt_cli_usage_error("tune", "option '--seed' takes a number, not '%s'", optarg);
			break;
		case 'j': o->json = true; break;
		case 'n': o->dry_run = true; break;
		case 'D': o->db = optarg; break;
		case 'h': fputs(usage, stdout); return -1;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		o->which = argv[optind++];
	if (optind < argc)
		return rt_cli_usage_error("tune", "unexpected argument '%s'", argv[optind]);
	return 0;
}

int cmd_tune(int argc, char **argv)
{
	struct rt_tuner_hist_bin *bins[RT_OP__COUNT] = { NULL };
	struct rt_tuner_result res = { 0 };
	struct rt_profile_entry *entries = NULL;
	struct rt_tuner_input in;
	struct rt_tuner_opts topts;
	struct tune_opts o;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run;
	size_t n_bins;
	int rc = RT_EXIT_FAIL, prc;

	prc = parse_args(argc, argv, &o);
	if (prc)
		return prc < 0 ? RT_EXIT_OK : prc;
	memset(&run, 0, sizeof(run));

	if (rt_store_open_existing(o.db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if (rt_store_run_load(st, o.which, o.device, &run, &err)) {
		if (err.code == ENOENT && !o.which)
			rt_cli_error("no calibration run in store '%s'%s%s%s: run 'rtune calibrate' first",
				     rt_store_path(st), o.device ? " for device '" : "", o.device ? o.device : "",
				     o.device ? "'" : "");
		else
			rt_cli_error("%s", err.text);
		goto out;
	}
	rt_tuner_input_from_run(&in, &run);
	if (o.app) {
		bool any = false;

		for (int op = 0; op < RT_OP__COUNT; op++) {
			struct rt_store_histogram h;

			if (rt_store_get_histogram(st, o.app, (enum rt_opcode)op, RT_QPT_RC, &h, &err)) {
				if (err.code == ENOENT)
					continue;
				rt_cli_error("%s", err.text);
				goto out;
			}
			if (rt_tuner_hist_from_buckets(h.buckets, &bins[op], &n_bins, &err)) {
				rt_cli_error("histogram of '%s': %s", o.app, err.text);
				goto out;
			}
			in.app[op].bins = bins[op];
			in.app[op].n_bins = n_bins;
			any = any || n_bins > 0;
		}
		if (!any) {
			rt_cli_error("no histogram of application '%s' in store '%s': record one with "
				     "'rtune probe --name %s -- CMD'",
				     o.app, rt_store_path(st), o.app);
			goto out;
		}
	}
	rt_tuner_opts_default(&topts);
	topts.tolerance = o.tolerance_pct / 100.0;
	topts.seed = o.seed;
	if (rt_tuner_run(&in, &topts, &res, &err)) {
		rt_cli_error("cannot tune run '%s': %s", run.uuid, err.text);
		goto out;
	}

	if (!o.dry_run) {
		entries = calloc(res.n ? res.n : 1, sizeof(*entries));
		if (!entries) {
			rt_cli_error("out of memory");
			goto out;
		}
		for (size_t i = 0; i < res.n; i++)
			decision_to_entry(&run, &res.d[i], o.app, &entries[i]);
		if (rt_store_replace_profile(st, &run.node, NULL, entries, res.n, &err)) {
			rt_cli_error("cannot store the profile: %s", err.text);
			goto out;
		}
	}

	if (o.json) {
		json_t *arr = json_array(), *doc;

		for (size_t i = 0; i < res.n; i++)
			json_array_append_new(arr, decision_to_json(&res.d[i]));
		/* run_id is the run's uuid, as in the profile and history; run_number the store's integer id */
		doc = json_pack("{s:{s:s, s:s}, s:s, s:I, s:s, s:i, s:o, s:I, s:b, s:o}", "schema", "name",
				"rtune-tune", "version", "1.0", "run_id", run.uuid, "run_number", (json_int_t)run.id,
				"device", run.dev.name, "port", run.port_num, "app",
				o.app ? json_string(o.app) : json_null(), "seed", (json_int_t)res.seed, "stored",
				!o.dry_run, "decisions", arr);
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF) {
			json_decref(doc);
			rt_cli_error("cannot write the decisions as JSON");
			goto out;
		}
		json_decref(doc);
	} else {
		char *text = NULL;

		if (rt_tuner_format_text(&res, &text, &err)) {
			rt_cli_error("%s", err.text);
			goto out;
		}
		printf("run %s (%s port %d)%s%s\n\n%s", run.uuid, run.dev.name, run.port_num,
		       o.app ? ", weighted by the message sizes of " : "", o.app ? o.app : "", text);
		free(text);
		if (!o.dry_run)
			printf("\nprofile stored in '%s' (%zu entr%s, replacing any earlier tuning of this run); "
			       "'rtune export' writes it for applications\n",
			       rt_store_path(st), res.n, res.n == 1 ? "y" : "ies");
	}
	rc = RT_EXIT_OK;
out:
	for (int op = 0; op < RT_OP__COUNT; op++)
		free(bins[op]);
	free(entries);
	rt_tuner_result_free(&res);
	rt_run_release(&run);
	rt_store_close(st);
	return rc;
}
