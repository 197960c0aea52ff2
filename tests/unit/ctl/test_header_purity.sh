#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pure-C components (tuner/ decides on arrays, ctl/ is shared by librtune and the probe) include no verbs, SQLite
# or jansson header, directly or through a header of their own folder. Fails naming the file and the include.
set -uo pipefail
src=${1:?source dir}
fail=0
for d in tuner ctl; do
  [ -d "$src/$d" ] || { echo "FAIL: no $src/$d"; fail=1; continue; }
  hits=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](infiniband/|rdma/|sqlite3\.h|jansson\.h|rt_json_arena\.h)' \
    "$src/$d"/*.[ch] || true)
  if [ -n "$hits" ]; then
    echo "FAIL: $d/ includes a verbs, SQLite or jansson header:"
    echo "$hits"
    fail=1
  fi
done
# the check itself must be able to fail: a planted include is found
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <infiniband/verbs.h>\n' > "$tmp/x.c"
grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](infiniband/|rdma/|sqlite3\.h|jansson\.h)' "$tmp/x.c" ||
  { echo "FAIL: the pattern misses a planted verbs include"; fail=1; }
[ $fail = 0 ] && echo "header purity: ok"
exit $fail
