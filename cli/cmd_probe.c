// SPDX-License-Identifier: MIT
/*
 * `rtune probe`: runs an unmodified RDMA application with librtune_probe.so preloaded, collects the JSON file each of
 * its processes wrote, prints on stderr what it sent (per opcode class and QP type: messages, bytes, inline, signaled;
 * per QP type its QPs and SQ-full ENOMEM), stores the SEND and RDMA WRITE message-size histograms as the application's
 * (`rtune tune --app NAME`) and exits with the application's status, like a shell: the application's standard output
 * stays the application's. With --apply the probe also applies a profile (raises max_inline_data, inlines small
 * SEND/RDMA WRITE WRs); with RTUNE_APPLY_ADAPTIVE=1 each QP's inline controller, its moves included, is stored too.
 */
#include "cli.h"
#include "spool.h"
#include "rt_out.h"
#include "rt_probe_reader.h"
#include "rt_store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
	"usage: rtune probe [--db PATH] [--name APP] [--apply PROFILE] [--out FILE] [--no-store] -- CMD [ARGS...]\n"
	"\n"
	"Run CMD with the rtune probe preloaded (LD_PRELOAD=librtune_probe.so): record, per QP and opcode, the message\n"
	"sizes it posts, how many were inline and signaled, its send-queue-full ENOMEM events and sampled post->completion\n"
	"latencies, then store the message-size histograms as the application's (for 'rtune tune --app APP').\n"
	"\n"
	"  --db PATH        store to use (default: $RTUNE_DB, else the per-user or system default)\n"
	"  --name APP       name to store the histograms under (default: CMD's base name)\n"
	"  --apply PROFILE  also apply the profile: raise max_inline_data at QP creation and set IBV_SEND_INLINE on\n"
	"                   SEND/RDMA WRITE WRs up to its inline_threshold (RTUNE_INLINE_THRESHOLD=BYTES overrides)\n"
	"  --out FILE       keep the probe's JSON (one process: FILE; several: FILE.<pid> each), replacing a regular\n"
	"                   file atomically; '-' writes it to standard output after CMD ended\n"
	"  --no-store       do not write to the store\n"
	"  -h, --help       this text\n"
	"\n"
	"Environment passed to the probe: RTUNE_PROBE_SAMPLE=K (time 1 in K signaled sends, 0 = off, default 64).\n"
	"The probe library is found through $RTUNE_PROBE_LIB, next to this rtune (build tree) or in the install libdir.\n"
	"What rtune probe prints goes to standard error; CMD's standard output is CMD's alone.\n"
	"exit codes: CMD's own exit status (128+N when a signal N killed it), else 1 when CMD succeeded but rtune\n"
	"failed after it (nothing recorded, the store or --out not written); when CMD did not run: 2 usage, 1 failure,\n"
	"127 CMD not found, 126 CMD not executable\n";

/* Finds librtune_probe.so: $RTUNE_PROBE_LIB, the build tree next to this executable, the install directory. */
static int find_probe_lib(char *out, size_t len)
{
	const char *env = getenv("RTUNE_PROBE_LIB");
	char exe[PATH_MAX], *dir;
	ssize_t n;
	const char *rel[] = { "../probe/preload/librtune_probe.so",
			      "../" RTUNE_INSTALL_LIBDIR "/rtune/librtune_probe.so" };

	if (env && *env) {
		if (access(env, R_OK))
			return errno;
		snprintf(out, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		dir = dirname(exe);
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			char cand[PATH_MAX * 2];

			snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);
			if (!access(cand, R_OK) && realpath(cand, out))
				return 0;
		}
	}
	snprintf(out, len, "%s/rtune/librtune_probe.so", RTUNE_INSTALL_FULL_LIBDIR);
	return access(out, R_OK) ? ENOENT : 0;
}

/* Copies src to dst with the shared output writer (rt_out.h: '-' standard output, a regular file replaced atomically, a
 * new one 0600, a FIFO or device written in place); returns 0 or an errno with err set. */
static int copy_file(const char *src, const char *dst, struct rt_error *err)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), ret;
	struct rt_out out;
	ssize_t n;

	if (in < 0)
		return rt_error_set(err, errno, "cannot read '%s': %s", src, strerror(errno));
	if ((ret = rt_out_open(dst, 0600, &out, err))) {
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if ((ret = rt_out_write(&out, buf, (size_t)n, err)))
			break;
	if (n < 0)
		ret = rt_error_set(err, errno, "cannot read '%s': %s", src, strerror(errno));
	close(in);
	if (ret) {
		rt_out_abort(&out);
		return ret;
	}
	return rt_out_commit(&out, err);
}

/* One line per (QP type, opcode class) the application used; each QP type's QPs and SQ-full ENOMEM; samples. */
static void print_summary(const char *app, const struct rt_probe_summary *sum)
{
	char types[8][16];
	size_t n_types = 0;
	bool any = false;

	/* the QP types in the order the probe met them ("RC", "UD", "UC", "XRC_SEND", ...), at most 8 */
	for (size_t i = 0; i < sum->n_qps; i++) {
		size_t t = 0;

		while (t < n_types && strcmp(types[t], sum->qps[i].qp_type))
			t++;
		if (t == n_types && n_types < sizeof(types) / sizeof(types[0]))
			snprintf(types[n_types++], sizeof(types[0]), "%s", sum->qps[i].qp_type);
	}
	for (size_t t = 0; t < n_types; t++) {
		char qpt[16];
		uint64_t n_qps = 0, sq_full = 0, wc_errors = 0;
		size_t k;

		for (k = 0; k < sizeof(qpt) - 1 && types[t][k]; k++)
			qpt[k] = (char)tolower((unsigned char)types[t][k]);
		qpt[k] = '\0';
		for (int op = 0; op < RT_PROBE_OP__COUNT; op++) {
			struct rt_probe_op_summary o = { 0 };

			for (size_t i = 0; i < sum->n_qps; i++) {
				const struct rt_probe_op_summary *q = &sum->qps[i].op[op];

				if (strcmp(sum->qps[i].qp_type, types[t]))
					continue;
				o.wrs += q->wrs;
				o.bytes += q->bytes;
				o.inline_wrs += q->inline_wrs;
				o.signaled_wrs += q->signaled_wrs;
			}
			if (!o.wrs)
				continue;
			any = true;
			fprintf(stderr,
				"rtune probe: %s %s/%s: %llu messages, %llu bytes, %llu inline, %llu signaled\n", app,
				rt_probe_op_name((enum rt_probe_op)op), qpt, (unsigned long long)o.wrs,
				(unsigned long long)o.bytes, (unsigned long long)o.inline_wrs,
				(unsigned long long)o.signaled_wrs);
		}
		for (size_t i = 0; i < sum->n_qps; i++)
			if (!strcmp(sum->qps[i].qp_type, types[t])) {
				n_qps++;
				sq_full += sum->qps[i].sq_full;
				wc_errors += sum->qps[i].wc_errors;
			}
		fprintf(stderr, "rtune probe: %s %s: %llu QP%s, %llu SQ-full ENOMEM, %llu error completions\n", app,
			qpt, (unsigned long long)n_qps, n_qps == 1 ? "" : "s", (unsigned long long)sq_full,
			(unsigned long long)wc_errors);
	}
	if (!any)
		fprintf(stderr, "rtune probe: %s posted no work requests\n", app);
	uint64_t n = 0, sum_ns = 0, min_ns = UINT64_MAX, max_ns = 0;

	for (size_t i = 0; i < sum->n_qps; i++) {
		const struct rt_probe_qp_summary *q = &sum->qps[i];

		if (!q->lat_samples)
			continue;
		n += q->lat_samples;
		sum_ns += q->lat_sum_ns;
		min_ns = q->lat_min_ns < min_ns ? q->lat_min_ns : min_ns;
		max_ns = q->lat_max_ns > max_ns ? q->lat_max_ns : max_ns;
	}
	if (n)
		fprintf(stderr,
			"rtune probe: %s post->completion latency (sampled): %llu samples, mean %.1f us, min %.1f us, "
			"max %.1f us\n",
			app, (unsigned long long)n, (double)sum_ns / (double)n / 1e3, (double)min_ns / 1e3,
			(double)max_ns / 1e3);
	if (sum->drops)
		fprintf(stderr, "rtune probe: %llu records were dropped by the probe (see 'drops' in the JSON)\n",
			(unsigned long long)sum->drops);
}

static int store_histograms(const char *db, const char *app, const struct rt_probe_summary *sum)
{
	struct rt_store *st = NULL;
	struct rt_node_info node;
	struct rt_error err = { 0 };
	int ret, stored = 0;
	size_t n_ctl = 0;

	ret = rt_store_open(db, &st, &err);
	if (ret) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	rt_store_local_node(&node);
	ret = rt_agent_store_probe_summary(st, &node, app, sum, &stored, &err);
	if (ret) {
		rt_cli_error("%s", err.text);
		rt_store_close(st);
		return RT_EXIT_FAIL;
	}
	if (stored)
		fprintf(stderr,
			"rtune probe: stored %d histogram%s of '%s' in '%s' (SEND and RDMA WRITE on RC and UD QPs)\n",
			stored, stored == 1 ? "" : "s", app, rt_store_path(st));
	for (size_t i = 0; i < sum->n_qps; i++)
		n_ctl += sum->qps[i].ctl.present;
	if (n_ctl)
		fprintf(stderr, "rtune probe: stored the adaptive inline controller of %zu QP%s of '%s' (rtune show)\n",
			n_ctl, n_ctl == 1 ? "" : "s", app);
	rt_store_close(st);
	return RT_EXIT_OK;
}

/*
 * Runs argv with the probe. Returns its wait status; or -1 with *exec_err the errno when argv[0] could not be run
 * (told through a close-on-exec pipe, so the application's own 127 is never mistaken for it), or -1 with *exec_err 0
 * and errno when rtune could not start it.
 */
static int run_app(char **argv, const char *lib, const char *out_pattern, const char *profile, int *exec_err)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL }, old_int, old_term, old_chld;
	char preload[PATH_MAX * 2];
	const char *prev = getenv("LD_PRELOAD");
	int status = 0, fds[2], e = 0;
	ssize_t n;
	pid_t pid;

	*exec_err = 0;
	if (prev && *prev)
		snprintf(preload, sizeof(preload), "%s:%s", lib, prev);
	else
		snprintf(preload, sizeof(preload), "%s", lib);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	/* the application gets ^C; rtune waits for it and imports what it recorded (an inherited SIGCHLD SIG_IGN would
	 * reap it before waitpid could tell its status) */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGTERM, &ign, &old_term);
	sigaction(SIGCHLD, &dfl, &old_chld);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(fds[0]);
		close(fds[1]);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGCHLD, &old_chld, NULL);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGCHLD, &old_chld, NULL);
		setenv("LD_PRELOAD", preload, 1);
		setenv("RTUNE_PROBE_OUT", out_pattern, 1);
		if (profile)
			setenv("RTUNE_PROFILE", profile, 1);
		execvp(argv[0], argv);
		e = errno;
		if (write(fds[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	if (n == (ssize_t)sizeof(e)) {
		*exec_err = e ? e : ENOEXEC;
		return -1;
	}
	return status;
}

/* The shell's status of a wait status: the exit code, or 128 + the signal that killed it. */
static int shell_status(int status)
{
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

int cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "name", required_argument, NULL, 'n' },
		{ "apply", required_argument, NULL, 'a' },
		{ "out", required_argument, NULL, 'o' },
		{ "no-store", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *name = NULL, *apply = NULL, *out = NULL;
	char lib[PATH_MAX], dir[PATH_MAX], pattern[PATH_MAX + 32], app[RT_NAME_LEN];
	struct rt_probe_summary *sum = NULL;
	bool no_store = false;
	int c, status, ret = RT_EXIT_OK, nfiles = 0, exec_err = 0, app_status = 0;
	char **files = NULL;
	DIR *d;
	struct dirent *de;
	const char *tmp = getenv("TMPDIR");

	optind = 1;
	while ((c = rt_cli_getopt("probe", argc, argv, "+h", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'n': name = optarg; break;
		case 'a': apply = optarg; break;
		case 'o': out = optarg; break;
		case 'N': no_store = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return rt_cli_usage_error("probe", "no command to run: rtune probe [OPTIONS] -- CMD [ARGS...]");
	if (name && (!*name || strlen(name) >= RT_NAME_LEN))
		return rt_cli_usage_error("probe", "option '--name' takes 1 to %d characters", RT_NAME_LEN - 1);
	if (apply && access(apply, R_OK)) {
		rt_cli_error("cannot read profile '%s': %s", apply, strerror(errno));
		return RT_EXIT_USAGE;
	}
	if (find_probe_lib(lib, sizeof(lib))) {
		rt_cli_error(
			"cannot find librtune_probe.so (looked next to rtune and in %s/rtune); set RTUNE_PROBE_LIB",
			RTUNE_INSTALL_FULL_LIBDIR);
		return RT_EXIT_FAIL;
	}
	snprintf(app, sizeof(app), "%s", name ? name : argv[optind]);
	if (!name) {
		char *slash = strrchr(argv[optind], '/');

		snprintf(app, sizeof(app), "%s", slash ? slash + 1 : argv[optind]);
	}
	snprintf(dir, sizeof(dir), "%s/rtune-probe.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		rt_cli_error("cannot create a directory for the probe's output in '%s': %s", tmp && *tmp ? tmp : "/tmp",
			     strerror(errno));
		return RT_EXIT_FAIL;
	}
	snprintf(pattern, sizeof(pattern), "%s/probe.%%p.json", dir);

	status = run_app(argv + optind, lib, pattern, apply, &exec_err);
	if (status < 0) {
		/* CMD never ran: a shell's 127 (not found) or 126 (not executable), or 1 when rtune could not start it */
		rt_cli_error("cannot run '%s': %s", argv[optind], strerror(exec_err ? exec_err : errno));
		rmdir(dir);
		return exec_err == ENOENT ? 127 : exec_err ? 126 : RT_EXIT_FAIL;
	}
	app_status = shell_status(status);
	if (WIFSIGNALED(status))
		rt_cli_error("'%s' was killed by signal %d; importing what it wrote", argv[optind], WTERMSIG(status));
	else if (WEXITSTATUS(status))
		rt_cli_error("'%s' exited with status %d; importing what it wrote", argv[optind], WEXITSTATUS(status));

	d = opendir(dir);
	while (d && (de = readdir(d))) {
		char path[PATH_MAX * 2];
		struct rt_probe_summary *one;
		struct rt_error err = { 0 };
		char **nf;

		if (strncmp(de->d_name, "probe.", 6))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		nf = realloc(files, (size_t)(nfiles + 1) * sizeof(*files));
		if (!nf || !(nf[nfiles] = strdup(path))) {
			files = nf ? nf : files;
			rt_cli_error("out of memory");
			ret = RT_EXIT_FAIL;
			break;
		}
		files = nf;
		nfiles++;
		if (rt_probe_read_file(path, &one, &err)) {
			rt_cli_error("%s", err.text);
			ret = RT_EXIT_FAIL;
			continue;
		}
		if (!sum) {
			sum = one;
		} else {
			if (rt_probe_summary_merge(sum, one)) {
				rt_cli_error("out of memory");
				ret = RT_EXIT_FAIL;
			}
			rt_probe_summary_free(one);
		}
	}
	if (d)
		closedir(d);

	if (!sum) {
		rt_cli_error("'%s' did no RDMA work the probe could see (no verbs device opened; see docs/probe.md for "
			     "what the probe cannot see)",
			     argv[optind]);
		ret = RT_EXIT_FAIL;
	} else {
		print_summary(app, sum);
		if (!no_store && store_histograms(db, app, sum))
			ret = RT_EXIT_FAIL;
	}
	for (int i = 0; i < nfiles; i++) {
		if (out) {
			char dst[PATH_MAX * 2];
			const char *pid = strrchr(files[i], '/') + 7; /* "<pid>.json" after "/probe." */
			struct rt_error e;

			/* "-": every process's document in turn on standard output (a JSON text sequence) */
			if (nfiles == 1 || strcmp(out, "-") == 0)
				snprintf(dst, sizeof(dst), "%s", out);
			else
				snprintf(dst, sizeof(dst), "%s.%.*s", out, (int)strcspn(pid, "."), pid);
			if (copy_file(files[i], dst, &e)) {
				rt_cli_error("%s", e.text);
				ret = RT_EXIT_FAIL;
			} else if (strcmp(dst, "-") != 0) {
				fprintf(stderr, "rtune probe: wrote '%s'\n", dst);
			}
		}
		unlink(files[i]);
		free(files[i]);
	}
	free(files);
	rmdir(dir);
	rt_probe_summary_free(sum);
	/* the application's status first, as a shell would; rtune's own failure only when the application succeeded */
	return app_status ? app_status : ret;
}
