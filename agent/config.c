// SPDX-License-Identifier: MIT
/*
 * The agent's configuration file: "key = value" lines, '#' comments, durations with a unit (30s, 5m, 2h, 7d), daily
 * windows "HH:MM-HH:MM[,...]", and pins in `rtune pin`'s own words. Every key is validated; the first bad line is
 * refused with "FILE:LINE: ..." and nothing of the file is taken.
 */
#include "config.h"
#include "lib/profile_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (64 * 1024)

void rt_agent_config_defaults(struct rt_agent_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->publish.profile, sizeof(c->publish.profile), "%s", RT_PROFILE_DEFAULT_PATH);
	c->publish.nfd_expiry_s = 0;
	c->budget_s = 20;
	c->max_age_s = 7 * 86400;
	c->busy_retry_s = 300;
	c->rescan_s = 3600;
	c->require_idle = true;
}

/* "30", "30s", "5m", "2h", "7d" -> seconds in [lo, hi]. */
static int parse_duration(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!isdigit((unsigned char)*s))
		return EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return EINVAL;
	if (*end) {
		if (end[1])
			return EINVAL;
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return EINVAL;
		}
	}
	if (v > hi / mul || v * mul < lo || v * mul > hi)
		return EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_hhmm(const char *s, const char **end, int *min)
{
	int h, m;

	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]) || s[2] != ':' ||
	    !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4]))
		return EINVAL;
	h = (s[0] - '0') * 10 + (s[1] - '0');
	m = (s[3] - '0') * 10 + (s[4] - '0');
	if (h > 24 || m > 59 || (h == 24 && m))
		return EINVAL;
	*min = h * 60 + m;
	*end = s + 5;
	return 0;
}

/* "01:00-05:00, 22:00-23:30" */
static int parse_windows(const char *s, struct rt_agent_window *w, size_t *n)
{
	*n = 0;
	for (;;) {
		const char *p;

		while (*s == ' ' || *s == '\t')
			s++;
		if (*n == RT_AGENT_MAX_WINDOWS || parse_hhmm(s, &p, &w[*n].start_min) || *p != '-' ||
		    parse_hhmm(p + 1, &p, &w[*n].end_min) || w[*n].start_min == w[*n].end_min)
			return EINVAL;
		(*n)++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		if (*p != ',')
			return EINVAL;
		s = p + 1;
	}
}

bool rt_agent_in_window(const struct rt_agent_window *w, size_t n, int minute)
{
	for (size_t i = 0; i < n; i++) {
		if (w[i].start_min < w[i].end_min ? minute >= w[i].start_min && minute < w[i].end_min
						  : minute >= w[i].start_min || minute < w[i].end_min)
			return true;
	}
	return false;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on") || !strcmp(s, "1"))
		*out = true;
	else if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off") || !strcmp(s, "0"))
		*out = false;
	else
		return EINVAL;
	return 0;
}

/* Splits s (modified) on blanks into at most max words. Returns the count, or -1 when there are more. */
static int split_words(char *s, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

static int parse_u32_word(const char *s, long long lo, long long hi, int64_t *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)*s))
		return EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return EINVAL;
	*out = v;
	return 0;
}

int rt_agent_pin_parse(int argc, char *const *argv, struct rt_store_pin *p, struct rt_error *err)
{
	char dev[128], *colon, *slash, opq[32];
	int64_t v;

	memset(p, 0, sizeof(*p));
	p->inline_threshold = p->signal_interval = -1;
	p->port = 1;
	if (argc < 3)
		return rt_error_set(err, EINVAL, "a pin is 'DEV[:PORT] OP/QPT inline_threshold=N|signal_interval=N'");
	snprintf(dev, sizeof(dev), "%s", argv[0]);
	if ((colon = strchr(dev, ':'))) {
		*colon = '\0';
		if (parse_u32_word(colon + 1, 1, 255, &v))
			return rt_error_set(err, EINVAL, "'%s': the port is 1..255", argv[0]);
		p->port = (int)v;
	}
	if (!dev[0] || strlen(dev) >= sizeof(p->device))
		return rt_error_set(err, EINVAL, "'%s' is not a device name", argv[0]);
	snprintf(p->device, sizeof(p->device), "%s", dev);
	snprintf(opq, sizeof(opq), "%s", argv[1]);
	slash = strchr(opq, '/');
	if (!slash)
		return rt_error_set(err, EINVAL, "'%s' is not OP/QPT (send/rc, write/rc, send/ud)", argv[1]);
	*slash = '\0';
	if (!strcmp(opq, "send"))
		p->opcode = RT_PROFILE_OP_SEND;
	else if (!strcmp(opq, "write"))
		p->opcode = RT_PROFILE_OP_WRITE;
	else
		return rt_error_set(err, EINVAL, "'%s': the opcode is send or write", argv[1]);
	if (rt_profile_qp_type_parse(slash + 1, &p->qp_type))
		return rt_error_set(err, EINVAL, "'%s': the QP type is rc, ud or srd", argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strncmp(argv[i], "inline_threshold=", 17) && !parse_u32_word(argv[i] + 17, 0, 65536, &v))
			p->inline_threshold = v;
		else if (!strncmp(argv[i], "signal_interval=", 16) && !parse_u32_word(argv[i] + 16, 1, 65536, &v))
			p->signal_interval = v;
		else
			return rt_error_set(err, EINVAL,
					    "'%s' is not inline_threshold=0..65536 or signal_interval=1..65536",
					    argv[i]);
	}
	return 0;
}

/* Copies an absolute path value, or "" for "off"/"none". */
static int path_value(const char *v, char *dst, size_t len, bool may_disable)
{
	if (may_disable && (!strcmp(v, "off") || !strcmp(v, "none"))) {
		dst[0] = '\0';
		return 0;
	}
	if (v[0] != '/' || strlen(v) >= len)
		return EINVAL;
	snprintf(dst, len, "%s", v);
	return 0;
}

/* Applies one "key = value" (value already trimmed, not empty). Returns 0 or EINVAL with why filled. */
static int apply(struct rt_agent_config *c, const char *key, char *val, char *why, size_t len)
{
	struct {
		const char *key;
		char *dst;
		bool may_disable;
	} paths[] = {
		{ "store", c->store, false },
		{ "spool", c->spool, true },
		{ "publish_profile", c->publish.profile, true },
		{ "publish_prometheus", c->publish.prom_textfile, true },
		{ "publish_nfd", c->publish.nfd_features, true },
		{ "publish_ucx", c->publish.ucx_conf, true },
		{ "publish_libfabric", c->publish.libfabric_env, true },
		{ "publish_nccl", c->publish.nccl_env, true },
	};
	uint64_t d;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (strcmp(key, paths[i].key))
			continue;
		if (path_value(val, paths[i].dst, RT_AGENT_PATH_LEN, paths[i].may_disable)) {
			snprintf(why, len, "%s: '%s' is not an absolute path%s", key, val,
				 paths[i].may_disable ? " or off" : "");
			return EINVAL;
		}
		return 0;
	}
	if (!strcmp(key, "budget")) {
		if (parse_duration(val, 2, 3600, &d))
			return snprintf(why, len, "budget: '%s' is not a duration of 2s..1h", val), EINVAL;
		c->budget_s = (uint32_t)d;
	} else if (!strcmp(key, "max_profile_age")) {
		if (!strcmp(val, "off") || !strcmp(val, "never"))
			c->max_age_s = 0;
		else if (parse_duration(val, 60, 3650ull * 86400, &d))
			return snprintf(why, len, "max_profile_age: '%s' is not a duration of 1m..3650d or off", val),
			       EINVAL;
		else
			c->max_age_s = d;
	} else if (!strcmp(key, "busy_retry")) {
		if (parse_duration(val, 1, 86400, &d))
			return snprintf(why, len, "busy_retry: '%s' is not a duration of 1s..1d", val), EINVAL;
		c->busy_retry_s = (uint32_t)d;
	} else if (!strcmp(key, "rescan")) {
		if (parse_duration(val, 10, 7 * 86400, &d))
			return snprintf(why, len, "rescan: '%s' is not a duration of 10s..7d", val), EINVAL;
		c->rescan_s = (uint32_t)d;
	} else if (!strcmp(key, "nfd_expiry")) {
		if (parse_duration(val, 60, 365ull * 86400, &d))
			return snprintf(why, len, "nfd_expiry: '%s' is not a duration of 1m..365d", val), EINVAL;
		c->publish.nfd_expiry_s = (uint32_t)d;
	} else if (!strcmp(key, "require_idle")) {
		if (parse_bool(val, &c->require_idle))
			return snprintf(why, len, "require_idle: '%s' is not yes or no", val), EINVAL;
	} else if (!strcmp(key, "quiet_hours") || !strcmp(key, "calibrate_hours")) {
		bool q = key[0] == 'q';

		if (parse_windows(val, q ? c->quiet : c->hours, q ? &c->n_quiet : &c->n_hours))
			return snprintf(why, len, "%s: '%s' is not HH:MM-HH:MM[, ...] (at most %d windows)", key, val,
					RT_AGENT_MAX_WINDOWS),
			       EINVAL;
	} else if (!strcmp(key, "devices")) {
		char *w[RT_AGENT_MAX_DEVICES];
		int n = split_words(val, w, RT_AGENT_MAX_DEVICES);

		if (n < 0)
			return snprintf(why, len, "devices: more than %d devices", RT_AGENT_MAX_DEVICES), EINVAL;
		c->n_devices = 0;
		for (int i = 0; i < n; i++) {
			if (strlen(w[i]) >= sizeof(c->devices[0]))
				return snprintf(why, len, "devices: '%s' is too long", w[i]), EINVAL;
			snprintf(c->devices[c->n_devices++], sizeof(c->devices[0]), "%s", w[i]);
		}
	} else if (!strcmp(key, "calibrate_args")) {
		char *w[RT_AGENT_MAX_ARGS];
		int n = split_words(val, w, RT_AGENT_MAX_ARGS);

		if (n < 0)
			return snprintf(why, len, "calibrate_args: more than %d words", RT_AGENT_MAX_ARGS), EINVAL;
		c->n_calibrate_args = 0;
		for (int i = 0; i < n; i++) {
			static const char *const refused[] = { "--db",	   "--no-store", "--out", "--json",
							       "-d",	   "--ib-dev",	 "-i",	  "--ib-port",
							       "--budget", "--peer" };

			for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++)
				if (!strncmp(w[i], refused[k], strlen(refused[k])) &&
				    (!w[i][strlen(refused[k])] || w[i][strlen(refused[k])] == '='))
					return snprintf(why, len, "calibrate_args: '%s' is set by the agent itself",
							w[i]),
					       EINVAL;
			if (strlen(w[i]) >= sizeof(c->calibrate_args[0]))
				return snprintf(why, len, "calibrate_args: '%s' is too long", w[i]), EINVAL;
			snprintf(c->calibrate_args[c->n_calibrate_args++], sizeof(c->calibrate_args[0]), "%s", w[i]);
		}
	} else if (!strcmp(key, "pin")) {
		char *w[8];
		int n = split_words(val, w, 8);
		struct rt_error e;

		if (c->n_pins == RT_AGENT_MAX_PINS)
			return snprintf(why, len, "pin: more than %d pins", RT_AGENT_MAX_PINS), EINVAL;
		if (n < 0 || rt_agent_pin_parse(n, w, &c->pins[c->n_pins], &e))
			return snprintf(why, len, "pin: %s", n < 0 ? "too many words" : e.text), EINVAL;
		c->n_pins++;
	} else {
		snprintf(why, len, "unknown key '%s'", key);
		return EINVAL;
	}
	return 0;
}

int rt_agent_config_parse(const char *name, const char *text, size_t len, struct rt_agent_config *out,
			  struct rt_error *err)
{
	size_t pos = 0;
	int lineno = 0;

	rt_agent_config_defaults(out);
	snprintf(out->path, sizeof(out->path), "%s", name);
	while (pos < len) {
		char line[1024], why[512], *key, *val, *eq, *e;
		size_t n = 0;

		lineno++;
		while (pos < len && text[pos] != '\n') {
			if (text[pos] == '\0')
				return rt_error_set(err, EINVAL, "%s:%d: a NUL byte: not a text file", name, lineno);
			if (n + 1 >= sizeof(line))
				return rt_error_set(err, EINVAL, "%s:%d: line longer than %zu bytes", name, lineno,
						    sizeof(line) - 1);
			line[n++] = text[pos++];
		}
		pos++;
		line[n] = '\0';
		if ((e = strchr(line, '#')))
			*e = '\0';
		key = line;
		while (*key == ' ' || *key == '\t' || *key == '\r')
			key++;
		e = key + strlen(key);
		while (e > key && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*key)
			continue;
		if (!(eq = strchr(key, '=')))
			return rt_error_set(err, EINVAL, "%s:%d: expected 'key = value', got '%s'", name, lineno, key);
		*eq = '\0';
		val = eq + 1;
		for (e = eq; e > key && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		while (*val == ' ' || *val == '\t')
			val++;
		if (!*key)
			return rt_error_set(err, EINVAL, "%s:%d: no key before '='", name, lineno);
		if (!*val)
			return rt_error_set(err, EINVAL, "%s:%d: %s: no value", name, lineno, key);
		if (apply(out, key, val, why, sizeof(why)))
			return rt_error_set(err, EINVAL, "%s:%d: %s", name, lineno, why);
	}
	return 0;
}

int rt_agent_config_load(const char *path, struct rt_agent_config *out, struct rt_error *err)
{
	struct rt_agent_config *c = malloc(sizeof(*c));
	char *buf = malloc(CONFIG_MAX_BYTES + 1);
	struct stat sb;
	ssize_t got;
	size_t len = 0;
	int fd = -1, rc;

	if (!c || !buf) {
		rc = rt_error_set(err, ENOMEM, "cannot read config '%s': out of memory", path);
		goto out;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0 || fstat(fd, &sb) != 0) {
		rc = rt_error_set(err, errno, "cannot read config '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = rt_error_set(err, EINVAL, "cannot read config '%s': not a regular file", path);
		goto out;
	}
	while ((got = read(fd, buf + len, CONFIG_MAX_BYTES + 1 - len)) > 0)
		len += (size_t)got;
	if (got < 0) {
		rc = rt_error_set(err, errno, "cannot read config '%s': %s", path, strerror(errno));
		goto out;
	}
	if (len > CONFIG_MAX_BYTES) {
		rc = rt_error_set(err, EFBIG, "config '%s': larger than %d bytes", path, CONFIG_MAX_BYTES);
		goto out;
	}
	if (!(rc = rt_agent_config_parse(path, buf, len, c, err)))
		*out = *c;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(c);
	return rc;
}
