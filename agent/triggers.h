/* SPDX-License-Identifier: MIT */
/*
 * The agent's decisions, as pure functions (no device, store or clock of their own): whether a device/port is due
 * for calibration and why (first sight, hardware facts changed, profile aged, on demand), whether it may be
 * calibrated now (idle / busy, quiet hours, calibration hours), and which value is published for an entry (an
 * operator's pin always; never a low-confidence value over a confident one; otherwise the store's current decision,
 * which `rtune tune`'s hysteresis already kept within the between-run noise).
 */
#ifndef RT_AGENT_TRIGGERS_H
#define RT_AGENT_TRIGGERS_H

#include "config.h"
#include "publish.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The hardware facts of one port that a calibration depends on (compared with what the last calibration saw). */
struct rt_agent_facts {
	char device[64];
	char guid[24];
	int port;
	char fw_ver[64];
	char pcie_speed[32];
	int pcie_width;
	int numa_node;
	int active_mtu;
	char state[16];
};

/* The facts of d's port port_num into out (zeroed fields when d has no such port). */
void rt_agent_facts_of(const struct rt_device_info *d, int port_num, struct rt_agent_facts *out);

/* True when now differs from stored in a fact a calibration depends on (firmware, PCIe speed/width, NUMA node, MTU,
 * GUID); why receives one line naming each ("mtu 1024 -> 4096"). */
bool rt_agent_facts_differ(const struct rt_agent_facts *stored, const struct rt_agent_facts *now, char *why,
			   size_t len);

enum rt_agent_trigger {
	RT_AGENT_TRIG_NONE = 0,
	RT_AGENT_TRIG_FIRST,	  /* never calibrated on this node: no profile entry for the port */
	RT_AGENT_TRIG_HW_CHANGED, /* facts differ from those the last calibration recorded */
	RT_AGENT_TRIG_AGED,	  /* the newest profile entry is older than max_profile_age */
	RT_AGENT_TRIG_ON_DEMAND,  /* --once, or SIGUSR1 */
};
/* "none", "first", "hardware_changed", "aged", "on_demand". */
const char *rt_agent_trigger_name(enum rt_agent_trigger t);

/*
 * Why (if at all) a port is due: stored is what the last calibration saw (NULL: none), measured_at the newest
 * profile entry's time of the port (0: none), now_s the time, max_age_s 0 = no age limit. Order: on demand, first,
 * hardware changed, aged. why: one line.
 */
enum rt_agent_trigger rt_agent_due(const struct rt_agent_facts *now_facts, const struct rt_agent_facts *stored,
				   int64_t measured_at, int64_t now_s, uint64_t max_age_s, bool on_demand, char *why,
				   size_t len);

enum rt_agent_gate {
	RT_AGENT_GO = 0,
	RT_AGENT_WAIT_BUSY,  /* other processes hold QPs on the device: retried after busy_retry */
	RT_AGENT_WAIT_QUIET, /* inside quiet_hours */
	RT_AGENT_WAIT_DOWN,  /* the port is not active */
};
/* "go", "busy", "quiet_hours", "port_down". */
const char *rt_agent_gate_name(enum rt_agent_gate g);

/*
 * Whether a due port may be calibrated now. busy_qps: QPs other processes hold on the device (-1 unknown: treated as
 * idle, with the reason in why), minute: local minute of the day. On demand skips the quiet hours, never the busy
 * check; inside calibrate_hours a busy device is calibrated anyway (the operator's maintenance window);
 * require_idle=no skips the busy check.
 */
enum rt_agent_gate rt_agent_may_calibrate(const struct rt_agent_config *c, const struct rt_agent_facts *f, int busy_qps,
					  int minute, bool on_demand, char *why, size_t len);

/*
 * The guards on one decision about to be published. d holds the store's current decision; prev the one published
 * before (NULL: none); pin the operator's pin of d's key (NULL: none). A pinned field takes the pin's value (verdict
 * "pinned", confidence high: the operator's word). Otherwise a field whose new value differs from prev's while its
 * confidence is low and prev's was medium or high keeps prev's value and confidence. Returns a bit mask: 1 = inline
 * changed vs prev, 2 = signal changed, 4 = a guard kept prev's value; why gets one line describing every guard applied
 * ("" when none).
 */
unsigned rt_agent_guard(struct rt_agent_decision *d, const struct rt_agent_decision *prev,
			const struct rt_store_pin *pin, char *why, size_t len);

/* The pin of (device, port, opcode, qp type) among v[0..n), NULL when none; the last one wins (config after store). */
const struct rt_store_pin *rt_agent_pin_find(const struct rt_store_pin *v, size_t n, const char *device, int port,
					     enum rt_profile_opcode op, enum rt_profile_qp_type qpt);

#endif
