# Warning flags of STYLE.md §5 and the sanitizer options, applied per target.
add_library(rein_sanitize INTERFACE)
if(REIN_ASAN)
  target_compile_options(rein_sanitize INTERFACE -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(rein_sanitize INTERFACE -fsanitize=address)
endif()
if(REIN_UBSAN)
  target_compile_options(rein_sanitize INTERFACE -fsanitize=undefined
    -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(rein_sanitize INTERFACE -fsanitize=undefined -fno-sanitize-recover=all)
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
