#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Opens an `rtune report --html` page in headless Chromium (no network, no GPU, a throw-away profile), takes a
# screenshot and checks it is a real rendering: a PNG of the requested size that is not blank (many distinct colours,
# with the chart colours present). One bounded run (timeout 120 s). Exit 77 (skipped) when chromium is not installed
# (scripts/install-deps installs it).
# usage: test_report_chromium.sh RTUNE REPORT_FLEET_GEN
set -euo pipefail
rtune=$1 gen=$2
command -v chromium > /dev/null || { echo "chromium not installed (scripts/install-deps): skipped"; exit 77; }
t=$(mktemp -d /tmp/rtune-report-chromium.XXXXXX)
trap 'rm -rf "$t"' EXIT
now=1780000000
"$gen" json "$t/fleet" 9 2 25 3 $now > /dev/null
"$gen" store "$t/fleet/rack.db" rack 5 $now
"$rtune" report --now $now --html "$t/report.html" "$t/fleet" > /dev/null
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --disable-extensions --user-data-dir="$t/profile" --screenshot="$t/shot.png" \
  --window-size=1200,1600 "file://$t/report.html" > "$t/chromium.log" 2>&1 || {
  echo "chromium failed:"; tail -20 "$t/chromium.log"; exit 1; }
[ -s "$t/shot.png" ] || { echo "no screenshot written"; tail -20 "$t/chromium.log"; exit 1; }
python3 - "$t/shot.png" <<'EOF'
# Decodes the PNG (8-bit RGB/RGBA, non-interlaced: what Chromium writes) with zlib only and counts colours.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, rows = bytearray(stride), set(), 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 2 == 0:  # every other row is plenty to judge
        for x in range(0, stride, bpp):
            colours.add(bytes(line[x:x + 3]))
    prev, rows = line, rows + 1
print(f"screenshot {w}x{h}, {len(colours)} distinct colours")
assert (w, h) == (1200, 1600), (w, h)
assert len(colours) >= 50, f"blank-looking page: {len(colours)} colours"
# the histogram bars (#4a7ab5) and the outlier red (#d62728) are drawn
assert bytes.fromhex("4a7ab5") in colours, "no histogram bar colour in the screenshot"
EOF
echo "test_report_chromium: ok"
