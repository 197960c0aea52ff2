#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The application side as an outside project sees it: install the build to a scratch prefix (cmake --install
# --prefix), then compile a program against it with nothing but `pkg-config --cflags --libs rtune` (the relocatable
# rtune.pc), run it on a profile, and check what librtune answered. Also checks the JSON Schema file is installed.
# usage: test_install.sh BUILD_DIR PROFILE_JSON
set -uo pipefail
build=$1 profile=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; rc=$?
check "cmake --install to a scratch prefix" test $rc -eq 0
pc=$(find "$tmp/prefix" -name rtune.pc | head -1)
check "rtune.pc installed" test -n "$pc"
check "the JSON Schema is installed" test -n "$(find "$tmp/prefix" -name profile-v1.schema.json)"
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs rtune); rc=$?
check "pkg-config knows rtune" test $rc -eq 0
check "and points into the scratch prefix (relocatable .pc)" grep -q -- "-I$tmp/prefix/" <<<"$flags"
cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <rtune/profile.h>

int main(int argc, char **argv)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	const struct rt_profile_entry *e;

	if (argc < 2 || rt_profile_load(argv[1], &p, &err)) {
		fprintf(stderr, "load: %s\n", argc < 2 ? "no file" : err.text);
		return 1;
	}
	e = rt_profile_entry_at(p, 0);
	if (!e)
		return 1;
	printf("%u %u %d %d\n", rt_profile_inline_threshold(e), rt_profile_signal_interval(e),
	       rt_should_inline(e, rt_profile_inline_threshold(e)), rt_should_inline(e, rt_profile_inline_threshold(e) + 1));
	rt_profile_free(p);
	return 0;
}
C
# shellcheck disable=SC2086 # flags are words
cc -std=c11 -Wall -Werror -o "$tmp/app" "$tmp/app.c" $flags 2>"$tmp/cc.log"; rc=$?
check "an outside program compiles and links with pkg-config's flags only" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/cc.log"
want=$(python3 -c "import json; e=json.load(open('$profile'))['entries'][0]; print(e['inline_threshold'], e['signal_interval'])")
got=$(LD_LIBRARY_PATH=$(dirname "$(find "$tmp/prefix" -name 'librtune.so' | head -1)") "$tmp/app" "$profile")
check "it loads the profile from the installed librtune: threshold and N as in the file, inline at the threshold and not above" \
  test "$got" = "$want 1 0"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all install checks passed"
