#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The agent's Prometheus textfile and the shipped rules through Prometheus' own tool: `promtool check metrics` on
# the file the real publisher writes (lint included: names, units, HELP/TYPE), `promtool check rules` and
# `promtool test rules` on deploy/prometheus, and every rtune_* metric the rules and their test read is one the
# publisher writes (a renamed metric would leave the alerts silently empty). 77: promtool is not installed.
set -euo pipefail
sample=$1 rules=$2
command -v promtool >/dev/null || { echo "promtool missing (apt-get install prometheus)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$sample" "$tmp"
out=$(promtool check metrics < "$tmp/rtune.prom" 2>&1) || { echo "promtool check metrics failed: $out"; exit 1; }
[ -z "$out" ] || { echo "promtool check metrics complained: $out"; exit 1; }
# the check can fail: a counter-style name on a gauge and a missing HELP are reported
printf '# TYPE rtune_bad_total gauge\nrtune_bad_total 1\n' > "$tmp/bad.prom"
if bad=$(promtool check metrics < "$tmp/bad.prom" 2>&1) && [ -z "$bad" ]; then
  echo "promtool check metrics accepted a bad file"; exit 1
fi

promtool check rules "$rules/rtune-rules.yml"
(cd "$rules" && promtool test rules rtune-rules.test.yml)

written=$(grep -v '^#' "$tmp/rtune.prom" | sed 's/[{ ].*//' | sort -u)
read_by_rules=$(grep -ohE 'rtune_[a-z_]+' "$rules/rtune-rules.yml" "$rules/rtune-rules.test.yml" | sort -u)
missing=$(comm -13 <(echo "$written") <(echo "$read_by_rules"))
[ -z "$missing" ] || { echo "rules read metrics the agent does not write: $missing"; exit 1; }
echo "ok: $(echo "$written" | wc -l) metrics checked, rules read $(echo "$read_by_rules" | wc -l) of them"
