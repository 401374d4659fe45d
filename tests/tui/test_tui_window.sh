#!/bin/sh
# The Timeline's window statistics over one step equal `trainprof report` on the trace cut to
# that step: export the sample to Chrome JSON, cut it to its third step (cut_trace.py), report
# on the cut, and compare with the TUI (test_tui_window: its window analysis and its screen);
# then the TUI's figures against the JSON `trainprof report` printed for the cut, line by line
# (busy, span, every kernel and range row with its count and totals, the copy kinds).
# usage: test_tui_window.sh TRAINPROF TEST_TUI_WINDOW SOURCE_DIR PYTHON
set -u
tp=$1 bin=$2 src=$3 py=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sample=$src/traces/samples/cpu-trainer-input-bound.tprof
"$tp" export "$sample" --format chrome -o "$tmp/full.json" >/dev/null 2>&1 || fail "export"
win=$("$py" "$src/tests/tui/cut_trace.py" "$tmp/full.json" "$tmp/cut.json" step 2) ||
    fail "cut_trace.py"
"$tp" report --format json "$tmp/cut.json" >"$tmp/cut-report.json" || fail "report on the cut"
# shellcheck disable=SC2086
"$bin" "$sample" "$tmp/cut.json" $win "$tmp/tui.txt" || exit 1
"$py" - "$tmp/cut-report.json" "$tmp/tui.txt" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
want = ["busy %d" % r["temporal"]["busy_ns"], "span %d" % r["temporal"]["span_ns"]]
want += ["kernel %s\t%d\t%d" % (k["name"], k["count"], k["sum_ns"]) for k in r["kernels"]]
want += ["range %s\t%d\t%d\t%d\t%d" % (x["name"], x["count"], x["total_ns"], x["gpu_ns"],
                                          x["gpu_ops"]) for x in r["ranges"]]
got = [l.rstrip("\n") for l in open(sys.argv[2]) if not l.startswith("copy ")]
n_copies = sum(1 for l in open(sys.argv[2]) if l.startswith("copy "))
if got != want or n_copies != len(r["copies"]) or not r["kernels"] or not r["ranges"]:
    print("FAIL: the TUI's window differs from the report on the cut trace")
    print("report:", *want, sep="\n  ")
    print("tui:", *got, sep="\n  ")
    sys.exit(1)
print("ok: %d kernels, %d ranges, %d copy kinds, busy %s ns as `report` on the cut"
      % (len(r["kernels"]), len(r["ranges"]), n_copies, r["temporal"]["busy_ns"]))
PY
echo "ok: the step window's statistics equal the report on the trace cut to that step"
