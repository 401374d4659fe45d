#!/bin/sh
# The nested Timeline as --snapshot draws it, at 200x50 and 80x24:
#   - golden frames of the committed trainer sample (tests/tui/golden/; with --no-symbols, so
#     the frames do not depend on the binaries of this machine). After an intended change,
#     regenerate them with TP_UPDATE_GOLDEN=1 and review the diff;
#   - a CPython program with three threads and nested NVTX ranges (tests/tui/py/
#     three_threads.py, through the `nvtx` package), recorded now: its timing varies, so its
#     frames are checked for structure (check_timeline.py): distinguishable lanes, levels,
#     names, and the selected range's push stack with its Python frames first.
# usage: test_tui_timeline_snapshot.sh TRAINPROF SOURCE_DIR PYTHON
set -u
tp=$1 src=$2 py=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sample=$src/traces/samples/cpu-trainer-input-bound.tprof
for size in 200x50 80x24; do
    w=${size%x*} h=${size#*x}
    golden=$src/tests/tui/golden/input-bound-timeline-$size.txt
    "$tp" tui "$sample" --no-symbols --snapshot --view timeline --width "$w" --height "$h" \
        >"$tmp/$size.txt" || fail "snapshot $size exited $?"
    if [ "${TP_UPDATE_GOLDEN:-}" = 1 ]; then
        cp "$tmp/$size.txt" "$golden"
    fi
    diff -u "$golden" "$tmp/$size.txt" || fail "the $size Timeline differs from $golden"
    echo "ok: golden $size"
done

pyenv=$src/.deps/pyenv/bin/python
if [ ! -x "$pyenv" ] || ! "$pyenv" -c "import nvtx" 2>/dev/null; then
    echo "SKIP: no .deps/pyenv Python with the nvtx package"
    exit 77
fi
if ! "$tp" record --stacks all -o "$tmp/py.tprof" -- "$pyenv" \
    "$src/tests/tui/py/three_threads.py" "$tmp/tids.txt" >"$tmp/record.log" 2>&1; then
    if grep -q "ASan runtime does not come first" "$tmp/record.log"; then
        # A sanitizer build's collector cannot be preloaded into the uninstrumented Python.
        echo "note: sanitizer build, no CPython recording; the goldens only"
        exit 0
    fi
    cat "$tmp/record.log"
    fail "record failed"
fi
for size in 200x50 80x24; do
    w=${size%x*} h=${size#*x}
    "$tp" tui "$tmp/py.tprof" --snapshot --view timeline --width "$w" --height "$h" \
        >"$tmp/py-$size.txt" || fail "snapshot $size exited $?"
    "$py" "$src/tests/tui/check_timeline.py" "$tmp/py-$size.txt" "$tmp/tids.txt" "$w" "$h" || exit 1
done
