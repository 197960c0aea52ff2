// SPDX-License-Identifier: MIT
/*
 * bench_report: `rtune report` at fleet scale. Generates 100,000 synthetic node profiles of the realistic shape
 * (tests/unit/report's fleet generator, fg_realistic: 8 hardware groups, 3-4 entries per device, 1-2 devices, laid
 * out as `rtune export` writes them, with the 1.3 measured evidence, a firmware upgrade under way, near misses and
 * planted outliers) as JSON files, then in a child process reads them all, analyzes, and writes the table, JSON and
 * HTML: wall time and the child's peak RSS against the targets (<= 3 s, <= 500 MB), with the CPU time (all threads)
 * per phase and in total, and the load average before and after (the machine is shared: wall time depends on the
 * load, CPU time much less). Then the fleet-store workflow (docs/report.md): the same files imported once into a
 * fleet store (rt_store_import_files, as `rtune import DIR...` does) and the report over that store. Prints figures
 * and exits 0 (targets are reported, never enforced).
 * usage: bench_report [NODES] [TMPDIR]
 *        bench_report report PATH   (the report alone over an existing fleet directory or store)
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
		printf("  %s: %ld nodes, %zu groups, %zu outlier nodes (%zu entries), %zu stale or missing; wall/CPU: read %.2f/%.2f s, analyze %.2f/%.2f s, "
		       "write text+json+html (%.1f MB page) %.2f/%.2f s\n",
		       what, n, rt_report_group_count(r), rt_report_outlier_node_count(r), rt_report_outlier_count(r),
		       rt_report_stale_count(r), b - a, cb - ca, c - b, cc - cb, len / 1e6, now_s() - c, cpu_s() - cc);
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
	fflush(stdout); /* in order with the children's lines when stdout is a file */
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
	size_t n, bytes = 0, entries = 0;
	double t0 = now_s();
	int rc;

	if (fg_build(&g->o, &v, &n))
		return ENOMEM;
	rc = fg_write_dir(g->dir, v, n);
	for (size_t i = 0; i < n; i++) {
		bytes += v[i].len;
		for (const char *p = v[i].json; (p = strstr(p, "\"opcode\"")); p++)
			entries++;
	}
	printf("  generated and wrote %zu profiles (%.0f MB, %.1f KB and %.2f entries per profile on average) in %.2f "
	       "s%s\n",
	       n, bytes / 1e6, n ? bytes / 1e3 / n : 0, n ? (double)entries / n : 0, now_s() - t0,
	       rc ? ": write FAILED" : "");
	fg_free(v, n);
	return rc;
}

/* Counts the files that failed (rt_store_import_files' report callback). */
static void import_told(void *ctx, const struct rt_import_result *res, size_t n)
{
	size_t *failed = ctx;

	for (size_t i = 0; i < n; i++)
		*failed += res[i].rc != 0;
}

/* The fleet-store workflow's import: every file of the generated fleet into one store, as `rtune import DIR...`. */
static int import_files(void *arg)
{
	struct gen_args *g = arg;
	struct rt_store *st = NULL;
	struct rt_error err;
	char **paths = NULL;
	size_t n = 0, cap = 0, failed = 0;
	double t0;
	int rc;

	for (int gi = 0; gi < g->o.groups; gi++)
		for (int i = 0; i < g->o.nodes_per_group; i++) {
			char p[4300];

			if (n == cap) {
				char **np = realloc(paths, (cap = cap ? cap * 2 : 1024) * sizeof(*np));

				if (!np)
					return ENOMEM;
				paths = np;
			}
			snprintf(p, sizeof(p), "%s/g%d/g%d-node%04d.json", g->dir, gi, gi, i);
			if (!(paths[n++] = strdup(p)))
				return ENOMEM;
		}
	if (rt_store_open(g->db, &st, &err)) {
		printf("  store: %s\n", err.text);
		return 1;
	}
	t0 = now_s();
	rc = rt_store_import_files(st, (const char *const *)paths, n, 2, 500, import_told, &failed);
	printf("  fleet store import (rt_store_import_files, 2 workers, 500 per transaction, as rtune import): %zu "
	       "profiles in %.2f s = %.0f profiles/s; %zu failed\n",
	       n, now_s() - t0, n / (now_s() - t0), failed);
	rt_store_close(st);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
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
	if (argc == 3 && !strcmp(argv[1], "report")) {
		/* the report alone over an existing fleet (a directory, a fleet store): to measure again without generating */
		printf("bench_report: report over %s; %ld CPUs, load average %.1f\n", argv[2],
		       sysconf(_SC_NPROCESSORS_ONLN), load1());
		return report_child(argv[2], argv[2], 3, 500) ? 1 : 0;
	}
	int nodes = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100000, groups = 8;
	const char *base = argc > 2 ? argv[2] : "/tmp";
	struct gen_args g = { .o = { .seed = 1,
				     .groups = groups,
				     .nodes_per_group = nodes / groups,
				     .outliers_per_group = 5,
				     .now = (int64_t)time(NULL),
				     .stale_ordinary = 3,
				     .missing_device = 2 } };
	char dir[4096], fleet[4200], db[4200];
	double load[1] = { 0 };

	snprintf(dir, sizeof(dir), "%s/rtune-bench-report.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("bench_report: mkdtemp");
		return 0;
	}
	if (getloadavg(load, 1) < 1)
		load[0] = -1;
	fg_realistic(&g.o);
	printf("bench_report: %d synthetic node profiles of the realistic shape (%d groups, 3-4 entries per device, 1-2 "
	       "devices, indented) in %s; %ld CPUs, load average %.1f (wall times depend on it; CPU times do not)\n",
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
		report_child("JSON directory", fleet, 3, 500);
		/* the documented way to report on a large fleet repeatedly: import once, report from the store */
		if (in_child(import_files, &g) == 0)
			report_child("fleet store (imported once)", db, 3, 500);
	}
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		printf("  could not remove %s\n", dir);
	return 0;
}
