# TP_SANITIZE=address,undefined or thread: applies to every target in the tree.
if(TP_SANITIZE)
  message(STATUS "trainprof: sanitizers ${TP_SANITIZE}")
  add_compile_options(-fsanitize=${TP_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TP_SANITIZE})
endif()
