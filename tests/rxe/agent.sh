#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier for `rtune agent` in one guest (docs/agent.md), budgets kept small (10 s per calibration, 3 sizes, send/rc):
#  1. the agent starts (config file, pin stored first), calibrates rxe0 within its budget, publishes the profile and
#     librtune loads it, with the pinned signal_interval;
#  2. ibv_rc_pingpong (client and server) run under the probe with RTUNE_PROBE_OUT in the spool -> imported, the
#     spool emptied, rxe0's entry re-tuned for that application (app = ibv_rc_pingpong);
#  3. a second device appears (rdma link add rxe1) -> calibrated and published (time measured);
#  4. rxe0's netdev MTU changes -> re-calibration for "hardware changed"; the pin survives 3 and 4;
#  5. another process holds QPs on rxe0 (an ibv_rc_pingpong server waiting) and a calibration is asked for (SIGUSR1)
#     -> "busy", no calibration; once it is gone -> calibrated;
#  6. kill -9 of the agent and its calibration -> the store passes integrity_check, the run is marked interrupted at
#     the restart, the published file is whole (librtune loads it), no temporary file left;
#  7. SIGTERM during a calibration -> the agent is gone within 2 s;
#  8. idle RSS and CPU over 60 s (figures printed, the CPU checked to be < 1 % : it sleeps).
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
lib=$B/store/librtune.so
probe=$B/probe/preload/librtune_probe.so
src=${RTUNE_SRC_DIR:-$(pwd)}
# in the build tree, so the agent's log survives a guest that times out
w=$B/rxe-agent-test
rm -rf "$w"
# the spool on the guest's tmpfs too: inotify reports what this kernel writes, and the agent is woken by it; on the
# 9p share the probe's files appeared without a wake-up (step 2 then waited for the next device event)
spool=/tmp/rtune-agent-spool
rm -rf "$spool"
mkdir -p "$spool" "$w/pub"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# on every exit: the agent's log (what a failure needs)
trap 'echo "--- agent log"; cat "$log" 2>/dev/null | tail -n 80; cp "$log" "$w/agent.log" 2>/dev/null' EXIT
check() { python3 "$src/tests/rxe/agent_check.py" "$lib" "$@"; }
# the log on the guest's tmpfs: the agent and its children append to it, which 9p does not keep atomic (lines lost)
log=/tmp/rtune-agent-test.log
db=$w/s.db
prof=$w/pub/profile.json
cat > "$w/agent.conf" <<CONF
# rtune agent test configuration
store = $db
spool = $spool
publish_profile = $prof
budget = 10s
calibrate_args = --quick --ops send --qp-type rc --sizes 8,64,256
busy_retry = 3s
max_profile_age = 7d
rescan = 10m
CONF
# wait_log PATTERN SECONDS: until the agent log has a line matching PATTERN (after line $mark)
mark=0
wait_log() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		tail -n +$((mark + 1)) "$log" | grep -q -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
set_mark() { mark=$(wc -l < "$log"); }
start_agent() {
	"$rtune" agent --config "$w/agent.conf" >> "$log" 2>&1 &
	agent=$!
}

"$rtune" pin rxe0:1 send/rc signal_interval=7 --db "$db" || fail "rtune pin"
: > "$log"
t0=$(date +%s.%N)
start_agent
echo "== 1. first start: calibrate rxe0, publish"
wait_log "rxe0/1: calibrated in" 120 || fail "rxe0 was not calibrated within 120 s"
wait_log "published" 60 || fail "nothing published"
t1=$(date +%s.%N)
grep "rxe0/1: calibrat" "$log"
cal_s=$(grep -o "rxe0/1: calibrated in [0-9.]*" "$log" | head -1 | awk '{print $4}')
echo "figure: agent start -> rxe0 published: $(echo "$t1 - $t0" | bc) s (calibration ${cal_s:-?} s, budget 10 s)"
# the engine keeps its budget for measuring; device set-up, the store and the tuning come on top (seconds under TCG)
awk -v c="${cal_s:-999}" 'BEGIN{exit !(c <= 20)}' || fail "calibration took ${cal_s:-?} s for a budget of 10 s"
check "$prof" rxe0 1 send rc signal_interval=7 || fail "librtune does not load the published profile with the pin"
RTUNE_PROFILE=$prof python3 -c "
import ctypes; L=ctypes.CDLL('$lib'); p=ctypes.c_void_p(); e=ctypes.create_string_buffer(4096)
raise SystemExit(L.rt_profile_load_env(ctypes.byref(p), e))" || fail "rt_profile_load_env refused the published profile"
grep -q "inline_threshold pinned\|signal_interval pinned" "$log" || grep -q "publish rxe0/1 send/rc" "$log" ||
	fail "the publication of rxe0 send/rc was not logged"

echo "== 2. the probe spool: ibv_rc_pingpong under the probe -> re-tuned for it"
set_mark
RTUNE_PROBE_OUT=$spool/rtune-probe.%p.json LD_PRELOAD=$probe timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -s 100 -n 500 \
	> "$w/pp-srv.log" 2>&1 &
srv=$!
for _ in $(seq 1 300); do ss -ltn 2>/dev/null | grep -q ":18515 " && break; sleep 0.1; done
RTUNE_PROBE_OUT=$spool/rtune-probe.%p.json LD_PRELOAD=$probe timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -s 100 -n 500 \
	"${RTUNE_VM_ADDR:-127.0.0.1}" > "$w/pp-cli.log" 2>&1 || fail "ibv_rc_pingpong client failed: $(tail -n 2 "$w/pp-cli.log")"
wait "$srv" || fail "ibv_rc_pingpong server failed"
wait_log "re-tuned for application 'ibv_rc_pingpong'" 60 || fail "no re-tune for ibv_rc_pingpong"
wait_log "published" 30 || fail "not published after the re-tune"
grep "spool:" "$log" | tail -n 3
ls "$spool"/rtune-probe.*.json > /dev/null 2>&1 && fail "the spool still holds imported files: $(ls "$spool")"
check "$prof" rxe0 1 send rc app=ibv_rc_pingpong signal_interval=7 || fail "rxe0 send/rc not re-tuned for the app"

echo "== 3. a second device: rdma link add rxe1"
set_mark
ip link add v2 type veth peer name v3 && ip addr add 192.0.2.5/24 dev v2 && ip link set v2 up && ip link set v3 up
t2=$(date +%s.%N)
rdma link add rxe1 type rxe netdev v2 || fail "rdma link add rxe1"
wait_log "rxe1/1: calibrated in" 120 || fail "rxe1 was not calibrated"
wait_log "published" 60 || fail "rxe1 not published"
t3=$(date +%s.%N)
echo "figure: new device rxe1 -> published profile: $(echo "$t3 - $t2" | bc) s"
grep "rxe1/1: calibrating" "$log" | tail -n 1
check "$prof" rxe1 1 send rc || fail "no rxe1 entry that librtune selects"
check "$prof" rxe0 1 send rc signal_interval=7 || fail "the pin did not survive rxe1's calibration"

echo "== 4. a hardware fact changes: rxe0's netdev MTU"
set_mark
mtu_of() { ibv_devinfo -d rxe0 | awk '/active_mtu/ {print $2; exit}'; }
mtu_before=$(mtu_of)
netdev=$(rdma link show rxe0/1 | grep -o 'netdev [^ ]*' | awk '{print $2}')
ip link set "$netdev" mtu 4500 || fail "cannot set the MTU of $netdev"
echo "rxe0 on $netdev: active_mtu $mtu_before -> $(mtu_of)"
wait_log "rxe0/1: calibrating (hardware changed" 60 || fail "no re-calibration after the MTU change"
wait_log "rxe0/1: calibrated in" 120 || fail "the re-calibration did not finish"
wait_log "published" 60 || fail "not published after the MTU change"
grep "hardware changed" "$log" | tail -n 1
check "$prof" rxe0 1 send rc signal_interval=7 || fail "the pin did not survive the re-calibration"

echo "== 5. busy: another process holds a QP on rxe0"
set_mark
timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -p 18600 > "$w/busy.log" 2>&1 &
holder=$!
for _ in $(seq 1 300); do ss -ltn 2>/dev/null | grep -q ":18600 " && break; sleep 0.1; done
rdma resource show qp link rxe0/1 2>/dev/null | grep -v "pid 0 " | head -n 3
kill -USR1 "$agent"
wait_log "rxe0/1: due (calibration asked for) but not now: busy" 30 || fail "a busy rxe0 was not deferred as busy"
sleep 4 # one busy_retry: still busy, still no calibration
tail -n +$((mark + 1)) "$log" | grep -q "rxe0/1: calibrating" && fail "rxe0 was calibrated while busy"
kill "$holder"
wait "$holder" 2>/dev/null
wait_log "rxe0/1: calibrating (calibration asked for" 30 || fail "rxe0 was not calibrated once idle"
wait_log "rxe0/1: calibrated in" 120 || fail "the deferred calibration did not finish"
tail -n +$((mark + 1)) "$log" | grep "rxe0/1:" | head -n 4

echo "== 6. kill -9 during a calibration, restart"
set_mark
wait_log "published" 60
kill -USR1 "$agent"
wait_log "rxe0/1: calibrating" 30 || fail "no calibration after SIGUSR1"
sleep 2
child=$(pgrep -P "$agent" | head -n 1)
ps -o pid,args -p "${child:-1}" | tail -n 1
echo "killing agent $agent and its calibration ${child:-?} with SIGKILL"
kill -9 "$agent" ${child:+"$child"}
wait "$agent" 2>/dev/null
sleep 0.5
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "store integrity_check failed"
ls -a "$w/pub" | grep -q '^\.profile\.json\.' && echo "note: a temporary file was left: $(ls -a "$w/pub")"
check "$prof" rxe0 1 send rc signal_interval=7 || fail "the published profile is not whole after kill -9"
set_mark
start_agent
wait_log "was interrupted (its process is gone): marked" 30 || fail "the interrupted run was not marked at restart"
last=$(sqlite3 "$db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
echo "newest run after restart: $last"
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'running'")" = 0 ] || fail "a run is still 'running'"
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'interrupted'")" -ge 1 ] || fail "no interrupted run"
ls -a "$w/pub" | grep -q '^\.profile\.json\.' && fail "a temporary file is left after the restart: $(ls -a "$w/pub")"
wait_log "published" 60 || fail "not published after the restart"

echo "== 7. SIGTERM during a calibration"
set_mark
kill -USR1 "$agent"
wait_log "calibrating" 30 || fail "no calibration after SIGUSR1"
sleep 1
ts=$(date +%s%N)
kill -TERM "$agent"
for _ in $(seq 1 50); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
wait "$agent" 2>/dev/null
rc=$?
te=$(date +%s%N)
stop_ms=$(((te - ts) / 1000000))
echo "figure: SIGTERM during a calibration -> agent gone in $stop_ms ms (exit $rc)"
[ "$stop_ms" -le 2000 ] || fail "SIGTERM took $stop_ms ms"
[ "$rc" = 0 ] || fail "exit status after SIGTERM: $rc"
pgrep -f "rtune calibrate" > /dev/null && fail "a calibration survived the agent"
check "$prof" rxe0 1 send rc > /dev/null || fail "the profile is not whole after SIGTERM"

echo "== 8. idle: RSS and CPU over 60 s"
set_mark
start_agent
wait_log "published" 60 || fail "not published (idle start)"
sleep 2
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$agent/stat")
sleep 60
read -r u2 s2 < <(awk '{print $14, $15}' "/proc/$agent/stat")
hz=$(getconf CLK_TCK)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent/status")
ticks=$((u2 + s2 - u1 - s1))
echo "figure: idle agent over 60 s: CPU $ticks ticks of 1/$hz s ($(echo "scale=3; $ticks * 100 / $hz / 60" | bc) %), VmRSS $rss kB"
[ "$ticks" -le $((hz * 60 / 100)) ] || fail "the idle agent used $ticks ticks in 60 s (>= 1 %)"
kill -TERM "$agent"
wait "$agent"
echo "--- publications recorded in the store"
sqlite3 "$db" "SELECT device, port, opcode, qp_type, app, inline_threshold, signal_interval, change, reason FROM agent_publications" | tail -n 8
[ "$fails" = 0 ] && echo "agent: all checks passed" || echo "agent: $fails check(s) failed"
exit $((fails > 0))
