#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes a JSON profile v1 document (with the "hardware" object and per-entry "calibration" that `rtune report` reads)
# for the rxe report test, from what a guest really reported: `rtune devices --json` (node, CPU model, NUMA node count,
# the device's facts) and, when given, an `rtune calibrate --out` run (run id, the CPU/NUMA node it ran on, and the
# decisions taken naively from its medians: the largest size where inline beat non-inline, the smallest N within 2 %
# of the best rate). Used because `rtune tune` (which would make the real profile) is not available yet; without a run
# the decisions are synthetic (64 B, N=16) and say so in their reason.
# usage: report_profile.py DEVICES_JSON RUN_JSON|- HOSTNAME OUT
import json
import sys
import time
import uuid

devices_path, run_path, hostname, out = sys.argv[1:5]
devs = json.load(open(devices_path))
run = json.load(open(run_path)) if run_path != "-" else None
node = devs["node"]
dev = devs["devices"][0]
port = dev["ports"][0]
dev_numa = dev.get("numa_node") if dev.get("numa_node") is not None else -1


def decide(run):
    lat = [p for p in run["latency"] if p["op"] == "send" and p["qp_type"] == "rc" and p["kind"] == "pingpong"]
    inl = {p["msg_bytes"]: p["median_ns"] for p in lat if p["inline"]}
    non = {p["msg_bytes"]: p["median_ns"] for p in lat if not p["inline"]}
    wins = [s for s in inl if s in non and inl[s] is not None and non[s] is not None and inl[s] < non[s]]
    thr = max(wins) if wins else 0
    rate = [p for p in run["rate"] if p["op"] == "send" and p["qp_type"] == "rc" and p["mops"]]
    n = 16
    if rate:
        small = min(p["msg_bytes"] for p in rate)
        pts = [p for p in rate if p["msg_bytes"] == small]
        best = max(p["mops"] for p in pts)
        n = min(p["signal_interval"] for p in pts if p["mops"] >= 0.98 * best)
    return thr, n


if run:
    thr, n = decide(run)
    sq = max(run.get("sq_depth") or 128, n)
    env = run["env"]
    cal = {"cpu_numa_node": env.get("cpu_numa_node") if env.get("cpu_numa_node", -1) >= 0 else None}
    if env.get("device_numa_node", -1) >= 0 and env.get("cpu_numa_node", -1) >= 0:
        cal["numa_local"] = env["cpu_numa_node"] == env["device_numa_node"]
    run_id, cpus = run["run_id"], str(env.get("cpu", ""))
    when = int(run["started_ns"] // 1000000000)
    reason = {"code": "rxe_test_naive", "text": "taken from the run's medians by tests/rxe/report_profile.py "
              "(rtune tune not available yet)"}
else:
    thr, n, sq, cal, run_id, cpus, when = 64, 16, 128, None, str(uuid.uuid4()), "", int(time.time())
    reason = {"code": "synthetic", "text": "synthetic decision (no calibration run)"}

pcie = dev.get("pcie")
doc = {
    "schema": {"name": "rtune-profile", "version": "1.0"},
    "rtune_version": "0.1.0",
    "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "node": {"hostname": hostname, "machine_id": uuid.uuid5(uuid.NAMESPACE_DNS, hostname).hex,
             "cpu_model": node.get("cpu_model", ""), "kernel": node.get("kernel", ""),
             "cpu_count": node.get("cpu_count", 1), "numa_nodes": node.get("numa_nodes", 1),
             "hardware_signature": ""},
    "hardware": {
        "cpu_model": node.get("cpu_model", ""), "numa_nodes": node.get("numa_nodes", 1),
        "devices": [{
            "name": dev["name"], "guid": dev.get("node_guid", ""), "vendor_id": dev.get("vendor_id", 0),
            "vendor_part_id": dev.get("vendor_part_id", 0), "fw_ver": dev.get("fw_ver", ""),
            "link_layer": port.get("link_layer", ""), "active_mtu": port.get("active_mtu_bytes", 0),
            "numa_node": dev_numa if dev_numa >= 0 else None,
            "pcie": None if not pcie else {
                "speed": pcie.get("link_speed") or "", "width": pcie.get("link_width") or 0,
                "max_payload_bytes": pcie.get("max_payload_bytes"),
                "max_read_request_bytes": pcie.get("max_read_request_bytes")},
        }],
    },
    "entries": [{
        "device": dev["name"], "guid": dev.get("node_guid", ""), "port": port.get("port", 1), "opcode": "send",
        "qp_type": "rc", "inline_threshold": thr, "max_inline_data": max(thr, 0), "signal_interval": n,
        "sq_depth": sq, "cq_depth": 2 * sq, "cq_moderation": None, "numa_node": dev_numa, "cpus": cpus,
        "confidence": "medium", "reasons": [reason],
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)), "run_id": run_id, "app": None,
        "rtune_version": "0.1.0",
    }],
}
if cal is not None:
    doc["entries"][0]["calibration"] = cal
json.dump(doc, open(out, "w"), indent=1)
print(f"report_profile: {out}: {hostname} numa_nodes={node.get('numa_nodes')} threshold={thr} N={n} "
      f"calibration={cal} ({reason['code']})")
