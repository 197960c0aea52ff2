// SPDX-License-Identifier: MIT
/*
 * `rtune report`: the fleet view. Reads any mix of rtune stores, JSON profiles and directories of them (default: the
 * local store), groups the nodes by hardware class and prints per group the spread of the decisions, a recommended
 * group profile, outliers with their likely causes, and drift; as a table, --json, --csv, or --html FILE.
 * Every unusable input is named on stderr and skipped; exit 0 when something was reported, 1 when nothing usable was
 * found, 2 on a usage error.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_out.h"
#include "rt_report.h"
#include "rt_store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtune report [--json | --csv] [-o FILE] [--html FILE] [--group-profiles DIR] [--db PATH]\n"
		"                    [--now TIME] [--stale-days N] [--min-group N] [--z Z] [PATH...]\n\n"
		"Fleet report over many nodes' profiles. PATH is an rtune store, a JSON profile (rtune export), or a\n"
		"directory searched recursively for *.json, *.db, *.sqlite, *.sqlite3 and *.rtune; with no PATH (and no\n"
		"--db) the local store is read ($RTUNE_DB, else the default store path).\n\n"
		"Nodes are grouped by hardware class (CPU model, NUMA node count, devices' vendor/part and link layer;\n"
		"the hardware signature alone when the input has no hardware facts). Per group: node count, median and\n"
		"p10..p90 of inline_threshold, signal_interval, latency and message rate at the chosen settings (stores\n"
		"with runs), a recommended group profile, and robust outliers (median/MAD) with the likely cause and its\n"
		"evidence: remote_numa_calibration, different_mps, different_firmware, different_mrrs,\n"
		"different_pcie_link, different_mtu, different_device_numa, low_confidence, stale_profile, drift,\n"
		"placement_unknown, unexplained. Outliers are listed per node first, then per entry. Stale nodes and\n"
		"nodes without a profile for a device they have are listed in their own section.\n"
		"Drift: a node's latest run moved away from its earlier runs (stores).\n\n"
		"  --json          the report as JSON on stdout (schema rtune-report 2.0)\n"
		"  --csv           one CSV row per node entry on stdout\n"
		"  -o, --output FILE  write the report (text, JSON or CSV) to FILE instead of stdout\n"
		"  --html FILE     also write a self-contained HTML page with SVG charts to FILE ('-': standard output,\n"
		"                  which then carries the page alone; the report goes to -o FILE, or nowhere)\n"
		"  --group-profiles DIR  write per hardware class a group profile (rtune-profile, loaded by librtune) to\n"
		"                  DIR/<group>.json, for nodes of that class that have not calibrated yet\n"
		"  --db PATH       read this store (same as giving PATH)\n"
		"  --now TIME      judge ages against TIME (seconds since the epoch) instead of now\n"
		"  --stale-days N  a profile this many days older than its group's median is stale (default 90)\n"
		"  --min-group N   nodes a group needs before outliers are judged (default 4)\n"
		"  --z Z           robust z beyond which a value is an outlier (default 3.5)\n\n"
		"Unusable inputs are named on stderr and skipped. Options may follow the paths. A regular output file is\n"
		"replaced atomically, a FIFO or device written in place. Exit: 0 reported, 1 nothing usable, 2 usage.\n"
		"See docs/report.md.\n");
}

/* Parses option opt's value s as a number in lo..hi into *out and returns 0; otherwise prints the usage error, leaves
 * *out alone and returns RT_EXIT_USAGE (never 0, whatever rt_cli_usage_error returns). */
static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi) {
		rt_cli_usage_error("report", "option '%s' takes a number in %g..%g, not '%s'", opt, lo, hi, s);
		return RT_EXIT_USAGE;
	}
	*out = v;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, 'c' },
		{ "html", required_argument, NULL, 'H' },
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'd' },
		{ "group-profiles", required_argument, NULL, 'g' },
		{ "now", required_argument, NULL, 'n' },
		{ "stale-days", required_argument, NULL, 's' },
		{ "min-group", required_argument, NULL, 'm' },
		{ "z", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rt_report_opts ro = { 0 };
	struct rt_report *r = NULL;
	struct rt_error err;
	const char *html = NULL, *db = NULL, *output = NULL, *groups = NULL;
	bool json = false, csv = false;
	char defpath[4096];
	int c, rc = RT_EXIT_OK;
	double v;

	optind = 1;
	while ((c = rt_cli_getopt("report", argc, argv, "o:h", opts)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'c': csv = true; break;
		case 'H': html = optarg; break;
		case 'o': output = optarg; break;
		case 'd': db = optarg; break;
		case 'g': groups = optarg; break;
		case 'n':
			if (parse_num("--now", optarg, 0, 1e12, &v))
				return RT_EXIT_USAGE;
			ro.now = (int64_t)v;
			break;
		case 's':
			if (parse_num("--stale-days", optarg, 1, 100000, &v))
				return RT_EXIT_USAGE;
			ro.stale_days = (int)v;
			break;
		case 'm':
			if (parse_num("--min-group", optarg, 2, 1000000, &v))
				return RT_EXIT_USAGE;
			ro.min_group = (int)v;
			break;
		case 'z':
			if (parse_num("--z", optarg, 0.5, 100, &v))
				return RT_EXIT_USAGE;
			ro.outlier_z = v;
			break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (json && csv)
		return rt_cli_usage_error("report", "options '--json' and '--csv' exclude each other");
	if (html && !*html)
		return rt_cli_usage_error("report", "option '--html' takes a file name, not ''");
	if (groups && !*groups)
		return rt_cli_usage_error("report", "option '--group-profiles' takes a directory, not ''");
	if (output && !*output)
		return rt_cli_usage_error("report", "option '--output' takes a file name, not ''");
	if (html && !strcmp(html, "-") && (json || csv) && (!output || !strcmp(output, "-")))
		return rt_cli_usage_error("report", "--html - and --%s both want standard output: add -o FILE",
					  json ? "json" : "csv");
	ro.with_curves = html != NULL;
	if (rt_report_create(&ro, &r)) {
		rt_cli_error("out of memory");
		return RT_EXIT_FAIL;
	}
	if (db && rt_report_add_path(r, db) < 0)
		goto oom;
	for (int i = optind; i < argc; i++)
		if (rt_report_add_path(r, argv[i]) < 0)
			goto oom;
	if (!db && optind == argc) {
		if (rt_store_default_path(defpath, sizeof(defpath), &err)) {
			rt_cli_error("%s", err.text);
			rt_report_free(r);
			return RT_EXIT_FAIL;
		}
		if (access(defpath, F_OK) < 0 && errno == ENOENT) {
			rt_cli_error("report: no store at '%s' (nothing recorded on this node yet); name stores, JSON "
				     "profiles or directories to report on",
				     defpath);
			rt_report_free(r);
			return RT_EXIT_FAIL;
		}
		if (rt_report_add_path(r, defpath) < 0)
			goto oom;
	}
	for (size_t i = 0; i < rt_report_problem_count(r); i++)
		rt_cli_error("report: skipped %s", rt_report_problem_at(r, i));
	if (rt_report_node_count(r) == 0) {
		rt_cli_error("report: no usable profile in the inputs");
		rt_report_free(r);
		return RT_EXIT_FAIL;
	}
	if (rt_report_analyze(r, &err)) {
		rt_cli_error("%s", err.text);
		rt_report_free(r);
		return RT_EXIT_FAIL;
	}
	if (groups) {
		long n = rt_report_write_group_profiles(r, groups, &err);

		if (n < 0) {
			rt_cli_error("report: %s", err.text);
			rc = RT_EXIT_FAIL;
		} else if (n == 0) {
			rt_cli_error("report: no group has a recommendation: no group profile written to '%s'", groups);
		}
	}
	if (html) {
		char *page = NULL;
		size_t len = 0;

		if (rt_report_render_html(r, &page, &len) || rt_out_write_file(html, page, len, 0644, &err)) {
			if (!page)
				rt_cli_error("report: cannot build the HTML page: out of memory");
			else
				rt_cli_error("report: %s", err.text);
			rc = RT_EXIT_FAIL;
		}
		free(page);
	}
	if (!html || strcmp(html, "-") || output) {
		char *text = NULL;
		size_t text_len = 0;
		FILE *m = open_memstream(&text, &text_len);
		int wrc = !m || (json  ? rt_report_write_json(r, m)
				 : csv ? rt_report_write_csv(r, m)
				       : rt_report_write_text(r, m));

		if (m && fclose(m))
			wrc = 1;
		if (wrc) {
			rt_cli_error("report: cannot build the report: out of memory");
			rc = RT_EXIT_FAIL;
		} else if (rt_out_write_file(output ? output : "-", text, text_len, 0644, &err)) {
			rt_cli_error("report: %s", err.text);
			rc = RT_EXIT_FAIL;
		}
		free(text);
	}
	rt_report_free(r);
	return rc;
oom:
	rt_cli_error("out of memory");
	rt_report_free(r);
	return RT_EXIT_FAIL;
}
