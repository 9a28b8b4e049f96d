#!/usr/bin/env bash
# The build (issue 16 item 9): every make target checks what it needs before CMake runs and
# names what is missing with the command that installs it (simulated without a container: a
# pkg-config that finds no module); a configure that fails leaves nothing that breaks the next
# make; `make install` (cmake --install) puts rein where PATH finds it; every link in the
# README leads somewhere in a clone.
set -u
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
build="${REIN_BUILD_DIR:?REIN_BUILD_DIR is not set}"
command -v make >/dev/null && command -v cmake >/dev/null || { echo "make or cmake is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

nopc=(env "PKG_CONFIG_LIBDIR=$tmp/no-modules" PKG_CONFIG_PATH=)
mkdir -p "$tmp/no-modules"

# ---- missing libraries are named before CMake runs, for every target that builds ----
for target in all build lint install; do
  run 2 "${nopc[@]}" make -C "$src" --no-print-directory BUILD="$tmp/b-$target" "$target"
  for want in "jansson" "libjansson-dev" "libcurl4-openssl-dev" "libmicrohttpd-dev" \
    "libsqlite3-dev" "libpcre2-dev" "libyaml-dev" "sudo apt-get install -y" "scripts/install-deps.sh"; do
    grep -qF -- "$want" "$tmp/err" || fail "make $target does not name $want: $(cat "$tmp/err")"
  done
  grep -q "CMake Error\|No rule to make target" "$tmp/err" && fail "make $target reached CMake: $(cat "$tmp/err")"
  [ -e "$tmp/b-$target" ] && fail "make $target left $tmp/b-$target behind"
done
"$src/scripts/check-deps.sh" build >"$tmp/out" 2>"$tmp/err" || fail "check-deps build fails here: $(cat "$tmp/err")"
run 2 "$src/scripts/check-deps.sh" nonsense

# ---- a configure that fails leaves nothing that breaks the next make ----
for attempt in 1 2; do
  run 2 make -C "$src" --no-print-directory BUILD="$tmp/broken" CMAKE_ARGS=-DCMAKE_C_COMPILER=/nonexistent/cc build
  grep -q "No rule to make target" "$tmp/err" && fail "attempt $attempt: a half-made build folder: $(cat "$tmp/err")"
  grep -q "CMAKE_C_COMPILER" "$tmp/err" || fail "attempt $attempt: CMake's reason is not shown: $(cat "$tmp/err")"
  [ -e "$tmp/broken/CMakeCache.txt" ] && fail "attempt $attempt left a CMakeCache.txt"
  [ -e "$tmp/broken/Makefile" ] && fail "attempt $attempt left a Makefile"
done

# ---- make install / cmake --install put rein on PATH ----
run 0 make -C "$src" --no-print-directory -n install PREFIX="$tmp/prefix"
grep -q "cmake --install build --prefix $tmp/prefix" "$tmp/out" || fail "make -n install: $(cat "$tmp/out")"
run 0 cmake --install "$build" --prefix "$tmp/prefix"
[ -x "$tmp/prefix/bin/rein" ] || fail "no $tmp/prefix/bin/rein"
run 0 env PATH="$tmp/prefix/bin:$PATH" rein --version
grep -q "^rein " "$tmp/out" || fail "the installed rein: $(cat "$tmp/out")"
[ -f "$tmp/prefix/include/rein/rein.h" ] || fail "the headers were not installed"
ls "$tmp/prefix"/lib*/pkgconfig/rein.pc >/dev/null 2>&1 || fail "rein.pc was not installed"

# ---- every link in the README works in a clone: tracked files, and headings for #anchors ----
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files >"$tmp/tracked"
  python3 - "$src/README.md" "$tmp/tracked" <<'EOF' || fail "README links"
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
tracked = set(open(sys.argv[2]).read().split("\n"))
dirs = set()
for t in tracked:
    d = os.path.dirname(t)
    while d:
        dirs.add(d)
        d = os.path.dirname(d)
# GitHub's anchors: lower case, punctuation dropped, spaces to hyphens.
prose = re.sub(r"```.*?```", "", text, flags=re.S)
anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
           for h in re.findall(r"^#+ (.*)$", prose, re.M)}
bad = []
for target in re.findall(r"\]\(([^)\s]+)\)", prose):
    if re.match(r"[a-z]+:", target):
        continue
    path, _, anchor = target.partition("#")
    path = os.path.normpath(path) if path else ""
    if path and path not in tracked and path not in dirs:
        bad.append(target + " (not in a clone)")
    elif not path and anchor not in anchors:
        bad.append(target + " (no such heading)")
if bad:
    print("README links that lead nowhere:", *bad, sep="\n  ")
    sys.exit(1)
EOF
fi
exit 0
