// SPDX-License-Identifier: MIT
/*
 * report_fleet_gen: the fleet generator as a command for shell tests, the rxe tier and the benchmark.
 *   report_fleet_gen json DIR SEED GROUPS NODES_PER_GROUP OUTLIERS_PER_GROUP [NOW]
 *       writes DIR/g<group>/<host>.json and prints one line per planted outlier: "<host> <cause code>"
 *   report_fleet_gen store PATH PREFIX NODES [NOW]
 *       writes an rtune store with runs, one remote-NUMA calibration (<prefix>-0) and drift (<prefix>-1)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet_gen.h"

int main(int argc, char **argv)
{
	if (argc >= 7 && !strcmp(argv[1], "json")) {
		struct fg_opts o = { .seed = strtoull(argv[3], NULL, 10), .groups = atoi(argv[4]),
				     .nodes_per_group = atoi(argv[5]), .outliers_per_group = atoi(argv[6]),
				     .now = argc > 7 ? strtoll(argv[7], NULL, 10) : (int64_t)time(NULL),
				     .with_hardware = true, .entries_per_node = 2 };
		struct fg_node *v;
		size_t n;
		int rc;

		if (fg_build(&o, &v, &n))
			return 1;
		rc = fg_write_dir(argv[2], v, n);
		if (rc)
			fprintf(stderr, "report_fleet_gen: cannot write '%s': %s\n", argv[2], strerror(rc));
		for (size_t i = 0; !rc && i < n; i++)
			if (v[i].cause != FG_NONE)
				printf("%s %s\n", v[i].hostname, fg_cause_code(v[i].cause));
		fg_free(v, n);
		return rc ? 1 : 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "store"))
		return fg_write_store(argv[2], argv[3], atoi(argv[4]), true, true,
				      argc > 5 ? strtoll(argv[5], NULL, 10) : (int64_t)time(NULL)) ? 1 : 0;
	fprintf(stderr, "usage: report_fleet_gen json DIR SEED GROUPS NODES OUTLIERS [NOW]\n"
			"       report_fleet_gen store PATH PREFIX NODES [NOW]\n");
	return 2;
}
