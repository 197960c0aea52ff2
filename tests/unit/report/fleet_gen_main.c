// SPDX-License-Identifier: MIT
/*
 * report_fleet_gen: the fleet generator as a command for shell tests, the rxe tier and the benchmark.
 *   report_fleet_gen json DIR SEED GROUPS NODES_PER_GROUP OUTLIERS_PER_GROUP [NOW]
 *       writes DIR/g<group>/<host>.json and prints one line per planted outlier: "<host> <cause code>"
 *   report_fleet_gen store PATH PREFIX NODES [NOW]
 *       writes an rtune store with runs, one remote-NUMA calibration (<prefix>-0) and drift (<prefix>-1)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet_gen.h"

/* Parses argument s as a whole decimal number in lo..hi into *out; returns 0, or 1 after naming it on stderr. */
static int num(const char *what, const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "report_fleet_gen: %s '%s' is not a number in %lld..%lld\n", what, s, lo, hi);
		return 1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	long long a, b, c, t;

	if (argc >= 7 && (!strcmp(argv[1], "json") || !strcmp(argv[1], "realistic"))) {
		struct fg_opts o = { .with_hardware = true, .entries_per_node = 2 };

		if (!strcmp(argv[1], "realistic"))
			fg_realistic(&o);
		struct fg_node *v;
		size_t n;
		char *end;
		int rc;

		errno = 0;
		o.seed = strtoull(argv[3], &end, 10);
		if (errno || end == argv[3] || *end) {
			fprintf(stderr, "report_fleet_gen: SEED '%s' is not a number\n", argv[3]);
			return 2;
		}
		if (num("GROUPS", argv[4], 0, INT_MAX, &a) || num("NODES", argv[5], 0, INT_MAX, &b) ||
		    num("OUTLIERS", argv[6], 0, INT_MAX, &c))
			return 2;
		o.groups = (int)a;
		o.nodes_per_group = (int)b;
		o.outliers_per_group = (int)c;
		o.now = (int64_t)time(NULL);
		if (argc > 7) {
			if (num("NOW", argv[7], 0, LLONG_MAX, &t))
				return 2;
			o.now = t;
		}
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
	if (argc >= 5 && !strcmp(argv[1], "store")) {
		t = (long long)time(NULL);
		if (num("NODES", argv[4], 0, INT_MAX, &a) || (argc > 5 && num("NOW", argv[5], 0, LLONG_MAX, &t)))
			return 2;
		return fg_write_store(argv[2], argv[3], (int)a, true, true, t) ? 1 : 0;
	}
	fprintf(stderr, "usage: report_fleet_gen json|realistic DIR SEED GROUPS NODES OUTLIERS [NOW]\n"
			"       report_fleet_gen store PATH PREFIX NODES [NOW]\n");
	return 2;
}
