# SPDX-License-Identifier: MIT
# The emulated-NIC models (tests/rxe/emunic/models) and the answers they plant, shared by the rxe_emulated checker and
# bench/bench_stability. The planted values follow from a model's parameters and the run's *own* grid and rates:
#  - inline: the modeled advantage adv(s) = (DMA + PER_BYTE*s) - CHUNK*ceil(s/64) of inline at size s (POST and CQE
#    cost both variants alike); a size is a win / loss when adv(s) is beyond the tuner's practical floor
#    max(1 % of the latency scale, 20 ns), else indifferent; the scale is the smallest non-inline median over the
#    sizes (so that a stalled size does not move it; the model's own cost differences change it by well under 1 %).
#    The planted threshold is the largest measured size before the first loss, provided some size up to it is a
#    win; 0 when none is.
#  - signaling: N = the smallest power of two with CQE / (N * t_post) <= tolerance (default 1.5 %), capped at
#    sq_depth/4, where t_post = 1/rate of the fastest series of that opcode at the largest N measured; a model
#    without a completion cost (CQE 0), or one where even N = 1 costs no more than the tolerance (CQE / t_post <=
#    1.5 %), plants "N does not matter" (signal_verdict "indifferent").
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ("post_ns", "dma_ns", "dma_ns_per_byte", "inline_chunk_ns", "cqe_ns")
ENV = ("EMUNIC_POST_NS", "EMUNIC_DMA_NS", "EMUNIC_DMA_NS_PER_BYTE", "EMUNIC_INLINE_CHUNK_NS", "EMUNIC_CQE_NS")
TOLERANCE = 0.015
FLOOR_PCT, FLOOR_NS = 0.01, 20.0
# the decisions checked: (opcode, qp_type) as `rtune tune --json` names them
DECISIONS = (("send", "rc"), ("write", "rc"), ("send", "ud"))


def load_models(path=os.path.join(HERE, "models")):
    """name -> dict of the five parameters (ns) and 'what'; in file order."""
    models = {}
    for line in open(path):
        body, _, what = line.partition("#")
        f = body.split()
        if not f:
            continue
        if len(f) != 6:
            raise ValueError("%s: bad model line %r" % (path, line.rstrip()))
        m = dict(zip(FIELDS, (float(x) for x in f[1:])))
        m["name"], m["what"] = f[0], what.strip()
        models[f[0]] = m
    return models


def env_of(m):
    """The environment libemunic.so reads for model m, as KEY=VALUE strings."""
    return ["%s=%g" % (k, m[f]) for k, f in zip(ENV, FIELDS)]


def cost_ns(m, size, inl, signaled=False):
    """Modeled cost of one SEND/WRITE WR of `size` bytes (the shim's formula)."""
    c = m["post_ns"]
    if inl:
        c += m["inline_chunk_ns"] * math.ceil(size / 64)
    elif size:
        c += m["dma_ns"] + m["dma_ns_per_byte"] * size
    return c + (m["cqe_ns"] if signaled else 0)


def adv_ns(m, size):
    """Modeled advantage of inline at `size`: non-inline cost - inline cost (> 0: inline is faster)."""
    return cost_ns(m, size, False) - cost_ns(m, size, True)


def lat_series(run, op, qpt, kind=None):
    """size -> {True: point, False: point} of the run's latency points of op/qpt (and kind when given; else the
    kind with the most sizes, pingpong first), only sizes measured both ways. Returns (kind, dict)."""
    by = {}
    for p in run["latency"]:
        if p["op"] == op and p["qp_type"] == qpt:
            by.setdefault(p["kind"], {}).setdefault(p["msg_bytes"], {})[p["inline"]] = p
    if kind is None:
        kinds = sorted(by, key=lambda k: (-len(by[k]), k != "pingpong"))
        kind = kinds[0] if kinds else None
    s = {sz: d for sz, d in by.get(kind, {}).items() if True in d and False in d}
    return kind, dict(sorted(s.items()))


def planted_threshold(m, sizes_pts):
    """(threshold, [(size, class)]) the model plants on these measured sizes (size -> {True, False} points)."""
    classes, thr, won = [], 0, False
    # the latency scale is the smallest non-inline median over the sizes, not each size's own: a stalled median
    # (milliseconds on a loaded host) must not widen the floor and turn the model's win or loss into noise
    typical = min((d[False]["median_ns"] for d in sizes_pts.values()), default=0)
    for s, d in sizes_pts.items():
        floor = max(FLOOR_PCT * max(typical, 0), FLOOR_NS)
        a = adv_ns(m, s)
        cls = "win" if a > floor else "loss" if a < -floor else "indifferent"
        classes.append((s, cls))
    lost = False
    for s, cls in classes:
        if cls == "loss":
            lost = True
            break
        won = won or cls == "win"
        thr = s
    # no size gaining beyond the floor: "never", unless a loss ends the range (inline does not matter in it: the
    # tuner's harmless range)
    return (thr if won or lost else 0), classes


def grid_steps(sizes, a, b):
    """Distance in grid steps between thresholds a and b on the grid [0] + sizes (a value between grid sizes counts
    as the step above)."""
    g = [0] + sorted(sizes)

    def idx(v):
        for i, s in enumerate(g):
            if v <= s:
                return i
        return len(g)

    return abs(idx(a) - idx(b))


def rate_series(run, op):
    """(msg_bytes, inline) -> [(N, mops)] sorted by N, RC rate points of op with a rate."""
    ser = {}
    for p in run["rate"]:
        if p["op"] == op and p.get("mops"):
            ser.setdefault((p["msg_bytes"], p["inline"]), []).append((p["signal_interval"], p["mops"]))
    return {k: sorted(v) for k, v in ser.items()}


# rxe's own share of what the shim models: its completion handling and its work on a non-inline WR (reading the
# payload from the MR) add to the modeled costs, more under a model that loads the guest; measured up to ~6 % of
# t_post (flat models: t_cqe 0.2..4.2 us at t_post 60..100 us; x256_n16: send 8 B inline difference +2.4..+9.4 us
# over the modeled 14 us). The checks let a measured figure sit that much above the model, never below.
RXE_OWN_SHARE = 0.06


def rxe_own_ns(t_post):
    """How far above the model rxe's own work may put a cost measured at a message time of t_post ns."""
    return RXE_OWN_SHARE * t_post


def t_post_ns(run, op):
    """1/rate (ns) of the fastest series of op at the largest N measured, or None."""
    ser = rate_series(run, op)
    if not ser:
        return None
    nmax = max(v[-1][0] for v in ser.values())
    best = max((v[-1][1] for v in ser.values() if v[-1][0] == nmax), default=None)
    return 1e3 / best if best else None


def planted_n(m, run, op, tolerance=TOLERANCE):
    """('indifferent', None) for a model without completion cost, ('knee', N) otherwise, (None, None) without rates."""
    if m["cqe_ns"] <= 0:
        return "indifferent", None
    tp = t_post_ns(run, op)
    if not tp:
        return None, None
    if m["cqe_ns"] / tp <= tolerance:
        return "indifferent", None  # even N = 1 costs less than the tolerance (a loaded host's slow t_post)
    return "knee", n_for_cost(m["cqe_ns"], tp, n_cap(run), tolerance)


def fit_rate(points):
    """Least-squares fit of 1/rate (ns) = a + b/N over [(N, mops)]: (a, b, se of b), or None with fewer than 3
    points."""
    if len(points) < 3:
        return None
    xs = [1.0 / n for n, _ in points]
    ys = [1e3 / r for _, r in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    sse = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    se_b = (sse / (len(xs) - 2) / sxx) ** 0.5 if sxx and len(xs) > 2 else float("inf")
    return a, b, se_b


def n_cap(run):
    """The largest N the tuner states: sq_depth / 4 of the run (256 when it says none)."""
    return max(1, run.get("sq_depth", 256) // 4)


def n_for_cost(cqe_ns, tp, cap, tolerance=TOLERANCE):
    """The smallest power of two N (at most cap) at which a completion cost of cqe_ns loses at most the tolerance
    at a message time of tp ns; 1 when even N = 1 does."""
    n = 1
    while cqe_ns / (n * tp) > tolerance and n < cap:
        n *= 2
    return n


def own_n(run, op, tolerance=TOLERANCE):
    """The largest N rxe's own completion handling alone (up to rxe_own_ns of t_post) can ask for, or None without
    rates: on a model without completion cost a knee at or below it is rxe's, not a false one."""
    tp = t_post_ns(run, op)
    if not tp:
        return None
    return n_for_cost(rxe_own_ns(tp), tp, n_cap(run), tolerance)


def load_json(path):
    with open(path) as f:
        return json.load(f)
