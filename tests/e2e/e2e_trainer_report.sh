#!/usr/bin/env bash
# Records trainprof-trainer (CPU device) in the healthy and input-bound scenarios with
# `trainprof record`, then checks `trainprof info --json` and `trainprof report --format json`
# on what holds by construction, never on timing (a loaded machine must not fail it): every
# device op reported and paired with its launch, the ranges counted, the breakdowns adding
# up, and input-bound's data waits found as host-wait idle. input-bound syncs at the end of
# every step (--read-loss-every 1), so each step's data wait runs while the device has
# nothing queued: the analyzer must call that time host wait, however long it takes.
set -euo pipefail
trainprof=$1 trainer=$2 python=$3 check=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for scenario in healthy input-bound; do
  extra=()
  [ "$scenario" = input-bound ] && extra=(--read-loss-every 1)
  "$trainprof" record -o "$scenario.tprof" -- \
    "$trainer" --device cpu --scenario "$scenario" "${extra[@]}" --steps 30 \
    --json-summary "$scenario.summary.json" \
    >"$scenario.record.log" 2>&1 || { cat "$scenario.record.log"; exit 1; }
  grep -q "trainprof: trace .*/$scenario.tprof" "$scenario.record.log" || { cat "$scenario.record.log"; exit 1; }
  "$trainprof" info --json "$scenario.tprof" >"$scenario.info.json"
  "$trainprof" report --format json "$scenario.tprof" >"$scenario.report.json"
  "$trainprof" report "$scenario.tprof" >"$scenario.report.txt"
done
"$python" "$check" "$dir"
