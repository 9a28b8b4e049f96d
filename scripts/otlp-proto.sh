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
# fetched is committed (docs/decisions/0024).
# usage: scripts/otlp-proto.sh OTLP_PROTO_DIR OUT_DIR PROTOC_C
set -euo pipefail
src="$1"
out="$2"
protoc="$3"
if ! command -v npm >/dev/null; then
  echo "otlp-proto: npm is not installed; scripts/install-deps.sh installs it (or configure" \
    "with -DREIN_OTLP_PROTOBUF=OFF for span export in http/json only)" >&2
  exit 1
fi
work="$out/npm"
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$work/"
log="$work/npm-ci.log"
if ! (cd "$work" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund >"$log" 2>&1); then
  echo "otlp-proto: npm ci failed (is the npm registry reachable?):" >&2
  tail -5 "$log" >&2
  exit 1
fi
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
