// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for rtune's argument parsers: the input is split at newlines into an argument vector and run
 * through rtune's real dispatcher (cli/main.c, its main() renamed rt_fuzz_cli_main) for the commands that touch
 * neither devices nor the network nor other processes: show, history, export, import, tune, report. Not fuzzed:
 * devices (opens RDMA devices), calibrate and serve (devices, network, signal handlers), probe (forks and executes the
 * command it is given).
 *
 * Containment: at start-up the target makes a private temporary directory D (under $TMPDIR, else /dev/shm, else /tmp)
 * with D/seed (a store with one calibration run, one stored profile and that profile's JSON, made once) and D/work,
 * the working directory. Before every input D/work is emptied (subdirectories too) and refilled from D/seed, the
 * command runs with D/work as its working directory (the fuzzer's own is restored afterwards), and $RTUNE_DB, $HOME
 * and $XDG_STATE_HOME point into it. Inputs with an argument containing '/' or starting with ".." are skipped, so
 * every path the commands see (stores, -o, --html, import and report inputs) resolves inside D/work; standard input
 * is /dev/null (`import -` reads it, finds no document); SQLite has no other writer, so no busy wait. Standard output
 * goes to /dev/null; standard error too unless RTUNE_FUZZ_VERBOSE is set.
 * The first byte of the input picks the command (byte % 6 in the order above, '0' = show); the rest, after an optional
 * newline, is the argument list, one argument per line.
 *
 * Speed (issue 8 asks for a million executions): every input restores and opens a store, so the per-input cost is
 * file-system and allocator work, not the parsing under test. D lives on tmpfs (/dev/shm) by default, so the
 * commands' fsyncs (SQLite's WAL, the atomic exports) and the restore cost no disk I/O; and ASan's quarantine is
 * 64 MB instead of 256 MB (__asan_default_options below, ASAN_OPTIONS still overrides it): the heaviest inputs
 * (report over 24 directories) free about 28 MB, so a use after free within one input is still caught, while
 * freed memory is reused warm instead of the allocator faulting in fresh pages for every store open.
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_store.h"
#include "store/store_test_util.h"

#define MAX_ARGS 24
#define MAX_ARG_LEN 512

int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__asan_default_options(void);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int rt_fuzz_cli_main(int argc, char **argv);

static const char *const safe_cmds[] = { "show", "history", "export", "import", "tune", "report" };
#define N_CMDS (sizeof(safe_cmds) / sizeof(safe_cmds[0]))

static char top[4096], seed[4200], work[4200];
static int devnull = -1, saved_err = -1, home_fd = -1;
static bool verbose;

/* The seed: a store with one run (latency + rate points) and a profile of that run imported from this JSON (%s =
 * the run's uuid). */
#define SEED_PROFILE_FMT                                                                                                   \
	"{\"schema\":{\"name\":\"rtune-profile\",\"version\":\"1.0\"},\"rtune_version\":\"0.1.0\","                        \
	"\"node\":{\"hostname\":\"fuzz-host\",\"machine_id\":\"mid-fuzz-host\",\"hardware_signature\":"                    \
	"\"fnv1a64:0123456789abcdef\"},\"entries\":[{\"device\":\"rxe0\",\"guid\":\"0011:2233:4455:6677\",\"port\":1,"     \
	"\"opcode\":\"send\",\"qp_type\":\"rc\",\"inline_threshold\":96,\"max_inline_data\":128,\"signal_interval\":16,"   \
	"\"sq_depth\":256,\"cq_depth\":512,\"cq_moderation\":null,\"numa_node\":0,\"cpus\":\"0\",\"confidence\":\"high\"," \
	"\"reasons\":[{\"code\":\"crossover\",\"text\":\"inline wins up to 96 B\"}],\"measured_at\":"                      \
	"\"2026-11-29T13:00:00Z\",\"run_id\":\"%s\",\"app\":null}]}\n"

static void die(const char *what)
{
	perror(what);
	abort();
}

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4400];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		die(path);
	close(fd);
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name)
{
	char path[4400], buf[65536];
	ssize_t n;
	int in, out;

	snprintf(path, sizeof(path), "%s/%s", from_dir, name);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return; /* e.g. no -wal file */
	snprintf(path, sizeof(path), "%s/%s", to_dir, name);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		die(path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die(path);
	close(in);
	close(out);
}

/*
 * Removes everything in the directory open as dfd (closed here), subdirectories too: a command may make one (report
 * --group-profiles DIR writes its files into DIR). Entries are never followed: a symlink is unlinked, not entered.
 */
static void empty_fd(int dfd, const char *name)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d)
		die(name);
	while ((de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), de->d_name, 0))
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			die(de->d_name);
		empty_fd(sub, de->d_name);
		if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR))
			die(de->d_name);
	}
	closedir(d);
}

/* Empties dir, subdirectories too (empty_fd()); dies when it cannot. */
static void empty_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die(dir);
	empty_fd(fd, dir);
}

static void make_seed(void)
{
	char db[4400];
	struct rt_store *st;
	struct rt_error err;
	struct rt_run run;
	char doc[4096];
	int n;

	snprintf(db, sizeof(db), "%s/rtune.db", seed);
	tu_run(&run, "fuzz-host", "rxe0", 6, 4);
	if (rt_store_open(db, &st, &err) || rt_store_run_save(st, &run, &err)) {
		fprintf(stderr, "fuzz_cli: cannot make the seed store: %s\n", err.text);
		abort();
	}
	n = snprintf(doc, sizeof(doc), SEED_PROFILE_FMT, run.uuid);
	if (n < 0 || (size_t)n >= sizeof(doc) || rt_store_import_text(st, "seed", doc, (size_t)n, NULL, NULL, &err)) {
		fprintf(stderr, "fuzz_cli: cannot make the seed store: %s\n", err.text);
		abort();
	}
	rt_store_close(st); /* checkpoints the WAL: the seed is the .db file alone */
	rt_run_release(&run);
	write_file(seed, "p.json", doc, (size_t)n);
}

/* ASan's defaults for this target, read before main() in ASan builds (ignored otherwise); see "Speed" above. */
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=64";
}

/* Where D goes: $TMPDIR if set, else /dev/shm (tmpfs: no disk I/O, fsync is free) if usable, else /tmp. */
static const char *scratch_base(void)
{
	const char *base = getenv("TMPDIR");
	struct stat sb;

	if (base && *base)
		return base;
	if (!stat("/dev/shm", &sb) && S_ISDIR(sb.st_mode) && !access("/dev/shm", W_OK | X_OK))
		return "/dev/shm";
	return "/tmp";
}

static void cleanup(void)
{
	if (!top[0])
		return;
	/* flat by construction: D/seed and D/work hold files only */
	empty_dir(work);
	empty_dir(seed);
	if (rmdir(work) || rmdir(seed) || rmdir(top))
		fprintf(stderr, "fuzz_cli: could not remove %s\n", top);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char db[4400];

	(void)argc;
	(void)argv;
	snprintf(top, sizeof(top), "%s/rtune-fuzz-cli.XXXXXX", scratch_base());
	if (!mkdtemp(top))
		die("mkdtemp");
	snprintf(seed, sizeof(seed), "%s/seed", top);
	snprintf(work, sizeof(work), "%s/work", top);
	if (mkdir(seed, 0700) || mkdir(work, 0700))
		die("mkdir");
	atexit(cleanup);
	make_seed();
	snprintf(db, sizeof(db), "%s/rtune.db", work);
	setenv("RTUNE_DB", db, 1);
	setenv("HOME", work, 1);
	setenv("XDG_STATE_HOME", work, 1);
	unsetenv("RTUNE_PROFILE");
	home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (home_fd < 0)
		die("open .");
	verbose = getenv("RTUNE_FUZZ_VERBOSE") != NULL;
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || !freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "r", stdin))
		die("/dev/null");
	saved_err = dup(STDERR_FILENO);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *dummy[] = { (char *)"rtune", NULL };
	char *args[MAX_ARGS + 3];
	char *buf, *p, *end;
	const char *cmd;
	int argc = 0;

	if (size < 1 || size > MAX_ARGS * MAX_ARG_LEN)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	cmd = safe_cmds[data[0] % N_CMDS];
	/* "<command byte>\n" starts the argument list (so that seeds read well); any other second byte is an argument */
	if (size > 1 && data[1] == '\n') {
		data++;
		size--;
	}
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	args[argc++] = (char *)"rtune";
	args[argc++] = (char *)cmd;
	for (p = buf, end = buf + size - 1; p < end && argc < MAX_ARGS + 2;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));

		if (nl)
			*nl = '\0';
		/* containment: every path must resolve inside the working directory */
		if (strchr(p, '/') || !strncmp(p, "..", 2) || strlen(p) > MAX_ARG_LEN)
			goto out;
		args[argc++] = p;
		p = nl ? nl + 1 : end;
	}
	args[argc] = NULL;

	empty_dir(work);
	copy_file(seed, work, "rtune.db");
	copy_file(seed, work, "p.json");
	/* getopt keeps state across calls: reinitialise it as a fresh process would have it */
	optind = 0;
	opterr = 1;
	(void)getopt(1, dummy, "+");
	optind = 0;
	fflush(stderr);
	if (chdir(work))
		die("chdir");
	if (!verbose)
		dup2(devnull, STDERR_FILENO);
	rt_fuzz_cli_main(argc, args);
	fflush(stdout);
	fflush(stderr);
	if (!verbose)
		dup2(saved_err, STDERR_FILENO);
	/* back to where the fuzzer keeps its corpus and artifacts */
	if (fchdir(home_fd))
		die("fchdir");
out:
	free(buf);
	return 0;
}
