#!/usr/bin/env bash
# Instructions the collector costs per launch-bound trainer step, counted by callgrind (a loaded
# machine does not change them): the trainer recorded for 100 and for 300 steps, each thread's
# (300-step total - 100-step total) / 200, so start-up and dataset synthesis cancel. Per build:
# the program's threads (every thread but the drain's) and the drain thread, and the self
# instructions of the collector's and libunwind's functions on the program's threads, the
# largest first; then the trainer alone, the same way. Every build records the same trainer
# binary (the first BUILD_DIR's), so only the collector differs.
#   bench/bench_collector_instructions.sh BUILD_DIR [OTHER_BUILD_DIR...]
# e.g. bench/bench_collector_instructions.sh build /work/scratch/base-build
# (~1 minute per build and run on the development VM.) The loader threads capture stacks too;
# how much of the work each gets differs between runs (a few k instructions a step).
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
trainer=$(realpath "$1/trainer/trainprof-trainer")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--device cpu --scenario launch-bound --log-every 1000000)
count() { # DIR TOOL...: callgrind of the command for 100 and 300 steps, one file per thread
    local dir=$1
    shift
    for s in 100 300; do
        mkdir -p "$dir/s$s"
        (cd "$dir/s$s" && valgrind --tool=callgrind --trace-children=yes --separate-threads=yes \
            "$@" "$trainer" "${args[@]}" --steps "$s" >log 2>&1)
    done
}
report() { # DIR LABEL
    python3 - "$1" "$2" <<'PY'
import collections, glob, re, subprocess, sys
d, label = sys.argv[1:3]
def threads(steps):
    """{thread number: (total Ir, is the drain, {function: self Ir}, {function: object})}"""
    out = {}
    for f in glob.glob(f"{d}/s{steps}/callgrind.out.*-*"):
        head = open(f, errors="replace").read(3000)
        if "cli/trainprof record" in head:
            continue  # the record command itself
        txt = subprocess.run(["callgrind_annotate", "--threshold=100", f],
                             capture_output=True, text=True).stdout
        total = int(re.search(r"^summary: (\d+)", open(f, errors="replace").read(), re.M).group(1))
        fn, obj = collections.Counter(), {}
        for line in txt.splitlines():
            m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.+?):(\S+)(?: \[(.*)\])?$", line)
            if m and m.group(2) != "PROGRAM TOTALS":
                fn[m.group(3)] += int(m.group(1).replace(",", ""))
                if m.group(4):
                    obj.setdefault(m.group(3), m.group(4))
        # The drain thread: the writer's drain and a codec, none of the trainer's work.
        drain = "drain_stage" in fn and not any(k in fn for k in ("tp_data_sample", "gemm_region"))
        out[int(f.rsplit("-", 1)[1])] = (total, drain, fn, obj)
    return out
a, b = threads(100), threads(300)
prog = drain = 0
fns, objs = collections.Counter(), {}
for t in b:
    if t not in a:
        continue
    per = (b[t][0] - a[t][0]) / 200
    if b[t][1]:
        drain += per
        continue
    prog += per
    for k in set(a[t][2]) | set(b[t][2]):
        fns[k] += (b[t][2][k] - a[t][2][k]) / 200
    objs.update(a[t][3]), objs.update(b[t][3])
print(f"{label}: per step, program threads {prog / 1000:.1f} k, drain thread {drain / 1000:.1f} k")
ours = {k: v for k, v in fns.items() if re.search(r"collector|unwind", objs.get(k, ""))}
if ours:
    print(f"  collector + libunwind self on the program threads: {sum(ours.values()) / 1000:.1f} k")
    for k, v in sorted(ours.items(), key=lambda kv: -kv[1])[:12]:
        print(f"    {v / 1000:8.1f} k  {k}")
PY
}
for b in "$@"; do
    out="$tmp/$(basename "$(realpath "$b")")-$RANDOM"
    count "$out" "$(realpath "$b")/cli/trainprof" record -o t.tprof --
    report "$out" "$b"
done
count "$tmp/alone" # the trainer without the collector
report "$tmp/alone" "the trainer alone"
