// SPDX-License-Identifier: MIT
/*
 * `rtune import FILE...`: adds JSON profiles written by `rtune export` on other nodes to the store, as those nodes'
 * profiles. Idempotent: entries already present (same node and run id) are skipped. A bad file is reported and the
 * others are still imported.
 */
#include "cli.h"
#include "rt_pool.h"
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

struct import_out {
	bool quiet;
	int rc;
};

/* Prints the fate of files: "imported ..." for each committed file (unless quiet), one error line for a failed file,
 * one line for a batch whose commit failed (naming how many files it held and the first). */
static void told(void *ctx, const struct rt_import_result *res, size_t n)
{
	struct import_out *o = ctx;

	if (res[0].rc) {
		o->rc = RT_EXIT_FAIL;
		if (n == 1)
			rt_cli_error("%s", res[0].err.text);
		else
			rt_cli_error("%s; not stored: %zu files from '%s' on", res[0].err.text, n, res[0].path);
		return;
	}
	for (size_t i = 0; i < n && !o->quiet; i++)
		printf("imported '%s': %zu entr%s added, %zu already present\n", res[i].path, res[i].added,
		       res[i].added == 1 ? "y" : "ies", res[i].skipped);
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct import_out out = { false, RT_EXIT_OK };
	int c;

	while ((c = rt_cli_getopt("import", argc, argv, "qh", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'q': out.quiet = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return rt_cli_usage_error("import", "no profile file given");
	if (rt_store_open(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	/* files are read and parsed on worker threads while this one writes them in order, one transaction per
	 * IMPORT_BATCH files (each file still all-or-nothing); a file is reported as imported only once its batch is
	 * committed, and a failure commits the batch at once so that what it held is told exactly */
	rt_store_import_files(st, (const char *const *)argv + optind, (size_t)(argc - optind), rt_pool_workers(8),
			      IMPORT_BATCH, told, &out);
	rt_store_close(st);
	return out.rc;
}
