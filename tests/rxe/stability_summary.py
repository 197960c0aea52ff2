#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Summarises the runs written by tests/rxe/calibrate-stability.sh: per run the run time, latency rounds, notes, and for
# send/rc/pingpong per size the inline and non-inline medians with their CIs, samples (blocks, rounds when recorded),
# and the verdict (inline significantly faster '+', slower '-', or not '='); then the tuner's thresholds and N.
import glob
import json
import os
import sys

d = sys.argv[1]
op, qpt, kind = (sys.argv[2:5] if len(sys.argv) >= 5 else ("send", "rc", "pingpong"))
for f in sorted(glob.glob(os.path.join(d, "run*.json")), key=lambda s: int(s.split("run")[-1].split(".")[0])):
    r = json.load(open(f))
    p = r["params"]
    print("%s: %s, run %.2f s (latency %.2f s in %s rounds, sweep %.2f s)" % (
        os.path.basename(f), r["status"], (r["ended_ns"] - r["started_ns"]) / 1e9, p.get("latency_s", 0),
        p.get("latency_rounds"), p.get("signaling_s", 0)))
    if p.get("notes"):
        print("  notes: " + p["notes"])
    pts = {}
    for x in r["latency"]:
        if (x["op"], x["qp_type"], x["kind"]) == (op, qpt, kind):
            pts.setdefault(x["msg_bytes"], {})[x["inline"]] = x
    slower = []
    for s in sorted(pts):
        i, n = pts[s].get(True), pts[s].get(False)
        if not i or not n:
            continue
        v = "+" if i["ci_hi_ns"] < n["ci_lo_ns"] else "-" if n["ci_hi_ns"] < i["ci_lo_ns"] else "="
        if v == "-":
            slower.append(s)

        def fmt(x):
            extra = ""
            if "n_blocks" in x:
                extra = " b%d r%d%s" % (x["n_blocks"], x["n_rounds"], " R" if x.get("remeasured") else "")
            return "%7.0f [%7.0f,%7.0f] n%-5d%s" % (x["median_ns"], x["ci_lo_ns"], x["ci_hi_ns"], x["n_samples"], extra)
        print("  %5d B  inl %s | dma %s  %s" % (s, fmt(i), fmt(n), v))
    print("  inline significantly slower at: %s" % (slower or "none"))
    rates = [x for x in r["rate"] if x["msg_bytes"] == 8 and x["op"] == "send"]
    if rates:
        print("  rate send 8B: " + ", ".join("%s N=%d %.4f Mops cpu %.0f ns" % (
            "inl" if x["inline"] else "dma", x["signal_interval"], x["mops"], x["cpu_ns_per_msg"])
            for x in sorted(rates, key=lambda x: (not x["inline"], x["signal_interval"]))))
    t = f.replace("run", "tune", 1) if False else os.path.join(d, os.path.basename(f).replace("run", "tune"))
    try:
        tj = json.load(open(t))
        txt = json.dumps(tj)
        decs = tj.get("decisions") or tj.get("entries") or tj
        out = []
        for e in (decs if isinstance(decs, list) else []):
            if isinstance(e, dict):
                out.append("%s/%s: thr %s N %s (%s)" % (e.get("op"), e.get("qp_type"), e.get("inline_threshold",
                           e.get("inline_max_bytes")), e.get("signal_interval", e.get("signal_every")),
                           e.get("confidence")))
        print("  tune: " + ("; ".join(out[:8]) if out else txt[:300]))
    except (OSError, ValueError) as e:
        print("  tune: unreadable (%s)" % e)
