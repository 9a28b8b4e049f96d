#!/usr/bin/env bash
# Checks, before CMake runs, that what a make target needs is installed; names what is missing,
# the Debian package that has it and the command that installs it, and exits 1. Nothing is
# installed here (scripts/install-deps.sh does that; make test and make run call it first).
#   scripts/check-deps.sh build|test|lint|fuzz|install
# pkg-config answers for the libraries, so PKG_CONFIG_PATH / PKG_CONFIG_LIBDIR are honoured.
set -u
target=${1:-build}

# what  kind  Debian-package  (kind: pc = pkg-config module, cmd = command, hdr = C header)
build_deps=(
  "cmake cmd cmake"
  "make cmd make"
  "cc cmd build-essential"
  "pkg-config cmd pkg-config"
  "jansson pc libjansson-dev"
  "libcurl pc libcurl4-openssl-dev"
  "libmicrohttpd pc libmicrohttpd-dev"
  "sqlite3 pc libsqlite3-dev"
  "libpcre2-8 pc libpcre2-dev"
  "yaml-0.1 pc libyaml-dev"
  "jsmn.h hdr libjsmn-dev"
  "libprotobuf-c pc libprotobuf-c-dev"
  "protoc-c cmd protobuf-c-compiler"
)
test_deps=("cmocka pc libcmocka-dev" "redis-server cmd redis-server" "python3 cmd python3"
  "libcrypto pc libssl-dev" "zlib pc zlib1g-dev")
lint_deps=("clang-format cmd clang-format" "clang-tidy cmd clang-tidy" "cppcheck cmd cppcheck")
fuzz_deps=("clang cmd clang")

case "$target" in
  build | install | bench) wanted=("${build_deps[@]}") ;;
  test) wanted=("${build_deps[@]}" "${test_deps[@]}") ;;
  lint) wanted=("${build_deps[@]}" "${lint_deps[@]}") ;;
  fuzz) wanted=("${build_deps[@]}" "${fuzz_deps[@]}") ;;
  *) echo "check-deps: unknown target '$target' (build, test, lint, fuzz, install)" >&2; exit 2 ;;
esac

have() {
  local what=$1 kind=$2
  case "$kind" in
    cmd) command -v "$what" >/dev/null 2>&1 ;;
    pc) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$what" 2>/dev/null ;;
    hdr) command -v cc >/dev/null 2>&1 &&
      echo "#include <$what>" | cc -E -x c - >/dev/null 2>&1 ;;
  esac
}

missing=()
packages=()
for w in "${wanted[@]}"; do
  read -r what kind pkg <<<"$w"
  if ! have "$what" "$kind"; then
    case "$kind" in
      pc) missing+=("$(printf '%-14s %-26s Debian package %s' "$what" "(library, pkg-config)" "$pkg")") ;;
      cmd) missing+=("$(printf '%-14s %-26s Debian package %s' "$what" "(command)" "$pkg")") ;;
      hdr) missing+=("$(printf '%-14s %-26s Debian package %s' "$what" "(C header)" "$pkg")") ;;
    esac
    case " ${packages[*]} " in *" $pkg "*) ;; *) packages+=("$pkg") ;; esac
  fi
done
# Optional: without hiredis rein builds, but redis:// stores answer "not supported".
if ! have hiredis pc; then
  echo "make: note: libhiredis-dev is not installed: rein builds without the Redis store" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0

{
  echo "make $target: rein needs what is not installed:"
  printf '  %s\n' "${missing[@]}"
  echo "Install them with:"
  echo "  sudo apt-get install -y ${packages[*]}"
  echo "or everything the build and the tests use, as root: scripts/install-deps.sh"
} >&2
exit 1
