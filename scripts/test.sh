#!/usr/bin/env bash
# Installs the dependencies, builds trainprof, and runs the whole test suite three ways:
# the normal build (every test but label `gpu`), an ASan+UBSan build (the same tests but the
# ones labelled `no-sanitize`, e.g. benchmarks-in-disguise that are too slow instrumented),
# and a TSan build (the tests labelled `tsan`: rings, writer, collector threads).
# Environment: TP_TEST_SANITIZERS=0 skips the two sanitizer builds (quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
run() { echo "+ $*"; "$@"; }

run cmake --preset default
run cmake --build --preset default -j "$jobs"
run ctest --preset default -j "$jobs"

if [ "${TP_TEST_SANITIZERS:-1}" != 0 ]; then
  run cmake --preset asan
  run cmake --build --preset asan -j "$jobs"
  run ctest --preset asan -j "$jobs"
  # TSan: only the multi-threaded cores (rings and writer, collector threads, CPU device, the
  # report's two threads: tp_par, tp_prefault, finish, view, analyses; the Kineto Python pass):
  # target tp_tsan_tests builds the programs of the tests labelled tsan (tests/CMakeLists.txt).
  run cmake --preset tsan
  run cmake --build --preset tsan -j "$jobs" --target tp_tsan_tests
  run ctest --preset tsan -j "$jobs"
fi
echo "test.sh: all test runs passed"
