#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks a `rtune calibrate --out` JSON run (used by the calibrate rxe tests): the status, that every planned latency
# point (both opcodes, both kinds, powers of two up to the limit, inline and not; UD SEND when asked) and the whole
# signaling sweep are there, and that the numbers are internally consistent; optionally that the store has the run
# with the same status and point counts. Prints one line per failed check; exit 1 when any failed.
import argparse
import json
import sqlite3
import sys

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--status", default="complete")
ap.add_argument("--mode", default="loopback")
ap.add_argument("--ud", action="store_true", help="expect UD SEND points")
ap.add_argument("--complete-grid", action="store_true", help="expect every planned point")
ap.add_argument("--db", help="store to cross-check")
a = ap.parse_args()

fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)


r = json.load(open(a.json))
check(r.get("schema") == {"name": "rtune-run", "version": "1.0"}, "schema is %r" % r.get("schema"))
check(r["status"] == a.status, "status %r, expected %r" % (r["status"], a.status))
check(r["env"]["mode"] == a.mode, "mode %r, expected %r" % (r["env"]["mode"], a.mode))
check(r["env"]["clock"] in ("rdtscp", "lfence+rdtsc", "cntvct_el0", "clock_gettime(CLOCK_MONOTONIC)"),
      "clock %r" % r["env"]["clock"])
# the clock's tick and measured resolution: at least a tick, under 100 us (clock_gettime in the TCG guest: ~1.8 us)
tick, res = r["env"].get("clock_tick_ns"), r["env"].get("clock_resolution_ns")
check(tick is not None and res is not None and 0 < tick <= res < 100000, "clock tick %r, resolution %r" % (tick, res))
if a.mode == "loopback":
    # rxe is RoCE: the default GID pick (RoCE v2 IPv4-mapped) is named in the notes
    notes = r["params"].get("notes", "")
    check("gid %d: first RoCE v2 IPv4-mapped GID" % r["gid_index"] in notes, "gid pick not in the notes: %r" % notes)
check(r["env"]["cpu"] >= 0, "no cpu recorded")
lat = r["latency"]
rate = r["rate"]
for p in lat:
    name = "%s/%s/%s/%dB/%s" % (p["op"], p["qp_type"], p["kind"], p["msg_bytes"], "inl" if p["inline"] else "dma")
    check(p["n_samples"] > 0, name + ": no samples")
    check(p["p99_ns"] >= p["median_ns"] > 0, name + ": p99 %s < median %s" % (p["p99_ns"], p["median_ns"]))
    check(p["p999_ns"] >= p["p99_ns"], name + ": p99.9 < p99")
    check(p["min_ns"] <= p["median_ns"], name + ": min > median")
    check(p["ci_lo_ns"] <= p["median_ns"] <= p["ci_hi_ns"], name + ": median outside its CI")
    check(p["cpu_ns_per_op"] >= 0, name + ": negative cpu time")
    # the block-widened CI stays within what was measured; every point was measured in blocks and rounds
    check(p["min_ns"] <= p["ci_lo_ns"], name + ": CI below the smallest sample")
    if "n_blocks" in p:
        check(p["n_blocks"] >= 1 and p["n_rounds"] >= 1, name + ": %d blocks in %d rounds"
              % (p["n_blocks"], p["n_rounds"]))
    check(0 < p["n_kept"] <= p["n_samples"], name + ": n_kept %d of %d" % (p["n_kept"], p["n_samples"]))
    if "samples_ns" in p:
        check(len(p["samples_ns"]) == p["n_kept"], name + ": samples_ns length != n_kept")
        check(min(p["samples_ns"]) >= p["min_ns"] * 0.999, name + ": a kept sample below min")
    check(not p["inline"] or p["msg_bytes"] <= r["max_inline_used"], name + ": inline above max_inline_used")
keys = {(p["op"], p["qp_type"], p["kind"], p["msg_bytes"], p["inline"]) for p in lat}
check(len(keys) == len(lat), "duplicate latency points")
if a.complete_grid:
    sizes = r["params"]["sizes"]
    ops = r["params"]["ops"].split(",")
    qpts = ["rc"] + (["ud"] if a.ud else [])
    check(("ud" in r["params"]["qp_types"]) == a.ud, "qp types %r" % r["params"]["qp_types"])
    for op in ops:
        for qpt in qpts:
            if qpt == "ud" and op != "send":
                continue
            for kind in ("pingpong", "post_cqe"):
                for s in sizes:
                    if qpt == "ud" and s > r["device"]["max_inline_ud"]:
                        continue
                    for inl in (True, False):
                        check((op, qpt, kind, s, inl) in keys, "missing latency point %s/%s/%s/%dB/%s"
                              % (op, qpt, kind, s, "inl" if inl else "dma"))
    sq = r["sq_depth"]
    ns = []
    n = 1
    while n <= sq // 2:
        ns.append(n)
        n *= 2
    rkeys = {(p["op"], p["msg_bytes"], p["inline"], p["signal_interval"]) for p in rate}
    rsizes = sorted({p["msg_bytes"] for p in rate})
    check(len(rsizes) >= 1, "no rate sizes")
    for op in ops:
        for s in rsizes:
            for inl in (True, False):
                for n in ns:
                    check((op, s, inl, n) in rkeys, "missing rate point %s/%dB/%s/N=%d"
                          % (op, s, "inl" if inl else "dma", n))
    for op in ops:
        m = r["cq_moderation"].get(op)
        check(m is not None and m["measured"], "cq moderation of %s not measured" % op)
        if m and not m["supported"]:
            check(len(m["reason"]) > 0, "cq moderation unsupported without a reason")
for p in rate:
    name = "rate %s/%dB/%s/N=%d" % (p["op"], p["msg_bytes"], "inl" if p["inline"] else "dma", p["signal_interval"])
    check(p["reps"] >= 1 and p["msgs"] > 0, name + ": nothing measured")
    check(p["mops_lo"] <= p["mops"] <= p["mops_hi"] and p["mops"] > 0, name + ": mops outside [lo, hi]")
    check(p["enomem"] == 0, name + ": %d ENOMEM (send queue overflow)" % p["enomem"])
    check(p["signal_interval"] <= p["sq_depth"] // 2, name + ": N above sq_depth/2")
    check(p["cpu_ns_per_msg"] >= 0, name + ": negative cpu time")
    if p.get("post_ns_per_msg") is not None:
        # TSC-timed busy cpu (in ibv_post_send and reaping polls) never exceeds the slowest rep's wall time per message
        check(p["cpu_ns_per_msg"] <= 1e3 / p["mops_lo"] * 1.01, name + ": cpu %.0f ns/msg above the wall %.0f ns/msg"
              % (p["cpu_ns_per_msg"], 1e3 / p["mops_lo"]))
        check(0 <= p["post_ns_per_msg"] <= p["cpu_ns_per_msg"] * 1.0001, name + ": post %s ns of cpu %s ns"
              % (p["post_ns_per_msg"], p["cpu_ns_per_msg"]))
# cpu time per op may be 0 for a single short point when the kernel accounts thread time per tick, never everywhere
check(not lat or sum(p["cpu_ns_per_op"] * p["n_samples"] for p in lat) > 0, "no cpu time in any latency point")
check(not rate or sum(p["cpu_ns_per_msg"] * p["msgs"] for p in rate) > 0, "no cpu time in any rate point")
if a.db:
    db = sqlite3.connect(a.db)
    row = db.execute("SELECT id, status FROM runs WHERE uuid = ?", (r["run_id"],)).fetchone()
    check(row is not None, "run %s not in the store" % r["run_id"])
    if row:
        check(row[1] == a.status, "stored status %r, expected %r" % (row[1], a.status))
        nl = db.execute("SELECT count(*) FROM lat_points WHERE run_id = ?", (row[0],)).fetchone()[0]
        nr = db.execute("SELECT count(*) FROM rate_points WHERE run_id = ?", (row[0],)).fetchone()[0]
        check(nl == len(lat) and nr == len(rate), "stored %d/%d points, JSON has %d/%d" % (nl, nr, len(lat), len(rate)))
    ic = db.execute("PRAGMA integrity_check").fetchone()[0]
    check(ic == "ok", "integrity_check: " + ic)
for f in fails[:40]:
    print("FAIL: " + f)
if fails:
    print("FAIL: %d check(s) failed on %s" % (len(fails), a.json))
    sys.exit(1)
print("ok: %s: %s, %d latency points, %d rate points" % (a.json, r["status"], len(lat), len(rate)))
