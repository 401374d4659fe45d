#!/usr/bin/env bash
# Records trainprof-trainer (CPU device) in every memory case with `trainprof record`, then
# checks `trainprof report`'s Device memory section and memory findings against the
# trainer's own allocator (--json-summary and its stderr message): check_memory.py.
#   frag:   the fragmentation-oom scenario (kept activations pin segments; dies at step 8)
#   big:    --batch 512 --device-memory-limit 24M (one request over the budget at step 1)
#   grow:   --keep-activations 64, no limit (memory grows, nothing freed)
# and frag's exports: memory counters in Chrome JSON, live blocks in SQLite.
set -euo pipefail
trainprof=$1 trainer=$2 python=$3 check=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
run() { # name expected-exit trainer-args...
  local name=$1 expected=$2 rc=0
  shift 2
  "$trainprof" record -o "$name.tprof" -- "$trainer" --device cpu "$@" \
    --json-summary "$name.summary.json" >"$name.record.log" 2>&1 || rc=$?
  if [ "$rc" -ne "$expected" ]; then
    echo "$name: exit $rc, expected $expected"; cat "$name.record.log"; exit 1
  fi
  "$trainprof" report --format json "$name.tprof" >"$name.report.json"
  "$trainprof" report "$name.tprof" >"$name.report.txt"
}
run frag 3 --scenario fragmentation-oom --steps 400
run big 3 --batch 512 --device-memory-limit 24M
run grow 0 --keep-activations 64 --steps 12
# the exports: memory counters (Chrome) and live blocks at the peak and the OOM (SQLite)
"$trainprof" export frag.tprof --format chrome -o frag.chrome.json >/dev/null
"$trainprof" export frag.tprof --format sqlite -o frag.sqlite >/dev/null
"$python" "$check" "$dir"
