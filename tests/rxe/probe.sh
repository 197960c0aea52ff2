#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The probe on real applications nobody here wrote, client and server on rxe0 in one guest, both under LD_PRELOAD of
# librtune_probe.so: ibv_rc_pingpong (ibv_post_send and the new wr_* API), ibv_ud_pingpong, perftest ib_send_bw and
# ib_write_bw (new API and --use_old_post_send) and librdmacm's rping. The recorded WR counts and byte totals must equal
# exactly what each application was asked to send (derived from its arguments). Then apply mode (inline WRs counted,
# on both post APIs), an unwritable output path (the app still succeeds, one line on stderr), a program that never
# touches verbs (no file), an exec'd app, and `rtune probe`: storing a histogram (RC, and UD then tuned with --app),
# its summary on stderr (the app's stdout its own), an existing --out file replaced, RDMA READs in the summary (rping's
# server), the app's exit status.
set -uo pipefail
lib=$RTUNE_BUILD_DIR/probe/preload/librtune_probe.so
rtune=$RTUNE_BUILD_DIR/cli/rtune
src=${RTUNE_SRC_DIR:-$(pwd)}
check() { python3 "$src/tests/rxe/probe_check.py" "$@"; }
A=$RTUNE_VM_ADDR
out=/tmp/probe-out
mkdir -p "$out"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ -r "$lib" ] || { echo "FAIL: no probe library at $lib"; exit 1; }

waitport() { # TCP port a server listens on
	for _ in $(seq 1 150); do ss -ltn 2>/dev/null | grep -q ":$1 " && return 0; sleep 0.1; done
	return 1
}

# run_pair LABEL PORT|rdma SERVER_CMD CLIENT_CMD: both under the probe, files in $out/LABEL.<pid>.json. An application
# failure is shown and the pair run once more (perftest's end-of-run TCP handshake occasionally fails on rxe after all
# traffic, "Failed to close connection between server and client"); the counts are checked on the run that passed.
run_pair() {
	local try
	for try in 1 2; do
		run_pair_once "$@" && return 0
		[ "$try" = 1 ] && echo "retrying $1 once"
	done
	fail "$1: the applications failed twice"
	return 1
}
run_pair_once() {
	local label=$1 port=$2 srv=$3 cli=$4 spid crc src_rc
	rm -f "$out"/*
	# shellcheck disable=SC2086
	RTUNE_PROBE_OUT=$out/$label.%p.json LD_PRELOAD=$lib timeout 120 $srv > "/tmp/$label.srv.log" 2>&1 &
	spid=$!
	if [ "$port" = rdma ]; then sleep 3; elif ! waitport "$port"; then
		echo "$label: server never listened on $port"; tail -n 5 "/tmp/$label.srv.log"; kill "$spid"; wait "$spid"
		return 1
	fi
	# shellcheck disable=SC2086
	RTUNE_PROBE_OUT=$out/$label.%p.json LD_PRELOAD=$lib timeout 120 $cli > "/tmp/$label.cli.log" 2>&1
	crc=$?
	wait "$spid"
	src_rc=$?
	if [ "$crc" != 0 ] || [ "$src_rc" != 0 ]; then
		echo "$label: client exit $crc, server exit $src_rc"
		tail -n 5 "/tmp/$label.srv.log" "/tmp/$label.cli.log"
		return 1
	fi
	return 0
}
files() { ls "$out"/"$1".*.json 2>/dev/null; }

N=200 S=100
# ibv_rc_pingpong -n N -s S: each side sends N messages of S bytes (signaled SENDs on an RC QP); with
# RTUNE_PROBE_SAMPLE=1 every one of them is timed: N post->completion latencies per side (one thread posts and polls)
RTUNE_PROBE_SAMPLE=1 run_pair rc 18515 "ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S" \
	"ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S $A" &&
	{ check --label rc_pingpong --each --min-files 2 --qpt RC --op send --wrs $N --bytes $((N * S)) --size $S \
		--lat-samples $N $(files rc) || fail "rc_pingpong counts"; }
run_pair rcN 18515 "ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S -N" "ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S -N $A" &&
	{ check --label "rc_pingpong -N (wr_* API)" --each --min-files 2 --qpt RC --op send --wrs $N \
		--bytes $((N * S)) --size $S $(files rcN) || fail "rc_pingpong -N counts"; }
# ibv_ud_pingpong -n N -s S: each side sends N UD messages of S bytes
run_pair ud 18515 "ibv_ud_pingpong -d rxe0 -g 1 -n $N -s $S" "ibv_ud_pingpong -d rxe0 -g 1 -n $N -s $S $A" &&
	{ check --label ud_pingpong --each --min-files 2 --qpt UD --op send --wrs $N --bytes $((N * S)) --size $S \
		$(files ud) || fail "ud_pingpong counts"; }

# perftest -n N -s S: the client posts N operations of S bytes, the server none
N=1000 S=64
for t in send write; do
	for api in new old; do
		flag=""; [ "$api" = old ] && flag=--use_old_post_send
		label=ib_${t}_bw_$api
		run_pair "$label" 18515 "ib_${t}_bw -d rxe0 -x 1 -n $N -s $S $flag" "ib_${t}_bw -d rxe0 -x 1 -n $N -s $S $flag $A" &&
			{ check --label "ib_${t}_bw ($api API)" --min-files 2 --qpt RC --op $t --wrs $N --bytes $((N * S)) \
				--size $S $(files "$label") || fail "$label counts"; }
	done
done

# rping -C N -S S: per ping the client SENDs its source then its sink buffer descriptor (2 x 16-byte
# struct rping_rdma_info), the server RDMA READs S bytes, SENDs a 16-byte go-ahead, RDMA WRITEs S bytes, SENDs again
N=20 S=100
run_pair rping rdma "rping -s -a $A -C $N -S $S" "rping -c -a $A -C $N -S $S" && {
	check --label "rping READ" --min-files 2 --qpt RC --op read --wrs $N --bytes $((N * S)) --size $S $(files rping) ||
		fail "rping read counts"
	check --label "rping WRITE" --min-files 2 --qpt RC --op write --wrs $N --bytes $((N * S)) --size $S \
		$(files rping) || fail "rping write counts"
	check --label "rping SEND" --min-files 2 --qpt RC --op send --wrs $((4 * N)) --bytes $((4 * N * 16)) --size 16 \
		$(files rping) || fail "rping send counts"
}

# apply mode: RTUNE_INLINE_THRESHOLD=64 makes every 64-byte SEND inline, on ibv_post_send and on the wr_* API
N=100 S=64
for api in old new; do
	flag=""; [ "$api" = new ] && flag=-N
	label=apply_$api
	RTUNE_INLINE_THRESHOLD=64 run_pair "$label" 18515 "ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S $flag" \
		"ibv_rc_pingpong -d rxe0 -g 1 -n $N -s $S $flag $A" &&
		{ check --label "apply mode ($api API)" --each --min-files 2 --qpt RC --op send --wrs $N --bytes $((N * S)) \
			--min-inline $N $(files "$label") || fail "apply mode ($api API)"; }
done
python3 - "$out" <<'PY' || fail "apply mode: inline_set/raise not recorded"
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/apply_new.*.json"):
    d = json.load(open(f))
    assert d["apply"]["enabled"] and d["apply"]["inline_threshold"] == 64, d["apply"]
    [q] = [q for q in d["qps"] if q["qp_type"] == "RC"]
    assert q["apply"]["inline_set"] == 100 and q["max_inline_data"] >= 64, q
    print("ok apply mode: inline_set", q["apply"]["inline_set"], "max_inline_data", q["max_inline_data"],
          "raised", q["inline_raised"])
PY

# an unwritable output path: the application still succeeds; the probe says so once on stderr
ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 8 > /tmp/uw.srv.log 2>&1 &
spid=$!
waitport 18515 || fail "unwritable: server never listened"
RTUNE_PROBE_OUT=/nonexistent-dir/x.json LD_PRELOAD=$lib ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 8 "$A" \
	> /tmp/uw.out 2> /tmp/uw.err || fail "unwritable output: the application failed"
wait "$spid" || fail "unwritable: server failed"
[ "$(grep -c "rtune-probe: cannot write '/nonexistent-dir/x.json'" /tmp/uw.err)" = 1 ] ||
	{ fail "unwritable output: no single stderr line"; cat /tmp/uw.err; }
grep -q '10 iters' /tmp/uw.out && echo "ok unwritable output: app ran, one line on stderr"

# a program that never touches verbs leaves no file; an exec'd application is recorded under its own pid
rm -f "$out"/*
(cd "$out" && LD_PRELOAD=$lib true) && [ -z "$(ls "$out")" ] && echo "ok no verbs, no file" ||
	fail "a program without verbs left a file: $(ls "$out")"
printf 'exec ibv_rc_pingpong "$@"\n' > /tmp/exec-wrap.sh
run_pair exec 18515 "ibv_rc_pingpong -d rxe0 -g 1 -n 30 -s 40" "sh /tmp/exec-wrap.sh -d rxe0 -g 1 -n 30 -s 40 $A"
check --label "exec'd client" --each --min-files 2 --qpt RC --op send --wrs 30 --bytes 1200 $(files exec) ||
	fail "exec'd application"

# rtune probe: runs the client under the probe and stores its histogram
ibv_rc_pingpong -d rxe0 -g 1 -n 50 -s 32 > /tmp/rp.srv.log 2>&1 &
spid=$!
waitport 18515 || fail "rtune probe: server never listened"
rm -f /tmp/rp.db /tmp/rp.json
echo stale > /tmp/rp.json # an existing --out file is replaced
"$rtune" probe --db /tmp/rp.db --name pingpong --out /tmp/rp.json -- ibv_rc_pingpong -d rxe0 -g 1 -n 50 -s 32 "$A" \
	> /tmp/rp.out 2> /tmp/rp.err || { fail "rtune probe exited $?"; cat /tmp/rp.out /tmp/rp.err; }
wait "$spid" || fail "rtune probe: server failed"
cat /tmp/rp.out /tmp/rp.err
# the summary is on stderr: the application's standard output is its own
grep -q "rtune" /tmp/rp.out && fail "rtune probe wrote into the application's standard output"
grep -q "50 iters" /tmp/rp.out || fail "rtune probe: the application's output is missing"
grep -q "pingpong send/rc: 50 messages, 1600 bytes" /tmp/rp.err || fail "rtune probe: summary line"
grep -q "stored 1 histogram of 'pingpong' in '/tmp/rp.db'" /tmp/rp.err || fail "rtune probe: not stored"
check --label "rtune probe --out" --qpt RC --op send --wrs 50 --bytes 1600 --size 32 /tmp/rp.json ||
	fail "rtune probe --out file"

# rtune probe of a UD-only application: its histogram is stored as send/ud with the largest size it sent (64, not the
# bucket's top 71); a short calibration of rxe0 then lets `rtune tune --app` weight the UD entry by it, while the RC
# entry says the app sent nothing there (issue 15 items 6 and 10)
ibv_ud_pingpong -d rxe0 -g 1 -n 50 -s 64 > /tmp/rpu.srv.log 2>&1 &
spid=$!
waitport 18515 || fail "rtune probe (UD): server never listened"
"$rtune" probe --db /tmp/rp.db --name udapp --out /tmp/rpu.json -- ibv_ud_pingpong -d rxe0 -g 1 -n 50 -s 64 "$A" \
	> /tmp/rpu.out 2>&1 || { fail "rtune probe (UD) exited $?"; cat /tmp/rpu.out; }
wait "$spid" || fail "rtune probe (UD): server failed"
cat /tmp/rpu.out
grep -q "udapp send/ud: 50 messages, 3200 bytes" /tmp/rpu.out || fail "rtune probe (UD): summary line"
grep -q "stored 1 histogram of 'udapp'" /tmp/rpu.out || fail "rtune probe (UD): not stored"
python3 - /tmp/rpu.json /tmp/rp.db <<'PY' || fail "rtune probe (UD): file or stored histogram"
import json, sqlite3, struct, sys
d = json.load(open(sys.argv[1]))
[q] = [q for q in d["qps"] if q["qp_type"] == "UD" and "send" in q["ops"]]
assert q["ops"]["send"]["hist"] == [[64, 64, 50]], q["ops"]["send"]["hist"]
assert q["wrs_per_post"] == [[1, 1, 50]], q["wrs_per_post"]
rows = sqlite3.connect(sys.argv[2]).execute(
    "SELECT qpt, messages, bucket_max, batch, max_send_wr FROM histograms WHERE app = 'udapp'").fetchall()
assert len(rows) == 1 and rows[0][0] == "ud" and rows[0][1] == 50, rows
bmax = struct.unpack("<240I", rows[0][2])
assert max(bmax) == 64, [x for x in bmax if x]
assert struct.unpack("<17Q", rows[0][3])[0] == 50 and rows[0][4] > 0, rows[0][3:]
print("ok rtune probe (UD): stored send/ud, largest size 64, 50 single-WR posts, max_send_wr", rows[0][4])
PY
if "$rtune" calibrate -d rxe0 -x 1 --quick --budget 20 --ops send --qp-type rc,ud --sizes 16,32,64,128 \
	--db /tmp/rp.db > /tmp/rpu.cal 2>&1; then
	"$rtune" tune --db /tmp/rp.db --app udapp --json --dry-run > /tmp/rpu.tune.json 2> /tmp/rpu.tune.err ||
		{ fail "tune --app udapp: $(cat /tmp/rpu.tune.err)"; }
	python3 - /tmp/rpu.tune.json <<'PY' || fail "tune --app udapp: decisions"
import json, sys
by = {(d["opcode"], d["qp_type"]): d for d in json.load(open(sys.argv[1]))["decisions"]}
ud, rc = by[("send", "ud")], by[("send", "rc")]
codes = lambda d: [r["code"] for r in d["reasons"]]
assert ud["gain_from_histogram"] is True and "app_sent_nothing" not in codes(ud), ud
assert ud["inline_threshold"] in (0, 64) or ud["inline_threshold"] < 64, ud["inline_threshold"]
assert rc["gain_from_histogram"] is False and "app_sent_nothing" in codes(rc), codes(rc)
print("ok tune --app udapp: UD entry weighted by the UD histogram (threshold %d), RC entry: app sent nothing"
      % ud["inline_threshold"])
PY
else
	fail "calibrate for tune --app: $(tail -3 /tmp/rpu.cal)"
fi
# rtune probe on rping's server, which RDMA READs the client's buffer: READs appear in the summary; the application's
# exit status is rtune probe's
N=20 S=100
"$rtune" probe --no-store --name rping-srv -- rping -s -a "$A" -C $N -S $S > /tmp/rps.out 2> /tmp/rps.err &
spid=$!
sleep 3
timeout 60 rping -c -a "$A" -C $N -S $S > /tmp/rpc.out 2>&1 || fail "rping client under rtune probe's server failed"
wait "$spid"; src=$?
cat /tmp/rps.err
[ "$src" = 0 ] || fail "rtune probe (rping server) exited $src"
grep -q "rping-srv rdma_read/rc: $N messages, $((N * S)) bytes" /tmp/rps.err || fail "rtune probe: no RDMA READ line"
"$rtune" probe --no-store -- sh -c 'exit 5' > /dev/null 2>&1
[ $? = 5 ] || fail "rtune probe did not pass the application's exit status 5 on"

# rtune probe --apply PROFILE: the probe reads the profile's inline_threshold and inlines the 32-byte SENDs
cat > /tmp/rp-profile.json <<'JSON'
{"schema": {"name": "rtune-profile", "version": "1.0"}, "rtune_version": "0.1.0", "node": {"hostname": "guest"},
 "entries": [
  {"device": "rxe0", "port": 1, "opcode": "send", "qp_type": "rc", "inline_threshold": 64, "max_inline_data": 64,
   "signal_interval": 1, "sq_depth": 128, "cq_depth": 256, "cq_moderation": null, "confidence": "high",
   "reasons": [{"code": "crossover", "text": "test profile"}]},
  {"device": "rxe0", "port": 1, "opcode": "write", "qp_type": "rc", "inline_threshold": 0, "max_inline_data": 0,
   "signal_interval": 1, "sq_depth": 128, "cq_depth": 256, "cq_moderation": null, "confidence": "high", "reasons": []}
 ]}
JSON
ibv_rc_pingpong -d rxe0 -g 1 -n 50 -s 32 > /tmp/rpa.srv.log 2>&1 &
spid=$!
waitport 18515 || fail "rtune probe --apply: server never listened"
"$rtune" probe --db /tmp/rp.db --name pingpong-apply --apply /tmp/rp-profile.json -- \
	ibv_rc_pingpong -d rxe0 -g 1 -n 50 -s 32 "$A" > /tmp/rpa.out 2>&1 || { fail "rtune probe --apply exited $?"; }
wait "$spid" || fail "rtune probe --apply: server failed"
cat /tmp/rpa.out
grep -q "pingpong-apply send/rc: 50 messages, 1600 bytes, 50 inline, 50 signaled" /tmp/rpa.out ||
	fail "rtune probe --apply: the 32-byte SENDs were not inlined"

if [ "$fails" != 0 ]; then
	echo "FAIL: $fails probe check(s) failed"
	exit 1
fi
echo "PASS: probe on real applications"
