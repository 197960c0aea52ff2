#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The store's CLI commands end to end on a store filled by store_fill: show (text and JSON, curves included), history
# with drift and the interrupted run, export in the three formats (atomic, mode 0644, valid shell / textfile),
# import idempotence, cloned machine-ids kept apart (import, report), the re-tune of an old run with that run's own
# device caps, and the error paths (not a database, no store, an empty file or table-less database given to a read
# command, newer schema, bad file, usage) with their messages and exit codes; every error leaves the files as they
# were.
set -uo pipefail
rtune=$1 fill=$2 caps_fill=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
  if "${@:2}" >/dev/null 2>&1; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
db=$tmp/rtune.db
"$fill" "$db" rxe0 || { echo "FAIL store_fill"; exit 1; }

"$rtune" show --db "$db" >"$tmp/show.txt"; rc=$?
check "show exits 0" test $rc -eq 0
check "show prints the current send threshold (the newest run's 96 B)" grep -q "inline_threshold 96 B" "$tmp/show.txt"
check "show prints the reasons" grep -q -- "- crossover: inline wins up to 96 B" "$tmp/show.txt"
check "show prints the latency curve" grep -q "latency (pingpong, median ns)" "$tmp/show.txt"
check "show prints the rate curve with the chosen N" grep -q "<- chosen" "$tmp/show.txt"
"$rtune" show --db "$db" --json >"$tmp/show.json"
check "show --json is JSON with entries and their runs" python3 -c "
import json,sys; d=json.load(open('$tmp/show.json'))
assert d['node']['hostname']=='fill-host'; e=d['entries'][0]
assert e['inline_threshold']==96 and e['run']['latency'] and e['run']['status']=='complete'"
"$rtune" show --db "$db" mlx5_9 2>"$tmp/err"; rc=$?
check "show of an unknown device fails with exit 1" test $rc -eq 1
check "and names it" grep -q "rtune: no profile for device 'mlx5_9'" "$tmp/err"

"$rtune" history --db "$db" >"$tmp/hist.txt"; rc=$?
check "history exits 0" test $rc -eq 0
check "history shows the drift 64 -> 128" grep -q "threshold +64 B (64->128), N 16->32" "$tmp/hist.txt"
check "history shows the drift 128 -> 96" grep -q "threshold -32 B (128->96), N 32->32" "$tmp/hist.txt"
check "history shows the dead run as interrupted" grep -q " interrupted " "$tmp/hist.txt"
"$rtune" history --db "$db" --json >"$tmp/hist.json"
check "history --json: 4 runs, drift, interrupted" python3 -c "
import json; d=json.load(open('$tmp/hist.json'))['runs']
assert len(d)==4 and d[1]['drift']['inline_threshold_from']==64 and d[1]['drift']['inline_threshold_to']==128
assert d[3]['status']=='interrupted' and d[3]['stored_status']=='running' and d[0]['drift'] is None"

"$rtune" export --db "$db" -o "$tmp/p.json"; rc=$?
check "export json exits 0" test $rc -eq 0
check "export json is mode 0644" test "$(stat -c %a "$tmp/p.json")" = 644
check "export json is a v1 profile" python3 -c "
import json; d=json.load(open('$tmp/p.json')); assert d['schema']=={'name':'rtune-profile','version':'1.4'}
assert [e['inline_threshold'] for e in d['entries']]==[96,48]"
check "export json carries the hardware of the calibration runs and where each entry was measured from (1.1)" python3 -c "
import json; d=json.load(open('$tmp/p.json'))
[dev] = d['hardware']['devices']
assert dev['name']=='rxe0' and dev['vendor_id']==0x15b3 and dev['fw_ver']=='1.2.3' and dev['numa_node']==1, dev
assert dev['link_layer']=='Ethernet' and dev['active_mtu']==1024 and dev['pcie'] is None, dev
assert d['hardware']['numa_nodes']>=1
assert all(e['calibration']=={'cpu_numa_node': 1, 'numa_local': True} for e in d['entries']), d['entries']"
if python3 -c "import jsonschema" 2>/dev/null; then
  schema=$(dirname "$0")/../../../docs/profile-v1.schema.json corpus=$(dirname "$0")/corpus
  check "the exported profile validates against docs/profile-v1.schema.json" python3 -c "
import json, jsonschema; jsonschema.validate(json.load(open('$tmp/p.json')), json.load(open('$schema')))"
  check "the JSON Schema agrees with librtune on the corpus (valid ones pass, range/type errors fail)" python3 -c "
import json, jsonschema
s = json.load(open('$schema'))
ok = lambda f: jsonschema.Draft202012Validator(s).is_valid(json.load(open('$corpus/' + f)))
for f in ['valid.json', 'newer_minor_unknown_fields.json', 'integral_reals.json']: assert ok(f), f
for f in ['newer_major.json', 'wrong_schema_name.json', 'wrong_type_port.json', 'wrong_type_real.json',
          'out_of_range_depth.json', 'negative_threshold.json', 'zero_interval.json', 'unknown_opcode.json',
          'unknown_confidence.json', 'bad_run_id.json', 'bad_time.json', 'long_device_name.json',
          'missing_cq_depth.json', 'reasons_not_array.json', 'cq_moderation_array.json', 'entries_not_array.json',
          'entry_not_object.json', 'missing_schema.json', 'bad_version.json']:
    assert not ok(f), f + ' passes the schema but librtune refuses it'"
else
  echo "skip schema checks: python3 jsonschema not installed"
fi
RTUNE_PROFILE=/x/p.json "$rtune" export --db "$db" --format env >"$tmp/env.sh"
check "env output is valid shell" sh -n "$tmp/env.sh"
check "env sets FI_VERBS_INLINE_SIZE" grep -qx "export FI_VERBS_INLINE_SIZE=96" "$tmp/env.sh"
check "env sets UCX_RC_TX_CQ_MODERATION to N - 1" grep -qx "export UCX_RC_TX_CQ_MODERATION=31" "$tmp/env.sh"
check "env sets UCX_RC_TX_MIN_INLINE (the max_inline_data to request)" grep -qx "export UCX_RC_TX_MIN_INLINE=220" "$tmp/env.sh"
check "env sets RTUNE_PROFILE from the environment" grep -qx "export RTUNE_PROFILE='/x/p.json'" "$tmp/env.sh"
check "env sets RTUNE_INLINE_THRESHOLD per device" grep -qx "export RTUNE_INLINE_THRESHOLD_RXE0_P1=96" "$tmp/env.sh"
check "env evaluates" bash -c "set -e; . '$tmp/env.sh'; test \"\$RTUNE_SIGNAL_INTERVAL_RXE0_P1\" = 32"
ln -s "$tmp/victim" "$tmp/rtune.prom"; echo keep >"$tmp/victim"
"$rtune" export --db "$db" --format prometheus -o "$tmp/rtune.prom"
# a symlink in a private directory is followed (its target replaced atomically, the link kept); one in a shared
# sticky directory is refused (tests/unit/cli/test_output.sh)
check "prometheus through a private symlink: the link kept" test -L "$tmp/rtune.prom"
check "and its target written" grep -q '^# TYPE rtune_inline_threshold_bytes gauge$' "$tmp/victim"
check "prometheus has the threshold gauge" grep -q '^rtune_inline_threshold_bytes{node="fill-host",device="rxe0",port="1",opcode="send",qp_type="rc"} 96$' "$tmp/rtune.prom"
check "prometheus has the profile age" grep -q '^rtune_profile_age_seconds{.*} [0-9][0-9]*$' "$tmp/rtune.prom"
check "no temporary files left" test -z "$(find "$tmp" -name '.*.tmp')"

"$rtune" import --db "$tmp/fleet.db" "$tmp/p.json" >"$tmp/imp1"
"$rtune" import --db "$tmp/fleet.db" "$tmp/p.json" >"$tmp/imp2"
check "import adds the entries" grep -q "2 entries added, 0 already present" "$tmp/imp1"
check "import again is idempotent" grep -q "0 entries added, 2 already present" "$tmp/imp2"
# what the fleet store knows of the imported node is what its own export said: re-exported from the fleet store, the
# profile keeps its hardware (devices, PCIe, NUMA) and each entry's calibration placement
"$rtune" export --db "$tmp/fleet.db" -o "$tmp/re.json"; rc=$?
check "re-export from the fleet store exits 0" test $rc -eq 0
check "re-export keeps hardware and calibration (import stored them)" python3 -c "
import json,sys; a=json.load(open('$tmp/p.json')); b=json.load(open('$tmp/re.json'))
assert a.get('hardware'), 'the source export has no hardware object: the check would prove nothing'
assert all('calibration' in e for e in a['entries']), 'source entries lack calibration'
assert b.get('hardware') == a['hardware'], (a['hardware'], b.get('hardware'))
key=lambda e: (e['device'], e['port'], e['opcode'], e['qp_type'])
ca={key(e): e['calibration'] for e in a['entries']}; cb={key(e): e.get('calibration') for e in b['entries']}
assert ca == cb, (ca, cb)
assert b['node']['hardware_signature'] == a['node']['hardware_signature']"
# a small fleet as files, and the same fleet imported into one store: the report sees the same groups, the same
# remote-NUMA calibrations and the same outliers either way
mkdir -p "$tmp/fleet"
python3 - "$tmp/p.json" "$tmp/fleet" <<'PY'
import copy, json, sys
src = json.load(open(sys.argv[1]))
for i in range(6):
    d = copy.deepcopy(src)
    d['node']['hostname'] = 'fleet%02d' % i
    d['node']['machine_id'] = '%032x' % (0xf1ee7000 + i)
    for e in d['entries']:
        e['run_id'] = '%08x-1111-4222-8333-%012x' % (0xf1ee7000 + i, i)
        if i == 5:  # calibrated on the far socket, and its threshold is off
            e['calibration'] = {'cpu_numa_node': 1, 'numa_local': False}
            e['inline_threshold'] = min(e['max_inline_data'], e['inline_threshold'] * 4)
    json.dump(d, open('%s/n%02d.json' % (sys.argv[2], i), 'w'), indent=2)
PY
"$rtune" import -q --db "$tmp/fleet2.db" "$tmp"/fleet/n*.json; rc=$?
check "fleet import exits 0" test $rc -eq 0
"$rtune" report --json "$tmp/fleet" >"$tmp/rep_files.json" 2>/dev/null
"$rtune" report --json "$tmp/fleet2.db" >"$tmp/rep_store.json" 2>/dev/null
check "report of the imported store = report of the files (groups, remote-NUMA calibrations, outliers)" python3 -c "
import json
a=json.load(open('$tmp/rep_files.json')); b=json.load(open('$tmp/rep_store.json'))
g=lambda d: sorted((x['id'], x['node_count'], x['remote_numa_calibrations']) for x in d['groups'])
o=lambda d: sorted(json.dumps({k: v for k, v in x.items() if k != 'source'}, sort_keys=True) for x in d['outliers'])
assert a['node_count'] == b['node_count'] == 6, (a['node_count'], b['node_count'])
assert g(a) == g(b), (g(a), g(b))
assert any(x[2] == 1 for x in g(a)), 'the planted remote-NUMA calibration is not seen: the check proves nothing'
assert a['outliers'] and o(a) == o(b), (o(a), o(b))"
# two machines cloned from one image: the same /etc/machine-id, different hostnames; they are two nodes in files and
# in a store alike, and the import keeps each one's hostname (docs/profile-schema.md: node identity)
mkdir -p "$tmp/clones"
python3 - "$tmp/p.json" "$tmp/clones" <<'PY'
import copy, json, sys
src = json.load(open(sys.argv[1]))
for i, host in enumerate(['clone-a', 'clone-b']):
    d = copy.deepcopy(src)
    d['node']['hostname'] = host
    d['node']['machine_id'] = '0123456789abcdef0123456789abcdef'
    for e in d['entries']:
        e['run_id'] = 'c10e%04x-1111-4222-8333-%012x' % (i, i)
    json.dump(d, open('%s/%s.json' % (sys.argv[2], host), 'w'), indent=2)
PY
"$rtune" import -q --db "$tmp/clones.db" "$tmp/clones/clone-a.json" "$tmp/clones/clone-b.json"; rc=$?
check "cloned machine-ids: import exits 0" test $rc -eq 0
"$rtune" report --json "$tmp/clones/clone-a.json" "$tmp/clones/clone-b.json" >"$tmp/rep_cfiles.json" 2>/dev/null
"$rtune" report --json "$tmp/clones.db" >"$tmp/rep_cstore.json" 2>/dev/null
check "cloned machine-ids: report of the store counts the nodes the files count (2)" python3 -c "
import json
a=json.load(open('$tmp/rep_cfiles.json')); b=json.load(open('$tmp/rep_cstore.json'))
assert a['node_count'] == b['node_count'] == 2, (a['node_count'], b['node_count'])"
"$rtune" export --db "$tmp/clones.db" --node clone-a -o "$tmp/clone-a.out.json" 2>/dev/null; rc=$?
check "cloned machine-ids: each keeps its hostname" python3 -c "
import json; assert json.load(open('$tmp/clone-a.out.json'))['node']['hostname'] == 'clone-a'"
"$rtune" import --db "$tmp/fleet.db" "$tmp/nope.json" "$tmp/p.json" >/dev/null 2>"$tmp/err"; rc=$?
check "import with one bad file exits 1" test $rc -eq 1
check "and names it" grep -q "rtune: cannot open profile '$tmp/nope.json': No such file or directory" "$tmp/err"

echo "just text" >"$tmp/notes.db"; cp "$tmp/notes.db" "$tmp/notes.orig"
"$rtune" show --db "$tmp/notes.db" 2>"$tmp/err"; rc=$?
check "not a database: exit 1" test $rc -eq 1
check "not a database: message" grep -qx "rtune: cannot open store '$tmp/notes.db': not a database" "$tmp/err"
"$rtune" import --db "$tmp/notes.db" "$tmp/p.json" 2>/dev/null
check "not a database: file unchanged by import" cmp -s "$tmp/notes.db" "$tmp/notes.orig"
"$rtune" history --db "$tmp/none.db" 2>"$tmp/err"; rc=$?
check "no store: exit 1 and message" grep -q "rtune: no store at '$tmp/none.db'" "$tmp/err"
check "no store: nothing created" test ! -e "$tmp/none.db"
# a run keeps what its device was: re-tuning a run made when the device could inline 256 B, after a newer run found
# 1004 B, is limited by its own 256 B (issue 15 item 4)
old_run=$("$caps_fill" "$tmp/caps.db") || check "caps_fill" false
"$rtune" tune --db "$tmp/caps.db" --dry-run "$old_run" >"$tmp/tune.txt" 2>&1; rc=$?
check "re-tune of the 256 B run exits 0" test $rc -eq 0
check "re-tune of the 256 B run is limited by its own max inline 256 B" \
  grep -q "\[limited_by_device_max_inline\].*max inline (256 B)" "$tmp/tune.txt"
check "and not by the measured range (as with the newer run's 1004 B)" \
  test -z "$(grep limited_by_measured_range "$tmp/tune.txt")"
# a command that reads a store, given an empty file or a path with nothing there, creates or converts nothing: one
# line naming the file, exit 1, the file byte for byte as it was (empty), no -wal/-shm/-journal next to it
: >"$tmp/empty.db"
python3 -c "import sqlite3; c=sqlite3.connect('$tmp/notables.db'); c.execute('CREATE TABLE t(x)'); c.execute('DROP TABLE t'); c.commit(); c.close()"
cp "$tmp/notables.db" "$tmp/notables.orig"
for args in "show" "history" "export" "export --format env" "tune --dry-run" "tune" "report"; do
  for f in empty notables missing; do
    # shellcheck disable=SC2086
    "$rtune" $args --db "$tmp/$f.db" >"$tmp/out" 2>"$tmp/err"; rc=$?
    case $f in
      empty) why="empty file, not an rtune store" ;;
      notables) why="empty database, not an rtune store" ;;
      missing) why="no store at '$tmp/missing.db'" ;;
    esac
    lines=1
    if [ "$args" = report ]; then # the report names each skipped input, then that nothing usable was left
      lines=2
      case $f in empty) why="empty file" ;; missing) why="No such file or directory" ;; esac
    fi
    check "$args on a $f file: exit 1" test $rc -eq 1
    check "$args on a $f file: $lines line(s) naming it" \
      test "$(wc -l <"$tmp/err")" -eq $lines -a -n "$(grep -F "$why" "$tmp/err" | grep -F "$tmp/$f.db")"
  done
  check "$args: the empty file is still empty" test -f "$tmp/empty.db" -a ! -s "$tmp/empty.db"
  check "$args: the table-less database is unchanged" cmp -s "$tmp/notables.db" "$tmp/notables.orig"
  check "$args: no store created" test ! -e "$tmp/missing.db"
  check "$args: no side files" test -z "$(ls "$tmp" | grep -E '^(empty|notables|missing)\.db-')"
done
cp "$db" "$tmp/newer.db"
python3 -c "import sqlite3; c=sqlite3.connect('$tmp/newer.db'); c.execute('PRAGMA journal_mode=DELETE'); c.execute('PRAGMA user_version=99'); c.commit()"
cp "$tmp/newer.db" "$tmp/newer.orig"
"$rtune" import --db "$tmp/newer.db" "$tmp/p.json" 2>"$tmp/err"; rc=$?
check "newer schema: exit 1" test $rc -eq 1
check "newer schema: message" grep -Eq "schema version 99 is newer than this rtune supports \([0-9]+\); upgrade rtune" "$tmp/err"
check "newer schema: file unchanged" cmp -s "$tmp/newer.db" "$tmp/newer.orig"
"$rtune" export --db "$db" --format yaml 2>/dev/null; rc=$?
check "unknown format: usage exit 2" test $rc -eq 2
"$rtune" import --db "$db" 2>/dev/null; rc=$?
check "import without files: usage exit 2" test $rc -eq 2
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  # another user can read root's store (0644) but not write it; the error says so
  chmod 755 "$tmp"
  asnobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
  asnobody "$rtune" show --db "$db" >/dev/null 2>&1; rc=$?
  check "another user can read the store" test $rc -eq 0
  asnobody "$rtune" import --db "$db" "$tmp/p.json" >/dev/null 2>"$tmp/err"; rc=$?
  check "another user cannot write it: exit 1" test $rc -eq 1
  check "and is told why" grep -q "cannot write store '$db': read-only for this user" "$tmp/err"
  # a copy of the store alone (no -wal/-shm) in a directory the reader may not write: SQLite cannot create the -shm
  # a WAL store needs, so rtune opens it immutable; every read command works, import is refused in one line
  mkdir "$tmp/ro"
  "$rtune" export --db "$db" -o "$tmp/before.json" >/dev/null
  python3 -c "import sqlite3; c=sqlite3.connect('$db'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
  cp "$db" "$tmp/ro/copy.db"
  chmod 644 "$tmp/ro/copy.db"
  chmod 555 "$tmp/ro"
  check "read-only dir: store copied without -wal/-shm" test ! -e "$tmp/ro/copy.db-wal" -a ! -e "$tmp/ro/copy.db-shm"
  asnobody "$rtune" show --db "$tmp/ro/copy.db" >/dev/null 2>"$tmp/err"; rc=$?
  check "read-only dir: show works" test $rc -eq 0
  asnobody "$rtune" history --db "$tmp/ro/copy.db" >/dev/null 2>>"$tmp/err"; rc=$?
  check "read-only dir: history works" test $rc -eq 0
  asnobody "$rtune" export --db "$tmp/ro/copy.db" >"$tmp/after.json" 2>>"$tmp/err"; rc=$?
  check "read-only dir: export works" test $rc -eq 0
  check "read-only dir: export is the same profile" \
    python3 -c "import json,sys; a=json.load(open('$tmp/before.json')); b=json.load(open('$tmp/after.json')); \
a.pop('generated_at'); b.pop('generated_at'); sys.exit(a != b)"
  asnobody "$rtune" import --db "$tmp/ro/copy.db" "$tmp/p.json" >/dev/null 2>"$tmp/err"; rc=$?
  check "read-only dir: import exits 1" test $rc -eq 1
  check "read-only dir: in one line naming the store" \
    test "$(wc -l <"$tmp/err")" -eq 1 -a -n "$(grep "cannot write store '$tmp/ro/copy.db': read-only" "$tmp/err")"
  check "read-only dir: nothing created next to it" test "$(ls "$tmp/ro")" = copy.db
  chmod 755 "$tmp/ro"
fi
for c in show history export import; do
  check "$c --help" "$rtune" "$c" --help
done
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all store CLI checks passed"
