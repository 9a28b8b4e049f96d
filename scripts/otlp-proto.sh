#!/usr/bin/env bash
# Fetches the OpenTelemetry protocol definitions (opentelemetry-proto v1.7.0) and compiles the
# ones export needs with protoc-c (docs/decisions/0029, 0048). The npm packages
# src/trace/otlp-proto/package.json names are pinned with their integrity by its
# package-lock.json: dd-trace, which vendors the v1.7.0 .proto files unchanged but for a first
# line naming their source and imports without directories (the OpenTelemetry JS packages
# stopped shipping .proto files after 0.38.0, whose definitions are v0.18.0), and protobufjs,
# with which the tests' receiver decodes. Optional dependencies are not installed and no
# package's scripts run. Leaves in OUT:
#   protos/opentelemetry/proto/...      the .proto files, at the official paths and with the
#                                        official imports (the tests' receiver decodes with them)
#   gen/opentelemetry/proto/...pb-c.[ch] protobuf-c's code for common, resource, metrics and
#                                        its collector service (metric export), and for trace
#                                        and its service (the unit test that decodes rein's
#                                        own span encoding, docs/decisions/0039)
# protoc-c 1.4.1 does not take proto3 `optional` (metrics.proto's histogram sum, min and max),
# so protoc-c reads a copy in which each `optional T f = N;` is `oneof _f { T f = N; }`: that
# is how protobuf itself defines proto3 optional (a synthetic one-member oneof), so the wire
# format and the explicit presence (a zero sum is still sent) are the same. The receiver in the
# tests reads the unmodified files (docs/decisions/0029).
# Run by the build (cmake/ReinOtlpProto.cmake) when the lock file changes; `npm ci` checks
# every tarball against the lock and keeps them in npm's cache for the next build. Nothing
# fetched is committed (docs/decisions/0029).
# usage: scripts/otlp-proto.sh OTLP_PROTO_DIR OUT_DIR PROTOC_C
set -euo pipefail
src="$1"
out="$2"
protoc="$3"
work="$out/npm"
npm_config_omit=optional "$(dirname "$0")/npm-ci.sh" "$src" "$work" otlp-proto \
  "or configure with -DREIN_OTLP_PROTOBUF=OFF for span export in http/json only"
vendored="$work/node_modules/dd-trace/packages/dd-trace/src/opentelemetry/otlp"
p=opentelemetry/proto
rm -rf "$out/protos" "$out/protos-c" "$out/gen.tmp"
# NAME DIR: vendored NAME.proto to protos/$p/DIR/NAME.proto, its imports given their
# directories back.
place() {
  local from="$vendored/$1.proto" to="$out/protos/$p/$2/$1.proto"
  if ! head -n 1 "$from" | grep -q 'opentelemetry-proto/blob/v1\.7\.0/'; then
    echo "otlp-proto.sh: $from does not name opentelemetry-proto v1.7.0 as its source" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$to")"
  sed -E -e '1d' \
    -e 's#^import "(common|resource|trace|metrics|logs)\.proto";#import "'"$p"'/\1/v1/\1.proto";#' \
    "$from" >"$to"
  if grep -Eq '^import "[^/]*";' "$to"; then
    echo "otlp-proto.sh: $from imports a file this script cannot place" >&2
    exit 1
  fi
}
place common common/v1
place resource resource/v1
place trace trace/v1
place trace_service collector/trace/v1
place metrics metrics/v1
place metrics_service collector/metrics/v1
place logs logs/v1
place logs_service collector/logs/v1
cp -r "$out/protos" "$out/protos-c"
sed -E -i 's/^([[:space:]]*)optional[[:space:]]+([A-Za-z0-9_.]+)[[:space:]]+([A-Za-z0-9_]+)[[:space:]]*=[[:space:]]*([0-9]+)[[:space:]]*;/\1oneof _\3 { \2 \3 = \4; }/' \
  "$out/protos-c/$p/metrics/v1/metrics.proto"
if grep -Eq '^[[:space:]]*optional[[:space:]]' "$out/protos-c/$p/metrics/v1/metrics.proto"; then
  echo "otlp-proto.sh: metrics.proto has an optional field this script cannot rewrite" >&2
  exit 1
fi
mkdir -p "$out/gen.tmp"
i="$out/protos-c"
"$protoc" -I"$i" --c_out="$out/gen.tmp" "$i/$p/common/v1/common.proto" \
  "$i/$p/resource/v1/resource.proto" "$i/$p/trace/v1/trace.proto" \
  "$i/$p/collector/trace/v1/trace_service.proto" "$i/$p/metrics/v1/metrics.proto" \
  "$i/$p/collector/metrics/v1/metrics_service.proto"
rm -rf "$out/gen"
mv "$out/gen.tmp" "$out/gen"
