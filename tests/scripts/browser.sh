#!/usr/bin/env bash
# The chat page end to end in headless Chromium (tests/browser/*.test.mjs): playwright-core
# from npm (tests/browser/package.json) drives Debian's /usr/bin/chromium against `rein serve`
# and the scripted model server. Screenshots of every step go to
# $REIN_BUILD_DIR/artifacts/browser/. Skips (77) when Chromium, node or the npm registry is
# missing, and says which.
set -u
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
: "${REIN_BIN:?REIN_BIN is not set}" "${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
chromium="${REIN_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIP: $chromium is not installed (scripts/install-deps.sh installs the chromium package)"
  exit 77
fi
command -v node >/dev/null || { echo "SKIP: node is not installed"; exit 77; }
bash "$src/tests/browser/install.sh" || exit $?
cd "$src/tests/browser" || exit 1
exec node --test --test-reporter=spec --test-timeout=120000 *.test.mjs
