// SPDX-License-Identifier: MIT
/*
 * bench_report: `rtune report` at fleet scale. Generates 100,000 synthetic node profiles (tests/unit/report's fleet
 * generator: 8 hardware groups, planted outliers, 2 entries per node) as JSON files, then in a child process reads
 * them all, analyzes, and writes the table, JSON and HTML: wall time and the child's peak RSS against the targets
 * (<= 5 s, <= 500 MB), with the CPU time (all threads) per phase and in total, and the load average before and after
 * (the machine is shared: wall time depends on the load, CPU time much less). Also the store's import throughput
 * (rt_store_import_text of 10,000 profiles) and the report over that store. Prints figures and exits 0 (targets are
 * reported, never enforced).
 * usage: bench_report [NODES] [TMPDIR]
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fleet_gen.h"
#include "rt_report.h"
#include "rt_store.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time (user + system) of this process, all threads. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double load1(void)
{
	double load[1];

	return getloadavg(load, 1) < 1 ? -1 : load[0];
}

/* Runs the report over path in a child; prints time and the child's peak RSS. */
static int report_child(const char *what, const char *path, double target_s, double target_mb)
{
	struct rusage ru;
	int status;
	pid_t pid;
	double load_before = load1(), t0 = now_s(), dt, cpu;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		struct rt_report *r = NULL;
		struct rt_error err;
		FILE *null = fopen("/dev/null", "w");
		char *page = NULL;
		size_t len = 0;
		long n;
		double a, b, c, ca, cb, cc;

		if (!null || rt_report_create(NULL, &r))
			_exit(1);
		a = now_s();
		ca = cpu_s();
		n = rt_report_add_path(r, path);
		b = now_s();
		cb = cpu_s();
		if (n <= 0 || rt_report_analyze(r, &err))
			_exit(1);
		c = now_s();
		cc = cpu_s();
		if (rt_report_write_text(r, null) || rt_report_write_json(r, null) ||
		    rt_report_render_html(r, &page, &len))
			_exit(1);
		printf("  %s: %ld nodes, %zu groups, %zu outliers; wall/CPU: read %.2f/%.2f s, analyze %.2f/%.2f s, "
		       "write text+json+html (%.1f MB page) %.2f/%.2f s\n",
		       what, n, rt_report_group_count(r), rt_report_outlier_count(r), b - a, cb - ca, c - b, cc - cb,
		       len / 1e6, now_s() - c, cpu_s() - cc);
		fflush(stdout);
		_exit(0);
	}
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("  %s: report child failed\n", what);
		return 1;
	}
	dt = now_s() - t0;
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("  %s: report total %.2f s wall (target <= %.0f s: %s), %.2f s CPU (user+sys, all threads; %.2f s per "
	       "CPU on %ld CPUs), peak RSS %.0f MB (target <= %.0f MB: %s); load average %.1f before, %.1f after\n",
	       what, dt, target_s, dt <= target_s ? "met" : "MISSED", cpu, ncpu > 0 ? cpu / (double)ncpu : cpu, ncpu,
	       ru.ru_maxrss / 1024.0, target_mb, ru.ru_maxrss / 1024.0 <= target_mb ? "met" : "MISSED", load_before,
	       load1());
	return 0;
}

/* Runs fn(arg) in a child process, so the generator's memory never counts in the report's peak RSS. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		int rc = fn(arg);

		fflush(stdout);
		_exit(rc ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return EIO;
	return WEXITSTATUS(status);
}

struct gen_args {
	struct fg_opts o;
	const char *dir, *db;
};

static int gen_files(void *arg)
{
	struct gen_args *g = arg;
	struct fg_node *v;
	size_t n, bytes = 0;
	double t0 = now_s();
	int rc;

	if (fg_build(&g->o, &v, &n))
		return ENOMEM;
	rc = fg_write_dir(g->dir, v, n);
	for (size_t i = 0; i < n; i++)
		bytes += v[i].len;
	printf("  generated and wrote %zu profiles (%.0f MB) in %.2f s%s\n", n, bytes / 1e6, now_s() - t0,
	       rc ? ": write FAILED" : "");
	fg_free(v, n);
	return rc;
}

static int gen_import(void *arg)
{
	struct gen_args *g = arg;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct fg_node *v;
	size_t n, added = 0, total = 0;
	double t0, dt;

	if (fg_build(&g->o, &v, &n))
		return ENOMEM;
	if (rt_store_open(g->db, &st, &err)) {
		printf("  store: %s\n", err.text);
		fg_free(v, n);
		return 1;
	}
	t0 = now_s();
	/* as `rtune import` does: batch mode, flushed every 500 profiles */
	if (rt_store_batch(st, true, &err))
		printf("  batch mode: %s\n", err.text);
	for (size_t i = 0; i < n; i++) {
		if (rt_store_import_text(st, v[i].hostname, v[i].json, v[i].len, &added, NULL, &err) ||
		    (i % 500 == 499 && rt_store_batch_flush(st, &err))) {
			printf("  import: %s\n", err.text);
			break;
		}
		total += added;
	}
	if (rt_store_batch(st, false, &err))
		printf("  batch end: %s\n", err.text);
	dt = now_s() - t0;
	printf("  store import (rt_store_import_text in batch mode): %zu profiles (%zu entries) in %.2f s = "
	       "%.0f profiles/s\n",
	       n, total, dt, n / dt);
	rt_store_close(st);
	fg_free(v, n);
	return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	int nodes = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100000, groups = 8;
	const char *base = argc > 2 ? argv[2] : "/tmp";
	struct gen_args g = { .o = { .seed = 1,
				     .groups = groups,
				     .nodes_per_group = nodes / groups,
				     .outliers_per_group = 5,
				     .now = (int64_t)time(NULL),
				     .with_hardware = true,
				     .entries_per_node = 2 } };
	char dir[4096], fleet[4200], db[4200];
	double load[1] = { 0 };

	snprintf(dir, sizeof(dir), "%s/rtune-bench-report.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("bench_report: mkdtemp");
		return 0;
	}
	if (getloadavg(load, 1) < 1)
		load[0] = -1;
	printf("bench_report: %d synthetic node profiles (%d groups, 2 entries each) in %s; %ld CPUs, load average %.1f "
	       "(wall times depend on it; CPU times do not)\n",
	       nodes, groups, dir, sysconf(_SC_NPROCESSORS_ONLN), load[0]);
	snprintf(fleet, sizeof(fleet), "%s/fleet", dir);
	snprintf(db, sizeof(db), "%s/fleet.db", dir);
	g.dir = fleet;
	g.db = db;
	if (in_child(gen_files, &g) == 0) {
		double t = now_s();

		/* the generator's files are written back first: the report is measured reading profiles that are on disk,
		 * not competing with the writeback of files written a second ago */
		sync();
		printf("  written back (sync) in %.2f s\n", now_s() - t);
		report_child("JSON directory", fleet, 5, 500);
	}
	g.o.nodes_per_group = (nodes < 10000 ? nodes : 10000) / groups;
	if (in_child(gen_import, &g) == 0)
		report_child("store of 10,000 imported nodes", db, 5, 500);
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		printf("  could not remove %s\n", dir);
	return 0;
}
