#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune tune` against known answers: a store holding a run with a planted inline crossover and signaling knee
# (tune_fill) is tuned; the threshold lands within one measured size step of the planted one and N within one power of
# two, the profile is stored (rtune show finds it, a second tune adds nothing), --app weights by a stored histogram,
# and the error paths (empty store, unknown run, unknown app, bad options) give one line and the documented exit code.
set -uo pipefail
rtune=$1
fill=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
pass=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

read -r _ thr n grid < <("$fill" "$dir/t.db" 7) || { echo "FAIL tune_fill"; exit 1; }
echo "planted threshold $thr, N $n, grid $grid"

if "$rtune" tune --db "$dir/t.db" --json > "$dir/tune.json" 2> "$dir/err"; then ok tune-json; else bad "tune-json: $(cat "$dir/err")"; fi
python3 - "$dir/tune.json" "$thr" "$n" "$grid" <<'PY' && ok tune-answers || bad tune-answers
import json, math, sys
doc = json.load(open(sys.argv[1]))
thr, n = int(sys.argv[2]), int(sys.argv[3])
grid = [0] + [int(x) for x in sys.argv[4].split(",")]
[d] = [x for x in doc["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
got = d["inline_threshold"]
steps = abs(grid.index(got) - grid.index(thr)) if got in grid else 99
print("tuned threshold", got, "N", d["signal_interval"], "confidence", d["confidence"])
assert steps <= 1, (got, thr)
assert abs(math.log2(d["signal_interval"]) - math.log2(n)) <= 1, (d["signal_interval"], n)
assert d["max_inline_data"] >= got
assert doc["stored"] is True and doc["device"] == "mlx5_0"
assert all(r["code"] and r["text"] for r in d["reasons"])
assert any(r["code"] == "inline_threshold" for r in d["reasons"])
PY
"$rtune" show --db "$dir/t.db" --json > "$dir/show.json" 2> "$dir/err" && python3 - "$dir/show.json" "$dir/tune.json" <<'PY' && ok show-finds-profile || bad "show-finds-profile: $(cat "$dir/err")"
import json, sys
show = json.dumps(json.load(open(sys.argv[1])))
tune = json.load(open(sys.argv[2]))
[d] = [x for x in tune["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
assert tune["schema"] == {"name": "rtune-tune", "version": "1.0"}, tune["schema"]
assert isinstance(tune["run_number"], int) and tune["run_id"] in show, "run id (uuid) not in show"
assert '"inline_threshold": %d' % d["inline_threshold"] in show
PY
"$rtune" tune --db "$dir/t.db" --app kv --json --dry-run > "$dir/app.json" 2> "$dir/err" && python3 - "$dir/app.json" <<'PY' && ok tune-app-dry-run || bad "tune-app-dry-run: $(cat "$dir/err")"
import json, sys
doc = json.load(open(sys.argv[1]))
[d] = [x for x in doc["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
assert doc["app"] == "kv" and doc["stored"] is False
assert d["gain_from_histogram"] is True
PY
"$rtune" show --db "$dir/t.db" --json | grep -q '"app": "kv"' && bad "dry-run stored the app profile" || ok dry-run-stores-nothing
# re-tuning the same run for the app replaces the earlier tuning of that run (one current entry, weighted by kv)
"$rtune" tune --db "$dir/t.db" --app kv > "$dir/out2" 2>&1 && grep -q 'replacing any earlier tuning of this run' "$dir/out2" \
  && ok tune-app-stored || bad "tune-app-stored: $(tail -2 "$dir/out2")"
"$rtune" show --db "$dir/t.db" --json > "$dir/show2.json" && python3 - "$dir/show2.json" <<'PY' && ok retune-replaces || bad retune-replaces
import json, sys
text = json.dumps(json.load(open(sys.argv[1])))
assert text.count('"app": "kv"') >= 1, "app-weighted entry not current"
PY
n_rows=$(sqlite3 "$dir/t.db" "SELECT count(*) FROM profiles WHERE op='send' AND qpt='rc'")
[ "$n_rows" = 1 ] && ok retune-one-row || bad "retune-one-row: $n_rows rows for send/rc"

expect() { # name want-exit pattern -- cmd...
  local name=$1 want=$2 pat=$3
  shift 4
  "$@" > /dev/null 2> "$dir/err"
  local got=$?
  # one line naming the thing, usage errors (2) included
  local lines=1
  if [ "$got" = "$want" ] && grep -qF -- "$pat" "$dir/err" && [ "$(wc -l < "$dir/err")" = "$lines" ]; then ok "$name"
  else bad "$name: exit $got (want $want), stderr: $(cat "$dir/err")"; fi
}
expect unknown-app 1 "no histogram of application 'nosuch'" -- "$rtune" tune --db "$dir/t.db" --app nosuch
expect unknown-run 1 "99999" -- "$rtune" tune --db "$dir/t.db" 99999
expect no-store 1 "no store at '$dir/none.db'" -- "$rtune" tune --db "$dir/none.db"
[ ! -e "$dir/none.db" ] && ok no-store-not-created || bad no-store-not-created
expect bad-tolerance 2 "rtune tune: option '--tolerance' takes a percentage in (0, 50), not '0'" -- "$rtune" tune --db "$dir/t.db" --tolerance 0
expect bad-seed 2 "rtune tune: option '--seed' takes a number, not 'x'" -- "$rtune" tune --db "$dir/t.db" --seed x
expect extra-arg 2 "unexpected argument 'b'" -- "$rtune" tune --db "$dir/t.db" a b
printf 'not a database at all' > "$dir/junk.db"
cp "$dir/junk.db" "$dir/junk.orig"
expect not-a-db 1 "not a database" -- "$rtune" tune --db "$dir/junk.db"
cmp -s "$dir/junk.db" "$dir/junk.orig" && ok not-a-db-untouched || bad not-a-db-untouched
echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
