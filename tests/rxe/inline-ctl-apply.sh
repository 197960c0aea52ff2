#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, the adaptive inline threshold in an UNMODIFIED application: tests/rxe/mixed_sender (plain verbs, no
# librtune: SEND_WITH_IMM of a mix of sizes, one per band from 16 to 512 B plus three above 512 B, one WR in 2 signaled,
# never inline) run by `rtune probe --apply` with RTUNE_APPLY_ADAPTIVE=1 (the probe's apply mode gives the QP its own
# rt_inline_ctl, timed on the WRs the application signals) on rxe0 under the emulated-NIC shim (libemunic.so) with a
# planted crossover. Preload order: rtune probe puts the probe first and keeps the caller's LD_PRELOAD (the shim) after
# it, so the application's ibv_post_send reaches the probe, the probe's post reaches the shim, the shim's rxe: the
# probe times the modeled cost and the shim sees (and traces, EMUNIC_TRACE_BLOCK) exactly what the device was given.
#   0. a flat model (no modeled cost): the application's own median signaled post -> completion time (base); the
#      chunk cost C is then max(60 us, 2 x base) as in inline-ctl.sh;
#   A. model X128 (inline C per 64 B, DMA 2.5 C: inline wins up to 128 B), the profile's threshold 16 B: the device
#      gets inline WRs up to within one band of 128 B within BUDGET messages and to the end;
#   B. the profile's threshold 512 B (= the max_inline_data the QP is granted) on X128, switching to X64 (DMA 1.5 C:
#      inline wins up to 64 B) after SWITCH posts: within one band of 128 B before the switch, of 64 B at the end,
#      within BUDGET messages before the switch, within BUDGET2 after it;
#   every run: every message received intact (length, immediate, bytes), no WR changed by ibv_post_send, 0 ENOMEM,
#   nothing inline above the granted 512 B (the shim's trace), the probe file's controller (start, threshold, bounds)
#   agrees with the trace, and `rtune probe` stored it (the store's inline_ctl row, `rtune show`).
# Env: RTUNE_CTL_BUDGET (messages from a start, default 80000), RTUNE_CTL_BUDGET2 (messages after the model switch,
# default 60000), RTUNE_CTL_SWITCH (posts before the model switch, default 45000),
# RTUNE_CTL_OUT (where the runs are kept; default $RTUNE_BUILD_DIR/rxe-inline-ctl-apply).
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
app=$B/tests/rxe/mixed_sender
so=$B/tests/rxe/libemunic.so
here=$(cd "$(dirname "$0")" && pwd)
dev=${RTUNE_VM_DEV:-rxe0}
w=${RTUNE_CTL_OUT:-$B/rxe-inline-ctl-apply}
budget=${RTUNE_CTL_BUDGET:-80000}
budget2=${RTUNE_CTL_BUDGET2:-60000}
switch=${RTUNE_CTL_SWITCH:-45000}
block=500
granted=512
rm -rf "$w"
mkdir -p "$w"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ -f "$so" ] || { echo "FAIL: no $so"; exit 1; }
[ -x "$app" ] || { echo "FAIL: no $app"; exit 1; }

cap=$($rtune devices -d "$dev" --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); devs=d['devices'] if isinstance(d,dict) else d
print(next(x for x in devs if x['name']=='$dev')['max_inline_data']['rc'])" 2>/dev/null)
case "$cap" in ''|*[!0-9]*) cap=0; echo "note: rtune devices gave no max_inline_rc" ;; esac
[ "$cap" -ge "$granted" ] || { echo "FAIL: $dev grants max_inline_data $cap < $granted B"; exit 1; }
# sizes: the middle of every band of the shared buckets from 16 to 511 B, and three above the granted 512 B
sizes=$(python3 -c "
out=[]
for e in range(4, 9):
    w=1<<(e-3)
    for s in range(8):
        out.append(str((1<<e)+s*w+w//2))
print(','.join(out + ['600', '800', '1000']))")
echo "sizes: $sizes"
profile() { # profile FILE THRESHOLD: one rxe0 RC SEND entry, max_inline_data $granted
	python3 - "$1" "$2" "$granted" <<'PY'
import json, sys, uuid
path, thr, mx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = {"device": "rxe0", "guid": None, "port": 1, "opcode": "send", "qp_type": "rc", "inline_threshold": thr,
     "max_inline_data": mx, "signal_interval": 16, "sq_depth": 128, "cq_depth": 128, "cq_moderation": None,
     "numa_node": -1, "cpus": "0", "confidence": "medium", "reasons": [{"code": "hand_written", "text": "rxe tier"}],
     "measured_at": "2026-12-01T12:00:00Z", "run_id": str(uuid.uuid4()), "app": None}
json.dump({"schema": {"name": "rtune-profile", "version": "1.2"}, "rtune_version": "0.1.0",
           "node": {"hostname": "rxe-guest", "machine_id": "", "cpu_count": 2, "numa_nodes": 1}, "entries": [e]},
          open(path, "w"), indent=2)
PY
}
profile "$w/profile-16.json" 16
profile "$w/profile-$granted.json" "$granted"
# the same entry as this node's profile in the store, so that `rtune show` has entries beside the controllers
python3 - "$w/profile-16.json" "$w/node-profile.json" <<'PY'
import json, socket, sys
d = json.load(open(sys.argv[1]))
try:
    mid = open("/etc/machine-id").read().strip()
except OSError:
    mid = ""
d["node"]["hostname"], d["node"]["machine_id"] = socket.gethostname(), mid
json.dump(d, open(sys.argv[2], "w"))
PY
"$rtune" import --db "$w/store.db" "$w/node-profile.json" > /dev/null || bad "rtune import of this node's profile"

# flat: the application alone under the shim (no probe), its own median signaled post -> completion
LD_PRELOAD="$so" "$app" -d "$dev" -n 3000 -s "$sizes" -N 2 > "$w/flat.out" 2> "$w/flat.err"
rc=$?
cat "$w/flat.out" "$w/flat.err"
[ $rc -eq 0 ] || bad "flat: mixed_sender exited $rc"
base=$(sed -n 's/.*median signaled post->completion \([0-9]*\) ns.*/\1/p' "$w/flat.out")
case "$base" in ''|*[!0-9]*) base=100000 ;; esac
chunk=$(( base * 2 )); [ $chunk -lt 60000 ] && chunk=60000
echo "the application's base post -> completion ${base} ns; chunk cost ${chunk} ns"
x128=(EMUNIC_INLINE_CHUNK_NS=$chunk EMUNIC_DMA_NS=$(( chunk * 5 / 2 )))
x64=(EMUNIC2_INLINE_CHUNK_NS=$chunk EMUNIC2_DMA_NS=$(( chunk * 3 / 2 )))

# run NAME START COUNT ENV...: the application under rtune probe --apply (adaptive) and the shim
run() {
	local name=$1 start=$2 count=$3; shift 3
	local t0=$(date +%s) rc
	env LD_PRELOAD="$so" RTUNE_APPLY_ADAPTIVE=1 EMUNIC_TRACE_BLOCK=$block "$@" \
		"$rtune" probe --db "$w/store.db" --name "mixed-$name" --apply "$w/profile-$start.json" --out "$w/$name.json" \
		-- env EMUNIC_REPORT="$w/$name.rep" "$app" -d "$dev" -n "$count" -s "$sizes" -N 2 \
		> "$w/$name.out" 2> "$w/$name.err"
	rc=$?
	echo "== $name: exit $rc in $(( $(date +%s) - t0 )) s (start $start B; $*)"
	cat "$w/$name.out" "$w/$name.err"
	[ $rc -eq 0 ] || bad "$name: rtune probe -- mixed_sender exited $rc"
}
run below 16 $(( budget + 5000 )) "${x128[@]}"
run above "$granted" $(( switch + budget2 + 5000 )) "${x128[@]}" EMUNIC_SWITCH_AFTER=$switch "${x64[@]}"
"$rtune" show --db "$w/store.db" > "$w/show.txt" 2>&1
"$rtune" show --db "$w/store.db" --json > "$w/show.json" 2>&1
sed -n '/adaptive inline threshold/,$p' "$w/show.txt"
python3 "$here/inline_ctl_apply_check.py" "$w" "$budget" "$budget2" "$switch" "$granted" || fail=1
[ $fail = 0 ] && echo "rxe_inline_ctl_apply: ok" || echo "rxe_inline_ctl_apply: FAILED"
exit $fail
