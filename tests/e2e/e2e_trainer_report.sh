#!/usr/bin/env bash
# Records trainprof-trainer (CPU device) in the healthy and input-bound scenarios with
# `trainprof record`, then checks `trainprof info --json` and `trainprof report --format json`:
# input-bound idles the device waiting on the host, healthy keeps it far busier.
set -euo pipefail
trainprof=$1 trainer=$2 python=$3 check=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for scenario in healthy input-bound; do
  "$trainprof" record -o "$scenario.tprof" -- \
    "$trainer" --device cpu --scenario "$scenario" --steps 30 --json-summary "$scenario.summary.json" \
    >"$scenario.record.log" 2>&1 || { cat "$scenario.record.log"; exit 1; }
  grep -q "trainprof: trace .*/$scenario.tprof" "$scenario.record.log" || { cat "$scenario.record.log"; exit 1; }
  "$trainprof" info --json "$scenario.tprof" >"$scenario.info.json"
  "$trainprof" report --format json "$scenario.tprof" >"$scenario.report.json"
  "$trainprof" report "$scenario.tprof" >"$scenario.report.txt"
done
"$python" "$check" "$dir"
