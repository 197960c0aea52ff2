#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rtune CLI's contract without a device: top-level help and version, unknown commands and options are usage errors
# (exit 2) with one line naming the thing, and `rtune devices` on a machine with no RDMA device (an empty device list,
# forced by a shim) prints one clear line and exits 3, with and without --json.
set -uo pipefail
rtune=$1
shim=$2
fails=0
expect() { # name expected-exit expected-stderr-substring -- cmd...
  local name=$1 want=$2 pat=$3
  shift 4
  "$@" > /tmp/rt_cli_out.$$ 2> /tmp/rt_cli_err.$$
  local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL $name: exit $got, want $want"; cat /tmp/rt_cli_err.$$; fails=$((fails + 1)); return; fi
  if [ -n "$pat" ] && ! grep -qF -- "$pat" /tmp/rt_cli_err.$$; then
    echo "FAIL $name: stderr lacks '$pat':"; cat /tmp/rt_cli_err.$$; fails=$((fails + 1)); return
  fi
  echo "ok $name"
}
expect help 0 "" -- "$rtune" --help
grep -q 'devices' /tmp/rt_cli_out.$$ || { echo "FAIL help lists no devices command"; fails=$((fails + 1)); }
expect version 0 "" -- "$rtune" --version
grep -qE '^rtune [0-9]+\.[0-9]+\.[0-9]+$' /tmp/rt_cli_out.$$ || { echo "FAIL version text"; fails=$((fails + 1)); }
expect no-args 2 "usage: rtune" -- "$rtune"
expect unknown-command 2 "rtune: 'frobnicate' is not an rtune command" -- "$rtune" frobnicate
expect devices-help 0 "" -- "$rtune" devices --help
expect devices-bad-option 2 "rtune devices: unknown option '--bogus'" -- "$rtune" devices --bogus
expect devices-extra-arg 2 "rtune devices: unexpected argument 'extra'" -- "$rtune" devices extra
expect devices-nodev 3 "rtune: no RDMA device found" -- env ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$shim" "$rtune" devices
[ "$(wc -l < /tmp/rt_cli_err.$$)" = 1 ] || { echo "FAIL devices-nodev: more than one line"; fails=$((fails + 1)); }
[ ! -s /tmp/rt_cli_out.$$ ] || { echo "FAIL devices-nodev: wrote to stdout"; fails=$((fails + 1)); }
expect devices-nodev-json 3 "rtune: no RDMA device found" -- env ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$shim" "$rtune" devices --json
rm -f /tmp/rt_cli_out.$$ /tmp/rt_cli_err.$$
total=11
echo "$((total - fails)) passed, $fails failed"
[ "$fails" = 0 ]
