// SPDX-License-Identifier: MIT
/*
 * `rtune serve`: the far side of a two-node `rtune calibrate --peer`. Listens with rdma_cm, serves one client at a
 * time (others are told "busy"), cleans up after each, stops cleanly on SIGINT/SIGTERM.
 */
#include "cli.h"
#include "rt_engine.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
	"usage: rtune serve [--bind ADDR] [--port N] [--once | --clients N] [--max-inline BYTES] [-q]\n"
	"\n"
	"Answer 'rtune calibrate --peer ADDR' from another node: listens with rdma_cm on ADDR (default: every\n"
	"address) port N (default 18520), serves one client at a time and releases its QP, CQs and memory when it\n"
	"ends, fails or vanishes. Stops on SIGINT/SIGTERM. A client's QP gets the smaller of the client's and this\n"
	"device's max inline data; the client measures only sizes both sides send inline and records both values.\n"
	"\n"
	"  --bind ADDR  listen on this local address (an IP of an RDMA-capable netdev)\n"
	"  --port N     rdma_cm port (default 18520)\n"
	"  --once       exit after the first client\n"
	"  --clients N  exit after N clients\n"
	"  --max-inline BYTES  give clients at most this much inline data (default: the device's maximum)\n"
	"  -q, --quiet  no log lines\n"
	"  -h, --help   this text\n"
	"\n"
	"exit codes: 0 stopped cleanly, 1 failure, 2 usage, 3 no RDMA device\n";

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void log_line(void *ctx, const char *line)
{
	time_t t = time(NULL);
	struct tm tm;
	char ts[32];

	(void)ctx;
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&t, &tm));
	fprintf(stderr, "rtune serve %s: %s\n", ts, line);
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bind", required_argument, NULL, 'b' }, { "port", required_argument, NULL, 'p' },
		{ "once", no_argument, NULL, '1' },	  { "clients", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },	  { "max-inline", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },	  { 0 },
	};
	struct rt_serve_opts o;
	struct rt_error err;
	struct sigaction sa;
	int c, rc;

	memset(&o, 0, sizeof(o));
	o.log = log_line;
	optind = 1;
	while ((c = rt_cli_getopt("serve", argc, argv, "qh", opts)) != -1) {
		switch (c) {
		case 'b': o.bind = optarg; break;
		case 'p': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > 65535)
				return rt_cli_usage_error("serve", "option '--port' takes a port 1..65535, not '%s'",
							  optarg);
			o.port = (int)v;
			break;
		}
		case '1': o.max_clients = 1; break;
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > 1000000)
				return rt_cli_usage_error("serve", "option '--clients' takes a client count, not '%s'",
							  optarg);
			o.max_clients = (int)v;
			break;
		}
		case 'm': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || end == optarg || v < 1 || v > 65536)
				return rt_cli_usage_error(
					"serve", "option '--max-inline' takes 1..65536 bytes, not '%s'", optarg);
			o.max_inline = (int)v;
			break;
		}
		case 'q': o.log = NULL; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.stop = &g_stop;
	rt_error_clear(&err);
	rc = rt_engine_serve(&o, &err);
	if (rc) {
		rt_cli_error("serve: %s", err.text);
		return rc == ENODEV ? RT_EXIT_NODEV : rc == EINVAL ? RT_EXIT_USAGE : RT_EXIT_FAIL;
	}
	return RT_EXIT_OK;
}
