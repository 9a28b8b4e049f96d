#!/usr/bin/env bash
# Layering one way (STYLE.md §1, docs/decisions/0013): no module of src/ uses one in a higher
# layer or in its own, and no file includes another module's private header. The module graph
# comes from the object files of this build (scripts/modgraph.sh --check prints what is wrong).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${REIN_BUILD_DIR:?REIN_BUILD_DIR is set by CTest}
if ! command -v nm >/dev/null; then
  echo "SKIP: nm (binutils) is not installed"
  exit 77
fi
"$root/scripts/modgraph.sh" --check "$build"
