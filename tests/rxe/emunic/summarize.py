#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Prints a `rtune calibrate --out` run's raw figures the emulated-NIC models act on: per (op, qp type, kind) the
# latency median inline vs non-inline per size and their difference, and per rate series the Mops per N with 1/rate.
import json
import sys

for path in sys.argv[1:]:
    r = json.load(open(path))
    print("== %s (status %s, sizes %s, sq_depth %s)" % (path, r["status"], r["params"]["sizes"], r.get("sq_depth")))
    pts = {}
    for p in r["latency"]:
        pts.setdefault((p["op"], p["qp_type"], p["kind"]), {}).setdefault(p["msg_bytes"], {})[p["inline"]] = p
    for key in sorted(pts):
        print("  latency %s/%s/%s: size: inline / non-inline median ns (diff non-inline - inline)" % key)
        row = []
        for s in sorted(pts[key]):
            d = pts[key][s]
            if True in d and False in d:
                a, b = d[True]["median_ns"], d[False]["median_ns"]
                row.append("%d: %.0f/%.0f (%+.0f)" % (s, a, b, b - a))
            else:
                row.append("%d: %s" % (s, "/".join("%.0f" % d[k]["median_ns"] for k in d)))
        for i in range(0, len(row), 4):
            print("    " + "   ".join(row[i:i + 4]))
    ser = {}
    for p in r["rate"]:
        ser.setdefault((p["op"], p["msg_bytes"], p["inline"]), []).append(p)
    for key in sorted(ser):
        pp = sorted(ser[key], key=lambda p: p["signal_interval"])
        print("  rate %s %dB %s: " % (key[0], key[1], "inl" if key[2] else "dma") +
              " ".join("N%d %.4f(%.0fns)" % (p["signal_interval"], p["mops"], 1e3 / p["mops"] if p["mops"] else 0)
                       for p in pp))
