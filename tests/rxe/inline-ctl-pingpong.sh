#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, the adaptive inline threshold in an unmodified application that sends ONE size: ibv_rc_pingpong
# (ibverbs-utils; it queries its QP with ibv_query_qp and sets IBV_SEND_INLINE itself for a size within the reported
# max_inline_data) server and client in the guest on rxe0, over the guest's address with the RoCE v2 GID of it. The
# client runs as `LD_PRELOAD=libemunic.so RTUNE_APPLY_ADAPTIVE=1 rtune probe --apply PROFILE -- ibv_rc_pingpong ...`
# on a planted crossover (the shim's model X128: inline C = 100 us per 64 B, DMA 2.5 C: inline wins up to 128 B):
#   a. -s 64 (below the crossover), the profile's threshold 16 B: the controller must come up over the empty bands
#      and end inlining 64 B;
#   b. -s 256 (above it), the profile's threshold 512 B (= the max_inline_data the probe raises the QP to): it must end
#      not inlining 256 B;
# each within BUDGET messages and to the end, checked from what the device got (the shim's EMUNIC_TRACE_BLOCK trace),
# the probe file's controller and the store (`rtune show --json`, inline_ctl); both pingpong ends exit 0. The probe
# hides its raise of max_inline_data from the application (docs/probe.md), so ibv_rc_pingpong inlines nothing itself.
# Env: RTUNE_CTL_BUDGET (messages, default 1500), RTUNE_CTL_ITERS (exchanges per run, default 3000),
# RTUNE_CTL_OUT (where the runs are kept; default $RTUNE_BUILD_DIR/rxe-inline-ctl-pingpong).
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
so=$B/tests/rxe/libemunic.so
here=$(cd "$(dirname "$0")" && pwd)
dev=${RTUNE_VM_DEV:-rxe0}
addr=${RTUNE_VM_ADDR:-192.0.2.1}
w=${RTUNE_CTL_OUT:-$B/rxe-inline-ctl-pingpong}
budget=${RTUNE_CTL_BUDGET:-1500}
iters=${RTUNE_CTL_ITERS:-3000}
block=250
granted=512
chunk=100000
rm -rf "$w"
mkdir -p "$w"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ -f "$so" ] || { echo "FAIL: no $so"; exit 1; }
pp=$(command -v ibv_rc_pingpong) || { echo "FAIL: no ibv_rc_pingpong (ibverbs-utils)"; exit 1; }

# the RoCE v2 GID of the guest's IPv4 address (::ffff:a.b.c.d)
gid=
hex=$(printf '%02x%02x:%02x%02x' $(echo "$addr" | tr . ' '))
for f in /sys/class/infiniband/$dev/ports/1/gid_attrs/types/*; do
	i=${f##*/}
	[ "$(cat "$f" 2>/dev/null)" = "RoCE v2" ] || continue
	grep -qi "$hex\$" "/sys/class/infiniband/$dev/ports/1/gids/$i" 2>/dev/null && { gid=$i; break; }
done
[ -n "$gid" ] || { echo "FAIL: no RoCE v2 GID of $addr on $dev"; exit 1; }
echo "$dev: RoCE v2 GID index $gid for $addr"

profile() { # profile FILE THRESHOLD: one rxe0 RC SEND entry, max_inline_data $granted
	python3 - "$1" "$2" "$granted" <<'PY'
import json, sys, uuid
path, thr, mx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = {"device": "rxe0", "guid": None, "port": 1, "opcode": "send", "qp_type": "rc", "inline_threshold": thr,
     "max_inline_data": mx, "signal_interval": 16, "sq_depth": 128, "cq_depth": 128, "cq_moderation": None,
     "numa_node": -1, "cpus": "0", "confidence": "medium", "reasons": [{"code": "hand_written", "text": "rxe tier"}],
     "measured_at": "2026-12-02T00:00:00Z", "run_id": str(uuid.uuid4()), "app": None}
json.dump({"schema": {"name": "rtune-profile", "version": "1.2"}, "rtune_version": "0.1.0",
           "node": {"hostname": "rxe-guest", "machine_id": "", "cpu_count": 2, "numa_nodes": 1}, "entries": [e]},
          open(path, "w"), indent=2)
PY
}

# this node's profile in the store (an entry like the runs' own), so that `rtune show` has entries beside the controllers
profile "$w/node-profile.json" 16
python3 - "$w/node-profile.json" <<'PY'
import json, socket, sys
d = json.load(open(sys.argv[1]))
try:
    mid = open("/etc/machine-id").read().strip()
except OSError:
    mid = ""
d["node"]["hostname"], d["node"]["machine_id"] = socket.gethostname(), mid
json.dump(d, open(sys.argv[1], "w"))
PY
"$rtune" import --db "$w/store.db" "$w/node-profile.json" > /dev/null || bad "rtune import of this node's profile"

# run NAME SIZE START PORT: server plain, client under rtune probe --apply (adaptive) and the shim
run() {
	local name=$1 size=$2 start=$3 port=$4 t0 srv rc src
	profile "$w/profile-$name.json" "$start"
	t0=$(date +%s)
	timeout 300 "$pp" -d "$dev" -g "$gid" -s "$size" -n "$iters" -p "$port" > "$w/$name-srv.out" 2>&1 &
	srv=$!
	for _ in $(seq 1 100); do ss -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.1; done
	env LD_PRELOAD="$so" RTUNE_APPLY_ADAPTIVE=1 EMUNIC_TRACE_BLOCK=$block EMUNIC_INLINE_CHUNK_NS=$chunk \
		EMUNIC_DMA_NS=$(( chunk * 5 / 2 )) timeout 300 \
		"$rtune" probe --db "$w/store.db" --name "pp-$name" --apply "$w/profile-$name.json" --out "$w/$name.json" \
		-- env EMUNIC_REPORT="$w/$name.rep" "$pp" -d "$dev" -g "$gid" -s "$size" -n "$iters" -p "$port" "$addr" \
		> "$w/$name.out" 2> "$w/$name.err"
	rc=$?
	wait "$srv"
	src=$?
	echo "== $name: client exit $rc, server exit $src, $(( $(date +%s) - t0 )) s (-s $size, profile threshold $start B)"
	cat "$w/$name.out" "$w/$name.err" "$w/$name-srv.out"
	[ $rc -eq 0 ] || bad "$name: rtune probe -- ibv_rc_pingpong (client) exited $rc"
	[ $src -eq 0 ] || bad "$name: ibv_rc_pingpong (server) exited $src"
}
run a 64 16 18601
run b 256 "$granted" 18602
"$rtune" show --db "$w/store.db" --json > "$w/show.json" 2>&1
python3 "$here/inline_ctl_pingpong_check.py" "$w" "$budget" "$iters" "$granted" || fail=1
[ $fail = 0 ] && echo "rxe_inline_ctl_pingpong: ok" || echo "rxe_inline_ctl_pingpong: FAILED"
exit $fail
