// SPDX-License-Identifier: MIT
/*
 * `rtune calibrate`: measures, on one RDMA device (loopback) or against a `rtune serve` peer, latency vs message size
 * inline and not, message rate vs signaling interval and CQ moderation, within a time budget; stores the run (SQLite
 * store) and optionally writes it as JSON (--out FILE, --json). SIGINT/SIGTERM end the run as "interrupted".
 */
#include "cli.h"
#include "app_concurrency.h"
#include "calibrate_bands.h"
#include "rt_engine.h"
#include "rt_json_arena.h"
#include "rt_out.h"
#include "rt_store.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: rtune calibrate [-d DEVICE] [-i PORT] [-x|--gid-index N] [--sizes LIST] [--ops send,write]\n"
	"                       [--qp-type rc,ud,srd] [--budget SECONDS] [--quick] [--seed N] [--cpu N]\n"
	"                       [--numa local|remote|all] [--sq-depth N] [--peer ADDR[:PORT]]\n"
	"                       [--tclass N] [--sl N] [--pkey-index N] [--large-sizes LIST|none]\n"
	"                       [--post-list N] [--concurrency QxT|none] [--app NAME]\n"
	"                       [--connect cm|manual] [--cm-addr ADDR]\n"
	"                       [--db PATH | --no-store] [--out FILE] [--json] [--no-samples]\n"
	"\n"
	"Measure how the device behaves for small sends: latency vs size with and without IBV_SEND_INLINE (ping-pong\n"
	"half round trip and post->completion, sizes 1 B up to the probed max inline, refined where the inline\n"
	"advantage ends, inline and non-inline blocks in seeded random order), message rate and CPU per message vs\n"
	"signaling interval N = 1..sq_depth/2, and CQ moderation where the device supports it. Points are sampled\n"
	"adaptively until the confidence interval of the median is tight, within the budget for the whole run.\n"
	"By default two QPs of one device/port are connected to each other (loopback); with --peer the other side is\n"
	"'rtune serve' on another node, reached through rdma_cm.\n"
	"\n"
	"  -d, --ib-dev DEVICE    device (default: the first one with an ACTIVE port); 'all': every ACTIVE port of\n"
	"                         every device, one run each (each with the whole --budget)\n"
	"  -i, --ib-port PORT     port (default: the first ACTIVE one)\n"
	"  -x, --gid-index N      GID index (default: a RoCE v2 IPv4-mapped GID when there is one)\n"
	"  --sizes LIST           message sizes, e.g. 1,8,64,100,256 (default: powers of two up to the max inline,\n"
	"                         at most --size-cap)\n"
	"  --size-cap BYTES       largest default size (default 1024)\n"
	"  --ops LIST             send, write or both (default send,write)\n"
	"  --qp-type LIST         rc, ud, srd (default all three; ud and srd only in loopback and where supported,\n"
	"                         srd on AWS EFA only, through libefa)\n"
	"  --budget SECONDS       time for the whole run (default 20)\n"
	"  --quick                a coarse pass: looser confidence, fewer samples and sizes in the sweep\n"
	"  --seed N               seed of the random block order (default 1)\n"
	"  --cpu N                measure from this CPU (default: one local to the device)\n"
	"  --numa MODE            local (default), remote (a CPU on another NUMA node), or all (both, two runs)\n"
	"  --sq-depth N           send queue depth for the signaling sweep (default 256, quick 128)\n"
	"  --peer ADDR[:PORT]     calibrate against 'rtune serve' at ADDR (default port 18520)\n"
	"  --tclass N             GRH traffic class 0..255 of the QPs (RoCE: DSCP * 4 + ECN; with --peer the\n"
	"                         rdma_cm type of service), as the application's lossless class (default 0)\n"
	"  --sl N                 service level 0..15 (loopback only; default 0)\n"
	"  --large-sizes LIST     large non-inline sizes of the signaling sweep's large-message band (default\n"
	"                         4096,65536; 'none': no such band)\n"
	"  --post-list N          WRs per ibv_post_send of its post-list band, 2..64 (default 8; 1: no such band)\n"
	"  --concurrency QxT      its concurrency band: Q QPs driven by T threads, each thread owning Q/T QPs\n"
	"                         and one send CQ, 2 <= Q <= 64, 1 <= T <= Q (default 4x2; loopback rc only,\n"
	"                         capped by the device's max_qp and the CPUs the run may use; 'none': no band)\n"
	"  --app NAME             take the post list (its median batch) and the concurrency (its QPs and posting\n"
	"                         threads) from NAME's probed histogram\n"
	"  --pkey-index N         P_Key table index 0..65535 (loopback only; default 0)\n"
	"  --connect cm|manual    loopback rc qps through rdma_cm to the node's own address, or by hand with\n"
	"                         ibv_modify_qp (default: rdma_cm on iWARP, whose rc qps connect only so; else manual)\n"
	"  --cm-addr ADDR         the own IPv4 address for --connect cm (default: from the port's GIDs or netdev)\n"
	"  --db PATH              store (default: $RTUNE_DB, /var/lib/rtune/rtune.db as root, else\n"
	"                         $XDG_STATE_HOME/rtune/rtune.db)\n"
	"  --no-store             do not store the run\n"
	"  --out FILE             also write the run as JSON to FILE ('-': standard output, the summary to stderr)\n"
	"  --json                 print the run as JSON on stdout (instead of the summary)\n"
	"  --no-samples           leave raw samples out of the JSON\n"
	"  -h, --help             this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure or interrupted (the stored run is marked interrupted/failed), 2 usage or unknown\n"
	"device, 3 no RDMA device\n";

#define RT_CAL_MAX_TARGETS 32 /* -d all: device ports calibrated in one command */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct cal_ctx {
	struct rt_store *st;
	bool began;
	bool tty;
	uint64_t last_ms;
	struct rt_error store_err;
	int cur;			     /* index of the run being measured (--numa all: two per target) */
	struct rt_store_signal_band **bands; /* each run's N per load band (printed with its summary), n_runs */
	size_t *n_bands;
};

/*
 * The progress bar is drawn only on a terminal that can redraw a line: stderr a TTY and TERM set and not "dumb" (a
 * serial console, an Emacs shell buffer, the Soft-RoCE guest's log); elsewhere nothing is drawn, so logs never fill
 * with bars.
 */
static bool progress_wanted(void)
{
	const char *term = getenv("TERM");

	return isatty(STDERR_FILENO) && term && *term && strcmp(term, "dumb") != 0;
}

/* Draws the bar: frac is the work done (the engine's phases placed by their budget shares), eta the budget left. */
static void on_progress(void *arg, const char *phase, double frac, double eta)
{
	struct cal_ctx *x = arg;
	int w = 30, fill = (int)(frac * w + 0.5);

	uint64_t now;
	struct timespec ts;

	if (!x->tty)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	/* at most 5 redraws a second, and always the last one */
	if (now - x->last_ms < 200 && frac < 1 && strcmp(phase, "done") != 0)
		return;
	x->last_ms = now;
	fprintf(stderr, "\r[%.*s%.*s] %3.0f%% %-14s <=%3.0fs left ", fill, "##############################", w - fill,
		"..............................", frac * 100, phase, eta);
	fflush(stderr);
}

static int on_begin(void *arg, struct rt_run *run, struct rt_error *err)
{
	struct cal_ctx *x = arg;
	int rc;

	if (!x->st)
		return 0;
	rc = rt_store_run_begin(x->st, run, err);
	if (!rc)
		x->began = true;
	return rc;
}

static int parse_list_u32(const char *s, uint32_t *out, size_t max, size_t *n)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int rc = 0;

	*n = 0;
	if (!dup)
		return ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v == 0 || v > RT_ENGINE_MAX_MSG || *n >= max || tok[0] == '-') {
			rc = EINVAL;
			break;
		}
		out[(*n)++] = (uint32_t)v;
	}
	free(dup);
	if (!rc && *n == 0)
		rc = EINVAL;
	return rc;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* "QxT" (2 <= Q <= 64, 1 <= T <= min(Q, 16)) or "none" (qps 0) into qps/threads; returns 0 or EINVAL. */
static int parse_concurrency(const char *s, uint32_t *qps, uint32_t *threads)
{
	unsigned long q, t;
	char *end;

	if (strcmp(s, "none") == 0) {
		*qps = *threads = 0;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return EINVAL;
	q = strtoul(s, &end, 10);
	if (*end != 'x' || end[1] < '0' || end[1] > '9')
		return EINVAL;
	t = strtoul(end + 1, &end, 10);
	if (*end || q < 2 || q > 64 || t < 1 || t > q || t > 16)
		return EINVAL;
	*qps = (uint32_t)q;
	*threads = (uint32_t)t;
	return 0;
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/*
 * Exit code for an engine error. Before the run began, EINVAL / ENOENT mean the request does not fit this machine (no
 * such port, CPU or NUMA node, a size above the device's max inline): usage, 2. Once it began they come from the
 * device or the peer in the middle of a measurement: a failure, 1.
 */
static int exit_code_of(int rc, bool began)
{
	switch (rc) {
	case ENODEV: return RT_EXIT_NODEV;
	case ENOENT:
	case EINVAL: return began ? RT_EXIT_FAIL : RT_EXIT_USAGE;
	default: return RT_EXIT_FAIL;
	}
}

/* What the run skipped and why (params.skipped: a refused inline opcode, a QP type the device lacks, a load band
 * whose resources it refused), one "skipped: WHAT: REASON" line each; nothing when params cannot be read. */
static void print_skipped(FILE *f, const struct rt_run *run)
{
	json_t *p = run->params[0] ? rt_json_loads(run->params, 0, NULL) : NULL;
	json_t *sk = json_object_get(p, "skipped");

	for (size_t i = 0; i < json_array_size(sk); i++) {
		json_t *o = json_array_get(sk, i);
		const char *what = json_string_value(json_object_get(o, "what"));
		const char *why = json_string_value(json_object_get(o, "reason"));

		if (what && why)
			fprintf(f, "skipped: %s: %s\n", what, why);
	}
	json_decref(p);
}

static void print_summary(FILE *f, const struct rt_run *run)
{
	fprintf(f, "calibrated %s port %d (%s, gid index %d) from cpu %d (numa node %d%s), clock %s\n", run->dev.name,
		run->port_num, run->env.mode, run->gid_index, run->env.cpu, run->env.cpu_numa_node,
		run->env.numa_local ? ", local" : ", REMOTE", run->env.clock);
	if (run->env.resp_cpu >= 0)
		fprintf(f, "responder on cpu %d; measuring cpu %s, governor %s\n", run->env.resp_cpu,
			run->env.cpu_isolated ? "isolated" : "not isolated",
			run->env.governor[0] ? run->env.governor : "unknown");
	if (run->env.placement_warning[0])
		fprintf(f, "warning: %s\n", run->env.placement_warning);
	if (run->env.server_max_inline)
		fprintf(f, "max inline: this node %u, the server %u bytes\n", run->env.client_max_inline,
			run->env.server_max_inline);
	if (run->dev.efa.efa) /* EFA: SRD's is the device's inline buffer (efadv) */
		fprintf(f, "max inline probed rc %d / ud %d / srd %d bytes, qps created with %u; status %s\n",
			run->dev.max_inline_rc, run->dev.max_inline_ud, run->dev.max_inline_srd, run->max_inline_used,
			rt_run_status_name(run->status));
	else
		fprintf(f, "max inline probed rc %d / ud %d bytes, qps created with %u; status %s\n",
			run->dev.max_inline_rc, run->dev.max_inline_ud, run->max_inline_used,
			rt_run_status_name(run->status));
	fprintf(f, "\n%-6s %-3s %-9s %7s  %-28s %-28s\n", "op", "qp", "kind", "bytes", "inline median [95% CI] ns",
		"non-inline median [95% CI] ns");
	for (size_t i = 0; i < run->n_lat; i++) {
		const struct rt_lat_point *a = &run->lat[i], *b = NULL;
		char sa[64], sb[64];

		if (!a->inl)
			continue;
		for (size_t j = 0; j < run->n_lat; j++) {
			const struct rt_lat_point *o = &run->lat[j];

			if (!o->inl && o->op == a->op && o->qpt == a->qpt && o->kind == a->kind &&
			    o->msg_bytes == a->msg_bytes)
				b = o;
		}
		snprintf(sa, sizeof(sa), "%.0f [%.0f, %.0f] n=%u", a->median_ns, a->ci_lo_ns, a->ci_hi_ns,
			 a->n_samples);
		if (b)
			snprintf(sb, sizeof(sb), "%.0f [%.0f, %.0f] n=%u", b->median_ns, b->ci_lo_ns, b->ci_hi_ns,
				 b->n_samples);
		else
			snprintf(sb, sizeof(sb), "-");
		fprintf(f, "%-6s %-3s %-9s %7u  %-28s %-28s\n", rt_opcode_name(a->op), rt_qp_type_name(a->qpt),
			rt_lat_kind_name(a->kind), a->msg_bytes, sa, sb);
	}
	fprintf(f, "\n%-6s %7s %-6s %5s %9s %12s %7s\n", "op", "bytes", "inline", "N", "Mops", "cpu ns/msg", "enomem");
	for (size_t i = 0; i < run->n_rate; i++) {
		const struct rt_rate_point *r = &run->rate[i];

		fprintf(f, "%-6s %7u %-6s %5u %9.4f %12.0f %7llu\n", rt_opcode_name(r->op), r->msg_bytes,
			r->inl ? "yes" : "no", r->signal_interval, r->mops, r->cpu_ns_per_msg,
			(unsigned long long)r->enomem);
	}
	for (int op = 0; op < RT_OP__COUNT; op++) {
		const struct rt_cq_moderation *m = &run->cqmod[op];

		if (!m->measured)
			continue;
		if (m->supported)
			fprintf(f, "cq moderation (%s): best count %u period %u us: %.4f Mops (off %.4f)\n",
				rt_opcode_name((enum rt_opcode)op), m->best_count, m->best_period_us, m->mops_best,
				m->mops_off);
		else
			fprintf(f, "cq moderation (%s): unsupported: %s\n", rt_opcode_name((enum rt_opcode)op),
				m->reason);
	}
	print_skipped(f, run);
}

/*
 * The sweep's post-list and concurrency bands from app's stored histograms: the post list is the largest median batch
 * of its RC opcodes (rt_cli_median_batch), 1 (no band) when it posts one WR per call; the concurrency its QPs and
 * posting threads (rt_cli_app_concurrency; none for one QP), said on stderr when not as the app ran. Returns 0, or
 * RT_EXIT_USAGE when app has no histogram (one line said), RT_EXIT_FAIL on a store error.
 */
static int app_sizes(struct rt_store *st, const char *app, uint32_t *post_list, uint32_t *conc_qps,
		     uint32_t *conc_threads)
{
	struct rt_store_histogram hs[RT_OP__COUNT];
	uint32_t best = 0;
	size_t n_h = 0;
	bool any = false;

	for (int op = 0; op < RT_OP__COUNT; op++) {
		struct rt_store_histogram *h = &hs[n_h];
		struct rt_error e;
		int rc = rt_store_get_histogram(st, app, (enum rt_opcode)op, RT_QPT_RC, h, &e);

		if (rc == ENOENT)
			continue;
		if (rc) {
			rt_cli_error("%s", e.text);
			return RT_EXIT_FAIL;
		}
		any = true;
		n_h++;
		if (rt_cli_median_batch(h) > best)
			best = rt_cli_median_batch(h);
	}
	switch (rt_cli_app_concurrency(hs, n_h, conc_qps, conc_threads)) {
	case RT_APP_CONC_THREADS_UNKNOWN:
		fprintf(stderr,
			"calibrate: '%s' ran %u qps; its probe did not record the posting threads: %u threads assumed\n",
			app, *conc_qps, *conc_threads);
		break;
	case RT_APP_CONC_SHARED_QPS:
		fprintf(stderr, "calibrate: '%s' posts from more threads than qps: %u threads, one qp each\n", app,
			*conc_threads);
		break;
	case RT_APP_CONC_CAPPED:
		fprintf(stderr, "calibrate: '%s' ran more qps or threads than the band takes: %ux%u measured\n", app,
			*conc_qps, *conc_threads);
		break;
	default: break;
	}
	if (!any) {
		rt_cli_error("calibrate: no histogram of application '%s' in '%s' (run 'rtune probe' first)", app,
			     rt_store_path(st));
		return RT_EXIT_USAGE;
	}
	*post_list = best > 64 ? 64 : best < 1 ? 1 : best;
	return 0;
}

/* Writes text and a newline to path ("-": standard output) with the shared output writer; returns 0 or an errno. */
static int write_out(const char *path, const char *text, struct rt_error *err)
{
	struct rt_out o;
	int rc = rt_out_open(path, 0644, &o, err);

	if (rc)
		return rc;
	if ((rc = rt_out_write(&o, text, strlen(text), err)) || (rc = rt_out_write(&o, "\n", 1, err))) {
		rt_out_abort(&o);
		return rc;
	}
	return rt_out_commit(&o, err);
}

/* One run with the given options: measure, store, report. Returns an RT_EXIT_* code; *json_out gets the JSON. */
static int one_run(struct rt_cal_opts *o, struct cal_ctx *x, const char *label, bool want_json, bool samples,
		   char **json_out, struct rt_run *run)
{
	struct rt_error err, serr;
	int rc, code = RT_EXIT_OK;

	rt_error_clear(&err);
	x->began = false;
	o->cb_ctx = x;
	rc = rt_engine_calibrate(o, run, &err);
	if (x->tty)
		fprintf(stderr, "\r%79s\r", "");
	if (x->st && x->began) {
		if (rt_store_run_add_points(x->st, run->id, run->lat, run->n_lat, run->rate, run->n_rate, &serr) ||
		    rt_store_run_add_bands(x->st, run->id, run->band_rate, run->n_band_rate, &serr) ||
		    rt_store_run_set_results(x->st, run, &serr) ||
		    rt_store_run_finish(x->st, run->id, run->status, &serr)) {
			rt_cli_error("cannot store the run in '%s': %s", rt_store_path(x->st), serr.text);
			code = RT_EXIT_FAIL;
			/* what was stored of it is incomplete: mark it failed (best effort: the store may be what
			 * failed; then it stays "running" and shows as interrupted once this process is gone) */
			rt_store_run_finish(x->st, run->id, RT_RUN_FAILED, NULL);
		}
	}
	if (run->n_band_rate && run->status == RT_RUN_COMPLETE) {
		/* N per load band (large messages, post lists), each band tuned on its own points */
		struct rt_store_signal_band *bands = NULL;
		size_t n_bands = 0;

		if (rt_cli_tune_bands(run, &bands, &n_bands, &serr)) {
			rt_cli_error("calibrate%s: cannot tune the load bands: %s", label, serr.text);
			code = RT_EXIT_FAIL;
		} else {
			if (x->st && x->began && rt_store_put_signal_bands(x->st, run->id, bands, n_bands, &serr)) {
				rt_cli_error("cannot store the load bands in '%s': %s", rt_store_path(x->st),
					     serr.text);
				code = RT_EXIT_FAIL;
			}
			x->bands[x->cur] = bands;
			x->n_bands[x->cur] = n_bands;
		}
	}
	if (rc) {
		if (rc == EINTR)
			rt_cli_error("calibrate%s interrupted: %zu latency and %zu rate points kept%s%s", label,
				     run->n_lat, run->n_rate, x->began ? ", stored run marked interrupted" : "",
				     x->began ? "" : " (nothing stored)");
		else
			rt_cli_error("calibrate%s: %s%s", label, err.text,
				     x->began ? " (stored run marked failed)" : "");
		code = exit_code_of(rc, x->began);
	}
	if (want_json) {
		*json_out = rt_engine_run_json(run, samples);
		if (!*json_out) {
			rt_cli_error("cannot render the run as JSON");
			code = RT_EXIT_FAIL;
		}
	}
	return code;
}

int cmd_calibrate(int argc, char **argv)
{
	enum {
		O_SIZES = 256,
		O_CAP,
		O_OPS,
		O_QPT,
		O_BUDGET,
		O_QUICK,
		O_SEED,
		O_CPU,
		O_NUMA,
		O_SQ,
		O_PEER,
		O_CONNECT,
		O_CM_ADDR,
		O_DB,
		O_NOSTORE,
		O_OUT,
		O_JSON,
		O_NOSAMPLES,
		O_TCLASS,
		O_SL,
		O_PKEY,
		O_LARGE,
		O_POSTLIST,
		O_APP,
		O_CONC
	};
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "sizes", required_argument, NULL, O_SIZES },
		{ "size-cap", required_argument, NULL, O_CAP },
		{ "ops", required_argument, NULL, O_OPS },
		{ "qp-type", required_argument, NULL, O_QPT },
		{ "budget", required_argument, NULL, O_BUDGET },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "seed", required_argument, NULL, O_SEED },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "numa", required_argument, NULL, O_NUMA },
		{ "sq-depth", required_argument, NULL, O_SQ },
		{ "peer", required_argument, NULL, O_PEER },
		{ "connect", required_argument, NULL, O_CONNECT },
		{ "cm-addr", required_argument, NULL, O_CM_ADDR },
		{ "db", required_argument, NULL, O_DB },
		{ "no-store", no_argument, NULL, O_NOSTORE },
		{ "out", required_argument, NULL, O_OUT },
		{ "json", no_argument, NULL, O_JSON },
		{ "no-samples", no_argument, NULL, O_NOSAMPLES },
		{ "tclass", required_argument, NULL, O_TCLASS },
		{ "sl", required_argument, NULL, O_SL },
		{ "pkey-index", required_argument, NULL, O_PKEY },
		{ "large-sizes", required_argument, NULL, O_LARGE },
		{ "post-list", required_argument, NULL, O_POSTLIST },
		{ "app", required_argument, NULL, O_APP },
		{ "concurrency", required_argument, NULL, O_CONC },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rt_cal_opts o;
	struct cal_ctx x;
	const char *db = NULL, *out = NULL, *app = NULL;
	bool post_list_set = false, conc_set = false;
	bool json = false, store = true, samples = true, to_stdout = false;
	int c, code = RT_EXIT_OK, n_runs = 1, per;
	struct sigaction sa;
	char **texts = NULL;
	struct rt_run *runs = NULL;
	struct rt_dev_port targets[RT_CAL_MAX_TARGETS];
	size_t n_targets = 1;
	bool all_devs = false;
	char label[128];
	long v;

	rt_cal_opts_init(&o);
	memset(&x, 0, sizeof(x));
	optind = 1;
	while ((c = rt_cli_getopt("calibrate", argc, argv, "d:i:x:h", opts)) != -1) {
		switch (c) {
		case 'd': o.dev_name = optarg; break;
		case 'i':
			if (!parse_int(optarg, 1, 255, &v))
				return rt_cli_usage_error("calibrate",
							  "option '--ib-port' takes a port 1..255, not '%s'", optarg);
			o.port = (int)v;
			break;
		case 'x':
			if (!parse_int(optarg, 0, 255, &v))
				return rt_cli_usage_error("calibrate", "option '--gid-index' takes 0..255, not '%s'",
							  optarg);
			o.gid_index = (int)v;
			break;
		case O_SIZES:
			if (parse_list_u32(optarg, o.sizes, RT_ENGINE_MAX_SIZES, &o.n_sizes))
				return rt_cli_usage_error("calibrate",
							  "option '--sizes' takes at most %d comma-separated sizes "
							  "1..%u, not '%s'",
							  RT_ENGINE_MAX_SIZES, RT_ENGINE_MAX_MSG, optarg);
			qsort(o.sizes, o.n_sizes, sizeof(uint32_t), cmp_u32);
			{
				size_t w = 0;

				for (size_t i = 0; i < o.n_sizes; i++)
					if (!w || o.sizes[w - 1] != o.sizes[i])
						o.sizes[w++] = o.sizes[i];
				o.n_sizes = w;
			}
			break;
		case O_TCLASS:
		case O_SL:
		case O_PKEY: {
			long hi = c == O_TCLASS ? 255 : c == O_SL ? 15 : 65535;
			const char *name = c == O_TCLASS ? "tclass" : c == O_SL ? "sl" : "pkey-index";

			if (!parse_int(optarg, 0, hi, &v))
				return rt_cli_usage_error("calibrate", "option '--%s' takes 0..%ld, not '%s'", name, hi,
							  optarg);
			*(c == O_TCLASS ? &o.tclass : c == O_SL ? &o.sl : &o.pkey_index) = (int)v;
			break;
		}
		case O_LARGE:
			if (strcmp(optarg, "none") == 0) {
				o.n_large = 0;
				break;
			}
			if (parse_list_u32(optarg, o.large_sizes, RT_ENGINE_MAX_LARGE, &o.n_large))
				return rt_cli_usage_error("calibrate",
							  "option '--large-sizes' takes 'none' or at most %d "
							  "comma-separated sizes 1..%u, not '%s'",
							  RT_ENGINE_MAX_LARGE, RT_ENGINE_MAX_MSG, optarg);
			break;
		case O_POSTLIST:
			if (!parse_int(optarg, 1, 64, &v))
				return rt_cli_usage_error("calibrate", "option '--post-list' takes 1..64 WRs, not '%s'",
							  optarg);
			o.post_list = (uint32_t)v;
			post_list_set = true;
			break;
		case O_APP: app = optarg; break;
		case O_CONC:
			if (parse_concurrency(optarg, &o.conc_qps, &o.conc_threads))
				return rt_cli_usage_error(
					"calibrate",
					"option '--concurrency' takes QxT (2 <= Q <= 64 qps, 1 <= T <= "
					"min(Q, 16) threads) or 'none', not '%s'",
					optarg);
			conc_set = true;
			break;
		case O_CAP:
			if (!parse_int(optarg, 1, RT_ENGINE_MAX_MSG, &v))
				return rt_cli_usage_error("calibrate",
							  "option '--size-cap' takes 1..%u bytes, not '%s'",
							  RT_ENGINE_MAX_MSG, optarg);
			o.size_cap = (uint32_t)v;
			break;
		case O_OPS:
		case O_QPT: {
			char *dup = strdup(optarg), *tok, *save = NULL;
			bool *set = c == O_OPS ? o.ops : o.qpts;
			int n = c == O_OPS ? RT_OP__COUNT : RT_QPT__COUNT, bad = 0;

			if (!dup)
				return RT_EXIT_FAIL;
			memset(set, 0, sizeof(bool) * (size_t)n);
			for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				enum rt_opcode op;
				enum rt_qp_type qt;

				if (c == O_OPS && rt_opcode_parse(tok, &op) == 0)
					set[op] = true;
				else if (c == O_QPT && rt_qp_type_parse(tok, &qt) == 0)
					set[qt] = true;
				else
					bad = 1;
			}
			free(dup);
			if (bad || !(set[0] || set[1] || (c == O_QPT && set[RT_QPT_SRD])))
				return rt_cli_usage_error(
					"calibrate", "option '--%s' takes %s (comma-separated), not '%s'",
					c == O_OPS ? "ops" : "qp-type",
					c == O_OPS ? "send, write or both" : "rc, ud, srd or several", optarg);
			break;
		}
		case O_BUDGET: {
			char *end;
			double b = strtod(optarg, &end);

			if (*end || !(b >= 1 && b <= 86400))
				return rt_cli_usage_error("calibrate",
							  "option '--budget' takes 1..86400 seconds, not '%s'", optarg);
			o.budget_s = b;
			break;
		}
		case O_QUICK: o.quick = true; break;
		case O_SEED: {
			char *end;

			errno = 0;
			o.seed = strtoull(optarg, &end, 0);
			if (errno || *end || optarg[0] == '-')
				return rt_cli_usage_error("calibrate", "option '--seed' takes a number, not '%s'",
							  optarg);
			break;
		}
		case O_CPU:
			if (!parse_int(optarg, 0, 65535, &v))
				return rt_cli_usage_error("calibrate", "option '--cpu' takes a CPU number, not '%s'",
							  optarg);
			o.cpu = (int)v;
			break;
		case O_NUMA:
			if (strcmp(optarg, "local") == 0)
				o.numa = RT_NUMA_LOCAL;
			else if (strcmp(optarg, "remote") == 0)
				o.numa = RT_NUMA_REMOTE;
			else if (strcmp(optarg, "all") == 0)
				o.numa = RT_NUMA_ALL;
			else
				return rt_cli_usage_error(
					"calibrate", "option '--numa' takes local, remote or all, not '%s'", optarg);
			break;
		case O_SQ:
			if (!parse_int(optarg, 2, 65536, &v))
				return rt_cli_usage_error("calibrate", "option '--sq-depth' takes 2..65536, not '%s'",
							  optarg);
			o.sq_depth = (uint32_t)v;
			break;
		case O_PEER: o.peer = optarg; break;
		case O_CONNECT:
			if (strcmp(optarg, "cm") == 0)
				o.connect = RT_CONNECT_CM;
			else if (strcmp(optarg, "manual") == 0)
				o.connect = RT_CONNECT_MANUAL;
			else
				return rt_cli_usage_error("calibrate",
							  "option '--connect' takes cm or manual, not '%s'", optarg);
			break;
		case O_CM_ADDR: o.cm_addr = optarg; break;
		case O_DB: db = optarg; break;
		case O_NOSTORE: store = false; break;
		case O_OUT: out = optarg; break;
		case O_JSON: json = true; break;
		case O_NOSAMPLES: samples = false; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_cli_usage_error("calibrate", "unexpected argument '%s'", argv[optind]);
	to_stdout = out && strcmp(out, "-") == 0;
	if (o.cpu >= 0 && o.numa != RT_NUMA_LOCAL)
		return rt_cli_usage_error("calibrate", "options '--cpu' and '--numa remote/all' exclude each other");
	if (o.peer && o.qpts[RT_QPT_SRD] && !o.qpts[RT_QPT_RC] && !o.qpts[RT_QPT_UD])
		return rt_cli_usage_error(
			"calibrate",
			"options '--peer' and '--qp-type srd' exclude each other (srd is measured in loopback only)");
	if (o.peer && o.qpts[RT_QPT_UD] && !o.qpts[RT_QPT_RC])
		return rt_cli_usage_error(
			"calibrate",
			"options '--peer' and '--qp-type ud' exclude each other (ud is measured in loopback only)");
	if (o.peer && (o.sl >= 0 || o.pkey_index >= 0))
		return rt_cli_usage_error(
			"calibrate",
			"options '--peer' and '--%s' exclude each other (rdma_cm takes the %s from the "
			"path; '--tclass' sets the class)",
			o.sl >= 0 ? "sl" : "pkey-index", o.sl >= 0 ? "service level" : "P_Key");
	if (app && post_list_set)
		return rt_cli_usage_error("calibrate", "options '--app' and '--post-list' exclude each other");
	if (app && conc_set)
		return rt_cli_usage_error("calibrate", "options '--app' and '--concurrency' exclude each other");
	if (app && !store)
		return rt_cli_usage_error("calibrate", "option '--app' reads the store: it excludes '--no-store'");
	if (o.peer && (o.connect || o.cm_addr))
		return rt_cli_usage_error("calibrate",
					  "options '--connect'/'--cm-addr' are for loopback, not '--peer'");
	if (o.cm_addr && o.connect == RT_CONNECT_MANUAL)
		return rt_cli_usage_error("calibrate", "options '--cm-addr' and '--connect manual' exclude each other");
	if (o.cm_addr)
		o.connect = RT_CONNECT_CM;
	if (o.dev_name && strcmp(o.dev_name, "all") == 0) {
		struct rt_error e;

		if (o.peer)
			return rt_cli_usage_error("calibrate", "options '--peer' and '-d all' exclude each other");
		if (o.port)
			return rt_cli_usage_error("calibrate", "options '-i' and '-d all' exclude each other");
		if (rt_engine_active_ports(targets, RT_CAL_MAX_TARGETS, &n_targets, &e)) {
			rt_cli_error("%s", e.text);
			return RT_EXIT_NODEV;
		}
		if (!n_targets) {
			rt_cli_error("no device has an active port (see 'rtune devices')");
			return RT_EXIT_FAIL;
		}
		all_devs = true;
	}
	if (store && db && !db[0])
		return rt_cli_usage_error("calibrate", "option '--db' takes a path, not ''");

	if (store) {
		struct rt_error e;

		if (rt_store_open(db, &x.st, &e)) {
			rt_cli_error("%s", e.text);
			return RT_EXIT_FAIL;
		}
	}
	if (app) {
		int rc = app_sizes(x.st, app, &o.post_list, &o.conc_qps, &o.conc_threads);

		if (rc) {
			rt_store_close(x.st);
			return rc;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.stop = &g_stop;
	o.progress = on_progress;
	o.on_begin = on_begin;
	x.tty = progress_wanted();
	per = o.numa == RT_NUMA_ALL ? 2 : 1;
	{
		n_runs = (int)n_targets * per;
		runs = calloc((size_t)n_runs, sizeof(*runs));
		texts = calloc((size_t)n_runs, sizeof(*texts));
		x.bands = calloc((size_t)n_runs, sizeof(*x.bands));
		x.n_bands = calloc((size_t)n_runs, sizeof(*x.n_bands));
		if (!runs || !texts || !x.bands || !x.n_bands) {
			free(runs);
			free(texts);
			free(x.bands);
			free(x.n_bands);
			rt_store_close(x.st);
			rt_cli_error("out of memory");
			return RT_EXIT_FAIL;
		}
		if (per == 2) {
			o.budget_s /= 2;
			o.numa = RT_NUMA_LOCAL;
		}
	}
	for (int r = 0; r < n_runs; r++) {
		int rc;
		const char *numa = per == 1 ? "" : r % 2 ? "remote numa" : "local numa";

		x.cur = r;
		if (per == 2)
			o.numa = r % 2 ? RT_NUMA_REMOTE : RT_NUMA_LOCAL;
		if (all_devs) {
			o.dev_name = targets[r / per].name;
			o.port = targets[r / per].port;
		}
		if (all_devs)
			snprintf(label, sizeof(label), " (%s port %d%s%s)", o.dev_name, o.port, numa[0] ? ", " : "",
				 numa);
		else
			snprintf(label, sizeof(label), "%s%s%s", numa[0] ? " (" : "", numa, numa[0] ? ")" : "");
		/* -d all: one device's failure does not stop the others (each is its own run, stored as such) */
		rc = one_run(&o, &x, label, json || out, samples, &texts[r], &runs[r]);
		if (rc && !code)
			code = rc;
		if (g_stop || (rc && !all_devs))
			break;
	}
	/* output: one run as an object, --numa all as an rtune-run-list document of the runs measured */
	if (json || out) {
		size_t len = 80;
		char *all;

		for (int r = 0; r < n_runs; r++)
			len += texts[r] ? strlen(texts[r]) + 4 : 0;
		all = malloc(len);
		if (all) {
			all[0] = '\0';
			/* --numa all: the runs in one document of its own schema (docs/json-formats.md) */
			if (n_runs > 1)
				strcat(all,
				       "{\"schema\": {\"name\": \"rtune-run-list\", \"version\": \"1.0\"}, \"runs\": [");
			for (int r = 0, first = 1; r < n_runs; r++) {
				if (!texts[r])
					continue;
				if (!first)
					strcat(all, ",\n");
				strcat(all, texts[r]);
				first = 0;
			}
			if (n_runs > 1)
				strcat(all, "]}");
			/* --out - is --json: the document once on standard output */
			if (out && !to_stdout) {
				struct rt_error e;

				if (write_out(out, all, &e)) {
					rt_cli_error("%s", e.text);
					code = code ? code : RT_EXIT_FAIL;
				}
			}
			if (json || to_stdout) {
				struct rt_error e;

				if (write_out("-", all, &e)) {
					rt_cli_error("%s", e.text);
					code = code ? code : RT_EXIT_FAIL;
				}
			}
			free(all);
		}
	}
	for (int r = 0; r < n_runs; r++) {
		/* standard output holds only the JSON when it carries it (--out -); the summary then goes to stderr */
		FILE *sf = to_stdout ? stderr : stdout;

		if (!json && (runs[r].n_lat || runs[r].n_rate))
			print_summary(sf, &runs[r]);
		if (!json)
			rt_cli_print_bands(sf, x.bands[r], x.n_bands[r]);
		free(x.bands[r]);
		if (!json && runs[r].id)
			fprintf(sf, "stored as run %lld (%s) in %s\n", (long long)runs[r].id, runs[r].uuid,
				rt_store_path(x.st));
		free(texts[r]);
		rt_run_release(&runs[r]);
	}
	free(texts);
	free(runs);
	free(x.bands);
	free(x.n_bands);
	rt_store_close(x.st);
	return code;
}
