#!/usr/bin/env bash
# Instructions per NVTX push+pop pair without stacks, counted by callgrind (a loaded machine
# does not change them, where it makes timings meaningless): bench_collector_nvtx's child
# (605,000 pairs: 5,000 warm-up, 150 batches of 4,000) under each collector library given.
# The count is the self cost of every callgrind entry of the hooks and of the general path
# they fall back to, inlined parts included (callgrind lists those per source file, so the
# inclusive figure of one entry misses them).
#   bench/bench_nvtx_instructions.sh BUILD_DIR [COLLECTOR.so ...]
# Default library: BUILD_DIR/lib/libtrainprof-collector.so.
set -euo pipefail
build=${1:-build}
shift || true
[ $# -gt 0 ] || set -- "$build/lib/libtrainprof-collector.so"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fns='h_push_a|h_pop|push_common|pop_common|push_attr|pop_any|tp_collector_thread_slow'
fns="$fns|tp_collector_intern_miss|tp_stage__check_fill|tp_stage__reserve_slow|attr_message"
for lib in "$@"; do
    lib=$(realpath "$lib")
    rm -f "$tmp/n.tprof" "$tmp/cg.out"
    # The recording's target is the benchmark itself: valgrind runs it under this pid.
    LIB=$lib OUT=$tmp/n.tprof CG=$tmp/cg.out BENCH=$build/bench/bench_collector_nvtx sh -c '
        export TRAINPROF_TARGET_PID=$$ NVTX_INJECTION64_PATH=$LIB TRAINPROF_OUTPUT=$OUT
        export TRAINPROF_STACKS=none
        exec valgrind --tool=callgrind --callgrind-out-file="$CG" "$BENCH" --child' \
        >/dev/null 2>"$tmp/err" || true # the child's exit status is not an error code
    [ -s "$tmp/cg.out" ] || { cat "$tmp/err" >&2; exit 1; }
    callgrind_annotate --threshold=100 "$tmp/cg.out" | grep -v '=>' | awk -v lib="$lib" -v re=":($fns)( |\$)" '
        $0 ~ re { gsub(",", "", $1); if ($0 ~ /push/) push += $1; else pop += $1 }
        END { printf "%s: push %.1f + pop %.1f = %.1f instructions per pair\n", lib,
                     push / 605000, pop / 605000, (push + pop) / 605000 }'
done
