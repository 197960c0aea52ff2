// SPDX-License-Identifier: MIT
/*
 * The agent's decisions: due on first sight, on each hardware fact that changed (firmware, PCIe speed and width,
 * NUMA node, MTU), on age, on demand, and not otherwise; may calibrate only when the port is active, outside quiet
 * hours, and idle (or inside calibrate_hours, or require_idle = no); the publication guards: a pin always wins, a
 * low-confidence value never replaces a confident one, while a confident change, or a low one over a low one, is
 * published; and the pins stored by `rtune pin` (schema v7) survive a reopen, merge per field and are removed.
 */
#include "config.h"
#include "rt_store.h"
#include "triggers.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void facts(struct rt_agent_facts *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->device, sizeof(f->device), "mlx5_0");
	snprintf(f->fw_ver, sizeof(f->fw_ver), "28.39.1002");
	snprintf(f->pcie_speed, sizeof(f->pcie_speed), "16.0 GT/s PCIe");
	snprintf(f->state, sizeof(f->state), "active");
	f->port = 1;
	f->pcie_width = 16;
	f->numa_node = 0;
	f->active_mtu = 4096;
}

static void test_due(void **state)
{
	struct rt_agent_facts now, old;
	char why[512];

	(void)state;
	facts(&now);
	old = now;
	assert_int_equal(rt_agent_due(&now, NULL, 0, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_FIRST);
	assert_string_equal(why, "first sight of mlx5_0 port 1: no profile entry yet");
	assert_int_equal(rt_agent_due(&now, &old, 0, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_FIRST);
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_NONE);
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, true, why, sizeof(why)), RT_AGENT_TRIG_ON_DEMAND);
	/* age: strictly older than the limit */
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 100, false, why, sizeof(why)), RT_AGENT_TRIG_NONE);
	assert_int_equal(rt_agent_due(&now, &old, 900, 1001, 100, false, why, sizeof(why)), RT_AGENT_TRIG_AGED);
	assert_string_equal(why, "profile is 101 s old, older than max_profile_age 100 s");
	/* each fact on its own */
	now.active_mtu = 1024;
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_HW_CHANGED);
	assert_string_equal(why, "hardware changed since the last calibration: active MTU 4096 -> 1024");
	facts(&now);
	snprintf(now.fw_ver, sizeof(now.fw_ver), "28.40.1000");
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_HW_CHANGED);
	assert_non_null(strstr(why, "firmware 28.39.1002 -> 28.40.1000"));
	facts(&now);
	now.pcie_width = 8;
	snprintf(now.pcie_speed, sizeof(now.pcie_speed), "8.0 GT/s PCIe");
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_HW_CHANGED);
	assert_non_null(strstr(why, "PCIe link speed 16.0 GT/s PCIe -> 8.0 GT/s PCIe; PCIe link width x16 -> x8"));
	facts(&now);
	now.numa_node = 1;
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_HW_CHANGED);
	assert_non_null(strstr(why, "NUMA node 0 -> 1"));
	/* a changed port state is not a hardware change */
	facts(&now);
	snprintf(now.state, sizeof(now.state), "down");
	assert_int_equal(rt_agent_due(&now, &old, 900, 1000, 0, false, why, sizeof(why)), RT_AGENT_TRIG_NONE);
}

static void test_gate(void **state)
{
	struct rt_agent_config c;
	struct rt_agent_facts f;
	char why[256];

	(void)state;
	rt_agent_config_defaults(&c);
	facts(&f);
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 0, 600, false, why, sizeof(why)), RT_AGENT_GO);
	assert_string_equal(why, "idle: no QPs of other processes on mlx5_0");
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 2, 600, false, why, sizeof(why)), RT_AGENT_WAIT_BUSY);
	assert_string_equal(why, "busy: 2 QPs of other processes on mlx5_0");
	/* on demand never skips the busy check */
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 1, 600, true, why, sizeof(why)), RT_AGENT_WAIT_BUSY);
	assert_int_equal(rt_agent_may_calibrate(&c, &f, -1, 600, false, why, sizeof(why)), RT_AGENT_GO);
	assert_non_null(strstr(why, "idle state unknown"));
	/* calibrate_hours: a busy device is calibrated inside them */
	c.hours[0] = (struct rt_agent_window){ 9 * 60, 11 * 60 };
	c.n_hours = 1;
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 2, 10 * 60, false, why, sizeof(why)), RT_AGENT_GO);
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 2, 12 * 60, false, why, sizeof(why)), RT_AGENT_WAIT_BUSY);
	/* quiet hours: not even when idle, but on demand yes */
	c.quiet[0] = (struct rt_agent_window){ 23 * 60, 60 };
	c.n_quiet = 1;
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 0, 30, false, why, sizeof(why)), RT_AGENT_WAIT_QUIET);
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 0, 30, true, why, sizeof(why)), RT_AGENT_GO);
	c.require_idle = false;
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 5, 12 * 60, false, why, sizeof(why)), RT_AGENT_GO);
	snprintf(f.state, sizeof(f.state), "down");
	assert_int_equal(rt_agent_may_calibrate(&c, &f, 0, 12 * 60, true, why, sizeof(why)), RT_AGENT_WAIT_DOWN);
}

static void decision(struct rt_agent_decision *d, uint32_t thr, enum rt_profile_confidence ic, uint32_t n,
		     enum rt_profile_confidence sc)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->device, sizeof(d->device), "mlx5_0");
	d->port = 1;
	d->inline_threshold = thr;
	d->max_inline_data = thr;
	d->inline_confidence = ic;
	d->signal_interval = n;
	d->sq_depth = d->cq_depth = 256;
	d->signal_confidence = sc;
	snprintf(d->inline_verdict, sizeof(d->inline_verdict), "threshold");
	snprintf(d->signal_verdict, sizeof(d->signal_verdict), "knee");
}

static void test_guard(void **state)
{
	struct rt_agent_decision d, prev;
	struct rt_store_pin pin;
	char why[512];
	unsigned m;

	(void)state;
	/* low over high: both values kept */
	decision(&prev, 128, RT_PROFILE_CONF_HIGH, 16, RT_PROFILE_CONF_MEDIUM);
	decision(&d, 64, RT_PROFILE_CONF_LOW, 4, RT_PROFILE_CONF_LOW);
	m = rt_agent_guard(&d, &prev, NULL, why, sizeof(why));
	assert_int_equal(m, 4);
	assert_int_equal(d.inline_threshold, 128);
	assert_int_equal(d.inline_confidence, RT_PROFILE_CONF_HIGH);
	assert_int_equal(d.signal_interval, 16);
	assert_int_equal(d.confidence, RT_PROFILE_CONF_MEDIUM);
	assert_string_equal(why, "inline_threshold kept at 128: the new 64 has low confidence, the published one high; "
				 "signal_interval kept at 16: the new 4 has low confidence, the published one medium");
	/* a confident change is published */
	decision(&d, 64, RT_PROFILE_CONF_MEDIUM, 16, RT_PROFILE_CONF_MEDIUM);
	m = rt_agent_guard(&d, &prev, NULL, why, sizeof(why));
	assert_int_equal(m, 1);
	assert_int_equal(d.inline_threshold, 64);
	assert_string_equal(why, "");
	/* low over low is published (nothing confident to protect) */
	decision(&prev, 128, RT_PROFILE_CONF_LOW, 16, RT_PROFILE_CONF_LOW);
	decision(&d, 64, RT_PROFILE_CONF_LOW, 16, RT_PROFILE_CONF_LOW);
	assert_int_equal(rt_agent_guard(&d, &prev, NULL, why, sizeof(why)), 1);
	assert_int_equal(d.inline_threshold, 64);
	/* first publication: everything is a change */
	decision(&d, 64, RT_PROFILE_CONF_LOW, 16, RT_PROFILE_CONF_LOW);
	assert_int_equal(rt_agent_guard(&d, NULL, NULL, why, sizeof(why)), 3);
	/* a pin wins over any measurement and over the low-confidence guard, and raises max_inline_data */
	memset(&pin, 0, sizeof(pin));
	pin.inline_threshold = 200;
	pin.signal_interval = -1;
	decision(&prev, 128, RT_PROFILE_CONF_HIGH, 16, RT_PROFILE_CONF_HIGH);
	decision(&d, 64, RT_PROFILE_CONF_HIGH, 8, RT_PROFILE_CONF_HIGH);
	m = rt_agent_guard(&d, &prev, &pin, why, sizeof(why));
	assert_int_equal(d.inline_threshold, 200);
	assert_int_equal(d.max_inline_data, 200);
	assert_true(d.pinned_inline);
	assert_false(d.pinned_signal);
	assert_string_equal(d.inline_verdict, "pinned");
	assert_int_equal(d.signal_interval, 8); /* not pinned: measured, high confidence */
	assert_int_equal(m, 3);
	assert_string_equal(why, "inline_threshold pinned to 200 (measured 64)");
	/* the pinned value stays when it was already published: no change */
	decision(&prev, 200, RT_PROFILE_CONF_HIGH, 8, RT_PROFILE_CONF_HIGH);
	decision(&d, 32, RT_PROFILE_CONF_HIGH, 8, RT_PROFILE_CONF_HIGH);
	assert_int_equal(rt_agent_guard(&d, &prev, &pin, why, sizeof(why)), 0);
	assert_int_equal(d.inline_threshold, 200);
	pin.inline_threshold = -1;
	pin.signal_interval = 32;
	decision(&d, 32, RT_PROFILE_CONF_HIGH, 8, RT_PROFILE_CONF_HIGH);
	rt_agent_guard(&d, NULL, &pin, why, sizeof(why));
	assert_int_equal(d.signal_interval, 32);
	assert_true(d.pinned_signal);
	assert_int_equal(d.inline_threshold, 32);
}

static void test_pins_in_store(void **state)
{
	char dir[] = "/tmp/rtune-agent-pins.XXXXXX", path[256];
	struct rt_store_pin p = { .port = 1, .inline_threshold = 64, .signal_interval = -1 }, *v = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	size_t n = 0, removed = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.db", dir);
	snprintf(p.device, sizeof(p.device), "rxe0");
	assert_int_equal(rt_store_open(path, &st, &err), 0);
	assert_int_equal(rt_store_schema_version(st), RT_STORE_SCHEMA_VERSION);
	assert_int_equal(rt_store_pin_set(st, &p, &err), 0);
	p.inline_threshold = -1;
	p.signal_interval = 16;
	assert_int_equal(rt_store_pin_set(st, &p, &err), 0); /* merges: threshold kept */
	p.signal_interval = 0;
	assert_int_equal(rt_store_pin_set(st, &p, &err), EINVAL);
	assert_string_equal(err.text, "pin: signal_interval 0 is not 1..65536");
	p.signal_interval = -1;
	assert_int_equal(rt_store_pin_set(st, &p, &err), EINVAL);
	p.opcode = RT_PROFILE_OP_WRITE;
	p.inline_threshold = 0;
	assert_int_equal(rt_store_pin_set(st, &p, &err), 0);
	rt_store_close(st);
	assert_int_equal(rt_store_open_existing(path, &st, &err), 0);
	assert_int_equal(rt_store_pin_list(st, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].opcode, RT_PROFILE_OP_SEND);
	assert_int_equal(v[0].inline_threshold, 64);
	assert_int_equal(v[0].signal_interval, 16);
	assert_int_equal(v[1].opcode, RT_PROFILE_OP_WRITE);
	assert_int_equal(v[1].inline_threshold, 0);
	assert_int_equal(v[1].signal_interval, -1);
	assert_ptr_equal(rt_agent_pin_find(v, n, "rxe0", 1, RT_PROFILE_OP_WRITE, RT_PROFILE_QPT_RC), &v[1]);
	assert_null(rt_agent_pin_find(v, n, "rxe0", 2, RT_PROFILE_OP_WRITE, RT_PROFILE_QPT_RC));
	free(v);
	/* clearing one field keeps the other; clearing the last field removes the pin */
	assert_int_equal(
		rt_store_pin_clear(st, "rxe0", 0, false, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC, 'i', &removed, &err),
		0);
	assert_int_equal(rt_store_pin_list(st, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].inline_threshold, -1);
	assert_int_equal(v[0].signal_interval, 16);
	free(v);
	assert_int_equal(
		rt_store_pin_clear(st, "rxe0", 1, true, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC, 'b', &removed, &err), 0);
	assert_int_equal(removed, 2);
	assert_int_equal(rt_store_pin_list(st, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(
		rt_store_pin_clear(st, "rxe0", 0, true, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC, 'b', &removed, &err),
		ENOENT);
	rt_store_close(st);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due),
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_pins_in_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
