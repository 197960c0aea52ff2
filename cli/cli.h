/* SPDX-License-Identifier: MIT */
/*
 * Shared declarations of the rtune command-line tool: exit codes, the subcommand entry points (one file each,
 * cmd_<name>.c, registered in main.c's command table) and the helpers they use to report errors the same way.
 */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/* Documented exit codes (README, `rtune --help`). */
enum {
	RT_EXIT_OK = 0,
	RT_EXIT_FAIL = 1,  /* the command ran and failed */
	RT_EXIT_USAGE = 2, /* bad command line or unknown name */
	RT_EXIT_NODEV = 3, /* no RDMA device */
};

/* One subcommand: argv[0] is the subcommand's name; returns an RT_EXIT_* code. */
typedef int (*rt_cmd_fn)(int argc, char **argv);

int cmd_devices(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_pin(int argc, char **argv);
int cmd_unpin(int argc, char **argv);

/* Prints "rtune: <message>\n" on stderr. */
void rt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the one line "rtune <cmd>: <message>" on stderr; returns RT_EXIT_USAGE. */
int rt_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when arg is -h or --help. */
bool rt_cli_is_help(const char *arg);
/*
 * getopt_long under rtune's convention (cli/opt.c): options anywhere before `--` (GNU permutation; shortopts starting
 * with '+' stop at the first operand instead, for `rtune probe ... CMD ARGS`), getopt's own messages off. Returns the
 * option as getopt_long does, -1 at the end (operands are then argv[optind..]), or '?' after printing the one line of
 * an unknown option, a missing value or a value given to an option that takes none: the caller returns RT_EXIT_USAGE.
 */
int rt_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts);

#endif
