#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks tests/rxe/inline-ctl-pingpong.sh's runs of ibv_rc_pingpong (one message size) under the probe's adaptive
apply mode and the emulated-NIC shim.

What the device was given comes from the shim's trace (EMUNIC_TRACE_BLOCK: per block of posts and size band, the WRs
that came inline and those that did not): in a block the one size counts as inline when most of its WRs came inline
(the controller's sampled sends explore the other choice). From the first block of the planted side on to the end it
must stay there, reached within BUDGET messages; the probe file's controller must put the size on the same side, and
the store (`rtune show --json`, inline_ctl) must hold the file's controller.

usage: inline_ctl_pingpong_check.py DIR BUDGET ITERS GRANTED
"""
import json
import sys

RUNS = (("a", 64, 16, True), ("b", 256, None, False))  # name, size, profile threshold (None = granted), inline wanted


def main():
    d, budget, iters, granted = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL:", msg)

    try:
        show = json.load(open("%s/show.json" % d))
    except (OSError, ValueError) as e:
        bad("rtune show --json: %s" % e)
        show = {}
    for name, size, start, want in RUNS:
        start = granted if start is None else start
        try:
            rep = json.load(open("%s/%s.rep" % (d, name)))
            pf = json.load(open("%s/%s.json" % (d, name)))
        except (OSError, ValueError) as e:
            bad("%s: %s" % (name, e))
            continue
        if rep["wrs"] < iters:
            bad("%s: the shim saw %d WRs, the client sends %d" % (name, rep["wrs"], iters))
        states = []
        for blk in rep["trace"]:
            inl = sum(blk["inline"].values())
            dma = sum(blk["dma"].values())
            if inl + dma:
                states.append((blk["block"] * rep["trace_block"], inl, dma, inl > dma))
        print("%s (%d B from a threshold of %d B): per %d posts, inline/not: %s" %
              (name, size, start, rep["trace_block"], " ".join("%d/%d" % (i, n) for _, i, n, _ in states)))
        since = None
        for first, _, _, inl in states:
            if inl == want:
                since = first if since is None else since
            else:
                since = None
        if not states or since is None:
            bad("%s: %d B not %s at the end of the run (what the device got)" %
                (name, size, "inline" if want else "sent by DMA"))
        elif since > budget:
            bad("%s: %d B %s only from message %d (budget %d)" %
                (name, size, "inline" if want else "not inline", since, budget))
        else:
            print("%s: %d B %s from message %d on (budget %d)" %
                  (name, size, "inline" if want else "not inline", since, budget))
        ctls = [(q["qp_num"], q["inline_ctl"], q) for q in pf["qps"] if "inline_ctl" in q]
        if len(ctls) != 1:
            bad("%s: %d controllers in the probe file (want the client's one QP)" % (name, len(ctls)))
            continue
        qpn, c, q = ctls[0]
        print("%s: probe file, QP %d (max_inline_data %s granted, %s requested, raised %s): start %s, threshold %s, "
              "bounds %s..%s, %s samples, %s rounds, %s up, %s down, %s reverts, parked %s, moves %s" %
              (name, qpn, q.get("max_inline_data"), q.get("requested_max_inline_data"), q.get("inline_raised"),
               c.get("start"), c.get("threshold"), c.get("min"), c.get("max"), c.get("samples"), c.get("rounds"),
               c.get("moves_up"), c.get("moves_down"), c.get("reverts"), c.get("parked"),
               [(mv["at_sample"], mv["from"], mv["to"]) for mv in c.get("moves", [])]))
        if c["start"] != start or (size <= c["threshold"]) != want:
            bad("%s: the probe file's controller starts at %s B (want %d) and ends at %s B (%d B %s)" %
                (name, c["start"], start, c["threshold"], size, "inline wanted" if want else "not inline wanted"))
        if not q.get("inline_raised") or q.get("requested_max_inline_data") != 0 or q.get("max_inline_data", 0) < granted:
            bad("%s: the QP was not raised to the granted %d B from the 0 B ibv_rc_pingpong asks for" % (name, granted))
        shown = [x for a in show.get("inline_ctl", []) if a["app"] == "pp-" + name for x in a["qps"]
                 if x["qp_num"] == qpn]
        if len(shown) != 1 or (shown[0]["start_bytes"], shown[0]["threshold_bytes"]) != (c["start"], c["threshold"]):
            bad("%s: rtune show --json gives %s for QP %d" % (name, shown, qpn))
        else:
            print("%s: store (rtune show --json): start %d B, threshold %d B" %
                  (name, shown[0]["start_bytes"], shown[0]["threshold_bytes"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
