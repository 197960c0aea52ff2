#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune probe` keeps the adaptive inline controllers of apply mode (issue 18 item 4): an application that leaves the
# probe's file (fixtures/probe_inline_ctl.json, rtune-probe 1.1 as probe_writer.c writes it: one RC QP whose
# controller moved 32 -> 64 -> 128 -> 144 -> 128 B, one UD QP whose controller was busy) is imported with its
# controllers: one inline_ctl row per QP (the busy one without figures), its four moves in inline_ctl_moves exactly as
# the file has them, stamped with the import's histograms' time; `rtune show` lists each app's latest controllers in
# one line per QP, `rtune show --json` (rtune-show 1.2; inline_ctl since 1.1) in "inline_ctl". An older file without inline_ctl
# (fixtures/probe_v1_no_ctl.json, "format"/"version" 1) imports its histogram as before and stores no controller.
set -uo pipefail
rtune=$1 fixtures=$2 profile=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
db=$tmp/rtune.db
# probe NAME FILE: `rtune probe` of an "application" that leaves FILE as its process's probe output
probe() {
  timeout 60 "$rtune" probe --db "$db" --name "$1" -- sh -c 'cp "$1" "${RTUNE_PROBE_OUT%\%p.json}$$.json"' _ "$2" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
q() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$db" "$1"; }

# a profile of this node, so that `rtune show` has entries to show beside the controllers
python3 - "$profile" "$tmp/profile.json" <<'PY'
import json, os, socket, sys
d = json.load(open(sys.argv[1]))
try:
    mid = open("/etc/machine-id").read().strip()
except OSError:
    mid = ""
d["node"]["hostname"], d["node"]["machine_id"] = socket.gethostname(), mid
json.dump(d, open(sys.argv[2], "w"))
PY
"$rtune" import --db "$db" "$tmp/profile.json" >/dev/null 2>"$tmp/err" || { bad "import of the profile"; cat "$tmp/err"; }

probe oldapp "$fixtures/probe_v1_no_ctl.json"
[ $rc = 0 ] && grep -qF "rtune probe: stored 1 histogram of 'oldapp'" "$tmp/err" &&
  ! grep -q "inline controller" "$tmp/err" && ok "a file without inline_ctl imports its histogram, no controller" ||
  { bad "old file: rc $rc"; cat "$tmp/err"; }
[ "$(q "SELECT count(*) FROM histograms WHERE app = 'oldapp'")" = 1 ] && [ "$(q 'SELECT count(*) FROM inline_ctl')" = 0 ] &&
  ok "old file: 1 histogram row, 0 controller rows" || bad "old file rows"

probe kv "$fixtures/probe_inline_ctl.json"
[ $rc = 0 ] && grep -qF "rtune probe: stored the adaptive inline controller of 2 QPs of 'kv' (rtune show)" "$tmp/err" &&
  ok "rtune probe says it stored 2 controllers" || { bad "kv: rc $rc"; cat "$tmp/err"; }
python3 - "$db" <<'PY' && ok "rows: both QPs, the busy one without figures, the 4 moves as in the file" || bad "rows"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT id, device, qp_type, qp_num, pid, busy, start_bytes, threshold_bytes, min_bytes, max_bytes,"
                 " parked, samples, explored, dropped, rounds, moves_up, moves_down, reverts, created_ns"
                 " FROM inline_ctl WHERE app = 'kv' ORDER BY qp_num").fetchall()
assert len(rows) == 2, rows
rc, ud = rows
assert rc[1:18] == ("mlx5_0", "rc", 17, 4242, 0, 32, 128, 0, 256, 1, 4120, 410, 7, 19, 3, 1, 1), rc
assert ud[1:6] == ("mlx5_0", "ud", 18, 4242, 1) and all(v is None for v in ud[6:18]), ud
moves = c.execute("SELECT seq, at_sample, from_bytes, to_bytes, inline_ns, noinline_ns, revert FROM inline_ctl_moves"
                  " WHERE ctl_id = ? ORDER BY seq", (rc[0],)).fetchall()
assert moves == [(0, 160, 32, 64, 1900, 2400, 0), (1, 480, 64, 128, 2500, 2900, 0), (2, 900, 128, 144, 3300, 3350, 0),
                 (3, 1400, 144, 128, 3420, 3100, 1)], moves
assert c.execute("SELECT count(*) FROM inline_ctl_moves WHERE ctl_id = ?", (ud[0],)).fetchone()[0] == 0
# the same import: the app's histograms carry the controllers' time
hist = {r[0] for r in c.execute("SELECT created_ns FROM histograms WHERE app = 'kv'")}
assert hist == {rc[18]} and ud[18] == rc[18], (hist, rc[18], ud[18])
PY

"$rtune" show --db "$db" >"$tmp/show" 2>"$tmp/err" || { bad "rtune show failed"; cat "$tmp/err"; }
for want in "adaptive inline threshold (each app's latest rtune probe --apply run):" \
  "    mlx5_0 rc qp 17: threshold 128 B from 32 B, 4 moves (3 up, 1 down), 1 revert, parked" \
  "    mlx5_0 ud qp 18: not read (the controller was busy when the probe wrote its file)"; do
  grep -qxF -- "$want" "$tmp/show" && ok "show: '$want'" || { bad "show lacks '$want'"; cat "$tmp/show"; }
done
grep -qE "^  kv, imported [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}Z$" "$tmp/show" && ok "show: the app and when imported" ||
  bad "show lacks kv's line"
grep -q "oldapp" "$tmp/show" && bad "show lists oldapp, which had no controller" || ok "show: no line for oldapp"

"$rtune" show --db "$db" --json >"$tmp/show.json" 2>"$tmp/err" || { bad "rtune show --json failed"; cat "$tmp/err"; }
python3 - "$tmp/show.json" <<'PY' && ok "show --json: rtune-show 1.2 with kv's controllers and moves" || bad "show --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == {"name": "rtune-show", "version": "1.2"}, d["schema"]
assert len(d["entries"]) > 0
[app] = d["inline_ctl"]
assert app["app"] == "kv" and app["imported_at"].endswith("Z") and app["imported_ns"] > 0, app
rc, ud = app["qps"]
want = {"device": "mlx5_0", "qp_type": "rc", "qp_num": 17, "pid": 4242, "busy": False, "start_bytes": 32,
        "threshold_bytes": 128, "min_bytes": 0, "max_bytes": 256, "samples": 4120, "explored": 410, "dropped": 7,
        "rounds": 19, "moves_up": 3, "moves_down": 1, "reverts": 1, "parked": True}
assert {k: rc[k] for k in want} == want, rc
assert [(m["at_sample"], m["from_bytes"], m["to_bytes"], m["inline_ns"], m["noinline_ns"], m["revert"])
        for m in rc["moves"]] == [(160, 32, 64, 1900, 2400, False), (480, 64, 128, 2500, 2900, False),
                                  (900, 128, 144, 3300, 3350, False), (1400, 144, 128, 3420, 3100, True)], rc["moves"]
assert ud["busy"] is True and ud["threshold_bytes"] is None and ud["moves"] == [], ud
PY

# a later run of kv: show lists that run's controllers only
sed 's/"qp_num":17/"qp_num":31/; s/"threshold":128/"threshold":96/' "$fixtures/probe_inline_ctl.json" >"$tmp/later.json"
sleep 0.01
probe kv "$tmp/later.json"
"$rtune" show --db "$db" >"$tmp/show" 2>"$tmp/err"
grep -qF "mlx5_0 rc qp 31: threshold 96 B from 32 B" "$tmp/show" && ! grep -q "qp 17:" "$tmp/show" &&
  ok "a later run of kv replaces the earlier one in show" || { bad "later run"; cat "$tmp/show"; }
[ "$(q "SELECT count(*) FROM inline_ctl WHERE app = 'kv'")" = 4 ] && ok "the earlier run's rows are kept" ||
  bad "earlier rows lost"

# an app with 10 controlled QPs: the text shows 8 and counts the rest, --json has all 10
python3 - "$fixtures/probe_inline_ctl.json" "$tmp/many.json" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
q = d["qps"][0]
d["qps"] = [dict(copy.deepcopy(q), id=i, qp_num=100 + i) for i in range(10)]
json.dump(d, open(sys.argv[2], "w"))
PY
probe many "$tmp/many.json"
"$rtune" show --db "$db" >"$tmp/show" 2>"$tmp/err"
"$rtune" show --db "$db" --json >"$tmp/show.json" 2>>"$tmp/err"
[ "$(grep -c "^    mlx5_0 rc qp 10[0-9]: threshold 128 B" "$tmp/show")" = 8 ] &&
  grep -qxF "    and 2 more QPs (rtune show --json)" "$tmp/show" &&
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
[a] = [a for a in d["inline_ctl"] if a["app"] == "many"]
assert [q["qp_num"] for q in a["qps"]] == list(range(100, 110)), a' "$tmp/show.json" &&
  ok "10 QPs: 8 lines and '2 more' in the text, all 10 in --json" || { bad "10 QPs"; cat "$tmp/show" "$tmp/err"; }

[ $fails = 0 ] && echo "all ok" || { echo "$fails failed"; exit 1; }
