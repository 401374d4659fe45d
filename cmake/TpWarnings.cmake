# Warnings as in STYLE.md; -Werror with TP_WERROR (on in CI).
set(TP_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
    -Wno-unused-parameter)
if(TP_WERROR)
  list(APPEND TP_WARNINGS -Werror)
endif()

# tp_target_defaults(target): warnings and the project's include root for one of our targets.
function(tp_target_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${TP_WARNINGS}>)
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE)
  # Each function in a section of its own, so that the trainprof program's link can place the
  # functions a report runs together (cli/CMakeLists.txt, report-functions.txt); else no effect.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-ffunction-sections>)
  # glibc's checked calls, as distributions build by default (Ubuntu 24.04: level 3): a buffer
  # smaller than what the call may write (realpath into less than PATH_MAX) aborts in our
  # tests, not in a user's job (found on the first GPU run). Needs optimization; sanitizer
  # builds (Debug) go without.
  if(NOT TP_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<AND:$<COMPILE_LANGUAGE:C>,$<NOT:$<CONFIG:Debug>>>:-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3>)
  endif()
endfunction()
