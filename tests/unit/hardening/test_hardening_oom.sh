#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Allocation failure: `rtune export`, `show`, `history` and `import` on a small store (store_fill), each run with
# failmalloc.so failing the N-th allocation, swept over N (every N up to 60, then evenly spread, at most MAX_RUNS
# per command). Every run must either succeed or exit 1 with one clear line on stderr ("rtune: ...", two for the
# import of two files when the second's failure rolled the first back and that is said), never
# crash (signal, abort) or print a usage error, and the store must pass PRAGMA integrity_check afterwards; an import
# of two files must leave each file all or nothing and every file it reported as imported in the store, and
# a successful export must be a complete JSON document. With fakedev.so (4th argument) `rtune calibrate` on its
# software device is swept too (COMMANDS=calibrate): a failed calibration leaves no run "running" in the store and
# no device object alive. Labelled `preload`: it LD_PRELOADs its own allocator, so it is not run in sanitizer builds.
set -uo pipefail
rtune=$1 fill=$2 shim=$3 fakedev=${4:-}
MAX_RUNS=${MAX_RUNS:-120}  # per command; COMMANDS="export show history import" selects the commands
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0 failed_runs=0
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

"$fill" "$tmp/base.db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
# everything into the main file: the runs below copy it alone (store_fill's dead run may still be only in the -wal)
[ "$(sqlite3 "$tmp/base.db" 'PRAGMA wal_checkpoint(TRUNCATE)')" = "0|0|0" ] || { echo "FAIL checkpoint"; exit 1; }
"$rtune" export --db "$tmp/base.db" -o "$tmp/p.json" || { echo "FAIL export for the import input"; exit 1; }
# the same profile as another node's, so that importing it really writes
python3 - "$tmp/p.json" "$tmp/other.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
d["node"]["hostname"] = "other-node"; d["node"]["machine_id"] = "mid-other-node"
json.dump(d, open(sys.argv[2], "w"))
d["node"]["hostname"] = "third-node"; d["node"]["machine_id"] = "mid-third-node"
json.dump(d, open(sys.argv[2].replace("other", "third"), "w"))
PY
profiles() { sqlite3 "$1" 'SELECT count(*) FROM profiles'; }
base_profiles=$(profiles "$tmp/base.db")
# store_fill's dead run (status running, its process gone: shown as interrupted)
base_running=$(sqlite3 "$tmp/base.db" "SELECT count(*) FROM runs WHERE status = 'running'")
new_profiles=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['entries']))" "$tmp/other.json")

run_cmd() { # run_cmd NAME FAIL_AT: runs the command on a fresh copy of the store
  local name=$1 n=$2 pre=$shim
  rm -f "$tmp/db" "$tmp/db-wal" "$tmp/db-shm" "$tmp/out.json" "$tmp/fakedev"
  cp "$tmp/base.db" "$tmp/db"
  case $name in
    export) set -- export --db "$tmp/db" -o "$tmp/out.json" ;;
    show) set -- show --db "$tmp/db" ;;
    history) set -- history --db "$tmp/db" ;;
    import) set -- import --db "$tmp/db" "$tmp/other.json" "$tmp/third.json" ;;
    calibrate) set -- calibrate -d fake0 --quick --budget 1 --db "$tmp/db"; pre="$shim $fakedev" ;;
  esac
  # the shims only in rtune (not in timeout, whose own allocations and exit they would count)
  timeout 120 env RT_FAIL_AT="$n" RT_FAIL_REPORT="$tmp/count" RT_FAKEDEV_REPORT="$tmp/fakedev" LD_PRELOAD="$pre" \
    "$rtune" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
}

check_run() { # check_run NAME N RC
  local name=$1 n=$2 rc=$3 lines integ
  runs=$((runs + 1))
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    bad "$name, allocation $n failing: exit $rc ($(head -c 200 "$tmp/stderr" | tr '\n' ' '))"
    return
  fi
  if [ "$rc" -eq 1 ]; then
    failed_runs=$((failed_runs + 1))
    lines=$(wc -l <"$tmp/stderr")
    # one line; an import of two files may add one naming a file of the batch that was rolled back with it
    max=1; [ "$name" = import ] && max=2
    if [ "$lines" -lt 1 ] || [ "$lines" -gt $max ] || grep -qv '^rtune' "$tmp/stderr"; then
      bad "$name, allocation $n failing: exit 1 with $lines stderr lines: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
    fi
    # SQLite's own state leaking out means the store lost track of its transaction
    grep -q 'no transaction is active' "$tmp/stderr" &&
      bad "$name, allocation $n failing: the store lost track of its batch: $(tr '\n' '|' <"$tmp/stderr")"
  fi
  integ=$(sqlite3 "$tmp/db" 'PRAGMA integrity_check' 2>&1)
  [ "$integ" = ok ] || bad "$name, allocation $n failing: store damaged: $integ"
  case $name in
    import)
      local have want
      have=$(profiles "$tmp/db")
      # each file is all or nothing, and a file reported as imported must really be in the store
      reported=$(grep -c "^imported '" "$tmp/stdout")
      want=$((base_profiles + reported * new_profiles))
      [ "$have" = "$want" ] ||
        bad "import, allocation $n failing: exit $rc, $reported files reported imported, $have profiles (want $want)"
      ;;
    calibrate)
      local running live
      running=$(sqlite3 "$tmp/db" "SELECT count(*) FROM runs WHERE status = 'running'")
      [ "$running" = "$base_running" ] || bad "calibrate, allocation $n failing: $running runs left running"
      live=$(awk '$1 == "live" {print $2}' "$tmp/fakedev" 2>/dev/null)
      [ "$live" = 0 ] || bad "calibrate, allocation $n failing: ${live:-?} device objects left alive"
      ;;
    export)
      if [ "$rc" -eq 0 ]; then
        python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/out.json" 2>/dev/null ||
          bad "export, allocation $n failing: exit 0 but the file is not a complete JSON document"
      else
        [ ! -e "$tmp/out.json" ] || bad "export, allocation $n failing: exit 1 but '$tmp/out.json' was left behind"
        ls -a "$tmp" | grep -q '^\.out\.json\.' && bad "export, allocation $n failing: temporary file left behind"
      fi
      ;;
  esac
}

for name in ${COMMANDS:-export show history import}; do
  run_cmd "$name" 0; rc=$?
  [ "$rc" -eq 0 ] || { bad "$name without failures: exit $rc: $(cat "$tmp/stderr")"; continue; }
  total=$(cat "$tmp/count")
  step=$(( (total - 60) / (MAX_RUNS - 60) )); [ "$step" -ge 1 ] || step=1
  before=$runs
  n=1
  while [ "$n" -le "$total" ]; do
    run_cmd "$name" "$n"; rc=$?
    check_run "$name" "$n" "$rc"
    if [ "$n" -lt 60 ]; then n=$((n + 1)); else n=$((n + step)); fi
  done
  echo "$name: $total allocations, $((runs - before)) runs with one failing"
done
echo "$runs runs, $failed_runs exited 1 with an error, $fails problems"
[ $fails -eq 0 ] && echo "allocation-failure sweep passed"
exit $((fails > 0))
