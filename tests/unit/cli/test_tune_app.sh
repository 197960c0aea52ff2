#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune tune --app` against stored application histograms (app_fill): each entry is weighted by the histogram of its
# own (opcode, QP type) - a UD-only app weights the UD entry and leaves the RC one to the measured curves, saying so;
# only entries a histogram weighted carry the app's name in the profile; the threshold is a size the app sends (64, not
# the top 71 of the probe's 64..71 bucket); the signaling interval is raised to the app's post-list batch and its
# SQ-full ENOMEM events become a warning.
set -uo pipefail
rtune=$1
fill=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
pass=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

read -r _ thr n < <("$fill" "$dir/a.db" 7) || { echo "FAIL app_fill"; exit 1; }
echo "planted threshold $thr, N $n"
[ "$thr" -ge 128 ] && [ "$n" -lt 64 ] || { echo "FAIL app_fill: seed 7 no longer plants a threshold >= 128 and N < 64"; exit 1; }

tune() { # NAME APP: tune --json --dry-run into $dir/NAME.json
	"$rtune" tune --db "$dir/a.db" --app "$2" --json --dry-run > "$dir/$1.json" 2> "$dir/$1.err"
}

# a UD-only app: the UD entry is weighted by its UD histogram, the RC entry says the app sent nothing there
if tune ud udapp; then ok "ud-only app tunes"; else bad "ud-only app: $(cat "$dir/ud.err")"; fi
python3 - "$dir/ud.json" <<'PY' && ok ud-entry-weighted || bad ud-entry-weighted
import json, sys
doc = json.load(open(sys.argv[1]))
by = {(d["opcode"], d["qp_type"]): d for d in doc["decisions"]}
ud, rc = by[("send", "ud")], by[("send", "rc")]
codes = lambda d: [r["code"] for r in d["reasons"]]
print("ud threshold", ud["inline_threshold"], "rc threshold", rc["inline_threshold"])
assert ud["gain_from_histogram"] is True, ud
assert "histogram_threshold" in codes(ud), codes(ud)
assert "app_sent_nothing" not in codes(ud)
assert ud["inline_threshold"] == 64, ud["inline_threshold"]   # the size it sends, not 71
assert ud["max_inline_data"] == 64, ud["max_inline_data"]
assert rc["gain_from_histogram"] is False, rc
assert "histogram_threshold" not in codes(rc)
[t] = [r["text"] for r in rc["reasons"] if r["code"] == "app_sent_nothing"]
assert "udapp" in t and "send on rc" in t, t
PY

# an RC-only app: the UD entry claims nothing about the app's messages
if tune rc rcapp; then ok "rc-only app tunes"; else bad "rc-only app: $(cat "$dir/rc.err")"; fi
python3 - "$dir/rc.json" <<'PY' && ok rc-only-no-ud-claim || bad rc-only-no-ud-claim
import json, sys
doc = json.load(open(sys.argv[1]))
by = {(d["opcode"], d["qp_type"]): d for d in doc["decisions"]}
ud, rc = by[("send", "ud")], by[("send", "rc")]
texts = " ".join(r["text"] for r in ud["reasons"])
assert ud["gain_from_histogram"] is False, ud
assert "of the app's" not in texts and "inlined" not in texts, texts
assert any(r["code"] == "app_sent_nothing" for r in ud["reasons"])
assert rc["gain_from_histogram"] is True and rc["inline_threshold"] == 64, rc["inline_threshold"]
PY

# stored: only the entry the histogram weighted carries the app's name
"$rtune" tune --db "$dir/a.db" --app udapp > "$dir/store.out" 2>&1 || bad "tune --app udapp (stored): $(tail -1 "$dir/store.out")"
"$rtune" show --db "$dir/a.db" --json > "$dir/show.json" 2> "$dir/show.err" && python3 - "$dir/show.json" <<'PY' && ok stamped-only-where-used || bad "stamped-only-where-used: $(cat "$dir/show.err")"
import json, sys
def entries(o):
    if isinstance(o, dict):
        if "opcode" in o and "qp_type" in o and "inline_threshold" in o:
            yield o
        for v in o.values():
            yield from entries(v)
    elif isinstance(o, list):
        for v in o:
            yield from entries(v)
es = {(e["opcode"], e["qp_type"]): e for e in entries(json.load(open(sys.argv[1])))}
assert es[("send", "ud")].get("app") == "udapp", es[("send", "ud")]
assert es[("send", "rc")].get("app") in (None, ""), es[("send", "rc")]
PY
n_app=$(sqlite3 "$dir/a.db" "SELECT count(*) FROM profiles WHERE app = 'udapp' AND histogram_id IS NOT NULL AND qpt = 'ud'")
n_rc=$(sqlite3 "$dir/a.db" "SELECT count(*) FROM profiles WHERE app = 'udapp' AND qpt = 'rc'")
[ "$n_app" = 1 ] && [ "$n_rc" = 0 ] && ok profile-histogram-link || bad "profile-histogram-link: ud $n_app, rc $n_rc"

# post-list batch and SQ-full events
if tune batch batchy; then ok "batchy app tunes"; else bad "batchy: $(cat "$dir/batch.err")"; fi
python3 - "$dir/batch.json" <<'PY' && ok batch-and-sq-full || bad batch-and-sq-full
import json, sys
doc = json.load(open(sys.argv[1]))
by = {(d["opcode"], d["qp_type"]): d for d in doc["decisions"]}
rc = by[("send", "rc")]
codes = {r["code"]: r for r in rc["reasons"]}
print("batchy N", rc["signal_interval"], "sq_depth", rc["sq_depth"])
assert rc["signal_interval"] == 64, rc["signal_interval"]
assert "signal_raised_to_batch" in codes and "batch of 64" in codes["signal_raised_to_batch"]["text"]
sq = codes["app_sq_full"]
assert sq["severity"] == "warn" and "full 7 times in 100 post calls" in sq["text"] and "hold 32 WRs" in sq["text"], sq
assert "sq_depth %d" % rc["sq_depth"] in sq["text"], sq
# the UD entry (nothing sent there) gets neither
ud = by[("send", "ud")]
assert not any(r["code"] in ("app_sq_full", "signal_raised_to_batch") for r in ud["reasons"])
PY
# single-WR posts: N is the measured one, no raise, no warning
python3 - "$dir/rc.json" <<'PY' && ok no-batch-no-raise || bad no-batch-no-raise
import json, sys
rc = [d for d in json.load(open(sys.argv[1]))["decisions"] if (d["opcode"], d["qp_type"]) == ("send", "rc")][0]
assert not any(r["code"] in ("app_sq_full", "signal_raised_to_batch") for r in rc["reasons"]), rc["reasons"]
PY

# a histogram stored without the largest sizes (an older rtune): the bucket's top, as before
if tune old oldapp; then ok "old histogram tunes"; else bad "old histogram: $(cat "$dir/old.err")"; fi
python3 - "$dir/old.json" <<'PY' && ok old-histogram-bucket-top || bad old-histogram-bucket-top
import json, sys
rc = [d for d in json.load(open(sys.argv[1]))["decisions"] if (d["opcode"], d["qp_type"]) == ("send", "rc")][0]
assert rc["inline_threshold"] == 71, rc["inline_threshold"]
PY

# no histogram at all: one line, exit 1
"$rtune" tune --db "$dir/a.db" --app nosuch > /dev/null 2> "$dir/err"
rc=$?
[ "$rc" = 1 ] && grep -q "no histogram of application 'nosuch'" "$dir/err" && [ "$(wc -l < "$dir/err")" = 1 ] &&
	ok unknown-app || bad "unknown-app: exit $rc, $(cat "$dir/err")"
echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
