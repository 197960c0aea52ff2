#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rtune devices on a real device: finds rxe0 with an active port and GIDs; its probed max inline for RC (and UD) is a
# value ibv_create_qp accepts while value+1 is refused (checked by an independent helper); --json parses and agrees;
# -d with an unknown name is a usage error (exit 2) that lists rxe0.
set -euo pipefail
rtune=$RTUNE_BUILD_DIR/cli/rtune
check=$RTUNE_BUILD_DIR/tests/rxe/qp_inline_check
fail() { echo "FAIL: $*"; exit 1; }

"$rtune" devices | tee /tmp/devices.txt
grep -q '^rxe0$' /tmp/devices.txt || fail "rxe0 not listed"
grep -q 'port 1: active, Ethernet' /tmp/devices.txt || fail "port 1 not active Ethernet"
grep -q 'pcie: not a PCI device' /tmp/devices.txt || fail "rxe0 reported as PCI"

"$rtune" devices --json > /tmp/devices.json
read -r rc_max ud_max nports ngids < <(python3 - <<'PY'
import json
d = json.load(open("/tmp/devices.json"))
assert d["node"]["cpu_count"] >= 1 and d["node"]["numa_nodes"] >= 1
[dev] = [x for x in d["devices"] if x["name"] == "rxe0"]
for k in ("node_guid", "fw_ver", "vendor_id", "vendor_part_id", "caps", "max_inline_data", "numa_node", "pcie", "ports"):
    assert k in dev, k
assert dev["caps"]["max_qp_wr"] > 0 and dev["caps"]["max_sge"] > 0
port = dev["ports"][0]
assert port["state"] == "active" and port["link_layer"] == "Ethernet" and port["active_mtu_bytes"] >= 256
assert any(g["gid"].endswith("c000:0201") for g in port["gids"]), port["gids"]  # ::ffff:192.0.2.1
# the whole table through ibv_query_gid_table, with types and netdevs, and the default pick: RoCE v2 ::ffff:192.0.2.1
assert port["gid_source"] == "ibv_query_gid_table", port["gid_source"]
assert port["gid_valid"] == len(port["gids"]) >= 2, port
assert all(g["type"] in ("RoCE v1", "RoCE v2") and g["netdev"] for g in port["gids"]), port["gids"]
pick = [g for g in port["gids"] if g["index"] == port["default_gid"]["index"]]
assert pick and pick[0]["type"] == "RoCE v2" and pick[0]["gid"].endswith("c000:0201"), (pick, port["default_gid"])
assert port["default_gid"]["reason"].startswith("first RoCE v2 IPv4-mapped GID 192.0.2.1 on "), port["default_gid"]
assert dev["error"] is None and dev["max_inline_error"]["rc"] is None
print(dev["max_inline_data"]["rc"], dev["max_inline_data"]["ud"], len(dev["ports"]), len(port["gids"]))
PY
)
echo "probed max inline: rc=$rc_max ud=$ud_max, ports=$nports, gids=$ngids"
[ "$rc_max" -gt 0 ] || fail "RC max inline not probed"
"$check" rxe0 rc "$rc_max" || fail "create_qp refused the probed RC max inline $rc_max"
if "$check" rxe0 rc $((rc_max + 1)); then fail "create_qp accepted RC max inline + 1 = $((rc_max + 1))"; fi
if [ "$ud_max" != None ]; then
  "$check" rxe0 ud "$ud_max" || fail "create_qp refused the probed UD max inline $ud_max"
  if "$check" rxe0 ud $((ud_max + 1)); then fail "create_qp accepted UD max inline + 1"; fi
fi

set +e
"$rtune" devices -d nosuchdev 2> /tmp/err.txt; rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown device gave exit $rc, not 2"
grep -q "unknown device 'nosuchdev'; devices: rxe0" /tmp/err.txt || fail "unknown device message: $(cat /tmp/err.txt)"
"$rtune" devices -d rxe0 --no-probe | grep -q 'max_inline_rc: not probed' || fail "--no-probe still probed"
echo "PASS: rtune devices on rxe0"
