#!/usr/bin/env bash
# Writes `trainprof report` (text and JSON, native and --compat hta), `info` and the
# Chrome/SQLite exports' digests for every committed sample trace and every peer trace set
# into one folder, so a refactor can be checked byte for byte:
#   scripts/report-snapshot.sh BUILD_DIR OUT_DIR       # take a snapshot
#   diff -r BEFORE_DIR AFTER_DIR                       # compare two snapshots
# Peer traces come from ../shared/peer_traces when present (never copied); the .tprof files of
# the folder named by TP_SNAPSHOT_TRACES are added (e.g. trainer runs recorded once with
# --stacks all, so both snapshots read the same files).
set -euo pipefail
build=${1:?usage: report-snapshot.sh BUILD_DIR OUT_DIR}
out=${2:?usage: report-snapshot.sh BUILD_DIR OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
tp=$(cd "$build" && pwd)/cli/trainprof
mkdir -p "$out"
inputs=()
for f in "$root"/traces/samples/*.tprof; do inputs+=("$f"); done
if [ -n "${TP_SNAPSHOT_TRACES:-}" ]; then
  for f in "$TP_SNAPSHOT_TRACES"/*.tprof; do [ -e "$f" ] && inputs+=("$f"); done
fi
peer="$root/../shared/peer_traces/traces"
if [ -d "$peer" ]; then
  for d in "$peer"/*/; do inputs+=("${d%/}"); done
fi
for in in "${inputs[@]}"; do
  name=$(basename "$in")
  for mode in text json; do
    for compat in native hta; do
      args=(report "$in" --format "$mode")
      [ "$compat" = hta ] && args+=(--compat hta)
      "$tp" "${args[@]}" >"$out/$name.$compat.$mode" 2>"$out/$name.$compat.$mode.err" \
        && echo "exit 0" >>"$out/$name.$compat.$mode.err" \
        || echo "exit $?" >>"$out/$name.$compat.$mode.err"
    done
  done
  case "$in" in
    *.tprof)
      "$tp" info "$in" >"$out/$name.info" 2>&1 || echo "exit $?" >>"$out/$name.info"
      tmp=$(mktemp -d)
      "$tp" export "$in" --format chrome -o "$tmp/x.json" >/dev/null 2>&1 || true
      sha256sum <"$tmp/x.json" >"$out/$name.chrome.sha256" 2>/dev/null || true
      "$tp" export "$in" --format sqlite -o "$tmp/x.db" >/dev/null 2>&1 || true
      sqlite3 "$tmp/x.db" .dump >"$out/$name.sqlite.dump" 2>/dev/null || true
      rm -rf "$tmp"
      ;;
  esac
done
echo "snapshot of ${#inputs[@]} inputs in $out"
