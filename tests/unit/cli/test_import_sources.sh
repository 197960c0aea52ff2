#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune import DIR` imports every *.json directly in DIR in name order (other files and subdirectories left alone; an
# empty DIR is one error line, exit 1); `rtune import -` imports the documents on standard input, one or several one
# after another (`ssh node rtune export | rtune import -`), each on its own: a broken one is one error line (exit 1)
# and the ones before it stay imported; empty input is an error; `-` twice is a usage error. Re-importing adds nothing.
# usage: test_import_sources.sh RTUNE STORE_FILL
set -uo pipefail
rtune=$(realpath "$1") fill=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
"$fill" "$tmp/src.db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
"$rtune" export --db "$tmp/src.db" -o "$tmp/a.json" || { echo "FAIL export"; exit 1; }
# a second node: other hostname and machine-id
python3 - "$tmp/a.json" "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["node"]["hostname"] = "other-host"
d["node"]["machine_id"] = "0123456789abcdef0123456789abcdef"
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
has_nodes() { # has_nodes DB HOST...: the store has a profile for each HOST
  local db=$1 h
  shift
  for h in "$@"; do "$rtune" show --db "$db" --node "$h" --json >/dev/null 2>&1 || return 1; done
}

# a directory
mkdir -p "$tmp/fleet/sub"
cp "$tmp/b.json" "$tmp/fleet/20-b.json"
cp "$tmp/a.json" "$tmp/fleet/10-a.json"
echo "not a profile" >"$tmp/fleet/README.txt"
echo "{" >"$tmp/fleet/sub/broken.json"
"$rtune" import --db "$tmp/d.db" "$tmp/fleet" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && ok "import DIR: exit 0, no error (README.txt and sub/ left alone)" ||
  bad "import DIR: exit $rc: $(head -c 300 "$tmp/err")"
[ "$(grep -c "^imported '" "$tmp/out")" = 2 ] && head -1 "$tmp/out" | grep -q "10-a.json" &&
  tail -1 "$tmp/out" | grep -q "20-b.json" && ok "import DIR: both *.json, in name order" ||
  bad "import DIR: $(cat "$tmp/out")"
has_nodes "$tmp/d.db" fill-host other-host && ok "import DIR: both nodes stored" || bad "import DIR: nodes missing"
"$rtune" import --db "$tmp/d.db" "$tmp/fleet" >"$tmp/out" 2>&1
grep -q "0 entries added" "$tmp/out" && ! grep -q "[1-9][0-9]* entr[a-z]* added" "$tmp/out" &&
  ok "import DIR again: nothing added" || bad "import DIR again: $(cat "$tmp/out")"
mkdir -p "$tmp/empty"
"$rtune" import --db "$tmp/d.db" "$tmp/empty" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "rtune: no *.json profile in directory '$tmp/empty'" ] &&
  ok "import of an empty DIR: one line, exit 1" || bad "import empty DIR: exit $rc: $(cat "$tmp/err")"

# standard input: one document
"$rtune" import --db "$tmp/s1.db" - <"$tmp/a.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "^imported 'standard input': " "$tmp/out" && has_nodes "$tmp/s1.db" fill-host &&
  ok "import -: one document from standard input" || bad "import -: exit $rc: $(cat "$tmp/err")"
# a stream of documents, as `for n in ...; do ssh $n rtune export; done | rtune import -`
cat "$tmp/a.json" "$tmp/b.json" | "$rtune" import --db "$tmp/s2.db" - >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c "^imported 'standard input" "$tmp/out")" = 2 ] &&
  has_nodes "$tmp/s2.db" fill-host other-host &&
  ok "import -: a stream of two documents, both nodes" || bad "import - stream: exit $rc: $(cat "$tmp/out" "$tmp/err")"
# a broken document in the stream: the one before it stays imported, one error line, exit 1
{ cat "$tmp/a.json"; printf '{"schema": '; } | "$rtune" import --db "$tmp/s3.db" - >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "standard input, document 2" "$tmp/err" &&
  has_nodes "$tmp/s3.db" fill-host && ok "import -: a broken 2nd document is one line, the 1st stays imported" ||
  bad "import - broken: exit $rc: $(cat "$tmp/err")"
"$rtune" import --db "$tmp/s4.db" - </dev/null >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "rtune: standard input holds no profile" ] &&
  ok "import - of empty input: one line, exit 1" || bad "import - empty: exit $rc: $(cat "$tmp/err")"
"$rtune" import --db "$tmp/s4.db" - - </dev/null >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && ok "import - -: usage error" || bad "import - -: exit $rc"
# files, a directory and standard input together
"$rtune" import --db "$tmp/m.db" "$tmp/a.json" - <"$tmp/b.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && has_nodes "$tmp/m.db" fill-host other-host && ok "import FILE -: both" || bad "import FILE -: exit $rc"

echo "$fails failure(s)"
[ "$fails" = 0 ]
