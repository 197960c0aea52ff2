#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The application side as an outside project sees it: install the build to a scratch prefix (cmake --install
# --prefix), then compile a program against it with nothing but `pkg-config --cflags --libs rtune` (the relocatable
# rtune.pc), run it on a profile, and check what librtune answered. Also checks the JSON Schema file is installed, and
# that every function the installed <rtune/*.h> declare links from an outside program and is exactly what librtune
# exports (rt_error_set/rt_error_clear were declared but not exported).
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

# every public function: the installed headers' declarations (comments stripped) are referenced by an outside program
# that must link against the installed librtune, and librtune exports no rt_ function the headers do not declare
lib=$(find "$tmp/prefix" -name 'librtune.so' | head -1)
inc=$(dirname "$(find "$tmp/prefix" -path '*/rtune/profile.h' | head -1)")
python3 - "$inc" "$tmp/symbols.c" "$tmp/declared" <<'PY'
import os, re, sys
inc, out, listing = sys.argv[1:4]
headers = sorted(h for h in os.listdir(inc) if h.endswith(".h"))
decl, inline = [], set()
for h in headers:
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", open(os.path.join(inc, h)).read(), flags=re.S)
    for m in re.finditer(r"^[A-Za-z_][^;{}()#]*?\b(rt_[a-z0-9_]+)\s*\(", text, flags=re.M):
        if m.group(1) not in decl:
            decl.append(m.group(1))
            if "static inline" in m.group(0):
                inline.add(m.group(1))
with open(out, "w") as f:
    f.write("".join("#include <rtune/%s>\n" % h for h in headers))
    f.write("#include <stdio.h>\n#include <string.h>\n\ntypedef void (*fn)(void);\n")
    f.write("static fn const all[] = {\n%s};\n\n" % "".join("\t(fn)%s,\n" % d for d in decl))
    f.write("""int main(void)
{
	struct rt_error err;
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		n += all[i] != NULL;
	if (rt_error_set(&err, 22, "bad '%s'", "x") != 22 || err.code != 22 || strcmp(err.text, "bad 'x'"))
		return 1;
	rt_error_clear(&err);
	if (err.code || err.text[0])
		return 1;
	rt_error_clear(NULL);
	printf("%u\\n", n);
	return 0;
}
""")
open(listing, "w").write("".join(d + "\n" for d in sorted(set(decl) - inline)))
open(listing.replace("declared", "n_decl"), "w").write("%d\n" % len(decl))
print(len(decl), "functions declared,", len(inline), "inline")
PY
check "the public headers declare functions (rt_error_set and rt_error_clear among them)" \
  grep -qx rt_error_clear "$tmp/declared"
# shellcheck disable=SC2086 # flags are words
# <rtune/verbs.h> is header-only verbs glue: a program that includes it links libibverbs itself
verbs_libs=$([ -f "$inc/verbs.h" ] && pkg-config --libs libibverbs)
# shellcheck disable=SC2086 # flags are words
cc -std=c11 -Wall -Werror -o "$tmp/symbols" "$tmp/symbols.c" $flags $verbs_libs 2>"$tmp/cc2.log"; rc=$?
check "an outside program referencing every public function links against the installed librtune" test $rc -eq 0
[ $rc -eq 0 ] || head -20 "$tmp/cc2.log"
got=$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/symbols"); rc=$?
check "and runs: rt_error_set / rt_error_clear behave as documented, all $(cat "$tmp/n_decl") functions resolved" \
  test $rc -eq 0 -a "$got" = "$(cat "$tmp/n_decl")"
nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^rt_/ {sub(/@.*/, "", $3); print $3}' | sort -u >"$tmp/exported"
check "librtune exports exactly the declared functions (no more, no fewer)" diff "$tmp/declared" "$tmp/exported"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all install checks passed"
