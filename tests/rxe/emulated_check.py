#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks one emulated-NIC model run of the rxe_emulated test (tests/rxe/emulated.sh): the shim itself on the raw
# `rtune calibrate --out` JSON (its counters show every WR was modeled and inline was stripped; per latency series the
# measured non-inline - inline median difference follows the modeled advantage; per rate series 1/rate follows
# t_post + t_cqe/N with the modeled t_cqe), then, unless --shim-only, that `rtune tune --json --dry-run` recovers the
# planted values (tests/rxe/emunic/emumodel.py): the inline threshold within one grid step and the signaling verdict /
# N within a factor of two for send/rc, write/rc and send/ud. Prints the raw figures and one line per failed check;
# exit 1 when any failed. A decision off its planted value at low or medium confidence is a miss, not a failure
# ("MISS" lines, exit 3): emulated.sh allows at most two per run of all models (a high-confidence one never); so is
# one statistical check of the shim on the raw medians (latency and rate physics) that is off (stat()).
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # the guest writes into the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "emunic"))
import emumodel as em  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--run", required=True, help="rtune calibrate --out JSON")
ap.add_argument("--report", required=True, help="the shim's EMUNIC_REPORT JSON")
ap.add_argument("--tune", help="rtune tune --json --dry-run output")
ap.add_argument("--shim-only", action="store_true", help="check the shim on the raw run only")
a = ap.parse_args()

models = em.load_models()
if a.model not in models:
    sys.exit("emulated_check: no model '%s' in %s" % (a.model, ", ".join(models)))
m = models[a.model]
run = em.load_json(a.run)
rep = em.load_json(a.report)
fails = []


def med_se(p):
    """The standard error of a latency point's median, from its confidence interval (0 when it has none)."""
    lo, hi, lvl = p.get("ci_lo_ns"), p.get("ci_hi_ns"), p.get("ci_level") or 0.95
    if lo is None or hi is None:
        return 0.0
    z = {0.9: 1.645, 0.95: 1.96, 0.99: 2.576}.get(round(lvl, 2), 1.96)
    return max(hi - lo, 0) / (2 * z)


misses = []  # a decision off its planted value at low or medium confidence (tune only; see the end)


def miss(cond, msg, conf):
    """A tune check: off at high confidence is a failure; at low/medium a miss, counted by emulated.sh."""
    if not cond:
        if conf == "high":
            fails.append("%s (high confidence)" % msg)
        else:
            misses.append("%s (%s confidence)" % (msg, conf))
    return cond


def check(cond, msg):
    if not cond:
        fails.append(msg)
    return cond


def stat(cond, msg):
    """A statistical check of the shim on the raw run's medians (latency and rate physics): in a noisy guest one can
    be off by chance (2026-12-02, a slow host: 1/rate jumping 30-200 % between neighbouring N, one rate size's inline
    difference -29 us for +4 us in one run), so off it is a miss, in the same at-most-two budget; a shim that models
    wrong is off in many at once (every size, every series) and fails. Counters and timing stay failures."""
    if not cond:
        misses.append("%s (statistical check of the shim)" % msg)
    return cond


print("model %s: POST %g DMA %g PER_BYTE %g CHUNK %g CQE %g ns (%s)" % (
    a.model, m["post_ns"], m["dma_ns"], m["dma_ns_per_byte"], m["inline_chunk_ns"], m["cqe_ns"], m["what"]))

# 1. the shim's counters: it hooked the context, saw the run's WRs, modeled and stripped every inline one
check(run["status"] == "complete", "run status %r" % run["status"])
check(rep["contexts"] >= 1, "shim hooked no context")
check(rep["wrs"] > 0 and rep["inline_wrs"] > 0 and rep["dma_wrs"] > 0 and rep["signaled"] > 0,
      "shim saw wrs %d inline %d dma %d signaled %d" % (rep["wrs"], rep["inline_wrs"], rep["dma_wrs"], rep["signaled"]))
check(rep["stripped"] == rep["inline_wrs"] and rep["inline_kept"] == 0,
      "shim stripped %d of %d inline WRs" % (rep["stripped"], rep["inline_wrs"]))
check(rep["untracked_posts"] == 0 and rep["qp_ex_unmodeled"] == 0,
      "shim: %d untracked posts, %d unmodeled qp_ex" % (rep["untracked_posts"], rep["qp_ex_unmodeled"]))
for f in em.FIELDS:
    check(abs(rep[f] - m[f]) < 1e-6, "shim read %s %s, the model says %s" % (f, rep[f], m[f]))

# 2. latency: the measured inline advantage per size follows the model (medians; a stalled size may be off, so the
#    check is on the median error over the sizes and on the sign where the model's difference is large)
for op, qpt in em.DECISIONS:
    for kind in ("pingpong", "post_cqe"):
        _, pts = em.lat_series(run, op, qpt, kind)
        if not check(len(pts) >= 3, "%s/%s/%s: %d sizes measured both ways" % (op, qpt, kind, len(pts))):
            continue
        errs, signs, big = [], 0, 0
        row, ses = [], []
        for s, d in pts.items():
            meas = d[False]["median_ns"] - d[True]["median_ns"]
            se = math.hypot(*(med_se(d[i]) for i in (False, True)))
            ses.append(se)
            adv = em.adv_ns(m, s)
            errs.append(meas - adv)
            # the sign is checked where the model's difference stands out of the point's own precision (a 2 us
            # advantage measured to +-3 us in a disturbed UD run has the wrong sign in a third of the sizes)
            if abs(adv) >= max(1500, 2 * se):
                big += 1
                signs += (meas > 0) == (adv > 0)
            row.append("%d:%.0f/%.0f" % (s, meas, adv))
        errs.sort()
        med_err = errs[len(errs) // 2]
        scale = max([abs(em.adv_ns(m, s)) for s in pts] + [0])
        # the median error's own precision: 3 standard errors of a median of len(pts) differences, each as precise as
        # the run's CIs say (a UD ping-pong of ~90 us with its heavy tail measures a median to +-3 us; 1.6 us off
        # over 10 sizes is its noise, not the shim's error)
        ses.sort()
        prec = 3 * 1.2533 * ses[len(ses) // 2] / math.sqrt(len(ses))
        tol = max(0.25 * scale, 1500, prec)
        print("  latency %s/%s/%s size:measured/modeled inline advantage ns: %s; median error %.0f (tolerance %.0f)" % (
            op, qpt, kind, " ".join(row), med_err, tol))
        stat(abs(med_err) <= tol, "%s/%s/%s: median error of the inline advantage %.0f ns (tolerance %.0f)" % (
            op, qpt, kind, med_err, tol))
        stat(signs >= 0.75 * big, "%s/%s/%s: sign of the inline advantage right at %d of %d sizes" % (
            op, qpt, kind, signs, big))

# 3. rate: 1/rate = a + b/N per series; the median slope b over the series is the modeled t_cqe, and the intercepts of
#    inline and non-inline at one size differ by the modeled advantage
for op in ("send", "write"):
    ser = em.rate_series(run, op)
    fits = {k: em.fit_rate(v) for k, v in ser.items()}
    fits = {k: f for k, f in fits.items() if f}
    if not check(len(fits) >= 2, "rate %s: %d series fitted" % (op, len(fits))):
        continue
    for (s, inl), v in sorted(ser.items()):
        f = fits.get((s, inl))
        print("  rate %s %dB %s: %s; fit t_post %.0f t_cqe %.0f ns" % (
            op, s, "inl" if inl else "dma", " ".join("N%d:%.0f" % (n, 1e3 / r) for n, r in v),
            f[0] if f else -1, f[1] if f else -1))
    bs = sorted(f[1] for f in fits.values())
    b = bs[len(bs) // 2]
    # the median's own uncertainty: a guest disturbed while it measured (rates jumping by 25 % between N) widens it
    ses = sorted(f[2] for f in fits.values())
    se_med = 1.2533 * ses[len(ses) // 2] / len(ses) ** 0.5
    tp = em.t_post_ns(run, op)
    tol = max(0.35 * m["cqe_ns"], 0.03 * tp) + 2 * se_med
    # rxe's own completion handling is in the slope too (median over series 0.6..5.4 us on the flat models, t_post
    # ~100 us): the fit may sit that much above the model, not below it
    own = em.rxe_own_ns(tp)
    stat(-tol <= b - m["cqe_ns"] <= tol + own, "rate %s: fitted t_cqe %.0f ns (se of the median %.0f), modeled %g "
          "(tolerance -%.0f..+%.0f)" % (op, b, se_med, m["cqe_ns"], tol, tol + own))
    for s in sorted({k[0] for k in fits}):
        if (s, True) in fits and (s, False) in fits:
            # t_cqe does not depend on inline, so at every N the two series differ by the intercepts' difference:
            # the mean of the paired differences estimates it with all points weighted alike, and their scatter
            # says how precisely (a guest disturbed while it measured scatters them by 10-30 us; CI run of stop 21:
            # send 256 B paired differences -2 .. -33 us, mean -19.6 +- 4.2 us against the modeled -10 us)
            dma, inl = dict(ser[(s, False)]), dict(ser[(s, True)])
            ds = [1e3 / dma[n] - 1e3 / inl[n] for n in sorted(set(dma) & set(inl))]
            if not check(len(ds) >= 3, "rate %s %dB: %d N measured both ways" % (op, s, len(ds))):
                continue
            d = sum(ds) / len(ds)
            se = (sum((x - d) ** 2 for x in ds) / (len(ds) - 1) / len(ds)) ** 0.5
            adv = em.adv_ns(m, s)
            # an intercept is the least certain part of a fit over few noisy N: 12 % of it, or 3 standard errors
            tol = max(0.35 * abs(adv), 0.12 * fits[(s, False)][0], 1500, 3 * se)
            # rxe's own work on a non-inline WR (it reads the payload from the MR) is in the difference too, and
            # grows with the load the model puts on the guest: the non-inline series may sit up to 6 % of t_post
            # slower than modeled, not faster (x256_n16, 5 runs of one session: send 8 B +2.4..+9.4 us over the
            # modeled 14 us, mean +4.8; x64_n8 and x128_flat +0.2..+1.1 on average), as the t_cqe check allows
            own = em.rxe_own_ns(fits[(s, False)][0])
            print("  rate %s %dB: non-inline - inline %.0f ns (se %.0f over %d N), modeled %.0f, tolerance -%.0f..+%.0f"
                  % (op, s, d, se, len(ds), adv, tol, tol + own))
            stat(-tol <= d - adv <= tol + own, "rate %s %dB: t_post non-inline - inline %.0f ns (se %.0f), modeled "
                  "%.0f (tolerance -%.0f..+%.0f)" % (op, s, d, se, adv, tol, tol + own))

# 4. the tuner recovers the planted values
if not a.shim_only:
    tune = em.load_json(a.tune)
    ents = {(d["opcode"], d["qp_type"]): d for d in tune["decisions"]}
    for op, qpt in em.DECISIONS:
        d = ents.get((op, qpt))
        if not check(d is not None, "tune: no decision for %s/%s" % (op, qpt)):
            continue
        kind, pts = em.lat_series(run, op, qpt, d.get("latency_kind"))
        thr, classes = em.planted_threshold(m, pts)
        steps = em.grid_steps(list(pts), d["inline_threshold"], thr)
        print("  tune %s/%s: inline_threshold %d (%s), planted %d on %s sizes %s" % (
            op, qpt, d["inline_threshold"], d["inline_confidence"], thr, kind,
            " ".join("%d:%s" % c for c in classes)))
        miss(steps <= 1, "tune %s/%s: inline_threshold %d is %d grid steps from the planted %d" % (
            op, qpt, d["inline_threshold"], steps, thr), d["inline_confidence"])
        rop = "send" if qpt == "ud" else op  # the rate sweep is RC: UD is planted from send's rates
        verdict, n = em.planted_n(m, run, rop)
        tp_run = em.t_post_ns(run, rop)
        tp = tp_run or d.get("t_post_ns") or 0
        got = d.get("signal_verdict")
        print("  tune %s/%s: signal_verdict %s signal_interval %d (%s) t_post %s t_cqe %s [%s, %s] ns; planted %s%s" % (
            op, qpt, got, d["signal_interval"], d["signal_confidence"], d.get("t_post_ns"), d.get("t_cqe_ns"),
            d.get("t_cqe_lo_ns"), d.get("t_cqe_hi_ns"), verdict, " N=%d" % n if n else ""))
        if qpt == "ud" and (got == "not_measured" or (got is None and d.get("signal_measured") is False)):
            continue  # the signaling sweep is RC only: not measuring UD is the honest answer
        if verdict == "indifferent":
            sc = d["signal_confidence"]
            # the model adds no completion cost, but rxe's own completion handling is real (up to 6 % of t_post
            # under TCG, as the t_cqe check below allows): a knee at an N that cost alone asks for, with a t_cqe
            # whose CI reaches down into it, is rxe's knee, not a false one (2026-12-02: always_flat send/rc "knee
            # N = 4, t_cqe 7.5 us [2.1, 12.9]" at t_post 127 us, whose 6 % is 7.6 us)
            n_own, lo = em.own_n(run, rop), d.get("t_cqe_lo_ns")
            if got == "knee" and n_own and d["signal_interval"] <= n_own and lo is not None and lo <= em.rxe_own_ns(tp):
                print("  tune %s/%s: a knee at N = %d, t_cqe from %.0f ns: within what rxe's own completions ask "
                      "for (N <= %d, t_cqe <= %.0f ns)" % (op, qpt, d["signal_interval"], lo, n_own,
                                                           em.rxe_own_ns(tp)))
            elif miss(got == "indifferent", "tune %s/%s: signal_verdict %r, the model plants 'indifferent'" % (
                    op, qpt, got), sc):
                check(any(r["code"] == "signal_indifferent" for r in d["reasons"]),
                      "tune %s/%s: no reason signal_indifferent" % (op, qpt))
        elif verdict == "knee":
            sc = d["signal_confidence"]
            # rxe's own completion cost adds to the model's: the planted N runs up to what both together ask for
            n_hi = em.n_for_cost(m["cqe_ns"] + em.rxe_own_ns(tp_run), tp_run, em.n_cap(run)) if tp_run else n
            n_ok = n / 2 <= d["signal_interval"] <= n_hi * 2
            # "indifferent" says the knee is not shown beyond the noise and the stated N (the default 16) is enough
            # even at t_cqe's upper bound, or, at low confidence, that it would take more measuring to know; with
            # that N in the planted range the application gets the right N and the answer repeats, so only a high
            # confidence one (even N = 1 shown within the tolerance: false for a planted knee) is wrong. On slow hosts
            # (1/rate 100-160 us, 2026-12-02) most misses were that: t_cqe e.g. 28 us, 95 % CI 4..52, or -4.7 us,
            # CI -23..14, at a knee's 1 % false-alarm level. The t_cqe check below still needs the cost's estimate.
            if got == "indifferent" and sc != "high" and n_ok:
                print("  tune %s/%s: the knee not shown beyond the noise (%s confidence), N = %d within the planted "
                      "%d..%d" % (op, qpt, sc, d["signal_interval"], n, n_hi))
            else:
                miss(got == "knee", "tune %s/%s: signal_verdict %r, the model plants a knee" % (op, qpt, got), sc)
            miss(n_ok, "tune %s/%s: signal_interval %d, planted %d..%d" % (
                op, qpt, d["signal_interval"], n, n_hi), sc)
            t_cqe, lo, hi = d.get("t_cqe_ns"), d.get("t_cqe_lo_ns"), d.get("t_cqe_hi_ns")
            # what the guest's completions really cost: the model's t_cqe plus rxe's own completion handling, which
            # the tuner measures too (1-4 us on the flat models, t_post ~60-100 us; the shim check above allows the
            # same 6 % of t_post). The estimate is judged by its own precision: 3 standard errors of the tuner's CI
            # (95 %), or 35 % of the model and 1 us when that is tighter. Stop 20's x64_n8 series gave 12.8-19.7 us
            # (CIs +-4..10 us) for the modeled 13 us; the CI run of stop 22 20.8 us [14.7, 27.0] (the old check,
            # 13 +- 7.5 us with rxe's own cost not counted, failed it at "high").
            ref_lo, ref_hi = m["cqe_ns"], m["cqe_ns"] + em.rxe_own_ns(tp)
            se = (hi - lo) / (2 * 1.96) if lo is not None and hi is not None else 0
            tol = max(0.35 * m["cqe_ns"] + 1000, 3 * se)
            print("  tune %s/%s: t_cqe %s ns (se %.0f), planted %.0f..%.0f (the model, plus rxe's own up to 6 %% of "
                  "t_post), tolerance %.0f" % (op, qpt, t_cqe, se, ref_lo, ref_hi, tol))
            miss(t_cqe is not None and ref_lo - tol <= t_cqe <= ref_hi + tol,
                 "tune %s/%s: t_cqe_ns %s (se %.0f), planted %.0f..%.0f, tolerance %.0f" % (
                     op, qpt, t_cqe, se, ref_lo, ref_hi, tol), sc)
        else:
            check(False, "tune %s/%s: no rate points to plant N from" % (op, qpt))

for f in fails:
    print("FAIL %s: %s" % (a.model, f))
for x in misses:
    print("MISS %s: %s" % (a.model, x))
print("model %s: %s" % (a.model, "%d checks failed" % len(fails) if fails else
                        "ok, %d low/medium-confidence misses" % len(misses) if misses else "ok"))
# 1: a failed check (the shim, or a decision off at high confidence); 3: only low/medium misses
sys.exit(1 if fails else 3 if misses else 0)
