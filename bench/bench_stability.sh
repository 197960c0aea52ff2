#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a timed test): do two runs on the same node give the same answer? In ONE Soft-RoCE guest session,
# RUNS x (`rtune calibrate --budget B --seed i` + `rtune tune --json --dry-run`) on plain rxe0, on each emulated-NIC
# model (the cost-model shim libemunic.so, tests/rxe/emunic/models, docs/emunic.md) and once more with a disturbance
# running in the guest (a CPU hog and/or a periodic stall injector). Prints per configuration and decision
# (send/rc, write/rc, send/ud x inline threshold, signaling verdict/N): the share of runs giving the modal answer, the
# spread, the planted value where the model plants one and the share within one grid step / a factor of two of it,
# and whether any high-confidence answer differed from the planted (else modal) one by more than one grid step (N:
# more than a factor of two). Targets (issue 14): modal / planted share >= 9 of 10, no such high-confidence answer.
# See docs/stability.md. On the host it boots the guest (tests/rxe/run-in-vm) with itself as the guest script.
# Env: RTUNE_BUILD_DIR (default build), RTUNE_BENCH_BUDGET (default 20), RTUNE_STAB_RUNS (default 10),
# RTUNE_STAB_MODELS (comma-separated model names, "all" (default) or "none"), RTUNE_STAB_PLAIN (1: also plain rxe0,
# default 1), RTUNE_STAB_DISTURB (hog, stall, hog+stall (default) or none), RTUNE_STAB_DISTURBED (the configurations
# run once more disturbed: comma-separated names among plain and the models; default plain), RTUNE_STAB_OUT (where
# the runs are kept; default $RTUNE_BUILD_DIR/bench-stability). RTUNE_STAB_ANALYZE_ONLY=1 on the host re-prints the
# analysis of what RTUNE_STAB_OUT holds without booting a guest.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
emu=$repo/tests/rxe/emunic
export RTUNE_BUILD_DIR=${RTUNE_BUILD_DIR:-$repo/build}
B=$RTUNE_BUILD_DIR
out=${RTUNE_STAB_OUT:-$B/bench-stability}
runs=${RTUNE_STAB_RUNS:-10}
budget=${RTUNE_BENCH_BUDGET:-20}
case "$runs" in '' | *[!0-9]* | 0) echo "bench_stability: RTUNE_STAB_RUNS takes a positive count, not '$runs'" >&2; exit 2 ;; esac
case "$budget" in '' | *[!0-9]* | 0) echo "bench_stability: RTUNE_BENCH_BUDGET takes seconds, not '$budget'" >&2; exit 2 ;; esac
all_models=$(python3 -B -c "import sys; sys.path.insert(0, '$emu'); import emumodel; print(','.join(emumodel.load_models()))")
models=${RTUNE_STAB_MODELS:-all}
[ "$models" = all ] && models=$all_models
[ "$models" = none ] && models=
for m in ${models//,/ }; do
  case ",$all_models," in *",$m,"*) ;; *) echo "bench_stability: no model '$m' (models: $all_models)" >&2; exit 2 ;; esac
done
disturb=${RTUNE_STAB_DISTURB:-hog+stall}
case "$disturb" in hog | stall | hog+stall | none) ;; *) echo "bench_stability: RTUNE_STAB_DISTURB takes hog, stall, hog+stall or none, not '$disturb'" >&2; exit 2 ;; esac
disturbed=${RTUNE_STAB_DISTURBED:-plain}
[ "$disturb" = none ] && disturbed=
configs=()
[ "${RTUNE_STAB_PLAIN:-1}" = 1 ] && configs+=(plain)
for m in ${models//,/ }; do configs+=("$m"); done
for c in ${disturbed//,/ }; do
  case " plain ${models//,/ } " in *" $c "*) configs+=("$c@$disturb") ;;
  *) echo "bench_stability: RTUNE_STAB_DISTURBED names '$c', which is not run (plain or one of: ${models:-no model})" >&2; exit 2 ;;
  esac
done

analyze() {
  # with the rtune binary at hand, also the node's profile over the runs (each run tuned in order, hysteresis)
  if [ -x "$B/cli/rtune" ]; then
    python3 "$emu/stability.py" --replay "$B/cli/rtune" "$out" "${configs[@]}"
  else
    python3 "$emu/stability.py" "$out" "${configs[@]}"
  fi
}

if [ "${RTUNE_VM:-}" != 1 ]; then
  if [ "${RTUNE_STAB_ANALYZE_ONLY:-0}" = 1 ]; then
    analyze
    exit 0
  fi
  [ ${#configs[@]} -gt 0 ] || { echo "bench_stability: nothing to run" >&2; exit 2; }
  # each run: the budget plus ~15 s of process start, store and tune; plus boot
  t=$(( ${#configs[@]} * runs * (budget + 15) + 600 ))
  echo "bench_stability: ${#configs[@]} configurations (${configs[*]}) x $runs runs at --budget $budget (up to ~$((t / 60)) min)"
  export RTUNE_STAB_OUT=$out RTUNE_STAB_RUNS=$runs RTUNE_BENCH_BUDGET=$budget RTUNE_STAB_MODELS=${models:-none} \
    RTUNE_STAB_DISTURB=$disturb RTUNE_STAB_DISTURBED=$disturbed
  exec "$repo/tests/rxe/run-in-vm" --timeout "$t" "$here/bench_stability.sh"
fi

rtune=$B/cli/rtune
so=$B/tests/rxe/libemunic.so
dev=${RTUNE_VM_DEV:-rxe0}
[ -f "$so" ] || { echo "bench_stability: no $so (build the emunic target)"; exit 1; }
# the guest writes only below the build dir (the rest of the tree is mounted read-only)
mkdir -p "$out" || { echo "bench_stability: cannot create '$out' in the guest: set RTUNE_STAB_OUT below $B" >&2; exit 1; }
dpids=()
start_disturb() {
  case "$disturb" in *hog*)
    # one busy process at normal priority, free to run on any CPU
    python3 -c 'while True: pass' &
    dpids+=($!) ;;
  esac
  case "$disturb" in *stall*)
    # a stall injector per CPU: every 500 ms a 30 ms SCHED_FIFO burst (falls back to nice -20 without the right)
    for cpu in $(seq 0 $(( $(nproc) - 1 ))); do
      python3 -c '
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
except OSError:
    os.nice(-20)
while True:
    time.sleep(0.5)
    t = time.monotonic()
    while time.monotonic() - t < 0.03:
        pass' "$cpu" &
      dpids+=($!)
    done ;;
  esac
}
stop_disturb() {
  for p in "${dpids[@]}"; do kill "$p" 2> /dev/null; wait "$p" 2> /dev/null; done
  dpids=()
}
trap stop_disturb EXIT

for c in "${configs[@]}"; do
  m=${c%@*}
  d=$out/$c
  rm -rf "$d"
  mkdir -p "$d"
  envs=()
  if [ "$m" != plain ]; then
    read -r -a envs <<< "$(python3 -B -c "
import sys; sys.path.insert(0, '$emu'); import emumodel
print(' '.join(emumodel.env_of(emumodel.load_models()['$m'])))")"
    envs+=("LD_PRELOAD=$so")
  fi
  [ "$c" != "$m" ] && start_disturb
  echo "== $c: $runs runs ${envs[*]}"
  for i in $(seq 1 "$runs"); do
    t0=$(date +%s)
    env RTUNE_DB="$d/store.db" EMUNIC_REPORT="$d/$i.rep" "${envs[@]}" \
      "$rtune" calibrate -d "$dev" --budget "$budget" --seed "$i" --out "$d/$i.json" > "$d/$i.txt" 2> "$d/$i.err"
    rc=$?
    RTUNE_DB="$d/store.db" "$rtune" tune --json --dry-run > "$d/$i.tune.json" 2> "$d/$i.tune.err"
    rt=$?
    echo "  run $i: calibrate exit $rc, tune exit $rt, $(( $(date +%s) - t0 )) s"
  done
  [ "$c" != "$m" ] && stop_disturb
done
analyze
