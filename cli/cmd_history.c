// SPDX-License-Identifier: MIT
/*
 * `rtune history [DEVICE]`: every calibration run in the store, oldest first, with its effective status (a run left
 * "running" by a process that died is shown as interrupted), its point counts and the decision stored after it, plus
 * the drift: where a run really changed a device's inline threshold or signal interval, from what to what and why
 * (the hysteresis of `rtune tune`), and where it was only added as evidence of the decision that stayed; then every
 * change `rtune agent` published (or would have, --dry-run is not recorded), with the trigger and the reason.
 */
#include "cli.h"
#include "rt_store.h"
#include "rt_store_json.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
	"usage: rtune history [DEVICE] [--db PATH] [--json]\n"
	"\n"
	"List the calibration runs in the store (oldest first) with their status, points and the decision stored\n"
	"after each (send/RC inline threshold and signal interval), and the drift of each device between runs: a\n"
	"decision a run changed (from, to, why), or the decision a run was added to as evidence without a change.\n"
	"A run whose process died before finishing shows as interrupted. Then every change 'rtune agent' published,\n"
	"oldest first: when, where, the values, what triggered it and why.\n"
	"\n"
	"  DEVICE          only this device (name or node GUID)\n"
	"  --db PATH       store to read (default: $RTUNE_DB, else /var/lib/rtune/rtune.db as root,\n"
	"                  else $XDG_STATE_HOME/rtune/rtune.db, i.e. ~/.local/state/rtune/rtune.db)\n"
	"  --json          print one JSON document on stdout\n"
	"  -h, --help      this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure, 2 usage\n";

static void fmt_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* The previous run of the same host/device/port that produced a profile, or NULL. */
static const struct rt_store_run_summary *previous(const struct rt_store_run_summary *v, size_t i)
{
	for (size_t j = i; j-- > 0;)
		if (v[j].has_profile && !strcmp(v[j].device, v[i].device) && !strcmp(v[j].hostname, v[i].hostname) &&
		    v[j].port_num == v[i].port_num)
			return &v[j];
	return NULL;
}

/* The send/RC entry stored after run r, with its hysteresis record, or NULL. */
static const struct rt_store_tuned *change_of(const struct rt_store_tuned *c, size_t n,
					      const struct rt_store_run_summary *r)
{
	const struct rt_store_tuned *hit = NULL;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].e.run_id, r->uuid) && !strcmp(c[i].e.device, r->device) &&
		    c[i].e.port == r->port_num && c[i].e.opcode == RT_PROFILE_OP_SEND &&
		    c[i].e.qp_type == RT_PROFILE_QPT_RC)
			hit = &c[i];
	return hit && hit->inl.action[0] ? hit : NULL;
}

/* True when the run changed the decision (replaced, or forced by --force). */
static bool changed(const struct rt_store_change *c)
{
	return !strcmp(c->action, "replaced") || !strcmp(c->action, "forced");
}

/* The drift column of a run whose entry has a hysteresis record. */
static void drift_text(const struct rt_store_tuned *t, char *buf, size_t len)
{
	const struct rt_profile_entry *e = &t->e;
	size_t off = 0;

	if (!strcmp(t->inl.action, "first") && !strcmp(t->sig.action, "first")) {
		snprintf(buf, len, "first decision");
		return;
	}
	if (!changed(&t->inl) && !changed(&t->sig)) {
		snprintf(buf, len,
			 "no drift: evidence for %" PRIu32 " B (%" PRIu32 " runs) and N %" PRIu32 " (%" PRIu32
			 " runs); this run said %" PRIu32 " B, N %" PRIu32,
			 e->inline_threshold, e->inline_runs, e->signal_interval, e->signal_runs, t->inl.run_value,
			 t->sig.run_value);
		return;
	}
	buf[0] = '\0';
	if (changed(&t->inl))
		off += (size_t)snprintf(buf + off, len - off, "threshold %" PRIu32 "->%" PRIu32 " B %s: %s",
					t->inl.previous, e->inline_threshold, t->inl.action, t->inl.why);
	if (off < len && changed(&t->sig))
		snprintf(buf + off, len - off, "%sN %" PRIu32 "->%" PRIu32 " %s: %s", off ? "; " : "", t->sig.previous,
			 e->signal_interval, t->sig.action, t->sig.why);
}

/* Whether publication p is of the device filter: no filter, its name, or the name of a run the filter selected (a
   node GUID given as DEVICE selects runs; publications name the device). */
static bool pub_wanted(const struct rt_store_publication *p, const char *device, const struct rt_store_run_summary *v,
		       size_t n)
{
	if (!device || !strcmp(p->device, device))
		return true;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, p->device))
			return true;
	return false;
}

/* The agent's publications as a JSON array (empty on a store older than schema 7, which has none). */
static json_t *pubs_json(const struct rt_store_publication *pb, size_t n_pb, const char *device,
			 const struct rt_store_run_summary *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n_pb; i++) {
		const struct rt_store_publication *p = &pb[i];
		char when[32];

		if (!pub_wanted(p, device, v, n))
			continue;
		fmt_time(p->at_ns, when, sizeof(when));
		json_array_append_new(
			a, json_pack("{s:s, s:I, s:s, s:i, s:s, s:s, s:o, s:I, s:I, s:s, s:s, s:b}", "at", when,
				     "at_ns", (json_int_t)p->at_ns, "device", p->device, "port", p->port, "opcode",
				     rt_profile_opcode_name(p->opcode), "qp_type", rt_profile_qp_type_name(p->qp_type),
				     "app", p->app[0] ? json_string(p->app) : json_null(), "inline_threshold",
				     (json_int_t)p->inline_threshold, "signal_interval", (json_int_t)p->signal_interval,
				     "change", p->change, "reason", p->reason, "dry_run", p->dry_run));
	}
	return a;
}

/* The agent's publications as text, after the runs; nothing when there are none. */
static void pubs_text(const struct rt_store_publication *pb, size_t n_pb, const char *device,
		      const struct rt_store_run_summary *v, size_t n)
{
	size_t shown = 0;

	for (size_t i = 0; i < n_pb; i++) {
		const struct rt_store_publication *p = &pb[i];
		char when[32];

		if (!pub_wanted(p, device, v, n))
			continue;
		if (!shown++)
			printf("\nagent publications (rtune agent, oldest first):\n");
		fmt_time(p->at_ns, when, sizeof(when));
		printf("  %s %s/%d %s/%s%s%s: inline_threshold %" PRIu32 " B, N %" PRIu32 " (%s%s): %s\n", when,
		       p->device, p->port, rt_profile_opcode_name(p->opcode), rt_profile_qp_type_name(p->qp_type),
		       p->app[0] ? " app " : "", p->app, p->inline_threshold, p->signal_interval, p->change,
		       p->dry_run ? ", dry run" : "", p->reason);
	}
}

/* One decision's hysteresis record as JSON. */
static json_t *change_json(const struct rt_store_change *c, uint32_t value, uint32_t runs, const char *since)
{
	return json_pack("{s:s, s:I, s:I, s:o, s:I, s:s, s:s}", "action", c->action, "value", (json_int_t)value,
			 "run_value", (json_int_t)c->run_value, "previous",
			 strcmp(c->action, "first") ? json_integer(c->previous) : json_null(), "runs", (json_int_t)runs,
			 "since_run", since, "why", c->why);
}

int cmd_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *device = NULL;
	struct rt_store_run_summary *v = NULL;
	struct rt_store_tuned *chg = NULL;
	struct rt_store_publication *pb = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	bool json = false;
	size_t n = 0, n_chg = 0, n_pb = 0;
	int c, rc = RT_EXIT_FAIL;

	while ((c = rt_cli_getopt("history", argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		device = argv[optind++];
	if (optind < argc)
		return rt_cli_usage_error("history", "unexpected argument '%s'", argv[optind]);
	if (rt_store_open_existing(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	if (rt_store_run_list(st, device, &v, &n, &err) || rt_store_profile_changes(st, device, &chg, &n_chg, &err)) {
		rt_cli_error("%s", err.text);
		goto out;
	}
	if (rt_store_publication_list(st, &pb, &n_pb, NULL)) { /* a store older than schema 7 has none */
		pb = NULL;
		n_pb = 0;
	}
	if (json) {
		json_t *doc = json_pack("{s:{s:s, s:s}, s:s, s:[]}", "schema", "name", "rtune-history", "version",
					"1.1", "store", rt_store_path(st), "runs");
		json_t *arr = json_object_get(doc, "runs");

		for (size_t i = 0; doc && i < n; i++) {
			json_t *r = rt_store_run_summary_json(&v[i]);
			const struct rt_store_run_summary *p = v[i].has_profile ? previous(v, i) : NULL;
			const struct rt_store_tuned *t = v[i].has_profile ? change_of(chg, n_chg, &v[i]) : NULL;

			if (r && t) {
				/* recorded by the hysteresis: drift only where the run changed a decision */
				json_object_set_new(r, "decision",
						    json_pack("{s:o, s:o}", "inline",
							      change_json(&t->inl, t->e.inline_threshold,
									  t->e.inline_runs, t->e.inline_since),
							      "signal",
							      change_json(&t->sig, t->e.signal_interval,
									  t->e.signal_runs, t->e.signal_since)));
				if (changed(&t->inl) || changed(&t->sig))
					json_object_set_new(
						r, "drift",
						json_pack("{s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "from_run_id",
							  p ? json_string(p->uuid) : json_null(),
							  "inline_threshold_from", (json_int_t)t->inl.previous,
							  "inline_threshold_to", (json_int_t)t->e.inline_threshold,
							  "signal_interval_from", (json_int_t)t->sig.previous,
							  "signal_interval_to", (json_int_t)t->e.signal_interval,
							  "inline_why",
							  changed(&t->inl) ? json_string(t->inl.why) : json_null(),
							  "signal_why",
							  changed(&t->sig) ? json_string(t->sig.why) : json_null()));
				else
					json_object_set_new(r, "drift", json_null());
			} else if (r && p)
				json_object_set_new(r, "drift",
						    json_pack("{s:s, s:I, s:I, s:I, s:I}", "from_run_id", p->uuid,
							      "inline_threshold_from", (json_int_t)p->inline_threshold,
							      "inline_threshold_to", (json_int_t)v[i].inline_threshold,
							      "signal_interval_from", (json_int_t)p->signal_interval,
							      "signal_interval_to", (json_int_t)v[i].signal_interval));
			else if (r)
				json_object_set_new(r, "drift", json_null());
			json_array_append_new(arr, r);
		}
		if (doc)
			json_object_set_new(doc, "publications", pubs_json(pb, n_pb, device, v, n));
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
			json_decref(doc);
			rt_cli_error("cannot print the history");
			goto out;
		}
		json_decref(doc);
		putchar('\n');
		rc = RT_EXIT_OK;
		goto out;
	}
	if (n == 0) {
		printf("no runs%s%s%s in %s\n", device ? " of '" : "", device ? device : "", device ? "'" : "",
		       rt_store_path(st));
		pubs_text(pb, n_pb, device, v, n);
		rc = RT_EXIT_OK;
		goto out;
	}
	printf("%-5s %-21s %-12s %-16s %-4s %-11s %6s %5s %9s %6s  %s\n", "id", "started", "host", "device", "port",
	       "status", "lat", "rate", "threshold", "N", "drift");
	for (size_t i = 0; i < n; i++) {
		const struct rt_store_run_summary *r = &v[i], *p = r->has_profile ? previous(v, i) : NULL;
		const struct rt_store_tuned *t = r->has_profile ? change_of(chg, n_chg, r) : NULL;
		char when[32], thr[16] = "-", ni[16] = "-", drift[2 * RT_STORE_REASON_LEN + 64] = "";

		fmt_time(r->started_ns, when, sizeof(when));
		if (r->has_profile) {
			snprintf(thr, sizeof(thr), "%" PRIu32 " B", r->inline_threshold);
			snprintf(ni, sizeof(ni), "%" PRIu32, r->signal_interval);
		}
		if (t)
			drift_text(t, drift, sizeof(drift));
		else if (p)
			snprintf(drift, sizeof(drift),
				 "threshold %+" PRId64 " B (%" PRIu32 "->%" PRIu32 "), N %" PRIu32 "->%" PRIu32
				 " since run %" PRId64,
				 (int64_t)r->inline_threshold - p->inline_threshold, p->inline_threshold,
				 r->inline_threshold, p->signal_interval, r->signal_interval, p->id);
		printf("%-5" PRId64 " %-21s %-12.12s %-16.16s %-4d %-11s %6zu %5zu %9s %6s  %s\n", r->id, when,
		       r->hostname, r->device, r->port_num, rt_run_status_name(r->status), r->n_lat, r->n_rate, thr, ni,
		       drift);
	}
	pubs_text(pb, n_pb, device, v, n);
	rc = RT_EXIT_OK;
out:
	free(v);
	free(chg);
	free(pb);
	rt_store_close(st);
	return rc;
}
