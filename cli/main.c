// SPDX-License-Identifier: MIT
/*
 * rtune's entry point: a git-style command table dispatching to one file per subcommand, the top-level help (and
 * `rtune help CMD`, which is CMD's --help) and version, and the error helpers every subcommand reports through.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

struct rt_cmd {
	const char *name;
	rt_cmd_fn fn;
	const char *summary;
};

static const struct rt_cmd commands[] = {
	{ "devices", cmd_devices, "list RDMA devices, ports, capabilities and the probed max inline size" },
	{ "calibrate", cmd_calibrate, "measure inline and signaling curves on a device (loopback or --peer)" },
	{ "serve", cmd_serve, "answer 'rtune calibrate --peer' from another node" },
	{ "tune", cmd_tune, "decide inline threshold and signaling interval from a stored run, with reasons" },
	{ "show", cmd_show, "show the current profile, its reasons and the curves behind it" },
	{ "history", cmd_history, "list calibration runs and how each device's decisions drifted" },
	{ "export", cmd_export, "write the profile as JSON, shell env lines or a Prometheus textfile" },
	{ "import", cmd_import, "import JSON profiles of other nodes into the store" },
	{ "probe", cmd_probe, "run an application under the probe and store what it sends" },
	{ "report", cmd_report,
	  "fleet report: group nodes by hardware, outliers with causes, drift (text/json/csv/html)" },
	{ "agent", cmd_agent, "the node service: calibrate when due and idle, learn from the probe, publish" },
	{ "pin", cmd_pin, "fix a device's inline threshold or signaling interval (the agent never overrides it)" },
	{ "unpin", cmd_unpin, "remove a pin" },
};

static void print_help(FILE *f)
{
	fprintf(f, "usage: rtune [--version] [--help] <command> [<args>]\n\n"
		   "rtune learns, per host, the IBV_SEND_INLINE threshold and the IBV_SEND_SIGNALED ratio an RDMA\n"
		   "application should use.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'rtune help <command>' (or 'rtune <command> --help') describes a command. Options go anywhere\n"
		   "before '--', which ends them; '-' as an output file is standard output.\n"
		   "exit codes: 0 ok, 1 failure, 2 usage, 3 no RDMA device\n");
}

void rt_cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("rtune: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int rt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rtune %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return RT_EXIT_USAGE;
}

bool rt_cli_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		print_help(stderr);
		return RT_EXIT_USAGE;
	}
	if (rt_cli_is_help(argv[1]) || (strcmp(argv[1], "help") == 0 && (argc == 2 || strcmp(argv[2], "help") == 0))) {
		print_help(stdout);
		return RT_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0) {
		/* `rtune help CMD`, like git: CMD's own --help */
		char help[] = "--help", *av[3] = { argv[2], help, NULL };

		if (argc > 3)
			return rt_cli_usage_error("help", "unexpected argument '%s'", argv[3]);
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[2], commands[i].name) == 0)
				return commands[i].fn(2, av);
		rt_cli_error("'%s' is not an rtune command; see 'rtune --help'", argv[2]);
		return RT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("rtune %s\n", RTUNE_VERSION);
		return RT_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	rt_cli_error("'%s' is not an rtune command; see 'rtune --help'", argv[1]);
	return RT_EXIT_USAGE;
}
