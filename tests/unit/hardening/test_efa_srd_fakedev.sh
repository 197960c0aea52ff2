#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# AWS EFA's SRD QPs on fakedev.so (RT_FAKEDEV_EFA=1: vendor Amazon, no RC, UD, efadv_query_device and
# efadv_create_qp_ex with SRD, a 32-byte inline buffer, a GID-addressed port of link layer "unspecified"). rxe has no
# SRD: this is the proof that the path works end to end. `rtune devices` shows the EFA caps and the SRD max inline;
# calibrate measures send on SRD (latency inline and not, the signaling sweep) through QPs created by efadv (the fake
# counts them and the SENDs posted on them) beside UD, skips RC with the reason; tune + export carry send/srd entries;
# librtune loads the export and finds them by RT_PROFILE_QPT_SRD; --qp-type srd alone works, is refused on a device
# that is not EFA, and with --peer.
set -uo pipefail
rtune=$1 shim=$2 librtune=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
jqo() { jq -r "$1" "$tmp/run.json" 2>/dev/null; }
rep() { awk -v v="$1" '$1 == v {print $2}' "$tmp/rep"; }
efa() { env RT_FAKEDEV_EFA=1 LD_PRELOAD="$shim" "$rtune" "$@"; }

# ---- rtune devices ------------------------------------------------------------------------------------------------
efa devices >"$tmp/dev" 2>&1
grep -q '^    max_inline_srd: 32 bytes$' "$tmp/dev" &&
  grep -q '^    efa: max_sq_wr 4096, max_rq_wr 4096, max_sq_sge 2, max_rq_sge 1, inline_buf_size 32 B, max_rdma_size 1073741824 B, rdma read yes, rdma write no, rnr retry yes$' "$tmp/dev" &&
  grep -q '^    max_inline_rc: unsupported (no rc qp)$' "$tmp/dev" &&
  grep -q 'default gid: 0 (unspecified link layer (EFA): the port.s first GID is its address)' "$tmp/dev" &&
  ok "devices: srd max inline 32, the efa caps, no rc, the GID as the address" || bad "devices: $(cat "$tmp/dev")"
efa devices --json >"$tmp/dev.json"
v=$(jq -c '[.schema.version, .devices[0].max_inline_data.srd, .devices[0].efa.inline_buf_size, .devices[0].efa.rdma_read, .devices[0].max_inline_error.rc]' "$tmp/dev.json")
[ "$v" = '["1.1",32,32,true,"unsupported"]' ] && ok "devices --json: $v" || bad "devices --json: $v"
env LD_PRELOAD="$shim" "$rtune" devices --json >"$tmp/dev2.json"
v=$(jq -c '[.devices[0].efa, .devices[0].max_inline_data.srd, .devices[0].max_inline_error.srd]' "$tmp/dev2.json")
[ "$v" = '[null,null,"unsupported"]' ] && ! env LD_PRELOAD="$shim" "$rtune" devices | grep -q 'srd\|efa:' &&
  ok "devices on a device that is not EFA: no srd, efa null" || bad "non-EFA devices: $v"

# ---- calibrate ------------------------------------------------------------------------------------------------------
# (two sizes and a 10 s budget: measured points even on a loaded machine)
timeout 180 env RT_FAKEDEV_EFA=1 RT_FAKEDEV_REPORT="$tmp/rep" RT_FAKEDEV_QP_LOG="$tmp/qplog" LD_PRELOAD="$shim" \
  "$rtune" calibrate --quick --budget 10 --sizes 8,32 --db "$tmp/db" --out "$tmp/run.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
lat=$(jqo '[.latency[] | .op + "/" + .qp_type + "/" + (.inline | tostring)] | unique | join(",")')
rate=$(jqo '[.rate[] | .op + "/" + .qp_type + "/" + (.inline | tostring)] | unique | join(",")')
what=$(jqo '[.params.skipped[]?.what] | join(",")') why=$(jqo '.params.skipped[0].reason')
[ $rc -eq 0 ] && [ "$(jqo .params.qp_types)" = ud,srd ] && [ "$(jqo .device.max_inline_srd)" = 32 ] &&
  [ "$lat" = send/srd/false,send/srd/true,send/ud/false,send/ud/true ] &&
  [ "$rate" = send/srd/false,send/srd/true,send/ud/false,send/ud/true ] &&
  ok "calibrate: latency $lat, rate $rate" ||
  bad "calibrate: exit $rc, qp types '$(jqo .params.qp_types)', latency '$lat', rate '$rate', $(head -c 300 "$tmp/err")"
[ "$what" = "rc,write,cq moderation" ] && [ "$why" = "the device has no rc qps (EFA: UD and SRD): send measured on ud and srd" ] &&
  ok "calibrate: rc skipped ($why)" || bad "skipped '$what' ($why)"
[ "$(rep srd_qps)" = 2 ] && [ "$(rep srd_sends)" -gt 1000 ] && [ "$(rep live)" = 0 ] &&
  ok "srd qps through efadv_create_qp_ex: $(rep srd_qps), sends on them: $(rep srd_sends), nothing leaked" ||
  bad "fake report: srd_qps '$(rep srd_qps)' srd_sends '$(rep srd_sends)' live '$(rep live)'"
# SRD brought up like libfabric's efa provider: INIT, RTR, RTS; every address handle by GID; no RC QP ever moved
[ "$(grep -c '^modify_qp qp [0-9]* srd state [123] ' "$tmp/qplog")" = 6 ] && ! grep -q ' rc state' "$tmp/qplog" &&
  ! grep -q 'create_ah .* global 0' "$tmp/qplog" && ok "qp log: two srd qps to RTS, ahs by GID, no rc" ||
  bad "qp log: $(sort "$tmp/qplog" | uniq -c | head)"
grep -q '^max inline probed rc -1 / ud 32 / srd 32 bytes' "$tmp/out" && grep -q '^send   srd pingpong' "$tmp/out" &&
  ok "summary: srd max inline and srd rows" || bad "summary: $(head -5 "$tmp/out")"

# ---- tune, export, librtune -------------------------------------------------------------------------------------------
"$rtune" tune --db "$tmp/db" >"$tmp/tune" 2>&1 || bad "tune: $(tail -3 "$tmp/tune")"
"$rtune" export --db "$tmp/db" -o "$tmp/profile.json"
e=$(jq -c '[.entries[] | .opcode + "/" + .qp_type] | sort' "$tmp/profile.json")
s=$(jq -c '[.skipped[] | select(.what == "rc") | .kind + ":" + .qp_type]' "$tmp/profile.json")
[ "$e" = '["send/srd","send/ud"]' ] && [ "$s" = '["qp_type:rc"]' ] && ok "export: entries $e, skipped $s" ||
  bad "export: entries $e, skipped $s"
python3 - "$librtune" "$tmp/profile.json" <<'PY' && ok "librtune: the srd entry by RT_PROFILE_QPT_SRD" || bad "librtune srd lookup"
import ctypes, json, sys
L = ctypes.CDLL(sys.argv[1])
L.rt_profile_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
L.rt_profile_select.restype = ctypes.c_void_p
L.rt_profile_select.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
L.rt_profile_signal_interval.restype = ctypes.c_uint32
L.rt_profile_signal_interval.argtypes = [ctypes.c_void_p]
L.rt_profile_qp_type_name.restype = ctypes.c_char_p
p = ctypes.c_void_p()
assert L.rt_profile_load(sys.argv[2].encode(), ctypes.byref(p), None) == 0
e = L.rt_profile_select(p, b"fake0", 1, 0, 2)  # send, RT_PROFILE_QPT_SRD
assert e, "no send/srd entry"
doc = json.load(open(sys.argv[2]))
want = [x for x in doc["entries"] if x["qp_type"] == "srd"][0]
assert L.rt_profile_signal_interval(e) == want["signal_interval"]
assert L.rt_profile_qp_type_name(2) == b"srd"
assert not L.rt_profile_select(p, b"fake0", 1, 0, 0)  # no rc entry
print("send/srd: signal_interval %d" % want["signal_interval"])
PY
"$rtune" export --db "$tmp/db" --format env >"$tmp/env"
grep -q '^export RTUNE_SIGNAL_INTERVAL_SRD_FAKE0_P1=[0-9]*$' "$tmp/env" && grep -q '^export RTUNE_INLINE_THRESHOLD_SRD_FAKE0_P1=' "$tmp/env" &&
  ok "env: RTUNE_*_SRD_FAKE0_P1" || bad "env: $(grep SRD "$tmp/env")"

# ---- --qp-type srd ------------------------------------------------------------------------------------------------
timeout 120 env RT_FAKEDEV_EFA=1 LD_PRELOAD="$shim" "$rtune" calibrate --quick --budget 6 --sizes 8,32 --qp-type srd \
  --no-store --out "$tmp/run.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ "$(jqo .params.qp_types)" = srd ] && [ "$(jqo '[.latency[].qp_type, .rate[].qp_type] | unique | join(",")')" = srd ] &&
  ok "--qp-type srd: srd only" || bad "--qp-type srd: exit $rc, $(jqo .params.qp_types), $(head -c 300 "$tmp/err")"
timeout 60 env LD_PRELOAD="$shim" "$rtune" calibrate --quick --budget 2 --qp-type srd --no-store >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -qx "rtune: calibrate: device 'fake0' has no srd qps (SRD is AWS EFA's, through efadv: not an EFA device)" "$tmp/err" &&
  ok "--qp-type srd on a device that is not EFA: named" || bad "srd on non-EFA: exit $rc, $(cat "$tmp/err")"
"$rtune" calibrate --peer 192.0.2.1 --qp-type srd --no-store >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "options '--peer' and '--qp-type srd' exclude each other" "$tmp/err" &&
  ok "--peer --qp-type srd: usage error" || bad "--peer srd: exit $rc, $(cat "$tmp/err")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
