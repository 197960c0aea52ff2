// SPDX-License-Identifier: MIT
/*
 * Test helper: stores two calibration runs of host-a's mlx5_0 (same GUID) for `rtune tune`: an older one made when
 * the device could inline 256 B and a newer one after it could inline 1004 B (new firmware), inline faster at every
 * measured size in both. Prints the older run's uuid. A re-tune of the older run must be limited by its own 256 B.
 * usage: caps_fill DB
 */
#include <stdio.h>

#include "store_test_util.h"

int main(int argc, char **argv)
{
	struct rt_store *st = NULL;
	struct rt_error err;
	struct rt_run old_run, new_run;

	if (argc != 2) {
		fprintf(stderr, "usage: caps_fill DB\n");
		return 2;
	}
	tu_inline_run(&old_run, 256, "0011:2233:4455:6677", "16.1", 1700000000);
	tu_inline_run(&new_run, 1004, "0011:2233:4455:6677", "16.2", 1700086400);
	if (rt_store_open(argv[1], &st, &err) || rt_store_run_save(st, &old_run, &err) ||
	    rt_store_run_save(st, &new_run, &err)) {
		fprintf(stderr, "caps_fill: %s\n", err.text);
		return 1;
	}
	printf("%s\n", old_run.uuid);
	rt_store_close(st);
	rt_run_release(&old_run);
	rt_run_release(&new_run);
	return 0;
}
