#!/usr/bin/env bash
# Collector overhead and drops on a realistic program: trainprof-trainer (CPU device) per
# scenario, with and without `trainprof record` (default budget), runs alternating so drift
# hits both alike. Prints per scenario the median mean step time of each and their ratio, the
# median CPU time (user + system, all threads and processes) of each and their ratio, and the
# records and drops of every recorded run; and the machine (cores, load average before and
# after), since on a shared machine the neighbours move the figures (CPU time less so).
#   bench/bench_trainer_overhead.sh BUILD_DIR [RUNS] [STEPS] [SCENARIO...]
# Defaults: 7 runs, 150 steps, healthy. Goals (docs/PERFORMANCE.md): step-time ratio <= 1.03
# healthy and <= 1.05 launch-bound; 0 drops in every scenario.
set -euo pipefail
build=${1:-build} runs=${2:-7} steps=${3:-150}
shift $(($# < 3 ? $# : 3))
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(healthy)
trainer="$build/trainer/trainprof-trainer" trainprof="$build/cli/trainprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load average before: $(load)"
for sc in "${scenarios[@]}"; do
  args=(--device cpu --scenario "$sc" --steps "$steps" --log-every 1000000)
  : >"$tmp/rows"
  for i in $(seq "$runs"); do
    # fragmentation-oom ends in an out-of-memory exit on purpose: its status is not ours.
    /usr/bin/time -f "%U %S" -o "$tmp/b.cpu" \
      "$trainer" "${args[@]}" --json-summary "$tmp/b.json" >/dev/null 2>&1 || true
    rm -f "$tmp/t.tprof" # (not --force: the same command measures builds from before it)
    /usr/bin/time -f "%U %S" -o "$tmp/p.cpu" "$trainprof" record -o "$tmp/t.tprof" -- \
      "$trainer" "${args[@]}" --json-summary "$tmp/p.json" >/dev/null 2>"$tmp/rec.err" || true
    python3 - "$tmp" >>"$tmp/rows" <<'PY'
import json, re, sys
t = sys.argv[1]
b, p = (json.load(open(f"{t}/{n}.json"))["mean_step_ms"] for n in "bp")
cb, cp = (sum(map(float, open(f"{t}/{n}.cpu").read().split()[-2:])) for n in "bp")
err = open(f"{t}/rec.err").read()
events = sum(int(n) for n in re.findall(r"[A-Z_]+ (\d+)", err.split("events:")[1].split("\n")[0]))
dropped = sum(int(n) for n in re.findall(r"dropped: (\d+)", err))
print(b, p, cb, cp, events, dropped)
PY
  done
  python3 - "$sc" "$steps" "$tmp/rows" <<'PY'
import statistics, sys
sc, steps, rows = sys.argv[1], sys.argv[2], [l.split() for l in open(sys.argv[3])]
b = [float(r[0]) for r in rows]
p = [float(r[1]) for r in rows]
mb, mp = statistics.median(b), statistics.median(p)
print(f"{sc}, {steps} steps, {len(rows)} runs each:")
print(f"  without collector median {mb:.3f} ms/step  {[round(x, 3) for x in b]}")
print(f"  with collector    median {mp:.3f} ms/step  {[round(x, 3) for x in p]}")
print(f"  ratio with/without: {mp / mb:.3f}")
cb = statistics.median(float(r[2]) for r in rows)
cp = statistics.median(float(r[3]) for r in rows)
print(f"  CPU time median without {cb:.2f} s, with {cp:.2f} s: ratio {cp / cb:.3f}")
print(f"  records per recorded run: {[int(r[4]) for r in rows]}")
print(f"  dropped per recorded run: {[int(r[5]) for r in rows]}")
PY
done
echo "load average after: $(load)"
