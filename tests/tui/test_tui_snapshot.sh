#!/bin/sh
# --snapshot frames of every view of the committed sample, checked against the JSON report,
# and the command's handling of bad input (clear message, non-zero exit, no crash).
# usage: test_tui_snapshot.sh TRAINPROF SOURCE_DIR PYTHON
set -u
tp=$1 src=$2 py=$3
sample=$src/traces/samples/cpu-trainer-input-bound.tprof
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$tp" report --format json "$sample" >"$tmp/report.json" || fail "report failed"
for v in summary timeline kernels ranges copies; do
    "$tp" tui "$sample" --snapshot --width 120 --height 40 --view "$v" >"$tmp/$v.txt" ||
        fail "snapshot of $v exited $?"
    [ "$(wc -l <"$tmp/$v.txt")" -eq 40 ] || fail "$v: expected 40 lines"
done
"$py" "$src/tests/tui/check_snapshot.py" "$tmp/report.json" "$tmp" || exit 1

# A frame that cannot be drawn is no snapshot: one line on stderr, nothing on stdout, exit 2.
for size in "20 5" "80 8" "39 24"; do
    set -- $size
    "$tp" tui "$sample" --snapshot --width $1 --height $2 >"$tmp/tiny.txt" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "${1}x$2 snapshot exited $rc"
    [ ! -s "$tmp/tiny.txt" ] || fail "${1}x$2 snapshot printed a frame"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "needs at least 40x10, got ${1}x$2" "$tmp/err" ||
        fail "${1}x$2 snapshot error: $(cat "$tmp/err")"
done

# Bad input: clear message and the documented exit status.
"$tp" tui "$tmp/missing.tprof" --snapshot 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && grep -q "missing.tprof" "$tmp/err" || fail "missing file: $(cat "$tmp/err")"
"$tp" tui "$sample" --snapshot --view flames 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q -- "--view" "$tmp/err" || fail "bad view: $(cat "$tmp/err")"
"$tp" tui "$sample" --snapshot --width 0 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] || fail "--width 0 accepted"
"$tp" tui "$sample" --rank 3 --snapshot 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && grep -q "no rank 3" "$tmp/err" || fail "bad rank: $(cat "$tmp/err")"
printf 'not a trace' >"$tmp/junk.tprof"
"$tp" tui "$tmp/junk.tprof" --snapshot 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "junk file accepted"
"$tp" tui "$sample" </dev/null >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "needs a terminal" "$tmp/err" || fail "no tty: $(cat "$tmp/err")"
echo "ok: snapshots and bad input"
