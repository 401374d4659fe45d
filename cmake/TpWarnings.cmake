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
endfunction()
