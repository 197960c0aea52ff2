// SPDX-License-Identifier: MIT
/*
 * The probe spool import: a finished file (its process gone, not modified in the last 2 s) becomes the
 * application's histograms in the store (named by the exe's basename) and is removed; a file whose writer still
 * runs, or that is too new, stays; a file that does not parse is renamed *.bad and never retried; other names are
 * ignored; an unreadable spool is one error naming it. A file with apply mode's "inline_ctl" also leaves its
 * controller in the store.
 */
#include "spool.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static const char probe_doc[] =
	"{\"schema\": {\"name\": \"rtune-probe\", \"version\": \"1.0\"}, \"rtune_version\": \"0.1.0\", \"pid\": %ld,"
	" \"exe\": \"/opt/app/bin/kvstore\", \"final\": true, \"sample_every\": 64,"
	" \"devices\": [{\"name\": \"rxe0\", \"closed\": true, \"qps\": 1, \"cqs\": 1, \"cqs_ex\": 0, \"max_cqe\": 256}],"
	" \"qps\": [{\"id\": 0, \"device\": \"rxe0\", \"qp_num\": 17, \"qp_type\": \"RC\", \"max_inline_data\": 64,"
	" \"requested_max_inline_data\": 0, \"inline_raised\": false, \"max_send_wr\": 128, \"sq_sig_all\": false,"
	" \"ex_api\": false, \"post_calls\": 1000, \"wrs_per_post\": [[1, 1, 1000]],"
	" \"errors\": {\"sq_full\": 0, \"enomem_other\": 0, \"einval\": 0, \"other\": 0, \"wrs_not_posted\": 0},"
	" \"ops\": {\"send\": {\"wrs\": 1000, \"bytes\": 64000, \"inline_wrs\": 0, \"inline_bytes\": 0,"
	" \"signaled_wrs\": 1000, \"signaled_bytes\": 64000, \"hist\": [[64, 64, 1000]]}}}],"
	" \"drops\": {}, \"slabs\": 1, \"writes\": 1}\n";

/* A pid that is certainly gone: a child that exited and was reaped. */
static long dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return (long)p;
}

static void write_file(const char *path, const char *text, time_t mtime)
{
	FILE *f = fopen(path, "w");
	struct timespec ts[2] = { { .tv_sec = mtime }, { .tv_sec = mtime } };

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_import(void **state)
{
	char dir[] = "/tmp/rtune-agent-spool.XXXXXX", db[256], p_done[256], p_live[256], p_new[256], p_bad[256],
	     p_other[256], doc[4096], bad_name[300];
	struct rt_agent_spool_result res;
	struct rt_store_histogram h;
	struct rt_store *st = NULL;
	struct rt_error err;
	time_t old = time(NULL) - 60;
	long gone = dead_pid(), gone2 = dead_pid(), gone3 = dead_pid();
	struct stat sb;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	snprintf(p_done, sizeof(p_done), "%s/rtune-probe.%ld.json", dir, gone);
	snprintf(p_live, sizeof(p_live), "%s/rtune-probe.%ld.json", dir, (long)getpid());
	snprintf(p_new, sizeof(p_new), "%s/rtune-probe.%ld.json", dir, gone2);
	snprintf(p_bad, sizeof(p_bad), "%s/rtune-probe.%ld.json", dir, gone3);
	snprintf(p_other, sizeof(p_other), "%s/notes.json", dir);
	snprintf(doc, sizeof(doc), probe_doc, gone);
	write_file(p_done, doc, old);
	write_file(p_live, doc, old);	    /* its writer (this process) is alive */
	write_file(p_new, doc, time(NULL)); /* modified just now: may be a recycled pid's, still written */
	write_file(p_bad, "{\"schema\": {\"name\": \"rtune-probe\", \"version\": \"1.0\"}, \"qps\": [{", old);
	write_file(p_other, "not a probe file", old);
	assert_int_equal(rt_store_open(db, &st, &err), 0);
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_RC, &h, &err), ENOENT);
	assert_int_equal(rt_agent_spool_import(st, dir, time(NULL), &res, &err), 0);
	assert_int_equal(res.imported, 1);
	assert_int_equal(res.pending, 2);
	assert_int_equal(res.bad, 1);
	assert_int_equal(res.n_apps, 1);
	assert_string_equal(res.apps[0], "kvstore");
	assert_int_equal(rt_store_get_histogram(st, "kvstore", RT_OP_SEND, RT_QPT_RC, &h, &err), 0);
	assert_int_equal(h.messages, 1000);
	assert_int_equal(h.bytes, 64000);
	assert_int_equal(h.max_send_wr, 128);
	{
		struct rt_store_inline_ctl *v = NULL;
		size_t n = 1;

		/* a file without "inline_ctl" (no adaptive apply mode): no controller stored */
		assert_int_equal(rt_store_get_inline_ctl(st, NULL, NULL, &v, &n, &err), 0);
		assert_int_equal(n, 0);
		free(v);
	}
	assert_int_equal(stat(p_done, &sb), -1); /* imported files are removed */
	assert_int_equal(stat(p_live, &sb), 0);
	assert_int_equal(stat(p_new, &sb), 0);
	assert_int_equal(stat(p_other, &sb), 0);
	assert_int_equal(stat(p_bad, &sb), -1);
	snprintf(bad_name, sizeof(bad_name), "%s.bad", p_bad);
	assert_int_equal(stat(bad_name, &sb), 0);
	/* a second pass finds nothing new to import: the .bad file is not retried */
	assert_int_equal(rt_agent_spool_import(st, dir, time(NULL), &res, &err), 0);
	assert_int_equal(res.imported, 0);
	assert_int_equal(res.bad, 0);
	assert_int_equal(res.n_apps, 0);
	rt_store_close(st);
	unlink(p_live);
	unlink(p_new);
	unlink(p_other);
	unlink(bad_name);
	assert_int_equal(rt_store_open(db, &st, &err), 0);
	assert_int_equal(rt_agent_spool_import(st, "/nonexistent/spool", time(NULL), &res, &err), ENOENT);
	assert_string_equal(err.text, "cannot read spool '/nonexistent/spool': No such file or directory");
	rt_store_close(st);
}

/* A spool file of apply mode's adaptive threshold: the agent's import stores the QP's controller and its move. */
static void test_import_inline_ctl(void **state)
{
	char dir[] = "/tmp/rtune-agent-spool.XXXXXX", db[256], path[256], doc[8192], *at;
	struct rt_agent_spool_result res;
	struct rt_store_inline_ctl *v = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	size_t n = 0, head;
	long gone = dead_pid();

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	snprintf(path, sizeof(path), "%s/rtune-probe.%ld.json", dir, gone);
	snprintf(doc, sizeof(doc), probe_doc, gone);
	/* the QP's "inline_ctl" goes where the writer puts it, before "ops" */
	at = strstr(doc, " \"ops\"");
	assert_non_null(at);
	head = (size_t)(at - doc);
	{
		char tail[4096];

		snprintf(tail, sizeof(tail), "%s", at);
		snprintf(
			doc + head, sizeof(doc) - head,
			" \"inline_ctl\": {\"start\": 32, \"threshold\": 64, \"min\": 0, \"max\": 64,"
			" \"parked\": false, \"samples\": 40, \"explored\": 4, \"dropped\": 0, \"rounds\": 5,"
			" \"moves_up\": 1, \"moves_down\": 0, \"reverts\": 0, \"moves\": [{\"at_sample\": 16,"
			" \"from\": 32, \"to\": 64, \"inline_ns\": 900, \"noinline_ns\": 1100, \"revert\": false}]},%s",
			tail);
	}
	write_file(path, doc, time(NULL) - 60);
	assert_int_equal(rt_store_open(db, &st, &err), 0);
	assert_int_equal(rt_agent_spool_import(st, dir, time(NULL), &res, &err), 0);
	assert_int_equal(res.imported, 1);
	assert_int_equal(rt_store_get_inline_ctl(st, NULL, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].app, "kvstore");
	assert_string_equal(v[0].device, "rxe0");
	assert_string_equal(v[0].qp_type, "rc");
	assert_int_equal(v[0].qp_num, 17);
	assert_int_equal(v[0].pid, gone);
	assert_int_equal(v[0].start_bytes, 32);
	assert_int_equal(v[0].threshold_bytes, 64);
	assert_int_equal(v[0].moves_up, 1);
	assert_int_equal(v[0].n_moves, 1);
	assert_int_equal(v[0].moves[0].at_sample, 16);
	assert_int_equal(v[0].moves[0].from_bytes, 32);
	assert_int_equal(v[0].moves[0].to_bytes, 64);
	assert_int_equal(v[0].moves[0].inline_ns, 900);
	assert_int_equal(v[0].moves[0].noinline_ns, 1100);
	free(v);
	rt_store_close(st);
	unlink(db);
	snprintf(path, sizeof(path), "%s-wal", db);
	unlink(path);
	snprintf(path, sizeof(path), "%s-shm", db);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import),
		cmocka_unit_test(test_import_inline_ctl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
