#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune tune` on runs with a planted per-size inline gain (hyst_fill), checking four things. The store keeps every
# reason and the profile keeps one explanation per decision before any warning. Each decision publishes its own
# confidence (schema 1.2). A tune without RUN takes the newest complete run and says which (a newer interrupted run
# is skipped, a running one refused when named). Hysteresis: a run one size step away with only indifferent evidence
# keeps the decision and counts as its evidence, a run whose own evidence contradicts it replaces it, --dry-run
# shows either without storing, --force takes the run's value, a kept answer's confidence rises when a run finds the
# same answer with a higher one and never falls while kept, and `rtune history` shows drift only for the real change.
set -uo pipefail
rtune=$1
fill=$2
dir=$(mktemp -d)
bg=
trap '[ -n "$bg" ] && kill "$bg" 2>/dev/null; rm -rf "$dir"' EXIT
fails=0
pass=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
sendrc() { # the send/rc entry's field $2 in profile document $1
  python3 -c "import json,sys; [e]=[e for e in json.load(open(sys.argv[1]))['entries'] if e['opcode']=='send' and e['qp_type']=='rc']; print(e[sys.argv[2]] if sys.argv[2] in e else '')" "$1" "$2"
}

# the planted curves: inline wins by 200 ns up to 128 B and loses by 200 ns above (threshold 128 B) ...
A=200,200,200,200,-200,-200,-200
# ... the same, but 256 B is the same inline or not: the run says 256 B, one step away, on indifferent evidence
B=200,200,200,200,0,-200,-200
# ... inline loses from 64 B: a significant loss at 64 and 128 B contradicts 128 B
C=200,200,-200,-200,-200,-200,-200

# ---- issue 15.7: every reason in the store, one explanation per decision in the profile ----
db=$dir/r.db
"$fill" "$db" 200,3,200,5,200,-1,-200 complete warn > /dev/null || { echo "FAIL hyst_fill"; exit 1; }
"$rtune" tune --db "$db" --json > "$dir/tune.json" 2> "$dir/err" || bad "tune (warn run): $(cat "$dir/err")"
"$rtune" export --db "$db" -o "$dir/p.json" 2> "$dir/err" || bad "export: $(cat "$dir/err")"
"$rtune" show --db "$db" --json > "$dir/show.json" 2> "$dir/err" || bad "show: $(cat "$dir/err")"
python3 - "$dir/tune.json" "$dir/p.json" "$dir/show.json" <<'PY' && ok reasons-kept || bad reasons-kept
import json, sys
tune, prof, show = (json.load(open(p)) for p in sys.argv[1:])
[d] = [x for x in tune["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
codes = [r["code"] for r in d["reasons"]]
print("tune printed", len(codes), "reasons:", codes)
assert len(codes) >= 10, codes
assert sum(r["severity"] == "warn" for r in d["reasons"]) >= 3, codes
[e] = prof["entries"]
pc = [r["code"] for r in e["reasons"]]
print("profile keeps", pc)
assert len(pc) <= 8, pc
for want in ("inline_threshold", "signal_interval", "queue_depths", "cq_moderation"):
    assert want in pc, (want, pc)
# one explanation per decision comes before any warning
warn = {r["code"] for r in d["reasons"] if r["severity"] == "warn"}
first_warn = min(i for i, c in enumerate(pc) if c in warn)
assert all(pc.index(c) < first_warn for c in ("inline_threshold", "signal_interval", "queue_depths", "cq_moderation")), pc
[s] = show["entries"]
sc = [r["code"] for r in s["reasons"]]
assert sc[:len(codes)] == codes, (sc, codes)  # show lists every stored reason, in the tuner's order
PY
n=$(sqlite3 "$db" "SELECT json_array_length(reasons) FROM profiles WHERE op='send' AND qpt='rc'")
[ "$n" -ge 10 ] && ok "store-keeps-every-reason ($n)" || bad "store-keeps-every-reason: $n"
"$rtune" show --db "$db" > "$dir/show.txt" && grep -q -- '- cq_moderation: ' "$dir/show.txt" && grep -q -- '- queue_depths: ' "$dir/show.txt" \
  && grep -q -- '- signal_interval: ' "$dir/show.txt" && ok show-text-reasons || bad show-text-reasons

# ---- issue 15.8: each decision's confidence in the profile (1.2) ----
python3 - "$dir/tune.json" "$dir/p.json" <<'PY' && ok per-decision-confidence || bad per-decision-confidence
import json, sys
tune, prof = (json.load(open(p)) for p in sys.argv[1:])
[d] = [x for x in tune["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
[e] = prof["entries"]
assert prof["schema"]["version"] == "1.4", prof["schema"]
assert e["inline_confidence"] == d["inline_confidence"] and e["signal_confidence"] == d["signal_confidence"], (e, d)
assert e["confidence"] == d["confidence"]
assert e["evidence"]["inline"]["runs"] == 1 and e["evidence"]["inline"]["since_run"] == e["run_id"]
PY

# a UD entry (no rate sweep) keeps its own inline confidence instead of the signal decision's "low"
db=$dir/u.db
"$fill" "$db" "$A" complete ud > /dev/null && "$rtune" tune --db "$db" --json > "$dir/ud.json" && "$rtune" export --db "$db" -o "$dir/ud-p.json" \
  && python3 - "$dir/ud.json" "$dir/ud-p.json" <<'PY' && ok ud-inline-confidence || bad ud-inline-confidence
import json, sys
tune, prof = (json.load(open(p)) for p in sys.argv[1:])
[d] = [x for x in tune["decisions"] if x["qp_type"] == "ud"]
[e] = [x for x in prof["entries"] if x["qp_type"] == "ud"]
print("ud: confidence", e["confidence"], "inline", e["inline_confidence"], "signal", e["signal_confidence"])
assert d["signal_measured"] is False and e["signal_confidence"] == "low" and e["confidence"] == "low"
assert e["inline_confidence"] == d["inline_confidence"] != "low", (e, d["inline_confidence"])
PY

# ---- issue 15.9: the newest complete run, said so; a newer interrupted run skipped ----
db=$dir/s.db
read -r id1 _ < <("$fill" "$db" "$A")
read -r id2 _ < <("$fill" "$db" "$A" interrupted)
"$rtune" tune --db "$db" --dry-run > "$dir/sel.txt" 2> "$dir/err" && grep -q "(id $id1, complete, the newest complete run)" "$dir/sel.txt" \
  && grep -q "skipped 1 newer run that did not complete: $id2 (interrupted)" "$dir/sel.txt" && [ ! -s "$dir/err" ] \
  && ok newest-complete-text || bad "newest-complete-text: $(head -3 "$dir/sel.txt") $(cat "$dir/err")"
"$rtune" tune --db "$db" --dry-run --json > "$dir/sel.json" && python3 - "$dir/sel.json" "$id1" "$id2" <<'PY' && ok newest-complete-json || bad newest-complete-json
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run_number"] == int(sys.argv[2]) and d["run_status"] == "complete" and d["run_selected"] == "newest_complete", d
assert d["skipped_runs"] == [{"run_number": int(sys.argv[3]), "status": "interrupted"}], d["skipped_runs"]
PY
"$rtune" tune --db "$db" --dry-run "$id2" > /dev/null 2> "$dir/err"; rc=$?
[ $rc = 0 ] && grep -q "rtune: warning: run '$id2' is interrupted" "$dir/err" && ok named-interrupted-warned \
  || bad "named-interrupted-warned: exit $rc, $(cat "$dir/err")"
db=$dir/i.db
"$fill" "$db" "$A" interrupted > /dev/null
"$rtune" tune --db "$db" > /dev/null 2> "$dir/err"; rc=$?
[ $rc = 1 ] && grep -q "no complete calibration run in store '$db' (the newest, run 1, is interrupted)" "$dir/err" \
  && [ "$(wc -l < "$dir/err")" = 1 ] && ok only-interrupted-refused || bad "only-interrupted-refused: exit $rc, $(cat "$dir/err")"
mkfifo "$dir/hold"
"$fill" "$dir/s.db" "$A" running < "$dir/hold" > "$dir/running.out" &
bg=$!
exec 9> "$dir/hold"
for _ in $(seq 1 100); do [ -s "$dir/running.out" ] && break; sleep 0.1; done
read -r id3 _ < "$dir/running.out"
"$rtune" tune --db "$dir/s.db" "$id3" > /dev/null 2> "$dir/err"; rc=$?
[ $rc = 1 ] && grep -q "run '$id3' is still running" "$dir/err" && ok named-running-refused || bad "named-running-refused: exit $rc, $(cat "$dir/err")"
"$rtune" tune --db "$dir/s.db" --dry-run --json > "$dir/sel2.json" && python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); assert d['run_number']==int(sys.argv[2]), d['run_number']
assert [s['status'] for s in d['skipped_runs']]==['running','interrupted'], d['skipped_runs']" "$dir/sel2.json" "$id1" \
  && ok running-skipped || bad running-skipped
exec 9>&-
wait "$bg"
bg=

# ---- issue 14.4: hysteresis ----
db=$dir/h.db
read -r _ uuid_a < <("$fill" "$db" "$A")
"$rtune" tune --db "$db" > /dev/null 2> "$dir/err" || bad "tune A: $(cat "$dir/err")"
"$rtune" export --db "$db" -o "$dir/a.json"
[ "$(sendrc "$dir/a.json" inline_threshold)" = 128 ] && ok planted-a || bad "planted-a: $(sendrc "$dir/a.json" inline_threshold)"
read -r _ uuid_b < <("$fill" "$db" "$B")
"$rtune" tune --db "$db" --dry-run --json > "$dir/b-dry.json"
python3 - "$dir/b-dry.json" <<'PY' && ok dry-run-shows-kept || bad dry-run-shows-kept
import json, sys
doc = json.load(open(sys.argv[1]))
[d] = [x for x in doc["decisions"] if x["opcode"] == "send" and x["qp_type"] == "rc"]
p = d["profile"]
print("run B says", d["inline_threshold"], "->", p["inline"])
assert d["inline_threshold"] == 256 and doc["stored"] is False
assert p["inline_threshold"] == 128 and p["inline"]["action"] == "kept" and p["inline"]["run_value"] == 256
assert p["inline"]["runs"] == 2 and "within the between-run noise" in p["inline"]["why"]
assert p["signal"]["action"] == "kept"
PY
"$rtune" tune --db "$db" > "$dir/b.txt" 2> "$dir/err" || bad "tune B: $(cat "$dir/err")"
grep -q "inline_threshold 128 B kept (was 128 B, this run 256 B; 2 runs since ${uuid_a:0:8})" "$dir/b.txt" \
  && ok tune-says-kept || bad "tune-says-kept: $(grep -A2 '^profile' "$dir/b.txt")"
"$rtune" export --db "$db" -o "$dir/b.json"
python3 - "$dir/b.json" "$uuid_a" "$uuid_b" <<'PY' && ok kept-with-evidence || bad kept-with-evidence
import json, sys
[e] = [e for e in json.load(open(sys.argv[1]))["entries"] if e["opcode"] == "send" and e["qp_type"] == "rc"]
assert e["inline_threshold"] == 128 and e["max_inline_data"] == 128, e
assert e["evidence"]["inline"] == {"runs": 2, "since_run": sys.argv[2]}, e["evidence"]
assert e["evidence"]["signal"]["runs"] == 2 and e["run_id"] == sys.argv[3]
assert any(r["code"] == "decision_kept" for r in e["reasons"]), e["reasons"]
PY
if python3 -c "import jsonschema" 2>/dev/null; then
  python3 -c "import json, jsonschema, sys; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))" \
    "$dir/b.json" "$(dirname "$0")/../../../docs/profile-v1.schema.json" && ok kept-profile-validates || bad kept-profile-validates
fi
"$rtune" export --db "$db" --format prometheus > "$dir/b.prom"
grep -q '^rtune_inline_evidence_runs{node="hyst-host",device="mlx5_0",port="1",opcode="send",qp_type="rc"} 2$' "$dir/b.prom" \
  && grep -q '^rtune_signal_confidence{.*qp_type="rc"} 2$' "$dir/b.prom" && ok prometheus-evidence || bad prometheus-evidence
"$rtune" history --db "$db" > "$dir/h1.txt"
grep -E "^2 .* 128 B .*no drift: evidence for 128 B \(2 runs\)" "$dir/h1.txt" > /dev/null && ! grep -q "threshold .*->" "$dir/h1.txt" \
  && ok history-no-drift || bad "history-no-drift: $(cat "$dir/h1.txt")"

read -r _ uuid_c < <("$fill" "$db" "$C")
"$rtune" tune --db "$db" --dry-run > "$dir/c-dry.txt"
grep -q "inline_threshold 32 B replaced (was 128 B, this run 32 B" "$dir/c-dry.txt" && grep -q "64 B is a significant inline loss in this run" "$dir/c-dry.txt" \
  && [ "$(sqlite3 "$db" "SELECT count(*) FROM profiles WHERE run_uuid='$uuid_c'")" = 0 ] \
  && ok dry-run-shows-replaced || bad "dry-run-shows-replaced: $(grep -A2 '^profile' "$dir/c-dry.txt")"
"$rtune" tune --db "$db" > /dev/null 2> "$dir/err" || bad "tune C: $(cat "$dir/err")"
"$rtune" export --db "$db" -o "$dir/c.json"
[ "$(sendrc "$dir/c.json" inline_threshold)" = 32 ] && ok contradicting-loss-replaces || bad "contradicting-loss-replaces: $(sendrc "$dir/c.json" inline_threshold)"
"$rtune" history --db "$db" > "$dir/h2.txt"
[ "$(grep -c 'threshold .*->.* B replaced' "$dir/h2.txt")" = 1 ] && grep -E "^3 .* 32 B .*threshold 128->32 B replaced: 64 B is a significant inline loss" "$dir/h2.txt" > /dev/null \
  && ok history-one-change || bad "history-one-change: $(cat "$dir/h2.txt")"
"$rtune" history --db "$db" --json > "$dir/h2.json" && python3 - "$dir/h2.json" <<'PY' && ok history-json-drift || bad history-json-drift
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [r["drift"] is None for r in runs] == [True, True, False], [r["drift"] for r in runs]
assert runs[1]["decision"]["inline"]["action"] == "kept" and runs[1]["decision"]["inline"]["run_value"] == 256
d = runs[2]["drift"]
assert d["inline_threshold_from"] == 128 and d["inline_threshold_to"] == 32 and "significant inline loss" in d["inline_why"], d
assert d["signal_why"] is None
PY

# --force takes the run's value even where the hysteresis would keep the current one
db=$dir/f.db
"$fill" "$db" "$A" > /dev/null && "$rtune" tune --db "$db" > /dev/null
"$fill" "$db" "$B" > /dev/null && "$rtune" tune --db "$db" --force --json > "$dir/f.json"
"$rtune" export --db "$db" -o "$dir/fp.json"
[ "$(sendrc "$dir/fp.json" inline_threshold)" = 256 ] && python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); [x]=[x for x in d['decisions'] if x['opcode']=='send']
assert d['forced'] is True and x['profile']['inline']['action']=='forced', x['profile']" "$dir/f.json" \
  && ok force-replaces || bad "force-replaces: $(sendrc "$dir/fp.json" inline_threshold)"
"$rtune" tune --db "$db" --replace --dry-run > /dev/null && ok replace-alias || bad replace-alias

# the same answer again: a kept decision's confidence rises to a run's higher one (with that run's reasons) and does
# not fall back when a later run says the same answer with a lower one (docs/tuner.md "Hysteresis")
H=0,0,0,0,-200,-200,-200 # no size gains, a loss from 256 B: 128 B "where it does not matter", medium
db=$dir/r2.db
for shape in "$H" "$A" "$H"; do
  "$fill" "$db" "$shape" > /dev/null && "$rtune" tune --db "$db" --json > "$dir/r2.json" 2> "$dir/err" || bad "tune $shape: $(cat "$dir/err")"
  python3 -c "
import json,sys; [x]=[x for x in json.load(open(sys.argv[1]))['decisions'] if x['opcode']=='send' and x['qp_type']=='rc']
p=x['profile']; print(x['inline_threshold'], x['inline_confidence'], p['inline_threshold'], p['inline_confidence'], p['inline']['runs'])
print(p['inline']['why'])" "$dir/r2.json" >> "$dir/r2.txt"
done
python3 - "$dir/r2.txt" <<'PY' && ok confidence-rises-and-repeats || bad "confidence-rises-and-repeats: $(cat "$dir/r2.txt")"
import sys
l = open(sys.argv[1]).read().splitlines()
assert l[0] == "128 medium 128 medium 1", l
assert l[2] == "128 high 128 high 2", l                       # the same 128 B, this run high: raised
assert "rises from medium to this run's high" in l[3], l
assert l[4] == "128 medium 128 high 3", l                     # a later medium run: still high, one more run
assert "rises" not in l[5], l
PY
"$rtune" export --db "$db" -o "$dir/r2p.json" && python3 -c "
import json,sys; [e]=[e for e in json.load(open(sys.argv[1]))['entries'] if e['opcode']=='send' and e['qp_type']=='rc']
t=[r['text'] for r in e['reasons'] if r['code']=='inline_threshold']
assert e['inline_confidence']=='high' and t and 'does not matter' not in t[0], (e['inline_confidence'], t)" "$dir/r2p.json" \
  && ok raised-confidence-keeps-its-reasons || bad raised-confidence-keeps-its-reasons

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
