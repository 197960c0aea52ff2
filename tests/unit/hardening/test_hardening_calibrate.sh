#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune calibrate` with its verbs failing, on the host: fakedev.so (LD_PRELOADed) is a software device "fake0" with a
# loopback data path, on which a quick calibration runs to completion; each run makes one verbs call fail
# (RT_FAKEDEV_FAIL=VERB:N[:ERRNO]): every call of the set-up verbs in turn (device, PD, channel, CQs, MRs, QPs and
# their state changes) and sample calls of ibv_post_recv, ibv_post_send and ibv_poll_cq through the latency and rate
# phases; ibv_create_qp also as a resource that stays exhausted (RT_FAKEDEV_FAIL_FROM). Every run must exit 0 (a
# failure the engine may absorb, such as a refused QP while probing the max inline data or an ENOMEM from a full send
# queue) or 1 with exactly one "rtune: ..." line on stderr, within its time limit (no hang), with every device
# object destroyed (the shim counts them), no run left "running" in the store, and the store intact. With valgrind
# (3rd argument) a selection of the failing runs is also checked for leaks and memory errors.
set -uo pipefail
rtune=$1 shim=$2 valgrind=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
db=$tmp/rtune.db

cal() { # cal FAIL [FROM] [valgrind...]: one calibration on fake0; sets rc, and the files $tmp/{out,err,rep}
  local fail=$1 from=${2:-}
  shift 2 2>/dev/null || shift $#
  rm -f "$tmp/rep"
  # the shim only in rtune (and valgrind's client): not in timeout, whose own exit would write an empty report
  timeout 120 env RT_FAKEDEV_FAIL="$fail" RT_FAKEDEV_FAIL_FROM="$from" RT_FAKEDEV_REPORT="$tmp/rep" LD_PRELOAD="$shim" \
    "$@" "$rtune" calibrate -d fake0 --quick --budget 2 --db "$db" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

check() { # check DESCRIPTION [VERB N]: the run's outcome; with VERB N, its N-th call failing must fail the run
  local d=$1 lines live running
  runs=$((runs + 1))
  lines=$(wc -l <"$tmp/err")
  live=$(awk '$1 == "live" {print $2}' "$tmp/rep" 2>/dev/null)
  running=$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'running'" 2>&1)
  if [ $rc -eq 1 ] && [ "$lines" -eq 1 ] && grep -q '^rtune: ' "$tmp/err"; then
    echo "ok   $d: $(cat "$tmp/err")"
  elif [ $rc -eq 0 ] && [ -n "${2:-}" ] && [ "$(awk -v v="$2" '$1 == v {print $2}' "$tmp/rep")" -lt "$3" ]; then
    echo "ok   $d: not reached (this run made only $(awk -v v="$2" '$1 == v {print $2}' "$tmp/rep") calls)"
  elif [ $rc -eq 0 ] && [ "${2:-}" = ibv_post_recv ] && grep -q '^skipped: concurrency band: cannot post a receive' "$tmp/out"; then
    # the concurrency band's own receives: the band is dropped, said, and the rest of the run goes on
    echo "ok   $d: $(grep '^skipped: concurrency band' "$tmp/out")"
  elif [ $rc -eq 0 ] && [ -n "${2:-}" ]; then
    bad "$d: the failure was absorbed, calibration complete"
  elif [ $rc -eq 0 ]; then
    echo "ok   $d: absorbed, calibration complete"
  else
    bad "$d: exit $rc, $lines stderr lines: $(head -c 400 "$tmp/err" | tr '\n' '|')"
  fi
  [ "$live" = 0 ] || bad "$d: ${live:-?} device objects never destroyed (report: $(tr '\n' ' ' <"$tmp/rep" 2>/dev/null))"
  [ "$running" = 0 ] || bad "$d: the store has $running runs left running"
}

# ---- a calibration without failures: the call counts ---------------------------------------------------------------
cal "" ""
if [ $rc -eq 0 ] && grep -q 'status complete' "$tmp/out"; then ok "fake0: a quick calibration completes"
else bad "fake0: calibration without failures: exit $rc: $(head -c 400 "$tmp/err")"; exit 1; fi
[ "$(awk '$1 == "live" {print $2}' "$tmp/rep")" = 0 ] && ok "fake0: every device object destroyed" ||
  bad "fake0: objects left alive: $(tr '\n' ' ' <"$tmp/rep")"
cp "$tmp/rep" "$tmp/counts"
count() { awk -v v="$1" '$1 == v {print $2}' "$tmp/counts"; }
echo "calls without failures: $(tr '\n' ' ' <"$tmp/counts")"

# ---- every call of the set-up verbs --------------------------------------------------------------------------------
for v in ibv_open_device ibv_query_device ibv_query_port ibv_alloc_pd ibv_create_comp_channel ibv_create_cq \
  ibv_reg_mr ibv_modify_qp; do
  n=$(count $v)
  [ "${n:-0}" -gt 0 ] || { bad "$v: never called"; continue; }
  for k in $(seq 1 "$n"); do
    cal "$v:$k" ""
    check "$v call $k of $n failing (ENOMEM)"
  done
done
# ibv_create_qp: the max-inline probe's QPs, then the endpoints' (the last ones), once and exhausted from there on
n=$(count ibv_create_qp)
for k in 1 2 $((n - 3)) $((n - 2)) $((n - 1)) "$n"; do
  cal "ibv_create_qp:$k" ""
  check "ibv_create_qp call $k of $n failing once"
done
for k in 1 $((n - 3)) "$n"; do
  cal "ibv_create_qp:$k" 1
  check "ibv_create_qp exhausted from call $k of $n"
done
cal "ibv_create_qp:1:22" 1
check "ibv_create_qp refusing every QP (EINVAL)"
grep -q "accepts no inline data" "$tmp/err" && ok "  ... said as: no inline data" || bad "  ... not said as no inline data"
cal "ibv_create_qp:1" 1
grep -q "cannot create an rc qp on 'fake0' to probe its max inline data: Cannot allocate memory" "$tmp/err" &&
  ok "an exhausted device is not reported as one without inline data" ||
  bad "an exhausted device misreported: $(cat "$tmp/err")"

# ---- the data path: receives, sends (EINVAL fails the run; ENOMEM is a full queue) and polls ------------------------
for k in 1 2 3 40 $(( $(count ibv_post_recv) / 2 )); do
  cal "ibv_post_recv:$k" ""
  check "ibv_post_recv call $k failing" ibv_post_recv "$k"
done
cal "ibv_post_send:1" ""
check "ibv_post_send call 1 (the first control send) failing with ENOMEM"
ps=$(count ibv_post_send)
for k in 1 2 5 300 20000 $((ps / 4)) $((ps / 2)); do
  cal "ibv_post_send:$k:5" ""
  check "ibv_post_send call $k (of $ps in the first run) failing with EIO" ibv_post_send "$k"
done
# EINVAL (a WR the provider refuses) once the run began: a failure (exit 1), not a usage error
cal "ibv_post_send:300:22" ""
check "ibv_post_send call 300 failing with EINVAL" ibv_post_send 300
pc=$(count ibv_poll_cq)
for k in 1 1000 $((pc / 3)); do
  cal "ibv_poll_cq:$k" ""
  check "ibv_poll_cq call $k (of $pc in the first run) failing" ibv_poll_cq "$k"
done
r=$(sqlite3 "$db" 'PRAGMA integrity_check')
[ "$r" = ok ] && ok "store integrity after $runs runs ($(sqlite3 "$db" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM runs GROUP BY status)"))" ||
  bad "store: $r"

# ---- valgrind on a selection of failing paths ------------------------------------------------------------------------
if [ -n "$valgrind" ]; then
  # fair scheduling: the client and the responder thread spin on each other (valgrind runs one thread at a time)
  vg=("$valgrind" -q --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
  for f in ibv_open_device:1 ibv_alloc_pd:2 ibv_create_comp_channel:2 ibv_create_cq:6 ibv_reg_mr:2 \
    ibv_create_qp:$((n - 1)) ibv_modify_qp:9 ibv_post_recv:40 ibv_post_send:1 ibv_post_send:5:5 ibv_poll_cq:1000; do
    cal "$f" "" "${vg[@]}"
    if [ $rc -eq 99 ]; then bad "valgrind, $f failing: $(grep -v '^rtune: ' "$tmp/err" | head -c 800)"
    elif [ $rc -le 1 ]; then ok "valgrind, $f failing: no leak, no memory error (exit $rc)"
    else bad "valgrind, $f failing: exit $rc: $(head -c 400 "$tmp/err")"; fi
  done
fi

echo "$runs runs, $fails problems"
[ $fails -eq 0 ] && echo "all calibrate fault-injection checks passed"
exit $((fails > 0))
