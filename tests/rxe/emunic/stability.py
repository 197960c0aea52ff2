#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The analysis of bench/bench_stability.sh: for each configuration directory OUT/CONFIG holding runs i.json
# (`rtune calibrate --out`) and i.tune.json (`rtune tune --json --dry-run`), and per decision (send/rc, write/rc,
# send/ud x inline threshold, signaling verdict/N), prints the share of runs giving the modal answer, the spread, the
# expected value (planted by an emulated-NIC model, tests/rxe/emunic/models; on plain rxe0 the device max and "N does
# not matter", issue 14) with the share of runs within one grid step / a factor of two of it, and how many
# high-confidence answers were more than one grid step (N: a factor of two, or another verdict) from the expected
# (else the modal) answer, and the confidence labels of the runs at the modal answer (a high in some of them and not
# in others: a high that does not repeat, which misses the target). A configuration is named MODEL or MODEL@DISTURBANCE ("plain" for no shim).
# With --replay RTUNE it also replays the configuration's store (OUT/CONFIG/store.db, copied) through `RTUNE tune RUN`
# without --dry-run, run after run, and prints the node's profile after each (its answer and label as published,
# after the hysteresis) with the number of changes: at most one each (the first answer settling) is the target.
# usage: stability.py [--replay RTUNE] OUT CONFIG...
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # the guest writes into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emumodel as em  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def n_answer(d):
    """The signaling answer of one decision as (verdict, N): verdict 'knee', 'indifferent', 'not_measured', or the
    signal_interval alone ('n') when the tuner gives no verdict (and 'not_measured' when it says signal_measured
    false)."""
    v = d.get("signal_verdict")
    if not v and d.get("signal_measured") is False:
        v = "not_measured"
    return (v if v else "n", d["signal_interval"])


def n_close(a, b):
    """Two signaling answers agree: same verdict and, for a knee, N within a factor of two."""
    if a[0] != b[0]:
        return False
    return a[0] not in ("knee", "n") or (b[1] / 2 <= a[1] <= b[1] * 2)


def labels(confs):
    """The confidence labels of the runs at one answer as e.g. 'H7 M3', and whether a high does not repeat (some of
    those runs high, not all)."""
    c = collections.Counter(x[0].upper() for x in confs)
    text = " ".join("%s%d" % (k, c[k]) for k in "HML" if c[k])
    return text, 0 < c["H"] < len(confs)


def fmt_n(a):
    return ("N=%d" % a[1]) if a[0] in ("knee", "n") else "%s(N=%d)" % a


def replay(rtune, store, runs):
    """The node's profile as `rtune tune` stores it, run after run (hysteresis, docs/tuner.md): the runs' calibrations
    in store (copied) tuned in order, each without --dry-run. Returns {(op, qpt): [(threshold, its label, N, its
    label), ...]} per run, or None when rtune cannot do it."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "store.db")
        try:
            shutil.copyfile(store, db)
        except OSError:
            return None
        seq = {}
        for _, r, _ in runs:
            p = subprocess.run([rtune, "tune", r["run_id"], "--json", "--db", db], capture_output=True, text=True)
            try:
                t = json.loads(p.stdout)
            except ValueError:
                return None
            for d in t["decisions"]:
                pr = d.get("profile") or {}
                seq.setdefault((d["opcode"], d["qp_type"]), []).append((
                    pr.get("inline_threshold"), (pr.get("inline_confidence") or "?")[0].upper(),
                    pr.get("signal_interval"), (pr.get("signal_confidence") or "?")[0].upper()))
        return seq


def changes(vals):
    return sum(1 for a, b in zip(vals, vals[1:]) if a != b)


def main():
    rtune = None
    if len(sys.argv) > 2 and sys.argv[1] == "--replay":
        rtune = sys.argv[2]
        del sys.argv[1:3]
    out, configs = sys.argv[1], sys.argv[2:]
    models = em.load_models()
    met_all = True
    print("\n== stability (issue 14 targets: >= 90 % of runs at the expected/modal answer, no high-confidence answer "
          "more than one grid step / a factor of two off; and every high at the modal answer repeats)")
    for c in configs:
        mname = c.split("@")[0]
        m = models.get(mname)
        runs = []
        for p in sorted(glob.glob(os.path.join(out, c, "*.json"))):
            base = os.path.basename(p)
            if not base[:-5].isdigit():
                continue
            r, t = load(p), load(p[:-5] + ".tune.json")
            if r and t and r.get("status") == "complete":
                runs.append((int(base[:-5]), r, t))
        total = len(glob.glob(os.path.join(out, c, "*.txt")))
        print("\n-- %s: %d of %d runs complete and tuned%s" % (
            c, len(runs), total, (" (model: %s)" % m["what"]) if m else " (plain rxe0)"))
        if not runs:
            met_all = False
            continue
        secs = sorted((r["ended_ns"] - r["started_ns"]) / 1e9 for _, r, _ in runs)
        print("   calibrate run time median %.1f s (%.1f..%.1f)" % (secs[len(secs) // 2], secs[0], secs[-1]))
        node = replay(rtune, os.path.join(out, c, "store.db"), sorted(runs, key=lambda x: x[0])) if rtune else None
        if rtune and node is None:
            print("   node profile: cannot replay %s" % os.path.join(out, c, "store.db"))
        for op, qpt in em.DECISIONS:
            thr, nans, exp_thr, exp_n, grids = [], [], [], [], []
            for _, r, t in runs:
                d = next((x for x in t["decisions"] if x["opcode"] == op and x["qp_type"] == qpt), None)
                if d is None:
                    continue
                kind, pts = em.lat_series(r, op, qpt, d.get("latency_kind"))
                sizes = list(pts)
                grids.append(sizes)
                thr.append((d["inline_threshold"], d["inline_confidence"], sizes))
                nans.append((n_answer(d), d["signal_confidence"]))
                if m:
                    exp_thr.append(em.planted_threshold(m, pts)[0])
                    v, n = em.planted_n(m, r, "send" if qpt == "ud" else op)
                    exp_n.append((v, n if n else 16) if v else None)
                else:
                    exp_thr.append(max(sizes) if sizes else 0)
                    exp_n.append(("indifferent", 16))
            if not thr:
                print("   %s/%s: no decision" % (op, qpt))
                met_all = False
                continue
            k = len(thr)
            # threshold
            cnt = collections.Counter(v for v, _, _ in thr)
            mode, mode_n = cnt.most_common(1)[0]
            steps = [em.grid_steps(g, v, e) for (v, _, g), e in zip(thr, exp_thr)]
            ok = sum(s <= 1 for s in steps)
            hi_off = sum(1 for (v, conf, g), e in zip(thr, exp_thr) if conf == "high" and em.grid_steps(g, v, e) > 1)
            spread = max(em.grid_steps(g, v, mode) for v, _, g in thr)
            e_mode = collections.Counter(exp_thr).most_common(1)[0][0]
            print("   %s/%s threshold: modal %d B in %d/%d (%.0f %%), values %s, spread %d grid steps; expected %d B: "
                  "%d/%d within one step; high-confidence answers off by > 1 step: %d" % (
                      op, qpt, mode, mode_n, k, 100.0 * mode_n / k,
                      ",".join("%d" % v for v, _, _ in thr), spread, e_mode, ok, k, hi_off))
            # the same answer: plain rxe0 the same threshold (issue 14: "the same threshold in at least 9 of 10");
            # a model within one grid step of the planted one and of the modal one (the grids differ from run to
            # run where calibrate refined: 80 B is the step between 64 B and 128 B on one run's grid)
            near_mode = sum(em.grid_steps(g, v, mode) <= 1 for v, _, g in thr)
            if m:
                print("   %s/%s threshold: %d/%d within one step of the modal %d B" % (op, qpt, near_mode, k, mode))
            met = ok >= 0.9 * k and (near_mode if m else mode_n) >= 0.9 * k and hi_off == 0
            # the label of one answer repeats: a high in some of the runs at the modal threshold and not in others is
            # a high that does not repeat (docs/tuner.md "Labels that repeat")
            lab, flip = labels([conf for v, conf, _ in thr if v == mode])
            print("   %s/%s threshold: labels at the modal %d B: %s%s" % (
                op, qpt, mode, lab, " (a high that does not repeat)" if flip else ""))
            met = met and not flip
            # signaling
            ncnt = collections.Counter(a for a, _ in nans)
            nmode, nmode_n = ncnt.most_common(1)[0]
            if qpt == "ud" and nmode[0] == "not_measured":
                print("   %s/%s signaling: not measured in %d/%d runs (the sweep is RC only)" % (op, qpt, nmode_n, k))
            else:
                exps = [e if e else nmode for e in exp_n]
                nok = sum(n_close(a, e) for (a, _), e in zip(nans, exps))
                nhi = sum(1 for (a, conf), e in zip(nans, exps) if conf == "high" and not n_close(a, e))
                vals = sorted({a[1] for a, _ in nans})
                e_mode = collections.Counter(exps).most_common(1)[0][0]
                print("   %s/%s signaling: modal %s in %d/%d (%.0f %%), N from %d to %d; expected %s: %d/%d agree "
                      "(N within x2); high-confidence answers off: %d" % (
                          op, qpt, fmt_n(nmode), nmode_n, k, 100.0 * nmode_n / k, vals[0], vals[-1], fmt_n(e_mode),
                          nok, k, nhi))
                # a model: the modal answer within a factor of two (issue 14: "the planted N within a factor of two")
                near_nmode = sum(n_close(a, nmode) for a, _ in nans)
                if m:
                    print("   %s/%s signaling: %d/%d agree with the modal %s (N within x2)" % (
                        op, qpt, near_nmode, k, fmt_n(nmode)))
                lab, flip = labels([conf for a, conf in nans if n_close(a, nmode)])
                print("   %s/%s signaling: labels at the modal %s (N within x2): %s%s" % (
                    op, qpt, fmt_n(nmode), lab, " (a high that does not repeat)" if flip else ""))
                met = met and nok >= 0.9 * k and (near_nmode if m else nmode_n) >= 0.9 * k and nhi == 0 and not flip
            if node and (op, qpt) in node:
                # what the node publishes: the profile after each run (hysteresis); a change of its answer or its
                # label from one run to the next is what an application, the agent and the fleet report would see
                sq = node[(op, qpt)]
                th, tl = [x[0] for x in sq], [x[1] for x in sq]
                print("   %s/%s node profile over the runs: threshold %s (%d changes), labels %s (%d changes)" % (
                    op, qpt, ",".join(str(x) for x in th), changes(th), "".join(tl), changes(tl)))
                met = met and changes(th) <= 1 and changes(tl) <= 1
                if qpt != "ud":
                    nn, nl = [x[2] for x in sq], [x[3] for x in sq]
                    print("   %s/%s node profile over the runs: N %s (%d changes), labels %s (%d changes)" % (
                        op, qpt, ",".join(str(x) for x in nn), changes(nn), "".join(nl), changes(nl)))
                    met = met and changes(nn) <= 1 and changes(nl) <= 1
            print("   %s/%s: target %s" % (op, qpt, "met" if met else "MISSED"))
            met_all = met_all and met
    print("\nstability: every target %s" % ("met" if met_all else "not met (see MISSED above)"))


main()
