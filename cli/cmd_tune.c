// SPDX-License-Identifier: MIT
/*
 * `rtune tune`: recomputes the decisions (inline threshold, max_inline_data, signaling interval, queue depths, CQ
 * moderation) from a stored calibration run (by default the newest complete one), optionally weighted by an
 * application's message-size histogram, prints them with their confidence and reasons, and stores them as the node's
 * profile through the hysteresis (a decision within the between-run noise of the current one keeps the current one and
 * counts the run as its evidence). Needs no device.
 */
#include "cli.h"
#include "calibrate_bands.h"
#include "rt_store.h"
#include "rt_tuner.h"
#include "tune_hysteresis.h"

#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: rtune tune [RUN] [--app NAME] [--tolerance PCT] [--seed N] [--json] [--dry-run] [--force] [--db PATH]\n"
	"\n"
	"Compute the inline threshold, max_inline_data, signaling interval, queue depths and CQ moderation from a stored\n"
	"calibration run (RUN: its id or uuid; default the newest complete run), print the decisions with their\n"
	"confidence and reasons, and store them as this node's profile (see 'rtune show', 'rtune export'). A decision\n"
	"within the between-run noise of the node's current one keeps the current one, and the run is added as its\n"
	"evidence (docs/tuner.md, \"Hysteresis\"). A named RUN that is still running is refused; an interrupted or\n"
	"failed one is tuned with a warning.\n"
	"\n"
	"  --app NAME         weight each entry's inline threshold by the message sizes application NAME sends with\n"
	"                     that opcode and QP type, and raise N to its post-list batch (recorded with\n"
	"                     'rtune probe --name NAME')\n"
	"  -d, --ib-dev DEV   the newest complete run of this device (when RUN is not given)\n"
	"  --tolerance PCT    signaling interval: smallest N whose rate is within PCT %% of the best (default 1.5)\n"
	"  --seed N           seed of the bootstrap (default 1: the same input gives the same decisions)\n"
	"  --json             print the decisions as JSON on stdout\n"
	"  --dry-run          do not store the profile (still shows what the hysteresis would keep or replace)\n"
	"  --force, --replace take this run's decisions even where the hysteresis would keep the current ones\n"
	"  --db PATH          the store (default $RTUNE_DB, /var/lib/rtune/rtune.db for root, else\n"
	"                     $XDG_STATE_HOME/rtune/rtune.db)\n"
	"  -h, --help         this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure (no complete run, a running run, store error), 2 usage\n";

static const char *const topic_names[] = { "inline", "signal", "queue", "cq_moderation", "input" };

/* Maps one tuner decision to a tuned profile entry of run's device: the run's own decision, every reason kept (the
 * store chooses what the bounded public entry shows). t->reasons is malloc'd (rt_store_tuned_release()); returns 0
 * or ENOMEM. */
static int decision_to_tuned(const struct rt_run *run, const struct rt_tuner_decision *d, const char *app,
			     struct rt_store_tuned *t)
{
	struct rt_profile_entry *e = &t->e;

	memset(t, 0, sizeof(*t));
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
	e->qp_type = d->qpt == RT_QPT_SRD  ? RT_PROFILE_QPT_SRD
		     : d->qpt == RT_QPT_UD ? RT_PROFILE_QPT_UD
					   : RT_PROFILE_QPT_RC;
	e->numa_node = run->dev.numa_node;
	if (run->env.cpu >= 0)
		snprintf(e->cpus, sizeof(e->cpus), "%d", run->env.cpu);
	e->confidence = (enum rt_profile_confidence)d->confidence;
	e->inline_confidence = (enum rt_profile_confidence)d->inline_confidence;
	e->signal_confidence = (enum rt_profile_confidence)d->signal_confidence;
	e->inline_runs = e->signal_runs = 1;
	snprintf(e->inline_since, sizeof(e->inline_since), "%s", run->uuid);
	snprintf(e->signal_since, sizeof(e->signal_since), "%s", run->uuid);
	e->measured_at = (run->ended_ns ? run->ended_ns : run->started_ns) / 1000000000;
	snprintf(e->run_id, sizeof(e->run_id), "%s", run->uuid);
	snprintf(e->app, sizeof(e->app), "%s", app ? app : "");
	snprintf(e->rtune_version, sizeof(e->rtune_version), "%s", RTUNE_VERSION);
	snprintf(t->signal_verdict, sizeof(t->signal_verdict), "%s", rt_hyst_signal_verdict(d));
	t->inl.run_value = d->inline_threshold;
	t->sig.run_value = e->signal_interval;
	/* every reason, in the tuner's order, with the decision it explains (room for the hysteresis line) */
	t->reasons = calloc(d->n_reasons + 1, sizeof(*t->reasons));
	if (!t->reasons)
		return ENOMEM;
	for (size_t i = 0; i < d->n_reasons; i++) {
		const struct rt_tuner_reason *r = &d->reasons[i];
		struct rt_store_reason *o = &t->reasons[t->n_reasons++];

		snprintf(o->code, sizeof(o->code), "%s", rt_reason_code_name(r->code));
		snprintf(o->text, sizeof(o->text), "%s", r->text);
		snprintf(o->topic, sizeof(o->topic), "%s",
			 (unsigned)r->topic < sizeof(topic_names) / sizeof(topic_names[0]) ? topic_names[r->topic]
											   : "input");
		o->warn = r->severity == RT_SEV_WARN;
	}
	return 0;
}

/* True for a reason about the signaling decision or what is sized with it (queues, CQ moderation). */
static bool signal_topic(const struct rt_store_reason *r)
{
	return !strcmp(r->topic, "signal") || !strcmp(r->topic, "queue") || !strcmp(r->topic, "cq_moderation");
}

/* Appends to why (a string in a buffer of len bytes, truncated to fit) that a kept answer's confidence rises. */
static void say_rise(char *why, size_t len, enum rt_profile_confidence from, enum rt_profile_confidence to)
{
	size_t used = strnlen(why, len);

	if (used + 1 < len)
		snprintf(why + used, len - used, "; its confidence rises from %s to this run's %s",
			 rt_profile_confidence_name(from), rt_profile_confidence_name(to));
}

/*
 * Applies the hysteresis to t, the run's own tuned entry for decision d, against base (the node's current entry, NULL
 * when there is none): a kept decision takes the current values, confidence, evidence and reasons back, and the run
 * is counted as its evidence; a replaced one keeps the run's. force takes the run's decisions regardless. 0 or
 * ENOMEM (t unchanged then).
 */
static int apply_hysteresis(struct rt_store_tuned *t, const struct rt_tuner_decision *d, const struct rt_run *run,
			    const struct rt_store_tuned *base, bool force)
{
	struct rt_profile_entry *e = &t->e;
	enum rt_hyst_action ia, sa;
	bool isup = false, ssup = false, inl_raise = false, sig_raise = false;
	struct rt_store_reason *v;
	size_t n = 0;
	/* SRD: EFA's one inline buffer, as UD's when the stored run has no SRD figure (rt_tuner_input_from_run) */
	int dev_max = d->qpt == RT_QPT_RC				    ? run->dev.max_inline_rc
		      : d->qpt == RT_QPT_SRD && run->dev.max_inline_srd > 0 ? run->dev.max_inline_srd
									    : run->dev.max_inline_ud;

	if (!base) {
		snprintf(t->inl.action, sizeof(t->inl.action), "%s", rt_hyst_action_name(RT_HYST_FIRST));
		snprintf(t->sig.action, sizeof(t->sig.action), "%s", rt_hyst_action_name(RT_HYST_FIRST));
		snprintf(t->inl.why, sizeof(t->inl.why),
			 "no earlier decision for this device, port, opcode and QP type");
		snprintf(t->sig.why, sizeof(t->sig.why), "%s", t->inl.why);
		return 0;
	}
	t->inl.previous = base->e.inline_threshold;
	t->sig.previous = base->e.signal_interval;
	if (force) {
		ia = sa = RT_HYST_FORCED;
		snprintf(t->inl.why, sizeof(t->inl.why), "taken by --force");
		snprintf(t->sig.why, sizeof(t->sig.why), "taken by --force");
	} else {
		if (strcmp(base->e.app, e->app)) {
			ia = RT_HYST_REPLACED;
			snprintf(t->inl.why, sizeof(t->inl.why),
				 "a different question: weighted by %s%s%s, before by %s%s%s",
				 e->app[0] ? "app '" : "no app", e->app, e->app[0] ? "'" : "",
				 base->e.app[0] ? "app '" : "no app", base->e.app, base->e.app[0] ? "'" : "");
		} else {
			ia = rt_hyst_inline(d, base->e.inline_threshold, dev_max, &isup, t->inl.why,
					    sizeof(t->inl.why));
		}
		sa = rt_hyst_signal(d, base->e.signal_interval, base->signal_verdict,
				    (enum rt_confidence)base->e.signal_confidence, &ssup, t->sig.why,
				    sizeof(t->sig.why));
	}
	snprintf(t->inl.action, sizeof(t->inl.action), "%s", rt_hyst_action_name(ia));
	snprintf(t->sig.action, sizeof(t->sig.action), "%s", rt_hyst_action_name(sa));
	/*
	 * The same answer again with a higher confidence than the kept one's: the confidence rises to this run's (with
	 * this run's reasons, which explain it); it never falls while the answer is kept. A label that repeated answers
	 * can only raise repeats from run to run, where each run's own label flips with the noise on evidence near its
	 * cut (docs/tuner.md "Hysteresis").
	 */
	if (ia == RT_HYST_KEPT && d->inline_measured && d->inline_threshold == base->e.inline_threshold &&
	    e->inline_confidence > base->e.inline_confidence)
		inl_raise = true;
	if (sa == RT_HYST_KEPT && d->signal_measured && e->signal_interval == base->e.signal_interval &&
	    !strcmp(t->signal_verdict, base->signal_verdict) && e->signal_confidence > base->e.signal_confidence)
		sig_raise = true;
	if (inl_raise)
		say_rise(t->inl.why, sizeof(t->inl.why), base->e.inline_confidence, e->inline_confidence);
	if (sig_raise)
		say_rise(t->sig.why, sizeof(t->sig.why), base->e.signal_confidence, e->signal_confidence);

	/* reasons: a kept decision's from the current entry, the others from the run, then the hysteresis line */
	v = calloc(t->n_reasons + base->n_reasons + 1, sizeof(*v));
	if (!v)
		return ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		const struct rt_store_tuned *src = pass == 0 ? t : base;

		for (size_t i = 0; i < src->n_reasons; i++) {
			const struct rt_store_reason *r = &src->reasons[i];
			bool sig = signal_topic(r), inl = !strcmp(r->topic, "inline");
			bool from_base =
				(inl && ia == RT_HYST_KEPT && !inl_raise) || (sig && sa == RT_HYST_KEPT && !sig_raise);

			if (!strcmp(r->topic, "profile"))
				continue; /* the current entry's own hysteresis line is replaced by this run's */
			if ((pass == 1) != from_base || (pass == 1 && !inl && !sig))
				continue;
			v[n++] = *r;
		}
	}
	/* a raised confidence comes with the rest of this run's decision (the same answer): only its evidence is kept */
	if (ia == RT_HYST_KEPT) {
		if (!inl_raise) {
			e->inline_threshold = base->e.inline_threshold;
			e->max_inline_data = base->e.max_inline_data;
			e->inline_confidence = base->e.inline_confidence;
		}
		e->inline_limit_excl = e->inline_threshold ? e->inline_threshold + 1 : 0;
		e->inline_runs = base->e.inline_runs + (isup ? 1 : 0);
		snprintf(e->inline_since, sizeof(e->inline_since), "%s", base->e.inline_since);
	}
	if (sa == RT_HYST_KEPT) {
		if (!sig_raise) {
			e->signal_interval = base->e.signal_interval;
			e->sq_depth = base->e.sq_depth;
			e->cq_depth = base->e.cq_depth;
			e->cq_moderation = base->e.cq_moderation;
			e->cq_mod_count = base->e.cq_mod_count;
			e->cq_mod_period_us = base->e.cq_mod_period_us;
			e->signal_confidence = base->e.signal_confidence;
		}
		e->signal_runs = base->e.signal_runs + (ssup ? 1 : 0);
		snprintf(e->signal_since, sizeof(e->signal_since), "%s", base->e.signal_since);
		snprintf(t->signal_verdict, sizeof(t->signal_verdict), "%s", base->signal_verdict);
	}
	e->confidence = e->inline_confidence < e->signal_confidence ? e->inline_confidence : e->signal_confidence;
	{
		struct rt_store_reason *r = &v[n++];
		bool changed = ia != RT_HYST_KEPT || sa != RT_HYST_KEPT;

		snprintf(r->code, sizeof(r->code), "%s", changed ? "decision_changed" : "decision_kept");
		snprintf(r->topic, sizeof(r->topic), "profile");
		snprintf(r->text, sizeof(r->text),
			 "inline_threshold %" PRIu32 " B %s (%" PRIu32 " run%s), signal_interval %" PRIu32
			 " %s (%" PRIu32 " run%s); this run said %" PRIu32 " B and N %" PRIu32,
			 e->inline_threshold, t->inl.action, e->inline_runs, e->inline_runs == 1 ? "" : "s",
			 e->signal_interval, t->sig.action, e->signal_runs, e->signal_runs == 1 ? "" : "s",
			 t->inl.run_value, t->sig.run_value);
	}
	free(t->reasons);
	t->reasons = v;
	t->n_reasons = n;
	return 0;
}

/*
 * The post-list batch tune --app raises N to: the batch of the app's median post call (by post calls, over the QPs
 * that sent this opcode and QP type), as the largest batch the probe saw in the median's bucket (an older store that
 * did not record it: the bucket's smallest batch). 0 when nothing was recorded.
 */
uint32_t rt_cli_median_batch(const struct rt_store_histogram *h)
{
	uint64_t total = 0, cum = 0;

	for (unsigned b = 0; b < RT_BATCH_BUCKETS; b++)
		total += h->batch[b];
	for (unsigned b = 0; total && b < RT_BATCH_BUCKETS; b++) {
		cum += h->batch[b];
		if (2 * cum >= total)
			return h->batch_max[b] ? h->batch_max[b] : rt_batch_bucket_lo(b);
	}
	return 0;
}

/*
 * Fills in->app[op][qpt] from the stored histograms of app: the bins (each bin's hi the largest size the app sent in
 * that bucket when the probe recorded it), the post-list batch, post calls, SQ-full ENOMEM events and smallest send
 * queue. bins[][] receives the arrays to free. Returns 0, ENOENT when app has no histogram at all, or another errno
 * with err set.
 */
static int load_app(struct rt_store *st, const char *app, struct rt_tuner_input *in,
		    struct rt_tuner_hist_bin *bins[RT_OP__COUNT][RT_QPT__COUNT], struct rt_error *err)
{
	bool any = false;

	for (int op = 0; op < RT_OP__COUNT; op++) {
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++) {
			struct rt_tuner_app *a = &in->app[op][qpt];
			struct rt_store_histogram h;
			size_t n_bins;
			int rc;

			rc = rt_store_get_histogram(st, app, (enum rt_opcode)op, (enum rt_qp_type)qpt, &h, err);
			if (rc == ENOENT)
				continue;
			if (rc)
				return rc;
			if ((rc = rt_tuner_hist_from_buckets(h.buckets, &bins[op][qpt], &n_bins, err)))
				return rc;
			for (size_t i = 0; i < n_bins; i++) {
				struct rt_tuner_hist_bin *bn = &bins[op][qpt][i];
				uint32_t mx = h.bucket_max[rt_hist_bucket(bn->lo)];

				if (mx >= bn->lo && mx <= bn->hi)
					bn->hi = mx;
			}
			a->bins = bins[op][qpt];
			a->n_bins = n_bins;
			a->post_list_batch = rt_cli_median_batch(&h);
			a->post_calls = h.post_calls;
			a->sq_full_enomem = h.sq_full_enomem;
			a->max_send_wr = h.max_send_wr;
			any = any || n_bins > 0;
		}
	}
	in->app_name = app;
	return any ? 0 : ENOENT;
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
	if (o) {
		json_object_set_new(o, "signal_verdict", json_string(rt_signal_verdict_name(d->signal_verdict)));
		json_object_set_new(o, "t_post_ns", num_or_null(d->t_post_ns));
		json_object_set_new(o, "t_cqe_ns", num_or_null(d->t_cqe_ns));
		json_object_set_new(o, "t_cqe_lo_ns", num_or_null(d->t_cqe_lo_ns));
		json_object_set_new(o, "t_cqe_hi_ns", num_or_null(d->t_cqe_hi_ns));
		json_object_set_new(o, "inline_stability", num_or_null(d->inline_stability));
		json_object_set_new(o, "signal_stability", num_or_null(d->signal_stability));
	}
	return o;
}

struct tune_opts {
	const char *db, *which, *device, *app;
	double tolerance_pct;
	uint64_t seed;
	bool json, dry_run, force;
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
		{ "force", no_argument, NULL, 'f' },
		{ "replace", no_argument, NULL, 'f' },
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
		case 'f': o->force = true; break;
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

/* How the run to tune was chosen, for the output. */
struct run_choice {
	enum rt_run_status status; /* effective: a "running" run whose process is gone is interrupted */
	bool named;		   /* RUN was given */
	int64_t skipped[8];	   /* newer runs passed over (not complete), newest first */
	enum rt_run_status skipped_status[8];
	size_t n_skipped, n_skipped_all;
};

/*
 * Loads the run to tune into run: the named one (refused while it is running: its points are still coming; tuned
 * with a warning when interrupted or failed), else the newest complete run (of o->device). 0, or an RT_EXIT_* code
 * after printing one line.
 */
static int select_run(struct rt_store *st, const struct tune_opts *o, struct rt_run *run, struct run_choice *ch)
{
	struct rt_store_run_summary *v = NULL;
	struct rt_error err;
	char id[32];
	size_t n = 0;
	int rc = RT_EXIT_FAIL;

	memset(ch, 0, sizeof(*ch));
	ch->named = o->which != NULL;
	if (rt_store_run_list(st, o->device, &v, &n, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if (o->which) {
		if (rt_store_run_load(st, o->which, o->device, run, &err)) {
			rt_cli_error("%s", err.text);
			goto out;
		}
		ch->status = run->status;
		for (size_t i = 0; i < n; i++)
			if (v[i].id == run->id)
				ch->status = v[i].status;
		if (ch->status == RT_RUN_RUNNING) {
			rt_cli_error("run '%s' is still running: its points are not all stored yet; tune it once it is"
				     " complete",
				     o->which);
			goto out;
		}
		if (ch->status != RT_RUN_COMPLETE)
			rt_cli_error("warning: run '%s' is %s: tuning the points it stored before it ended", o->which,
				     rt_run_status_name(ch->status));
		rc = 0;
		goto out;
	}
	for (size_t i = n; i-- > 0;) {
		if (v[i].status == RT_RUN_COMPLETE) {
			snprintf(id, sizeof(id), "%" PRId64, v[i].id);
			if (rt_store_run_load(st, id, NULL, run, &err)) {
				rt_cli_error("%s", err.text);
				goto out;
			}
			ch->status = RT_RUN_COMPLETE;
			rc = 0;
			goto out;
		}
		if (ch->n_skipped < sizeof(ch->skipped) / sizeof(ch->skipped[0])) {
			ch->skipped_status[ch->n_skipped] = v[i].status;
			ch->skipped[ch->n_skipped++] = v[i].id;
		}
		ch->n_skipped_all++;
	}
	if (n == 0)
		rt_cli_error("no calibration run in store '%s'%s%s%s: run 'rtune calibrate' first", rt_store_path(st),
			     o->device ? " for device '" : "", o->device ? o->device : "", o->device ? "'" : "");
	else
		rt_cli_error("no complete calibration run in store '%s'%s%s%s (the newest, run %" PRId64 ", is %s): run"
			     " 'rtune calibrate', or name a run",
			     rt_store_path(st), o->device ? " for device '" : "", o->device ? o->device : "",
			     o->device ? "'" : "", v[n - 1].id, rt_run_status_name(v[n - 1].status));
out:
	free(v);
	return rc;
}

/* One decision's hysteresis as JSON: {"action", "run_value", "previous" (null when first), "runs", "since_run",
 * "why"}. */
static json_t *change_to_json(const struct rt_store_change *c, uint32_t runs, const char *since)
{
	return json_pack("{s:s, s:I, s:o, s:I, s:s, s:s}", "action", c->action, "run_value", (json_int_t)c->run_value,
			 "previous", strcmp(c->action, "first") ? json_integer(c->previous) : json_null(), "runs",
			 (json_int_t)runs, "since_run", since, "why", c->why);
}

/* The entry stored (or, with --dry-run, that would be) after the hysteresis, as JSON. */
static json_t *tuned_to_json(const struct rt_store_tuned *t)
{
	const struct rt_profile_entry *e = &t->e;

	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:o, s:o}", "inline_threshold",
			 (json_int_t)e->inline_threshold, "max_inline_data", (json_int_t)e->max_inline_data,
			 "signal_interval", (json_int_t)e->signal_interval, "sq_depth", (json_int_t)e->sq_depth,
			 "cq_depth", (json_int_t)e->cq_depth, "confidence", rt_profile_confidence_name(e->confidence),
			 "inline_confidence", rt_profile_confidence_name(e->inline_confidence), "signal_confidence",
			 rt_profile_confidence_name(e->signal_confidence), "inline",
			 change_to_json(&t->inl, e->inline_runs, e->inline_since), "signal",
			 change_to_json(&t->sig, e->signal_runs, e->signal_since));
}

/* Prints what the hysteresis did to each entry (text output). */
static void print_hysteresis(const struct rt_store_tuned *t, size_t n, bool dry_run)
{
	printf("\nprofile%s (hysteresis: a decision within the between-run noise of the current one stays):\n",
	       dry_run ? " that would be stored" : "");
	for (size_t i = 0; i < n; i++) {
		const struct rt_profile_entry *e = &t[i].e;
		char key[32];

		snprintf(key, sizeof(key), "%s/%s", rt_profile_opcode_name(e->opcode),
			 rt_profile_qp_type_name(e->qp_type));
		printf("  %-9s inline_threshold %" PRIu32 " B %s", key, e->inline_threshold, t[i].inl.action);
		if (strcmp(t[i].inl.action, "first"))
			printf(" (was %" PRIu32 " B, this run %" PRIu32 " B; %" PRIu32 " run%s since %.8s)",
			       t[i].inl.previous, t[i].inl.run_value, e->inline_runs, e->inline_runs == 1 ? "" : "s",
			       e->inline_since);
		printf(": %s\n", t[i].inl.why);
		printf("  %-9s signal_interval %" PRIu32 " %s", "", e->signal_interval, t[i].sig.action);
		if (strcmp(t[i].sig.action, "first"))
			printf(" (was %" PRIu32 ", this run %" PRIu32 "; %" PRIu32 " run%s since %.8s)",
			       t[i].sig.previous, t[i].sig.run_value, e->signal_runs, e->signal_runs == 1 ? "" : "s",
			       e->signal_since);
		printf(": %s\n", t[i].sig.why);
	}
}

int cmd_tune(int argc, char **argv)
{
	struct rt_tuner_hist_bin *bins[RT_OP__COUNT][RT_QPT__COUNT] = { { NULL } };
	struct rt_tuner_result res = { 0 };
	struct rt_store_tuned *tuned = NULL;
	struct rt_tuner_input in;
	struct rt_tuner_opts topts;
	struct run_choice ch;
	struct tune_opts o;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run run;
	size_t n_tuned = 0, n_changed = 0;
	int rc = RT_EXIT_FAIL, prc;

	prc = parse_args(argc, argv, &o);
	if (prc)
		return prc < 0 ? RT_EXIT_OK : prc;
	memset(&run, 0, sizeof(run));

	if (rt_store_open_existing(o.db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if ((prc = select_run(st, &o, &run, &ch))) {
		rc = prc;
		goto out;
	}
	rt_tuner_input_from_run(&in, &run);
	if (o.app) {
		int arc = load_app(st, o.app, &in, bins, &err);

		if (arc == ENOENT) {
			rt_cli_error("no histogram of application '%s' in store '%s': record one with "
				     "'rtune probe --name %s -- CMD'",
				     o.app, rt_store_path(st), o.app);
			goto out;
		}
		if (arc) {
			rt_cli_error("histogram of '%s': %s", o.app, err.text);
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

	/* the run's decisions through the hysteresis against the node's current ones (also for --dry-run) */
	tuned = calloc(res.n ? res.n : 1, sizeof(*tuned));
	if (!tuned) {
		rt_cli_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < res.n; i++) {
		struct rt_store_tuned base;
		int brc;

		n_tuned++;
		/* an entry is stamped with the app only when its (opcode, QP type) was weighted by the app's histogram */
		if (decision_to_tuned(&run, &res.d[i], in.app[res.d[i].op][res.d[i].qpt].n_bins ? o.app : NULL,
				      &tuned[i])) {
			rt_cli_error("out of memory");
			goto out;
		}
		brc = rt_store_profile_base(st, &run.node, &tuned[i].e, &base, &err);
		if (brc && brc != ENOENT) {
			rt_cli_error("%s", err.text);
			goto out;
		}
		prc = apply_hysteresis(&tuned[i], &res.d[i], &run, brc ? NULL : &base, o.force);
		rt_store_tuned_release(&base);
		if (prc) {
			rt_cli_error("out of memory");
			goto out;
		}
		n_changed += strcmp(tuned[i].inl.action, "kept") || strcmp(tuned[i].sig.action, "kept");
	}

	if (!o.dry_run && rt_store_replace_tuned(st, &run.node, NULL, tuned, res.n, &err)) {
		rt_cli_error("cannot store the profile: %s", err.text);
		goto out;
	}

	if (o.json) {
		json_t *arr = json_array(), *skipped = json_array(), *doc;

		for (size_t i = 0; i < res.n; i++) {
			json_t *d = decision_to_json(&res.d[i]);

			if (d)
				json_object_set_new(d, "profile", tuned_to_json(&tuned[i]));
			json_array_append_new(arr, d);
		}
		for (size_t i = 0; i < ch.n_skipped; i++)
			json_array_append_new(skipped, json_pack("{s:I, s:s}", "run_number", (json_int_t)ch.skipped[i],
								 "status", rt_run_status_name(ch.skipped_status[i])));
		/* run_id is the run's uuid, as in the profile and history; run_number the store's integer id */
		doc = json_pack("{s:{s:s, s:s}, s:s, s:I, s:s, s:s, s:o, s:s, s:i, s:o, s:I, s:b, s:b, s:o}", "schema",
				"name", "rtune-tune", "version", "1.0", "run_id", run.uuid, "run_number",
				(json_int_t)run.id, "run_status", rt_run_status_name(ch.status), "run_selected",
				ch.named ? "named" : "newest_complete", "skipped_runs", skipped, "device", run.dev.name,
				"port", run.port_num, "app", o.app ? json_string(o.app) : json_null(), "seed",
				(json_int_t)res.seed, "stored", !o.dry_run, "forced", o.force, "decisions", arr);
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
		printf("run %s (id %" PRId64 ", %s%s) (%s port %d)%s%s\n", run.uuid, run.id,
		       rt_run_status_name(ch.status), ch.named ? ", as named" : ", the newest complete run",
		       run.dev.name, run.port_num, o.app ? ", weighted by the message sizes of " : "",
		       o.app ? o.app : "");
		if (ch.n_skipped_all) {
			printf("  skipped %zu newer run%s that did not complete:", ch.n_skipped_all,
			       ch.n_skipped_all == 1 ? "" : "s");
			for (size_t i = 0; i < ch.n_skipped; i++)
				printf(" %" PRId64 " (%s)", ch.skipped[i], rt_run_status_name(ch.skipped_status[i]));
			printf("%s\n", ch.n_skipped < ch.n_skipped_all ? " ..." : "");
		}
		printf("\n%s", text);
		free(text);
		print_hysteresis(tuned, res.n, o.dry_run);
		if (!o.dry_run)
			printf("\nprofile stored in '%s' (%zu entr%s, %zu changed by this run, %zu kept with this run"
			       " as evidence; replacing any earlier tuning of this run); 'rtune export' writes it for"
			       " applications\n",
			       rt_store_path(st), res.n, res.n == 1 ? "y" : "ies", n_changed, res.n - n_changed);
	}
	rc = RT_EXIT_OK;
out:
	for (int op = 0; op < RT_OP__COUNT; op++)
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++)
			free(bins[op][qpt]);
	for (size_t i = 0; i < n_tuned; i++)
		rt_store_tuned_release(&tuned[i]);
	free(tuned);
	rt_tuner_result_free(&res);
	rt_run_release(&run);
	rt_store_close(st);
	return rc;
}
