#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune devices` (and the GID pick of `rtune calibrate`) on fakedev.so with provider behaviours rxe cannot show:
# ibv_create_qp failing with ENOMEM/EAGAIN below the true max inline (once: retried, the true maximum; for good: the
# maximum unknown with the error, never a smaller number); one of several devices failing ibv_open_device or
# ibv_query_device (listed with its error, the others in full, exit 0; every device failing: exit 1); a RoCE GID table
# of 28 valid entries in 32 slots read whole through ibv_query_gid_table, ibv_query_gid_ex and ibv_query_gid + sysfs,
# with the default pick (the first RoCE v2 IPv4-mapped GID, index 21) and its reason, and calibrate using it.
set -uo pipefail
rtune=$1 shim=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# dev [ENV=VALUE...] -- ARGS: rtune with the shim and the given environment; sets rc, $tmp/out, $tmp/err
dev() {
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  timeout 60 env "${envs[@]}" LD_PRELOAD="$shim" "$rtune" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
jqo() { jq -r "$1" "$tmp/out" 2>/dev/null; }

# ---- baseline ----------------------------------------------------------------------------------------------------
dev -- devices --json
[ $rc -eq 0 ] && [ "$(jqo '.devices[0].max_inline_data.rc')" = 256 ] && ok "fake0: max inline 256 (the fake's limit)" ||
  bad "baseline: exit $rc, $(head -c 300 "$tmp/out" "$tmp/err")"

# ---- item 4: max inline probe --------------------------------------------------------------------------------------
# the calls of the RC probe: 0 (1st), 64 (2nd), 128 (3rd), 256, 512 (refused: EINVAL), then bisection
for e in 12 11; do
  dev RT_FAKEDEV_FAIL=ibv_create_qp:3:$e -- devices --json
  v=$(jqo '.devices[0].max_inline_data.rc')
  [ $rc -eq 0 ] && [ "$v" = 256 ] && ok "create_qp errno $e once at 128 bytes: retried, max inline 256" ||
    bad "create_qp errno $e once: exit $rc, max inline rc '$v' (a transient failure taken for 'too big'?)"
  dev RT_FAKEDEV_FAIL=ibv_create_qp:3:$e RT_FAKEDEV_FAIL_FROM=1 -- devices --json
  v=$(jqo '.devices[0].max_inline_data.rc') why=$(jqo '.devices[0].max_inline_error.rc')
  want=$([ $e = 12 ] && echo "Cannot allocate memory" || echo "Resource temporarily unavailable")
  [ $rc -eq 0 ] && [ "$v" = null ] && [ "$why" = "$want" ] &&
    ok "create_qp errno $e for good from 128 bytes: max inline unknown ($why)" ||
    bad "create_qp errno $e for good: exit $rc, max inline rc '$v', error '$why' (want null, '$want')"
done
# providers that refuse a too large size with EOPNOTSUPP (nbl) or without errno (bnxt_re): still "too big"
for e in 95 0; do
  dev RT_FAKEDEV_INLINE_REFUSAL=$e -- devices --json
  v=$(jqo '.devices[0].max_inline_data.rc') u=$(jqo '.devices[0].max_inline_data.ud')
  [ $rc -eq 0 ] && [ "$v" = 256 ] && [ "$u" = 256 ] && ok "too large refused with errno $e: max inline 256" ||
    bad "too large refused with errno $e: exit $rc, rc '$v' ud '$u'"
done
dev RT_FAKEDEV_FAIL=ibv_create_qp:3:12 RT_FAKEDEV_FAIL_FROM=1 -- devices
grep -q 'max_inline_rc: unknown (Cannot allocate memory)' "$tmp/out" && ok "text: max_inline_rc unknown with the error" ||
  bad "text: $(grep max_inline "$tmp/out" | tr '\n' '|')"
dev -- devices --no-probe
grep -q 'max_inline_rc: not probed' "$tmp/out" && ok "--no-probe: 'not probed', not 'unsupported'" ||
  bad "--no-probe: $(grep max_inline "$tmp/out" | tr '\n' '|')"

# ---- item 5: one failing device --------------------------------------------------------------------------------------
for verb in ibv_open_device ibv_query_device; do
  dev RT_FAKEDEV_DEVICES=3 RT_FAKEDEV_FAIL=$verb:2:13 -- devices --json
  names=$(jqo '[.devices[].name] | join(",")')
  err1=$(jqo '.devices[1].error') err0=$(jqo '.devices[0].error') err2=$(jqo '.devices[2].error')
  full=$(jqo '[.devices[0].max_inline_data.rc, .devices[2].max_inline_data.rc] | join(",")')
  if [ $rc -eq 0 ] && [ "$names" = fake0,fake1,fake2 ] && [ "$err0" = null ] && [ "$err2" = null ] &&
    [[ "$err1" == *"'fake1': Permission denied" ]] && [ "$full" = 256,256 ]; then
    ok "$verb fails on fake1 of 3: all listed, fake1 with '$err1', exit 0 (json)"
  else
    bad "$verb fails on fake1: exit $rc, names '$names', errors '$err0' '$err1' '$err2', inline '$full'"
  fi
  dev RT_FAKEDEV_DEVICES=3 RT_FAKEDEV_FAIL=$verb:2:13 -- devices
  if [ $rc -eq 0 ] && [ "$(grep -c '^fake[0-2]$' "$tmp/out")" = 3 ] &&
    grep -q "error: cannot .* device 'fake1': Permission denied" "$tmp/out" && [ ! -s "$tmp/err" ]; then
    ok "$verb fails on fake1 of 3: all listed (text), exit 0"
  else
    bad "$verb text: exit $rc: $(tr '\n' '|' <"$tmp/out" | head -c 400) / $(cat "$tmp/err")"
  fi
done
dev RT_FAKEDEV_DEVICES=2 RT_FAKEDEV_FAIL=ibv_open_device:1:13 RT_FAKEDEV_FAIL_FROM=1 -- devices --json
[ $rc -eq 1 ] && [ "$(jqo '[.devices[].error | select(. != null)] | length')" = 2 ] &&
  [ "$(grep -c '^rtune: ' "$tmp/err")" = 1 ] && ok "every device failing: both listed with errors, exit 1" ||
  bad "every device failing: exit $rc, $(head -c 300 "$tmp/out") / $(cat "$tmp/err")"
dev RT_FAKEDEV_DEVICES=3 RT_FAKEDEV_FAIL=ibv_open_device:2:13 -- devices -d fake1
[ $rc -eq 1 ] && grep -q "^rtune: cannot open device 'fake1': Permission denied" "$tmp/err" &&
  ok "-d on the failing device: exit 1 with its error" || bad "-d fake1: exit $rc, $(cat "$tmp/err")"

dev RT_FAKEDEV_FAIL=ibv_query_port:1:5 -- devices
[ $rc -eq 0 ] && grep -q '^    port 1: unknown' "$tmp/out" &&
  grep -q 'default gid: none (the port could not be queried)' "$tmp/out" &&
  ok "a port that cannot be queried: listed as unknown, the device too" ||
  bad "ibv_query_port failing: exit $rc: $(grep -A3 'port 1' "$tmp/out" | tr '\n' '|')"

# ---- item 8: the whole GID table and the default pick --------------------------------------------------------------
# sysfs for the legacy path (ibv_query_gid only): gid_attrs types and ndevs as the kernel exposes them
sys=$tmp/sys
mkdir -p "$sys/class/infiniband/fake0/ports/1/gid_attrs/types" "$sys/class/infiniband/fake0/ports/1/gid_attrs/ndevs"
for i in $(seq 0 31); do
  case $i in 2 | 3 | 30 | 31) continue ;; esac
  [ $((i % 2)) = 1 ] && t="RoCE v2" || t="IB/RoCE v1"
  echo "$t" >"$sys/class/infiniband/fake0/ports/1/gid_attrs/types/$i"
  echo "eth0" >"$sys/class/infiniband/fake0/ports/1/gid_attrs/ndevs/$i"
done
for api in table ex legacy; do
  dev RT_FAKEDEV_ROCE=1 RT_FAKEDEV_GID_API=$api SYSFS_PATH="$sys" -- devices --json
  p='.devices[0].ports[0]'
  n=$(jqo "$p.gids | length") valid=$(jqo "$p.gid_valid") pick=$(jqo "$p.default_gid.index")
  why=$(jqo "$p.default_gid.reason") t21=$(jqo "$p.gids[] | select(.index == 21) | .type")
  nd=$(jqo "$p.gids[] | select(.index == 21) | .netdev")
  if [ $rc -eq 0 ] && [ "$n" = 28 ] && [ "$valid" = 28 ] && [ "$pick" = 21 ] && [ "$t21" = "RoCE v2" ] &&
    [ -n "$nd" ] && [ "$nd" != null ] && [[ "$why" == "first RoCE v2 IPv4-mapped GID 192.168.1.21 on "* ]]; then
    ok "gid api '$api': 28 GIDs of 32 slots with types and netdev ($nd), default 21 ($why)"
  else
    bad "gid api '$api': exit $rc, $n GIDs ($valid valid), pick '$pick' ($why), gid 21 type '$t21' netdev '$nd'"
  fi
done
dev RT_FAKEDEV_ROCE=1 -- devices
grep -q '^        default gid: 21 (first RoCE v2 IPv4-mapped GID 192.168.1.21 on ' "$tmp/out" &&
  [ "$(grep -c '^        gid\[' "$tmp/out")" = 28 ] && ok "text: 28 GIDs and the default with its reason" ||
  bad "text: $(grep -c 'gid\[' "$tmp/out") GIDs, $(grep 'default gid' "$tmp/out")"
# calibrate takes the pick and says so in the run's parameters
dev RT_FAKEDEV_ROCE=1 -- calibrate -d fake0 --quick --budget 2 --db "$tmp/r.db" --json
notes=$(jq -r '.params.notes // empty' "$tmp/out" 2>/dev/null)
gi=$(jq -r '.gid_index' "$tmp/out" 2>/dev/null)
[ $rc -eq 0 ] && [ "$gi" = 21 ] && [[ "$notes" == *"gid 21: first RoCE v2 IPv4-mapped GID 192.168.1.21"* ]] &&
  ok "calibrate on the RoCE port: gid 21, noted in params ($notes)" ||
  bad "calibrate: exit $rc, gid_index '$gi', notes '$notes', $(head -c 300 "$tmp/err")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
