// SPDX-License-Identifier: MIT
/*
 * The option parsing convention of every rtune subcommand: getopt_long with GNU argument permutation (options anywhere
 * before `--`, which ends them, as in git), and one line in one style for every option error, printed here instead of
 * getopt's own message: "rtune CMD: unknown option '--x'", "rtune CMD: option '--app' needs a value",
 * "rtune CMD: option '--json' takes no value", "rtune CMD: ambiguous option '--n' (--node, --no-probe)".
 */
#include "cli.h"

#include <string.h>

/* The long option argv element s ("--name" or "--name=value") names: exact match first, else the unique prefix;
 * NULL when none or several match (*n_match tells which). */
static const struct option *find_long(const struct option *longopts, const char *s, int *n_match)
{
	size_t len = strcspn(s, "=");
	const struct option *hit = NULL;

	*n_match = 0;
	for (const struct option *o = longopts; o && o->name; o++) {
		if (strncmp(o->name, s, len))
			continue;
		if (strlen(o->name) == len) {
			*n_match = 1;
			return o;
		}
		hit = o;
		(*n_match)++;
	}
	return *n_match == 1 ? hit : NULL;
}

/* Prints the one line for the option error getopt_long just returned (c is ':' or '?'). */
static void report(const char *cmd, int c, char **argv, const struct option *longopts)
{
	const char *cur = optind > 0 && argv[optind - 1] ? argv[optind - 1] : "";
	bool is_long = strncmp(cur, "--", 2) == 0 && cur[2];
	const struct option *o = NULL;
	int n_match = 0;

	if (is_long)
		o = find_long(longopts, cur + 2, &n_match);
	if (c == ':') {
		if (is_long && o)
			rt_cli_usage_error(cmd, "option '--%s' needs a value", o->name);
		else
			rt_cli_usage_error(cmd, "option '-%c' needs a value", optopt);
		return;
	}
	if (optopt && is_long && o && o->has_arg == no_argument && strchr(cur, '=')) {
		rt_cli_usage_error(cmd, "option '--%s' takes no value", o->name);
	} else if (!optopt && is_long && n_match > 1) {
		char names[256] = "";
		size_t len = strcspn(cur + 2, "=");

		for (const struct option *p = longopts; p->name; p++)
			if (!strncmp(p->name, cur + 2, len) && strlen(names) + strlen(p->name) + 5 < sizeof(names))
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s--%s",
					 names[0] ? ", " : "", p->name);
		rt_cli_usage_error(cmd, "ambiguous option '%.*s' (%s)", (int)(len + 2), cur, names);
	} else if (!optopt) {
		rt_cli_usage_error(cmd, "unknown option '%.*s'", (int)strcspn(cur, "="), cur);
	} else {
		rt_cli_usage_error(cmd, "unknown option '-%c'", optopt);
	}
}

int rt_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	char spec[128];
	bool posix = shortopts[0] == '+';
	int c;

	/* ':' first: a missing value is told apart from an unknown option; '+' keeps stopping at the first operand */
	snprintf(spec, sizeof(spec), "%s:%s", posix ? "+" : "", shortopts + posix);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c == ':' || c == '?') {
		report(cmd, c, argv, longopts);
		return '?';
	}
	return c;
}
