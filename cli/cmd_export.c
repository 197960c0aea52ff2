// SPDX-License-Identifier: MIT
/*
 * `rtune export`: the node's current profile as the JSON profile v1 (for librtune and other nodes' `rtune import`),
 * as shell lines for existing stacks (libfabric verbs, UCX, rtune's own variables), or as a Prometheus textfile for
 * node_exporter. Files are written with the shared output writer (rt_out.h: atomic replace of a regular file, a FIFO
 * or device in place, '-' standard output).
 */
#include "cli.h"
#include "rt_store.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: rtune export [--db PATH] [--node NODE] [--format json|env|prometheus] [-o FILE] [--profile PATH]\n"
	"\n"
	"Write the current profile. json: the profile document applications load with librtune (RTUNE_PROFILE) and\n"
	"other stores import. env: shell lines to eval: FI_VERBS_INLINE_SIZE (libfabric verbs provider),\n"
	"UCX_RC_TX_MIN_INLINE and UCX_RC_TX_CQ_MODERATION (UCX rc_verbs and rc_mlx5: N - 1 unsignaled sends per\n"
	"signaled one), RTUNE_PROFILE, and per device\n"
	"RTUNE_INLINE_THRESHOLD_<DEV>_P<PORT>, RTUNE_MAX_INLINE_DATA_..., RTUNE_SIGNAL_INTERVAL_...,"
	" RTUNE_SQ_DEPTH_....\n"
	"prometheus: a node_exporter textfile-collector file (gauges per device/port/opcode, including profile age).\n"
	"\n"
	"  --db PATH            store to read (default: $RTUNE_DB, else /var/lib/rtune/rtune.db as root,\n"
	"                       else $XDG_STATE_HOME/rtune/rtune.db, i.e. ~/.local/state/rtune/rtune.db)\n"
	"  --node NODE          node (hostname or machine-id) when the store holds several\n"
	"  --format FMT         json (default), env or prometheus\n"
	"  -o, --output FILE    write FILE instead of standard output ('-': standard output): a regular file is\n"
	"                       replaced atomically (a new one is 0644), a FIFO or device written in place\n"
	"  --profile PATH       value of RTUNE_PROFILE in env output (default: $RTUNE_PROFILE)\n"
	"  -h, --help           this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure (no store, no profile, cannot write), 2 usage\n";

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "node", required_argument, NULL, 'n' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "profile", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *node_key = NULL, *out = NULL, *profile = getenv("RTUNE_PROFILE");
	enum rt_export_format fmt = RT_EXPORT_JSON;
	struct rt_store *st = NULL;
	struct rt_error err;
	int c, rc;

	while ((c = rt_cli_getopt("export", argc, argv, "o:h", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'n': node_key = optarg; break;
		case 'f':
			if (rt_export_format_parse(optarg, &fmt))
				return rt_cli_usage_error(
					"export", "option '--format' takes json, env or prometheus, not '%s'", optarg);
			break;
		case 'o': out = optarg; break;
		case 'p': profile = optarg; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
	if (rt_store_open_existing(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		return RT_EXIT_FAIL;
	}
	rc = rt_store_export(st, node_key, fmt, out && strcmp(out, "-") ? out : NULL,
			     profile && *profile ? profile : NULL, &err);
	if (rc)
		rt_cli_error("%s", err.text);
	rt_store_close(st);
	return rc ? RT_EXIT_FAIL : RT_EXIT_OK;
}
