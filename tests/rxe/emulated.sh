#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, emulated NICs: in one guest, for each model of tests/rxe/emunic/models, rxe0 gets the model's per-WR
# costs from the cost-model shim (LD_PRELOAD=libemunic.so, docs/emunic.md) and
#   rtune calibrate -d rxe0 --budget 30 --large-sizes none --post-list 1 --concurrency none --out M.json
#   (into a store of its own), then
#   rtune tune --json --dry-run
# and tests/rxe/emulated_check.py checks the shim on the raw run (the measured inline difference per size and rate per
# N follow the model) and that tune recovers the planted inline threshold (within one grid step) and signaling
# verdict / N (within a factor of two) for send/rc, write/rc and send/ud (off at low or medium confidence: a miss, at
# most two per run; at high confidence: a failure; a planted knee answered "indifferent" at low or medium
# confidence, with the stated N in the planted range, is "not shown beyond the noise" and no miss: emulated_check.py). Also: a malformed model parameter is one
# clear line and exit 2 before any verb runs; the shim's report never replaces what is not a regular file; a post
# (tests/rxe/emunic/emunic_check.c) returns the same value, errno and bad_wr with and without the shim, and the
# caller's WR flags are restored, also from two threads; the minimum time of one post grows by the modeled cost.
# The budget and the bands: under TCG a message takes 60-150 us (a real NIC's ~1000x), so the default 20 s and the
# signaling sweep's other load bands (large messages, post list, concurrency: nothing here checks them) left each
# small-message rate cell ~64 messages per repetition, and on a slow host (this check's runs of 2026-12-02: 1/rate
# 85-150 us, 3-4 misses per run) the planted knees drowned; 30 s without the bands gives each cell ~2.5x the messages.
# bench/bench_stability.sh keeps calibrate's defaults: it measures the product as users run it.
# Env: RTUNE_EMU_MODELS (comma-separated names; default all), RTUNE_EMU_BUDGET (default 30), RTUNE_EMU_CAL_ARGS
# (calibrate's options besides the budget; default the three above), RTUNE_EMU_SHIM_ONLY=1
# (check the shim only, not tune), RTUNE_EMU_OUT (where the runs are kept; default $RTUNE_BUILD_DIR/rxe-emulated).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
so=$B/tests/rxe/libemunic.so
dev=${RTUNE_VM_DEV:-rxe0}
budget=${RTUNE_EMU_BUDGET:-30}
read -r -a cal_args <<< "${RTUNE_EMU_CAL_ARGS:---large-sizes none --post-list 1 --concurrency none}"
out=${RTUNE_EMU_OUT:-$B/rxe-emulated}
fail=0
bad() { echo "FAIL: $*" | tee -a "$out/script.check"; fail=1; }
[ -f "$so" ] || { echo "FAIL: no $so (build the emunic target)"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.check
models=${RTUNE_EMU_MODELS:-$(python3 -B -c "
import sys; sys.path.insert(0, '$here/emunic'); import emumodel
print(','.join(emumodel.load_models()))")}
only=()
[ "${RTUNE_EMU_SHIM_ONLY:-0}" = 1 ] && only=(--shim-only)

echo "== a malformed model parameter: one line, exit 2"
LD_PRELOAD=$so EMUNIC_DMA_NS=fast "$rtune" devices -d "$dev" --no-probe > /dev/null 2> "$out/badenv.err"
rc=$?
cat "$out/badenv.err"
[ $rc -eq 2 ] || bad "a bad EMUNIC_DMA_NS exited $rc, expected 2"
grep -q "^emunic: bad EMUNIC_DMA_NS 'fast'" "$out/badenv.err" || bad "no clear line for a bad EMUNIC_DMA_NS"
[ "$(grep -c . "$out/badenv.err")" -eq 1 ] || bad "more than one line for a bad EMUNIC_DMA_NS"
mkdir -p "$out/adir"
LD_PRELOAD=$so EMUNIC_REPORT=$out/adir "$rtune" devices -d "$dev" > /dev/null 2> "$out/adir.err"
[ -d "$out/adir" ] || bad "the shim's report replaced a directory"
grep -q "not a regular file" "$out/adir.err" || bad "no line for a report path that is a directory"

echo "== a post returns the same with and without the shim, the caller's flags restored, also from two threads"
"$B/tests/rxe/emunic_check" > "$out/post-plain.out" 2>&1 ||
  bad "emunic_check without the shim: $(cat "$out/post-plain.out")"
LD_PRELOAD=$so EMUNIC_REPORT=$out/post.rep EMUNIC_DMA_NS=50 EMUNIC_INLINE_CHUNK_NS=50 "$B/tests/rxe/emunic_check" \
  > "$out/post-shim.out" 2>&1 || bad "emunic_check under the shim: $(cat "$out/post-shim.out")"
cat "$out/post-shim.out" "$out/post.rep"
diff <(grep -v '^shim:' "$out/post-plain.out") <(grep -v '^shim:' "$out/post-shim.out") ||
  bad "a post returned differently under the shim"
python3 -B -c "
import json, sys
r = json.load(open('$out/post.rep'))
sys.exit(0 if r['contexts'] == 1 and r['posts'] >= 40002 and r['stripped'] > 0 and r['untracked_posts'] == 0 else 1)" ||
  bad "the shim did not see emunic_check's posts"

# The per-post timing check; RTUNE_EMU_TIMING=0 skips it.
if [ "${RTUNE_EMU_TIMING:-1}" = 1 ]; then
  echo "== the shim spends what the model says: minimum time of one post, model minus all-zero costs (on one CPU)"
  # zero and model alternate, four times each (each run ~0.3 s): a slow stretch of the guest as long as one process
  # does not decide either (2026-12-02, a slow host: three 128 B kinds +5.6 us in both model runs of two; 0.3 us else)
  tm=(EMUNIC_POST_NS=3000 EMUNIC_DMA_NS=5000 EMUNIC_DMA_NS_PER_BYTE=10 EMUNIC_INLINE_CHUNK_NS=2000 EMUNIC_CQE_NS=4000)
  : > "$out/timing-zero.out"
  : > "$out/timing-model.out"
  for rep in 1 2 3 4; do
    timeout 120 taskset -c 0 env LD_PRELOAD="$so" EMUNIC_CHECK_TIMING=1 "$B/tests/rxe/emunic_check" \
      >> "$out/timing-zero.out" 2>&1 || bad "emunic_check timing with zero costs: $(tail -3 "$out/timing-zero.out")"
    timeout 120 taskset -c 0 env LD_PRELOAD="$so" EMUNIC_CHECK_TIMING=1 "${tm[@]}" "$B/tests/rxe/emunic_check" \
      >> "$out/timing-model.out" 2>&1 || bad "emunic_check timing with the model: $(tail -3 "$out/timing-model.out")"
  done
  python3 "$here/emunic/timing_check.py" "$out/timing-zero.out" "$out/timing-model.out" "${tm[@]}" ||
    bad "the shim's spent time does not follow the model"
fi

for m in ${models//,/ }; do
  env=$(python3 -B -c "
import sys; sys.path.insert(0, '$here/emunic'); import emumodel
print(' '.join(emumodel.env_of(emumodel.load_models()['$m'])))") || { bad "no model '$m'"; continue; }
  echo "== model $m: $env"
  rm -f "$out/$m".*
  t0=$(date +%s)
  # shellcheck disable=SC2086
  env RTUNE_DB="$out/$m.db" LD_PRELOAD="$so" EMUNIC_REPORT="$out/$m.rep" $env \
    "$rtune" calibrate -d "$dev" --budget "$budget" "${cal_args[@]}" --out "$out/$m.json" > "$out/$m.txt" \
    2> "$out/$m.err"
  rc=$?
  echo "calibrate exit $rc in $(( $(date +%s) - t0 )) s"
  cat "$out/$m.err"
  [ $rc -eq 0 ] || { bad "model $m: calibrate exited $rc"; continue; }
  RTUNE_DB="$out/$m.db" "$rtune" tune --json --dry-run > "$out/$m.tune.json" 2> "$out/$m.tune.err" ||
    bad "model $m: tune exited $?: $(cat "$out/$m.tune.err")"
  python3 "$here/emulated_check.py" "$m" --run "$out/$m.json" --report "$out/$m.rep" --tune "$out/$m.tune.json" \
    "${only[@]}" > "$out/$m.check" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail=1
  cat "$out/$m.check"
done
# A decision off its planted value at low or medium confidence is a miss: each of the ~25 decisions of a run misses
# in about 1-2 % of runs (bench_stability's 10-run series: 4 of 210 thresholds beyond one step, all low/medium), so
# a run may have two; a third, or any off at high confidence (a FAIL), fails. The 10-run figures are the benchmark's.
# A statistical check of the shim on the raw medians that is off by chance is a miss too (emulated_check.py stat():
# a shim modeling inline the wrong way round is off in 6-16 of them per model).
n_miss=$(cat "$out"/*.check 2>/dev/null | grep -c '^MISS')
if [ "$n_miss" -gt 2 ]; then
  echo "FAIL: $n_miss misses in this run (at most 2; low/medium-confidence decisions, statistical shim checks)" |
    tee -a "$out/script.check"
  fail=1
fi
# Every failed check again at the end: a CI log that keeps only the head and tail still says which model failed and why.
if [ $fail != 0 ]; then
  echo "== failed checks"
  grep -h '^FAIL\|^MISS' "$out"/*.check 2>/dev/null
fi
[ $fail = 0 ] && echo "rxe_emulated: ok" || echo "rxe_emulated: FAILED"
exit $fail
