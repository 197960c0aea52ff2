#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One option-parsing convention for every rtune command (cli/opt.c, docs/json-formats.md): an unknown option, a
# missing value, a value given to a flag and an ambiguous abbreviation are each exactly one line "rtune CMD: ..." on
# stderr with exit 2 (never getopt's own message plus a second one); options go anywhere before `--` (`rtune tune 2
# --json`, `rtune report STORE --json` print JSON), `--` ends them; `rtune help CMD` prints what `rtune CMD --help`
# does, exit 0. None of this needs a device.
# usage: test_options.sh RTUNE STORE_FILL
set -uo pipefail
rtune=$(realpath "$1") fill=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
db=$tmp/rtune.db
"$fill" "$db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
export RTUNE_DB=$tmp/none.db # no command below may create a store

usage_err() { # usage_err NAME EXACT-LINE -- CMD...: exit 2, stderr exactly that one line, nothing on stdout
  local name=$1 want=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "$want" ] && [ ! -s "$tmp/out" ]; then ok "$name"
  else bad "$name: exit $rc, stderr: $(head -c 300 "$tmp/err" | tr '\n' '|')"; fi
}

# command, an option that needs a value, a flag (no value)
specs=(
  "devices --ib-dev --json"
  "calibrate --budget --quick"
  "serve --port --once"
  "tune --app --json"
  "show --db --json"
  "history --db --json"
  "import --db --quiet"
  "export --format --help"
  "probe --name --no-store"
  "report --html --json"
)
for spec in "${specs[@]}"; do
  read -r cmd valopt flag <<<"$spec"
  usage_err "$cmd: unknown long option" "rtune $cmd: unknown option '--bogus'" -- "$rtune" "$cmd" --bogus
  usage_err "$cmd: unknown short option" "rtune $cmd: unknown option '-Z'" -- "$rtune" "$cmd" -Z
  usage_err "$cmd: missing value" "rtune $cmd: option '$valopt' needs a value" -- "$rtune" "$cmd" "$valopt"
  [ "$flag" != --help ] &&
    usage_err "$cmd: a value given to a flag" "rtune $cmd: option '$flag' takes no value" -- "$rtune" "$cmd" "$flag=1"
  "$rtune" help "$cmd" >"$tmp/help1" 2>&1; rc1=$?
  "$rtune" "$cmd" --help >"$tmp/help2" 2>&1; rc2=$?
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/help1" "$tmp/help2" && grep -q "^usage: rtune $cmd" "$tmp/help1"
  then ok "$cmd: 'rtune help $cmd' is 'rtune $cmd --help'"
  else bad "$cmd: rtune help $cmd: exit $rc1/$rc2: $(head -2 "$tmp/help1")"; fi
done
usage_err "devices: missing value of a short option" "rtune devices: option '-d' needs a value" -- "$rtune" devices -d
usage_err "calibrate: ambiguous abbreviation" \
  "rtune calibrate: ambiguous option '--no-s' (--no-store, --no-samples)" -- "$rtune" calibrate --no-s
usage_err "help of an unknown command" "rtune: 'bogus' is not an rtune command; see 'rtune --help'" -- \
  "$rtune" help bogus
usage_err "tune: extra operand" "rtune tune: unexpected argument 'b'" -- "$rtune" tune --db "$db" a b
# a bad value: one line in the same style, naming the option and the value
usage_err "tune: bad value" "rtune tune: option '--seed' takes a number, not 'x'" -- "$rtune" tune --seed x
usage_err "calibrate: bad value" "rtune calibrate: option '--budget' takes 1..86400 seconds, not '0'" -- \
  "$rtune" calibrate --budget 0
usage_err "serve: bad value" "rtune serve: option '--port' takes a port 1..65535, not '0'" -- "$rtune" serve --port 0
usage_err "report: bad value" "rtune report: option '--z' takes a number in 0.5..100, not '0'" -- "$rtune" report --z 0
usage_err "export: bad value" "rtune export: option '--format' takes json, env or prometheus, not 'x'" -- \
  "$rtune" export --format x
[ ! -e "$tmp/none.db" ] && ok "no store created by a usage error" || bad "a usage error created a store"

# options after operands (GNU permutation)
"$rtune" tune 2 --json --dry-run --db "$db" >"$tmp/tune.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] &&
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['run_number'] == 2" "$tmp/tune.json" &&
  ok "rtune tune 2 --json: JSON of run 2" || bad "rtune tune 2 --json: exit $rc: $(head -c 300 "$tmp/err")"
"$rtune" report "$db" --json >"$tmp/report.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/report.json" &&
  ok "rtune report STORE --json: JSON, nothing skipped" ||
  bad "rtune report STORE --json: exit $rc: $(head -c 300 "$tmp/err")"
"$rtune" show rxe0 --json --db "$db" >"$tmp/show.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/show.json" &&
  ok "rtune show DEV --json --db: JSON" || bad "rtune show DEV --json --db: exit $rc: $(head -c 300 "$tmp/err")"
"$rtune" history rxe0 --db "$db" --json >"$tmp/hist.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/hist.json" &&
  ok "rtune history DEV --db --json: JSON" || bad "rtune history DEV --db --json: exit $rc: $(head -c 300 "$tmp/err")"
"$rtune" export --db "$db" >"$tmp/p.json" &&
  "$rtune" import "$tmp/p.json" --db "$tmp/imp.db" -q >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/out" ] && ok "rtune import FILE --db X -q: options after the file" ||
  bad "rtune import FILE --db X -q: exit $rc: $(head -c 300 "$tmp/err")"
# `--` ends the options: what follows is an operand even if it looks like one
"$rtune" show --db "$db" -- --json >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "no profile for device '--json'" "$tmp/err" &&
  ok "rtune show -- --json: '--json' is the device" ||
  bad "rtune show -- --json: exit $rc: $(head -c 300 "$tmp/err")"
# probe: options before the command; the command's own options are its own
"$rtune" probe --no-store -- true --bogus >"$tmp/out" 2>"$tmp/err"; rc=$?
grep -q "unknown option" "$tmp/err" && bad "rtune probe -- CMD --bogus: parsed the application's option" ||
  ok "rtune probe -- CMD --opt: the application's options are not rtune's (exit $rc)"

echo "$fails failure(s)"
[ "$fails" = 0 ]
