#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A profile's load bands and skipped measurements (schema 1.4) outside the profile (issue 16, B): a 1.4 document with
# three bands on mlx5_0 send/rc (large 4096-65536 B N 64, post lists of 8 N 32, 4 QPs x 2 threads N 8) and two skips is imported into a fresh
# store; `rtune show` prints one line per band and the skips with their reasons, `show --json` (rtune-show 1.2) carries
# the entry's "bands" and the document's "skipped", `export --format env` has RTUNE_SIGNAL_INTERVAL_<KIND>_... lines per
# band (eval'd by a shell) and the skips as comments, `export --format prometheus` has the band gauges and the skip
# info series and passes `promtool check metrics` (when installed). A profile without bands shows none of it.
set -uo pipefail
rtune=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
db=$tmp/db

"$rtune" import --db "$db" "$fixture" >/dev/null || { echo "FAIL import of $fixture"; exit 1; }

"$rtune" show --db "$db" >"$tmp/show" 2>&1
grep -q '^    bands: large messages 4096-65536 B: N = 64 (indifferent, high)$' "$tmp/show" &&
  grep -q '^           post lists of 8 WRs (64 B): N = 32 (knee, medium)$' "$tmp/show" &&
  grep -q '^           concurrency 4 QPs x 2 threads (64 B): N = 8 (knee, low)$' "$tmp/show" &&
  ok "show: one line per band" || bad "show bands: $(grep -A2 bands "$tmp/show")"
grep -q '^skipped (calibrate could not measure these; the device refused them):$' "$tmp/show" &&
  grep -q '^  mlx5_0 port 1: inline write/rc: ibv_post_send refused IBV_SEND_INLINE (Invalid argument) though' "$tmp/show" &&
  grep -q '^  mlx5_0 port 1: cq moderation: ibv_modify_cq refused it (Operation not supported)$' "$tmp/show" &&
  ok "show: the skips with their reasons" || bad "show skips: $(grep -A3 skipped "$tmp/show")"

"$rtune" show --db "$db" --json >"$tmp/show.json"
python3 - "$tmp/show.json" <<'PY' && ok "show --json 1.2: entries[].bands and skipped" || bad "show --json: $(head -c 300 "$tmp/show.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == {"name": "rtune-show", "version": "1.2"}, d["schema"]
b = d["entries"][0]["bands"]
assert [(x["kind"], x["post_list"], x["signal_interval"], x["verdict"], x["confidence"]) for x in b] == \
    [("large", 1, 64, "indifferent", "high"), ("post_list", 8, 32, "knee", "medium"),
     ("concurrency", 1, 8, "knee", "low")], b
assert (b[2]["qps"], b[2]["threads"]) == (4, 2), b[2]
assert [(s["device"], s["port"], s["what"], s["kind"]) for s in d["skipped"]] == \
    [("mlx5_0", 1, "inline write/rc", "inline"), ("mlx5_0", 1, "cq moderation", "cq_moderation")], d["skipped"]
assert all(s["reason"] for s in d["skipped"])
PY

"$rtune" export --db "$db" --format env >"$tmp/env"
vals=$(env -i bash -c 'eval "$(cat "$1")" && echo "$RTUNE_SIGNAL_INTERVAL_LARGE_MLX5_0_P1 $RTUNE_MSG_BYTES_LARGE_MLX5_0_P1 $RTUNE_SIGNAL_INTERVAL_POST_LIST_8_MLX5_0_P1 $RTUNE_MSG_BYTES_POST_LIST_8_MLX5_0_P1 $RTUNE_SIGNAL_INTERVAL_CONCURRENCY_4X2_MLX5_0_P1 $RTUNE_SIGNAL_INTERVAL_MLX5_0_P1"' _ "$tmp/env")
[ "$vals" = "64 4096-65536 32 64-64 8 16" ] && grep -q '^# large messages 4096-65536 B: N = 64 (indifferent, high)$' "$tmp/env" &&
  ok "env: band variables eval to $vals" || bad "env bands: '$vals' $(grep BAND\\\|LARGE\\\|POST "$tmp/env")"
grep -q '^# skipped by calibrate: mlx5_0 port 1: inline write/rc: ibv_post_send refused' "$tmp/env" &&
  grep -q '^# skipped by calibrate: mlx5_0 port 1: cq moderation: ibv_modify_cq refused it' "$tmp/env" &&
  ok "env: the skips as comments" || bad "env skips: $(grep skipped "$tmp/env")"

"$rtune" export --db "$db" --format prometheus >"$tmp/rtune.prom"
l='node="node-a",device="mlx5_0",port="1",opcode="send",qp_type="rc",app=""'
grep -qxF "rtune_band_signal_interval{$l,band=\"large\",post_list=\"1\",qps=\"1\",threads=\"1\"} 64" "$tmp/rtune.prom" &&
  grep -qxF "rtune_band_signal_interval{$l,band=\"post_list\",post_list=\"8\",qps=\"1\",threads=\"1\"} 32" "$tmp/rtune.prom" &&
  grep -qxF "rtune_band_confidence{$l,band=\"post_list\",post_list=\"8\",qps=\"1\",threads=\"1\"} 1" "$tmp/rtune.prom" &&
  grep -qxF "rtune_band_signal_interval{$l,band=\"concurrency\",post_list=\"1\",qps=\"4\",threads=\"2\"} 8" "$tmp/rtune.prom" &&
  grep -qxF "rtune_band_info{$l,band=\"large\",post_list=\"1\",qps=\"1\",threads=\"1\",msg_bytes_lo=\"4096\",msg_bytes_hi=\"65536\",verdict=\"indifferent\"} 1" "$tmp/rtune.prom" &&
  ok "prometheus: a gauge per band" || bad "prometheus bands: $(grep band "$tmp/rtune.prom")"
grep -q '^rtune_skipped_measurement_info{node="node-a",device="mlx5_0",port="1",what="cq moderation",kind="cq_moderation",opcode="",qp_type="",reason="ibv_modify_cq refused it (Operation not supported)",run_id="6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"} 1$' "$tmp/rtune.prom" &&
  [ "$(grep -c '^rtune_skipped_measurement_info{' "$tmp/rtune.prom")" = 2 ] &&
  ok "prometheus: an info series per skip" || bad "prometheus skips: $(grep skipped "$tmp/rtune.prom")"
if command -v promtool >/dev/null; then
  out=$(promtool check metrics <"$tmp/rtune.prom" 2>&1) && [ -z "$out" ] && ok "promtool check metrics: clean" ||
    bad "promtool check metrics: $out"
else
  echo "skip promtool check metrics (promtool missing: apt-get install prometheus)"
fi

# a profile without bands or skips: nothing of the above, and nothing made up
python3 - "$fixture" "$tmp/plain.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["schema"]["version"] = "1.3"
for e in d["entries"]:
    e.pop("bands", None)
d.pop("skipped", None)
d["node"]["hostname"] = "node-b"
d["node"]["machine_id"] = "fedcba9876543210fedcba9876543210"
json.dump(d, open(sys.argv[2], "w"))
PY
"$rtune" import --db "$tmp/db2" "$tmp/plain.json" >/dev/null
"$rtune" show --db "$tmp/db2" >"$tmp/show2"
"$rtune" export --db "$tmp/db2" --format env >"$tmp/env2"
"$rtune" export --db "$tmp/db2" --format prometheus >"$tmp/prom2"
! grep -q 'bands:\|^skipped' "$tmp/show2" && ! grep -q '_LARGE_\|_POST_LIST_\|skipped by' "$tmp/env2" &&
  ! grep -q '^rtune_band_\|^rtune_skipped' "$tmp/prom2" && grep -q '^# TYPE rtune_band_signal_interval gauge$' "$tmp/prom2" &&
  ok "no bands, no skips: none shown" || bad "a 1.3 profile shows bands or skips"

echo "$fails failure(s)"
[ $fails -eq 0 ]
