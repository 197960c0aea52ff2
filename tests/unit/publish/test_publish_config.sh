#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shipped configurations are ones `rtune agent` accepts: deploy/agent.conf.example and the DaemonSet's ConfigMap,
# their host paths moved into a temporary directory, through `rtune agent --config FILE --once --dry-run` (nothing
# is written). A configuration error is exit 2 with "FILE:LINE: ..."; anything else (0, or 1/3 on a host without an
# RDMA device or store) means the file parsed. A file with a misspelt key must be refused, so the check can fail.
# 77: this rtune has no agent command.
set -euo pipefail
rtune=$1 deploy=$2
"$rtune" agent --help >/dev/null 2>&1 || { echo "this rtune has no 'agent' command"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/prom" "$tmp/nfd" "$tmp/ucx" "$tmp/textfile"
relocate() {
  sed -e "s#/var/lib/rtune#$tmp/state#g; s#/var/spool/rtune#$tmp/spool#g" \
      -e "s#/var/lib/prometheus/node-exporter#$tmp/prom#g; s#/var/lib/node-exporter/textfile#$tmp/textfile#g" \
      -e "s#/etc/kubernetes/node-feature-discovery/features.d#$tmp/nfd#g; s#/etc/ucx#$tmp/ucx#g"
}
check() { # check NAME FILE
  local rc=0
  timeout 120 "$rtune" agent --config "$2" --once --dry-run >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ $rc -eq 2 ] || grep -q "$2:[0-9]" "$tmp/err"; then
    echo "$1 refused: $(head -c 400 "$tmp/err")"; exit 1
  fi
  grep -q "configuration $2:" "$tmp/err" || { echo "$1: the agent did not report its configuration: $(head -c 400 "$tmp/err")"; exit 1; }
  echo "ok: $1 accepted (exit $rc)"
}
relocate < "$deploy/agent.conf.example" > "$tmp/example.conf"
check "deploy/agent.conf.example" "$tmp/example.conf"
python3 - "$deploy/kubernetes/rtune-agent-daemonset.yaml" > "$tmp/cm.raw" <<'PY'
import sys, re
text = open(sys.argv[1]).read()
block = re.search(r"agent\.conf: \|\n((?:    .*\n|\n)+)", text).group(1)
print("".join(line[4:] + "\n" for line in block.splitlines()), end="")
PY
relocate < "$tmp/cm.raw" > "$tmp/cm.conf"
check "the DaemonSet's ConfigMap" "$tmp/cm.conf"
sed 's/^budget = /budgett = /' "$tmp/example.conf" > "$tmp/bad.conf"
rc=0; timeout 60 "$rtune" agent --config "$tmp/bad.conf" --once --dry-run >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] || { echo "a misspelt key was accepted (exit $rc)"; exit 1; }
echo "ok: a misspelt key is refused"
