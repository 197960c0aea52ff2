#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, the adaptive inline threshold (rt_inline_ctl, docs/controller.md) in an application: examples/
# rt_send_example --adaptive on rxe0 under the emulated-NIC shim (libemunic.so) with a planted crossover.
#   0. a flat model (no modeled cost) measures rxe's own post -> completion time of a drained send (base); the chunk
#      cost C is then max(60 us, 2 x base), so that next to the crossover the two choices differ by well over the
#      controller's 10 % (docs/controller.md: a shallower crossover is a "does not matter" zone; a first version
#      planted 192 B = 3.5 C with C = 1.5 x base, 10.7 % next to it, and the controller parked one band short);
#   A. model X128 (inline C per 64 B, DMA 2.5 C: inline wins up to 128 B), start at 16 B: within one band of 128 B
#      within BUDGET messages and to the end;
#   B. start far above (the QP's granted max_inline_data, at most 1024 B) on X128, the model switching to X64 (DMA
#      1.5 C: inline wins up to 64 B) after SWITCH posts: within one band of 128 B at the switch, of 64 B at the end,
#      within BUDGET messages after the switch;
#   every run: all messages received intact, 0 ENOMEM, never inline above the granted max_inline_data.
# Env: RTUNE_CTL_BUDGET (messages, default 40000), RTUNE_CTL_SWITCH (posts before the model switch, default 40000),
# RTUNE_CTL_OUT (where the runs are kept; default $RTUNE_BUILD_DIR/rxe-inline-ctl).
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
ex=$B/examples/rt_send_example
so=$B/tests/rxe/libemunic.so
here=$(cd "$(dirname "$0")" && pwd)
dev=${RTUNE_VM_DEV:-rxe0}
w=${RTUNE_CTL_OUT:-$B/rxe-inline-ctl}
budget=${RTUNE_CTL_BUDGET:-40000}
switch=${RTUNE_CTL_SWITCH:-40000}
mkdir -p "$w"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ -f "$so" ] || { echo "FAIL: no $so"; exit 1; }

cap=$($rtune devices -d "$dev" --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); devs=d['devices'] if isinstance(d,dict) else d
print(next(x for x in devs if x['name']=='$dev')['max_inline_data']['rc'])" 2>/dev/null)
case "$cap" in ''|*[!0-9]*) cap=256; echo "note: rtune devices gave no max_inline_rc, using $cap" ;; esac
[ "$cap" -gt 1024 ] && cap=1024
echo "rxe0 max_inline_rc (capped at 1024): $cap"
# sizes: the middle of every band of the shared buckets from 16 B to the cap
sizes=$(python3 -c "
import sys
out=[]
for e in range(4, 11):
    w=1<<(e-3)
    for s in range(8):
        lo=(1<<e)+s*w
        if lo+w-1 <= $cap: out.append(str(lo+w//2))
print(','.join(out[:64]))")
echo "sizes: $sizes"
python3 - "$w/profile.json" "$cap" <<'PY'
import json, sys, uuid
path, cap = sys.argv[1], int(sys.argv[2])
e = {"device": "rxe0", "guid": None, "port": 1, "opcode": "send", "qp_type": "rc", "inline_threshold": 64,
     "max_inline_data": cap, "signal_interval": 16, "sq_depth": 128, "cq_depth": 128, "cq_moderation": None,
     "numa_node": -1, "cpus": "0", "confidence": "medium", "reasons": [{"code": "hand_written", "text": "rxe tier"}],
     "measured_at": "2026-12-01T12:00:00Z", "run_id": str(uuid.uuid4()), "app": None}
json.dump({"schema": {"name": "rtune-profile", "version": "1.2"}, "rtune_version": "0.1.0",
           "node": {"hostname": "rxe-guest", "machine_id": "", "cpu_count": 2, "numa_nodes": 1}, "entries": [e]},
          open(path, "w"), indent=2)
PY

# run NAME START COUNT ENV...: the example under the shim; its output in $w/NAME.out
run() {
  local name=$1 start=$2 count=$3; shift 3
  local t0=$(date +%s)
  env LD_PRELOAD="$so" EMUNIC_REPORT="$w/$name.rep" "$@" "$ex" -d "$dev" --profile "$w/profile.json" -n "$count" \
    -s "$sizes" --adaptive --start-threshold "$start" > "$w/$name.out" 2> "$w/$name.err"
  local rc=$?
  echo "== $name: exit $rc in $(( $(date +%s) - t0 )) s ($*)"
  grep -v "^inline move" "$w/$name.out"; cat "$w/$name.err"
  echo "moves (message: from -> to): $(sed -n 's/^inline move at message \([0-9]*\): \([0-9]*\) -> \([0-9]*\) B/\1:\2->\3/p' "$w/$name.out" | tr '\n' ' ')"
  [ $rc -eq 0 ] || bad "$name: the example exited $rc"
}

run flat 64 3000
base=$(python3 - "$w/flat.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
v = [int(x) for x in re.findall(r"(?:inline|not) (\d+) ns", t) if int(x) > 0]
print(sorted(v)[len(v) // 2] if v else 100000)
PY
)
chunk=$(( base * 2 )); [ $chunk -lt 60000 ] && chunk=60000
echo "rxe base post -> completion ${base} ns; chunk cost ${chunk} ns"
x128=(EMUNIC_INLINE_CHUNK_NS=$chunk EMUNIC_DMA_NS=$(( chunk * 5 / 2 )))
x64=(EMUNIC2_INLINE_CHUNK_NS=$chunk EMUNIC2_DMA_NS=$(( chunk * 3 / 2 )))
run below 16 $(( budget + 5000 )) "${x128[@]}"
run above "$cap" $(( switch + budget + 5000 )) "${x128[@]}" EMUNIC_SWITCH_AFTER=$switch "${x64[@]}"
python3 "$here/inline_ctl_check.py" "$w" "$budget" "$switch" "$cap" || fail=1
[ $fail = 0 ] && echo "rxe_inline_ctl: ok" || echo "rxe_inline_ctl: FAILED"
exit $fail
