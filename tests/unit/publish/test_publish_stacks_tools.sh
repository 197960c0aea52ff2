#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The stacks read what the agent writes, checked with the stacks' own tools where installed:
#  - UCX (ucx_info): the published ucx.conf, found through UCX_CONFIG_DIR, sets UCX_RC_TX_CQ_MODERATION and
#    UCX_RC_TX_MIN_INLINE for rc_verbs and rc_mlx5 (the fixture's 15 and 256; UCX's defaults are 64 and 64, which the
#    same query shows without the file, so the check can fail); an operator's earlier line loses to rtune's section;
#    on a UCX with config-file filters (ucx_info -s prints "Product name"), a section for another product is skipped.
#  - libfabric (fi_info -e): every FI_ variable the env file sets is one the verbs provider defines.
# 77: neither tool is installed.
set -euo pipefail
sample=$1
have_ucx=0 have_fab=0
command -v ucx_info >/dev/null && have_ucx=1
command -v fi_info >/dev/null && have_fab=1
[ $have_ucx = 1 ] || [ $have_fab = 1 ] || { echo "ucx_info and fi_info missing (apt-get install ucx-utils libfabric-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sample" "$tmp"

ucx() { # ucx DIR VAR: the value UCX configures for VAR with DIR/ucx.conf (no $HOME or ./ucx.conf)
  (cd "$tmp/empty" && HOME=$tmp/empty UCX_CONFIG_DIR=$1 ucx_info -c -f 2>/dev/null) | sed -n "s/^$2=//p" | head -1
}
expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || { echo "$1: got '$2', want '$3'"; exit 1; }
  echo "ok: $1 = $3"
}
if [ $have_ucx = 1 ]; then
  mkdir -p "$tmp/empty" "$tmp/none" "$tmp/ucx" "$tmp/op" "$tmp/other"
  cp "$tmp/ucx.conf" "$tmp/ucx/ucx.conf"
  expect "UCX default rc_verbs moderation" "$(ucx "$tmp/none" UCX_RC_VERBS_TX_CQ_MODERATION)" 64
  expect "rc_verbs moderation from ucx.conf" "$(ucx "$tmp/ucx" UCX_RC_VERBS_TX_CQ_MODERATION)" 15
  expect "rc_mlx5 moderation from ucx.conf" "$(ucx "$tmp/ucx" UCX_RC_MLX5_TX_CQ_MODERATION)" 15
  expect "rc_verbs min inline from ucx.conf" "$(ucx "$tmp/ucx" UCX_RC_VERBS_TX_MIN_INLINE)" 256
  expect "rc_mlx5 min inline from ucx.conf" "$(ucx "$tmp/ucx" UCX_RC_MLX5_TX_MIN_INLINE)" 256
  # an operator's line before rtune's section: rtune's is last and wins
  { echo "UCX_RC_TX_CQ_MODERATION=3"; cat "$tmp/ucx.conf"; } > "$tmp/op/ucx.conf"
  expect "moderation with an operator's earlier line" "$(ucx "$tmp/op" UCX_RC_VERBS_TX_CQ_MODERATION)" 15
  # the environment wins over the file
  got=$(cd "$tmp/empty" && HOME=$tmp/empty UCX_CONFIG_DIR=$tmp/ucx UCX_RC_TX_CQ_MODERATION=7 ucx_info -c -f 2>/dev/null |
        sed -n 's/^UCX_RC_VERBS_TX_CQ_MODERATION=//p' | head -1)
  expect "moderation with the variable in the environment" "$got" 7
  if ucx_info -s 2>/dev/null | grep -q "Product name"; then
    grep -v '^Product name=' "$tmp/ucx.conf" |
      sed 's/^\[rtune-agent\]$/&\nProduct name=rtune-test-no-such-product/' > "$tmp/other/ucx.conf"
    expect "moderation from a section for another product" "$(ucx "$tmp/other" UCX_RC_VERBS_TX_CQ_MODERATION)" 64
  else
    echo "note: UCX $(ucx_info -v | sed -n 's/^# Version //p') has no config-file filters: the Product name check is skipped"
  fi
fi
if [ $have_fab = 1 ]; then
  known=$(fi_info -e 2>/dev/null | sed -n 's/^# \(FI_[A-Z0-9_]*\): .*/\1/p' | sort -u)
  set_vars=$(sed -n 's/^\(FI_[A-Z0-9_]*\)=.*/\1/p' "$tmp/libfabric.env")
  [ -n "$set_vars" ] || { echo "the fixture's libfabric.env sets nothing"; exit 1; }
  for v in $set_vars; do
    grep -qx "$v" <<<"$known" || { echo "libfabric does not define $v"; exit 1; }
    echo "ok: libfabric defines $v"
  done
  grep -qx FI_VERBS_NO_SUCH_VARIABLE <<<"$known" && { echo "fi_info -e check cannot fail"; exit 1; }
fi
exit 0
