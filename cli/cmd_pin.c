// SPDX-License-Identifier: MIT
/*
 * `rtune pin` / `rtune unpin`: an operator's fixed value for one device/port/opcode/QP type, kept in the store
 * (schema v7), shown by `rtune show` and published by `rtune agent` whatever it measures.
 */
#include "cli.h"
#include "config.h"
#include "rt_store.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char pin_usage[] =
	"usage: rtune pin DEV[:PORT] OP/QPT [inline_threshold=N] [signal_interval=N] [--db PATH]\n"
	"\n"
	"Fix a value for one device, port (default 1), opcode (send, write) and QP type (rc, ud, srd): `rtune agent`\n"
	"publishes it instead of what it measures, and never replaces it. Pinning again replaces the given field.\n"
	"e.g. rtune pin mlx5_0:1 send/rc inline_threshold=64\n"
	"\n"
	"  --db PATH   the store (default $RTUNE_DB, /var/lib/rtune/rtune.db for root, else $XDG_STATE_HOME/rtune)\n"
	"  -h, --help  this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure, 2 usage\n";

static const char unpin_usage[] =
	"usage: rtune unpin DEV[:PORT] [OP/QPT] [inline_threshold|signal_interval] [--db PATH]\n"
	"\n"
	"Remove pins of a device (every port when PORT is not given, every opcode/QP type when OP/QPT is not given;\n"
	"both fields unless one is named). The agent's next publication uses the measured values again.\n"
	"\n"
	"  --db PATH   the store\n"
	"  -h, --help  this text\n"
	"\n"
	"exit codes: 0 ok, 1 failure (no such pin), 2 usage\n";

static int parse_db(const char *cmd, const char *help, int argc, char **argv, const char **db)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = rt_cli_getopt(cmd, argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'D': *db = optarg; break;
		case 'h': fputs(help, stdout); return -1;
		default: return RT_EXIT_USAGE;
		}
	}
	return 0;
}

int cmd_pin(int argc, char **argv)
{
	struct rt_store *st = NULL;
	struct rt_store_pin p;
	struct rt_error err = { 0 };
	const char *db = NULL;
	int rc = parse_db("pin", pin_usage, argc, argv, &db);

	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	if (rt_agent_pin_parse(argc - optind, argv + optind, &p, &err))
		return rt_cli_usage_error("pin", "%s", err.text);
	if (rt_store_open(db, &st, &err) || rt_store_pin_set(st, &p, &err)) {
		rt_cli_error("%s", err.text);
		rt_store_close(st);
		return RT_EXIT_FAIL;
	}
	printf("pinned %s port %d %s/%s", p.device, p.port, rt_profile_opcode_name(p.opcode),
	       rt_profile_qp_type_name(p.qp_type));
	if (p.inline_threshold >= 0)
		printf(" inline_threshold=%lld", (long long)p.inline_threshold);
	if (p.signal_interval >= 0)
		printf(" signal_interval=%lld", (long long)p.signal_interval);
	printf("\n");
	rt_store_close(st);
	return RT_EXIT_OK;
}

int cmd_unpin(int argc, char **argv)
{
	struct rt_store *st = NULL;
	struct rt_store_pin p;
	struct rt_error err = { 0 };
	const char *db = NULL;
	char *words[4] = { NULL, (char *)"send/rc", (char *)"signal_interval=1", NULL }, what = 'b';
	bool all_ops = true, port_given;
	size_t removed = 0;
	int rc = parse_db("unpin", unpin_usage, argc, argv, &db), nargs;

	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	nargs = argc - optind;
	if (nargs < 1 || nargs > 3)
		return rt_cli_usage_error("unpin", "expected DEV[:PORT] [OP/QPT] [inline_threshold|signal_interval]");
	words[0] = argv[optind];
	for (int i = 1; i < nargs; i++) {
		const char *w = argv[optind + i];

		if (!strcmp(w, "inline_threshold"))
			what = 'i';
		else if (!strcmp(w, "signal_interval"))
			what = 's';
		else if (strchr(w, '/')) {
			words[1] = (char *)w;
			all_ops = false;
		} else
			return rt_cli_usage_error("unpin", "'%s' is not OP/QPT, inline_threshold or signal_interval",
						  w);
	}
	if (rt_agent_pin_parse(3, words, &p, &err))
		return rt_cli_usage_error("unpin", "%s", err.text);
	port_given = strchr(words[0], ':') != NULL;
	if (rt_store_open(db, &st, &err) || rt_store_pin_clear(st, p.device, port_given ? p.port : 0, all_ops, p.opcode,
							       p.qp_type, what, &removed, &err)) {
		rt_cli_error("%s", err.text);
		rt_store_close(st);
		return RT_EXIT_FAIL;
	}
	printf("unpinned %zu pin%s of %s\n", removed, removed == 1 ? "" : "s", p.device);
	rt_store_close(st);
	return RT_EXIT_OK;
}
