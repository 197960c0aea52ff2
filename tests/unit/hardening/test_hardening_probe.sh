#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The probe in hostile conditions (see hardening_probe.c): failing verbs and an unwritable output file, a
# set-user-ID process (AT_SECURE: a copy of the program made setuid-root and run as nobody via setpriv), an
# over-long RTUNE_PROBE_OUT, and 120 KiB environment values (stderr must stay short: the probe writes into its host
# application's stderr). The setuid part is skipped (with a note) without root, setpriv or a suid-capable TMPDIR.
# With valgrind as 2nd argument the failing-verbs run is also checked for leaks and memory errors.
set -uo pipefail
bin=$1 valgrind=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

mkdir "$tmp/faults"
if "$bin" faults "$tmp/faults"; then ok "failing verbs and output are passed through"; else bad "failing verbs"; fi
if [ -n "$valgrind" ]; then
  "$valgrind" -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
    "$bin" faults "$tmp/faults" >/dev/null 2>"$tmp/vg.err"
  rc=$?
  if [ $rc -eq 0 ]; then ok "failing verbs: no leak, no memory error (valgrind)"
  else bad "failing verbs under valgrind: exit $rc $(head -c 600 "$tmp/vg.err")"; fi
fi

# set-user-ID: AT_SECURE is set when the real and effective user differ
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && ! findmnt -n -o OPTIONS -T "$tmp" | grep -qw nosuid; then
  chmod 0755 "$tmp"
  mkdir -m 0777 "$tmp/secure"
  cp "$bin" "$tmp/suid-probe" && chown root:root "$tmp/suid-probe" && chmod 4755 "$tmp/suid-probe"
  cp "$(dirname "$0")/../../../fuzz/corpus/profile/valid.json" "$tmp/profile.json"  # a profile librtune loads
  chmod 0644 "$tmp/profile.json"
  RTUNE_PROBE_OUT="$tmp/secure/leak.%p.json" RTUNE_INLINE_THRESHOLD=64 RTUNE_PROBE_SAMPLE=bogus \
    RTUNE_PROFILE="$tmp/profile.json" \
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$tmp/suid-probe" secure "$tmp/secure" \
    >"$tmp/secure.out" 2>"$tmp/secure.err"
  rc=$?
  cat "$tmp/secure.out"
  if [ $rc -eq 0 ]; then ok "set-user-ID: environment ignored, no output file"; else bad "set-user-ID process (AT_SECURE)"; fi
  if [ ! -s "$tmp/secure.err" ]; then ok "set-user-ID: nothing on stderr"
  else bad "set-user-ID: the probe printed into a privileged process's stderr: $(head -c 300 "$tmp/secure.err")"; fi
else
  echo "skip set-user-ID check (needs root, setpriv and a TMPDIR without nosuid)"
fi

# an over-long RTUNE_PROBE_OUT whose first 4095 bytes name another valid file
mkdir "$tmp/long"
long=$(python3 -c "
import sys
d = sys.argv[1] + '/'
n = 4095 - len('victim') - len(d)
print(d + './' * (n // 2) + '/' * (n % 2) + 'victim' + 'Z' * 200)" "$tmp/long")
[ "${#long}" -gt 4096 ] || bad "test set-up: pattern is ${#long} bytes"
RTUNE_PROBE_OUT=$long "$bin" longenv "$tmp/long" >"$tmp/long.out" 2>"$tmp/long.err"
rc=$?
cat "$tmp/long.out"
if [ $rc -eq 0 ]; then ok "over-long RTUNE_PROBE_OUT not truncated into another file"; else bad "over-long RTUNE_PROBE_OUT"; fi

# 120 KiB values (one environment string may not exceed 128 KiB)
big=$(head -c 122880 /dev/zero | tr '\0' 9)
RTUNE_PROBE_SAMPLE=$big RTUNE_INLINE_THRESHOLD=$big RTUNE_PROFILE=/nonexistent/$big RTUNE_PROBE_OUT=$tmp/big.json \
  "$bin" bigenv >"$tmp/big.out" 2>"$tmp/big.err"
rc=$?
cat "$tmp/big.out"
if [ $rc -eq 0 ]; then ok "120 KiB environment values ignored"; else bad "120 KiB environment values (exit $rc)"; fi
errsz=$(stat -c %s "$tmp/big.err")
if [ "$errsz" -le 2048 ]; then ok "stderr stays short with 120 KiB values ($errsz bytes)"
else bad "the probe copied huge environment values into the application's stderr ($errsz bytes)"; fi

[ $fails -eq 0 ] && echo "all probe hardening checks passed"
exit $((fails > 0))
