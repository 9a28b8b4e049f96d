#!/usr/bin/env bash
# Fetches the official OpenTelemetry protocol definitions (opentelemetry-proto, as shipped in
# the npm package src/trace/otlp-proto/package.json names, pinned with its integrity by
# src/trace/otlp-proto/package-lock.json) and compiles the ones span export needs with
# protoc-c. Leaves in OUT:
#   protos/opentelemetry/proto/...      the .proto files (the tests' receiver decodes with them)
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
"$(dirname "$0")/npm-ci.sh" "$src" "$work" otlp-proto \
  "or configure with -DREIN_OTLP_PROTOBUF=OFF for span export in http/json only"
protos="$work/node_modules/@opentelemetry/otlp-grpc-exporter-base/build/protos"
rm -rf "$out/protos" "$out/protos-c" "$out/gen.tmp"
cp -r "$protos" "$out/protos"
cp -r "$protos" "$out/protos-c"
p=opentelemetry/proto
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
