#!/usr/bin/env bash
# Collector overhead on a realistic program: trainprof-trainer (CPU device, healthy scenario)
# with and without `trainprof record`, runs alternating so drift hits both alike; prints the
# median mean step time of each and their ratio (issue goal: <= 1.03).
#   bench/bench_trainer_overhead.sh BUILD_DIR [RUNS] [STEPS]
set -euo pipefail
build=${1:-build} runs=${2:-7} steps=${3:-150}
trainer="$build/trainer/trainprof-trainer" trainprof="$build/cli/trainprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step_ms() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mean_step_ms"])' "$1"; }
base=() prof=()
args=(--device cpu --scenario healthy --steps "$steps" --log-every 1000000)
for i in $(seq "$runs"); do
  "$trainer" "${args[@]}" --json-summary "$tmp/b.json" >/dev/null 2>&1
  base+=("$(step_ms "$tmp/b.json")")
  "$trainprof" record -o "$tmp/t.tprof" -- "$trainer" "${args[@]}" --json-summary "$tmp/p.json" >/dev/null 2>&1
  prof+=("$(step_ms "$tmp/p.json")")
done
python3 - "${base[*]}" "${prof[*]}" <<'PY'
import statistics, sys
b = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
mb, mp = statistics.median(b), statistics.median(p)
print(f"runs {len(b)}: without collector median {mb:.3f} ms/step  {b}")
print(f"runs {len(p)}: with collector    median {mp:.3f} ms/step  {p}")
print(f"ratio with/without: {mp / mb:.3f}  (goal <= 1.03)")
PY
