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
# BASELINE=OTHER_BUILD_DIR adds a third run to each repetition, recorded with that build's
# `trainprof` and collector (e.g. main before a change), so before and after are measured in
# the same invocation under the same load; the trainer is always BUILD_DIR's.
# VARIANT_ENV="NAME=VALUE ..." adds a run recorded with BUILD_DIR's `trainprof` under those
# environment settings (e.g. TRAINPROF_DRAIN_NICE=19, TRAINPROF_STACKS=none), in the same
# rounds: a collector setting against the default under the same load.
set -euo pipefail
build=${1:-build} runs=${2:-7} steps=${3:-150}
shift $(($# < 3 ? $# : 3))
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(healthy)
trainer="$build/trainer/trainprof-trainer"
kinds=(p) tools=("$build/cli/trainprof")
envs=("")
if [ -n "${BASELINE:-}" ]; then kinds+=(q) tools+=("$BASELINE/cli/trainprof") envs+=(""); fi
if [ -n "${VARIANT_ENV:-}" ]; then kinds+=(v) tools+=("$build/cli/trainprof") envs+=("$VARIANT_ENV"); fi
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
    for k in "${!kinds[@]}"; do
      n=${kinds[$k]}
      rm -f "$tmp/t.tprof" # (not --force: the same command measures builds from before it)
      # shellcheck disable=SC2086 # envs[k]: NAME=VALUE words
      env ${envs[$k]} /usr/bin/time -f "%U %S" -o "$tmp/$n.cpu" "${tools[$k]}" record -o "$tmp/t.tprof" -- \
        "$trainer" "${args[@]}" --json-summary "$tmp/$n.json" >/dev/null 2>"$tmp/$n.err" || true
    done
    python3 - "$tmp" "${kinds[@]}" >>"$tmp/rows" <<'PY'
import json, re, sys
t, kinds = sys.argv[1], sys.argv[2:]
row = []
for n in ["b"] + kinds:
    row.append(json.load(open(f"{t}/{n}.json"))["mean_step_ms"])
    row.append(sum(map(float, open(f"{t}/{n}.cpu").read().split()[-2:])))
    if n != "b":
        err = open(f"{t}/{n}.err").read()
        line = err.split("events:")[1].split("\n")[0]
        row.append(sum(int(x) for x in re.findall(r"[A-Z_]+ (\d+)", line)))
        row.append(sum(int(x) for x in re.findall(r"dropped: (\d+)", err)))
print(*row)
PY
  done
  python3 - "$sc" "$steps" "$tmp/rows" "${kinds[@]}" <<'PY'
import statistics, sys
sc, steps, rows, kinds = sys.argv[1], sys.argv[2], [l.split() for l in open(sys.argv[3])], sys.argv[4:]
med = statistics.median
label = {"p": "with collector", "q": "with baseline", "v": "with VARIANT_ENV"}
print(f"{sc}, {steps} steps, {len(rows)} runs each:")
b = [float(r[0]) for r in rows]
cb = med(float(r[1]) for r in rows)
print(f"  without collector median {med(b):.3f} ms/step  {[round(x, 3) for x in b]}")
for i, n in enumerate(kinds):
    o = 2 + 4 * i
    p = [float(r[o]) for r in rows]
    cp = med(float(r[o + 1]) for r in rows)
    ratios = [float(r[o]) / float(r[0]) for r in rows]
    print(f"  {label[n]:<17} median {med(p):.3f} ms/step  {[round(x, 3) for x in p]}")
    print(f"    ratio with/without: {med(p) / med(b):.3f} (median of per-run ratios {med(ratios):.3f})")
    print(f"    CPU time median without {cb:.2f} s, with {cp:.2f} s: ratio {cp / cb:.3f}")
    print(f"    records per recorded run: {[int(r[o + 2]) for r in rows]}")
    print(f"    dropped per recorded run: {[int(r[o + 3]) for r in rows]}")
PY
done
echo "load average after: $(load)"
