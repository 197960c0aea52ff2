// SPDX-License-Identifier: MIT
/*
 * `rtune agent`'s service loop. It sleeps in poll(2) on a signalfd (SIGTERM/SIGINT stop, SIGHUP re-reads the
 * configuration, SIGUSR1 asks for a calibration of every port), the kernel uevent socket (an RDMA device appears or
 * goes), an rtnetlink link socket (a netdev's MTU or state changes) and an inotify watch of the probe spool; the
 * poll timeout is the next scheduled pass (a busy device's retry, a profile reaching max_profile_age, the safety
 * rescan) or the systemd watchdog's half period. Each pass: spool import, device scan, per port due? / may
 * calibrate? (triggers.c), calibration and tuning in child processes of this same binary (`rtune calibrate`, `rtune
 * tune [--app]`: a crash or hang of the engine never takes the service down, SIGTERM reaches it at once, its memory
 * is returned when it exits, and the child dies with the agent through PR_SET_PDEATHSIG), then the publication.
 */
#include "agent.h"
#include "agent_log.h"
#include "config.h"
#include "devinfo.h"
#include "publish.h"
#include "rdmanl.h"
#include "rt_store.h"
#include "spool.h"
#include "triggers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS_TRACKED 64
#define CHILD_TERM_GRACE_MS 1500 /* SIGTERM to SIGKILL of a child; the agent itself is gone within 2 s */

struct port_state {
	char device[64];
	int port;
	int64_t retry_at; /* busy / quiet / failed: not before this (realtime s), 0 = whenever due */
	bool busy_logged; /* the busy line was told for the current wait */
	bool demand;	  /* asked for on demand but deferred (busy): still on demand at the retry */
	unsigned failed;  /* calibrations or tunings failed in a row: the retry backs off (busy_retry * 2^failed) */
};

struct agent {
	struct rt_agent_config cfg;
	const char *config_path;
	bool config_given;
	bool once, dry_run;
	char exe[PATH_MAX];
	char store_path[RT_AGENT_PATH_LEN];
	int sfd, ufd, rfd, ifd;
	sigset_t old_mask;
	volatile bool stop;
	bool reload, demand, spool_dirty, rescan;
	uint64_t watchdog_usec;
	struct port_state ports[MAX_PORTS_TRACKED];
	size_t n_ports;
	int64_t next_pass_at; /* realtime s */
	int64_t last_publish_at;
	int failures; /* --once: calibrations or publications that failed */
};

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int minute_of_day(void)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	return tm.tm_hour * 60 + tm.tm_min;
}

static void notify_status(struct agent *ag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notify_status(struct agent *ag, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	(void)ag;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", buf);
}

/* Handles the signals pending on the signalfd (never blocks). */
static void drain_signals(struct agent *ag, pid_t child)
{
	struct signalfd_siginfo si;

	while (read(ag->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			if (!ag->stop)
				rt_agent_log(RT_LOG_NOTICE, "%s: stopping", strsignal((int)si.ssi_signo));
			ag->stop = true;
			if (child > 0)
				kill(child, SIGTERM);
			break;
		case SIGHUP: ag->reload = true; break;
		case SIGUSR1: ag->demand = true; break;
		default: break; /* SIGCHLD: reaped by the waiter */
		}
	}
}

static void watchdog_ping(struct agent *ag, int64_t *last_ms)
{
	int64_t t = mono_ms();

	if (ag->watchdog_usec && (t - *last_ms) * 1000 >= (int64_t)ag->watchdog_usec / 2) {
		sd_notify(0, "WATCHDOG=1");
		*last_ms = t;
	}
}

/*
 * Runs argv (argv[0] = this rtune) as a child and waits for it, still answering signals and the watchdog. A stop
 * sends the child SIGTERM, then SIGKILL after CHILD_TERM_GRACE_MS. Returns its wait status, or -1 with errno.
 */
static int run_child(struct agent *ag, char *const *argv)
{
	int64_t wd_ms = mono_ms(), term_at = 0;
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() == 1)
			_exit(127);
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		/* the children's reports go to stdout: the journal gets their errors (stderr) and the agent's lines */
		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		sigprocmask(SIG_SETMASK, &ag->old_mask, NULL);
		execv(ag->exe, argv);
		_exit(127);
	}
	for (;;) {
		struct pollfd pfd = { .fd = ag->sfd, .events = POLLIN };
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return -1;
		if (ag->stop && !term_at) {
			kill(pid, SIGTERM);
			term_at = mono_ms();
		}
		if (term_at && mono_ms() - term_at > CHILD_TERM_GRACE_MS)
			kill(pid, SIGKILL);
		poll(&pfd, 1, term_at ? 50 : 1000);
		if (pfd.revents & POLLIN)
			drain_signals(ag, pid);
		watchdog_ping(ag, &wd_ms);
	}
}

static struct port_state *port_state(struct agent *ag, const char *device, int port)
{
	for (size_t i = 0; i < ag->n_ports; i++)
		if (!strcmp(ag->ports[i].device, device) && ag->ports[i].port == port)
			return &ag->ports[i];
	if (ag->n_ports == MAX_PORTS_TRACKED)
		return &ag->ports[MAX_PORTS_TRACKED - 1];
	memset(&ag->ports[ag->n_ports], 0, sizeof(ag->ports[0]));
	snprintf(ag->ports[ag->n_ports].device, sizeof(ag->ports[0].device), "%s", device);
	ag->ports[ag->n_ports].port = port;
	return &ag->ports[ag->n_ports++];
}

static bool device_wanted(const struct rt_agent_config *c, const char *name)
{
	if (!c->n_devices)
		return true;
	for (size_t i = 0; i < c->n_devices; i++)
		if (!strcmp(c->devices[i], name))
			return true;
	return false;
}

static void schedule(struct agent *ag, int64_t at)
{
	if (!ag->next_pass_at || at < ag->next_pass_at)
		ag->next_pass_at = at;
}

/* Marks runs left "running" by a process that is gone (a killed agent's calibration) as interrupted. */
static void mark_interrupted(struct rt_store *st)
{
	struct rt_store_run_summary *v = NULL;
	struct rt_error err = { 0 };
	size_t n = 0;

	if (rt_store_run_list(st, NULL, &v, &n, &err)) {
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].stored_status != RT_RUN_RUNNING || v[i].status != RT_RUN_INTERRUPTED)
			continue;
		if (rt_store_run_finish(st, v[i].id, RT_RUN_INTERRUPTED, &err))
			rt_agent_log(RT_LOG_ERR, "%s", err.text);
		else
			rt_agent_log(RT_LOG_WARNING, "%s/%d: run %s was interrupted (its process is gone): marked",
				     v[i].device, v[i].port_num, v[i].uuid);
	}
	free(v);
}

/* The newest run of device/port in v (NULL: none). */
static const struct rt_store_run_summary *last_run(const struct rt_store_run_summary *v, size_t n, const char *dev,
						   int port)
{
	const struct rt_store_run_summary *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, dev) && v[i].port_num == port &&
		    (!best || v[i].started_ns >= best->started_ns))
			best = &v[i];
	return best;
}

/* Calibrates and tunes device/port; returns 0 when both succeeded. */
static int calibrate_port(struct agent *ag, const char *dev, int port, const char *why)
{
	char port_s[16], budget_s[16], *argv[32];
	int64_t t0 = mono_ms();
	int argc = 0, status;

	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(budget_s, sizeof(budget_s), "%u", ag->cfg.budget_s);
	argv[argc++] = (char *)"rtune";
	argv[argc++] = (char *)"calibrate";
	argv[argc++] = (char *)"-d";
	argv[argc++] = (char *)dev;
	argv[argc++] = (char *)"-i";
	argv[argc++] = port_s;
	argv[argc++] = (char *)"--budget";
	argv[argc++] = budget_s;
	argv[argc++] = (char *)"--db";
	argv[argc++] = ag->store_path;
	for (size_t i = 0; i < ag->cfg.n_calibrate_args && argc < 30; i++)
		argv[argc++] = ag->cfg.calibrate_args[i];
	argv[argc] = NULL;
	rt_agent_log(RT_LOG_NOTICE, "%s/%d: calibrating (%s), budget %u s", dev, port, why, ag->cfg.budget_s);
	notify_status(ag, "calibrating %s/%d", dev, port);
	status = run_child(ag, argv);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rt_agent_log(RT_LOG_ERR, "%s/%d: calibration %s after %.1f s (%s %d)", dev, port,
			     ag->stop ? "interrupted" : "failed", (double)(mono_ms() - t0) / 1e3,
			     status >= 0 && WIFSIGNALED(status) ? "signal" : "exit",
			     status < 0		   ? -1
			     : WIFSIGNALED(status) ? WTERMSIG(status)
						   : WEXITSTATUS(status));
		return EIO;
	}
	rt_agent_log(RT_LOG_INFO, "%s/%d: calibrated in %.1f s (budget %u s)", dev, port,
		     (double)(mono_ms() - t0) / 1e3, ag->cfg.budget_s);
	argc = 0;
	argv[argc++] = (char *)"rtune";
	argv[argc++] = (char *)"tune";
	argv[argc++] = (char *)"-d";
	argv[argc++] = (char *)dev;
	argv[argc++] = (char *)"--db";
	argv[argc++] = ag->store_path;
	argv[argc] = NULL;
	status = run_child(ag, argv);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rt_agent_log(RT_LOG_ERR, "%s/%d: tune failed (exit %d)", dev, port,
			     status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return EIO;
	}
	return 0;
}

/* Re-tunes device's newest complete run for app (its histograms were just imported). */
static int tune_app(struct agent *ag, const char *dev, const char *app)
{
	char *argv[] = { (char *)"rtune", (char *)"tune", (char *)"-d",	  (char *)dev, (char *)"--app",
			 (char *)app,	  (char *)"--db", ag->store_path, NULL };
	int status = run_child(ag, argv);

	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rt_agent_log(RT_LOG_ERR, "%s: re-tune for '%s' failed (status %d)", dev, app, status);
		return EIO;
	}
	rt_agent_log(RT_LOG_NOTICE, "%s: re-tuned for application '%s' (its probe histograms)", dev, app);
	return 0;
}

/* Fills a decision from a stored entry (the rest is completed by the caller). */
static void decision_of(const struct rt_profile_entry *e, struct rt_agent_decision *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->device, sizeof(d->device), "%s", e->device);
	snprintf(d->guid, sizeof(d->guid), "%s", e->guid);
	d->port = e->port;
	d->opcode = e->opcode;
	d->qp_type = e->qp_type;
	snprintf(d->app, sizeof(d->app), "%s", e->app);
	d->inline_threshold = e->inline_threshold;
	d->max_inline_data = e->max_inline_data;
	d->signal_interval = e->signal_interval;
	d->sq_depth = e->sq_depth;
	d->cq_depth = e->cq_depth;
	d->confidence = e->confidence;
	d->inline_confidence = e->inline_confidence;
	d->signal_confidence = e->signal_confidence;
	snprintf(d->inline_verdict, sizeof(d->inline_verdict), "%s",
		 e->inline_threshold == 0		     ? "never"
		 : e->inline_threshold >= e->max_inline_data ? "always"
							     : "threshold");
	snprintf(d->run_id, sizeof(d->run_id), "%s", e->run_id);
	d->measured_at = e->measured_at;
	d->numa_node = e->numa_node;
}

/* Writes the decision's (possibly guarded) values back into the entry that goes into the document. */
static void entry_apply(struct rt_profile_entry *e, const struct rt_agent_decision *d, const char *why)
{
	e->inline_threshold = d->inline_threshold;
	e->max_inline_data = d->max_inline_data;
	e->signal_interval = d->signal_interval;
	e->sq_depth = d->sq_depth;
	e->cq_depth = d->cq_depth;
	e->inline_confidence = d->inline_confidence;
	e->signal_confidence = d->signal_confidence;
	e->confidence = d->confidence;
	if (why[0] && e->n_reasons < RT_PROFILE_MAX_REASONS) {
		struct rt_profile_reason *r = &e->reasons[e->n_reasons++];

		snprintf(r->code, sizeof(r->code), "%s",
			 d->pinned_inline || d->pinned_signal ? "agent_pinned" : "agent_kept_confident");
		snprintf(r->text, sizeof(r->text), "%s", why);
	}
}

static const struct rt_profile_entry *prev_entry(const struct rt_profile *p, const struct rt_agent_decision *d)
{
	for (size_t i = 0; p && i < rt_profile_entry_count(p); i++) {
		const struct rt_profile_entry *e = rt_profile_entry_at(p, i);

		if (!strcmp(e->device, d->device) && e->port == d->port && e->opcode == d->opcode &&
		    e->qp_type == d->qp_type)
			return e;
	}
	return NULL;
}

/* Builds the publication from the store's current profile and publishes it. changed: calibrations or re-tunes in
 * this pass, with their triggers (logged with every change). */
static int publish(struct agent *ag, struct rt_store *st, const char *why_now)
{
	struct rt_store_pin *pins = NULL, *all_pins = NULL;
	struct rt_store_run_summary *runs = NULL;
	struct rt_store_tuned *changes = NULL;
	struct rt_profile_entry *v = NULL;
	struct rt_agent_decision *dec = NULL;
	struct rt_store_publication *rec = NULL;
	struct rt_device_info *devs = NULL;
	struct rt_profile *prev = NULL;
	struct rt_agent_publication pub;
	struct rt_node_info node, local;
	struct rt_error err = { 0 };
	char key[RT_STORE_NODE_KEY_LEN], sig[32] = "", *text = NULL;
	size_t n = 0, n_pins = 0, n_runs = 0, n_changes = 0, n_devs = 0, n_rec = 0, len = 0;
	int rc;

	rt_devinfo_node(&local);
	rt_store_node_key(&local, key);
	if ((rc = rt_store_get_profile(st, key, NULL, &v, &n, &node, sig, &err))) {
		if (rc == ENOENT)
			rt_agent_log(RT_LOG_INFO, "nothing to publish yet: no profile for this node");
		else
			rt_agent_log(RT_LOG_ERR, "%s", err.text);
		return rc == ENOENT ? 0 : rc;
	}
	if (rt_store_pin_list(st, &pins, &n_pins, &err))
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
	all_pins = calloc(n_pins + ag->cfg.n_pins + 1, sizeof(*all_pins));
	if (all_pins) {
		if (n_pins)
			memcpy(all_pins, pins, n_pins * sizeof(*pins));
		memcpy(all_pins + n_pins, ag->cfg.pins, ag->cfg.n_pins * sizeof(*all_pins));
	}
	rt_store_run_list(st, NULL, &runs, &n_runs, &err);
	rt_store_profile_changes(st, NULL, &changes, &n_changes, &err);
	rt_store_node_devices(st, key, &devs, &n_devs, &err);
	if (ag->cfg.publish.profile[0] && access(ag->cfg.publish.profile, F_OK) == 0 &&
	    rt_profile_load(ag->cfg.publish.profile, &prev, &err))
		rt_agent_log(RT_LOG_WARNING, "previous publication unreadable, publishing afresh: %s", err.text);
	dec = calloc(n ? n : 1, sizeof(*dec));
	rec = calloc(n ? n : 1, sizeof(*rec));
	if (!dec || !rec || !all_pins) {
		rc = ENOMEM;
		rt_agent_log(RT_LOG_ERR, "publish: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct rt_agent_decision *d = &dec[i], pd;
		const struct rt_profile_entry *pe;
		const struct rt_store_pin *pin;
		const struct rt_store_run_summary *lr;
		char why[512], was[48];
		unsigned mask;

		decision_of(&v[i], d);
		pe = prev_entry(prev, d);
		for (size_t k = 0; k < n_changes; k++)
			if (!strcmp(changes[k].e.run_id, v[i].run_id) && !strcmp(changes[k].e.device, d->device) &&
			    changes[k].e.port == d->port && changes[k].e.opcode == d->opcode &&
			    changes[k].e.qp_type == d->qp_type)
				snprintf(d->signal_verdict, sizeof(d->signal_verdict), "%s", changes[k].signal_verdict);
		if (!d->signal_verdict[0])
			snprintf(d->signal_verdict, sizeof(d->signal_verdict), "not_measured");
		for (size_t k = 0; k < n_devs; k++)
			if (!strcmp(devs[k].name, d->device))
				snprintf(d->hw_class, sizeof(d->hw_class), "%04x:%04x:%s", devs[k].vendor_id,
					 devs[k].vendor_part_id, devs[k].fw_ver);
		if ((lr = last_run(runs, n_runs, d->device, d->port))) {
			d->last_cal_result = lr->status == RT_RUN_COMPLETE	? RT_AGENT_CAL_OK
					     : lr->status == RT_RUN_INTERRUPTED ? RT_AGENT_CAL_INTERRUPTED
					     : lr->status == RT_RUN_FAILED	? RT_AGENT_CAL_FAILED
										: RT_AGENT_CAL_NONE;
			if (lr->ended_ns > lr->started_ns)
				d->last_cal_duration_s = (double)(lr->ended_ns - lr->started_ns) / 1e9;
			d->last_cal_at = lr->ended_ns / 1000000000;
		}
		if (port_state(ag, d->device, d->port)->busy_logged)
			d->last_cal_result = RT_AGENT_CAL_BUSY;
		if (pe) {
			decision_of(pe, &pd);
			snprintf(pd.inline_verdict, sizeof(pd.inline_verdict), "%s", d->inline_verdict);
			snprintf(pd.signal_verdict, sizeof(pd.signal_verdict), "%s", d->signal_verdict);
		}
		pin = rt_agent_pin_find(all_pins, n_pins + ag->cfg.n_pins, d->device, d->port, d->opcode, d->qp_type);
		mask = rt_agent_guard(d, pe ? &pd : NULL, pin, why, sizeof(why));
		d->age_s = now_s() > d->measured_at ? now_s() - d->measured_at : 0;
		entry_apply(&v[i], d, why);
		snprintf(d->change, sizeof(d->change), "%s",
			 !pe	      ? "first"
			 : (mask & 3) ? why_now
			 : pin	      ? "pinned"
				      : "unchanged");
		snprintf(d->change_reason, sizeof(d->change_reason), "%s", why[0] ? why : why_now);
		if (!pe || (mask & 3)) {
			struct rt_store_publication *r = &rec[n_rec++];

			snprintf(r->device, sizeof(r->device), "%s", d->device);
			r->port = d->port;
			r->opcode = d->opcode;
			r->qp_type = d->qp_type;
			snprintf(r->app, sizeof(r->app), "%s", d->app);
			r->inline_threshold = d->inline_threshold;
			r->signal_interval = d->signal_interval;
			snprintf(r->change, sizeof(r->change), "%s", d->change);
			snprintf(r->reason, sizeof(r->reason), "%s%s%s%s%s%s", d->change,
				 strcmp(d->change, why_now) ? " (pass: " : "",
				 strcmp(d->change, why_now) ? why_now : "", strcmp(d->change, why_now) ? ")" : "",
				 why[0] ? "; " : "", why);
			r->dry_run = ag->dry_run;
			if (pe)
				snprintf(was, sizeof(was), " (was %u, %u)", pe->inline_threshold, pe->signal_interval);
			else
				was[0] = '\0';
			rt_agent_log(RT_LOG_NOTICE,
				     "%s%s/%d %s/%s%s%s: inline_threshold %u (%s) signal_interval %u (%s)%s: %s",
				     ag->dry_run ? "dry run: would publish " : "publish ", d->device, d->port,
				     rt_profile_opcode_name(d->opcode), rt_profile_qp_type_name(d->qp_type),
				     d->app[0] ? " app " : "", d->app, d->inline_threshold,
				     rt_profile_confidence_name(d->inline_confidence), d->signal_interval,
				     rt_profile_confidence_name(d->signal_confidence), was, r->reason);
		} else if (why[0]) {
			rt_agent_log(RT_LOG_INFO, "%s/%d %s/%s: %s", d->device, d->port,
				     rt_profile_opcode_name(d->opcode), rt_profile_qp_type_name(d->qp_type), why);
		}
	}
	if ((rc = rt_store_profile_document(st, &node, sig, v, n, &text, &len, &err))) {
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
		goto out;
	}
	memset(&pub, 0, sizeof(pub));
	snprintf(pub.hostname, sizeof(pub.hostname), "%s", node.hostname);
	snprintf(pub.machine_id, sizeof(pub.machine_id), "%s", node.machine_id);
	snprintf(pub.node_key, sizeof(pub.node_key), "%s", key);
	snprintf(pub.hw_signature, sizeof(pub.hw_signature), "%s", sig);
	snprintf(pub.cpu_model, sizeof(pub.cpu_model), "%s", local.cpu_model);
	snprintf(pub.rtune_version, sizeof(pub.rtune_version), "%s", RTUNE_VERSION);
	pub.generated_at = now_s();
	pub.profile_json = text;
	pub.profile_json_len = len;
	pub.decisions = dec;
	pub.n_decisions = n;
	ag->cfg.publish.dry_run = ag->dry_run;
	if ((rc = rt_agent_publish_all(&pub, &ag->cfg, &err))) {
		ag->failures++;
	} else {
		ag->last_publish_at = now_s();
		if (!ag->dry_run)
			rt_agent_log(RT_LOG_INFO, "published %zu entr%s (%s)", n, n == 1 ? "y" : "ies", why_now);
	}
	if (n_rec && !ag->dry_run && rc == 0 && rt_store_publication_add(st, rec, n_rec, &err))
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
out:
	rt_profile_free(prev);
	free(text);
	free(dec);
	free(rec);
	free(pins);
	free(all_pins);
	free(runs);
	free(changes);
	free(devs);
	free(v);
	return rc;
}

/* Newest measured_at of the stored entries of dev/port (0 when none). */
static int64_t measured_at_of(const struct rt_profile_entry *v, size_t n, const char *dev, int port)
{
	int64_t t = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, dev) && v[i].port == port && v[i].measured_at > t)
			t = v[i].measured_at;
	return t;
}

/* One pass: spool, devices, calibrations, publication. */
static void pass(struct agent *ag, bool on_demand)
{
	struct rt_agent_spool_result spool = { 0 };
	struct rt_device_info *devs = NULL, *stored = NULL;
	struct rt_profile_entry *prof = NULL;
	struct rt_store *st = NULL;
	struct rt_node_info local;
	struct rt_error err = { 0 };
	char key[RT_STORE_NODE_KEY_LEN], why_now[256] = "";
	size_t n_prof = 0, n_stored = 0;
	int n_devs = 0, calibrated = 0, retuned = 0;

	rt_agent_log(RT_LOG_DEBUG, "pass%s", on_demand ? " (on demand)" : "");
	ag->next_pass_at = 0;
	schedule(ag, now_s() + ag->cfg.rescan_s);
	if (rt_store_open(ag->store_path[0] ? ag->store_path : NULL, &st, &err)) {
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
		ag->failures++;
		schedule(ag, now_s() + 60);
		return;
	}
	snprintf(ag->store_path, sizeof(ag->store_path), "%s", rt_store_path(st));
	mark_interrupted(st);
	if (ag->cfg.spool[0]) {
		if (rt_agent_spool_import(st, ag->cfg.spool, now_s(), &spool, &err))
			rt_agent_log(RT_LOG_ERR, "%s", err.text);
		if (spool.pending)
			schedule(ag, now_s() + 30);
	}
	if (rt_devinfo_list(false, &devs, &n_devs, &err)) {
		rt_agent_log(RT_LOG_ERR, "%s", err.text);
		n_devs = 0;
	}
	rt_devinfo_node(&local);
	rt_store_node_key(&local, key);
	for (int i = 0; i < n_devs && !ag->stop; i++) {
		const struct rt_device_info *d = &devs[i];

		if (!device_wanted(&ag->cfg, d->name))
			continue;
		free(prof);
		prof = NULL;
		n_prof = 0;
		free(stored);
		stored = NULL;
		n_stored = 0;
		rt_store_get_profile(st, key, d->name, &prof, &n_prof, NULL, NULL, &err);
		rt_store_node_devices(st, key, &stored, &n_stored, &err);
		for (int p = 0; p < d->port_count && p < RT_MAX_PORTS && !ag->stop; p++) {
			int port = d->ports[p].port_num, busy = 0;
			struct rt_agent_facts now_f, old_f;
			const struct rt_agent_facts *old = NULL;
			struct port_state *ps = port_state(ag, d->name, port);
			int64_t measured = measured_at_of(prof, n_prof, d->name, port);
			bool demand = on_demand || ps->demand;
			char why[600], gate_why[256];
			enum rt_agent_trigger trig;
			enum rt_agent_gate gate;

			rt_agent_facts_of(d, port, &now_f);
			for (size_t k = 0; k < n_stored; k++)
				if (!strcmp(stored[k].name, d->name)) {
					rt_agent_facts_of(&stored[k], port, &old_f);
					old = &old_f;
				}
			trig = rt_agent_due(&now_f, old, measured, now_s(), ag->cfg.max_age_s, demand, why,
					    sizeof(why));
			if (trig == RT_AGENT_TRIG_NONE) {
				ps->busy_logged = false;
				if (ag->cfg.max_age_s && measured)
					schedule(ag, measured + (int64_t)ag->cfg.max_age_s + 1);
				continue;
			}
			if (!on_demand && ps->retry_at > now_s()) {
				/* not before the retry time (a busy device is not looked at again each event) */
				schedule(ag, ps->retry_at);
				continue;
			}
			if (ag->cfg.require_idle && rt_agent_qp_count(d->name, getpid(), &busy, &err)) {
				rt_agent_log(RT_LOG_WARNING, "%s: %s", d->name, err.text);
				busy = -1;
			}
			gate = rt_agent_may_calibrate(&ag->cfg, &now_f, busy, minute_of_day(), demand, gate_why,
						      sizeof(gate_why));
			if (gate != RT_AGENT_GO) {
				if (!ps->busy_logged || gate != RT_AGENT_WAIT_BUSY)
					rt_agent_log(RT_LOG_NOTICE, "%s/%d: due (%s) but not now: %s; retry in %u s",
						     d->name, port, why, gate_why, ag->cfg.busy_retry_s);
				ps->busy_logged = gate == RT_AGENT_WAIT_BUSY;
				ps->demand = demand && gate == RT_AGENT_WAIT_BUSY;
				ps->retry_at = now_s() + ag->cfg.busy_retry_s;
				schedule(ag, ps->retry_at);
				continue;
			}
			ps->busy_logged = false;
			if (ag->dry_run) {
				rt_agent_log(RT_LOG_NOTICE, "dry run: would calibrate %s/%d (%s; %s)", d->name, port,
					     why, gate_why);
				continue;
			}
			snprintf(why_now, sizeof(why_now), "%s", rt_agent_trigger_name(trig));
			{
				char both[900];

				snprintf(both, sizeof(both), "%s; %s", why, gate_why);
				if (calibrate_port(ag, d->name, port, both)) {
					int64_t wait = (int64_t)ag->cfg.busy_retry_s
						       << (ps->failed < 6 ? ps->failed : 6);

					ag->failures++;
					ps->failed++;
					ps->retry_at = now_s() + wait;
					rt_agent_log(RT_LOG_WARNING,
						     "%s/%d: %u failure%s in a row: next attempt in %lld s", d->name,
						     port, ps->failed, ps->failed == 1 ? "" : "s", (long long)wait);
					schedule(ag, ps->retry_at);
				} else {
					calibrated++;
					ps->retry_at = 0;
					ps->failed = 0;
					ps->demand = false;
				}
			}
		}
	}
	for (size_t a = 0; a < spool.n_apps && !ag->stop && !ag->dry_run; a++)
		for (int i = 0; i < n_devs && !ag->stop; i++)
			if (device_wanted(&ag->cfg, devs[i].name) && tune_app(ag, devs[i].name, spool.apps[a]) == 0)
				retuned++;
	if (retuned && !calibrated)
		snprintf(why_now, sizeof(why_now), "app_histogram");
	if (!why_now[0])
		snprintf(why_now, sizeof(why_now), "%s", on_demand ? "on_demand" : "unchanged");
	if (!ag->stop)
		publish(ag, st, why_now);
	notify_status(ag, "idle: %d device%s, %d calibrated, %d re-tuned in the last pass", n_devs,
		      n_devs == 1 ? "" : "s", calibrated, retuned);
	free(prof);
	free(stored);
	free(devs);
	rt_store_close(st);
}

/* Loads the configuration (at start and on SIGHUP). A bad file at start is fatal; on SIGHUP it is logged and the
 * running configuration kept. */
static int load_config(struct agent *ag, bool startup)
{
	struct rt_agent_config c;
	struct rt_error err = { 0 };
	int rc;

	rc = rt_agent_config_load(ag->config_path, &c, &err);
	if (rc == ENOENT && !ag->config_given) {
		rt_agent_config_defaults(&c);
		rc = 0;
	}
	if (rc) {
		rt_agent_log(RT_LOG_ERR, "%s%s", err.text, startup ? "" : " (keeping the running configuration)");
		return rc;
	}
	ag->cfg = c;
	snprintf(ag->store_path, sizeof(ag->store_path), "%s", c.store);
	if (ag->ifd >= 0) {
		close(ag->ifd);
		ag->ifd = -1;
	}
	if (c.spool[0]) {
		ag->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (ag->ifd >= 0 && inotify_add_watch(ag->ifd, c.spool, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
			rt_agent_log(RT_LOG_WARNING, "cannot watch spool '%s': %s (read at each pass)", c.spool,
				     strerror(errno));
			close(ag->ifd);
			ag->ifd = -1;
		}
	}
	rt_agent_log(RT_LOG_INFO, "configuration %s: store '%s', spool '%s', profile '%s', budget %u s, max age %llu s",
		     c.path[0] && access(c.path, F_OK) == 0 ? c.path : "(built-in defaults)",
		     c.store[0] ? c.store : "(default)", c.spool[0] ? c.spool : "(none)",
		     c.publish.profile[0] ? c.publish.profile : "(off)", c.budget_s, (unsigned long long)c.max_age_s);
	return 0;
}

/* Removes temporary files a killed writer left next to the published profile (".<base>.XXXXXX"). */
static void clean_temps(const char *path)
{
	char dir[RT_AGENT_PATH_LEN], prefix[300];
	const char *slash = strrchr(path, '/');
	struct dirent *de;
	DIR *d;

	if (!slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	snprintf(prefix, sizeof(prefix), ".%s.", slash + 1);
	if (!(d = opendir(dir[0] ? dir : "/")))
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)) && strlen(de->d_name) == strlen(prefix) + 6) {
			char p[RT_AGENT_PATH_LEN + 300];

			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			if (unlink(p) == 0)
				rt_agent_log(RT_LOG_WARNING, "removed '%s', left by an interrupted write", p);
		}
	closedir(d);
}

int rt_agent_run(const struct rt_agent_opts *o)
{
	struct agent *ag = calloc(1, sizeof(*ag));
	struct rt_error err = { 0 };
	sigset_t mask;
	int64_t wd_ms = mono_ms();
	ssize_t n;
	int code = 0;

	if (!ag) {
		rt_agent_log(RT_LOG_ERR, "out of memory");
		return 1;
	}
	ag->sfd = ag->ufd = ag->rfd = ag->ifd = -1;
	ag->config_path = o->config ? o->config : RT_AGENT_CONFIG_DEFAULT;
	ag->config_given = o->config != NULL;
	ag->once = o->once;
	ag->dry_run = o->dry_run;
	if (o->self_exe)
		snprintf(ag->exe, sizeof(ag->exe), "%s", o->self_exe);
	else if ((n = readlink("/proc/self/exe", ag->exe, sizeof(ag->exe) - 1)) > 0)
		ag->exe[n] = '\0';
	if (load_config(ag, true)) {
		free(ag);
		return 2;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &ag->old_mask);
	ag->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ag->sfd < 0) {
		rt_agent_log(RT_LOG_ERR, "signalfd: %s", strerror(errno));
		free(ag);
		return 1;
	}
	if (!ag->once) {
		if ((ag->ufd = rt_agent_uevent_open(&err)) < 0)
			rt_agent_log(RT_LOG_WARNING, "%s: new devices are seen at the next rescan only", err.text);
		if ((ag->rfd = rt_agent_rtnl_open(&err)) < 0)
			rt_agent_log(RT_LOG_WARNING, "%s: MTU changes are seen at the next rescan only", err.text);
		if (sd_watchdog_enabled(0, &ag->watchdog_usec) <= 0)
			ag->watchdog_usec = 0;
	}
	if (ag->cfg.publish.profile[0])
		clean_temps(ag->cfg.publish.profile);
	if (!ag->once)
		sd_notify(0, "READY=1\nSTATUS=first pass");
	rt_agent_log(RT_LOG_INFO, "started (pid %d%s%s)", (int)getpid(), ag->once ? ", one pass" : "",
		     ag->dry_run ? ", dry run" : "");
	pass(ag, ag->once);
	while (!ag->once && !ag->stop) {
		struct pollfd pfd[4] = { { .fd = ag->sfd, .events = POLLIN },
					 { .fd = ag->ufd, .events = POLLIN },
					 { .fd = ag->rfd, .events = POLLIN },
					 { .fd = ag->ifd, .events = POLLIN } };
		int64_t wait_ms = (ag->next_pass_at - now_s()) * 1000;

		if (wait_ms < 0)
			wait_ms = 0;
		if (ag->watchdog_usec && wait_ms > (int64_t)ag->watchdog_usec / 2000)
			wait_ms = (int64_t)ag->watchdog_usec / 2000;
		if (wait_ms > INT_MAX)
			wait_ms = INT_MAX;
		if (poll(pfd, 4, (int)wait_ms) < 0 && errno != EINTR) {
			rt_agent_log(RT_LOG_ERR, "poll: %s", strerror(errno));
			code = 1;
			break;
		}
		watchdog_ping(ag, &wd_ms);
		if (pfd[0].revents & POLLIN)
			drain_signals(ag, 0);
		if (ag->stop)
			break;
		if (((pfd[1].revents & POLLIN) && rt_agent_events_drain(ag->ufd, 1)) ||
		    ((pfd[2].revents & POLLIN) && rt_agent_events_drain(ag->rfd, 0))) {
			/* let the device settle (GIDs, netdev attach) before looking */
			rt_agent_log(RT_LOG_DEBUG, "device or link event: rescan in 1 s");
			schedule(ag, now_s() + 1); /* never later: a stream of events must not postpone the pass */
		}
		if (pfd[3].revents & POLLIN) {
			char buf[4096];

			while (read(ag->ifd, buf, sizeof(buf)) > 0)
				;
			schedule(ag, now_s() + 3); /* the writer's exit, then the 2 s "too new" rule */
		}
		if (ag->reload) {
			ag->reload = false;
			rt_agent_log(RT_LOG_NOTICE, "SIGHUP: re-reading '%s'", ag->config_path);
			sd_notify(0, "RELOADING=1");
			load_config(ag, false);
			sd_notify(0, "READY=1");
			ag->next_pass_at = now_s();
		}
		if (ag->demand) {
			ag->demand = false;
			rt_agent_log(RT_LOG_NOTICE, "SIGUSR1: calibrating every port on demand");
			pass(ag, true);
			continue;
		}
		if (now_s() >= ag->next_pass_at)
			pass(ag, false);
	}
	sd_notify(0, "STOPPING=1");
	rt_agent_log(RT_LOG_INFO, "stopped");
	if (ag->once && ag->failures)
		code = 1;
	if (ag->sfd >= 0)
		close(ag->sfd);
	if (ag->ufd >= 0)
		close(ag->ufd);
	if (ag->rfd >= 0)
		close(ag->rfd);
	if (ag->ifd >= 0)
		close(ag->ifd);
	free(ag);
	return code;
}
