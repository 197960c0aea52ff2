#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier for the store, the JSON profile and librtune, in one guest:
#  A. profiles written by hand for rxe0, imported into a store and exported again by rtune, drive examples/
#     rt_send_example on a real RC QP: inline exactly below the threshold, one signaled WR per signal_interval, the send
#     queue filled to its depth and never overflowed (0 ENOMEM), every message received intact - for several policies
#     (tiny queue signaled every WR, signal interval equal to the queue depth, odd sizes, inline never);
#  B. the issue's chain when `rtune tune` is available: calibrate -> tune -> export -> the example loads and uses the
#     profile (also through $RTUNE_PROFILE and `rtune export --format env`); show and history read the run;
#  C. the example refuses a profile without an entry for rxe0 and a profile of a newer schema major, clearly.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
ex=$B/examples/rt_send_example
dev=${RTUNE_VM_DEV:-rxe0}
w=/tmp/store-example
mkdir -p "$w"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
count=3000
sizes=8,32,64,100,128,256,512,1024,4096

max_inline=$($rtune devices -d "$dev" --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); devs=d['devices'] if isinstance(d,dict) else d
print(next(x for x in devs if x['name']=='$dev')['max_inline_data']['rc'])" 2>/dev/null)
case "$max_inline" in ''|*[!0-9]*) max_inline=64; echo "note: rtune devices gave no max_inline_rc, using $max_inline" ;; esac
echo "rxe0 probed max_inline_rc: $max_inline; ulimit -l: $(ulimit -l)"

# profile DOC THRESHOLD MAX_INLINE INTERVAL SQ_DEPTH [DEVICE] [MAJOR]
profile() {
  python3 - "$@" <<'PY'
import json, sys, uuid
path, thr, mi, n, sq = sys.argv[1], *map(int, sys.argv[2:6])
devname = sys.argv[6] if len(sys.argv) > 6 else "rxe0"
major = sys.argv[7] if len(sys.argv) > 7 else "1"
e = lambda op: {"device": devname, "guid": None, "port": 1, "opcode": op, "qp_type": "rc", "inline_threshold": thr,
    "max_inline_data": mi, "signal_interval": n, "sq_depth": sq, "cq_depth": sq, "cq_moderation": None, "numa_node": -1,
    "cpus": "0", "confidence": "medium", "reasons": [{"code": "hand_written", "text": "rxe tier policy"}],
    "measured_at": "2026-11-29T12:00:00Z", "run_id": str(uuid.uuid4()), "app": None}
doc = {"schema": {"name": "rtune-profile", "version": major + ".0"}, "rtune_version": "0.1.0",
       "node": {"hostname": "rxe-guest", "machine_id": "", "cpu_count": 2, "numa_nodes": 1},
       "entries": [e("send"), e("write")]}
json.dump(doc, open(path, "w"), indent=2)
PY
}

# expect_run NAME THRESHOLD INTERVAL SQ_DEPTH ARGS...: the example succeeds and did what the policy says
expect_run() {
  local name=$1 thr=$2 n=$3 sq=$4; shift 4
  "$ex" -d "$dev" -n $count -s $sizes "$@" > "$w/$name.out" 2> "$w/$name.err"
  local rc=$?
  cat "$w/$name.out" "$w/$name.err"
  [ $rc -eq 0 ] || { bad "$name: example exited $rc"; return; }
  python3 - "$w/$name.out" $count $thr $n $sq $sizes <<'PY' || bad "$name: counts do not match the policy"
import re, sys
out = open(sys.argv[1]).read()
count, thr, n, sq = map(int, sys.argv[2:6]); sizes = [int(s) for s in sys.argv[6].split(",")]
m = re.search(r"sent (\d+) messages .*?: (\d+) inline .*?, (\d+) signaled .*?, (\d+) send completions, max outstanding "
              r"(\d+) of sq_depth (\d+), (\d+) ENOMEM; received (\d+), (\d+) bad", out)
assert m, "no summary line"
sent, inl, sig, cqes, maxo, depth, enomem, recv, badr = map(int, m.groups())
want_inl = sum(1 for i in range(count) if thr and sizes[i % len(sizes)] <= thr)
# one signaled WR every n (the last one signaled too), never fewer
want_sig = count // n + (1 if count % n else 0)
checks = {"sent": sent == count, "received": recv == count, "intact": badr == 0, "no ENOMEM": enomem == 0,
          "inline below threshold only": inl == want_inl, "signaled every N": sig == want_sig,
          "one completion per signaled WR": cqes == sig, "queue filled to its depth": maxo == min(sq, count),
          "depth": depth == sq}
bad = [k for k, v in checks.items() if not v]
print("checks:", "all ok" if not bad else "FAILED " + ", ".join(bad),
      f"(inline {inl}/{want_inl}, signaled {sig}/{want_sig}, max outstanding {maxo}/{sq})")
sys.exit(1 if bad else 0)
PY
}

echo "== A. hand-written policies through import/export"
db=$w/a.db
thr=64; [ "$max_inline" -lt 64 ] && thr=$max_inline
profile "$w/p1.json" $thr $thr 16 64
$rtune import --db "$db" "$w/p1.json" || bad "import p1"
$rtune export --db "$db" -o "$w/e1.json" || bad "export e1"
expect_run normal $thr 16 64 --profile "$w/e1.json"

profile "$w/p2.json" 0 0 1 4
expect_run tiny-queue 0 1 4 --profile "$w/p2.json"

profile "$w/p3.json" $max_inline $max_inline 32 32
expect_run interval-equals-depth $max_inline 32 32 --profile "$w/p3.json"

profile "$w/p4.json" 100 $max_inline 7 10
[ "$max_inline" -ge 100 ] && expect_run odd-sizes 100 7 10 --profile "$w/p4.json"

if command -v valgrind >/dev/null; then
  echo "== A2. the example under valgrind (no leak, no invalid access in librtune or the example)"
  valgrind -q --error-exitcode=9 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite "$ex" -d "$dev" -n 300 \
    -s $sizes --profile "$w/p1.json" > "$w/vg.out" 2>&1
  rc=$?
  tail -3 "$w/vg.out"
  [ $rc -eq 0 ] || bad "example under valgrind exited $rc"
fi

echo "== B. calibrate -> tune -> export -> example"
if $rtune tune --help >/dev/null 2>&1; then
  db=$w/b.db
  $rtune calibrate -d "$dev" --quick --budget 20 --db "$db" > "$w/cal.out" 2>&1 || { cat "$w/cal.out"; bad "calibrate"; }
  tail -3 "$w/cal.out"
  $rtune tune --db "$db" > "$w/tune.out" 2>&1 || { cat "$w/tune.out"; bad "tune"; }
  tail -15 "$w/tune.out"
  $rtune export --db "$db" -o "$w/tuned.json" || bad "export of the tuned profile"
  $rtune show --db "$db" "$dev" > "$w/show.out" || bad "show"
  head -20 "$w/show.out"
  grep -q "inline_threshold" "$w/show.out" || bad "show has no threshold"
  $rtune history --db "$db" || bad "history"
  read -r thr n sq < <(python3 -c "
import json; d=json.load(open('$w/tuned.json'))
e=next(e for e in d['entries'] if e['device']=='$dev' and e['opcode']=='send' and e['qp_type']=='rc' and e['port']==1)
print(e['inline_threshold'], e['signal_interval'], e['sq_depth'])") || bad "tuned profile has no rc send entry for $dev"
  echo "tuned: inline_threshold $thr, signal_interval $n, sq_depth $sq"
  expect_run tuned "$thr" "$n" "$sq" --profile "$w/tuned.json"
  RTUNE_PROFILE=$w/tuned.json expect_run tuned-env "$thr" "$n" "$sq"
  eval "$($rtune export --db "$db" --format env --profile "$w/tuned.json")"
  [ "${RTUNE_PROFILE:-}" = "$w/tuned.json" ] || bad "export --format env did not set RTUNE_PROFILE"
  # threshold 0 (never inline) leaves FI_VERBS_INLINE_SIZE unset: libfabric reads 0 as the device's maximum
  want_fi=$thr; [ "$thr" = 0 ] && want_fi=""
  [ "${FI_VERBS_INLINE_SIZE:-}" = "$want_fi" ] || bad "FI_VERBS_INLINE_SIZE '${FI_VERBS_INLINE_SIZE:-}' != '$want_fi'"
  [ "${UCX_RC_TX_CQ_MODERATION:-}" = "$((n - 1))" ] ||
    bad "UCX_RC_TX_CQ_MODERATION '${UCX_RC_TX_CQ_MODERATION:-}' != N - 1 = $((n - 1))"
else
  echo "SKIP B: 'rtune tune' is not available in this build"
fi

echo "== C. refusals"
profile "$w/other.json" 64 64 16 64 mlx5_0
"$ex" -d "$dev" -n 10 --profile "$w/other.json" > "$w/c1.out" 2>&1; rc=$?
cat "$w/c1.out"
[ $rc -eq 1 ] && grep -q "has no RC send entry for $dev port 1" "$w/c1.out" || bad "profile without $dev not refused clearly"
profile "$w/major2.json" 64 64 16 64 rxe0 2
"$ex" -d "$dev" -n 10 --profile "$w/major2.json" > "$w/c2.out" 2>&1; rc=$?
cat "$w/c2.out"
[ $rc -eq 1 ] && grep -q "schema version 2.0 is not supported" "$w/c2.out" || bad "newer major not refused clearly"

[ $fail -eq 0 ] && echo "PASS: store/profile/librtune rxe tier" || echo "FAIL: store/profile/librtune rxe tier"
exit $fail
