# The chat page's syntax highlighter, taken from the npm registry at build time
# (docs/decisions/0018): web/vendor/package.json names highlight.js's browser build and
# web/vendor/package-lock.json pins its version and integrity; scripts/web-vendor.sh runs
# `npm ci` (which checks the tarball against the lock) and leaves hljs.js and its licence in
# the build tree, to be embedded beside the files of web/. Re-run only when the lock changes.
#
# -DREIN_WEB_VENDOR=OFF builds without it (no npm needed): code blocks keep their language
# label and copy button but are not coloured.

option(REIN_WEB_VENDOR "Embed the chat page's syntax highlighter (needs npm at build time)" ON)

set(REIN_WEB_VENDOR_FILES "")
if(REIN_WEB_VENDOR)
  set(_vdir "${CMAKE_BINARY_DIR}/web-vendor")
  set(REIN_WEB_VENDOR_FILES "${_vdir}/hljs.js" "${_vdir}/hljs-license.txt")
  add_custom_command(OUTPUT ${REIN_WEB_VENDOR_FILES}
    COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/web-vendor.sh ${CMAKE_SOURCE_DIR}/web/vendor ${_vdir}
    DEPENDS ${CMAKE_SOURCE_DIR}/web/vendor/package.json
            ${CMAKE_SOURCE_DIR}/web/vendor/package-lock.json
            ${CMAKE_SOURCE_DIR}/scripts/web-vendor.sh ${CMAKE_SOURCE_DIR}/scripts/npm-ci.sh
    COMMENT "Fetching the chat page's highlighter (web/vendor, npm ci)" VERBATIM)
endif()
