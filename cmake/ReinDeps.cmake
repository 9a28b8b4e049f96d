# The Debian packages of docs/DESIGN.md, found through pkg-config (scripts/install-deps.sh installs
# them). Everything is linked through one interface target so modules need no per-file edits.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(SQLITE REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
pkg_check_modules(EXPAT REQUIRED IMPORTED_TARGET expat)
# RS256 for Google service-account credentials (src/providers/gcpcreds.c, docs/decisions/0033).
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
pkg_check_modules(HIREDIS IMPORTED_TARGET hiredis)
find_path(JSMN_INCLUDE_DIR jsmn.h REQUIRED)

add_library(rein_deps INTERFACE)
target_link_libraries(rein_deps INTERFACE PkgConfig::JANSSON PkgConfig::CURL PkgConfig::MHD
  PkgConfig::SQLITE PkgConfig::PCRE2 PkgConfig::YAML PkgConfig::EXPAT PkgConfig::LIBCRYPTO
  Threads::Threads m)
target_include_directories(rein_deps INTERFACE ${JSMN_INCLUDE_DIR})
if(HIREDIS_FOUND)
  target_link_libraries(rein_deps INTERFACE PkgConfig::HIREDIS)
  target_compile_definitions(rein_deps INTERFACE HAVE_HIREDIS=1)
endif()
