#!/bin/sh
# Regenerates the samples in tests/data/logparse/ that real tools write (see README.md here).
# Not run by the tests: it needs python3, golang-go with Debian's Go logging libraries, a JDK
# with liblogback-java and liblog4j2-java, nginx, apache2-bin, util-linux logger, node and npm.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(dirname "$here")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/python_logging.py" "$out"
python3 "$here/syslog_logs.py" "$out"
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$tmp/gocache" go run "$here/go_logs.go" "$out"
cp1=/usr/share/java/logback-classic.jar:/usr/share/java/logback-core.jar:/usr/share/java/slf4j-api.jar
cp2=/usr/share/java/log4j-api.jar:/usr/share/java/log4j-core.jar
javac -d "$tmp" -cp "$cp1" "$here/LogbackGen.java" && java -cp "$cp1:$tmp" LogbackGen "$out"
javac -d "$tmp" -cp "$cp2" "$here/Log4j2Gen.java" && java -cp "$cp2:$tmp" Log4j2Gen "$out"
"$here/nginx_logs.sh" "$out"
"$here/apache_logs.sh" "$out"
(cd "$tmp" && npm init -y >/dev/null && npm install --silent pino bunyan winston)
NODE_PATH="$tmp/node_modules" node "$here/node_logs.js" "$out"
echo "now run: REIN_UPDATE_EXPECTED=1 build-test/tests/test_logparse, and review the diff"
