#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The store under hostile conditions, through the real rtune binary:
#   disk full   a 512 KiB tmpfs in a private mount namespace (unshare -m), filled up: import and export fail with one
#               clear line, the store passes integrity_check and keeps its profiles, an existing export file is kept,
#               no temporary file is left; after space is freed the same import succeeds. Without unshare: a file
#               size limit (ulimit -f, SIGXFSZ ignored) on the writer instead.
#   read-only   the store's directory 0555 and the store file 0444, rtune run as nobody (setpriv; root ignores
#               permission bits): writes fail with one clear line and change nothing.
#   busy        another process holds an exclusive SQLite lock longer than rtune's busy timeout: a reader still
#               works (WAL), a writer gives up with one clear line after the timeout (it does not hang), and
#               succeeds once the lock is gone.
# When valgrind is given (3rd argument, optional), the failing runs are also checked for leaks and memory errors.
set -uo pipefail
rtune=$1 fill=$2 valgrind=${3:-}
tmp=$(mktemp -d)
trap 'umount -l "$tmp/full" 2>/dev/null; [ -n "${lockpid:-}" ] && kill "$lockpid" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
vg=()
if [ -n "$valgrind" ] && command -v "$valgrind" >/dev/null; then
  vg=("$valgrind" -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
fi

one_line_error() { # one_line_error DESCRIPTION RC STDERR_FILE: exit 1 and exactly one "rtune: ..." line
  local lines
  lines=$(wc -l <"$3")
  if [ "$2" -eq 1 ] && [ "$lines" -eq 1 ] && grep -q '^rtune: ' "$3"; then ok "$1: $(cat "$3")"
  else bad "$1: exit $2, $lines stderr lines: $(head -c 400 "$3" | tr '\n' '|')"; fi
}
integrity() { # integrity DESCRIPTION DB
  local r
  r=$(sqlite3 "$2" 'PRAGMA integrity_check' 2>&1)
  if [ "$r" = ok ]; then ok "$1: integrity_check ok"; else bad "$1: integrity_check: $r"; fi
}
profiles() { sqlite3 "$1" 'SELECT count(*) FROM profiles'; }

"$fill" "$tmp/base.db" rxe0 >/dev/null || { echo "FAIL store_fill"; exit 1; }
"$rtune" export --db "$tmp/base.db" -o "$tmp/p.json" || { echo "FAIL export"; exit 1; }
# profiles of 40 other nodes: enough to need more pages than a full disk has
python3 - "$tmp/p.json" "$tmp" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
for i in range(40):
    d["node"]["hostname"] = "node-%d" % i; d["node"]["machine_id"] = "mid-node-%d" % i
    for e in d["entries"]:
        e["reasons"] = [{"code": "pad", "text": "x" * 200}] * 6
    json.dump(d, open("%s/node-%d.json" % (sys.argv[2], i), "w"))
PY
base_profiles=$(profiles "$tmp/base.db")

# ---- disk full --------------------------------------------------------------------------------------------------
full_test() { # runs inside the namespace (or with a file size limit): $1 = directory on the small file system
  local d=$1 rc
  cp "$tmp/base.db" "$d/db" && echo '{"keep": true}' >"$d/out.json" || { echo "FAIL set-up of the full disk"; return 1; }
  # fill the file system, then free 64 KiB: the store opens (WAL, -shm) and the import runs out of space mid-way
  dd if=/dev/zero of="$d/filler" bs=4k 2>/dev/null
  truncate -s -64K "$d/filler"
  "${vg[@]}" "$rtune" import --db "$d/db" "$tmp"/node-*.json >"$tmp/full.out" 2>"$tmp/full.err"; rc=$?
  [ $rc -eq 99 ] && bad "disk full: valgrind found errors in import: $(head -c 600 "$tmp/full.err")"
  grep -v '^rtune: ' "$tmp/full.err" >/dev/null && [ $rc -ne 99 ] && head -c 600 "$tmp/full.err"
  if [ $rc -eq 1 ] && grep -q '^rtune: ' "$tmp/full.err"; then
    ok "disk full: import fails with a clear error ($(sort -u "$tmp/full.err" | head -1))"
  else bad "disk full: import exit $rc: $(head -c 400 "$tmp/full.err" | tr '\n' '|')"; fi
  "$rtune" export --db "$d/db" -o "$d/out.json" 2>"$tmp/fexp.err"; rc=$?
  one_line_error "disk full: export -o" $rc "$tmp/fexp.err"
  grep -q '"keep"' "$d/out.json" && ok "disk full: the existing export file is intact" ||
    bad "disk full: the existing export file was damaged"
  ls -a "$d" | grep -q '^\.out\.json\.' && bad "disk full: export left a temporary file" ||
    ok "disk full: no temporary file left"
  rm -f "$d/filler"
  # (sqlite3 itself cannot open the store while the disk is full: check it once there is room again)
  integrity "disk full: after the failed import" "$d/db"
  # a file reported as imported must be in the store (the report must not run ahead of the commit)
  local reported stored
  reported=$(grep -c "^imported '" "$tmp/full.out")
  stored=$(sqlite3 "$d/db" "SELECT count(DISTINCT node_id) FROM profiles") && stored=$((stored - 1))
  [ "$stored" -ge "$reported" ] && ok "disk full: the $reported files reported imported are stored ($stored nodes)" ||
    bad "disk full: $reported files reported as imported, but only $stored are in the store"
  "$rtune" import -q --db "$d/db" "$tmp"/node-*.json 2>"$tmp/full2.err"; rc=$?
  [ $rc -eq 0 ] && ok "disk full: import succeeds once there is space" ||
    bad "disk full: import after freeing space: exit $rc $(head -c 300 "$tmp/full2.err")"
  integrity "disk full: after the import" "$d/db"
  [ "$(profiles "$d/db")" -gt "$base_profiles" ] && ok "disk full: profiles imported" || bad "disk full: nothing imported"
}
mkdir "$tmp/full"
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
  export -f full_test one_line_error integrity profiles ok bad
  export rtune tmp base_profiles
  export vgs="${vg[*]}"
  unshare -m --propagation private bash -c '
    vg=($vgs); fails=0
    mount -t tmpfs -o size=512k,mode=0755 rtune-full "$tmp/full" || { echo "FAIL mount tmpfs"; exit 1; }
    full_test "$tmp/full"
    exit $fails' >"$tmp/full.log" 2>&1
  rc=$?
  cat "$tmp/full.log"
  fails=$((fails + $(grep -c '^FAIL' "$tmp/full.log")))
  [ $rc -eq 0 ] || [ "$(grep -c '^FAIL' "$tmp/full.log")" -gt 0 ] || bad "disk-full namespace exited $rc"
else
  echo "no mount namespace: using a file size limit instead of a full disk"
  cp "$tmp/base.db" "$tmp/full/db"
  sz=$(( $(stat -c %s "$tmp/full/db") / 1024 + 8 ))
  ( trap '' XFSZ; ulimit -f "$sz"; "$rtune" import --db "$tmp/full/db" "$tmp"/node-*.json >/dev/null 2>"$tmp/fsz.err" ); rc=$?
  [ $rc -eq 1 ] && grep -q '^rtune: ' "$tmp/fsz.err" && ok "file size limit: import fails clearly" ||
    bad "file size limit: import exit $rc $(head -c 300 "$tmp/fsz.err")"
  integrity "file size limit" "$tmp/full/db"
fi

# ---- read-only store --------------------------------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  asnobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  chmod 0755 "$tmp"; chmod 0644 "$tmp"/node-*.json
  mkdir "$tmp/ro" && cp "$tmp/base.db" "$tmp/ro/db" && chmod 0444 "$tmp/ro/db" && chmod 0555 "$tmp/ro"
  sum=$(sha256sum <"$tmp/ro/db")
  "${asnobody[@]}" "${vg[@]}" "$rtune" import --db "$tmp/ro/db" "$tmp/node-0.json" >/dev/null 2>"$tmp/ro.err"; rc=$?
  [ $rc -eq 99 ] && bad "read-only: valgrind found errors: $(head -c 600 "$tmp/ro.err")"
  one_line_error "read-only store directory: import" $rc "$tmp/ro.err"
  "${asnobody[@]}" "$rtune" export --db "$tmp/ro/db" -o "$tmp/ro/out.json" 2>"$tmp/roe.err"; rc=$?
  one_line_error "read-only store directory: export -o into it" $rc "$tmp/roe.err"
  "${asnobody[@]}" "$rtune" show --db "$tmp/ro/db" >/dev/null 2>"$tmp/ros.err"; rc=$?
  if [ $rc -eq 0 ]; then ok "read-only store directory: show works"
  else one_line_error "read-only store directory: show (cannot read without -shm)" $rc "$tmp/ros.err"; fi
  [ "$(sha256sum <"$tmp/ro/db")" = "$sum" ] && ok "read-only store: file unchanged" || bad "read-only store: file changed"
  [ "$(ls -A "$tmp/ro")" = db ] && ok "read-only store: nothing created next to it" || bad "read-only: $(ls -A "$tmp/ro")"
  # writable directory, read-only file
  mkdir -m 0777 "$tmp/rof" && cp "$tmp/base.db" "$tmp/rof/db" && chmod 0444 "$tmp/rof/db"
  "${asnobody[@]}" "$rtune" import --db "$tmp/rof/db" "$tmp/node-0.json" >/dev/null 2>"$tmp/rof.err"; rc=$?
  one_line_error "read-only store file: import" $rc "$tmp/rof.err"
  integrity "read-only store file" "$tmp/rof/db"
  [ "$(profiles "$tmp/rof/db")" = "$base_profiles" ] && ok "read-only store file: no profile added" ||
    bad "read-only store file: profiles changed"
  # a store path nobody may not even create
  "${asnobody[@]}" "$rtune" import --db "$tmp/ro/new.db" "$tmp/node-0.json" >/dev/null 2>"$tmp/ron.err"; rc=$?
  one_line_error "read-only directory: creating a store" $rc "$tmp/ron.err"
else
  echo "skip read-only checks: need root and setpriv (root ignores permission bits)"
fi

# ---- busy ---------------------------------------------------------------------------------------------------------
cp "$tmp/base.db" "$tmp/busy.db"
"$rtune" show --db "$tmp/busy.db" >/dev/null  # WAL mode on
python3 - "$tmp/busy.db" >"$tmp/lock.out" <<'PY' &
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(40)
PY
lockpid=$!
for _ in $(seq 100); do grep -q locked "$tmp/lock.out" && break; sleep 0.1; done
grep -q locked "$tmp/lock.out" || bad "busy: could not take the lock"
"$rtune" show --db "$tmp/busy.db" >/dev/null 2>"$tmp/busy-show.err"; rc=$?
[ $rc -eq 0 ] && ok "busy: a reader works while another process writes (WAL)" ||
  bad "busy: show exit $rc: $(cat "$tmp/busy-show.err")"
start=$(date +%s)
"${vg[@]}" "$rtune" import --db "$tmp/busy.db" "$tmp/node-1.json" >/dev/null 2>"$tmp/busy.err"; rc=$?
took=$(( $(date +%s) - start ))
[ $rc -eq 99 ] && bad "busy: valgrind found errors: $(head -c 600 "$tmp/busy.err")"
one_line_error "busy: import while another process holds the write lock (gave up after ${took}s)" $rc "$tmp/busy.err"
[ "$took" -lt 39 ] && ok "busy: the writer gave up before the lock holder finished" || bad "busy: writer waited ${took}s"
kill "$lockpid" 2>/dev/null; wait "$lockpid" 2>/dev/null; lockpid=
"$rtune" import -q --db "$tmp/busy.db" "$tmp/node-1.json" 2>"$tmp/busy2.err"; rc=$?
[ $rc -eq 0 ] && ok "busy: import succeeds after the lock is released" || bad "busy: import after release: exit $rc"
integrity "busy" "$tmp/busy.db"

[ $fails -eq 0 ] && echo "all store environment checks passed"
exit $((fails > 0))
