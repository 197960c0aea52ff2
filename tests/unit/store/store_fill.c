// SPDX-License-Identifier: MIT
/*
 * Test helper: fills a store with what a node accumulates — calibration runs of a device with their points and the
 * profile tuned from each (thresholds and intervals that drift between runs), and one run left "running" by a process
 * that died — so the CLI's show/history/export can be tested without an RDMA device.
 * usage: store_fill DB DEVICE [MAX_INLINE]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "store_test_util.h"

int main(int argc, char **argv)
{
	static const uint32_t thr[3] = { 64, 128, 96 }, n_sig[3] = { 16, 32, 32 };
	struct rt_store *st = NULL;
	struct rt_error err;
	uint32_t max_inline = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 220;
	pid_t pid;
	int status;

	if (argc < 3) {
		fprintf(stderr, "usage: store_fill DB DEVICE [MAX_INLINE]\n");
		return 2;
	}
	if (rt_store_open(argv[1], &st, &err)) {
		fprintf(stderr, "store_fill: %s\n", err.text);
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		struct rt_run r;
		struct rt_profile_entry e[2];

		tu_run(&r, "fill-host", argv[2], 24, 8);
		r.started_ns = (1700000000LL + i * 3600) * 1000000000LL;
		if (rt_store_run_save(st, &r, &err)) {
			fprintf(stderr, "store_fill: %s\n", err.text);
			return 1;
		}
		tu_entry(&e[0], argv[2], RT_PROFILE_OP_SEND, thr[i] < max_inline ? thr[i] : max_inline, n_sig[i],
			 r.uuid, 1700000000 + i * 3600);
		tu_entry(&e[1], argv[2], RT_PROFILE_OP_WRITE, thr[i] / 2 < max_inline ? thr[i] / 2 : max_inline,
			 n_sig[i], r.uuid, 1700000000 + i * 3600);
		e[0].max_inline_data = e[1].max_inline_data = max_inline;
		if (rt_store_put_profile(st, &r.node, NULL, e, 2, NULL, &err)) {
			fprintf(stderr, "store_fill: %s\n", err.text);
			return 1;
		}
		rt_run_release(&r);
	}
	rt_store_close(st);
	pid = fork();
	if (pid == 0) {
		struct rt_run r;

		tu_run(&r, "fill-host", argv[2], 4, 0);
		if (rt_store_open(argv[1], &st, &err) || rt_store_run_begin(st, &r, &err) ||
		    rt_store_run_add_points(st, r.id, r.lat, r.n_lat, NULL, 0, &err))
			_exit(1);
		_exit(0); /* dies with the run "running" */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "store_fill: the interrupted run could not be written\n");
		return 1;
	}
	return 0;
}
