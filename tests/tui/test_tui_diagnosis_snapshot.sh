#!/bin/sh
# The Diagnosis view (--snapshot --view diagnosis) against the JSON report's findings, on the
# committed trainer samples and on a trainer run recorded now (sync-every-step: a finding
# whose stack is symbolized from the trainer binary on this machine), at two widths.
# usage: test_tui_diagnosis_snapshot.sh TRAINPROF TRAINER SOURCE_DIR PYTHON
set -u
tp=$1 trainer=$2 src=$3 py=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

traces="$src/traces/samples/cpu-trainer-input-bound.tprof
$src/traces/samples/cpu-trainer-pageable-copies.tprof"
if "$tp" record -o "$tmp/sync.tprof" -- "$trainer" --device cpu --scenario sync-every-step \
    --steps 30 >"$tmp/record.log" 2>&1; then
    traces="$traces
$tmp/sync.tprof"
elif grep -q "ASan runtime does not come first" "$tmp/record.log"; then
    # A sanitizer build's collector cannot be preloaded into the uninstrumented trainer.
    echo "note: sanitizer build, no trainer recording; the samples only"
else
    cat "$tmp/record.log"
    fail "record failed"
fi
echo "$traces" | while read -r trace; do
    name=$(basename "$trace")
    "$tp" report --format json "$trace" >"$tmp/$name.json" || fail "$name: report failed"
    for w in 120 72; do
        "$tp" tui "$trace" --snapshot --view diagnosis --width $w --height 200 \
            >"$tmp/$name.$w.txt" || fail "$name: snapshot exited $?"
        echo "$name, $w columns:"
        "$py" "$src/tests/tui/check_diagnosis.py" "$tmp/$name.json" "$tmp/$name.$w.txt" ||
            { cat "$tmp/$name.$w.txt"; exit 1; }
    done
done
[ $? -eq 0 ] || exit 1
# --no-symbols: the same findings as `report --no-symbols`.
trace=$(echo "$traces" | tail -n 1)
"$tp" report --no-symbols --format json "$trace" >"$tmp/nosym.json" || fail "report --no-symbols"
"$tp" tui "$trace" --no-symbols --snapshot --view 6 --height 200 >"$tmp/nosym.txt" ||
    fail "tui --no-symbols exited $?"
"$py" "$src/tests/tui/check_diagnosis.py" "$tmp/nosym.json" "$tmp/nosym.txt" || exit 1
echo "ok: the Diagnosis view shows the report's findings"
