#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The harness's own test (unit tier, no qemu run): run-in-vm with a stand-in qemu-system-x86_64 on PATH that crashes
# (SIGSEGV), fails or succeeds as told. A qemu that dies of a fault signal before the guest reported is run once more
# (single and pair mode, both guests again); a second crash is the harness's 125; a guest's own exit code is never
# retried; a timeout is 124 and never retried.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
t=$(mktemp -d /tmp/rtune-rivm.XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/bin" "$t/cache"
: > "$t/vmlinuz"
: > "$t/initrd"
# the stand-in: counts its calls per guest in the guest's control share, then acts on FAKEQ_MODE
cat > "$t/bin/qemu-system-x86_64" <<'FAKE'
#!/usr/bin/env bash
ctl= port=
for a in "$@"; do
  case "$a" in
    *mount_tag=ctl*) ctl=${a#local,path=}; ctl=${ctl%%,*} ;;
    socket,id=n0,listen=*) port=${a##*:} ;;
  esac
done
n=$(cat "$ctl/.calls" 2>/dev/null || echo 0)
echo $((n + 1)) > "$ctl/.calls"
# the listening guest of a pair accepts the harness's probe connection
[ -z "$port" ] || python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4); s.settimeout(5); s.accept()' "$port" 2>/dev/null &
sleep 0.3
case "$FAKEQ_MODE:$(cat "$ctl/hostname")" in
  crash-once:*) [ "$n" = 0 ] && kill -SEGV $$; echo 0 > "$ctl/rc" ;;
  crash-always:*) kill -SEGV $$ ;;
  fail:*) echo 3 > "$ctl/rc" ;;
  crash-b-once:*-b) [ "$n" = 0 ] && kill -SEGV $$; echo 0 > "$ctl/rc" ;;
  crash-b-once:*) echo 0 > "$ctl/rc" ;;
  hang:*) sleep 30 ;;
esac
wait
exit 0
FAKE
chmod +x "$t/bin/qemu-system-x86_64"
fails=0
# run MODE WANT_RC WANT_CALLS [run-in-vm args...]: the exit code and how many times the guests were started
run() {
  local mode=$1 want=$2 calls=$3 out rc
  shift 3
  out=$(FAKEQ_MODE=$mode PATH="$t/bin:$PATH" RTUNE_VM_KERNEL="$t/vmlinuz" RTUNE_VM_INITRD="$t/initrd" \
    RTUNE_VM_CACHE="$t/cache" TMPDIR="$t" "$here/run-in-vm" --timeout 3 "$@" 2>&1)
  rc=$?
  local n
  n=$(grep -c "qemu died of" <<< "$out")
  if [ "$rc" != "$want" ] || [ "$((n + 1))" != "$calls" ]; then
    echo "FAIL $mode $*: exit $rc (want $want), $((n + 1)) runs (want $calls)"
    sed 's/^/    /' <<< "$out"
    fails=$((fails + 1))
  else
    echo "ok   $mode ${*##*/}: exit $rc, $calls run(s)"
  fi
}
single=("$repo/tests/rxe/smoke.sh")
pair=(--pair "$repo/tests/rxe/pair-smoke-a.sh" "$repo/tests/rxe/pair-smoke-b.sh")
run crash-once 0 2 "${single[@]}"
run crash-always 125 2 "${single[@]}"
run fail 3 1 "${single[@]}"
run hang 124 1 "${single[@]}"
run crash-b-once 0 2 "${pair[@]}"
run crash-always 125 2 "${pair[@]}"
run fail 3 1 "${pair[@]}"
[ "$fails" = 0 ] || { echo "test-run-in-vm: $fails case(s) failed"; exit 1; }
echo "test-run-in-vm: all cases passed"
