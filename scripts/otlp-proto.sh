#!/usr/bin/env bash
# Fetches the official OpenTelemetry protocol definitions (opentelemetry-proto, as shipped in
# the npm package src/trace/otlp-proto/package.json names, pinned with its integrity by
# src/trace/otlp-proto/package-lock.json) and compiles the ones span export needs with
# protoc-c. Leaves in OUT:
#   protos/opentelemetry/proto/...      the .proto files (the tests' receiver decodes with them)
#   gen/opentelemetry/proto/...pb-c.[ch] protobuf-c's code for common, resource, trace and the
#                                        trace collector service
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
rm -rf "$out/protos" "$out/gen.tmp"
cp -r "$protos" "$out/protos"
mkdir -p "$out/gen.tmp"
p=opentelemetry/proto
"$protoc" -I"$out/protos" --c_out="$out/gen.tmp" "$out/protos/$p/common/v1/common.proto" \
  "$out/protos/$p/resource/v1/resource.proto" "$out/protos/$p/trace/v1/trace.proto" \
  "$out/protos/$p/collector/trace/v1/trace_service.proto"
rm -rf "$out/gen"
mv "$out/gen.tmp" "$out/gen"
