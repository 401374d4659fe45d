#!/usr/bin/env bash
# Records trainprof-trainer (CPU device) in every scenario with `trainprof record`, then checks
# that `trainprof report` diagnoses each one: the top finding names the scenario's problem
# (check_diagnose.py), and the text report opens with the Diagnosis section.
set -euo pipefail
trainprof=$1 trainer=$2 python=$3 check=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Each finding is a share of summed step time. On a loaded machine another process's time
# slice (10-30 ms) can land in any range, and with few steps a few such slices decide the
# shares (60 launch-bound steps of ~4 ms: a 'dataloader wait' of 0.2 ms per step reached 26 %
# of step time at load 19). Preemption lands in each range in proportion to its time, so the
# expected shares do not move with load; enough steps make the variance small. Each scenario
# still records in a few seconds on 2 cores.
for spec in healthy:60 input-bound:40 pageable-copies:12 sync-every-step:60 launch-bound:300 \
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
