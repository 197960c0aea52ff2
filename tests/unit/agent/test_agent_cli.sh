#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune agent`, `rtune pin`, `rtune unpin` end to end without a device (the unit tier): profiles of this node are
# imported into a store and `rtune agent --once` publishes them; a pin is published instead of the measured value
# and shown by `rtune show`; a newer low-confidence run does not replace a published confident value, a newer confident
# one does; every published change is recorded in the store; --dry-run writes nothing; a bad configuration line exits
# 2 with FILE:LINE; pin/unpin usage errors exit 2.
set -uo pipefail
rtune=$1
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
check() { if "${@:2}" >/dev/null 2>&1; then ok "$1"; else bad "$1"; fi; }
db=$tmp/s.db
prof=$tmp/pub/profile.json
mkdir -p "$tmp/pub"
cat > "$tmp/agent.conf" <<CONF
store = $db
publish_profile = $prof
devices = fakeNIC0
CONF
# doc PATH THRESHOLD CONFIDENCE MEASURED_AT: a profile of this node for fakeNIC0 port 1 send/rc and write/rc
doc() {
	python3 - "$@" <<'PY'
import json, socket, sys, uuid
path, thr, conf, when = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    mid = open("/etc/machine-id").read().strip()
except OSError:
    mid = ""
run = str(uuid.uuid4())
e = lambda op: {"device": "fakeNIC0", "guid": None, "port": 1, "opcode": op, "qp_type": "rc", "inline_threshold": thr,
    "max_inline_data": 256, "signal_interval": 16, "sq_depth": 256, "cq_depth": 256, "cq_moderation": None,
    "numa_node": -1, "cpus": "0", "confidence": conf, "inline_confidence": conf, "signal_confidence": conf,
    "reasons": [{"code": "hand_written", "text": "unit tier"}], "measured_at": when, "run_id": run, "app": None}
doc = {"schema": {"name": "rtune-profile", "version": "1.2"}, "rtune_version": "0.1.0",
       "node": {"hostname": socket.gethostname(), "machine_id": mid, "cpu_count": 2, "numa_nodes": 1},
       "entries": [e("send"), e("write")]}
json.dump(doc, open(path, "w"), indent=2)
PY
}
field() { # field PROFILE OPCODE KEY
	python3 -c "
import json,sys; d=json.load(open('$1'))
print([e for e in d['entries'] if e['device']=='fakeNIC0' and e['opcode']=='$2'][0]['$3'])"
}

doc "$tmp/p1.json" 128 high 2026-11-01T00:00:00Z
"$rtune" import --db "$db" "$tmp/p1.json" > /dev/null || bad "import of the first profile"
"$rtune" agent --config "$tmp/agent.conf" --once --dry-run > "$tmp/dry.log" 2>&1
check "--dry-run exits 0" test $? -eq 0
check "--dry-run writes no profile" test ! -e "$prof"
check "--dry-run logs what it would publish" grep -q "dry run: would publish fakeNIC0/1 send/rc" "$tmp/dry.log"
check "--dry-run records no publication" test "$(sqlite3 "$db" 'SELECT count(*) FROM agent_publications')" = 0

"$rtune" agent --config "$tmp/agent.conf" --once > "$tmp/a1.log" 2>&1
check "--once exits 0" test $? -eq 0
check "the profile is published" test -f "$prof"
check "the published profile has the stored threshold" test "$(field "$prof" send inline_threshold)" = 128
check "the publication is logged with its reason" grep -q "publish fakeNIC0/1 send/rc: inline_threshold 128 (high).*first" "$tmp/a1.log"
check "the publication is recorded in the store" test "$(sqlite3 "$db" "SELECT count(*) FROM agent_publications WHERE device = 'fakeNIC0' AND change = 'first'")" = 2
check "the published file is mode 0644" test "$(stat -c %a "$prof")" = 644
"$rtune" history --db "$db" > "$tmp/hist.txt" 2>&1
check "rtune history lists the publication" grep -q "^  [0-9-]* [0-9:]*Z fakeNIC0/1 send/rc: inline_threshold 128 B, N [0-9]* (first): " "$tmp/hist.txt"
"$rtune" history fakeNIC0 --db "$db" --json > "$tmp/hist.json"
check "rtune history --json lists the publications of the device" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = [x for x in d['publications'] if x['device'] == 'fakeNIC0' and x['change'] == 'first']
assert d['schema']['version'] == '1.1' and len(p) == 2 and not any(x['dry_run'] for x in p), d['publications']
assert {x['opcode'] for x in p} == {'send', 'write'} and p[0]['reason'] and p[0]['at_ns'] > 0, p" "$tmp/hist.json"
"$rtune" history nosuchdev --db "$db" --json > "$tmp/hist2.json"
check "rtune history of another device lists none" python3 -c "
import json, sys; sys.exit(len(json.load(open(sys.argv[1]))['publications']) != 0)" "$tmp/hist2.json"

"$rtune" pin fakeNIC0:1 send/rc inline_threshold=64 --db "$db" > /dev/null || bad "rtune pin"
"$rtune" show --db "$db" > "$tmp/show.txt" 2>&1
check "rtune show lists the pin" grep -q "fakeNIC0 port 1 send/rc  inline_threshold=64" "$tmp/show.txt"
"$rtune" show --db "$db" --json > "$tmp/show.json"
check "rtune show --json lists the pin" python3 -c "
import json; p=json.load(open('$tmp/show.json'))['pins']; assert p==[{'device':'fakeNIC0','port':1,'opcode':'send','qp_type':'rc','inline_threshold':64,'signal_interval':None}], p"
"$rtune" agent --config "$tmp/agent.conf" --once > "$tmp/a2.log" 2>&1
check "the pin is published" test "$(field "$prof" send inline_threshold)" = 64
check "the unpinned write entry keeps its measured value" test "$(field "$prof" write inline_threshold)" = 128
check "the pin is logged" grep -q "inline_threshold pinned to 64 (measured 128)" "$tmp/a2.log"
check "the pinned entry carries the agent_pinned reason" python3 -c "
import json; d=json.load(open('$prof')); e=[e for e in d['entries'] if e['opcode']=='send'][0]
assert any(r['code']=='agent_pinned' for r in e['reasons']) and e['inline_confidence']=='high'"

# a newer run, low confidence, another threshold: the published confident value stays (write: not pinned)
doc "$tmp/p2.json" 32 low 2026-11-10T00:00:00Z
"$rtune" import --db "$db" "$tmp/p2.json" > /dev/null || bad "import of the low-confidence profile"
"$rtune" agent --config "$tmp/agent.conf" --once > "$tmp/a3.log" 2>&1
check "a low-confidence value does not replace a confident one" test "$(field "$prof" write inline_threshold)" = 128
check "... and its confidence stays" test "$(field "$prof" write inline_confidence)" = high
check "... and why is logged" grep -q "inline_threshold kept at 128: the new 32 has low confidence, the published one high" "$tmp/a3.log"
check "the pin still wins over the newer run" test "$(field "$prof" send inline_threshold)" = 64
# a newer confident run replaces it
doc "$tmp/p3.json" 48 medium 2026-11-20T00:00:00Z
"$rtune" import --db "$db" "$tmp/p3.json" > /dev/null || bad "import of the confident profile"
"$rtune" agent --config "$tmp/agent.conf" --once > "$tmp/a4.log" 2>&1
check "a confident newer value is published" test "$(field "$prof" write inline_threshold)" = 48
check "the change is recorded" test "$(sqlite3 "$db" "SELECT count(*) FROM agent_publications WHERE opcode = 'write' AND inline_threshold = 48")" = 1
"$rtune" unpin fakeNIC0 --db "$db" > /dev/null || bad "rtune unpin"
"$rtune" agent --config "$tmp/agent.conf" --once > /dev/null 2>&1
check "after unpin the measured value is published" test "$(field "$prof" send inline_threshold)" = 48
"$rtune" unpin fakeNIC0 --db "$db" > "$tmp/unpin.txt" 2>&1
check "unpin of nothing exits 1" test $? -eq 1
check "... naming the device" grep -q "rtune: no pin of 'fakeNIC0' matches" "$tmp/unpin.txt"

printf 'store = %s\n\nbudget = 1\n' "$db" > "$tmp/bad.conf"
"$rtune" agent --config "$tmp/bad.conf" --once > "$tmp/bad.log" 2>&1
check "a bad configuration exits 2" test $? -eq 2
check "... with FILE:LINE and the problem" grep -q "$tmp/bad.conf:3: budget: '1' is not a duration of 2s..1h" "$tmp/bad.log"
"$rtune" agent --config "$tmp/absent.conf" --once > "$tmp/absent.log" 2>&1
check "a named configuration that is absent exits 2" test $? -eq 2
check "... naming it" grep -q "cannot read config '$tmp/absent.conf'" "$tmp/absent.log"
"$rtune" agent --bogus > /dev/null 2>&1
check "an unknown option exits 2" test $? -eq 2
"$rtune" pin fakeNIC0 read/rc inline_threshold=1 --db "$db" > "$tmp/pin.txt" 2>&1
check "pin with a bad opcode exits 2" test $? -eq 2
check "... naming it" grep -q "rtune pin: 'read/rc': the opcode is send or write" "$tmp/pin.txt"
"$rtune" pin fakeNIC0 send/rc --db "$db" > /dev/null 2>&1
check "pin with no value exits 2" test $? -eq 2
[ "$fails" = 0 ] && echo "all agent CLI checks passed"
exit $((fails > 0))
