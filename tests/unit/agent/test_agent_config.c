// SPDX-License-Identifier: MIT
/*
 * The agent's configuration file: every key parsed to its documented value, defaults when absent, and each kind of
 * bad line refused with "FILE:LINE: ..." naming the problem; a refused file changes nothing; pins in `rtune pin`'s
 * words; daily windows including one across midnight.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int parse(const char *text, struct rt_agent_config *c, struct rt_error *err)
{
	return rt_agent_config_parse("agent.conf", text, strlen(text), c, err);
}

static void test_defaults(void **state)
{
	struct rt_agent_config c;
	struct rt_error err;

	(void)state;
	assert_int_equal(parse("# nothing but a comment\n\n   \n", &c, &err), 0);
	assert_string_equal(c.publish.profile, RT_PROFILE_DEFAULT_PATH);
	assert_string_equal(c.store, "");
	assert_string_equal(c.spool, "");
	assert_string_equal(c.publish.prom_textfile, "");
	assert_int_equal(c.budget_s, 20);
	assert_int_equal(c.max_age_s, 7 * 86400);
	assert_true(c.require_idle);
	assert_int_equal(c.n_pins, 0);
}

static void test_every_key(void **state)
{
	static const char text[] = "store = /var/lib/rtune/x.db\n"
				   "spool=/var/spool/rtune   # the probe's files\n"
				   "publish_profile = off\n"
				   "publish_prometheus = /var/lib/node_exporter/rtune.prom\n"
				   "publish_nfd = /etc/kubernetes/node-feature-discovery/features.d/rtune\n"
				   "publish_ucx = /etc/ucx/rtune.conf\n"
				   "publish_libfabric = /etc/rtune/libfabric.env\n"
				   "publish_nccl = /etc/rtune/nccl.env\n"
				   "nfd_expiry = 2d\n"
				   "budget = 2m\n"
				   "calibrate_args = --quick --sizes 8,64,256\n"
				   "max_profile_age = 12h\n"
				   "busy_retry = 30s\n"
				   "rescan = 10m\n"
				   "require_idle = no\n"
				   "quiet_hours = 08:00-18:00, 22:00-02:00\n"
				   "calibrate_hours = 02:00-04:00\n"
				   "devices = rxe0 mlx5_1\n"
				   "pin = mlx5_1:2 write/rc inline_threshold=128 signal_interval=16\n"
				   "pin = rxe0 send/ud signal_interval=4\r\n";
	struct rt_agent_config c;
	struct rt_error err;

	(void)state;
	assert_int_equal(parse(text, &c, &err), 0);
	assert_string_equal(c.store, "/var/lib/rtune/x.db");
	assert_string_equal(c.spool, "/var/spool/rtune");
	assert_string_equal(c.publish.profile, "");
	assert_string_equal(c.publish.prom_textfile, "/var/lib/node_exporter/rtune.prom");
	assert_string_equal(c.publish.nfd_features, "/etc/kubernetes/node-feature-discovery/features.d/rtune");
	assert_string_equal(c.publish.ucx_conf, "/etc/ucx/rtune.conf");
	assert_string_equal(c.publish.libfabric_env, "/etc/rtune/libfabric.env");
	assert_string_equal(c.publish.nccl_env, "/etc/rtune/nccl.env");
	assert_int_equal(c.publish.nfd_expiry_s, 2 * 86400);
	assert_int_equal(c.budget_s, 120);
	assert_int_equal(c.n_calibrate_args, 3);
	assert_string_equal(c.calibrate_args[2], "8,64,256");
	assert_int_equal(c.max_age_s, 12 * 3600);
	assert_int_equal(c.busy_retry_s, 30);
	assert_int_equal(c.rescan_s, 600);
	assert_false(c.require_idle);
	assert_int_equal(c.n_quiet, 2);
	assert_int_equal(c.quiet[1].start_min, 22 * 60);
	assert_int_equal(c.quiet[1].end_min, 2 * 60);
	assert_int_equal(c.n_hours, 1);
	assert_int_equal(c.n_devices, 2);
	assert_string_equal(c.devices[1], "mlx5_1");
	assert_int_equal(c.n_pins, 2);
	assert_string_equal(c.pins[0].device, "mlx5_1");
	assert_int_equal(c.pins[0].port, 2);
	assert_int_equal(c.pins[0].opcode, RT_PROFILE_OP_WRITE);
	assert_int_equal(c.pins[0].qp_type, RT_PROFILE_QPT_RC);
	assert_int_equal(c.pins[0].inline_threshold, 128);
	assert_int_equal(c.pins[0].signal_interval, 16);
	assert_int_equal(c.pins[1].port, 1);
	assert_int_equal(c.pins[1].qp_type, RT_PROFILE_QPT_UD);
	assert_int_equal(c.pins[1].inline_threshold, -1);
	assert_int_equal(c.pins[1].signal_interval, 4);
	/* windows: inside, at the end (exclusive), across midnight */
	assert_true(rt_agent_in_window(c.quiet, c.n_quiet, 8 * 60));
	assert_false(rt_agent_in_window(c.quiet, c.n_quiet, 18 * 60));
	assert_true(rt_agent_in_window(c.quiet, c.n_quiet, 23 * 60 + 59));
	assert_true(rt_agent_in_window(c.quiet, c.n_quiet, 60));
	assert_false(rt_agent_in_window(c.quiet, c.n_quiet, 3 * 60));
}

static void test_bad_lines(void **state)
{
	static const struct {
		const char *text, *error;
	} cases[] = {
		{ "frobnicate = 1\n", "agent.conf:1: unknown key 'frobnicate'" },
		{ "# ok\nbudget 20\n", "agent.conf:2: expected 'key = value', got 'budget 20'" },
		{ "budget =\n", "agent.conf:1: budget: no value" },
		{ "= 3\n", "agent.conf:1: no key before '='" },
		{ "\n\nbudget = 1\n", "agent.conf:3: budget: '1' is not a duration of 2s..1h" },
		{ "budget = 20x\n", "agent.conf:1: budget: '20x' is not a duration of 2s..1h" },
		{ "budget = 2h\n", "agent.conf:1: budget: '2h' is not a duration of 2s..1h" },
		{ "store = relative.db\n", "agent.conf:1: store: 'relative.db' is not an absolute path" },
		{ "store = off\n", "agent.conf:1: store: 'off' is not an absolute path" },
		{ "publish_nfd = features.d/rtune\n",
		  "agent.conf:1: publish_nfd: 'features.d/rtune' is not an absolute path or off" },
		{ "require_idle = maybe\n", "agent.conf:1: require_idle: 'maybe' is not yes or no" },
		{ "quiet_hours = 8-18\n",
		  "agent.conf:1: quiet_hours: '8-18' is not HH:MM-HH:MM[, ...] (at most 8 windows)" },
		{ "quiet_hours = 08:00-08:00\n",
		  "agent.conf:1: quiet_hours: '08:00-08:00' is not HH:MM-HH:MM[, ...] (at most 8 windows)" },
		{ "calibrate_hours = 25:00-01:00\n",
		  "agent.conf:1: calibrate_hours: '25:00-01:00' is not HH:MM-HH:MM[, ...] (at most 8 windows)" },
		{ "max_profile_age = 10s\n",
		  "agent.conf:1: max_profile_age: '10s' is not a duration of 1m..3650d or off" },
		{ "calibrate_args = --quick --db=/x\n",
		  "agent.conf:1: calibrate_args: '--db=/x' is set by the agent itself" },
		{ "calibrate_args = --budget 3\n",
		  "agent.conf:1: calibrate_args: '--budget' is set by the agent itself" },
		{ "pin = rxe0 send/rc\n",
		  "agent.conf:1: pin: a pin is 'DEV[:PORT] OP/QPT inline_threshold=N|signal_interval=N'" },
		{ "pin = rxe0:0 send/rc inline_threshold=1\n", "agent.conf:1: pin: 'rxe0:0': the port is 1..255" },
		{ "pin = rxe0 read/rc inline_threshold=1\n",
		  "agent.conf:1: pin: 'read/rc': the opcode is send or write" },
		{ "pin = rxe0 send/uc inline_threshold=1\n",
		  "agent.conf:1: pin: 'send/uc': the QP type is rc, ud or srd" },
		{ "pin = rxe0 send/rc signal_interval=0\n",
		  "agent.conf:1: pin: 'signal_interval=0' is not inline_threshold=0..65536 or signal_interval=1..65536" },
		{ "pin = rxe0 send/rc inline_threshold=-4\n",
		  "agent.conf:1: pin: 'inline_threshold=-4' is not inline_threshold=0..65536 or signal_interval=1..65536" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rt_agent_config c;
		struct rt_error err = { 0 };

		assert_int_equal(parse(cases[i].text, &c, &err), EINVAL);
		assert_string_equal(err.text, cases[i].error);
	}
}

static void test_load_file(void **state)
{
	char dir[] = "/tmp/rtune-agent-conf.XXXXXX", path[256];
	struct rt_agent_config c, keep;
	struct rt_error err;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/agent.conf", dir);
	assert_int_equal(rt_agent_config_load(path, &c, &err), ENOENT);
	assert_non_null(strstr(err.text, "cannot read config '"));
	assert_int_equal(rt_agent_config_load(dir, &c, &err), EINVAL);
	assert_non_null(strstr(err.text, "not a regular file"));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("budget = 7s\nspool = /var/spool/rtune\n", f);
	fclose(f);
	assert_int_equal(rt_agent_config_load(path, &c, &err), 0);
	assert_int_equal(c.budget_s, 7);
	assert_string_equal(c.path, path);
	/* a bad file leaves the caller's configuration untouched (SIGHUP keeps the running one) */
	keep = c;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("budget = 9s\nbogus = 1\n", f);
	fclose(f);
	assert_int_equal(rt_agent_config_load(path, &c, &err), EINVAL);
	assert_non_null(strstr(err.text, "agent.conf:2: unknown key 'bogus'"));
	assert_memory_equal(&c, &keep, sizeof(c));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_load_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
