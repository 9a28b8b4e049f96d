# Warning flags of STYLE.md §5 and the sanitizer options, applied per target.
add_library(rein_sanitize INTERFACE)
if(REIN_ASAN)
  target_compile_options(rein_sanitize INTERFACE -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(rein_sanitize INTERFACE -fsanitize=address)
  # Sanitized programs start faster (docs/decisions/0107), and the test suite starts thousands:
  # linked at a fixed position, a program carries none of the 300,000 run-time relocations
  # (most of them ASan's descriptions of globals) a PIE applies page by page at each start;
  # with the runtimes linked in, leak checking at exit scans one runtime's globals, not two.
  target_link_options(rein_sanitize INTERFACE
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie -static-libasan>)
endif()
if(REIN_UBSAN)
  target_compile_options(rein_sanitize INTERFACE -fsanitize=undefined
    -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(rein_sanitize INTERFACE -fsanitize=undefined -fno-sanitize-recover=all
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libubsan>)
endif()
if(REIN_TSAN)
  target_compile_options(rein_sanitize INTERFACE -fsanitize=thread)
  target_link_options(rein_sanitize INTERFACE -fsanitize=thread)
endif()

function(rein_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wformat=2
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter)
  if(REIN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  target_link_libraries(${target} PRIVATE rein_sanitize)
endfunction()
