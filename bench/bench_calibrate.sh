#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a timed test): in ONE Soft-RoCE guest session, runs `rtune calibrate` and the equivalent perftest grid
# (ib_send_lat / ib_write_lat per size with and without -I, ib_send_bw / ib_write_bw per -Q signaling interval at the
# rate sizes, with and without -I) and reports both wall times, their ratio (target: rtune <= 10 % of the grid) and the
# decisions each supports. On the host it boots the guest (tests/rxe/run-in-vm) with itself as the guest script.
# Env: RTUNE_BUILD_DIR (default build), RTUNE_BENCH_BUDGET (rtune --budget, default 20), RTUNE_BENCH_ITERS (perftest
# latency iterations, default 1000).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
if [ "${RTUNE_VM:-}" != 1 ]; then
  export RTUNE_BUILD_DIR=${RTUNE_BUILD_DIR:-$repo/build}
  exec "$repo/tests/rxe/run-in-vm" --timeout 1500 "$here/bench_calibrate.sh"
fi

B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
dev=${RTUNE_VM_DEV:-rxe0}
addr=${RTUNE_VM_ADDR:?}
budget=${RTUNE_BENCH_BUDGET:-20}
iters=${RTUNE_BENCH_ITERS:-1000}
gid=$($rtune devices -d "$dev" --json --no-probe | python3 -c '
import json, sys
d = json.load(sys.stdin)["devices"][0]
g = [x for p in d["ports"] for x in p["gids"] if x["type"] == "RoCE v2" and x["gid"].startswith("0000:0000:0000:0000:0000:ffff")]
print(g[0]["index"] if g else 1)' 2>/dev/null || echo 1)
now() { date +%s.%N; }
W=/tmp/bench
mkdir -p $W

echo "== rtune calibrate (budget ${budget}s)"
t0=$(now)
$rtune calibrate -d "$dev" --budget "$budget" --no-store --out $W/rtune.json > $W/rtune.txt 2> $W/rtune.err
rc_rtune=$?
t1=$(now)
t_rtune=$(python3 -c "print($t1 - $t0)")
t0=$(now)
$rtune calibrate -d "$dev" --quick --budget "$budget" --no-store --out $W/rtune-quick.json > /dev/null 2> $W/rtune-q.err
rc_quick=$?
t1=$(now)
t_quick=$(python3 -c "print($t1 - $t0)")
sizes=$(python3 -c "import json; print(' '.join(str(s) for s in json.load(open('$W/rtune.json'))['params']['sizes']))")
rsizes=$(python3 -c "import json; print(' '.join(str(s) for s in sorted({p['msg_bytes'] for p in json.load(open('$W/rtune.json'))['rate']})))")
sq=$(python3 -c "import json; print(json.load(open('$W/rtune.json'))['sq_depth'])")

# one perftest client/server pair; prints the client's output to $W/pt.out, returns the client's exit code
pt() {
  local tool=$1
  shift
  timeout 60 "$tool" -d "$dev" -x "$gid" -F "$@" > $W/pt-srv.out 2>&1 &
  local srv=$! rc=1
  for i in $(seq 1 20); do
    sleep 0.3
    timeout 60 "$tool" -d "$dev" -x "$gid" -F "$@" "$addr" > $W/pt.out 2>&1 && { rc=0; break; }
    grep -qi "couldn't connect\|unable to\|connection refused" $W/pt.out || break
  done
  wait $srv 2>/dev/null
  return $rc
}

echo "== perftest grid: latency per size, with and without -I"
: > $W/grid-lat.txt
t0=$(now)
for tool in ib_send_lat ib_write_lat; do
  for s in $sizes; do
    for inl in 0 1; do
      args=(-s "$s" -n "$iters")
      [ $inl = 1 ] && args+=(-I "$s")
      if pt "$tool" "${args[@]}"; then
        # columns: bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
        typ=$(awk -v s="$s" '$1 == s && NF >= 7 { print $5 }' $W/pt.out | tail -1)
        echo "$tool $s inline=$inl ok typical_us=${typ:-?}" >> $W/grid-lat.txt
      else
        echo "$tool $s inline=$inl FAILED: $(grep -v '^ *$' $W/pt.out | tail -1)" >> $W/grid-lat.txt
      fi
    done
  done
done
t1=$(now)
t_grid_lat=$(python3 -c "print($t1 - $t0)")

echo "== perftest grid: bandwidth per -Q (signaling interval), with and without -I"
: > $W/grid-bw.txt
t0=$(now)
for tool in ib_send_bw ib_write_bw; do
  for s in $rsizes; do
    for inl in 0 1; do
      q=1
      while [ $q -le $((sq / 2)) ]; do
        args=(-s "$s" -Q "$q" -t "$sq" -n 5000)
        [ $inl = 1 ] && args+=(-I "$s")
        if pt "$tool" "${args[@]}"; then
          # columns: bytes iterations BW_peak BW_average MsgRate
          mr=$(awk -v s="$s" '$1 == s && NF >= 5 { print $5 }' $W/pt.out | tail -1)
          echo "$tool $s inline=$inl Q=$q ok Mpps=${mr:-?}" >> $W/grid-bw.txt
        else
          echo "$tool $s inline=$inl Q=$q FAILED: $(grep -v '^ *$' $W/pt.out | tail -1)" >> $W/grid-bw.txt
        fi
        q=$((q * 2))
      done
    done
  done
done
t1=$(now)
t_grid_bw=$(python3 -c "print($t1 - $t0)")

export t_rtune t_quick t_grid_lat t_grid_bw rc_rtune rc_quick W
python3 - <<'PY'
import json, os, re
W = os.environ["W"]
r = json.load(open(W + "/rtune.json"))
t_rtune, t_quick = float(os.environ["t_rtune"]), float(os.environ["t_quick"])
t_lat, t_bw = float(os.environ["t_grid_lat"]), float(os.environ["t_grid_bw"])
grid = t_lat + t_bw
lat = open(W + "/grid-lat.txt").read().splitlines()
bw = open(W + "/grid-bw.txt").read().splitlines()
print("\n== results (one guest session, rxe0 under qemu TCG)")
print("rtune calibrate (default, budget %s s): exit %s, %.1f s wall; --quick: exit %s, %.1f s"
      % (r["params"]["budget_s"], os.environ["rc_rtune"], t_rtune, os.environ["rc_quick"], t_quick))
print("  %d latency points (%d samples), %d rate points; latency %.1f s, sweep %.1f s; notes: %s"
      % (len(r["latency"]), sum(p["n_samples"] for p in r["latency"]), len(r["rate"]),
         r["params"].get("latency_s", 0), r["params"].get("signaling_s", 0), r["params"].get("notes", "-")))
print("perftest grid: %d latency runs in %.1f s + %d bandwidth runs in %.1f s = %.1f s"
      % (len(lat), t_lat, len(bw), t_bw, grid))
fl = [l for l in lat + bw if "FAILED" in l]
print("  %d perftest runs failed%s" % (len(fl), (":\n    " + "\n    ".join(sorted(set(re.sub(r" [0-9]+ ", " S ", l, 1) for l in fl))[:6])) if fl else ""))
print("ratio rtune/grid: default %.1f %%, quick %.1f %% (target <= 10 %%)" % (100 * t_rtune / grid, 100 * t_quick / grid))
print("\ndecisions supported:")
# inline: rtune gives a CI per size for pingpong send/rc; perftest gives a typical latency only where -I worked
print("  inline, SEND RC ping-pong half RTT: size, rtune inline vs non-inline median [95%% CI] (verdict) | perftest typical us -I / no -I")
pts = {(p["op"], p["qp_type"], p["kind"], p["msg_bytes"], p["inline"]): p for p in r["latency"]}
ptl = {}
for l in lat:
    m = re.match(r"(\S+) (\d+) inline=(\d) ok typical_us=(\S+)", l)
    if m:
        ptl[(m.group(1), int(m.group(2)), m.group(3) == "1")] = m.group(4)
for s in r["params"]["sizes"]:
    a, b = pts.get(("send", "rc", "pingpong", s, True)), pts.get(("send", "rc", "pingpong", s, False))
    if not a or not b:
        continue
    v = "inline wins" if a["ci_hi_ns"] < b["ci_lo_ns"] else "inline loses" if b["ci_hi_ns"] < a["ci_lo_ns"] else "no significant difference"
    print("   %5d B  %8.0f [%.0f, %.0f] vs %8.0f [%.0f, %.0f] ns  %-26s | %s / %s" % (
        s, a["median_ns"], a["ci_lo_ns"], a["ci_hi_ns"], b["median_ns"], b["ci_lo_ns"], b["ci_hi_ns"], v,
        ptl.get(("ib_send_lat", s, True), "failed"), ptl.get(("ib_send_lat", s, False), "failed")))
print("  signaling: rtune rate (Mops) vs N at %s B non-inline SEND; perftest MsgRate (Mpps) vs -Q" % r["rate"][0]["msg_bytes"] if r["rate"] else "  no rate points")
ptb = {}
for l in bw:
    m = re.match(r"(\S+) (\d+) inline=(\d) Q=(\d+) ok Mpps=(\S+)", l)
    if m:
        ptb[(m.group(1), int(m.group(2)), m.group(3) == "1", int(m.group(4)))] = m.group(5)
for p in r["rate"]:
    if p["op"] == "send" and not p["inline"] and p["msg_bytes"] == r["rate"][0]["msg_bytes"]:
        print("   N=%4d  rtune %.4f [%.4f, %.4f] Mops, %.0f cpu ns/msg, enomem %d | perftest %s" % (
            p["signal_interval"], p["mops"], p["mops_lo"], p["mops_hi"], p["cpu_ns_per_msg"], p["enomem"],
            ptb.get(("ib_send_bw", p["msg_bytes"], False, p["signal_interval"]), "failed")))
for op, m in r["cq_moderation"].items():
    print("  cq moderation (%s): %s" % (op, "best count %d" % m["best_count"] if m["supported"] else "unsupported: " + m["reason"]))
print("  perftest: no post->completion latency, no confidence intervals, no cq moderation sweep, no UD inline")
PY
