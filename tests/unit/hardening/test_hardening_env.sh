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
# everything into the main file: the runs below copy it alone (store_fill's dead run may still be only in the -wal)
[ "$(sqlite3 "$tmp/base.db" 'PRAGMA wal_checkpoint(TRUNCATE)')" = "0|0|0" ] || { echo "FAIL checkpoint"; exit 1; }
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
# A store its owner (or root) made read-only, directory and file, read by a user who may not write there (rtune runs
# as nobody: root ignores permission bits). Reading commands (show, history, export to stdout and into a writable
# directory) must work and print exactly what they printed while the store was writable; import must exit 1 with one
# clear line; nothing may be created, changed or lost. The owner's case leaves the store's -wal/-shm as rtune keeps
# them; the root-owned case has a -shm nobody cannot write; the clean case has no -wal/-shm at all (a store copied
# alone, or checkpointed into rollback mode); the torn case is a -wal whose -shm was lost, which must not give a
# silently stale read (all committed data, or one clear error).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  asnobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  chmod 0755 "$tmp"; chmod 0644 "$tmp"/node-*.json
  reads() { # reads DB OUTDIR: the reading commands' outputs into OUTDIR (as nobody); 0 when all of them exit 0
    local db=$1 o=$2 rc=0
    mkdir -p "$o" && chmod 0777 "$o"
    "${asnobody[@]}" "$rtune" show --db "$db" --node fill-host >"$o/show" 2>"$o/show.err" || rc=1
    "${asnobody[@]}" "$rtune" history --db "$db" >"$o/history" 2>"$o/history.err" || rc=1
    "${asnobody[@]}" "$rtune" export --db "$db" --node fill-host --format env >"$o/env" 2>"$o/env.err" || rc=1
    "${asnobody[@]}" "$rtune" export --db "$db" --node node-3 >"$o/json" 2>"$o/json.err" || rc=1
    "${asnobody[@]}" "$rtune" export --db "$db" --node fill-host -o "$o/out.json" 2>"$o/out.err" || rc=1
    # generated_at is the export's time
    for f in "$o/json" "$o/out.json"; do
      [ -s "$f" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('generated_at',None)
print(json.dumps(d, sort_keys=True))" "$f" >"$f.norm" 2>/dev/null
    done
    return $rc
  }
  same_reads() { # same_reads CASE BEFORE AFTER
    local f diffs=""
    for f in show history env json.norm out.json.norm; do
      [ -s "$2/$f" ] && cmp -s "$2/$f" "$3/$f" || diffs="$diffs $f"
    done
    [ -z "$diffs" ] && ok "$1: show, history, export (env, json, -o) print what they printed before" ||
      bad "$1: differs from before:$diffs ($(head -c 300 "$3/show.err" "$3/history.err" "$3/json.err" | tr '\n' '|'))"
  }
  # names and contents (the -shm is SQLite's shared-memory index: a reader that may write it does)
  dirsum() { (cd "$1" && ls -A | sort && sha256sum -- $(ls | grep -v -- '-shm$') 2>/dev/null); }
  ro_case() { # ro_case CASE DIR OWNER_PREFIX...: DIR/db filled and writable; checks it once made read-only
    local name=$1 d=$2 rc before after
    shift 2
    reads "$d/db" "$tmp/$name.rw" || bad "$name: a reading command failed before the chmod: $(cat "$tmp/$name.rw"/*.err)"
    rm -rf "$tmp/$name.rw/out.json"
    "$@" chmod 0444 "$d/db" && "$@" chmod 0555 "$d" || bad "$name: chmod"
    before=$(dirsum "$d")
    if reads "$d/db" "$tmp/$name.ro"; then ok "$name: show, history and export work"
    else bad "$name: a reading command failed: $(cat "$tmp/$name.ro"/*.err | head -c 400 | tr '\n' '|')"; fi
    same_reads "$name" "$tmp/$name.rw" "$tmp/$name.ro"
    "${asnobody[@]}" "${vg[@]}" "$rtune" import --db "$d/db" "$tmp/node-0.json" >/dev/null 2>"$tmp/$name.imp"; rc=$?
    [ $rc -eq 99 ] && bad "$name: valgrind found errors in import: $(head -c 600 "$tmp/$name.imp")"
    one_line_error "$name: import" $rc "$tmp/$name.imp"
    "${asnobody[@]}" "$rtune" export --db "$d/db" --node fill-host -o "$d/out.json" 2>"$tmp/$name.exp"; rc=$?
    one_line_error "$name: export -o into the read-only directory" $rc "$tmp/$name.exp"
    after=$(dirsum "$d")
    [ "$before" = "$after" ] && ok "$name: nothing created or changed in the directory ($(ls -A "$d" | tr '\n' ' '))" ||
      bad "$name: the directory changed: before [$(echo $before)] after [$(echo $after)]"
    "$@" chmod 0755 "$d" && "$@" chmod 0644 "$d/db"
    integrity "$name: afterwards" "$d/db"
    reads "$d/db" "$tmp/$name.again" >/dev/null
    same_reads "$name: once the chmod is undone" "$tmp/$name.rw" "$tmp/$name.again"
  }
  # 1. the owner's store (created and filled by nobody), made read-only by the owner
  mkdir "$tmp/own" && chown 65534:65534 "$tmp/own"
  "${asnobody[@]}" "$fill" "$tmp/own/db" rxe0 >/dev/null &&
    "${asnobody[@]}" "$rtune" import -q --db "$tmp/own/db" "$tmp/node-3.json" "$tmp/node-4.json" ||
    bad "owner's store: set-up as nobody"
  ro_case "owner's read-only store" "$tmp/own" "${asnobody[@]}"
  # 2. root's store (0644, with root's -wal/-shm), directory and file made read-only, read by nobody
  mkdir "$tmp/ro" && cp "$tmp/base.db" "$tmp/ro/db" && chmod 0644 "$tmp/ro/db" &&
    "$rtune" import -q --db "$tmp/ro/db" "$tmp/node-3.json" "$tmp/node-4.json" || bad "root's store: set-up"
  ro_case "root's read-only store" "$tmp/ro"
  # 3. a clean store: no -wal, no -shm
  mkdir "$tmp/clean" && cp "$tmp/ro/db" "$tmp/clean/db" && chmod 0644 "$tmp/clean/db" &&
    [ "$(sqlite3 "$tmp/clean/db" 'PRAGMA journal_mode=DELETE')" = delete ] && rm -f "$tmp/clean/db-wal" "$tmp/clean/db-shm" ||
    bad "clean store: set-up"
  ro_case "read-only store without -wal/-shm" "$tmp/clean"
  # 4. a -wal holding committed data (node-5) whose -shm is gone: all of it or one clear error, never a stale read
  mkdir "$tmp/torn" && chown 65534:65534 "$tmp/torn" && cp "$tmp/own/db" "$tmp/torn/db" && chown 65534 "$tmp/torn/db"
  python3 - "$tmp/torn/db" <<'PY' || bad "torn store: set-up"
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA wal_autocheckpoint=0")
con.execute("UPDATE nodes SET hostname = 'renamed-in-wal' WHERE hostname = 'node-4'")
os._exit(0)  # no checkpoint: the change is only in the -wal
PY
  rm -f "$tmp/torn/db-shm"; chown 65534 "$tmp/torn/db-wal" 2>/dev/null
  chmod 0444 "$tmp/torn/db"; chmod 0555 "$tmp/torn"
  "${asnobody[@]}" "$rtune" export --db "$tmp/torn/db" --node renamed-in-wal >"$tmp/torn.out" 2>"$tmp/torn.err"; rc=$?
  if [ $rc -eq 0 ]; then
    grep -q renamed-in-wal "$tmp/torn.out" && ok "read-only store with a -wal but no -shm: reads the committed data" ||
      bad "read-only store with a -wal but no -shm: exit 0 without the data in the -wal (stale read)"
  elif grep -q -- '-wal' "$tmp/torn.err"; then one_line_error "read-only store with a -wal but no -shm" $rc "$tmp/torn.err"
  else bad "read-only store with a -wal but no -shm: exit $rc, an error that does not name the -wal: $(cat "$tmp/torn.err")"; fi
  # the name the -wal replaced must be gone: a read of the main file alone would still find it
  "${asnobody[@]}" "$rtune" export --db "$tmp/torn/db" --node node-4 >/dev/null 2>&1 &&
    bad "read-only store with a -wal but no -shm: a stale read (node-4 was renamed in the -wal)" ||
    ok "read-only store with a -wal but no -shm: no stale read"
  [ ! -e "$tmp/torn/db-shm" ] && ok "torn store: no -shm created" || bad "torn store: a -shm was created"
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
