// SPDX-License-Identifier: MIT
/*
 * `rtune agent`: the per-node service (agent/, docs/agent.md). This file only parses the command line and hands
 * over to rt_agent_run().
 */
#include "agent.h"
#include "cli.h"
#include "config.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
	"usage: rtune agent [--config FILE] [--once] [--dry-run]\n"
	"\n"
	"Run the per-node service: calibrate each RDMA device/port when it is first seen, when its hardware facts\n"
	"(firmware, PCIe link, MTU, NUMA node) change, when its profile is older than max_profile_age, or on demand\n"
	"(SIGUSR1, --once); only while no other process holds QPs on the device (or inside calibrate_hours), never in\n"
	"quiet_hours. Import the probe spool and re-tune per application. Publish the profile (pins applied, a\n"
	"low-confidence value never over a confident one) to every configured target, atomically. Logs one line per\n"
	"event on stderr (journald priorities under systemd); Type=notify with READY, STATUS and the watchdog.\n"
	"SIGHUP re-reads the configuration, SIGTERM stops within 2 s.\n"
	"\n"
	"  -c, --config FILE  configuration (default " RT_AGENT_CONFIG_DEFAULT "; absent = built-in defaults)\n"
	"  --once             one pass that calibrates every idle port, publishes, and exits (cron, Kubernetes Job)\n"
	"  -n, --dry-run      calibrate nothing and write nothing: log what would be calibrated and published\n"
	"  -h, --help         this text\n"
	"\n"
	"exit codes: 0 ok (and after SIGTERM), 1 failure (--once: a calibration or publication failed), 2 usage or a\n"
	"bad configuration file\n";

int cmd_agent(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "once", no_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rt_agent_opts o = { 0 };
	int c;

	optind = 1;
	while ((c = rt_cli_getopt("agent", argc, argv, "c:nh", opts)) != -1) {
		switch (c) {
		case 'c': o.config = optarg; break;
		case 'o': o.once = true; break;
		case 'n': o.dry_run = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_cli_usage_error("agent", "unexpected argument '%s'", argv[optind]);
	return rt_agent_run(&o);
}
