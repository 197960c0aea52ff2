// SPDX-License-Identifier: MIT
/*
 * The agent's pure decisions (see triggers.h): due or not and why, may calibrate now or not and why, and the guards
 * applied to each published value (pins, low over high confidence).
 */
#include "triggers.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rt_agent_facts_of(const struct rt_device_info *d, int port_num, struct rt_agent_facts *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->device, sizeof(out->device), "%s", d->name);
	snprintf(out->guid, sizeof(out->guid), "%s", d->node_guid);
	snprintf(out->fw_ver, sizeof(out->fw_ver), "%s", d->fw_ver);
	snprintf(out->pcie_speed, sizeof(out->pcie_speed), "%s", d->pcie_speed);
	out->pcie_width = d->pcie_width;
	out->numa_node = d->numa_node;
	out->port = port_num;
	for (int i = 0; i < d->port_count && i < RT_MAX_PORTS; i++)
		if (d->ports[i].port_num == port_num) {
			out->active_mtu = d->ports[i].active_mtu_bytes;
			snprintf(out->state, sizeof(out->state), "%s", d->ports[i].state);
		}
}

/* Appends "; " and a formatted fact change to why. */
static void add_why(char *why, size_t len, const char *what, const char *a, const char *b)
{
	size_t n = strlen(why);

	if (n < len)
		snprintf(why + n, len - n, "%s%s %s -> %s", n ? "; " : "", what, a[0] ? a : "?", b[0] ? b : "?");
}

bool rt_agent_facts_differ(const struct rt_agent_facts *stored, const struct rt_agent_facts *now, char *why, size_t len)
{
	char a[32], b[32];

	if (len)
		why[0] = '\0';
	if (strcmp(stored->fw_ver, now->fw_ver))
		add_why(why, len, "firmware", stored->fw_ver, now->fw_ver);
	if (stored->guid[0] && now->guid[0] && strcmp(stored->guid, now->guid))
		add_why(why, len, "node GUID", stored->guid, now->guid);
	if (strcmp(stored->pcie_speed, now->pcie_speed))
		add_why(why, len, "PCIe link speed", stored->pcie_speed, now->pcie_speed);
	if (stored->pcie_width != now->pcie_width) {
		snprintf(a, sizeof(a), "x%d", stored->pcie_width);
		snprintf(b, sizeof(b), "x%d", now->pcie_width);
		add_why(why, len, "PCIe link width", a, b);
	}
	if (stored->numa_node != now->numa_node) {
		snprintf(a, sizeof(a), "%d", stored->numa_node);
		snprintf(b, sizeof(b), "%d", now->numa_node);
		add_why(why, len, "NUMA node", a, b);
	}
	if (stored->active_mtu != now->active_mtu) {
		snprintf(a, sizeof(a), "%d", stored->active_mtu);
		snprintf(b, sizeof(b), "%d", now->active_mtu);
		add_why(why, len, "active MTU", a, b);
	}
	return len ? why[0] != '\0' : false;
}

const char *rt_agent_trigger_name(enum rt_agent_trigger t)
{
	static const char *const names[] = { "none", "first", "hardware_changed", "aged", "on_demand" };

	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

enum rt_agent_trigger rt_agent_due(const struct rt_agent_facts *now_facts, const struct rt_agent_facts *stored,
				   int64_t measured_at, int64_t now_s, uint64_t max_age_s, bool on_demand, char *why,
				   size_t len)
{
	char diff[512];

	if (on_demand) {
		snprintf(why, len, "calibration asked for");
		return RT_AGENT_TRIG_ON_DEMAND;
	}
	if (!measured_at || !stored) {
		snprintf(why, len, "first sight of %s port %d: no profile entry yet", now_facts->device,
			 now_facts->port);
		return RT_AGENT_TRIG_FIRST;
	}
	if (rt_agent_facts_differ(stored, now_facts, diff, sizeof(diff))) {
		snprintf(why, len, "hardware changed since the last calibration: %s", diff);
		return RT_AGENT_TRIG_HW_CHANGED;
	}
	if (max_age_s && now_s > measured_at && (uint64_t)(now_s - measured_at) > max_age_s) {
		snprintf(why, len, "profile is %lld s old, older than max_profile_age %llu s",
			 (long long)(now_s - measured_at), (unsigned long long)max_age_s);
		return RT_AGENT_TRIG_AGED;
	}
	snprintf(why, len, "profile current");
	return RT_AGENT_TRIG_NONE;
}

const char *rt_agent_gate_name(enum rt_agent_gate g)
{
	static const char *const names[] = { "go", "busy", "quiet_hours", "port_down" };

	return (unsigned)g < sizeof(names) / sizeof(names[0]) ? names[g] : "unknown";
}

enum rt_agent_gate rt_agent_may_calibrate(const struct rt_agent_config *c, const struct rt_agent_facts *f, int busy_qps,
					  int minute, bool on_demand, char *why, size_t len)
{
	bool in_hours = rt_agent_in_window(c->hours, c->n_hours, minute);

	if (strcmp(f->state, "active") != 0) {
		snprintf(why, len, "port %d is %s, not active", f->port, f->state[0] ? f->state : "unknown");
		return RT_AGENT_WAIT_DOWN;
	}
	if (!on_demand && rt_agent_in_window(c->quiet, c->n_quiet, minute)) {
		snprintf(why, len, "inside quiet_hours");
		return RT_AGENT_WAIT_QUIET;
	}
	if (c->require_idle && busy_qps > 0 && !in_hours) {
		snprintf(why, len, "busy: %d QP%s of other processes on %s", busy_qps, busy_qps == 1 ? "" : "s",
			 f->device);
		return RT_AGENT_WAIT_BUSY;
	}
	if (!c->require_idle)
		snprintf(why, len, "require_idle = no");
	else if (busy_qps > 0)
		snprintf(why, len, "inside calibrate_hours (%d QP%s of other processes)", busy_qps,
			 busy_qps == 1 ? "" : "s");
	else if (busy_qps < 0)
		snprintf(why, len, "idle state unknown (the rdma netlink QP dump failed): calibrating");
	else
		snprintf(why, len, "idle: no QPs of other processes on %s", f->device);
	return RT_AGENT_GO;
}

const struct rt_store_pin *rt_agent_pin_find(const struct rt_store_pin *v, size_t n, const char *device, int port,
					     enum rt_profile_opcode op, enum rt_profile_qp_type qpt)
{
	const struct rt_store_pin *hit = NULL;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, device) && v[i].port == port && v[i].opcode == op && v[i].qp_type == qpt)
			hit = &v[i];
	return hit;
}

/* Appends "; " (unless first) and a formatted part to why. */
static void __attribute__((format(printf, 3, 4))) append(char *why, size_t len, const char *fmt, ...)
{
	size_t n = strlen(why);
	va_list ap;

	if (n && n + 2 < len) {
		memcpy(why + n, "; ", 3);
		n += 2;
	}
	if (n >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(why + n, len - n, fmt, ap);
	va_end(ap);
}

unsigned rt_agent_guard(struct rt_agent_decision *d, const struct rt_agent_decision *prev,
			const struct rt_store_pin *pin, char *why, size_t len)
{
	unsigned mask = 0;

	if (len)
		why[0] = '\0';
	if (pin && pin->inline_threshold >= 0) {
		if ((uint32_t)pin->inline_threshold != d->inline_threshold)
			append(why, len, "inline_threshold pinned to %u (measured %u)", (unsigned)pin->inline_threshold,
			       d->inline_threshold);
		d->inline_threshold = (uint32_t)pin->inline_threshold;
		if (d->max_inline_data < d->inline_threshold)
			d->max_inline_data = d->inline_threshold;
		d->inline_confidence = RT_PROFILE_CONF_HIGH;
		d->pinned_inline = true;
		snprintf(d->inline_verdict, sizeof(d->inline_verdict), "pinned");
	} else if (prev && prev->inline_threshold != d->inline_threshold &&
		   d->inline_confidence == RT_PROFILE_CONF_LOW && prev->inline_confidence > RT_PROFILE_CONF_LOW) {
		append(why, len, "inline_threshold kept at %u: the new %u has low confidence, the published one %s",
		       prev->inline_threshold, d->inline_threshold,
		       rt_profile_confidence_name(prev->inline_confidence));
		d->inline_threshold = prev->inline_threshold;
		d->max_inline_data = prev->max_inline_data;
		d->inline_confidence = prev->inline_confidence;
		snprintf(d->inline_verdict, sizeof(d->inline_verdict), "%s", prev->inline_verdict);
		mask |= 4;
	}
	if (pin && pin->signal_interval >= 1) {
		if ((uint32_t)pin->signal_interval != d->signal_interval)
			append(why, len, "signal_interval pinned to %u (measured %u)", (unsigned)pin->signal_interval,
			       d->signal_interval);
		d->signal_interval = (uint32_t)pin->signal_interval;
		if (d->sq_depth < d->signal_interval)
			d->sq_depth = d->signal_interval;
		if (d->cq_depth < d->signal_interval)
			d->cq_depth = d->signal_interval;
		d->signal_confidence = RT_PROFILE_CONF_HIGH;
		d->pinned_signal = true;
		snprintf(d->signal_verdict, sizeof(d->signal_verdict), "pinned");
	} else if (prev && prev->signal_interval != d->signal_interval && d->signal_confidence == RT_PROFILE_CONF_LOW &&
		   prev->signal_confidence > RT_PROFILE_CONF_LOW) {
		append(why, len, "signal_interval kept at %u: the new %u has low confidence, the published one %s",
		       prev->signal_interval, d->signal_interval, rt_profile_confidence_name(prev->signal_confidence));
		d->signal_interval = prev->signal_interval;
		d->sq_depth = prev->sq_depth;
		d->cq_depth = prev->cq_depth;
		d->signal_confidence = prev->signal_confidence;
		snprintf(d->signal_verdict, sizeof(d->signal_verdict), "%s", prev->signal_verdict);
		mask |= 4;
	}
	d->confidence = d->inline_confidence < d->signal_confidence ? d->inline_confidence : d->signal_confidence;
	if (!prev || prev->inline_threshold != d->inline_threshold)
		mask |= 1;
	if (!prev || prev->signal_interval != d->signal_interval)
		mask |= 2;
	return mask;
}
