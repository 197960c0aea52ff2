#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune calibrate`'s progress bar, on the fake device (fakedev.so) with stderr a pseudo-terminal: with TERM=dumb (the
# Soft-RoCE guest's serial console, where ~20 KB of glued bars once filled the demo's log) and with stderr not a TTY
# nothing is drawn; on a real terminal the bars are drawn, never move back, place each phase in its share (latency
# 0-65 %, signaling 65-82 % and its load bands 82-93 %, CQ moderation 93-100 %) and end at "100% done" (on a loaded
# machine the short budget may cut a phase, whose bar is then never drawn: only the phases that appear are checked).
set -uo pipefail
rtune=$1 fakedev=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

# pty TERM OUT: one quick calibration on fake0 with stderr a pseudo-terminal; what it drew lands in OUT
pty() {
  TERM=$1 LD_PRELOAD=$fakedev timeout 120 python3 - "$rtune" "$tmp/rtune.db" >"$2" <<'PY'
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.Popen([sys.argv[1], "calibrate", "-d", "fake0", "--quick", "--budget", "4", "--db", sys.argv[2]],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=s)
os.close(s)
out = b""
while True:
    try:
        d = os.read(m, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
sys.stdout.buffer.write(out)
sys.exit(p.wait())
PY
}

pty dumb "$tmp/dumb" || { bad "calibrate with TERM=dumb exited $?"; tr '\r' '\n' <"$tmp/dumb" | tail -5; }
if grep -q '\[[#.]*\]' "$tmp/dumb"; then bad "TERM=dumb: a progress bar was drawn"; else ok "TERM=dumb: no bar"; fi
TERM=xterm LD_PRELOAD=$fakedev timeout 120 "$rtune" calibrate -d fake0 --quick --budget 2 --db "$tmp/rtune.db" \
  >/dev/null 2>"$tmp/file" || { bad "calibrate with stderr a file exited $?"; tail -5 "$tmp/file"; }
if grep -q '\[[#.]*\]' "$tmp/file"; then bad "stderr a file: a progress bar was drawn"
else ok "stderr a file: no bar"; fi

pty xterm "$tmp/tty" || { bad "calibrate on a terminal exited $?"; tr '\r' '\n' <"$tmp/tty" | tail -5; }
python3 - "$tmp/tty" <<'PY'
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
bars = re.findall(r"\] +(\d+)% (\S+(?: \S+)?) +<=", text)
assert len(bars) >= 2, "too few bars: %r" % text[:300]
pct = [int(p) for p, _ in bars]
assert pct == sorted(pct), "the bar moved back: %s" % pct
share = {"latency": (0, 65), "signaling": (65, 82), "load bands": (81, 93), "cq moderation": (93, 100), "done": (100, 100)}
for p, phase in bars:
    lo, hi = share[phase]
    assert lo <= int(p) <= hi, "%s at %s%%, outside %s-%s%%" % (phase, p, lo, hi)
assert bars[-1] == ("100", "done"), bars[-1]
print("  %d bars, %s" % (len(bars), " ".join("%s%%:%s" % b for b in bars[::max(1, len(bars) // 8)])))
PY
if [ $? = 0 ]; then ok "terminal: bars drawn, monotone, phases in their shares, ending at 100% done"
else bad "terminal bars"; tr '\r' '\n' <"$tmp/tty" | tail -20; fi

[ "$fails" = 0 ] || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS: calibrate progress"
