#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Unit test (emunic_models): every emulated-NIC model of tests/rxe/emunic/models plants what its name says, on a
# synthetic run with the default grid (1..512 B) at rxe-like latencies and t_post = 45 us: the inline threshold
# (xNN: NN B; never: 0; always: the largest size) and the signaling answer (_nK: a knee at N = K; _flat: "N does not
# matter"); and the planted-value rules themselves (grid steps, the floor, a slow host, one stalled size).
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emumodel as em  # noqa: E402

fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)


# t_post: what the Soft-RoCE guest measured for one 8 B post with the models' 20 us POST (2026-12-01, quiet host: ~120 us)
def run_of(m, t_post_ns=120000.0, lat_ns=50000.0, sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), stall=None):
    lat, rate = [], []
    for s in sizes:
        for inl in (True, False):
            med = lat_ns + em.cost_ns(m, s, inl, True)
            if stall == (s, inl):
                med = 5e6
            lat.append({"op": "send", "qp_type": "rc", "kind": "pingpong", "msg_bytes": s, "inline": inl,
                        "median_ns": med})
    for n in (1, 2, 4, 8, 16, 32, 64, 128):
        rate.append({"op": "send", "msg_bytes": 8, "inline": False, "signal_interval": n,
                     "mops": 1e3 / (t_post_ns + m["cqe_ns"] / n)})
    return {"latency": lat, "rate": rate, "sq_depth": 256}


models = em.load_models()
check(len(models) >= 5, "fewer than 5 models")
for name, m in models.items():
    r = run_of(m)
    _, pts = em.lat_series(r, "send", "rc")
    thr, classes = em.planted_threshold(m, pts)
    inl, sig = name.split("_")
    want_thr = 0 if inl == "never" else 512 if inl == "always" else int(inl[1:])
    check(thr == want_thr, "%s: planted threshold %d, the name says %d (%s)" % (name, thr, want_thr, classes))
    v, n = em.planted_n(m, r, "send")
    if sig == "flat":
        check(v == "indifferent", "%s: planted signaling %s %s, the name says flat" % (name, v, n))
    else:
        check(v == "knee" and n == int(sig[1:]), "%s: planted %s N=%s, the name says %s" % (name, v, n, sig))
    # no size within the floor: the planted value is not on a knife's edge
    check(all(c != "indifferent" for _, c in classes), "%s: a size within the noise floor: %s" % (name, classes))
    # a stalled size does not move the floor
    r2 = run_of(m, stall=(64, False))
    check(em.planted_threshold(m, em.lat_series(r2, "send", "rc")[1])[0] == thr, "%s: a stalled size moved it" % name)

x64 = models["x64_n8"]
# a host so slow that even N = 1 costs less than the tolerance: N does not matter
check(em.planted_n(x64, run_of(x64, t_post_ns=1000000.0), "send")[0] == "indifferent", "slow host: not indifferent")
# the cap sq_depth/4
big = dict(x64, cqe_ns=1e6)
check(em.planted_n(big, run_of(big), "send") == ("knee", 64), "cap: %s" % (em.planted_n(big, run_of(big), "send"),))
# N for a completion cost: 13 us at t_post 100 us loses 1.6 % at N = 8, 0.8 % at 16
check(em.n_for_cost(13000, 100000, 64) == 16 and em.n_for_cost(0, 100000, 64) == 1 and
      em.n_for_cost(1e9, 100000, 64) == 64, "n_for_cost")
# rxe's own completion cost (6 % of t_post) alone asks for N = 4 (1.5 % there), whatever t_post is
flat = models["always_flat"]
check(em.own_n(run_of(flat), "send") == 4 and em.own_n(run_of(flat, t_post_ns=60000.0), "send") == 4 and
      em.own_n({"rate": []}, "send") is None, "own_n %s" % (em.own_n(run_of(flat), "send"),))
# grid steps, 0 being the step below the smallest size
g = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
check(em.grid_steps(g, 64, 64) == 0 and em.grid_steps(g, 128, 64) == 1 and em.grid_steps(g, 0, 1) == 1 and
      em.grid_steps(g, 0, 4) == 3 and em.grid_steps(g, 100, 64) == 1, "grid_steps")
# the shim's environment names
check(em.env_of(x64)[0].startswith("EMUNIC_POST_NS="), "env_of")
# the rate fit recovers a and b exactly on exact data
f = em.fit_rate([(n, 1e3 / (40000 + 3000 / n)) for n in (1, 2, 4, 8)])
check(abs(f[0] - 40000) < 1 and abs(f[1] - 3000) < 1, "fit_rate %s" % (f,))
for f in fails:
    print("FAIL: " + f)
print("emunic models: %s" % ("ok" if not fails else "%d checks failed" % len(fails)))
sys.exit(1 if fails else 0)
