#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune calibrate` on fakedev.so with provider behaviours of issue 16 that rxe cannot show: a max inline that is not a
# power of two (220 B, irdma's ~100 B) reached by the default grid; a first device whose port is down (the default
# device is the first with an active port; -d all calibrates every active port); IBV_SEND_INLINE refused on RDMA WRITE
# at ibv_post_send though max_inline_data was accepted (skipped with the reason, the signaling sweep kept); an ENOMEM
# that is not a full queue (named, not "peer did not answer"); RNR NAKs in the port's hw counters (reported per phase)
# and an RNR-retry-exceeded completion (named); no RC QPs (EFA: UD calibrated, the rest skipped); an iWARP device (RC loopback through rdma_cm, said in the notes; by
# hand it fails at RTR with the hint) and --connect cm on RoCE.
set -uo pipefail
rtune=$1 shim=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# cal [ENV=VALUE...] -- ARGS: a quick calibration on the shim; sets rc, $tmp/out (JSON), $tmp/err
cal() {
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  timeout 120 env "${envs[@]}" LD_PRELOAD="$shim" "$rtune" calibrate --quick --budget 2 --no-store --json "$@" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
jqo() { jq -r "$1" "$tmp/out" 2>/dev/null; }

# ---- item 3: the default grid reaches the probed maximum -----------------------------------------------------------
for m in 220:128,174,220 100:64,82,100; do
  max=${m%%:*} want=${m#*:}
  cal RT_FAKEDEV_MAX_INLINE=$max --
  tail=$(jqo '.params.sizes[-3:] | map(tostring) | join(",")') used=$(jqo '.max_inline_used')
  [ $rc -eq 0 ] && [ "$tail" = "$want" ] && [ "$used" = "$max" ] &&
    ok "max inline $max: default grid ends $tail, qps created with $used" ||
    bad "max inline $max: exit $rc, grid ends '$tail' (want $want), max_inline_used '$used' $(head -c 200 "$tmp/err")"
done

# ---- item 6: the default device has an active port; -d all --------------------------------------------------------
cal RT_FAKEDEV_DEVICES=3 RT_FAKEDEV_PORT_DOWN=0 --
name=$(jqo '.device.name') notes=$(jqo '.params.notes')
[ $rc -eq 0 ] && [ "$name" = fake1 ] && [[ "$notes" == *"device fake1: the first with an active port (fake0: none active)"* ]] &&
  ok "fake0's port down: calibrated fake1 and said why" || bad "port down: exit $rc, device '$name', notes '$notes'"
cal RT_FAKEDEV_DEVICES=3 RT_FAKEDEV_PORT_DOWN=1 -- -d all
names=$(jqo '[.runs[] | .device.name + ":" + .status] | join(",")') schema=$(jqo '.schema.name')
[ $rc -eq 0 ] && [ "$schema" = rtune-run-list ] && [ "$names" = fake0:complete,fake2:complete ] &&
  ok "-d all: one run per active port ($names)" || bad "-d all: exit $rc, $schema '$names' $(head -c 200 "$tmp/err")"
cal RT_FAKEDEV_DEVICES=2 RT_FAKEDEV_PORT_DOWN=0,1 -- -d all
[ $rc -eq 1 ] && grep -q "^rtune: no device has an active port" "$tmp/err" && ok "-d all without an active port: exit 1" ||
  bad "-d all, all down: exit $rc, $(cat "$tmp/err")"

# ---- item 2: inline refused on RDMA WRITE at post time ------------------------------------------------------------
# (a small grid and a longer budget: these need measured points even on a loaded machine)
data="--budget 10 --qp-type rc --sizes 8,64"
cal RT_FAKEDEV_NO_INLINE_WRITE=1 -- $data
what=$(jqo '[.params.skipped[]?.what] | join(",")') why=$(jqo '.params.skipped[0].reason')
wlat=$(jqo '[.latency[] | select(.op == "write")] | length') slat=$(jqo '[.latency[] | select(.op == "send" and .inline)] | length')
# (send inline is kept: measured, unless the machine was so loaded that the budget measured no send point at all)
sany=$(jqo '[.latency[] | select(.op == "send")] | length')
[ $rc -eq 0 ] && [ "$what" = "inline write/rc" ] && [[ "$why" == *"refused IBV_SEND_INLINE"* ]] && [ "$wlat" = 0 ] &&
  { [ "$slat" -gt 0 ] || [ "$sany" = 0 ]; } && ok "inline write refused: skipped ($why); send inline kept" ||
  bad "inline write refused: exit $rc, skipped '$what' ($why), write lat $wlat, send inline lat $slat"
# the signaling sweep of WRITE is not lost: its non-inline cells are measured (write only: the sweep gets the budget)
cal RT_FAKEDEV_NO_INLINE_WRITE=1 -- --budget 8 --qp-type rc --ops write --sizes 8
wrate=$(jqo '[.rate[] | select(.op == "write") | .inline] | unique | map(tostring) | join(",")')
[ $rc -eq 0 ] && [ "$wrate" = false ] && ok "inline write refused: write signaling sweep measured non-inline ($(jqo '.rate | length') cells)" ||
  bad "inline write refused, sweep: exit $rc, write rate inline '$wrate', $(head -c 200 "$tmp/err")"

# no RC QPs at all (EFA: UD and SRD): what the device has (send on UD, inline and not, and its signaling sweep) is
# calibrated, the rest skipped with the reason; without UD asked for, the run fails naming the missing RC
cal RT_FAKEDEV_NO_RC=1 -- --budget 10 --sizes 8,64
what=$(jqo '[.params.skipped[]?.what] | join(",")') qpt=$(jqo '.params.qp_types')
lat=$(jqo '[.latency[] | .op + "/" + .qp_type + "/" + (.inline | tostring)] | unique | join(",")')
rate=$(jqo '[.rate[] | .op + "/" + .qp_type] | unique | join(",")')
[ $rc -eq 0 ] && [ "$qpt" = ud ] && [ "$what" = "rc,write,cq moderation" ] && [ "$lat" = send/ud/false,send/ud/true ] &&
  [ "$rate" = send/ud ] && ok "no rc qps: ud calibrated (latency $lat, rate $rate), skipped $what" ||
  bad "no rc: exit $rc, qp types '$qpt', skipped '$what', latency '$lat', rate '$rate', $(head -c 300 "$tmp/err")"
cal RT_FAKEDEV_NO_RC=1 -- --qp-type rc
[ $rc -eq 1 ] && grep -q "device 'fake0' has no rc qps (ibv_create_qp IBV_QPT_RC: Operation not supported; EFA offers UD and SRD only)" "$tmp/err" &&
  ok "no rc qps, --qp-type rc: named" || bad "no rc, rc only: exit $rc, $(cat "$tmp/err")"

# ---- item 15: ENOMEM that is not a full queue, RNR -------------------------------------------------------------------
cal RT_FAKEDEV_INLINE_ENOMEM_ABOVE=32 -- --budget 10 --qp-type rc --sizes 8,64
[ $rc -eq 1 ] && grep -q "with ENOMEM while .* send WRs were outstanding: not a full send queue" "$tmp/err" &&
  ! grep -q "did not answer" "$tmp/err" && ok "enomem for an inline size: named ($(cut -c1-90 "$tmp/err"))" ||
  bad "enomem: exit $rc, $(cat "$tmp/err")"
hw=$tmp/sys/class/infiniband/fake0/ports/1/hw_counters
mkdir -p "$hw"
cal SYSFS_PATH="$tmp/sys" RT_FAKEDEV_HW_COUNTERS="$hw" RT_FAKEDEV_RNR_EVERY=50 -- $data
lat=$(jqo '.params.rnr.latency.rnr_nak_retry_err') sig=$(jqo '.params.rnr.signaling.rnr_nak_retry_err')
notes=$(jqo '.params.notes')
# (which phase sees them depends on how many points the budget allowed on this machine: each one that does is noted)
want=""
[ "$lat" -gt 0 ] 2>/dev/null && want="rnr during the latency grid: rnr_nak_retry_err +$lat"
[ "$sig" -gt 0 ] 2>/dev/null && want="rnr during the signaling sweep: rnr_nak_retry_err +$sig (the responder fell behind reposting receives: send rates may be receiver-limited)"
[ $rc -eq 0 ] && [ -n "$want" ] && [[ "$notes" == *"$want"* ]] &&
  ok "rnr naks: +$lat in the latency grid, +$sig in the sweep, noted" || bad "rnr: exit $rc, latency '$lat' signaling '$sig', notes '$notes'"
cal SYSFS_PATH="$tmp/sys" RT_FAKEDEV_HW_COUNTERS="$hw" --
sig=$(jqo '.params.rnr.signaling.rnr_nak_retry_err') notes=$(jqo '.params.notes')
[ $rc -eq 0 ] && [ "$sig" = 0 ] && [[ "$notes" != *rnr* ]] && ok "no rnr: counters read, 0, nothing noted" ||
  bad "no rnr: exit $rc, signaling '$sig', notes '$notes'"
cal --
[ "$(jqo '.params.rnr.counters')" = "none: the device exposes no rnr hw counters" ] && ok "no hw counters: said so" ||
  bad "no hw counters: $(jqo '.params.rnr')"
cal RT_FAKEDEV_RNR_EXC=1 RT_FAKEDEV_RNR_EVERY=500 -- $data
[ $rc -eq 1 ] && grep -q "RNR retry counter exceeded .*receiver not ready" "$tmp/err" && ! grep -q "did not answer" "$tmp/err" &&
  ok "rnr retry exceeded: named" || bad "rnr retry exceeded: exit $rc, $(cat "$tmp/err")"

# ---- item 1: iWARP connects through rdma_cm (fakedev's rdma_cm: loopback to the own address) ----------------------
cal RT_FAKEDEV_IWARP=1 --
notes=$(jqo '.params.notes') tr=$(jqo '.device.transport')
[ $rc -eq 0 ] && [ "$tr" = iWARP ] && [ "$(jqo .status)" = complete ] &&
  [[ "$notes" == *"connect: rdma_cm loopback to the node's own address (iWARP: RC QPs connect only through the iWARP CM)"* ]] &&
  [[ "$notes" == *"ud skipped"* ]] && ok "iWARP: calibrate picked rdma_cm and said so" ||
  bad "iWARP default: exit $rc, transport '$tr', notes '$notes', $(head -c 300 "$tmp/err")"
cal RT_FAKEDEV_IWARP=1 -- --connect manual
[ $rc -eq 1 ] && grep -q "cannot move the rc qp to RTR .*iWARP RC QPs connect only through the iWARP CM: use --connect cm" "$tmp/err" &&
  ok "iWARP --connect manual: the RTR refusal with the hint" || bad "iWARP manual: exit $rc, $(cat "$tmp/err")"
cal RT_FAKEDEV_ROCE=1 -- --connect cm
notes=$(jqo '.params.notes')
[ $rc -eq 0 ] && [[ "$notes" == *"connect: rdma_cm loopback to the node's own address (--connect cm)"* ]] &&
  [ "$(jqo .params.qp_types)" = rc,ud ] && ok "RoCE --connect cm: rdma_cm loopback, ud by hand" ||
  bad "RoCE --connect cm: exit $rc, notes '$notes', $(head -c 300 "$tmp/err")"
cal -- --connect cm
[ $rc -eq 1 ] && grep -q "rdma_cm loopback: no IPv4 address found for 'fake0' port 1 .*use --cm-addr" "$tmp/err" &&
  ok "--connect cm without an own IPv4 address: named" || bad "cm without address: exit $rc, $(cat "$tmp/err")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
