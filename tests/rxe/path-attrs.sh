#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier for issue 16 items 9, 10, 11, 13, 14, 16 in one guest:
#  1. a loopback calibration in traffic class 96 (--tclass) completes on rxe0 (RoCE v2: the GRH carries it) with the
#     responder polling only what each mode waits for, and records the class, the placement and the governor;
#  2. `rtune serve --max-inline 64` (a server NIC taking less inline than the client's) + `calibrate --peer --tclass
#     96` with sizes up to 256: the server creates the client's QP with 64 instead of rejecting it, the client
#     measures only sizes up to 64, and the run records both sides' maxima, the negotiated 64 and the GID index
#     rdma_cm used (the QP's address vector);
#  3. a usage error: --sl with --peer (exit 2, one line);
#  4. the rate sweep's load bands on rxe0: large messages (4096 B non-inline), post lists of 8 and concurrency (4
#     QPs driven by 2 threads, one send CQ per thread) measured, kept apart from the small band, an N per band stored.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
dev=${RTUNE_VM_DEV:-rxe0}
addr=${RTUNE_VM_ADDR:?}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

echo "== 1. loopback in traffic class 96"
$rtune calibrate -d "$dev" --quick --budget 10 --tclass 96 --sizes 1,64 --out /tmp/tc.json --no-store \
  > /tmp/tc.txt 2> /tmp/tc.err
rc=$?
cat /tmp/tc.err; head -4 /tmp/tc.txt
[ $rc -eq 0 ] || bad "loopback --tclass 96 exited $rc"
python3 - <<'PY' || bad "loopback --tclass run record"
import json, sys
r = json.load(open("/tmp/tc.json"))
p, e = r["params"], r["env"]
print("status %s tclass %s gid %s cpu %s responder %s smt %s governor '%s' warning '%s'" % (
    r["status"], p.get("tclass"), r["gid_index"], e["cpu"], e.get("resp_cpu"), e.get("smt_siblings"),
    e.get("governor"), e.get("placement_warning")))
ok = r["status"] == "complete" and p.get("tclass") == 96 and r["gid_index"] >= 0 and "resp_cpu" in e
ok = ok and any(l["op"] == "write" and l["kind"] == "pingpong" for l in r["latency"])
sys.exit(0 if ok else 1)
PY

echo "== 2. serve --max-inline 64, client asks for 256"
$rtune serve --bind "$addr" --port 18620 --max-inline 64 --once > /tmp/srv.log 2>&1 &
srv=$!
sleep 2
$rtune calibrate --peer "$addr:18620" --quick --budget 10 --tclass 96 --sizes 1,64,128,256 --ops send \
  --out /tmp/neg.json --no-store > /tmp/neg.txt 2> /tmp/neg.err
rc=$?
cat /tmp/neg.err; head -5 /tmp/neg.txt
[ $rc -eq 0 ] || bad "calibrate --peer against a 64-byte server exited $rc"
wait $srv
cat /tmp/srv.log
grep -q "asks for 256 bytes inline, this device takes 64: using 64" /tmp/srv.log || bad "serve did not negotiate"
python3 - <<'PY' || bad "negotiated run record"
import json, sys
r = json.load(open("/tmp/neg.json"))
e, p = r["env"], r["params"]
sizes = sorted({l["msg_bytes"] for l in r["latency"]})
print("max_inline_used %s client %s server %s gid %s sizes %s tclass %s notes: %s" % (
    r["max_inline_used"], e.get("client_max_inline"), e.get("server_max_inline"), r["gid_index"], sizes,
    p.get("tclass"), p.get("notes")))
ok = r["status"] == "complete" and r["max_inline_used"] == 64 and e.get("server_max_inline") == 64
ok = ok and e.get("client_max_inline", 0) >= 256 and max(sizes) <= 64 and r["gid_index"] >= 0
ok = ok and p.get("tclass") == 96 and "the server takes 64 bytes inline" in p.get("notes", "")
sys.exit(0 if ok else 1)
PY

echo "== 3. --sl with --peer"
$rtune calibrate --peer "$addr:18620" --sl 1 --no-store > /dev/null 2> /tmp/sl.err
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < /tmp/sl.err)" -eq 1 ] || bad "--sl with --peer: exit $rc: $(cat /tmp/sl.err)"

echo "== 4. load bands: 4 KB messages, post lists of 8 and 4 qps x 2 threads on rxe0 (N up to 16: TCG is slow)"
$rtune calibrate -d "$dev" --quick --budget 75 --sizes 1,64 --ops write --qp-type rc --sq-depth 32 \
  --large-sizes 4096 --post-list 8 --concurrency 4x2 --db /tmp/bands.db \
  --out /tmp/bands.json > /tmp/bands.txt 2> /tmp/bands.err
rc=$?
cat /tmp/bands.err; grep -E "^signaling|^warning|^responder" /tmp/bands.txt
[ $rc -eq 0 ] || bad "banded loopback run exited $rc"
python3 - <<'PY' || bad "load bands on rxe0"
import json, sqlite3, sys
r = json.load(open("/tmp/bands.json"))
b = r.get("rate_bands", [])
for p in sorted(b, key=lambda p: (p["band"], p["msg_bytes"], p["signal_interval"])):
    print("%-11s %6d B list %d qps %d x %d N=%-3d %.6f Mops (%.6f..%.6f) reps %d cpu %.0f ns/msg" % (
          p["band"], p["msg_bytes"], p["post_list"], p.get("qps", 1), p.get("threads", 1), p["signal_interval"],
          p["mops"], p["mops_lo"], p["mops_hi"], p["reps"], p["cpu_ns_per_msg"]))
db = sqlite3.connect("/tmp/bands.db")
sb = db.execute("SELECT band, op, qps, threads, signal_interval, verdict, confidence FROM signal_bands").fetchall()
print("signal_bands:", sb)
c = r["params"].get("concurrency", {})
print("concurrency:", c)
ok = {p["msg_bytes"] for p in b if p["band"] == "large" and p["mops"] > 0} == {4096}
ok = ok and len(b) == 15  # 5 N x (4 KB, post list 8, concurrency): every band point measured
ok = ok and any(p["band"] == "post_list" and p["post_list"] == 8 and p["mops"] > 0 for p in b)
cc = [p for p in b if p["band"] == "concurrency"]
ok = ok and c.get("qps") == 4 and c.get("threads") in (1, 2) and c.get("send_cq") == "per_thread"
ok = ok and len(cc) == 5 and all(p["qps"] == 4 and p["threads"] == c["threads"] and p["mops"] > 0 for p in cc)
ok = ok and {s[0] for s in sb} == {"large", "post_list", "concurrency"}
ok = ok and [s[2:4] for s in sb if s[0] == "concurrency"] == [(4, c["threads"])]
ok = ok and db.execute("SELECT count(*) FROM band_rate_points WHERE band = 'concurrency' AND qps = 4").fetchone()[0] == 5
ok = ok and all(p["msg_bytes"] < 4096 for p in r["rate"])
sys.exit(0 if ok else 1)
PY

[ $fail -eq 0 ] && echo "PASS: traffic class, inline negotiation, gid index and placement recorded"
exit $fail
