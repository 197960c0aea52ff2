// SPDX-License-Identifier: MIT
/*
 * `rtune import FILE...`: adds JSON profiles written by `rtune export` on other nodes to the store, as those nodes'
 * profiles. Idempotent: entries already present (same node and run id) are skipped. A bad file is reported and the
 * others are still imported.
 */
#include "cli.h"
#include "rt_store.h"

#include <getopt.h>

#define IMPORT_BATCH 500

static const char usage[] =
	"usage: rtune import [--db PATH] FILE...\n"
	"\n"
	"Import JSON profiles (schema rtune-profile 1.x, from 'rtune export') of other nodes into the store.\n"
	"Importing the same profile again changes nothing (entries are keyed by node and run id).\n"
	"\n"
	"  --db PATH       store to write (default: $RTUNE_DB, else /var/lib/rtune/rtune.db as root,\n"
	"                  else $XDG_STATE_HOME/rtune/rtune.db, i.e. ~/.local/state/rtune/rtune.db)\n"
	"  -q, --quiet     print errors only\n"
	"  -h, --help      this text\n"
	"\n"
	"exit codes: 0 every file imported, 1 a file or the store failed, 2 usage\n";

/* A file imported into the open batch, reported once the batch is committed. */
struct pending {
	const char *name;
	size_t added, skipped;
};

/*
 * Commits the batch. On success prints the files it held ("imported ..."), unless quiet; on failure prints one line
 * naming how many of them were not stored (nothing when it held none: the failing file was reported already).
 * Returns 0 or the store's error code; *n is reset either way.
 */
static int flush_batch(struct rt_store *st, struct pending *p, size_t *n, bool quiet)
{
	struct rt_error err;
	int rc = rt_store_batch_flush(st, &err);

	if (rc) {
		if (*n)
			rt_cli_error("%s; not stored: %zu file%s from '%s' on", err.text, *n, *n == 1 ? "" : "s",
				     p[0].name);
	} else if (!quiet) {
		for (size_t i = 0; i < *n; i++)
			printf("imported '%s': %zu entr%s added, %zu already present\n", p[i].name, p[i].added,
			       p[i].added == 1 ? "y" : "ies", p[i].skipped);
	}
	*n = 0;
	return rc;
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct pending pend[IMPORT_BATCH];
	const char *db = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	bool quiet = false;
	size_t n_pend = 0;
	int c, rc = RT_EXIT_OK;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'q': quiet = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return rt_cli_usage_error("import", "unknown option");
		}
	}
	if (optind >= argc)
		return rt_cli_usage_error("import", "no profile file given");
	if (rt_store_open(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	/* one transaction per IMPORT_BATCH files (each file still all-or-nothing); a file is reported as imported only
	 * once its batch is committed, and a failure commits the batch at once so that what it held is told exactly */
	rt_store_batch(st, true, NULL);
	for (int i = optind; i < argc; i++) {
		size_t added = 0, skipped = 0;

		if (rt_store_import_file(st, argv[i], &added, &skipped, &err)) {
			rt_cli_error("%s", err.text);
			rc = RT_EXIT_FAIL;
			flush_batch(st, pend, &n_pend, quiet);
			continue;
		}
		pend[n_pend++] = (struct pending){ argv[i], added, skipped };
		if (n_pend == IMPORT_BATCH && flush_batch(st, pend, &n_pend, quiet))
			rc = RT_EXIT_FAIL;
	}
	if (flush_batch(st, pend, &n_pend, quiet))
		rc = RT_EXIT_FAIL;
	rt_store_batch(st, false, NULL);
	rt_store_close(st);
	return rc;
}
