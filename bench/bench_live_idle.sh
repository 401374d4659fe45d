#!/usr/bin/env bash
# What `trainprof record --idle` costs a job that nobody watches, and what `--live` costs:
# trainprof-trainer (CPU device) without trainprof, under `record --idle` and under
# `record --live`, runs alternating so drift hits all alike. Prints the median mean step time
# of each and the ratios to the run without trainprof, the CPU-time ratios, and the load
# average before and after (a shared machine moves the figures; CPU time less so).
#   bench/bench_live_idle.sh BUILD_DIR [RUNS] [STEPS] [SCENARIO]
# Defaults: 7 runs, 150 steps, healthy. Goal (issue 12): --idle step-time ratio <= 1.01.
set -euo pipefail
build=${1:-build} runs=${2:-7} steps=${3:-150} sc=${4:-healthy}
trainer="$build/trainer/trainprof-trainer" trainprof="$build/cli/trainprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores; load average before: $(load)"
args=(--device cpu --scenario "$sc" --steps "$steps" --log-every 1000000)
: >"$tmp/rows"
for i in $(seq "$runs"); do
  /usr/bin/time -f "%U %S" -o "$tmp/b.cpu" "$trainer" "${args[@]}" --json-summary "$tmp/b.json" \
    >/dev/null 2>&1
  for m in idle live; do
    rm -f "$tmp/$m.tprof"
    /usr/bin/time -f "%U %S" -o "$tmp/$m.cpu" "$trainprof" record --$m -o "$tmp/$m.tprof" -- \
      "$trainer" "${args[@]}" --json-summary "$tmp/$m.json" >/dev/null 2>&1
  done
  python3 - "$tmp" >>"$tmp/rows" <<'PY'
import json, sys
t = sys.argv[1]
step = [json.load(open(f"{t}/{n}.json"))["mean_step_ms"] for n in ("b", "idle", "live")]
cpu = [sum(map(float, open(f"{t}/{n}.cpu").read().split()[-2:])) for n in ("b", "idle", "live")]
print(*step, *cpu)
PY
done
python3 - "$sc" "$steps" "$tmp/rows" <<'PY'
import statistics, sys
sc, steps, rows = sys.argv[1], sys.argv[2], [list(map(float, l.split())) for l in open(sys.argv[3])]
med = [statistics.median(r[i] for r in rows) for i in range(6)]
print(f"{sc}, {steps} steps, {len(rows)} runs of each, alternating:")
for i, name in enumerate(("without trainprof", "record --idle", "record --live")):
    print(f"  {name:18} median {med[i]:.3f} ms/step  {[round(r[i], 3) for r in rows]}"
          f"  CPU {med[3 + i]:.2f} s")
print(f"  step-time ratio --idle/without {med[1] / med[0]:.3f} (goal <= 1.01), "
      f"--live/without {med[2] / med[0]:.3f}")
print(f"  CPU-time ratio  --idle/without {med[4] / med[3]:.3f}, --live/without {med[5] / med[3]:.3f}")
PY
echo "load average after: $(load)"
