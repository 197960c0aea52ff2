#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every JSON document rtune prints carries {"schema": {"name": "rtune-<thing>", "version": "MAJOR.MINOR"}} first
# (docs/json-formats.md), and every "run_id" in it, at any depth, is a run's uuid (the integer is "id" in a run object,
# "run_number" in tune's document). Without FAKEDEV: show, history, tune, export, report on a store_fill store. With
# FAKEDEV (fakedev.so, a software device; label `preload`): devices --json, calibrate --json, calibrate --out -
# (standard output is the JSON alone, json.loads succeeds, the summary on stderr), calibrate --out FIFO, probe --out
# (FIFO, an existing file).
# usage: test_json_formats.sh RTUNE STORE_FILL [FAKEDEV]
set -uo pipefail
rtune=$(realpath "$1") fill=$(realpath "$2") fakedev=${3:+$(realpath "$3")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# doc NAME FILE SCHEMA_NAME [PYTHON]: FILE parses as one JSON object whose first member is the schema SCHEMA_NAME with
# a MAJOR.MINOR version, every run_id in it is a uuid; PYTHON (with d the document) more assertions
doc() {
  if python3 - "$2" "$3" "${4:-}" 2>"$tmp/py.err" <<'PY'; then ok "$1"; else bad "$1: $(tail -3 "$tmp/py.err")"; fi
import json, re, sys
path, name, more = sys.argv[1:4]
d = json.loads(open(path).read())  # the whole output: one document and nothing else
assert isinstance(d, dict), type(d)
assert list(d)[0] == "schema", "first member is %r" % list(d)[0]
assert d["schema"]["name"] == name, d["schema"]
assert re.fullmatch(r"[0-9]+\.[0-9]+", d["schema"]["version"]), d["schema"]
uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
seen = []
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k in ("run_id", "from_run_id"):
                assert isinstance(x, str) and uuid.fullmatch(x), "%s = %r is not a uuid" % (k, x)
                seen.append(x)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(d)
exec(more)
PY
}

if [ -z "$fakedev" ]; then
  db=$tmp/rtune.db
  "$fill" "$db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
  "$rtune" show --db "$db" --json >"$tmp/show.json"
  doc "show --json" "$tmp/show.json" rtune-show "assert seen and d['entries'] and d['entries'][0]['run']['id'] >= 1"
  "$rtune" history --db "$db" --json >"$tmp/history.json"
  doc "history --json" "$tmp/history.json" rtune-history \
    "assert len(d['runs']) >= 2 and all(isinstance(r['id'], int) for r in d['runs'])"
  "$rtune" tune 2 --json --dry-run --db "$db" >"$tmp/tune.json"
  doc "tune --json: run_id the uuid, run_number the integer" "$tmp/tune.json" rtune-tune \
    "assert d['run_number'] == 2 and d['run_id'] in seen and 'run' not in d"
  python3 -c "
import json, sys
t = json.load(open(sys.argv[1])); h = json.load(open(sys.argv[2]))
[r] = [r for r in h['runs'] if r['id'] == 2]
assert r['run_id'] == t['run_id'], (r['run_id'], t['run_id'])" "$tmp/tune.json" "$tmp/history.json" &&
    ok "tune's run_id is history's run_id of run 2" || bad "tune's run_id differs from history's"
  "$rtune" export --db "$db" >"$tmp/export.json"
  doc "export (json)" "$tmp/export.json" rtune-profile "assert d['entries']"
  "$rtune" report "$db" --json >"$tmp/report.json"
  doc "report --json" "$tmp/report.json" rtune-report
else
  export LD_PRELOAD=$fakedev
  db=$tmp/cal.db
  "$rtune" devices --json >"$tmp/devices.json"
  doc "devices --json" "$tmp/devices.json" rtune-devices "assert d['devices'][0]['name'] == 'fake0'"
  # a quick calibration on fake0; a loaded machine can make one fail (fake0's completions arrive late, the engine's
  # bounded waits expire): the formats are what is checked here, so up to 3 attempts, each told
  calib() { # calib OUT ERR ARGS...: sets rc
    local out=$1 err=$2 a
    shift 2
    for a in 1 2 3; do
      timeout 120 "$rtune" calibrate -d fake0 --quick --budget 2 --db "$db" "$@" >"$out" 2>"$err"
      rc=$?
      [ $rc -eq 0 ] && return
      echo "note: calibrate $* attempt $a exited $rc: $(head -c 300 "$err" | tr '\n' '|')"
    done
  }
  calib "$tmp/cal.json" "$tmp/cal.err" --json
  [ $rc -eq 0 ] && ok "calibrate --json: exit 0" || bad "calibrate --json: exit $rc: $(head -3 "$tmp/cal.err")"
  doc "calibrate --json" "$tmp/cal.json" rtune-run "assert d['status'] == 'complete' and isinstance(d['id'], int)"
  calib "$tmp/out.json" "$tmp/out.err" --out -
  [ $rc -eq 0 ] && ok "calibrate --out -: exit 0" || bad "calibrate --out -: exit $rc: $(head -3 "$tmp/out.err")"
  doc "calibrate --out -: standard output is the JSON alone" "$tmp/out.json" rtune-run "assert seen"
  # (the point tables need points: a loaded machine may end a 2 s budget with none; the "stored as run" line is always)
  grep -q "^stored as run " "$tmp/out.err" &&
    ok "calibrate --out -: the summary went to stderr" ||
    bad "calibrate --out -: no summary on stderr: $(head -c 600 "$tmp/out.err")"
  rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
  for attempt in 1 2 3; do
    timeout 120 cat "$tmp/fifo" >"$tmp/fifo.json" &
    reader=$!
    timeout 120 "$rtune" calibrate -d fake0 --quick --budget 2 --db "$db" --out "$tmp/fifo" >"$tmp/sum.txt" 2>&1
    rc=$?
    # a run that failed before writing never opened the FIFO: its reader still waits in open()
    [ $rc -eq 0 ] || { sleep 1; kill $reader 2>/dev/null; }
    wait $reader
    [ $rc -eq 0 ] && break
    echo "note: calibrate --out FIFO attempt $attempt exited $rc: $(head -c 300 "$tmp/sum.txt" | tr '\n' '|')"
  done
  [ $rc -eq 0 ] && [ -p "$tmp/fifo" ] && ok "calibrate --out FIFO: exit 0, still a FIFO" ||
    bad "calibrate --out FIFO: exit $rc, $(ls -l "$tmp/fifo")"
  doc "calibrate --out FIFO: the reader got the run" "$tmp/fifo.json" rtune-run
  grep -q "^stored as run " "$tmp/sum.txt" && ok "calibrate --out FILE: the summary on stdout" ||
    bad "calibrate --out FILE: no summary: $(head -c 600 "$tmp/sum.txt")"
  "$rtune" history --db "$db" --json >"$tmp/h.json"
  python3 -c "
import json, sys
h = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
assert c['run_id'] in [r['run_id'] for r in h['runs']]
assert [r['id'] for r in h['runs'] if r['run_id'] == c['run_id']] == [c['id']]" "$tmp/h.json" "$tmp/cal.json" &&
    ok "calibrate's run_id and id are history's" || bad "calibrate's run_id/id differ from history's"
  # rtune probe --out: the probe's file (of `rtune devices` run under the probe on fake0), to a FIFO and over a file
  rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
  timeout 120 cat "$tmp/fifo" >"$tmp/probe.json" &
  reader=$!
  timeout 120 "$rtune" probe --no-store --out "$tmp/fifo" -- "$rtune" devices >"$tmp/probe.out" 2>&1; rc=$?
  wait $reader
  [ $rc -eq 0 ] && [ -p "$tmp/fifo" ] && ok "probe --out FIFO: exit 0, still a FIFO" ||
    bad "probe --out FIFO: exit $rc: $(head -c 300 "$tmp/probe.out")"
  doc "probe --out FIFO: the reader got the probe's document" "$tmp/probe.json" rtune-probe \
    "assert d['qps'] is not None"
  echo old >"$tmp/probe2.json"
  timeout 120 "$rtune" probe --no-store --out "$tmp/probe2.json" -- "$rtune" devices >"$tmp/probe.out" 2>&1; rc=$?
  [ $rc -eq 0 ] && ok "probe --out over an existing file: exit 0" ||
    bad "probe --out FILE: exit $rc: $(head -c 300 "$tmp/probe.out")"
  doc "probe --out FILE: replaced by the probe's document" "$tmp/probe2.json" rtune-probe
fi
echo "$fails failure(s)"
[ "$fails" = 0 ]
