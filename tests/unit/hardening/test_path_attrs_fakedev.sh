#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune calibrate --tclass/--sl/--pkey-index` on fakedev.so (issue 16 item 9): the values reach the QP attributes
# (RT_FAKEDEV_QP_LOG: the RC QPs' INIT P_Key index, their RTR address vector's SL, GRH and traffic class, the UD QPs'
# INIT and their address handles; the concurrency band's QP pairs as the link's RC pair), are 0 when not given, and
# are recorded in the run's params; bad values and
# impossible combinations are one-line usage errors with exit 2 (out of range, --sl/--pkey-index with --peer, a
# traffic class on a LID-only InfiniBand port, an index past the port's P_Key table).
set -uo pipefail
rtune=$1 shim=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

cal() { # cal ARGS...: quick calibration on a RoCE fake0 with a 2-entry P_Key table; sets rc, $tmp/{log,json,err}
  rm -f "$tmp/log"
  timeout 120 env RT_FAKEDEV_ROCE=${ROCE:-1} RT_FAKEDEV_PKEYS=2 RT_FAKEDEV_QP_LOG="$tmp/log" LD_PRELOAD="$shim" \
    "$rtune" calibrate -d fake0 --quick --budget 2 --no-store --json "$@" >"$tmp/json" 2>"$tmp/err"
  rc=$?
}
lines() { grep -c "$1" "$tmp/log" 2>/dev/null || true; }
param() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['params'].get(sys.argv[2]))" "$tmp/json" "$1"; }
# the RC QPs of the run: the link's pair and the concurrency band's pairs
n_rc() { python3 -c "import json,sys; print(2 + 2 * json.load(open(sys.argv[1]))['params'].get('concurrency', {}).get('qps', 0))" "$tmp/json"; }

cal --tclass 106 --sl 3 --pkey-index 1
if [ $rc -ne 0 ]; then bad "tclass run: exit $rc: $(head -c 300 "$tmp/err")"; else
  n=$(lines ' rc state 2 pkey_index -1 sl 3 global 1 tclass 106$') want=$(n_rc)
  [ "$n" = "$want" ] && [ "$want" -ge 10 ] &&
    ok "all $n rc qps (the concurrency band's too) enter RTR with sl 3, a GRH and traffic class 106" ||
    bad "rc RTR attributes: $n of $want matching: $(grep ' rc state 2' "$tmp/log" | tr '\n' '|')"
  n=$(lines ' state 1 pkey_index 1 ')
  [ "$n" = $((want + 2)) ] && ok "the rc and ud qps enter INIT with pkey index 1" ||
    bad "INIT pkey index: $n of $((want + 2)): $(grep ' state 1 ' "$tmp/log" | tr '\n' '|')"
  n=$(lines '^create_ah sl 3 global 1 tclass 106$')
  [ "$n" = 2 ] && ok "the ud address handles carry sl 3 and traffic class 106" ||
    bad "ud address handles: $(grep create_ah "$tmp/log" | tr '\n' '|')"
  [ "$(param tclass) $(param sl) $(param pkey_index)" = "106 3 1" ] && ok "the run records tclass 106, sl 3, pkey index 1" ||
    bad "params: $(param tclass) $(param sl) $(param pkey_index)"
fi

cal
if [ $rc -ne 0 ]; then bad "default run: exit $rc: $(head -c 300 "$tmp/err")"; else
  n=$(lines ' rc state 2 pkey_index -1 sl 0 global 1 tclass 0$') want=$(n_rc)
  [ "$n" = "$want" ] && [ "$(lines ' state 1 pkey_index 0 ')" = $((want + 2)) ] &&
    ok "without the options: sl 0, tclass 0, pkey index 0 ($n rc qps)" ||
    bad "defaults: $(tr '\n' '|' <"$tmp/log")"
  [ "$(param tclass) $(param sl) $(param pkey_index)" = "0 0 0" ] && ok "the default run records 0 0 0" ||
    bad "default params: $(param tclass) $(param sl) $(param pkey_index)"
fi

usage() { # usage DESCRIPTION PATTERN ARGS...: exit 2, one "rtune..." line matching PATTERN, nothing measured
  local d=$1 pat=$2
  shift 2
  cal "$@"
  if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^rtune[ :].*$pat" "$tmp/err" && [ ! -s "$tmp/log" ]; then
    ok "$d: $(cat "$tmp/err")"
  else
    bad "$d: exit $rc, stderr: $(head -c 300 "$tmp/err" | tr '\n' '|'), qp log: $(head -c 100 "$tmp/log" 2>/dev/null)"
  fi
}
usage "tclass out of range" "'--tclass' takes 0..255, not '256'" --tclass 256
usage "sl out of range" "'--sl' takes 0..15, not '16'" --sl 16
usage "negative pkey index" "'--pkey-index' takes 0..65535, not '-1'" --pkey-index -1
usage "sl with --peer" "'--peer' and '--sl' exclude each other" --peer 127.0.0.1 --sl 1
usage "pkey index with --peer" "'--peer' and '--pkey-index' exclude each other" --peer 127.0.0.1 --pkey-index 1
usage "pkey index past the table" "pkey index 2 is past the 2-entry P_Key table" --pkey-index 2
ROCE=0 usage "tclass without a GRH" "'--tclass' needs a GRH\|--tclass needs a GRH" --tclass 8

[ $fails -eq 0 ] && echo "all path attribute checks passed" || echo "$fails check(s) failed"
exit $((fails > 0))
