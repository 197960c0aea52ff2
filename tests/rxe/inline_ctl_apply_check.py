#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks tests/rxe/inline-ctl-apply.sh's runs of mixed_sender under the probe's adaptive apply mode and the shim.

What the device was given comes from the shim's trace (EMUNIC_TRACE_BLOCK: per block of posts and per size band, the
WRs that came inline and those that did not): in each block a band is "inline" when most of its WRs came inline (the
controller's sampled sends explore the other choice in the two bands it watches), and the block's effective threshold
is the top of the highest inline band. It must be within one band of the planted crossover within BUDGET messages of
a start (BUDGET2 of the model switch) and stay there to the phase's end. The probe's file (rtune probe --out) and the store must agree.

usage: inline_ctl_apply_check.py DIR BUDGET BUDGET2 SWITCH GRANTED
"""
import json
import re
import sqlite3
import sys


def band(b):
    """Bucket of b in the shared scheme (common/rt_hist.h): exact below 8, then 8 per power of two."""
    if b < 8:
        return b
    e = b.bit_length() - 1
    return 8 + (e - 3) * 8 + ((b >> (e - 3)) & 7)


def band_lo(k):
    if k < 8:
        return k
    e = k // 8 + 2
    return (1 << e) + (k % 8) * (1 << (e - 3))


def near(a, b):
    return abs(band(a) - band(b)) <= 1


def thresholds(rep):
    """[(first post of the block, effective threshold in bytes, largest size sent inline)] from the shim's trace."""
    out = []
    for blk in rep["trace"]:
        inl = {int(k): v for k, v in blk["inline"].items()}
        dma = {int(k): v for k, v in blk["dma"].items()}
        on = [k for k in set(inl) | set(dma) if inl.get(k, 0) > dma.get(k, 0)]
        thr = band_lo(max(on) + 1) - 1 if on else 0
        top = band_lo(max(inl) + 1) - 1 if inl else 0
        out.append((blk["block"] * rep["trace_block"], thr, top))
    return out


def converged_at(series, target, lo, hi):
    """First post in lo..hi from whose block on the effective threshold stays within one band of target (None)."""
    since = None
    for first, thr, _ in series:
        if first < lo or first >= hi:
            continue
        if near(thr, target):
            since = first if since is None else since
        else:
            since = None
    return since


def main():
    d, budget, budget2, switch, granted = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                           int(sys.argv[5]))
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL:", msg)

    db = sqlite3.connect("%s/store.db" % d)
    show = json.load(open("%s/show.json" % d))
    show_txt = open("%s/show.txt" % d).read()
    for name, start, phases in (("below", 16, [(0, None, 128, budget)]),
                                ("above", granted, [(0, switch, 128, budget), (switch, None, 64, budget2)])):
        text = open("%s/%s.out" % (d, name)).read()
        m = re.search(r"sent (\d+) messages \((\d+) signaled\), (\d+) ENOMEM; received (\d+), (\d+) bad; "
                      r"(\d+) WRs changed", text)
        if not m:
            bad("%s: no summary line from mixed_sender" % name)
            continue
        sent, sig, enomem, recv, badn, changed = map(int, m.groups())
        if enomem or badn or changed or recv != sent:
            bad("%s: %d ENOMEM, %d bad, %d WRs changed, %d of %d received" % (name, enomem, badn, changed, recv,
                                                                             sent))
        rep = json.load(open("%s/%s.rep" % (d, name)))
        if rep["wrs"] != sent or rep["posts"] != sent:
            bad("%s: the shim saw %d posts / %d WRs, the application sent %d" % (name, rep["posts"], rep["wrs"], sent))
        series = thresholds(rep)
        over = [(first, top) for first, _, top in series if top > granted]
        if over:
            bad("%s: inline above the granted %d B: %s" % (name, granted, over[:5]))
        print("%s: effective threshold per %d posts: %s" % (name, rep["trace_block"],
                                                            " ".join(str(t) for _, t, _ in series)))
        for lo, hi, target, bud in phases:
            end = hi if hi is not None else sent
            at = converged_at(series, target, lo, end)
            last = [t for first, t, _ in series if lo <= first < end]
            t_end = last[-1] if last else None
            print("%s: messages %d..%d, target %d B: effective threshold %s B at the end, within one band from "
                  "message %s (%s after the phase start; budget %d)" %
                  (name, lo, end, target, t_end, at, None if at is None else at - lo, bud))
            if at is None or t_end is None or not near(t_end, target):
                bad("%s: not within one band of %d B at message %d (%s B)" % (name, target, end, t_end))
            elif at - lo > bud:
                bad("%s: within one band of %d B only %d messages after the phase start (budget %d)" %
                    (name, target, at - lo, bud))
        # the probe's file: the sending QP's controller, and the store's copy of it
        pf = json.load(open("%s/%s.json" % (d, name)))
        ctls = [(q["qp_num"], q["inline_ctl"]) for q in pf["qps"] if "inline_ctl" in q]
        if not ctls:
            bad("%s: no inline_ctl in the probe file" % name)
            continue
        qpn, c = max(ctls, key=lambda x: x[1].get("samples", 0))
        print("%s: probe file, QP %d: start %s, threshold %s, bounds %s..%s, %s samples, %s rounds, %s up, %s down, "
              "%s reverts, parked %s, last moves %s" %
              (name, qpn, c.get("start"), c.get("threshold"), c.get("min"), c.get("max"), c.get("samples"),
               c.get("rounds"), c.get("moves_up"), c.get("moves_down"), c.get("reverts"), c.get("parked"),
               [(mv["at_sample"], mv["from"], mv["to"]) for mv in c.get("moves", [])]))
        final = phases[-1][2]
        if c.get("busy") or c["start"] != start or c["max"] != granted or not near(c["threshold"], final):
            bad("%s: the probe file's controller: start %s (want %d), max %s (want %d), threshold %s (want within "
                "one band of %d)" % (name, c.get("start"), start, c.get("max"), granted, c.get("threshold"), final))
        if not near(c.get("threshold", 0), series[-1][1] if series else 0):
            bad("%s: the probe's threshold %s B and what the device got last (%s B) differ by more than a band" %
                (name, c.get("threshold"), series[-1][1] if series else None))
        row = db.execute("SELECT start_bytes, threshold_bytes, max_bytes, samples, moves_up, moves_down FROM "
                         "inline_ctl WHERE app = ? AND qp_num = ?", ("mixed-" + name, qpn)).fetchall()
        want = (c["start"], c["threshold"], c["max"], c["samples"], c["moves_up"], c["moves_down"])
        if row != [want]:
            bad("%s: the store's inline_ctl row %s, the file's %s" % (name, row, want))
        shown = [q for a in show.get("inline_ctl", []) if a["app"] == "mixed-" + name for q in a["qps"]
                 if q["qp_num"] == qpn]
        if len(shown) != 1 or (shown[0]["start_bytes"], shown[0]["threshold_bytes"]) != (c["start"], c["threshold"]):
            bad("%s: rtune show --json gives %s for QP %d" % (name, shown, qpn))
        line = "%s rc qp %d: threshold %d B from %d B" % ("rxe0", qpn, c["threshold"], c["start"])
        if line not in show_txt:
            bad("%s: rtune show lacks '%s'" % (name, line))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
