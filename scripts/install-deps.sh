#!/usr/bin/env bash
# Installs every Debian package rein's build and tests need. Idempotent and quiet when all is
# there. Run as root (or with sudo available) on Debian 12 or later.
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmarks compare against
# Then the npm packages of the node tests (scripts/node-deps.sh; the npm registry must be
# reachable, else those tests skip).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libjansson-dev libjsmn-dev libcurl4-openssl-dev libmicrohttpd-dev libsqlite3-dev
  libhiredis-dev libpcre2-dev libyaml-dev libexpat1-dev libcmocka-dev
  libssl-dev zlib1g-dev  # RS256 for Google service accounts; the model server's SigV4 and AWS event streams
  libprotobuf-c-dev protobuf-c-compiler  # OTLP protobuf span export (docs/decisions/0029)
  redis-server
  clang libclang-rt-14-dev clang-format clang-tidy cppcheck
  curl ca-certificates python3
  python3-pytest python3-coverage gcovr  # real pytest, coverage.py and gcovr runs in verify tests
  chromium fonts-wqy-microhei  # the chat page's browser tests; a CJK font for the Chinese page
  nodejs npm  # the chat page's highlighter (npm at build time), its browser tests, tests/node
)
bench_packages=(
  wrk hyperfine nginx-light
  valgrind  # instruction counts (callgrind) of bench/gateway.sh and bench/trace_span.sh
  python3-jsonschema python3-pydantic python3-fastapi python3-uvicorn
  python3-uvloop python3-httptools
)

if [ "${1:-}" = "--bench" ]; then
  packages+=("${bench_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  # A package counts as present when dpkg says it is installed.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js may come from another source (the machine image ships nodesource's build).
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

node_deps() {
  "$(dirname "$0")/node-deps.sh" || echo "install-deps: the node tests will skip" >&2
}
if [ ${#missing[@]} -eq 0 ]; then
  node_deps
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
node_deps
