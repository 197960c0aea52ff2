#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune probe` end to end on the fake device (fakedev.so preloaded) with probe_stress_app's "ops" mode (SEND, RDMA
# WRITE, RDMA READ and both atomics on one RC pair): the application's standard output is its own (every rtune line on
# stderr); the summary names every opcode class it used, RDMA READ and atomics included, with exact counts; --out
# replaces an existing regular file atomically and '-' writes the JSON to standard output after the application's;
# rtune probe exits with the application's status (128+N for a signal, 127/126 for a command not found / not
# executable), and 1 only when the application succeeded and rtune failed after it; with --apply and
# RTUNE_APPLY_ADAPTIVE=1 the QPs' inline controllers in the probe's file are what the store keeps.
set -uo pipefail
rtune=$1 fakedev=$2 app=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# probe ARGS...: rtune probe on the fake device; sets rc, stdout in $tmp/out, stderr in $tmp/err
probe() {
  LD_PRELOAD=$fakedev timeout 60 "$rtune" probe "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
db=$tmp/rtune.db

echo old >"$tmp/keep.json"
probe --db "$db" --name opsapp --out "$tmp/keep.json" -- "$app" ops 4
[ $rc = 0 ] || { bad "ops 4 exited $rc"; cat "$tmp/err"; }
[ "$(cat "$tmp/out")" = "ops 4" ] && ok "the application's stdout holds only its own output" ||
  bad "stdout is not the application's alone: $(head -c 300 "$tmp/out")"
grep -v '^rtune' "$tmp/err" | grep -q . && bad "stderr has lines that are not rtune's: $(grep -v '^rtune' "$tmp/err")"
for want in "opsapp send/rc: 4 messages, 256 bytes, 0 inline, 4 signaled" \
  "opsapp rdma_write/rc: 4 messages, 512 bytes, 0 inline, 4 signaled" \
  "opsapp rdma_read/rc: 4 messages, 1024 bytes, 0 inline, 4 signaled" \
  "opsapp atomic/rc: 8 messages, 64 bytes, 0 inline, 8 signaled" \
  "opsapp rc: 2 QPs, 0 SQ-full ENOMEM, 0 error completions" \
  "stored 2 histograms of 'opsapp'"; do
  grep -qF "rtune probe: $want" "$tmp/err" && ok "summary: $want" || { bad "summary lacks '$want'"; cat "$tmp/err"; }
done
python3 - "$tmp/keep.json" <<'PY' && ok "--out replaced the existing file with the probe's JSON" || bad "--out file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"]["name"] == "rtune-probe", d.get("schema")
[q] = [q for q in d["qps"] if q["ops"]]
assert q["ops"]["rdma_read"]["wrs"] == 4 and q["ops"]["atomic"]["wrs"] == 8, q["ops"]
PY
[ -z "$(find "$tmp" -maxdepth 1 -name '.*.tmp')" ] && ok "no temporary file left" || bad "temporary file left"

probe --no-store --out - -- "$app" ops 1
python3 - "$tmp/out" <<'PY' && ok "--out - : the application's line, then the JSON on stdout" || bad "--out -"
import json, sys
first, rest = open(sys.argv[1]).read().split("\n", 1)
assert first == "ops 1", first
assert json.loads(rest)["schema"]["name"] == "rtune-probe"
PY

PROBE_APP_EXIT=7 probe --db "$db" --name exit7 -- "$app" ops 1
[ $rc = 7 ] && ok "the application's exit status 7 is rtune probe's" || bad "exit 7 gave $rc"
grep -q "stored 2 histograms of 'exit7'" "$tmp/err" && ok "what a failing application sent is still stored" ||
  bad "exit 7: not stored"
# an inherited SIGCHLD SIG_IGN (some launchers set it) must not lose the status: rtune resets it while it waits
PROBE_APP_EXIT=7 LD_PRELOAD=$fakedev timeout 60 python3 -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$rtune" probe --no-store -- "$app" ops 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 7 ] && ok "SIGCHLD ignored by the caller: still the application's 7" ||
  { bad "SIGCHLD ignored gave $rc"; cat "$tmp/err"; }
PROBE_APP_SIGNAL=15 probe --no-store -- "$app" ops 1
[ $rc = 143 ] && ok "killed by SIGTERM: 143" || bad "SIGTERM gave $rc"
PROBE_APP_SIGNAL=9 probe --no-store -- "$app" ops 1
[ $rc = 137 ] && ok "killed by SIGKILL: 137" || bad "SIGKILL gave $rc"
probe --no-store -- "$tmp/no-such-program"
[ $rc = 127 ] && grep -q "^rtune: cannot run '$tmp/no-such-program': No such file or directory$" "$tmp/err" &&
  [ "$(wc -l <"$tmp/err")" = 1 ] && ok "command not found: 127, one line" ||
  { bad "not found gave $rc"; cat "$tmp/err"; }
printf '#!/bin/sh\nexit 0\n' >"$tmp/noexec"
chmod 0644 "$tmp/noexec"
probe --no-store -- "$tmp/noexec"
[ $rc = 126 ] && ok "not executable: 126" || { bad "not executable gave $rc"; cat "$tmp/err"; }
probe --no-store -- sh -c 'exit 127'
[ $rc = 127 ] && grep -q "exited with status 127" "$tmp/err" && ok "the application's own 127 passed on" ||
  bad "sh exit 127 gave $rc"
probe --db "$tmp/no-dir/x.db" -- "$app" ops 1
[ $rc = 1 ] && ok "the application succeeded, the store failed: 1" || bad "unwritable store gave $rc"
probe --no-store -- true
[ $rc = 1 ] && ok "the application succeeded and did no RDMA work: 1" || bad "true gave $rc"
probe --no-store --out "$tmp/no-dir/x.json" -- "$app" ops 1
[ $rc = 1 ] && grep -q "^rtune: cannot write '$tmp/no-dir/x.json'" "$tmp/err" && ok "unwritable --out: 1, named" ||
  { bad "unwritable --out gave $rc"; cat "$tmp/err"; }

# apply mode with the adaptive threshold (RTUNE_APPLY_ADAPTIVE=1) through the real preload: every QP's controller in
# the --out file is in the store, figure for figure and move for move (fakedev has no cost model, so its controllers
# may not move; the fixture test test_probe_ctl_store checks moves)
python3 - "$tmp/apply.json" <<'PY'
import json, sys
e = {"device": "fake0", "guid": None, "port": 1, "opcode": "send", "qp_type": "rc", "inline_threshold": 64,
     "max_inline_data": 200, "signal_interval": 16, "sq_depth": 128, "cq_depth": 128, "cq_moderation": None,
     "numa_node": -1, "cpus": "0", "confidence": "medium", "reasons": [{"code": "hand_written", "text": "test"}],
     "measured_at": "2026-12-01T12:00:00Z", "run_id": "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab", "app": None}
json.dump({"schema": {"name": "rtune-profile", "version": "1.2"}, "rtune_version": "0.1.0",
           "node": {"hostname": "x", "machine_id": "", "cpu_count": 2, "numa_nodes": 1}, "entries": [e]},
          open(sys.argv[1], "w"))
PY
RTUNE_APPLY_ADAPTIVE=1 probe --db "$db" --name adaptive --apply "$tmp/apply.json" --out "$tmp/adaptive.json" -- \
  "$app" threads 1
[ $rc = 0 ] && grep -qF "rtune probe: stored the adaptive inline controller of 2 QPs of 'adaptive'" "$tmp/err" &&
  ok "apply adaptive: rtune probe stored both QPs' controllers" || { bad "apply adaptive: rc $rc"; cat "$tmp/err"; }
python3 - "$tmp/adaptive.json" "$db" <<'PY' && ok "apply adaptive: the store holds the file's controllers exactly" ||
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
c = sqlite3.connect(sys.argv[2])
want = sorted((q["qp_num"], q["inline_ctl"]) for q in d["qps"] if "inline_ctl" in q)
assert len(want) == 2 and all(w["start"] == 64 and w["max"] == 200 for _, w in want), want
got = c.execute("SELECT id, qp_num, start_bytes, threshold_bytes, min_bytes, max_bytes, parked, samples, explored,"
                " dropped, rounds, moves_up, moves_down, reverts FROM inline_ctl WHERE app = 'adaptive'"
                " ORDER BY qp_num").fetchall()
assert len(got) == len(want), got
for (num, w), g in zip(want, got):
    assert g[1:] == (num, w["start"], w["threshold"], w["min"], w["max"], int(w["parked"]), w["samples"],
                     w["explored"], w["dropped"], w["rounds"], w["moves_up"], w["moves_down"], w["reverts"]), (w, g)
    moves = c.execute("SELECT at_sample, from_bytes, to_bytes, inline_ns, noinline_ns, revert FROM inline_ctl_moves"
                      " WHERE ctl_id = ? ORDER BY seq", (g[0],)).fetchall()
    assert moves == [(m["at_sample"], m["from"], m["to"], m["inline_ns"], m["noinline_ns"], int(m["revert"]))
                     for m in w["moves"]], (moves, w["moves"])
assert sum(w["samples"] for _, w in want) > 0, want
PY
  bad "apply adaptive: store and file differ"

[ "$fails" = 0 ] || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS: rtune probe"
