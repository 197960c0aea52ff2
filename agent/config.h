/* SPDX-License-Identifier: MIT */
/*
 * `rtune agent`'s configuration: a small "key = value" file (docs/agent.md), its defaults and its validation. A bad
 * line is refused with one error naming file:line; nothing of a refused file is used (a SIGHUP with a bad file keeps
 * the configuration the agent runs with).
 */
#ifndef RT_AGENT_CONFIG_H
#define RT_AGENT_CONFIG_H

#include "publish.h"
#include "rt_store.h"

#include <stdbool.h>
#include <stdint.h>

#define RT_AGENT_CONFIG_DEFAULT "/etc/rtune/agent.conf"
#define RT_AGENT_MAX_WINDOWS 8
#define RT_AGENT_MAX_DEVICES 16
#define RT_AGENT_MAX_PINS 64
#define RT_AGENT_MAX_ARGS 16

/* A daily window of local time [start_min, end_min) in minutes after midnight; end < start wraps midnight. */
struct rt_agent_window {
	int start_min, end_min;
};

struct rt_agent_config {
	char path[RT_AGENT_PATH_LEN];  /* the file read, "" = built-in defaults only */
	char store[RT_AGENT_PATH_LEN]; /* "" = rt_store_default_path() */
	char spool[RT_AGENT_PATH_LEN]; /* probe spool directory, "" = none */
	struct rt_agent_publish_targets publish;
	uint32_t budget_s;			    /* calibration budget per device/port (rtune calibrate --budget) */
	char calibrate_args[RT_AGENT_MAX_ARGS][64]; /* extra `rtune calibrate` arguments */
	size_t n_calibrate_args;
	uint64_t max_age_s;    /* re-calibrate a profile older than this; 0 = never for age */
	uint32_t busy_retry_s; /* a busy device is looked at again after this */
	uint32_t rescan_s;     /* safety-net rescan of the devices even without an event */
	bool require_idle;     /* calibrate only when no other process holds QPs on the device */
	struct rt_agent_window quiet[RT_AGENT_MAX_WINDOWS]; /* never calibrate then (except on demand) */
	size_t n_quiet;
	struct rt_agent_window hours[RT_AGENT_MAX_WINDOWS]; /* calibrate even a busy device then */
	size_t n_hours;
	char devices[RT_AGENT_MAX_DEVICES][64]; /* only these devices, none = all */
	size_t n_devices;
	struct rt_store_pin pins[RT_AGENT_MAX_PINS]; /* pins of the file (added to the store's `rtune pin` ones) */
	size_t n_pins;
};

/* Fills c with the defaults (docs/agent.md). Never fails. */
void rt_agent_config_defaults(struct rt_agent_config *c);

/*
 * Parses a configuration text (len bytes; name is used in messages) over the defaults into out. Returns 0, or EINVAL
 * with err = "NAME:LINE: what is wrong" for the first bad line (out is then unspecified: parse into a scratch copy).
 */
int rt_agent_config_parse(const char *name, const char *text, size_t len, struct rt_agent_config *out,
			  struct rt_error *err);

/*
 * Reads and parses the file at path (at most 64 KiB, a regular file). ENOENT/EACCES... with err "cannot read config
 * 'PATH': ..." when it cannot be read; EINVAL as rt_agent_config_parse(). out is only written on success.
 */
int rt_agent_config_load(const char *path, struct rt_agent_config *out, struct rt_error *err);

/* Parses "DEV[:PORT] OP/QPT key=N [key=N]" (a pin, as `rtune pin` takes it, words in argv) into p. 0 or EINVAL with
 * the bad word named in err. */
int rt_agent_pin_parse(int argc, char *const *argv, struct rt_store_pin *p, struct rt_error *err);

/* True when minute (0..1439) lies in one of the n windows. */
bool rt_agent_in_window(const struct rt_agent_window *w, size_t n, int minute);

#endif
