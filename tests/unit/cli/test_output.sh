#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every command that writes a file goes through one writer (common/rt_out.h): `-` is standard output (no file named
# `-`), a regular file is replaced atomically (no temporary left, its permissions kept), a FIFO stays a FIFO and gets
# the data, a character device stays a device (as root: a mknod'ed copy of /dev/null, never the real one), a socket or
# a directory is refused with one line, and a symlink in a shared (sticky, world-writable) directory is refused while
# one in a private directory is followed (the target written, the link kept). Checked on `rtune export -o`,
# `rtune report -o` and `rtune report --html` (calibrate --out: test_json_formats.sh).
# usage: test_output.sh RTUNE STORE_FILL
set -uo pipefail
rtune=$(realpath "$1") fill=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
check() { if "${@:2}"; then ok "$1"; else bad "$1"; fi; }
same_export() { # same_export A B: the same profile document but for its generated_at
  python3 -c "
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a.pop('generated_at', None); b.pop('generated_at', None)
assert a == b" "$1" "$2" 2>/dev/null
}
db=$tmp/rtune.db
"$fill" "$db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
"$rtune" export --db "$db" >"$tmp/want.json" || { echo "FAIL export to stdout"; exit 1; }

# the writing commands, each as: NAME -- COMMAND with @OUT@ where the output path goes
writers=(
  "export -o|export --db $db -o @OUT@"
  "report -o|report $db -o @OUT@"
  "report --html|report $db --html @OUT@ -o /dev/null"
)
run() { # run SPEC PATH: the writer with PATH; stdout $tmp/out, stderr $tmp/err, exit in rc
  local cmd=${1#*|}
  # shellcheck disable=SC2086 # the spec is words
  "$rtune" ${cmd//@OUT@/$2} >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

for spec in "${writers[@]}"; do
  name=${spec%%|*}
  # FIFO: stays a FIFO, and its reader gets the whole output
  rm -f "$tmp/fifo" "$tmp/got"
  mkfifo "$tmp/fifo"
  timeout 60 cat "$tmp/fifo" >"$tmp/got" &
  reader=$!
  run "$spec" "$tmp/fifo"
  wait $reader
  check "$name FIFO: exit 0" test $rc -eq 0
  check "$name FIFO: still a FIFO" test -p "$tmp/fifo"
  check "$name FIFO: the reader got the output" test -s "$tmp/got"
  [ "$name" = "export -o" ] && check "$name FIFO: the reader got the export" same_export "$tmp/got" "$tmp/want.json"

  # "-": standard output, no file named "-"
  mkdir -p "$tmp/cwd" && rm -f "$tmp/cwd/-"
  (cd "$tmp/cwd" && run "$spec" - && exit $rc); rc=$?
  check "$name -: exit 0, output on standard output" test $rc -eq 0 -a -s "$tmp/out"
  check "$name -: no file named '-' is created" test ! -e "$tmp/cwd/-"

  # a regular file: replaced atomically, keeps its permissions, no temporary left
  echo old >"$tmp/reg" && chmod 0640 "$tmp/reg"
  run "$spec" "$tmp/reg"
  check "$name regular: exit 0" test $rc -eq 0
  check "$name regular: replaced" test "$(head -c 3 "$tmp/reg")" != old
  check "$name regular: keeps its mode 0640" test "$(stat -c %a "$tmp/reg")" = 640
  check "$name regular: no temporary file left" test -z "$(find "$tmp" -maxdepth 1 -name '.*.tmp')"
  # a new name: created 0644
  rm -f "$tmp/new"
  run "$spec" "$tmp/new"
  check "$name new file: created 0644" test $rc -eq 0 -a "$(stat -c %a "$tmp/new" 2>/dev/null)" = 644

  # a character device (root only: mknod a copy of /dev/null in the scratch directory)
  if [ "$(id -u)" = 0 ] && mknod "$tmp/null" c 1 3 2>/dev/null; then
    run "$spec" "$tmp/null"
    check "$name char device: exit 0" test $rc -eq 0
    check "$name char device: still a character device" test -c "$tmp/null"
    rm -f "$tmp/null"
  else
    echo "skip $name char device: not root"
  fi

  # a directory and a socket: refused with one line, left alone
  mkdir -p "$tmp/dir"
  run "$spec" "$tmp/dir"
  check "$name directory: exit 1 with one line naming it" \
    test $rc -eq 1 -a "$(wc -l <"$tmp/err")" = 1 -a -d "$tmp/dir"
  grep -q "cannot write '$tmp/dir': is a directory" "$tmp/err" || bad "$name directory message: $(cat "$tmp/err")"
  rm -f "$tmp/sock"
  python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$tmp/sock"
  run "$spec" "$tmp/sock"
  check "$name socket: refused (exit 1, one line), still a socket" \
    test $rc -eq 1 -a "$(wc -l <"$tmp/err")" = 1 -a -S "$tmp/sock"
  grep -q "is a socket" "$tmp/err" || bad "$name socket message: $(cat "$tmp/err")"

  # a symlink in a shared (sticky, world-writable) directory: refused, its target untouched
  mkdir -p "$tmp/shared" && chmod 1777 "$tmp/shared"
  echo precious >"$tmp/victim"
  ln -sf "$tmp/victim" "$tmp/shared/link"
  run "$spec" "$tmp/shared/link"
  check "$name symlink in a sticky dir: refused (exit 1, one line)" test $rc -eq 1 -a "$(wc -l <"$tmp/err")" = 1
  grep -q "symlink in the shared directory" "$tmp/err" || bad "$name sticky symlink message: $(cat "$tmp/err")"
  check "$name symlink in a sticky dir: target untouched, link kept" \
    test "$(cat "$tmp/victim")" = precious -a -L "$tmp/shared/link"
  # a symlink in a private directory: followed, the target replaced, the link kept
  ln -sf "$tmp/victim" "$tmp/plink"
  run "$spec" "$tmp/plink"
  check "$name symlink in a private dir: followed (target written, link kept)" \
    test $rc -eq 0 -a "$(cat "$tmp/victim")" != precious -a -L "$tmp/plink"
done

# "-o -" is standard output: the export's bytes, and nothing else there
(cd "$tmp/cwd" && "$rtune" export --db "$db" -o - >"$tmp/stdout.json"); rc=$?
check "export -o -: exit 0, the document on standard output" test $rc -eq 0
check "export -o -: the export, alone" same_export "$tmp/stdout.json" "$tmp/want.json"
(cd "$tmp/cwd" && "$rtune" report "$db" --json -o - >"$tmp/stdout.json"); rc=$?
check "report --json -o -: JSON on standard output" python3 -c "import json,sys; json.load(open(sys.argv[1]))" \
  "$tmp/stdout.json"
(cd "$tmp/cwd" && "$rtune" report "$db" --html - >"$tmp/stdout.html"); rc=$?
check "report --html -: the page alone on standard output" \
  python3 -c "import sys; t=open(sys.argv[1]).read(); assert t.lstrip().lower().startswith('<!doctype html'), t[:80]" \
  "$tmp/stdout.html"
"$rtune" report "$db" --html - --json >/dev/null 2>"$tmp/err"; rc=$?
check "report --html - --json: usage error (both want standard output)" test $rc -eq 2 -a "$(wc -l <"$tmp/err")" = 1
check "no file named '-' anywhere" test ! -e "$tmp/cwd/-"

echo "$fails failure(s)"
[ "$fails" = 0 ]
