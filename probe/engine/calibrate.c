// SPDX-License-Identifier: MIT
/*
 * `rtune calibrate`'s engine (see rt_engine.h): opens the device (or connects to a `rtune serve` peer through
 * rdma_cm), pins to a CPU by NUMA locality, picks the clock, plans the latency grid and samples it adaptively with the
 * scheduler, sweeps the signaling interval, tries CQ moderation, and fills the run -- keeping what was measured when
 * interrupted or failing, and releasing every resource on every path.
 */
#include "rt_engine.h"
#include "rt_link.h"
#include "rt_sched.h"
#include "devinfo.h"
#include "rt_concur.h"
#include "rt_cpuplace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RAW_KEEP_MAX 1024
#define RAW_KEEP_QUICK 256

void rt_cal_opts_init(struct rt_cal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->gid_index = -1;
	o->tclass = o->sl = o->pkey_index = -1;
	o->large_sizes[0] = 4096;
	o->large_sizes[1] = 65536;
	o->n_large = 2;
	o->post_list = 8;
	o->conc_qps = 4;
	o->conc_threads = 2;
	o->ops[RT_OP_SEND] = o->ops[RT_OP_WRITE] = true;
	o->qpts[RT_QPT_RC] = o->qpts[RT_QPT_UD] = o->qpts[RT_QPT_SRD] = true;
	o->budget_s = RT_ENGINE_DEFAULT_BUDGET_S;
	o->seed = 1;
	o->cpu = -1;
	o->numa = RT_NUMA_LOCAL;
}

/* The budget's split (what is left after set-up): the latency grid ends at LAT_SHARE, the signaling sweep at
 * RATE_SHARE, CQ moderation and teardown take the rest; the progress bar places the phases the same way. */
#define LAT_SHARE 0.65
#define RATE_SHARE 0.93

struct cal {
	const struct rt_cal_opts *o;
	struct rt_run *run;
	struct ibv_device **list;
	struct ibv_context *ctx; /* loopback: ours to close */
	struct rt_ep cep, rep;
	struct rt_addr addr;
	bool ud;
	uint32_t ud_max;  /* largest UD size measured */
	bool srd;	  /* SRD (EFA, through efadv) measured beside UD, loopback only */
	uint32_t srd_max; /* largest SRD size measured */
	pthread_t thr;
	bool thr_started;
	volatile sig_atomic_t resp_stop, resp_dead;
	int resp_cpu;
	struct rt_error resp_err; /* written by the responder thread */
	struct rt_error meas_err; /* the scheduler's measure callback */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *cm_id;
	bool cm_connected;
	/* loopback through rdma_cm (iWARP, or --connect cm): the listener and the accepted id */
	bool use_cm;
	/* a device without RC QPs (EFA): UD only, the control channel through memory */
	bool no_rc;
	struct rt_local_ctl ctl;
	struct rdma_cm_id *cm_listen, *cm_child;
	char cm_addr[64];
	struct rt_clock clk;
	struct rt_client cli;
	uint64_t t_start, deadline;
	struct rt_sched sched;
	bool sched_init;
	uint32_t sizes[RT_ENGINE_MAX_SIZES];
	size_t n_sizes;
	struct rt_rng rng;
	char notes[640];
	/* what the device refused and was skipped, with the reason (params.skipped) */
	struct {
		char what[32];
		char reason[160];
	} skipped[8];
	size_t n_skipped;
	bool inline_refused[RT_OP__COUNT]; /* IBV_SEND_INLINE refused on RC for this opcode */
	/* RNR hw counters: at the start of the latency grid, of the sweep, and the increases per phase */
	struct rt_rnr_counters rnr[3];
	bool rnr_read;
	uint32_t max_msg;		 /* the endpoints' largest payload */
	double phase_s[2];		 /* seconds spent in the latency grid and the signaling sweep */
	double bar_lo, bar_hi, bar_done; /* the progress bar: this phase's span of it, and what is drawn */
	/* the concurrency band: its QPs and threads (NULL: not measured), the CPUs the run may use */
	struct rt_conc *conc;
	uint32_t conc_qps, conc_threads;
	int conc_cpus[RT_CONC_MAX_THREADS];
	char conc_why[160];	  /* why the band is not measured or was reduced, "" when as asked */
	bool conc_yield;	  /* a sending thread shares the responder's CPU: both yield while the band runs */
	atomic_bool conc_running; /* a concurrency cell is being measured */
	atomic_bool conc_bands;	  /* the load bands are being measured: the responder refills the band's receives */
	int allowed_cpus[RT_CONC_MAX_THREADS + 2];
	size_t n_allowed_cpus;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void note(struct cal *c, const char *s)
{
	size_t l = strlen(c->notes);

	snprintf(c->notes + l, sizeof(c->notes) - l, "%s%s", l ? "; " : "", s);
}

/* Records what was skipped and why (params.skipped, and a note). */
static void skip(struct cal *c, const char *what, const char *reason)
{
	char msg[220];

	if (c->n_skipped < sizeof(c->skipped) / sizeof(c->skipped[0])) {
		snprintf(c->skipped[c->n_skipped].what, sizeof(c->skipped[0].what), "%s", what);
		snprintf(c->skipped[c->n_skipped].reason, sizeof(c->skipped[0].reason), "%s", reason);
		c->n_skipped++;
	}
	snprintf(msg, sizeof(msg), "%s skipped: %s", what, reason);
	note(c, msg);
}

/* Starts a phase that fills [lo, hi] of the progress bar (the phases' shares of the budget). */
static void bar_phase(struct cal *c, double lo, double hi)
{
	c->bar_lo = lo;
	c->bar_hi = hi;
}

/*
 * Reports work done: frac (0-1) of the current phase's work (the scheduler's decided pairs, the signaling cells
 * measured, the opcodes' CQ moderation probes), placed in the phase's span of the bar and never moving back; eta is
 * the budget left, an upper bound. Never fails.
 */
static void progress(struct cal *c, const char *phase, double frac)
{
	uint64_t now = rt_clock_mono_ns();
	double done = c->bar_lo + (c->bar_hi - c->bar_lo) * fmin(1, fmax(0, frac));

	if (done > c->bar_done)
		c->bar_done = done;
	if (c->o->progress)
		c->o->progress(c->o->cb_ctx, phase, c->bar_done,
			       now < c->deadline ? (double)(c->deadline - now) / 1e9 : 0);
}

/* ---- device, port, GID, CPU ------------------------------------------------------------------------------------ */

/* Number of the first ACTIVE port of ctx (1-based), 0 when none is (or the device cannot be queried). */
static int first_active_port(struct ibv_context *ctx)
{
	struct ibv_device_attr da;

	if (ibv_query_device(ctx, &da))
		return 0;
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(ctx, (uint8_t)p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
			return p;
	}
	return 0;
}

/*
 * No -d: the first device with an ACTIVE port, not the first listed (on many GPU hosts mlx5_0 is a management port
 * that is down). Sets c->ctx (and notes the choice when it passed over devices); when no device has an active port,
 * opens the first one (the port check then fails with ENETDOWN). Returns 0 or an errno with err.
 */
static int open_default_device(struct cal *c, int n, struct rt_error *err)
{
	char skipped[160] = "";
	int rc;

	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(c->list[i]);

		if (ctx && first_active_port(ctx)) {
			c->ctx = ctx;
			if (skipped[0]) {
				char msg[240];

				snprintf(msg, sizeof(msg), "device %s: the first with an active port (%s: none active)",
					 ibv_get_device_name(c->list[i]), skipped);
				note(c, msg);
			}
			return 0;
		}
		if (ctx)
			ibv_close_device(ctx);
		snprintf(skipped + strlen(skipped), sizeof(skipped) - strlen(skipped), "%s%s", skipped[0] ? ", " : "",
			 ibv_get_device_name(c->list[i]));
	}
	c->ctx = ibv_open_device(c->list[0]);
	if (!c->ctx) {
		rc = errno ? errno : ENODEV;
		return rt_error_set(err, rc, "cannot open device '%s': %s", ibv_get_device_name(c->list[0]),
				    strerror(rc));
	}
	return 0;
}

int rt_engine_active_ports(struct rt_dev_port *out, size_t max, size_t *n_out, struct rt_error *err)
{
	struct ibv_device **list;
	int n = 0;

	*n_out = 0;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		if (list)
			ibv_free_device_list(list);
		return rt_error_set(err, ENODEV, "no RDMA device found");
	}
	for (int i = 0; i < n && *n_out < max; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_device_attr da;

		if (!ctx)
			continue;
		for (int p = 1; ibv_query_device(ctx, &da) == 0 && p <= da.phys_port_cnt && *n_out < max; p++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(ctx, (uint8_t)p, &pa) || pa.state != IBV_PORT_ACTIVE)
				continue;
			snprintf(out[*n_out].name, sizeof(out[*n_out].name), "%s", ibv_get_device_name(list[i]));
			out[(*n_out)++].port = p;
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return 0;
}

static int open_device(struct cal *c, struct rt_error *err)
{
	int n = 0, rc;
	struct ibv_device *dev = NULL;

	c->list = ibv_get_device_list(&n);
	if (!c->list || n == 0)
		return rt_error_set(err, ENODEV,
				    "no RDMA device found: check 'ibv_devices' and the driver, or create a "
				    "software device with 'rdma link add rxe0 type rxe netdev <interface>'");
	if (!c->o->dev_name) {
		return open_default_device(c, n, err);
	} else {
		char names[200] = "";

		for (int i = 0; i < n; i++) {
			if (strcmp(ibv_get_device_name(c->list[i]), c->o->dev_name) == 0)
				dev = c->list[i];
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
				 ibv_get_device_name(c->list[i]));
		}
		if (!dev)
			return rt_error_set(err, ENOENT, "unknown device '%s' (devices: %s)", c->o->dev_name, names);
	}
	c->ctx = ibv_open_device(dev);
	if (!c->ctx) {
		rc = errno ? errno : ENODEV;
		return rt_error_set(err, rc, "cannot open device '%s': %s", ibv_get_device_name(dev), strerror(rc));
	}
	return 0;
}

/*
 * The traffic class, SL and P_Key index the QPs use (--tclass, --sl, --pkey-index; 0 when not given), checked against
 * the port: an index past its P_Key table, or a traffic class where there is no GRH (InfiniBand without a GID index)
 * or with SL / P_Key index in two-node mode (rdma_cm takes them from the path and the netdev) is EINVAL.
 */
static int path_attrs(struct cal *c, const struct ibv_port_attr *pa, struct rt_error *err)
{
	const struct rt_cal_opts *o = c->o;

	if (o->peer && (o->sl >= 0 || o->pkey_index >= 0))
		return rt_error_set(err, EINVAL,
				    "--%s applies to loopback only: with --peer rdma_cm takes it from the path "
				    "(the traffic class sets the priority on RoCE)",
				    o->sl >= 0 ? "sl" : "pkey-index");
	if (!o->peer && o->tclass >= 0 && c->addr.gid_index < 0)
		return rt_error_set(err, EINVAL,
				    "--tclass needs a GRH: port %d of '%s' is addressed by LID only; give --gid-index",
				    c->addr.port, c->run->dev.name);
	if (o->pkey_index >= 0 && o->pkey_index >= pa->pkey_tbl_len)
		return rt_error_set(err, EINVAL, "pkey index %d is past the %d-entry P_Key table of port %d of '%s'",
				    o->pkey_index, (int)pa->pkey_tbl_len, c->addr.port, c->run->dev.name);
	c->addr.tclass = (uint8_t)(o->tclass >= 0 ? o->tclass : 0);
	c->addr.sl = (uint8_t)(o->sl >= 0 ? o->sl : 0);
	c->addr.pkey_index = (uint16_t)(o->pkey_index >= 0 ? o->pkey_index : 0);
	return 0;
}

/* Chooses the port (first ACTIVE unless given) and the GID index; fills c->addr. */
static int pick_port(struct cal *c, struct ibv_context *ctx, int want_port, struct rt_error *err)
{
	const struct rt_device_info *d = &c->run->dev;
	const struct rt_port_info *p = NULL;
	struct ibv_port_attr pa;
	int rc;

	for (int i = 0; i < d->port_count; i++) {
		if (want_port ? d->ports[i].port_num == want_port : strcmp(d->ports[i].state, "PORT_ACTIVE") == 0) {
			p = &d->ports[i];
			break;
		}
	}
	if (!p && !want_port)
		p = d->port_count ? &d->ports[0] : NULL;
	if (!p)
		return rt_error_set(err, EINVAL, "device '%s' has no port %d", d->name, want_port);
	rc = ibv_query_port(ctx, (uint8_t)p->port_num, &pa);
	if (rc)
		return rt_error_set(err, rc, "cannot query port %d of '%s': %s", p->port_num, d->name, strerror(rc));
	if (pa.state != IBV_PORT_ACTIVE)
		return rt_error_set(err, ENETDOWN, "port %d of '%s' is %s, not ACTIVE", p->port_num, d->name,
				    ibv_port_state_str(pa.state));
	c->addr.port = p->port_num;
	c->addr.lid = pa.lid;
	c->addr.mtu = pa.active_mtu;
	c->addr.gid_index = c->o->gid_index;
	/* RoCE, and EFA (link layer unspecified: address handles name the peer by GID, there is no LID) */
	if (c->addr.gid_index < 0 &&
	    (pa.link_layer == IBV_LINK_LAYER_ETHERNET || pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED)) {
		/* the pick devinfo made over the port's whole GID table (rt_devinfo_gid_pick), recorded with its reason */
		char why[RT_TEXT_LEN + 32];

		if (p->gid_pick < 0)
			return rt_error_set(err, EADDRNOTAVAIL, "port %d of '%s': %s; use --gid-index", p->port_num,
					    d->name, p->gid_pick_reason);
		c->addr.gid_index = p->gid_pick;
		snprintf(why, sizeof(why), "gid %d: %s", p->gid_pick, p->gid_pick_reason);
		note(c, why);
	}
	if (c->addr.gid_index >= 0) {
		rc = ibv_query_gid(ctx, (uint8_t)p->port_num, c->addr.gid_index, &c->addr.gid);
		if (rc)
			return rt_error_set(err, rc ? rc : EINVAL, "cannot read gid index %d of port %d: %s",
					    c->addr.gid_index, p->port_num, strerror(rc));
	}
	c->run->port_num = p->port_num;
	c->run->gid_index = c->addr.gid_index;
	return path_attrs(c, &pa, err);
}

static int online_cpus(int *cpus, int max)
{
	char buf[RT_TEXT_LEN] = "";
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n = -1;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
		n = rt_cpulist_parse(buf, cpus, max);
	}
	if (n <= 0) {
		long m = sysconf(_SC_NPROCESSORS_ONLN);

		n = (int)(m > 0 && m < max ? m : 1);
		for (int i = 0; i < n; i++)
			cpus[i] = i;
	}
	return n;
}

/*
 * Picks and pins the measuring CPU and one for the loopback responder (rt_cpuplace_pick: two cores, isolated and
 * device-local first), fills the run's environment with the placement and governors, and notes its warnings.
 */
static int pick_cpu(struct cal *c, struct rt_error *err)
{
	static int all[RT_CPUPLACE_MAX], allowed[RT_CPUPLACE_MAX], local[RT_CPUPLACE_MAX];
	int n_all = online_cpus(all, RT_CPUPLACE_MAX), n_local = 0, n_allowed = 0, rc;
	struct rt_run_env *env = &c->run->env;
	struct rt_cpuplace_req req;
	struct rt_cpuplace pl;
	cpu_set_t s;

	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof(s), &s))
		return rt_error_set(err, errno, "cannot read this process's cpu affinity: %s", strerror(errno));
	for (int i = 0; i < n_all; i++)
		if (all[i] >= 0 && all[i] < CPU_SETSIZE && CPU_ISSET(all[i], &s))
			allowed[n_allowed++] = all[i];
	/* the concurrency band's sending threads may use these (pinning below narrows this thread's mask) */
	for (int i = 0; i < n_allowed && c->n_allowed_cpus < sizeof(c->allowed_cpus) / sizeof(c->allowed_cpus[0]); i++)
		c->allowed_cpus[c->n_allowed_cpus++] = allowed[i];
	if (c->run->dev.local_cpus[0])
		n_local = rt_cpulist_parse(c->run->dev.local_cpus, local, RT_CPUPLACE_MAX);
	memset(&req, 0, sizeof(req));
	req.sys_root = getenv("SYSFS_PATH");
	req.allowed = allowed;
	req.n_allowed = (size_t)n_allowed;
	req.local = local;
	req.n_local = n_local > 0 ? (size_t)n_local : 0;
	req.dev_node = c->run->dev.numa_node;
	req.want_cpu = c->o->cpu;
	req.remote = c->o->numa == RT_NUMA_REMOTE;
	req.need_two = !c->o->peer;
	rc = rt_cpuplace_pick(&req, &pl, err);
	if (rc)
		return rc;
	c->resp_cpu = req.need_two ? pl.resp_cpu : pl.cpu;
	CPU_ZERO(&s);
	CPU_SET(pl.cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		return rt_error_set(err, errno, "cannot pin to cpu %d: %s", pl.cpu, strerror(errno));
	env->cpu = pl.cpu;
	env->cpu_numa_node = pl.cpu_node >= 0 ? pl.cpu_node : rt_cpu_numa_node(pl.cpu);
	env->device_numa_node = req.dev_node;
	env->numa_local = req.dev_node < 0 || env->cpu_numa_node < 0 || env->cpu_numa_node == req.dev_node;
	env->resp_cpu = req.need_two ? pl.resp_cpu : -1;
	env->cpu_isolated = pl.cpu_isolated;
	env->smt_siblings = pl.smt_siblings;
	snprintf(env->governor, sizeof(env->governor), "%s", pl.governor);
	snprintf(env->placement_warning, sizeof(env->placement_warning), "%s", pl.warning);
	if (pl.warning[0])
		note(c, pl.warning);
	return 0;
}

static void read_clocksource(char *buf, size_t len)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/* ---- connection ----------------------------------------------------------------------------------------------- */

static void *resp_thread(void *arg)
{
	struct cal *c = arg;
	struct rt_resp r = { .ep = &c->rep, .mode = RT_MODE_SINK, .ctl = c->no_rc ? &c->ctl : NULL };

	while (!c->resp_stop) {
		int rc = rt_resp_step(&r, &c->resp_err);

		/* the concurrency band's responder QPs: their shared receive CQ, refilled here while the bands run (never
		 * in the latency grid: one more poll per step would delay every ping-pong answer) */
		if (!rc && c->conc && atomic_load_explicit(&c->conc_bands, memory_order_acquire))
			rc = rt_conc_resp_step(c->conc, &c->resp_err);
		if (rc) {
			c->resp_dead = 1;
			break;
		}
		if (r.ended)
			break;
		if (c->cli.yield || (c->conc_yield && atomic_load_explicit(&c->conc_running, memory_order_relaxed)))
			sched_yield();
	}
	return NULL;
}

/*
 * Starts the loopback responder thread already pinned to c->resp_cpu (the affinity is part of its creation: a refused
 * CPU is seen here, not ignored inside the thread); a refused affinity starts it unpinned and says so in the run.
 * Returns 0 or the errno of pthread_create with err.
 */
static int start_responder(struct cal *c, struct rt_error *err)
{
	pthread_attr_t at;
	cpu_set_t s;
	int rc, pin;

	CPU_ZERO(&s);
	CPU_SET(c->resp_cpu, &s);
	rc = pthread_attr_init(&at);
	if (rc)
		return rt_error_set(err, rc, "cannot start the responder thread: %s", strerror(rc));
	pin = pthread_attr_setaffinity_np(&at, sizeof(s), &s);
	rc = pin ? pin : pthread_create(&c->thr, &at, resp_thread, c);
	pthread_attr_destroy(&at);
	if (rc == EINVAL || rc == EPERM) {
		char msg[160];

		snprintf(msg, sizeof(msg), "responder not pinned (cpu %d refused: %s): it may share a core",
			 c->resp_cpu, strerror(rc));
		note(c, msg);
		snprintf(c->run->env.placement_warning + strlen(c->run->env.placement_warning),
			 sizeof(c->run->env.placement_warning) - strlen(c->run->env.placement_warning), "%s%s",
			 c->run->env.placement_warning[0] ? "; " : "", msg);
		c->run->env.resp_cpu = -1;
		rc = pthread_create(&c->thr, NULL, resp_thread, c);
	}
	if (rc)
		return rt_error_set(err, rc, "cannot start the responder thread: %s", strerror(rc));
	return 0;
}

static void ep_cfg(struct cal *c, struct rt_ep_cfg *cfg, uint32_t max_msg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_msg = max_msg;
	cfg->max_inline = c->run->max_inline_used;
	cfg->ud_max_inline = c->ud ? c->ud_max : 0;
	cfg->sq_depth = c->run->sq_depth;
	cfg->rq_depth =
		(uint32_t)(c->run->dev.max_qp_wr > 0 && c->run->dev.max_qp_wr < 1024 ? c->run->dev.max_qp_wr : 1024);
	cfg->ud = c->ud;
	cfg->rc_qp = !c->no_rc;
}

/*
 * Sizes and creates the concurrency band (o->conc_qps QPs x o->conc_threads threads): the QPs capped by the device's
 * max_qp (the band's 2 Q beside the link's own), the threads by the QPs and by the CPUs the run may use (the measuring
 * thread's CPU first, then the others, the responder's last: a thread there shares it and the threads yield), each
 * thread pinned to its own. What reduced or dropped the band is c->conc_why (params.concurrency). A device refusing the
 * band's QPs or CQs drops the band (params.skipped), the run goes on. Returns 0 or ENOMEM with err.
 */
static int setup_concurrency(struct cal *c, uint32_t max_msg, struct rt_error *err)
{
	const struct rt_cal_opts *o = c->o;
	uint32_t q = o->conc_qps, t = o->conc_threads ? o->conc_threads : 1, n_cpu = 0;
	int env_cpu = c->run->env.cpu, resp_cpu = c->resp_cpu, link_qps = c->ud ? 4 : 2;
	struct rt_conc_setup s;
	struct rt_error e;
	int rc;

	if (q <= 1)
		return 0;
	if (q > RT_CONC_MAX_QPS)
		q = RT_CONC_MAX_QPS;
	if (c->run->dev.max_qp > 0 && (int)(2 * q) > c->run->dev.max_qp - link_qps) {
		q = c->run->dev.max_qp > link_qps ? (uint32_t)(c->run->dev.max_qp - link_qps) / 2 : 0;
		snprintf(c->conc_why, sizeof(c->conc_why), "qps capped to %u by the device's max_qp %d", q,
			 c->run->dev.max_qp);
		if (q < 2) {
			snprintf(c->conc_why, sizeof(c->conc_why),
				 "the device's max_qp %d leaves no room for 2 qp pairs", c->run->dev.max_qp);
			return 0;
		}
	}
	if (t > q)
		t = q;
	if (t > RT_CONC_MAX_THREADS)
		t = RT_CONC_MAX_THREADS;
	c->conc_cpus[n_cpu++] = env_cpu;
	for (size_t i = 0; i < c->n_allowed_cpus && n_cpu < t; i++)
		if (c->allowed_cpus[i] != env_cpu && c->allowed_cpus[i] != resp_cpu)
			c->conc_cpus[n_cpu++] = c->allowed_cpus[i];
	for (size_t i = 0; i < c->n_allowed_cpus && n_cpu < t; i++)
		if (c->allowed_cpus[i] == resp_cpu && resp_cpu != env_cpu) {
			c->conc_cpus[n_cpu++] = resp_cpu;
			c->conc_yield = true;
			note(c, "a concurrency sending thread shares the responder's cpu: both yield while waiting");
		}
	if (n_cpu < t) {
		char msg[120];

		snprintf(msg, sizeof(msg), "threads capped to %u: the cpus this run may use", n_cpu);
		snprintf(c->conc_why + strlen(c->conc_why), sizeof(c->conc_why) - strlen(c->conc_why), "%s%s",
			 c->conc_why[0] ? "; " : "", msg);
		t = n_cpu;
	}
	memset(&s, 0, sizeof(s));
	memset(&e, 0, sizeof(e));
	s.cep = &c->cep;
	s.rep = &c->rep;
	s.addr = &c->addr;
	s.qps = q;
	s.threads = t;
	s.sq_depth = c->run->sq_depth;
	s.max_inline = c->run->max_inline_used;
	s.msg_bytes = max_msg < 256 ? max_msg : 256;
	s.cpus = c->conc_cpus;
	s.yield = c->conc_yield || resp_cpu == env_cpu;
	c->conc_yield = s.yield;
	s.stop = o->stop;
	s.peer_dead = &c->resp_dead;
	s.timeout_ns = 5e9;
	rc = rt_conc_create(&s, &c->conc, &e);
	if (rc == ENOMEM && strstr(e.text, "out of memory"))
		return rt_error_set(err, ENOMEM, "out of memory");
	if (rc) {
		static const char pfx[] = "concurrency band: "; /* rt_conc's messages name the band: said once */

		skip(c, "concurrency band", strncmp(e.text, pfx, sizeof(pfx) - 1) ? e.text : e.text + sizeof(pfx) - 1);
		return 0;
	}
	c->conc_qps = q;
	c->conc_threads = t;
	return 0;
}

static int connect_cm_loopback(struct cal *c, const struct rt_ep_cfg *cfg0, struct rt_error *err);

/* The SRD QPs of both endpoints (EFA), beside their UD QPs, connected to each other with receives posted. */
static int connect_srd(struct cal *c, const struct rt_ep_cfg *cfg, struct rt_error *err)
{
	bool rnr = c->run->dev.efa.rnr_retry;
	int rc = rt_ep_create_srd(&c->cep, cfg, c->srd_max, rnr, err);

	if (!rc)
		rc = rt_ep_create_srd(&c->rep, cfg, c->srd_max, rnr, err);
	if (!rc)
		rc = rt_ep_srd_connect(&c->cep, &c->addr, rt_ep_dgram_qp(&c->rep, true)->qp_num, err);
	if (!rc)
		rc = rt_ep_srd_connect(&c->rep, &c->addr, rt_ep_dgram_qp(&c->cep, true)->qp_num, err);
	return rc;
}

static int connect_loopback(struct cal *c, uint32_t max_msg, struct rt_error *err)
{
	struct rt_ep_cfg cfg;
	int rc;

	ep_cfg(c, &cfg, max_msg);
	if (c->use_cm && !c->no_rc) {
		/* UD QPs are not rdma_cm's: created and connected by hand on the same contexts */
		cfg.ud = false;
		rc = connect_cm_loopback(c, &cfg, err);
		if (!rc && c->ud)
			rc = rt_ep_create_ud(&c->cep, &cfg, c->ud_max, err);
		if (!rc && c->ud)
			rc = rt_ep_create_ud(&c->rep, &cfg, c->ud_max, err);
	} else {
		rc = rt_ep_create(&c->cep, c->ctx, &cfg, err);
		if (!rc)
			rc = rt_ep_create(&c->rep, c->ctx, &cfg, err);
		if (!rc && !c->no_rc)
			rc = rt_ep_rc_connect(&c->cep, &c->addr, c->rep.qp->qp_num, err);
		if (!rc && !c->no_rc)
			rc = rt_ep_rc_connect(&c->rep, &c->addr, c->cep.qp->qp_num, err);
		if (rc == EINVAL && strcmp(c->run->dev.transport, "iWARP") == 0) {
			char was[sizeof(err->text)];

			snprintf(was, sizeof(was), "%s", err->text);
			rc = rt_error_set(err, EOPNOTSUPP,
					  "%s: iWARP RC QPs connect only through the iWARP CM: use --connect cm", was);
		}
	}
	if (!rc && c->ud)
		rc = rt_ep_ud_connect(&c->cep, &c->addr, c->rep.ud_qp->qp_num, err);
	if (!rc && c->ud)
		rc = rt_ep_ud_connect(&c->rep, &c->addr, c->cep.ud_qp->qp_num, err);
	if (!rc && c->srd)
		rc = connect_srd(c, &cfg, err);
	if (rc)
		return rc;
	c->cep.raddr = rt_ep_data_addr(&c->rep);
	c->cep.rkey = c->rep.mr->rkey;
	c->rep.raddr = rt_ep_data_addr(&c->cep);
	c->rep.rkey = c->cep.mr->rkey;
	rc = rt_ep_fill_recv(&c->cep, false, err);
	if (!rc)
		rc = rt_ep_fill_recv(&c->rep, false, err);
	if (!rc && c->ud)
		rc = rt_ep_fill_recv(&c->cep, true, err);
	if (!rc && c->ud)
		rc = rt_ep_fill_recv(&c->rep, true, err);
	if (rc)
		return rc;
	if (!c->use_cm && !c->no_rc) {
		rc = setup_concurrency(c, max_msg, err);
		if (rc)
			return rc;
	} else if (c->o->conc_qps > 1) {
		snprintf(c->conc_why, sizeof(c->conc_why), "%s",
			 c->no_rc ? "no rc qps on this device"
				  : "rdma_cm loopback: its qps connect only through the cm");
	}
	if (c->resp_cpu == c->run->env.cpu) {
		/* one CPU for both sides: without yielding, each spinning side would wait out the other's time slice */
		c->cli.yield = true;
		note(c,
		     "client and responder share one cpu and yield while waiting: latencies include context switches");
	}
	rc = start_responder(c, err);
	if (rc)
		return rc;
	c->thr_started = true;
	c->cli.peer_dead = &c->resp_dead;
	if (c->no_rc) {
		c->cli.ctl = &c->ctl;
		c->cli.rate_ud = true;
	}
	return 0;
}

/*
 * The node's own address on the device's port, for the rdma_cm loopback: --cm-addr when given, else the port's first
 * IPv4-mapped GID (RoCE), else the first IPv4 address of a netdev the port's GIDs name. Returns 0 with c->cm_addr set,
 * or EADDRNOTAVAIL with err.
 */
static int own_address(struct cal *c, struct rt_error *err)
{
	const struct rt_port_info *p = NULL;
	struct ifaddrs *ifa = NULL;

	if (c->o->cm_addr) {
		snprintf(c->cm_addr, sizeof(c->cm_addr), "%s", c->o->cm_addr);
		return 0;
	}
	for (int i = 0; i < c->run->dev.port_count; i++)
		if (c->run->dev.ports[i].port_num == c->addr.port)
			p = &c->run->dev.ports[i];
	for (int k = 0; p && k <= p->gid_count; k++) {
		/* the default GID first (the pick), then the table in order */
		int i = k - 1;
		unsigned long x = 0, y = 0;
		char *end = NULL;

		for (int j = 0; k == 0 && j < p->gid_count; j++)
			if (p->gids[j].index == p->gid_pick)
				i = j;
		if (i >= 0 && strncmp(p->gids[i].gid, "0000:0000:0000:0000:0000:ffff:", 30) == 0) {
			/* the IPv4-mapped tail "c0a8:0001" */
			x = strtoul(p->gids[i].gid + 30, &end, 16);
			if (end == p->gids[i].gid + 34 && *end == ':')
				y = strtoul(end + 1, &end, 16);
			else
				end = NULL;
		}
		if (end && *end == '\0' && x <= 0xffff && y <= 0xffff) {
			snprintf(c->cm_addr, sizeof(c->cm_addr), "%lu.%lu.%lu.%lu", x >> 8, x & 255, y >> 8, y & 255);
			return 0;
		}
	}
	if (p && getifaddrs(&ifa) == 0) {
		for (int i = 0; i < p->gid_count && !c->cm_addr[0]; i++)
			for (struct ifaddrs *x = ifa; x && p->gids[i].netdev[0]; x = x->ifa_next)
				if (x->ifa_addr && x->ifa_addr->sa_family == AF_INET &&
				    strcmp(x->ifa_name, p->gids[i].netdev) == 0) {
					inet_ntop(AF_INET, &((struct sockaddr_in *)x->ifa_addr)->sin_addr, c->cm_addr,
						  sizeof(c->cm_addr));
					break;
				}
		freeifaddrs(ifa);
	}
	if (c->cm_addr[0])
		return 0;
	return rt_error_set(
		err, EADDRNOTAVAIL,
		"rdma_cm loopback: no IPv4 address found for '%s' port %d (neither an IPv4-mapped GID nor a "
		"netdev address): use --cm-addr",
		c->run->dev.name, c->addr.port);
}

/* Next rdma_cm event of the loopback; must be want (for any id): 0 with *id = the event's id, else an errno + err. */
static int lb_expect(struct cal *c, enum rdma_cm_event_type want, struct rdma_cm_id **id, struct rt_error *err)
{
	struct rdma_cm_event *ev;
	int rc = rt_cm_next(c->cm_ch, 5000, c->o->stop, &ev, err);

	if (rc)
		return rc == ETIMEDOUT ? rt_error_set(err, rc, "rdma_cm loopback to %s: no %s within 5 s", c->cm_addr,
						      rdma_event_str(want))
				       : rc;
	if (ev->event != want) {
		rc = rt_error_set(err, ECONNREFUSED, "rdma_cm loopback to %s: %s (status %d) instead of %s", c->cm_addr,
				  rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return rc;
	}
	if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
	return 0;
}

/*
 * Loopback through rdma_cm to the node's own address: what iWARP needs (its RC QPs connect only through the iWARP
 * CM; ibv_modify_qp to RTR fails) and what --connect cm asks for elsewhere. A listener on the own address, a client
 * id that resolves it, both RC QPs created by rdma_create_qp on their ids, connect/accept; UD (RoCE) still by hand.
 * Fills cep/rep with rc_qp owned by rdma_cm. Returns 0 or an errno with err (every object is released by teardown).
 */
static int connect_cm_loopback(struct cal *c, const struct rt_ep_cfg *cfg0, struct rt_error *err)
{
	struct rt_ep_cfg cfg = *cfg0;
	struct sockaddr_in sa;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	int rc;

	cfg.rc_qp = false;
	rc = own_address(c, err);
	if (rc)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	if (inet_pton(AF_INET, c->cm_addr, &sa.sin_addr) != 1)
		return rt_error_set(err, EINVAL, "rdma_cm loopback: '%s' is not an IPv4 address", c->cm_addr);
	c->cm_ch = rdma_create_event_channel();
	if (!c->cm_ch)
		return rt_error_set(err, errno ? errno : ENODEV,
				    "rdma_cm loopback to %s: cannot open the rdma_cm event channel: %s (is rdma_ucm "
				    "loaded?)",
				    c->cm_addr, strerror(errno ? errno : ENODEV));
	if (rdma_create_id(c->cm_ch, &c->cm_listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(c->cm_listen, (struct sockaddr *)&sa) || rdma_listen(c->cm_listen, 1))
		return rt_error_set(err, errno, "rdma_cm loopback: cannot listen on %s: %s", c->cm_addr,
				    strerror(errno));
	sa.sin_port = rdma_get_src_port(c->cm_listen);
	if (rdma_create_id(c->cm_ch, &c->cm_id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->cm_id, NULL, (struct sockaddr *)&sa, 3000))
		return rt_error_set(err, errno, "rdma_cm loopback: cannot resolve %s: %s", c->cm_addr, strerror(errno));
	rc = lb_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, err);
	if (!rc && rdma_resolve_route(c->cm_id, 3000))
		rc = rt_error_set(err, errno, "rdma_cm loopback: cannot resolve a route to %s: %s", c->cm_addr,
				  strerror(errno));
	if (!rc)
		rc = lb_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, err);
	if (rc)
		return rc;
	if (!c->cm_id->verbs || c->cm_id->verbs->device != c->ctx->device ||
	    (c->cm_id->port_num && c->cm_id->port_num != (uint8_t)c->addr.port))
		return rt_error_set(err, EADDRNOTAVAIL, "rdma_cm loopback: %s is not on '%s' port %d: use --cm-addr",
				    c->cm_addr, c->run->dev.name, c->addr.port);
	rc = rt_ep_create(&c->cep, c->cm_id->verbs, &cfg, err);
	if (rc)
		return rc;
	rt_ep_qp_init_attr(&c->cep, &qa);
	if (rdma_create_qp(c->cm_id, c->cep.pd, &qa))
		return rt_error_set(err, errno, "cannot create an rc qp through rdma_cm: %s", strerror(errno));
	c->cep.qp = c->cm_id->qp;
	c->cep.cm_id = c->cm_id;
	rc = rt_ep_fill_recv(&c->cep, false, err);
	if (rc)
		return rc;
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(c->cm_id, &cp))
		return rt_error_set(err, errno, "rdma_cm loopback: cannot connect to %s: %s", c->cm_addr,
				    strerror(errno));
	rc = lb_expect(c, RDMA_CM_EVENT_CONNECT_REQUEST, &c->cm_child, err);
	if (rc)
		return rc;
	rc = rt_ep_create(&c->rep, c->cm_child->verbs, &cfg, err);
	if (rc)
		return rc;
	rt_ep_qp_init_attr(&c->rep, &qa);
	if (rdma_create_qp(c->cm_child, c->rep.pd, &qa))
		return rt_error_set(err, errno, "cannot create the responder's rc qp through rdma_cm: %s",
				    strerror(errno));
	c->rep.qp = c->cm_child->qp;
	c->rep.cm_id = c->cm_child;
	rc = rt_ep_fill_recv(&c->rep, false, err);
	if (rc)
		return rc;
	if (rdma_accept(c->cm_child, &cp))
		return rt_error_set(err, errno, "rdma_cm loopback: cannot accept: %s", strerror(errno));
	for (int k = 0; k < 2 && !rc; k++)
		rc = lb_expect(c, RDMA_CM_EVENT_ESTABLISHED, NULL, err);
	if (rc)
		return rc;
	c->cm_connected = true;
	return 0;
}

static int cm_expect(struct cal *c, enum rdma_cm_event_type want, int timeout_ms, struct rt_hello_server *hs,
		     struct rt_error *err)
{
	struct rdma_cm_event *ev;
	int rc;

	if (hs) /* defined on every path, zero unless the expected event carried a hello */
		memset(hs, 0, sizeof(*hs));
	rc = rt_cm_next(c->cm_ch, timeout_ms, c->o->stop, &ev, err);
	if (rc) {
		if (rc == ETIMEDOUT)
			rt_error_set(err, ETIMEDOUT, "peer '%s' did not answer within %d ms (%s)", c->o->peer,
				     timeout_ms, rdma_event_str(want));
		return rc;
	}
	if (ev->event == want) {
		if (hs && ev->param.conn.private_data)
			memcpy(hs, ev->param.conn.private_data,
			       ev->param.conn.private_data_len < sizeof(*hs) ? ev->param.conn.private_data_len
									     : sizeof(*hs));
		rdma_ack_cm_event(ev);
		return 0;
	}
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		struct rt_hello_server r;

		memset(&r, 0, sizeof(r));
		if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(r))
			memcpy(&r, ev->param.conn.private_data, sizeof(r));
		rdma_ack_cm_event(ev);
		r.reason[sizeof(r.reason) - 1] = '\0';
		if (ntohl(r.magic) == RT_HELLO_MAGIC)
			return rt_error_set(err, ECONNREFUSED, "peer '%s' refused: %s", c->o->peer, r.reason);
		return rt_error_set(err, ECONNREFUSED,
				    "peer '%s' refused the connection (is 'rtune serve' running "
				    "there?)",
				    c->o->peer);
	}
	rc = ev->event == RDMA_CM_EVENT_UNREACHABLE || ev->event == RDMA_CM_EVENT_ADDR_ERROR ||
			     ev->event == RDMA_CM_EVENT_ROUTE_ERROR
		     ? EHOSTUNREACH
		     : ECONNREFUSED;
	rt_error_set(err, rc, "peer '%s': %s (status %d)", c->o->peer, rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	return rc;
}

static int connect_peer(struct cal *c, struct rt_error *err)
{
	struct addrinfo *ai = NULL;
	int rc;

	rc = rt_resolve(c->o->peer, RT_ENGINE_DEFAULT_PORT, false, &ai, err);
	if (rc)
		return rc;
	c->cm_ch = rdma_create_event_channel();
	if (!c->cm_ch) {
		freeaddrinfo(ai);
		return rt_error_set(err, errno ? errno : ENODEV,
				    "cannot open the rdma_cm event channel: %s "
				    "(is rdma_ucm loaded?)",
				    strerror(errno));
	}
	if (rdma_create_id(c->cm_ch, &c->cm_id, NULL, RDMA_PS_TCP)) {
		freeaddrinfo(ai);
		return rt_error_set(err, errno, "cannot create an rdma_cm id: %s", strerror(errno));
	}
	if (c->o->tclass >= 0) {
		/* RDMA_OPTION_ID_TOS before the route is resolved: the path (and the REQ the server's QP follows) carry
		 * it as the GRH traffic class */
		uint8_t tos = (uint8_t)c->o->tclass;

		if (rdma_set_option(c->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos))) {
			freeaddrinfo(ai);
			return rt_error_set(err, errno, "cannot set the rdma_cm type of service %u: %s", tos,
					    strerror(errno));
		}
	}
	rc = rdma_resolve_addr(c->cm_id, NULL, ai->ai_addr, 3000) ? errno : 0;
	freeaddrinfo(ai);
	if (rc)
		return rt_error_set(err, EHOSTUNREACH, "cannot resolve the RDMA address of '%s': %s", c->o->peer,
				    strerror(rc));
	rc = cm_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, NULL, err);
	if (rc)
		return rc;
	if (rdma_resolve_route(c->cm_id, 3000))
		return rt_error_set(err, EHOSTUNREACH, "cannot resolve a route to '%s': %s", c->o->peer,
				    strerror(errno));
	rc = cm_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, NULL, err);
	if (rc)
		return rc;
	return 0;
}

/*
 * What the server took: its max inline (hs->dev_max_inline; 0 from a server before negotiation) and the value both
 * QPs use (hs->max_inline = min(ours, its)). Sizes above the negotiated value are dropped (a ping-pong sends inline
 * both ways) and said so; none left is EOPNOTSUPP. Both sides' maxima are recorded in the run.
 */
static int peer_negotiated(struct cal *c, const struct rt_hello_server *hs, uint32_t asked, struct rt_error *err)
{
	uint32_t used = ntohl(hs->max_inline), srv = ntohl(hs->dev_max_inline);
	size_t w = 0;

	c->run->env.client_max_inline = c->run->dev.max_inline_rc > 0 ? (uint32_t)c->run->dev.max_inline_rc : asked;
	c->run->env.server_max_inline = srv ? srv : used;
	if (used >= asked)
		return 0;
	for (size_t i = 0; i < c->n_sizes; i++)
		if (c->sizes[i] <= used)
			c->sizes[w++] = c->sizes[i];
	if (!w)
		return rt_error_set(err, EOPNOTSUPP,
				    "peer '%s' takes at most %u bytes inline, below the smallest size measured (%u)",
				    c->o->peer, used, c->sizes[0]);
	{
		char msg[160];

		snprintf(msg, sizeof(msg), "the server takes %u bytes inline (this node %u): sizes above %u dropped",
			 used, c->run->env.client_max_inline, used);
		note(c, msg);
	}
	c->n_sizes = w;
	c->run->max_inline_used = used;
	return 0;
}

/* The GID index rdma_cm chose for the connection (the QP's address vector), recorded in the run and noted when it is
 * not the default pick. Leaves the pick when the QP cannot be queried or has no GRH. */
static void cm_gid_index(struct cal *c)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(c->cep.qp, &at, IBV_QP_AV, &ia) || !at.ah_attr.is_global)
		return;
	if (at.ah_attr.grh.sgid_index != c->run->gid_index) {
		char msg[96];

		snprintf(msg, sizeof(msg), "rdma_cm uses gid index %u (the default pick was %d)",
			 at.ah_attr.grh.sgid_index, c->run->gid_index);
		note(c, msg);
	}
	c->run->gid_index = at.ah_attr.grh.sgid_index;
	c->addr.gid_index = at.ah_attr.grh.sgid_index;
}

/* Second half of the peer connection, once the device is known and the limits are chosen. */
static int connect_peer_qp(struct cal *c, uint32_t max_msg, struct rt_error *err)
{
	struct rdma_conn_param cp;
	struct rt_hello_client hc;
	struct rt_hello_server hs;
	struct ibv_qp_init_attr qa;
	struct rt_ep_cfg cfg;
	int rc;

	ep_cfg(c, &cfg, max_msg);
	cfg.rc_qp = false;
	cfg.ud = false;
	rc = rt_ep_create(&c->cep, c->cm_id->verbs, &cfg, err);
	if (rc)
		return rc;
	rt_ep_qp_init_attr(&c->cep, &qa);
	if (rdma_create_qp(c->cm_id, c->cep.pd, &qa))
		return rt_error_set(err, errno, "cannot create an rc qp (send queue %u, max inline %u): %s",
				    cfg.sq_depth, cfg.max_inline, strerror(errno));
	c->cep.qp = c->cm_id->qp;
	c->cep.cm_id = c->cm_id;
	rc = rt_ep_fill_recv(&c->cep, false, err);
	if (rc)
		return rc;
	memset(&hc, 0, sizeof(hc));
	hc.magic = htonl(RT_HELLO_MAGIC);
	hc.version = htons(RT_PROTO_VERSION);
	hc.max_msg = htonl(max_msg);
	hc.max_inline = htonl(cfg.max_inline);
	hc.rq_depth = htonl(cfg.rq_depth);
	hc.rkey = htonl(c->cep.mr->rkey);
	hc.addr = htobe64(rt_ep_data_addr(&c->cep));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &hc;
	cp.private_data_len = sizeof(hc);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(c->cm_id, &cp))
		return rt_error_set(err, errno, "cannot connect to '%s': %s", c->o->peer, strerror(errno));
	rc = cm_expect(c, RDMA_CM_EVENT_ESTABLISHED, 8000, &hs, err);
	if (rc)
		return rc;
	c->cm_connected = true;
	if (ntohl(hs.magic) != RT_HELLO_MAGIC || ntohs(hs.version) != RT_PROTO_VERSION)
		return rt_error_set(err, EPROTO, "peer '%s' is not a compatible 'rtune serve'", c->o->peer);
	c->cep.raddr = be64toh(hs.addr);
	c->cep.rkey = ntohl(hs.rkey);
	c->cli.cm_ch = c->cm_ch;
	rc = peer_negotiated(c, &hs, cfg.max_inline, err);
	if (rc)
		return rc;
	cm_gid_index(c);
	return 0;
}

static void teardown(struct cal *c)
{
	if (c->thr_started) {
		c->resp_stop = 1;
		pthread_join(c->thr, NULL);
		c->thr_started = false;
	}
	rt_conc_destroy(c->conc); /* its QPs use the endpoints' PDs and MRs */
	c->conc = NULL;
	if (c->cm_connected) {
		struct rdma_cm_event *ev;

		rdma_disconnect(c->cm_id);
		/* drain our own DISCONNECTED (bounded) so the id can be destroyed */
		while (rt_cm_next(c->cm_ch, 500, NULL, &ev, NULL) == 0)
			rdma_ack_cm_event(ev);
	}
	rt_ep_destroy(&c->cep);
	rt_ep_destroy(&c->rep);
	if (c->cm_child)
		rdma_destroy_id(c->cm_child);
	if (c->cm_listen)
		rdma_destroy_id(c->cm_listen);
	if (c->cm_id)
		rdma_destroy_id(c->cm_id);
	if (c->cm_ch)
		rdma_destroy_event_channel(c->cm_ch);
	if (c->ctx)
		ibv_close_device(c->ctx);
	if (c->list)
		ibv_free_device_list(c->list);
	if (c->sched_init)
		rt_sched_free(&c->sched);
}

/* ---- measurement phases --------------------------------------------------------------------------------------- */

/*
 * Some providers accept max_inline_data at QP creation and still refuse IBV_SEND_INLINE for an opcode at
 * ibv_post_send (RDMA WRITE, typically). Posts one inline WR per RC opcode: a refusal (EINVAL, EOPNOTSUPP) marks the
 * opcode's inline side as skipped with the reason -- its latency pairs and inline rate cells are left out, its
 * non-inline signaling sweep is kept. Returns 0, or the errno of any other failure with err.
 */
static int preflight_inline(struct cal *c, struct rt_error *err)
{
	for (int op = 0; op < RT_OP__COUNT; op++) {
		char what[32], why[160];
		double v, cpu = 0;
		int rc;

		if (!c->o->ops[op] || !c->o->qpts[RT_QPT_RC] || c->no_rc)
			continue;
		rc = rt_client_lat(&c->cli, (enum rt_opcode)op, RT_QPT_RC, RT_LAT_POST_CQE, c->sizes[0], true, 1, &v,
				   &cpu, err);
		if (!rc)
			continue;
		if (rc != EINVAL && rc != EOPNOTSUPP)
			return rc;
		rt_error_clear(err);
		c->inline_refused[op] = true;
		snprintf(what, sizeof(what), "inline %s/rc", rt_opcode_name((enum rt_opcode)op));
		snprintf(why, sizeof(why),
			 "ibv_post_send refused IBV_SEND_INLINE (%s) though the qp took max_inline_data %u; non-inline "
			 "signaling still measured",
			 strerror(rc), c->run->max_inline_used);
		skip(c, what, why);
	}
	return 0;
}

static int sched_measure(void *ctx, const struct rt_sched_cell *cell, size_t n, double *out, double *cpu_ns)
{
	struct cal *c = ctx;
	return rt_client_lat(&c->cli, cell->op, cell->qpt, cell->kind, cell->msg_bytes, cell->inl, n, out, cpu_ns,
			     &c->meas_err);
}

static uint64_t sched_clock(void *ctx)
{
	(void)ctx;
	return rt_clock_mono_ns();
}

/* The scheduler's own measure of the latency grid done (pairs decided, or its deadline's share if further). */
static void sched_progress(void *ctx, double frac, double eta)
{
	(void)eta;
	progress(ctx, "latency", frac);
}

static int plan_latency(struct cal *c)
{
	const struct rt_cal_opts *o = c->o;
	int rc;

	for (int op = 0; op < RT_OP__COUNT; op++) {
		if (!o->ops[op])
			continue;
		for (int qpt = 0; qpt < RT_QPT__COUNT; qpt++) {
			if (qpt == RT_QPT_UD && (!c->ud || op != RT_OP_SEND))
				continue;
			if (qpt == RT_QPT_SRD && (!c->srd || op != RT_OP_SEND))
				continue;
			if (qpt == RT_QPT_RC && (!o->qpts[RT_QPT_RC] || c->inline_refused[op] || c->no_rc))
				continue;
			for (int kind = 0; kind < RT_LAT__COUNT; kind++)
				for (size_t i = 0; i < c->n_sizes; i++) {
					if ((qpt == RT_QPT_UD && c->sizes[i] > c->ud_max) ||
					    (qpt == RT_QPT_SRD && c->sizes[i] > c->srd_max))
						continue;
					rc = rt_sched_add_pair(&c->sched, (enum rt_opcode)op, (enum rt_qp_type)qpt,
							       (enum rt_lat_kind)kind, c->sizes[i], false);
					if (rc)
						return rc;
				}
		}
	}
	return 0;
}

/* Copies the scheduler's points into the run (raw samples thinned to at most keep, in time order). */
static int export_latency(struct cal *c, uint32_t keep)
{
	struct rt_run *run = c->run;
	size_t n = 0;

	for (size_t i = 0; i < c->sched.n_pts; i++)
		n += c->sched.pts[i].n > 0;
	run->lat = calloc(n ? n : 1, sizeof(*run->lat));
	if (!run->lat)
		return ENOMEM;
	for (size_t i = 0; i < c->sched.n_pts; i++) {
		const struct rt_sched_point *p = &c->sched.pts[i];
		struct rt_lat_point *l;
		size_t step;

		if (!p->n)
			continue;
		l = &run->lat[run->n_lat++];
		l->op = p->cell.op;
		l->qpt = p->cell.qpt;
		l->kind = p->cell.kind;
		l->msg_bytes = p->cell.msg_bytes;
		l->inl = p->cell.inl;
		l->n_samples = (uint32_t)p->n;
		l->median_ns = p->sum.median;
		l->p99_ns = p->sum.p99;
		l->p999_ns = p->sum.p999;
		l->mean_ns = p->sum.mean;
		l->min_ns = p->sum.min;
		l->ci_lo_ns = p->sum.ci_lo;
		l->ci_hi_ns = p->sum.ci_hi;
		l->cpu_ns_per_op = p->cpu_ns / (double)p->n;
		l->n_blocks = (uint32_t)p->n_blk;
		l->n_rounds = p->rounds;
		l->remeasured = false;
		step = (p->n + keep - 1) / keep;
		l->samples_ns = malloc(((p->n + step - 1) / step) * sizeof(float));
		if (!l->samples_ns)
			return ENOMEM;
		for (size_t k = 0; k < p->n; k += step)
			l->samples_ns[l->n_kept++] = (float)p->samples[k];
		for (size_t k = 0; k < c->sched.n_pairs; k++)
			if ((c->sched.pairs[k].inl == i || c->sched.pairs[k].non == i) && c->sched.pairs[k].remeasured)
				l->remeasured = true;
	}
	return 0;
}

/*
 * Says in the notes which pairs were re-measured because their verdict disagreed with both neighbours in size, with
 * the verdict before and after ("+" inline significantly faster, "-" slower, "=" neither), at most four of them.
 */
static void note_remeasured(struct cal *c)
{
	char msg[200];
	size_t n = rt_sched_n_remeasured(&c->sched), shown = 0;
	int len;

	if (!n)
		return;
	len = snprintf(msg, sizeof(msg), "re-measured %zu isolated verdict%s:", n, n == 1 ? "" : "s");
	for (size_t k = 0; k < c->sched.n_pairs && len > 0 && (size_t)len < sizeof(msg); k++) {
		const struct rt_sched_pair *pr = &c->sched.pairs[k];
		const struct rt_sched_point *a = &c->sched.pts[pr->inl], *b = &c->sched.pts[pr->non];
		int after = rt_sched_sign(&a->sum, &b->sum);

		if (!pr->remeasured)
			continue;
		if (shown++ == 4) {
			snprintf(msg + len, sizeof(msg) - (size_t)len, " ...");
			break;
		}
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, " %s/%s/%s %u B %c->%c",
				rt_opcode_name(a->cell.op), rt_qp_type_name(a->cell.qpt),
				a->cell.kind == RT_LAT_PINGPONG ? "pp" : "cqe", a->cell.msg_bytes,
				pr->sign_before > 0 ? '+' : '-',
				after > 0   ? '+'
				: after < 0 ? '-'
					    : '=');
	}
	note(c, msg);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of x[0..n), n <= 8 (scratch v: 8 doubles); NAN when n == 0 or any is NAN. */
static double median_of(const double *x, uint32_t n, double *v)
{
	if (n == 0 || n > 8)
		return NAN;
	for (uint32_t k = 0; k < n; k++)
		if (isnan(x[k]))
			return NAN;
	memcpy(v, x, n * sizeof(double));
	qsort(v, n, sizeof(double), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The signaling intervals of the sweep: powers of two up to half the send queue; returns how many. */
static uint32_t rate_ns(const struct rt_run *run, uint32_t *ns)
{
	uint32_t n_ns = 0;

	for (uint32_t n = 1; n <= run->sq_depth / 2 && n_ns < 32; n *= 2)
		ns[n_ns++] = n;
	return n_ns;
}

static int measure_rate(struct cal *c, uint64_t deadline, struct rt_rate_point *pts, size_t n_cells, const char *what,
			struct rt_error *err);

/* Keeps the points of pts[0..n) that were measured (interrupted before the first repetition reached them: not);
 * returns how many are left. */
static size_t drop_unmeasured(struct rt_rate_point *pts, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		if (pts[i].reps)
			pts[w++] = pts[i];
	return w;
}

/* The small-message band of the sweep (8, 64, 256 B inline and not, one WR per call) into run->rate. */
static int run_rate(struct cal *c, uint64_t deadline, struct rt_error *err)
{
	static const uint32_t want_sizes[] = { 8, 64, 256 };
	const struct rt_cal_opts *o = c->o;
	uint32_t sizes[3], n_sizes = 0, ns[32], n_ns;
	struct rt_run *run = c->run;
	size_t n_cells;
	int rc;

	for (size_t i = 0; i < 3; i++)
		if (want_sizes[i] <= run->max_inline_used && !(o->quick && i == 1))
			sizes[n_sizes++] = want_sizes[i];
	if (!n_sizes)
		sizes[n_sizes++] = run->max_inline_used ? run->max_inline_used : 8;
	n_ns = rate_ns(run, ns);
	/* the QP types of the sweep: RC, or on a device without RC (EFA) its datagram types: UD and SRD */
	enum rt_qp_type qpts[2];
	size_t n_qpts = 0;

	if (!c->no_rc)
		qpts[n_qpts++] = RT_QPT_RC;
	if (c->no_rc && c->ud)
		qpts[n_qpts++] = RT_QPT_UD;
	if (c->no_rc && c->srd)
		qpts[n_qpts++] = RT_QPT_SRD;
	n_cells = 0;
	for (int op = 0; op < RT_OP__COUNT; op++)
		n_cells += o->ops[op] && !(c->no_rc && op != RT_OP_SEND)
				   ? (size_t)n_sizes * (c->inline_refused[op] ? 1 : 2) * n_ns * n_qpts
				   : 0;
	run->rate = calloc(n_cells ? n_cells : 1, sizeof(*run->rate));
	run->n_rate = 0;
	if (!run->rate)
		return rt_error_set(err, ENOMEM, "out of memory");
	for (size_t q = 0; q < n_qpts; q++)
		for (int op = 0; op < RT_OP__COUNT; op++)
			for (uint32_t s = 0; o->ops[op] && !(c->no_rc && op != RT_OP_SEND) && s < n_sizes; s++)
				for (int inl = c->inline_refused[op] ? 0 : 1; inl >= 0; inl--)
					for (uint32_t k = 0; k < n_ns; k++) {
						struct rt_rate_point *r = &run->rate[run->n_rate++];

						r->op = (enum rt_opcode)op;
						r->qpt = qpts[q];
						r->msg_bytes = sizes[s];
						r->inl = inl;
						r->signal_interval = ns[k];
						r->sq_depth = run->sq_depth;
					}
	rc = measure_rate(c, deadline, run->rate, run->n_rate, "signaling", err);
	run->n_rate = drop_unmeasured(run->rate, run->n_rate);
	return rc;
}

/*
 * Measures the planned points pts[0..n_cells) (reps 0) in repetitions of seeded random order until deadline (the first
 * repetition completes unless the run's own deadline passes), and fills each one's rate, spread and CPU per message.
 * what names the phase in the progress and the notes. Returns 0 or the errno of a measurement with err.
 */
static int measure_rate(struct cal *c, uint64_t deadline, struct rt_rate_point *pts, size_t n_cells, const char *what,
			struct rt_error *err)
{
	const struct rt_cal_opts *o = c->o;
	uint32_t reps = o->quick ? 3 : 5;
	size_t *order = NULL;
	double(*mops)[8] = NULL, (*busy)[8] = NULL, (*post)[8] = NULL, rep_ns;
	bool untimed = false;
	int rc = 0;

	order = calloc(n_cells ? n_cells : 1, sizeof(*order));
	mops = calloc(n_cells ? n_cells : 1, sizeof(*mops));
	busy = calloc(n_cells ? n_cells : 1, sizeof(*busy));
	post = calloc(n_cells ? n_cells : 1, sizeof(*post));
	if (!order || !mops || !busy || !post) {
		rc = rt_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t rep = 0; rep < reps; rep++) {
		for (size_t i = 0; i < n_cells; i++)
			order[i] = i;
		for (size_t i = n_cells; i > 1; i--) {
			size_t j = (size_t)rt_rng_below(&c->rng, i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < n_cells; i++) {
			struct rt_rate_point *r = &pts[order[i]];
			struct rt_rate_rep rr;
			uint64_t now = rt_clock_mono_ns();
			double left = now < deadline ? (double)(deadline - now) : 0;

			/* the first repetition completes, so every point of the sweep has a rate, unless the run's own
			 * deadline passes (a very slow link) */
			if ((rep > 0 && left <= 0) || now >= c->deadline) {
				char msg[96];

				snprintf(msg, sizeof(msg), "budget too small: %zu of %zu %s points measured",
					 rep ? n_cells : i, n_cells, what);
				if (!rep)
					note(c, msg);
				goto out;
			}
			/* share what is left over the repetitions still to run: long enough to average over many
			 * completions, short enough to finish early when the budget is generous */
			rep_ns = left / ((double)(n_cells - i) + (double)n_cells * (reps - 1 - rep)) * 0.8;
			if (rep_ns > (o->quick ? 30e6 : 100e6))
				rep_ns = o->quick ? 30e6 : 100e6;
			if (rep_ns < 1e6)
				rep_ns = 1e6;

			/* a phase change per cell: cheap, and the responder sees that the client is alive; it also
			 * switches both sides to the cell's datagram QP (UD or SRD) on a device without RC */
			c->cli.dg_srd = r->qpt == RT_QPT_SRD;
			rc = rt_client_phase(&c->cli, RT_MODE_SINK, false, false, r->msg_bytes, err);
			c->cli.post_list = r->post_list;
			if (!rc && r->qps > 1) {
				/* the concurrency band: its own QPs and threads, the responder refilling their receives */
				atomic_store(&c->conc_running, true);
				rc = rt_conc_rate(c->conc, r->op, r->msg_bytes, r->inl, r->signal_interval, rep_ns, &rr,
						  err);
				atomic_store(&c->conc_running, false);
			} else if (!rc) {
				rc = rt_client_rate(&c->cli, r->op, r->msg_bytes, r->inl, r->signal_interval, rep_ns,
						    &rr, err);
			}
			c->cli.post_list = 0;
			if (rc)
				goto out;
			mops[order[i]][r->reps] = (double)rr.msgs / (rr.wall_ns / 1e3);
			/* busy CPU per message of this repetition; the thread's CPU time where calls cannot be timed */
			busy[order[i]][r->reps] =
				rr.msgs ? (rr.busy_timed ? rr.post_ns + rr.reap_ns : rr.cpu_ns) / (double)rr.msgs : 0;
			post[order[i]][r->reps] = rr.msgs && rr.busy_timed ? rr.post_ns / (double)rr.msgs : NAN;
			untimed |= !rr.busy_timed;
			r->reps++;
			r->msgs += rr.msgs;
			r->enomem += rr.enomem;
			progress(c, what, (double)(rep * n_cells + i + 1) / (double)(n_cells * reps));
		}
	}
out:
	for (size_t i = 0; mops && busy && post && i < n_cells; i++) {
		struct rt_rate_point *r = &pts[i];
		double v[8];

		if (!r->reps)
			continue;
		memcpy(v, mops[i], r->reps * sizeof(double));
		qsort(v, r->reps, sizeof(double), cmp_dbl);
		r->mops = r->reps % 2 ? v[r->reps / 2] : (v[r->reps / 2 - 1] + v[r->reps / 2]) / 2;
		r->mops_lo = v[0];
		r->mops_hi = v[r->reps - 1];
		/* medians over the repetitions, like the rate: a stall in one repetition does not move them */
		r->cpu_ns_per_msg = median_of(busy[i], r->reps, v);
		r->post_ns_per_msg = median_of(post[i], r->reps, v);
	}
	if (untimed && !strstr(c->notes, "no tsc"))
		note(c, "no tsc: rate cpu ns per msg is the sender thread's cpu time (spinning included)");
	free(order);
	free(mops);
	free(busy);
	free(post);
	return rc;
}

/*
 * The other load bands of the sweep into run->band_rate: large messages (o->large_sizes, non-inline, up to the
 * buffer), a post list of o->post_list WRs per call (64 B, or the largest inline size below it, inline when it fits)
 * and the concurrency band (c->conc: conc_qps QPs by conc_threads threads, one WR per call, the post list's size and
 * inlining), each over the same signaling intervals; the cells of all bands share the deadline in one seeded random
 * order. Nothing to do when all are off. Returns 0 or an errno with err.
 */
static int run_rate_bands(struct cal *c, uint64_t deadline, uint32_t max_msg, struct rt_error *err)
{
	const struct rt_cal_opts *o = c->o;
	struct rt_run *run = c->run;
	uint32_t ns[32], n_ns = rate_ns(run, ns), large[RT_ENGINE_MAX_LARGE], n_large = 0, pl_size;
	size_t n_cells = 0;
	int rc;

	for (size_t i = 0; i < o->n_large; i++)
		if (o->large_sizes[i] <= max_msg)
			large[n_large++] = o->large_sizes[i];
	pl_size = run->max_inline_used >= 64 || !run->max_inline_used ? 64 : run->max_inline_used;
	uint32_t n_pl = o->post_list > 1, n_conc = c->conc != NULL;

	for (int op = 0; op < RT_OP__COUNT; op++)
		n_cells += o->ops[op] ? (size_t)(n_large + n_pl + n_conc) * n_ns : 0;
	if (!n_cells)
		return 0;
	run->band_rate = calloc(n_cells, sizeof(*run->band_rate));
	run->n_band_rate = 0;
	if (!run->band_rate)
		return rt_error_set(err, ENOMEM, "out of memory");
	for (int op = 0; op < RT_OP__COUNT; op++)
		for (uint32_t s = 0; o->ops[op] && s < n_large + n_pl + n_conc; s++)
			for (uint32_t k = 0; k < n_ns; k++) {
				struct rt_rate_point *r = &run->band_rate[run->n_band_rate++];
				bool conc = s >= n_large + n_pl;

				r->op = (enum rt_opcode)op;
				r->qpt = RT_QPT_RC;
				r->msg_bytes = s < n_large ? large[s] : pl_size;
				r->inl = s >= n_large && pl_size <= run->max_inline_used && !c->inline_refused[op];
				r->post_list = s < n_large || conc ? 1 : o->post_list;
				r->qps = conc ? c->conc_qps : 1;
				r->threads = conc ? c->conc_threads : 1;
				r->signal_interval = ns[k];
				r->sq_depth = run->sq_depth;
			}
	atomic_store_explicit(&c->conc_bands, c->conc != NULL, memory_order_release);
	rc = measure_rate(c, deadline, run->band_rate, run->n_band_rate, "load bands", err);
	atomic_store_explicit(&c->conc_bands, false, memory_order_release);
	run->n_band_rate = drop_unmeasured(run->band_rate, run->n_band_rate);
	return rc;
}

/* The RNR counters' increases per phase: {"latency": {name: n}, "signaling": {...}}, or {} without counters. */
static json_t *rnr_json(const struct cal *c)
{
	json_t *o = json_object();

	if (!c->rnr[0].n) {
		json_object_set_new(o, "counters", json_string("none: the device exposes no rnr hw counters"));
		return o;
	}
	for (int ph = 0; ph < 2; ph++) {
		json_t *d = json_object();

		for (int i = 0; i < c->rnr[ph].n && i < c->rnr[ph + 1].n; i++)
			json_object_set_new(d, c->rnr[ph].name[i],
					    json_integer((json_int_t)(c->rnr[ph + 1].value[i] - c->rnr[ph].value[i])));
		json_object_set_new(o, ph ? "signaling" : "latency", d);
	}
	return o;
}

/* Reads the RNR counters into slot k (0 before the latency grid, 1 before the sweep, 2 after it); after the last,
 * notes a phase whose counters rose: the responder fell behind reposting receives (receiver-limited rates). */
static void rnr_snapshot(struct cal *c, int k)
{
	rt_devinfo_rnr_counters(c->run->dev.name, c->run->port_num, &c->rnr[k]);
	if (k == 0) {
		c->rnr_read = true;
		return;
	}
	for (int i = 0; i < c->rnr[k].n && i < c->rnr[k - 1].n; i++) {
		uint64_t d = c->rnr[k].value[i] - c->rnr[k - 1].value[i];
		char msg[200];

		if (c->rnr[k].value[i] <= c->rnr[k - 1].value[i])
			continue;
		snprintf(msg, sizeof(msg),
			 "rnr during the %s: %s +%llu (the responder fell behind reposting receives%s)",
			 k == 1 ? "latency grid" : "signaling sweep", c->rnr[k].name[i], (unsigned long long)d,
			 k == 2 ? ": send rates may be receiver-limited" : "");
		note(c, msg);
		break;
	}
}

static void set_params(struct cal *c)
{
	const struct rt_cal_opts *o = c->o;
	json_t *p = json_object(), *a = json_array();
	char ops[32] = "", qpts[16] = "", *s;

	for (int i = 0; i < RT_OP__COUNT; i++)
		if (o->ops[i])
			snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s", ops[0] ? "," : "",
				 rt_opcode_name((enum rt_opcode)i));
	snprintf(qpts, sizeof(qpts), "%s%s%s", c->no_rc ? "" : "rc", c->ud ? (c->no_rc ? "ud" : ",ud") : "",
		 c->srd ? (c->no_rc && !c->ud ? "srd" : ",srd") : "");
	for (size_t i = 0; i < c->n_sizes; i++)
		json_array_append_new(a, json_integer(c->sizes[i]));
	json_object_set_new(p, "ops", json_string(ops));
	json_object_set_new(p, "qp_types", json_string(qpts));
	json_object_set_new(p, "sizes", a);
	json_object_set_new(p, "budget_s", json_real(o->budget_s));
	json_object_set_new(p, "quick", json_boolean(o->quick));
	json_object_set_new(p, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(p, "numa", json_string(o->numa == RT_NUMA_REMOTE ? "remote" : "local"));
	json_object_set_new(p, "tclass", json_integer(c->addr.tclass));
	json_object_set_new(p, "sl", json_integer(c->addr.sl));
	json_object_set_new(p, "pkey_index", json_integer(c->addr.pkey_index));
	if (c->phase_s[0] > 0) {
		json_object_set_new(p, "latency_s", json_real(round(c->phase_s[0] * 100) / 100));
		json_object_set_new(p, "signaling_s", json_real(round(c->phase_s[1] * 100) / 100));
		json_object_set_new(p, "latency_rounds", json_integer(c->sched.rounds));
	}
	if (c->n_skipped) {
		json_t *sk = json_array();

		for (size_t i = 0; i < c->n_skipped; i++)
			json_array_append_new(sk, json_pack("{s:s, s:s}", "what", c->skipped[i].what, "reason",
							    c->skipped[i].reason));
		json_object_set_new(p, "skipped", sk);
	}
	if (c->conc) {
		json_t *cpus = json_array();

		for (uint32_t t = 0; t < c->conc_threads; t++)
			json_array_append_new(cpus, json_integer(c->conc_cpus[t]));
		json_object_set_new(p, "concurrency",
				    json_pack("{s:i, s:i, s:s, s:o, s:i, s:b, s:s}", "qps", (int)c->conc_qps, "threads",
					      (int)c->conc_threads, "send_cq", "per_thread", "cpus", cpus, "resp_cpu",
					      c->run->env.resp_cpu, "pin_refused", rt_conc_pin_refused(c->conc),
					      "reduced", c->conc_why));
	} else if (o->conc_qps > 1) {
		json_object_set_new(p, "concurrency",
				    json_pack("{s:s}", "none",
					      o->peer	       ? "two-node: the band is measured in loopback only"
					      : c->conc_why[0] ? c->conc_why
							       : "not measured"));
	}
	if (c->rnr_read)
		json_object_set_new(p, "rnr", rnr_json(c));
	if (c->notes[0])
		json_object_set_new(p, "notes", json_string(c->notes));
	s = json_dumps(p, JSON_COMPACT);
	if (s && strlen(s) >= sizeof(c->run->params)) {
		free(s);
		json_object_del(p, "sizes");
		s = json_dumps(p, JSON_COMPACT);
	}
	snprintf(c->run->params, sizeof(c->run->params), "%s", s ? s : "{}");
	free(s);
	json_decref(p);
}

/*
 * The device info found no RC max_inline_data: probes again to tell a device without inline data from one whose QP
 * creation failed (out of resources at that moment). Returns the max inline (> 0), or 0 with err set.
 */
static int reprobe_rc_inline(struct cal *c, struct rt_error *err)
{
	struct ibv_context *ctx = c->o->peer ? c->cm_id->verbs : c->ctx;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	uint32_t v = 0;
	int rc;

	if (!pd) {
		rc = errno ? errno : ENOMEM;
		rt_error_set(err, rc, "cannot allocate a protection domain on '%s': %s", c->run->dev.name,
			     strerror(rc));
		return 0;
	}
	rc = rt_devinfo_probe_max_inline(pd, IBV_QPT_RC, 1u << 16, &v, NULL);
	ibv_dealloc_pd(pd);
	if ((rc == EOPNOTSUPP || rc == EINVAL) && c->run->dev.max_inline_ud > 0)
		rt_error_set(err, EOPNOTSUPP,
			     "device '%s' has no rc qps (ibv_create_qp IBV_QPT_RC: %s; EFA offers UD and SRD only): "
			     "only ud can be calibrated, in loopback with --qp-type including ud",
			     c->run->dev.name, strerror(rc));
	else if (rc == EOPNOTSUPP || rc == EINVAL || (!rc && v == 0))
		rt_error_set(err, EOPNOTSUPP,
			     "device '%s' accepts no inline data on rc qps: there is no inline "
			     "threshold to calibrate",
			     c->run->dev.name);
	else if (rc)
		rt_error_set(err, rc, "cannot create an rc qp on '%s' to probe its max inline data: %s",
			     c->run->dev.name, strerror(rc));
	return rc ? 0 : (int)v;
}

static int choose_sizes(struct cal *c, struct rt_error *err)
{
	const struct rt_cal_opts *o = c->o;
	struct rt_run *run = c->run;
	int rc_max = run->dev.max_inline_rc;
	uint32_t cap = o->size_cap ? o->size_cap : RT_ENGINE_DEFAULT_SIZE_CAP, largest;

	if (rc_max < 1) {
		rc_max = reprobe_rc_inline(c, err);
		bool ud_ok = o->qpts[RT_QPT_UD] && run->dev.max_inline_ud > 0;
		bool srd_ok = o->qpts[RT_QPT_SRD] && run->dev.efa.efa && run->dev.max_inline_srd > 0;

		if (rc_max < 1 && err->code == EOPNOTSUPP && (ud_ok || srd_ok) && !o->peer && o->ops[RT_OP_SEND]) {
			/* no RC QPs (EFA): what the device has is measured, on UD and SRD (sizes up to the smaller max) */
			int mtu = (int)(128u << c->addr.mtu);
			char why[160];

			rt_error_clear(err);
			c->no_rc = true;
			rc_max = mtu;
			if (ud_ok && run->dev.max_inline_ud < rc_max)
				rc_max = run->dev.max_inline_ud;
			if (srd_ok && run->dev.max_inline_srd < rc_max)
				rc_max = run->dev.max_inline_srd;
			snprintf(why, sizeof(why), "the device has no rc qps (EFA: UD and SRD): send measured on %s",
				 ud_ok && srd_ok ? "ud and srd"
				 : ud_ok	 ? "ud only"
						 : "srd only");
			skip(c, "rc", why);
			if (o->ops[RT_OP_WRITE])
				skip(c, "write", "rdma write is measured on rc qps, which the device does not have");
			skip(c, "cq moderation", "measured on the rc send cq");
		} else if (rc_max < 1) {
			return err->code;
		} else {
			run->dev.max_inline_rc = rc_max;
		}
	}
	if (o->n_sizes) {
		for (size_t i = 0; i < o->n_sizes; i++)
			if (o->sizes[i] > (uint32_t)rc_max)
				return rt_error_set(err, EINVAL,
						    "size %u exceeds the device's max inline data (%d bytes)",
						    o->sizes[i], rc_max);
		memcpy(c->sizes, o->sizes, o->n_sizes * sizeof(uint32_t));
		c->n_sizes = o->n_sizes;
	} else {
		c->n_sizes = rt_sched_default_sizes((uint32_t)rc_max < cap ? (uint32_t)rc_max : cap, c->sizes,
						    RT_ENGINE_MAX_SIZES);
	}
	largest = c->sizes[c->n_sizes - 1];
	/* just enough inline for the largest size measured (a larger max_inline_data makes every WQE bigger), but at
	 * least what the refinement and the rate sweep may use */
	run->max_inline_used = largest;
	c->ud = false;
	if (o->qpts[RT_QPT_UD]) {
		if (o->peer)
			note(c, "ud is measured in loopback mode only");
		else if (run->dev.max_inline_ud < 1)
			skip(c, "ud", "the device accepts no ud qp with inline data");
		else {
			uint32_t mtu = 128u << c->addr.mtu; /* IBV_MTU_256 = 1 */

			c->ud_max = (uint32_t)run->dev.max_inline_ud;
			if (c->ud_max > mtu)
				c->ud_max = mtu;
			if (c->ud_max > largest)
				c->ud_max = largest;
			c->ud = true;
		}
	}
	c->srd = false;
	if (o->qpts[RT_QPT_SRD] && run->dev.efa.efa) {
		/* SRD QPs exist on EFA only (efadv); anywhere else there is nothing to skip */
		if (o->peer)
			note(c, "srd is measured in loopback mode only");
		else if (run->dev.max_inline_srd < 1)
			skip(c, "srd", "the device reports no inline buffer (efadv inline_buf_size 0)");
		else {
			uint32_t mtu = 128u << c->addr.mtu;

			c->srd_max = (uint32_t)run->dev.max_inline_srd;
			if (c->srd_max > mtu)
				c->srd_max = mtu;
			if (c->srd_max > largest)
				c->srd_max = largest;
			c->srd = true;
		}
	} else if (o->qpts[RT_QPT_SRD] && !o->qpts[RT_QPT_RC] && !o->qpts[RT_QPT_UD]) {
		return rt_error_set(err, EOPNOTSUPP, "device '%s' has no srd qps (SRD is AWS EFA's, through efadv: %s)",
				    run->dev.name,
				    run->dev.max_inline_srd_errno == ENOENT ? "libefa.so.1 not found"
									    : "not an EFA device");
	}
	return 0;
}

int rt_engine_calibrate(const struct rt_cal_opts *o, struct rt_run *run, struct rt_error *err)
{
	struct cal *c = calloc(1, sizeof(*c));
	struct rt_error local_err;
	struct rt_stop_rule rule;
	uint64_t lat_deadline, rate_deadline, t_lat;
	double per_sample_ns = 0;
	double budget_ns;
	int rc, n_ops;

	if (!err)
		err = &local_err;
	rt_error_clear(err);
	if (!c)
		return rt_error_set(err, ENOMEM, "out of memory");
	c->o = o;
	c->run = run;
	rt_rng_seed(&c->rng, o->seed ^ 0x5bd1e995u);
	run->status = RT_RUN_RUNNING;
	run->started_ns = realtime_ns();
	c->t_start = rt_clock_mono_ns();
	budget_ns = (o->budget_s > 0 ? o->budget_s : RT_ENGINE_DEFAULT_BUDGET_S) * 1e9;
	c->deadline = c->t_start + (uint64_t)budget_ns;
	rt_devinfo_node(&run->node);
	snprintf(run->env.mode, sizeof(run->env.mode), "%s", o->peer ? "two-node" : "loopback");
	if (o->peer)
		snprintf(run->env.peer, sizeof(run->env.peer), "%s", o->peer);

	if (o->peer) {
		rc = connect_peer(c, err);
		if (rc)
			goto fail;
		rc = rt_devinfo_query(c->cm_id->verbs, true, &run->dev, err);
		if (rc)
			goto fail;
		if ((o->dev_name && strcmp(o->dev_name, run->dev.name) != 0) ||
		    (o->port && o->port != c->cm_id->port_num)) {
			rc = rt_error_set(err, EINVAL,
					  "the route to '%s' goes through %s port %d, not the requested %s "
					  "port %d",
					  o->peer, run->dev.name, c->cm_id->port_num,
					  o->dev_name ? o->dev_name : run->dev.name,
					  o->port ? o->port : c->cm_id->port_num);
			goto fail;
		}
		rc = pick_port(c, c->cm_id->verbs, c->cm_id->port_num, err);
	} else {
		rc = open_device(c, err);
		if (rc)
			goto fail;
		rc = rt_devinfo_query(c->ctx, true, &run->dev, err);
		if (rc)
			goto fail;
		rc = pick_port(c, c->ctx, o->port, err);
		c->use_cm = o->connect == RT_CONNECT_CM ||
			    (o->connect == RT_CONNECT_AUTO && strcmp(run->dev.transport, "iWARP") == 0);
		if (!rc && c->use_cm)
			note(c,
			     o->connect == RT_CONNECT_CM
				     ? "connect: rdma_cm loopback to the node's own address (--connect cm)"
				     : "connect: rdma_cm loopback to the node's own address (iWARP: RC QPs connect only "
				       "through the iWARP CM)");
	}
	if (rc)
		goto fail;
	rc = choose_sizes(c, err);
	if (rc)
		goto fail;
	run->sq_depth = o->sq_depth ? o->sq_depth : (o->quick ? 128 : 256);
	if (run->dev.max_qp_wr > 0 && run->sq_depth > (uint32_t)run->dev.max_qp_wr)
		run->sq_depth = (uint32_t)run->dev.max_qp_wr;
	rc = pick_cpu(c, err);
	if (rc)
		goto fail;
	rt_clock_init(&c->clk, NULL, 20);
	{
		/* how finely this thread's CPU time advances (tick-based accounting makes cpu ns/op coarse) */
		uint64_t a = rt_clock_thread_cpu_ns(), b = a, t0 = rt_clock_mono_ns();

		while (b == a && rt_clock_mono_ns() - t0 < 50000000ull)
			b = rt_clock_thread_cpu_ns();
		if (b - a > 100000) {
			char msg[160];

			snprintf(msg, sizeof(msg),
				 "thread cpu time advances in steps of %.1f ms: cpu ns per op is "
				 "only meaningful averaged over many points",
				 (double)(b - a) / 1e6);
			note(c, msg);
		}
	}
	snprintf(run->env.clock, sizeof(run->env.clock), "%s", c->clk.name);
	run->env.tsc_ghz = c->clk.tsc_ghz;
	run->env.clock_tick_ns = c->clk.ns_per_tick;
	run->env.clock_resolution_ns = c->clk.resolution_ns;
	read_clocksource(run->env.clocksource, sizeof(run->env.clocksource));
	if (c->clk.resolution_ns > 1000) {
		char msg[200];

		/* a post takes ~1 us on hardware: a clock that cannot resolve that quantises every latency median */
		snprintf(msg, sizeof(msg),
			 "the clock (%s, clocksource %s) resolves only %.1f us: latencies are quantised to that step",
			 c->clk.name, run->env.clocksource[0] ? run->env.clocksource : "unknown",
			 c->clk.resolution_ns / 1e3);
		note(c, msg);
	}
	c->cli.ep = &c->cep;
	c->cli.clk = &c->clk;
	c->cli.stop = o->stop;
	c->cli.timeout_ns = 5e9;
	{
		uint32_t max_msg = c->sizes[c->n_sizes - 1] < 256 ? 256 : c->sizes[c->n_sizes - 1];

		/* the buffer also holds the largest message of the large-message band */
		for (size_t i = 0; i < o->n_large; i++)
			if (o->large_sizes[i] > max_msg)
				max_msg = o->large_sizes[i];
		c->max_msg = max_msg;
		rc = o->peer ? connect_peer_qp(c, max_msg, err) : connect_loopback(c, max_msg, err);
	}
	if (rc)
		goto fail;
	set_params(c);
	if (o->on_begin) {
		rc = o->on_begin(o->cb_ctx, run, err);
		if (rc)
			goto fail;
	}

	rc = preflight_inline(c, err);
	if (rc)
		goto fail;
	set_params(c);
	/* warm-up and a time estimate per sample */
	{
		double warm[64], cpu = 0;
		uint64_t t0 = rt_clock_mono_ns(), el;
		double per_sample, lat_budget;
		size_t n_pts;

		rc = rt_client_lat(&c->cli, RT_OP_SEND,
				   !c->no_rc ? RT_QPT_RC
				   : c->ud   ? RT_QPT_UD
					     : RT_QPT_SRD,
				   RT_LAT_PINGPONG, c->sizes[0], false, 64, warm, &cpu, err);
		if (rc)
			goto fail;
		el = rt_clock_mono_ns() - t0;
		per_sample = (double)el / 64 * 1.2;
		per_sample_ns = per_sample;
		if (o->quick)
			rule = (struct rt_stop_rule){ .min_samples = 50,
						      .max_samples = 1000,
						      .rel_tight = 0.05,
						      .rel_loose = 0.20,
						      .abs_floor_ns = 20,
						      .level = 0.95 };
		else
			rule = (struct rt_stop_rule){ .min_samples = 200,
						      .max_samples = 5000,
						      .rel_tight = 0.02,
						      .rel_loose = 0.10,
						      .abs_floor_ns = 20,
						      .level = 0.95 };
		rt_sched_init(&c->sched, &rule, o->seed);
		c->sched_init = true;
		c->sched.max_refine_bytes = run->max_inline_used;
		rc = plan_latency(c);
		if (rc) {
			rt_error_set(err, rc, "out of memory");
			goto fail;
		}
		/* budget: latency 65 %, signaling sweep 28 %, CQ moderation and teardown the rest */
		{
			uint64_t now = rt_clock_mono_ns();
			double left = now < c->deadline ? (double)(c->deadline - now) : 0;

			lat_deadline = now + (uint64_t)(left * LAT_SHARE);
			rate_deadline = now + (uint64_t)(left * RATE_SHARE);
			lat_budget = left * LAT_SHARE;
		}
		n_pts = c->sched.n_pts ? c->sched.n_pts : 1;
		/* round 0 (every point gets first_batch) should take at most 40 % of the latency budget; each block of
		 * a visit also costs a phase change, about 4 samples */
		{
			size_t blk = 16;
			double fb = lat_budget * 0.4 / ((double)n_pts * per_sample) * (double)blk / (double)(blk + 4);

			c->sched.block = blk;
			c->sched.first_batch = fb < 8			       ? 8
					       : fb > (double)rule.min_samples ? rule.min_samples
									       : (size_t)fb;
			if (c->sched.first_batch > blk)
				c->sched.first_batch -= c->sched.first_batch % blk;
			c->sched.batch = o->quick ? 64 : 128;
			/* the two rounds a pair needs before it stops are at least 5 % of the latency budget apart */
			c->sched.min_span_ns = (uint64_t)fmax(100e6, lat_budget * 0.05);
		}
	}
	bar_phase(c, 0, LAT_SHARE);
	progress(c, "latency", 0);
	t_lat = rt_clock_mono_ns();
	rnr_snapshot(c, 0);
	c->sched.hard_deadline_ns = lat_deadline + (rate_deadline - lat_deadline) / 2;
	rc = rt_sched_run(&c->sched, lat_deadline, sched_measure, sched_clock, sched_progress, c);
	{
		size_t planned = 0, got = 0;

		for (size_t i = 0; i < c->sched.n_pts; i++) {
			planned += !c->sched.pts[i].refined;
			got += !c->sched.pts[i].refined && c->sched.pts[i].n > 0;
		}
		if (got < planned) {
			char msg[128];

			snprintf(msg, sizeof(msg),
				 "budget too small: %zu of %zu latency points measured (%.1f ms per "
				 "ping-pong)",
				 got, planned, per_sample_ns / 1e6);
			note(c, msg);
		}
	}
	if (rc) {
		*err = c->meas_err;
		goto fail;
	}
	note_remeasured(c);
	rc = export_latency(c, o->quick ? RAW_KEEP_QUICK : RAW_KEEP_MAX);
	if (rc) {
		rt_error_set(err, rc, "out of memory");
		goto fail;
	}
	c->phase_s[0] = (double)(rt_clock_mono_ns() - t_lat) / 1e9;
	t_lat = rt_clock_mono_ns();
	bar_phase(c, LAT_SHARE, RATE_SHARE);
	rnr_snapshot(c, 1);
	{
		/* the load bands (large messages, post lists) take the last 40 % of the sweep's share */
		uint64_t now = rt_clock_mono_ns(), small_end = rate_deadline;
		bool bands = (o->n_large || o->post_list > 1 || c->conc) && !c->no_rc; /* the bands are rc */

		double bar_mid = bands ? LAT_SHARE + 0.6 * (RATE_SHARE - LAT_SHARE) : RATE_SHARE;

		if (bands && rate_deadline > now)
			small_end = now + (rate_deadline - now) * 6 / 10;
		bar_phase(c, LAT_SHARE, bar_mid); /* the bar never moves back: each band its part of the share */
		rc = run_rate(c, small_end, err);
		bar_phase(c, bar_mid, RATE_SHARE);
		if (!rc && bands)
			rc = run_rate_bands(c, rate_deadline, c->max_msg, err);
	}
	c->phase_s[1] = (double)(rt_clock_mono_ns() - t_lat) / 1e9;
	rnr_snapshot(c, 2);
	set_params(c);
	if (rc)
		goto fail;
	bar_phase(c, RATE_SHARE, 1);
	n_ops = 0;
	for (int op = 0; op < RT_OP__COUNT; op++)
		n_ops += o->ops[op];
	for (int op = 0, done = 0; op < RT_OP__COUNT && !c->no_rc; op++) {
		if (!o->ops[op])
			continue;
		progress(c, "cq moderation", (double)done++ / n_ops);
		rc = rt_client_cqmod(&c->cli, (enum rt_opcode)op, o->quick ? 50e6 : 150e6, &run->cqmod[op], err);
		if (rc)
			goto fail;
	}
	rc = rt_client_end(&c->cli, err);
	if (rc)
		goto fail;
	if (c->thr_started) {
		pthread_join(c->thr, NULL);
		c->thr_started = false;
		if (c->resp_dead) {
			*err = c->resp_err;
			rc = err->code ? err->code : EIO;
			goto fail;
		}
	}
	bar_phase(c, 1, 1);
	progress(c, "done", 1);
	run->status = RT_RUN_COMPLETE;
	teardown(c);
	run->ended_ns = realtime_ns();
	free(c);
	return 0;
fail:
	if (c->thr_started) {
		c->resp_stop = 1;
		pthread_join(c->thr, NULL);
		c->thr_started = false;
	}
	if (c->resp_dead && c->resp_err.code && rc != EINTR) {
		*err = c->resp_err;
		rc = err->code;
	}
	if (!err->code)
		rt_error_set(err, rc, "%s", strerror(rc));
	if (c->sched_init && !run->lat)
		export_latency(c, o->quick ? RAW_KEEP_QUICK : RAW_KEEP_MAX);
	run->status = rc == EINTR ? RT_RUN_INTERRUPTED : RT_RUN_FAILED;
	teardown(c);
	run->ended_ns = realtime_ns();
	free(c);
	return rc;
}
