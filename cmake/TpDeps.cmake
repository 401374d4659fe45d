# Third-party libraries, all from Debian -dev packages (scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4) # the default chunk codec (tp_codec)
pkg_check_modules(UNWIND REQUIRED IMPORTED_TARGET libunwind)
pkg_check_modules(YAJL REQUIRED IMPORTED_TARGET yajl)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(DEFLATE REQUIRED IMPORTED_TARGET libdeflate) # chunk crc32, parallel gzip export, whole-file import inflate
# ISA-L's igzip: the Kineto import's streaming inflate, ~3x zlib's speed (zlib reads the
# headers and words the errors). Optional: without it zlib inflates everything.
pkg_check_modules(ISAL IMPORTED_TARGET libisal)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3) # trainprof export --format sqlite
pkg_check_modules(NCURSES REQUIRED IMPORTED_TARGET ncursesw)
pkg_check_modules(DW REQUIRED IMPORTED_TARGET libdw) # elfutils: offline stack symbolization

# NVTX v3 is header-only and has no Debian package: the CUDA toolkit ships it, and so does
# the PyPI wheel nvidia-nvtx (set TP_NVTX_INCLUDE_DIR to its include/ on a laptop without CUDA).
find_path(TP_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
  HINTS /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include
        ${PROJECT_SOURCE_DIR}/.deps/nvtx/include ENV CUDA_HOME
  PATH_SUFFIXES include)
if(NOT TP_NVTX_INCLUDE_DIR)
  message(FATAL_ERROR "trainprof: NVTX v3 headers (nvtx3/nvToolsExt.h) not found")
endif()
add_library(tp_nvtx INTERFACE)
target_include_directories(tp_nvtx SYSTEM INTERFACE ${TP_NVTX_INCLUDE_DIR})
target_link_libraries(tp_nvtx INTERFACE ${CMAKE_DL_LIBS})
