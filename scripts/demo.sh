#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, profile the bundled trainer
# (CPU device, a scenario with a known problem) and print trainprof's diagnosis.
#   scripts/demo.sh [SCENARIO] [extra trainer flags...]      default scenario: input-bound
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-input-bound}
shift || true
scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target trainprof trainprof-trainer tp_collector
mkdir -p out
trace="out/trainer-$scenario.tprof"
build/cli/trainprof record --force -o "$trace" -- \
  build/trainer/trainprof-trainer --device cpu --scenario "$scenario" --steps 60 "$@"
echo
build/cli/trainprof report "$trace"
