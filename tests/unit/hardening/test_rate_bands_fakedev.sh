#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rate sweep's load bands on fakedev.so (issue 16 items 14 and 16): a calibration measures, beside the small-message
# band, large non-inline messages (4096 and 65536 B reach the device: its large-WR counter) and a post list (8 WRs per
# ibv_post_send reach the device: its post-list counters), reports them under "rate_bands" (the small band's "rate"
# keeps only small single-WR points), stores them in band_rate_points (schema 8) and a signaling interval per band in
# signal_bands; --large-sizes none --post-list 1 measures neither; --app NAME takes the post list from the app's
# probed histogram (app_fill's batchy posts lists of 64; rcapp one WR per call); a device taking lists only in part
# (RT_FAKEDEV_LIST_ENOMEM_FIRST) does not hang the band; bad values are usage errors (exit 2).
# The concurrency band (issue 16 item 14): Q QPs driven by T threads reach the device (fakedev's data WRs per QP: Q
# more QPs carry traffic, each from one thread, T - 1 more threads post, ceil(Q/T) QPs share a send CQ), its points
# carry qps/threads, its N is stored, exported (kind concurrency with qps/threads) and kept by import;
# --concurrency none measures none; --app sizes it from the app's QPs and posting threads (fanout: 6 QPs, 3 threads;
# oldfan: threads not recorded, the default said on stderr; rcapp: one QP, no band).
set -uo pipefail
rtune=$1 shim=$2 app_fill=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

cal() { # cal ARGS...: quick write calibration on fake0 into $tmp/db; sets rc, $tmp/{json,err,rep}
  rm -f "$tmp/rep"
  timeout 180 env RT_FAKEDEV_REPORT="$tmp/rep" LD_PRELOAD="$shim" "$rtune" calibrate -d fake0 --quick --budget 20 \
    --sizes 1,8 --ops write --qp-type rc --db "$tmp/db" --out "$tmp/json" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
rep() { awk -v v="$1" '$1 == v {print $2}' "$tmp/rep"; }
last_run() { sqlite3 "$tmp/db" "SELECT max(id) FROM runs"; }
conc() { # conc FIELD: the run's params.concurrency.FIELD ("" when the band was not measured)
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['params'].get('concurrency',{}); print(c.get(sys.argv[2],''))" "$tmp/json" "$1"
}
busy_qps() { grep -c '^qp_wrs ' "$tmp/rep"; }
# conc_reached Q T: Q band QPs beyond the link's 2 carried data WRs, each from one thread; T - 1 threads beyond the
# link's 2 posted; the most QPs on one send CQ is ceil(Q/T)
conc_reached() {
  local q=$1 t=$2
  [ "$(busy_qps)" -eq $((2 + q)) ] && [ "$(rep send_threads)" -eq $((1 + t)) ] &&
    [ "$(rep qps_per_send_cq_max)" -eq $(((q + t - 1) / t)) ] &&
    [ "$(awk '$1 == "qp_wrs" && $4 != 1' "$tmp/rep" | wc -l)" -eq 0 ]
}

cal
if [ $rc -ne 0 ]; then bad "banded run: exit $rc: $(head -c 300 "$tmp/err")"; else
  [ "$(rep post_list_max)" = 8 ] && [ "$(rep post_list_calls)" -gt 0 ] &&
    ok "post lists of 8 WRs reach the device ($(rep post_list_calls) calls)" ||
    bad "post lists: max $(rep post_list_max), calls $(rep post_list_calls)"
  [ "$(rep large_wrs)" -gt 0 ] && ok "large WRs reach the device ($(rep large_wrs))" || bad "no large WR posted"
  python3 - "$tmp/json" <<'PY' && ok "rate_bands: large 4096/65536 non-inline and post list 8; rate: small only" || bad "JSON bands"
import json, sys
r = json.load(open(sys.argv[1]))
b, small = r.get("rate_bands", []), r["rate"]
large = {p["msg_bytes"] for p in b if p.get("band") == "large" and not p["inline"] and p["post_list"] == 1}
pl = {p["post_list"] for p in b if p.get("band") == "post_list"}
print("small %d points, bands %d: large sizes %s, post lists %s" % (len(small), len(b), sorted(large), sorted(pl)))
cc = [p for p in b if p.get("band") == "concurrency"]
t = r["params"]["concurrency"]["threads"]
print("concurrency %d points, %s" % (len(cc), sorted({(p["qps"], p["threads"]) for p in cc})))
ok = large == {4096, 65536} and pl == {8} and len(small) > 0
ok = ok and all(p["msg_bytes"] < 4096 and "post_list" not in p and "qps" not in p for p in small)
ok = ok and len(cc) > 0 and all(p["qps"] == 4 and p["threads"] == t and p["post_list"] == 1 for p in cc)
ok = ok and r["params"]["concurrency"]["qps"] == 4 and r["params"]["concurrency"]["send_cq"] == "per_thread"
sys.exit(0 if ok else 1)
PY
  t=$(conc threads)
  conc_reached 4 "$t" && ok "4 qps x $t threads reach the device: $(busy_qps) busy qps, $(rep send_threads) threads, $(rep qps_per_send_cq_max) qps per send cq" ||
    bad "concurrency 4x$t: busy qps $(busy_qps), threads $(rep send_threads), per cq $(rep qps_per_send_cq_max): $(grep qp_wrs "$tmp/rep" | tr '\n' '|')"
  run=$(last_run)
  nb=$(sqlite3 "$tmp/db" "SELECT count(*) FROM band_rate_points WHERE run_id = $run")
  nj=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['rate_bands']))" "$tmp/json")
  nr=$(sqlite3 "$tmp/db" "SELECT count(*) FROM rate_points WHERE run_id = $run")
  njr=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['rate']))" "$tmp/json")
  [ "$nb" = "$nj" ] && [ "$nr" = "$njr" ] && [ "$(sqlite3 "$tmp/db" 'PRAGMA user_version')" -ge 8 ] &&
    ok "stored: $nb band points apart from the $nr small-band points (schema 8)" ||
    bad "stored band points $nb (JSON $nj), rate points $nr (JSON $njr)"
  sb=$(sqlite3 "$tmp/db" "SELECT band || ':' || post_list || ':' || qps || 'x' || threads || ':' || msg_bytes_lo || '-' || msg_bytes_hi || ':N=' || signal_interval FROM signal_bands WHERE run_id = $run AND op = 'write' ORDER BY band" | tr '\n' ' ')
  case "$sb" in
    concurrency:1:4x$t:8-8:N=*" "large:1:1x1:4096-65536:N=*" "post_list:8:1x1:8-8:N=*) ok "an N per band stored: $sb" ;;
    *) bad "signal_bands: '$sb'" ;;
  esac
  grep -q "^signaling, large messages 4096-65536 B: write/rc N = " "$tmp/out" &&
    grep -q "^signaling, post lists of 8 WRs (8 B): write/rc N = " "$tmp/out" &&
    grep -q "^signaling, concurrency 4 qps x $t threads (8 B): write/rc N = " "$tmp/out" &&
    ok "the summary prints the three bands" || bad "summary: $(grep signaling "$tmp/out" | tr '\n' '|')"
fi

cal --large-sizes none --post-list 1 --concurrency none
if [ $rc -ne 0 ]; then bad "unbanded run: exit $rc: $(head -c 300 "$tmp/err")"; else
  [ "$(rep post_list_max)" = 1 ] && [ "$(rep large_wrs)" = 0 ] && [ "$(busy_qps)" -eq 2 ] &&
    [ "$(rep qps_per_send_cq_max)" -eq 1 ] && [ -z "$(conc qps)" ] &&
    ! python3 -c "import json,sys; sys.exit('rate_bands' not in json.load(open(sys.argv[1])))" "$tmp/json" &&
    [ "$(sqlite3 "$tmp/db" "SELECT count(*) FROM signal_bands WHERE run_id = $(last_run)")" = 0 ] &&
    ok "--large-sizes none --post-list 1 --concurrency none: one WR per call on 2 qps, no large WR, no band" ||
    bad "unbanded: post_list_max $(rep post_list_max), large_wrs $(rep large_wrs), busy qps $(busy_qps)"
fi

# a device that takes lists only in part (ENOMEM mid-list, as a send queue filling up): the signaling position then
# leaves the list grid, and the rate loop must still end on a signaled WR and drain (before: at N >= 8 it posted
# forever)
rm -f "$tmp/rep"
timeout 60 env RT_FAKEDEV_REPORT="$tmp/rep" RT_FAKEDEV_LIST_ENOMEM_FIRST=1 LD_PRELOAD="$shim" "$rtune" calibrate \
  -d fake0 --quick --budget 6 --sizes 1,8 --ops write --qp-type rc --large-sizes none --db "$tmp/db" \
  --out "$tmp/json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ "$(rep list_partial)" -gt 0 ] &&
  python3 -c "import json,sys; sys.exit(not any(p.get('band') == 'post_list' and p['mops'] > 0 for p in json.load(open(sys.argv[1]))['rate_bands']))" "$tmp/json" &&
  ok "lists taken in part ($(rep list_partial)): the post-list band still ends and is measured" ||
  bad "lists taken in part: exit $rc, list_partial $(rep list_partial): $(head -c 300 "$tmp/err")"

"$app_fill" "$tmp/db" 1 >/dev/null || bad "app_fill failed"
cal --app batchy --large-sizes none
[ $rc -eq 0 ] && [ "$(rep post_list_max)" = 64 ] && ok "--app batchy: post lists of 64 WRs, the app's median batch" ||
  bad "--app batchy: exit $rc, post_list_max $(rep post_list_max): $(head -c 300 "$tmp/err")"
cal --app rcapp --large-sizes none
[ $rc -eq 0 ] && [ "$(rep post_list_max)" = 1 ] && [ "$(busy_qps)" -eq 2 ] && [ -z "$(conc qps)" ] &&
  ok "--app rcapp: one WR per call on one qp, as the app posts: no concurrency band" ||
  bad "--app rcapp: exit $rc, post_list_max $(rep post_list_max), busy qps $(busy_qps)"
cal --app fanout --large-sizes none
t=$(conc threads)
[ $rc -eq 0 ] && [ "$(conc qps)" = 6 ] && [ -n "$t" ] && [ "$t" -ge 1 ] && [ "$t" -le 3 ] && conc_reached 6 "$t" &&
  [ "$(rep post_list_max)" = 1 ] && ok "--app fanout: 6 qps x $t threads (3 as the app ran, capped by the cpus)" ||
  bad "--app fanout: exit $rc, qps $(conc qps), threads $t, busy qps $(busy_qps): $(head -c 300 "$tmp/err")"
[ "$(nproc)" -lt 3 ] || [ "$t" = 3 ] || bad "--app fanout: $(nproc) cpus but $t threads"
cal --app oldfan --large-sizes none
[ $rc -eq 0 ] && [ "$(conc qps)" = 4 ] && grep -q "did not record the posting threads: 2 threads assumed" "$tmp/err" &&
  ok "--app oldfan: 4 qps, threads not recorded: $(grep assumed "$tmp/err")" ||
  bad "--app oldfan: exit $rc, qps $(conc qps): $(head -c 300 "$tmp/err")"

usage() { # usage DESCRIPTION PATTERN ARGS...
  local d=$1 pat=$2
  shift 2
  cal "$@"
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$pat" "$tmp/err" && ok "$d: $(cat "$tmp/err")" ||
    bad "$d: exit $rc: $(head -c 300 "$tmp/err")"
}
usage "post list too long" "'--post-list' takes 1..64 WRs, not '65'" --post-list 65
usage "bad large sizes" "'--large-sizes' takes 'none' or" --large-sizes 4k
usage "unknown app" "no histogram of application 'nosuch'" --app nosuch
usage "--app with --post-list" "'--app' and '--post-list' exclude each other" --app batchy --post-list 4
usage "--app with --concurrency" "'--app' and '--concurrency' exclude each other" --app fanout --concurrency 4x2
for v in 1x1 4x5 4x 4 x2 0x0 65x1 4x2x1 all; do
  usage "concurrency $v" "'--concurrency' takes QxT" --concurrency "$v"
done

# the profile (schema 1.4): a run on a device refusing inline RDMA WRITE, tuned and exported, carries each entry's bands
# as signal_bands holds them and the skipped inline write with its reason; imported into a fresh store and exported
# again, the same bands and skips
rm -f "$tmp/db" "$tmp/db2"
RT_FAKEDEV_NO_INLINE_WRITE=1 cal --ops send,write
if [ $rc -ne 0 ]; then bad "profile run: exit $rc: $(head -c 300 "$tmp/err")"; else
  run=$(last_run)
  sqlite3 -separator ' ' "$tmp/db" "SELECT op, band, post_list, msg_bytes_lo, msg_bytes_hi, signal_interval, verdict,
    confidence FROM signal_bands WHERE run_id = $run ORDER BY op, band" >"$tmp/sb"
  if "$rtune" tune --db "$tmp/db" >"$tmp/out" 2>"$tmp/err" && "$rtune" export --db "$tmp/db" -o "$tmp/p1.json" &&
    "$rtune" import --db "$tmp/db2" "$tmp/p1.json" >/dev/null 2>"$tmp/err" &&
    "$rtune" export --db "$tmp/db2" -o "$tmp/p2.json"; then
    python3 - "$tmp/p1.json" "$tmp/p2.json" "$tmp/sb" <<'PY' && ok "export carries the bands and the skipped inline write; import then export: the same" || bad "profile bands/skipped"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
rows = [l.split() for l in open(sys.argv[3]) if l.strip()]
assert a["schema"]["version"] == "1.4", a["schema"]
got = sorted([e["opcode"], x["kind"], str(x["post_list"]), str(x["msg_bytes_lo"]), str(x["msg_bytes_hi"]),
              str(x["signal_interval"]), x["verdict"], x["confidence"]] for e in a["entries"] for x in e["bands"])
assert got == sorted(rows) and len(rows) == 6, (got, rows)
cc = [x for e in a["entries"] for x in e["bands"] if x["kind"] == "concurrency"]
assert len(cc) == 2 and all(x["qps"] == 4 and 1 <= x["threads"] <= 2 for x in cc), cc
sk = [s for s in a["skipped"] if s["what"] == "inline write/rc"]
assert len(sk) == 1 and sk[0]["kind"] == "inline" and sk[0]["opcode"] == "write" and sk[0]["qp_type"] == "rc", a["skipped"]
assert "refused IBV_SEND_INLINE" in sk[0]["reason"], sk
key = lambda d: {(e["device"], e["port"], e["opcode"], e["qp_type"]): e["bands"] for e in d["entries"]}
assert key(a) == key(b) and a["skipped"] == b["skipped"], (key(a), key(b), a["skipped"], b["skipped"])
print("bands %d, skipped %s" % (len(got), [s["what"] for s in a["skipped"]]))
PY
  else
    bad "tune/export/import: $(head -c 300 "$tmp/err")"
  fi
fi

[ $fails -eq 0 ] && echo "all rate band checks passed" || echo "$fails check(s) failed"
exit $((fails > 0))
