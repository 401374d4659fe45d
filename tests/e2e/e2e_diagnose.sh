#!/usr/bin/env bash
# Records trainprof-trainer (CPU device) in every scenario with `trainprof record`, then checks
# that `trainprof report` diagnoses each one: the top finding names the scenario's problem
# (check_diagnose.py), and the text report opens with the Diagnosis section.
set -euo pipefail
trainprof=$1 trainer=$2 python=$3 check=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Steps are kept small: each scenario records in about a second on 2 cores.
for spec in healthy:30 input-bound:20 pageable-copies:12 sync-every-step:30 launch-bound:60 \
            fragmentation-oom:400; do
  scenario=${spec%%:*} steps=${spec##*:}
  rc=0
  "$trainprof" record -o "$scenario.tprof" -- \
    "$trainer" --device cpu --scenario "$scenario" --steps "$steps" \
    --json-summary "$scenario.summary.json" >"$scenario.record.log" 2>&1 || rc=$?
  expected=0
  [ "$scenario" = fragmentation-oom ] && expected=3
  if [ "$rc" -ne "$expected" ]; then
    echo "$scenario: exit $rc, expected $expected"; cat "$scenario.record.log"; exit 1
  fi
  "$trainprof" report --format json "$scenario.tprof" >"$scenario.report.json"
  "$trainprof" report "$scenario.tprof" >"$scenario.report.txt"
  if [ "$scenario" = fragmentation-oom ]; then
    "$trainprof" report --no-symbols --format json "$scenario.tprof" >"$scenario.nosym.report.json"
  fi
done
"$python" "$check" "$dir"
