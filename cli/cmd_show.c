// SPDX-License-Identifier: MIT
/*
 * `rtune show [DEVICE]`: the current profile of a node (per device/port/opcode/QP type: inline threshold, max inline,
 * signal interval, queue depths, CQ moderation, confidence and reasons) and the curves behind it, read from the
 * calibration run each entry came from, each entry's load bands (its own N for large messages, post lists, ...) and
 * what calibrate skipped on the device and why, and each application's adaptive inline controllers as its latest
 * `rtune probe --apply` run left them. --json prints the same as one document.
 */
#include "cli.h"
#include "rt_store.h"
#include "rt_store_json.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
	"usage: rtune show [DEVICE] [--db PATH] [--node NODE] [--json]\n"
	"\n"
	"Show the current profile (the latest decision per device, port, opcode and QP type) with its confidence and\n"
	"reasons, and the measured curves behind it: latency vs message size inline and not, message rate vs"
	" signaling\n"
	"interval N, the N of each load band (large messages, post lists), what calibrate skipped on the device and\n"
	"why; and per application the adaptive inline threshold of its latest 'rtune probe --apply' run.\n"
	"\n"
	"  DEVICE          only this device (name or node GUID)\n"
	"  --db PATH       store to read (default: $RTUNE_DB, else /var/lib/rtune/rtune.db as root,\n"
	"                  else $XDG_STATE_HOME/rtune/rtune.db, i.e. ~/.local/state/rtune/rtune.db)\n"
	"  --node NODE     node (hostname or machine-id) when the store holds several\n"
	"  --json          print one JSON document on stdout\n"
	"  -h, --help      this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure (no store, no profile), 2 usage\n";

/* Formats t (seconds since the epoch) in UTC into buf, ISO 8601 ("T") or for reading (" "); returns buf. */
static const char *fmt_when(int64_t t, bool iso, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, 32, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%SZ", &tm);
	return buf;
}

static void print_when(int64_t t)
{
	char buf[32];

	fputs(fmt_when(t, false, buf), stdout);
}

static const struct rt_run *sort_run;

/* Latency points ordered by kind, then size. */
static int cmp_lat(const void *a, const void *b)
{
	const struct rt_lat_point *x = &sort_run->lat[*(const size_t *)a], *y = &sort_run->lat[*(const size_t *)b];

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->msg_bytes < y->msg_bytes ? -1 : x->msg_bytes > y->msg_bytes;
}

/* The latency curves of one opcode: per kind and size, inline and non-inline medians side by side. */
static void print_curves(const struct rt_run *run, const struct rt_profile_entry *e)
{
	size_t *idx = malloc((run->n_lat ? run->n_lat : 1) * sizeof(*idx)), n = 0;
	int kind = -1;
	bool any = false;

	for (size_t i = 0; idx && i < run->n_lat; i++)
		if ((int)run->lat[i].op == (int)e->opcode && (int)run->lat[i].qpt == (int)e->qp_type && run->lat[i].inl)
			idx[n++] = i;
	sort_run = run;
	if (n)
		qsort(idx, n, sizeof(*idx), cmp_lat);
	for (size_t k = 0; k < n; k++) {
		const struct rt_lat_point *p = &run->lat[idx[k]], *q = NULL;

		for (size_t j = 0; j < run->n_lat; j++) {
			const struct rt_lat_point *c = &run->lat[j];

			if (c->op == p->op && c->qpt == p->qpt && c->kind == p->kind && c->msg_bytes == p->msg_bytes &&
			    !c->inl)
				q = c;
		}
		if ((int)p->kind != kind)
			printf("    latency (%s, median ns):   size   inline  not-inline   gain\n",
			       rt_lat_kind_name(p->kind));
		kind = (int)p->kind;
		any = true;
		if (q)
			printf("    %31s%6" PRIu32 " %8.0f %11.0f %+6.0f%s\n", "", p->msg_bytes, p->median_ns,
			       q->median_ns, q->median_ns - p->median_ns,
			       p->msg_bytes <= e->inline_threshold ? "" : "   (above threshold)");
		else
			printf("    %31s%6" PRIu32 " %8.0f %11s\n", "", p->msg_bytes, p->median_ns, "-");
	}
	free(idx);
	if (!any)
		printf("    latency: no points for %s/%s in run %s\n", rt_profile_opcode_name(e->opcode),
		       rt_profile_qp_type_name(e->qp_type), run->uuid);
	any = false;
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *p = &run->rate[i];

		if ((int)p->op != (int)e->opcode || (int)p->qpt != (int)e->qp_type)
			continue;
		if (!any)
			printf("    rate:     N   size  inline    Mops  cpu ns/msg  enomem\n");
		any = true;
		printf("          %5" PRIu32 " %6" PRIu32 " %7s %7.3f %11.1f %7" PRIu64 "%s\n", p->signal_interval,
		       p->msg_bytes, p->inl ? "yes" : "no", p->mops, p->cpu_ns_per_msg, p->enomem,
		       p->signal_interval == e->signal_interval ? "   <- chosen" : "");
	}
}

/* Prints entry e and every reason the store keeps for it (all: NULL when unreadable, then the entry's own). */
static void print_entry(const struct rt_profile_entry *e, const struct rt_store_reason *all, size_t n_all)
{
	printf("%s port %d %s/%s   confidence %s (inline %s, signal %s)\n", e->device, e->port,
	       rt_profile_opcode_name(e->opcode), rt_profile_qp_type_name(e->qp_type),
	       rt_profile_confidence_name(e->confidence), rt_profile_confidence_name(e->inline_confidence),
	       rt_profile_confidence_name(e->signal_confidence));
	printf("    inline_threshold %" PRIu32 " B%s   max_inline_data %" PRIu32 " B   signal_interval %" PRIu32
	       "   sq_depth %" PRIu32 "   cq_depth %" PRIu32 "\n",
	       e->inline_threshold, e->inline_threshold ? "" : " (never inline)", e->max_inline_data,
	       e->signal_interval, e->sq_depth, e->cq_depth);
	if (e->cq_moderation)
		printf("    cq_moderation count %" PRIu32 " period %" PRIu32 " us\n", e->cq_mod_count,
		       e->cq_mod_period_us);
	else
		printf("    cq_moderation none\n");
	printf("    measured ");
	print_when(e->measured_at);
	printf(" on CPUs %s (device NUMA node %d), run %s, rtune %s%s%s\n", e->cpus[0] ? e->cpus : "unknown",
	       e->numa_node, e->run_id, e->rtune_version, e->app[0] ? ", weighted by app " : "", e->app);
	printf("    evidence: inline_threshold %" PRIu32 " run%s since run %s, signal_interval %" PRIu32
	       " run%s since run %s\n",
	       e->inline_runs, e->inline_runs == 1 ? "" : "s", e->inline_since[0] ? e->inline_since : e->run_id,
	       e->signal_runs, e->signal_runs == 1 ? "" : "s", e->signal_since[0] ? e->signal_since : e->run_id);
	if (all)
		for (size_t i = 0; i < n_all; i++)
			printf("    - %s%s: %s\n", all[i].code, all[i].warn ? " (warning)" : "", all[i].text);
	else
		for (unsigned i = 0; i < e->n_reasons; i++)
			printf("    - %s: %s\n", e->reasons[i].code, e->reasons[i].text);
}

/* The load bands of e (large messages, post lists, ...: each with its own N), one line each; nothing when none. */
static void print_bands(struct rt_store *st, const struct rt_profile_entry *e)
{
	json_t *bands = rt_store_entry_bands_json(st, e);

	for (size_t i = 0; i < json_array_size(bands); i++) {
		char line[256];

		rt_store_band_line(json_array_get(bands, i), line, sizeof(line));
		printf("    %s%s\n", i ? "       " : "bands: ", line);
	}
	json_decref(bands);
}

/* What the runs behind the entries could not measure on their devices, and why; nothing when nothing was skipped. */
static void print_skipped(struct rt_store *st, const struct rt_profile_entry *v, size_t n)
{
	json_t *sk = rt_store_skipped_json(st, v, n);

	if (json_array_size(sk))
		printf("skipped (calibrate could not measure these; the device refused them):\n");
	for (size_t i = 0; i < json_array_size(sk); i++) {
		char line[512];

		rt_store_skip_line(json_array_get(sk, i), line, sizeof(line));
		printf("  %s\n", line);
	}
	if (json_array_size(sk))
		putchar('\n');
	json_decref(sk);
}

/* Every stored reason of e as JSON (with topic and severity), or NULL when the store has none to tell. */
static json_t *all_reasons_json(const struct rt_store_reason *all, size_t n_all)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n_all; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s}", "code", all[i].code, "text", all[i].text,
						   "topic", all[i].topic, "severity", all[i].warn ? "warn" : "info"));
	return a;
}

/* True when pin p is of device (NULL: any). */
static bool pin_wanted(const struct rt_store_pin *p, const char *device)
{
	return !device || !strcmp(device, p->device);
}

/* The operator's pins (`rtune pin`): the agent publishes them instead of the measured values. */
static void print_pins(struct rt_store *st, const char *device)
{
	struct rt_store_pin *v = NULL;
	size_t n = 0, shown = 0;

	if (rt_store_pin_list(st, &v, &n, NULL))
		return;
	for (size_t i = 0; i < n; i++) {
		if (!pin_wanted(&v[i], device))
			continue;
		if (!shown++)
			printf("pins (rtune pin; published by rtune agent instead of the measured values):\n");
		printf("  %s port %d %s/%s", v[i].device, v[i].port, rt_profile_opcode_name(v[i].opcode),
		       rt_profile_qp_type_name(v[i].qp_type));
		if (v[i].inline_threshold >= 0)
			printf("  inline_threshold=%lld", (long long)v[i].inline_threshold);
		if (v[i].signal_interval >= 0)
			printf("  signal_interval=%lld", (long long)v[i].signal_interval);
		putchar('\n');
	}
	free(v);
}

static json_t *pins_json(struct rt_store *st, const char *device)
{
	struct rt_store_pin *v = NULL;
	json_t *a = json_array();
	size_t n = 0;

	if (rt_store_pin_list(st, &v, &n, NULL))
		return a;
	for (size_t i = 0; a && i < n; i++) {
		if (!pin_wanted(&v[i], device))
			continue;
		json_array_append_new(
			a, json_pack("{s:s, s:i, s:s, s:s, s:o, s:o}", "device", v[i].device, "port", v[i].port,
				     "opcode", rt_profile_opcode_name(v[i].opcode), "qp_type",
				     rt_profile_qp_type_name(v[i].qp_type), "inline_threshold",
				     v[i].inline_threshold >= 0 ? json_integer(v[i].inline_threshold) : json_null(),
				     "signal_interval",
				     v[i].signal_interval >= 0 ? json_integer(v[i].signal_interval) : json_null()));
	}
	free(v);
	return a;
}

/* At most this many QPs of one application in the text; the rest is counted (--json lists them all). */
#define CTL_TEXT_QPS 8

/*
 * The adaptive inline controllers of each application's latest `rtune probe --apply` import (RTUNE_APPLY_ADAPTIVE=1):
 * one line per QP, where its threshold is, from where, its moves and reverts. Nothing when the store has none.
 */
static void print_ctls(const struct rt_store_inline_ctl *v, size_t n)
{
	size_t shown = 0;

	if (n)
		printf("adaptive inline threshold (each app's latest rtune probe --apply run):\n");
	for (size_t i = 0; i < n; i++) {
		const struct rt_store_inline_ctl *c = &v[i];

		if (!i || strcmp(c->app, v[i - 1].app)) {
			char when[32];

			printf("  %s, imported %s\n", c->app, fmt_when(c->created_ns / 1000000000, false, when));
			shown = 0;
		}
		if (shown++ == CTL_TEXT_QPS) {
			size_t more = 1;

			while (i + more < n && !strcmp(v[i + more].app, c->app))
				more++;
			printf("    and %zu more QP%s (rtune show --json)\n", more, more == 1 ? "" : "s");
			i += more - 1;
			continue;
		}
		printf("    %s %s qp %" PRIu32 ": ", c->device, c->qp_type, c->qp_num);
		if (c->busy) {
			printf("not read (the controller was busy when the probe wrote its file)\n");
			continue;
		}
		printf("threshold %" PRIu32 " B from %" PRIu32 " B, %" PRIu64 " move%s (%" PRIu64 " up, %" PRIu64
		       " down), %" PRIu64 " revert%s%s\n",
		       c->threshold_bytes, c->start_bytes, c->moves_up + c->moves_down,
		       c->moves_up + c->moves_down == 1 ? "" : "s", c->moves_up, c->moves_down, c->reverts,
		       c->reverts == 1 ? "" : "s", c->parked ? ", parked" : "");
	}
	if (n)
		putchar('\n');
}

/* The controller c as JSON ("moves": its last moves, oldest first; the figures null when it was busy). */
static json_t *ctl_json(const struct rt_store_inline_ctl *c)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:b}", "device", c->device, "qp_type", c->qp_type, "qp_num",
			      (json_int_t)c->qp_num, "pid", (json_int_t)c->pid, "busy", c->busy);
	json_t *moves = json_array();
	const struct {
		const char *key;
		uint64_t v;
	} f[] = {
		{ "start_bytes", c->start_bytes }, { "threshold_bytes", c->threshold_bytes },
		{ "min_bytes", c->min_bytes },	   { "max_bytes", c->max_bytes },
		{ "samples", c->samples },	   { "explored", c->explored },
		{ "dropped", c->dropped },	   { "rounds", c->rounds },
		{ "moves_up", c->moves_up },	   { "moves_down", c->moves_down },
		{ "reverts", c->reverts },
	};

	if (!o || !moves) {
		json_decref(o);
		json_decref(moves);
		return NULL;
	}
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
		json_object_set_new(o, f[k].key, c->busy ? json_null() : json_integer((json_int_t)f[k].v));
	json_object_set_new(o, "parked", c->busy ? json_null() : json_boolean(c->parked));
	for (unsigned k = 0; k < c->n_moves; k++) {
		const struct rt_inline_ctl_move *m = &c->moves[k];

		json_array_append_new(moves,
				      json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}", "at_sample", (json_int_t)m->at_sample,
						"from_bytes", (json_int_t)m->from_bytes, "to_bytes",
						(json_int_t)m->to_bytes, "inline_ns", (json_int_t)m->inline_ns,
						"noinline_ns", (json_int_t)m->noinline_ns, "revert", m->revert));
	}
	json_object_set_new(o, "moves", moves);
	return o;
}

/* Per application, its latest import's controllers: [{app, imported_at, imported_ns, qps: [ctl_json...]}]. */
static json_t *ctls_json(const struct rt_store_inline_ctl *v, size_t n)
{
	json_t *a = json_array(), *qps = NULL;

	for (size_t i = 0; a && i < n; i++) {
		if (!i || strcmp(v[i].app, v[i - 1].app)) {
			char when[32];

			qps = json_array();
			json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:o}", "app", v[i].app, "imported_at",
							   fmt_when(v[i].created_ns / 1000000000, true, when),
							   "imported_ns", (json_int_t)v[i].created_ns, "qps", qps));
		}
		json_array_append_new(qps, ctl_json(&v[i]));
	}
	return a;
}

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "node", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *node_key = NULL, *device = NULL;
	struct rt_profile_entry *v = NULL;
	struct rt_store_inline_ctl *ctl = NULL;
	size_t n_ctl = 0;
	struct rt_node_info node;
	struct rt_store *st = NULL;
	struct rt_error err;
	char sig[32] = "";
	bool json = false;
	size_t n = 0;
	int c, rc = RT_EXIT_FAIL;

	while ((c = rt_cli_getopt("show", argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'n': node_key = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		device = argv[optind++];
	if (optind < argc)
		return rt_cli_usage_error("show", "unexpected argument '%s'", argv[optind]);
	if (rt_store_open_existing(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if (rt_store_get_profile(st, node_key, device, &v, &n, &node, sig, &err)) {
		rt_cli_error("%s", err.text);
		goto out;
	}
	char nkey[RT_STORE_NODE_KEY_LEN];

	if (rt_store_get_inline_ctl(st, rt_store_node_key(&node, nkey), device, &ctl, &n_ctl, &err)) {
		rt_cli_error("%s", err.text);
		goto out;
	}
	if (json) {
		json_t *doc = json_pack("{s:{s:s, s:s}, s:o, s:[]}", "schema", "name", "rtune-show", "version", "1.2",
					"node", rt_store_node_json(&node, sig), "entries");
		json_t *arr = json_object_get(doc, "entries");

		if (doc)
			json_object_set_new(doc, "pins", pins_json(st, device));
		if (doc)
			json_object_set_new(doc, "inline_ctl", ctls_json(ctl, n_ctl));
		if (doc) /* 1.2: what the runs behind the entries skipped, and why */
			json_object_set_new(doc, "skipped", rt_store_skipped_json(st, v, n));

		for (size_t i = 0; doc && i < n; i++) {
			json_t *e = rt_store_entry_json(&v[i]);
			struct rt_store_reason *all = NULL;
			size_t n_all = 0;
			struct rt_run run;

			/* show lists every reason the store keeps (the profile document carries a bounded choice) */
			if (e && rt_store_profile_reasons(st, rt_store_node_key(&node, nkey), &v[i], &all, &n_all,
							  NULL) == 0)
				json_object_set_new(e, "reasons", all_reasons_json(all, n_all));
			free(all);

			/* 1.2: the entry's load bands, as in the profile document */
			if (e)
				json_object_set_new(e, "bands", rt_store_entry_bands_json(st, &v[i]));
			if (e && rt_store_run_load(st, v[i].run_id, NULL, &run, NULL) == 0) {
				json_object_set_new(e, "run", rt_store_run_json(&run));
				rt_run_release(&run);
			} else if (e) {
				json_object_set_new(e, "run", json_null());
			}
			json_array_append_new(arr, e);
		}
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
			json_decref(doc);
			rt_cli_error("cannot print the profile");
			goto out;
		}
		json_decref(doc);
		putchar('\n');
	} else {
		printf("node %s  hardware %s  store %s\n", node.hostname, sig[0] ? sig : "unknown", rt_store_path(st));
		for (size_t i = 0; i < n; i++) {
			struct rt_run run;

			struct rt_store_reason *all = NULL;
			size_t n_all = 0;
			bool have = rt_store_profile_reasons(st, rt_store_node_key(&node, nkey), &v[i], &all, &n_all,
							     NULL) == 0;

			putchar('\n');
			print_entry(&v[i], have ? all : NULL, n_all);
			free(all);
			print_bands(st, &v[i]);
			if (rt_store_run_load(st, v[i].run_id, NULL, &run, NULL) == 0) {
				print_curves(&run, &v[i]);
				rt_run_release(&run);
			} else {
				printf("    curves: run %s is not in this store (profile imported from another node)\n",
				       v[i].run_id);
			}
		}
	}
	if (!json) {
		putchar('\n');
		print_skipped(st, v, n);
		print_ctls(ctl, n_ctl);
		print_pins(st, device);
	}
	rc = RT_EXIT_OK;
out:
	free(v);
	free(ctl);
	rt_store_close(st);
	return rc;
}
