# OTLP/HTTP protobuf encoding of spans (docs/decisions/0029): the opentelemetry-proto v1.7.0
# definitions, taken from the npm registry at build time (src/trace/otlp-proto/package.json,
# pinned with its integrity by package-lock.json; scripts/otlp-proto.sh runs `npm ci` and puts
# the files dd-trace vendors at their official paths, decision 0048), are
# compiled with protoc-c into protobuf-c code in the build tree, built as an object library of
# its own (generated code, so rein's warning flags do not apply) and linked into librein.
#
# -DREIN_OTLP_PROTOBUF=OFF builds without it (no npm, protoc-c or libprotobuf-c needed): span
# export is then http/json only and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf is refused.

option(REIN_OTLP_PROTOBUF "Export spans as OTLP protobuf (needs npm and protoc-c at build time)" ON)

set(REIN_OTLP_PB_OBJECTS "")
if(REIN_OTLP_PROTOBUF)
  find_program(PROTOC_C protoc-c)
  pkg_check_modules(PROTOBUF_C IMPORTED_TARGET libprotobuf-c)
  if(NOT PROTOC_C OR NOT PROTOBUF_C_FOUND)
    message(FATAL_ERROR "REIN_OTLP_PROTOBUF needs protoc-c (Debian package protobuf-c-compiler) "
      "and libprotobuf-c (libprotobuf-c-dev): scripts/install-deps.sh installs them, or "
      "configure with -DREIN_OTLP_PROTOBUF=OFF")
  endif()
  set(_odir "${CMAKE_BINARY_DIR}/otlp-proto")
  set(_gen "${_odir}/gen/opentelemetry/proto")
  set(REIN_OTLP_PB_SOURCES
    "${_gen}/common/v1/common.pb-c.c" "${_gen}/resource/v1/resource.pb-c.c"
    "${_gen}/trace/v1/trace.pb-c.c" "${_gen}/collector/trace/v1/trace_service.pb-c.c"
    "${_gen}/metrics/v1/metrics.pb-c.c" "${_gen}/collector/metrics/v1/metrics_service.pb-c.c")
  set(REIN_OTLP_PB_HEADERS
    "${_gen}/common/v1/common.pb-c.h" "${_gen}/resource/v1/resource.pb-c.h"
    "${_gen}/trace/v1/trace.pb-c.h" "${_gen}/collector/trace/v1/trace_service.pb-c.h"
    "${_gen}/metrics/v1/metrics.pb-c.h" "${_gen}/collector/metrics/v1/metrics_service.pb-c.h")
  add_custom_command(OUTPUT ${REIN_OTLP_PB_SOURCES} ${REIN_OTLP_PB_HEADERS}
    COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/otlp-proto.sh
            ${CMAKE_SOURCE_DIR}/src/trace/otlp-proto ${_odir} ${PROTOC_C}
    DEPENDS ${CMAKE_SOURCE_DIR}/src/trace/otlp-proto/package.json
            ${CMAKE_SOURCE_DIR}/src/trace/otlp-proto/package-lock.json
            ${CMAKE_SOURCE_DIR}/scripts/otlp-proto.sh ${CMAKE_SOURCE_DIR}/scripts/npm-ci.sh
    COMMENT "Fetching and compiling the OpenTelemetry protocol (npm ci, protoc-c)" VERBATIM)
  # One target runs the command; the libraries wait for it (listing its outputs in two
  # targets that build in parallel would run it twice at once).
  add_custom_target(rein_otlp_proto DEPENDS ${REIN_OTLP_PB_SOURCES} ${REIN_OTLP_PB_HEADERS})
  add_library(rein_otlp_pb OBJECT ${REIN_OTLP_PB_SOURCES})
  add_dependencies(rein_otlp_pb rein_otlp_proto)
  add_dependencies(rein_obj rein_otlp_proto)
  target_include_directories(rein_otlp_pb PUBLIC "${_odir}/gen")
  target_link_libraries(rein_otlp_pb PUBLIC PkgConfig::PROTOBUF_C)
  set_target_properties(rein_otlp_pb PROPERTIES POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden)
  target_link_libraries(rein_deps INTERFACE PkgConfig::PROTOBUF_C)
  # Only the encoder sees the generated headers (the rest of librein is not rebuilt for them).
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/trace/otlp_proto.c PROPERTIES
    COMPILE_DEFINITIONS HAVE_OTLP_PROTOBUF=1 INCLUDE_DIRECTORIES "${_odir}/gen"
    OBJECT_DEPENDS "${REIN_OTLP_PB_HEADERS}")
  set(REIN_OTLP_PB_OBJECTS $<TARGET_OBJECTS:rein_otlp_pb>)
  set(REIN_OTLP_PROTO_DIR "${_odir}/protos")
endif()
