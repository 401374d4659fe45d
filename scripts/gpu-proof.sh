#!/usr/bin/env bash
# gpu-proof.sh: the GPU proof in one short run on the device machine (one H200, CUDA 13,
# PyTorch cu130, cmake, ninja, no network, no Debian mirror), from the repository root:
#   a. build trainprof with CUDA there; the -dev packages the device lacks come from a bundle of
#      Debian packages fetched here (--fetch-bundle, into .deps/gpu-bundle/, git-ignored,
#      carried to the device) and unpacked into a prefix there;
#   b. ctest -L gpu;
#   c. every trainer scenario with --device cuda under `trainprof record`, diagnosed with the
#      expectations of the CPU device (tests/e2e/check_diagnose.py);
#   d. bench/torch_cuda_train.py three times: plain, under `trainprof record`, under
#      torch.profiler (never both tools at once: CUPTI has one subscriber), compared by
#      scripts/gpu_proof_compare.py (kernel count and time per name, copies by kind, Python
#      frames at every launch, both reports, each tool's step-time overhead);
#   e. a summary (summary.json, summary.txt) and small real traces in --out DIR.
# --dry-run runs here, without a GPU: checks the bundle (size, every package, every pkg-config
# module resolvable from the bundle alone), builds (unless --no-build), runs the CPU parts
# (trainer scenarios on --device cpu, the comparison on a CPU trace against its own Kineto
# export, the PyTorch script on the CPU when torch is installed) and prints what it would run.
# docs/gpu-proof.md says how to run it with the device tool.
#
# usage: scripts/gpu-proof.sh [--dry-run] [--out DIR] [--build-dir DIR] [--no-build]
#                             [--bundle DIR] [--fetch-bundle] [--quick] [--python PY]
#                             [--build-only]  (the device's build alone, no GPU needed: for
#                              checking the bundle on a machine whose -dev packages are hidden)
# Exit status: 0 every step passed (or was skipped with a reason), 1 a step failed, 2 usage.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DRY=0 BUILD_IT=1 FETCH=0 QUICK=0 BUILD_ONLY=0
OUT=$ROOT/out/gpu-proof BUILD= BUNDLE=$ROOT/.deps/gpu-bundle PY=${PYTHON:-python3}
JOBS=$(nproc 2>/dev/null || echo 4)
LIMIT_BYTES=$((64 * 1024 * 1024)) # what travels to the device, all of it
# The Debian packages (bookworm) behind each pkg-config module the build needs, with the
# runtime libraries their -dev symlinks point at: module|packages|a header the bundle must hold
# (the device has no -dev packages). The modules themselves come from cmake/TpDeps.cmake, so a
# module added there without a row here fails the bundle check (and its dry run) at once.
MODULE_TABLE=(
  "libzstd|libzstd-dev libzstd1|zstd.h"
  "liblz4|liblz4-dev liblz4-1|lz4.h"
  "libunwind|libunwind-dev libunwind8|x86_64-linux-gnu/libunwind.h"
  "yajl|libyajl-dev libyajl2|yajl/yajl_parse.h"
  "zlib|zlib1g-dev zlib1g|zlib.h"
  "libdeflate|libdeflate-dev libdeflate0|libdeflate.h"
  "libisal|libisal-dev libisal2|isa-l/igzip_lib.h"
  "sqlite3|libsqlite3-dev libsqlite3-0|sqlite3.h"
  "ncursesw|libncurses-dev libncursesw6 libtinfo6|ncursesw/curses.h"
  "libdw|libdw-dev libdw1 libelf-dev libelf1 liblzma-dev liblzma5|elfutils/libdwfl.h"
  "simdjson|libsimdjson-dev libsimdjson14|simdjson.h"
)
DEBS=(pkgconf pkgconf-bin libpkgconf3) MODULES=() HEADERS=()
for row in "${MODULE_TABLE[@]}"; do
  IFS='|' read -r m pk h <<<"$row"
  MODULES+=("$m") HEADERS+=("$h")
  read -ra pk <<<"$pk"
  DEBS+=("${pk[@]}")
done
# every module cmake/TpDeps.cmake asks pkg-config for (required or optional), and every CMake
# package any CMakeLists.txt finds (simdjson), less the ones CMake or the toolkit provide
deps_modules() {
  sed -n 's/^pkg_check_modules([A-Z0-9_]* .*IMPORTED_TARGET \([^ )]*\)).*/\1/p' "$ROOT/cmake/TpDeps.cmake"
  cat "$ROOT"/CMakeLists.txt "$ROOT"/*/CMakeLists.txt "$ROOT"/cmake/*.cmake |
    sed -n 's/^ *find_package(\([A-Za-z0-9_]*\).*/\1/p' | grep -vx 'PkgConfig\|Threads\|CUDAToolkit\|Python3'
}
# scenario:steps, as tests/e2e/e2e_diagnose.sh records them
SCENARIOS=(healthy:60 input-bound:40 pageable-copies:12 sync-every-step:60 launch-bound:300
           fragmentation-oom:400)

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --no-build) BUILD_IT=0 ;;
    --fetch-bundle) FETCH=1 ;;
    --quick) QUICK=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    --out) OUT=$2; shift ;;
    --build-dir) BUILD=$2; shift ;;
    --bundle) BUNDLE=$2; shift ;;
    --python) PY=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-proof: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BUILD" ] || BUILD=$ROOT/build-gpu
mkdir -p "$OUT/logs" "$OUT/traces" "$BUILD" || exit 1
OUT=$(cd "$OUT" && pwd) BUILD=$(cd "$BUILD" && pwd)
T0=$(date +%s)
STEPS=() # "name|status|seconds|note"
FAILED=0

# step NAME NOTE CMD...: runs CMD with its output in logs/NAME.log; exit 77 means skipped.
step() {
  local name=$1 note=$2 t=$(date +%s) rc=0
  shift 2
  echo "== $name: $note"
  "$@" >"$OUT/logs/$name.log" 2>&1 || rc=$?
  local st=ok
  if [ $rc -eq 77 ]; then st=skipped; elif [ $rc -ne 0 ]; then st=failed; FAILED=1; fi
  local why=$(grep -m1 '^SKIP\|^NOTE' "$OUT/logs/$name.log" | sed 's/^[A-Z]*: //')
  STEPS+=("$name|$st|$(( $(date +%s) - t ))|${why:-$note}")
  echo "   $st ($(( $(date +%s) - t )) s)${why:+: $why}"
  [ $st = failed ] && tail -n 15 "$OUT/logs/$name.log" | sed 's/^/   | /'
  return 0
}
# plan NAME NOTE: a step the dry run does not run here.
plan() { STEPS+=("$1|planned|0|$2"); echo "== $1: would run on the GPU: $2"; }

have_gpu() { [ -e /proc/driver/nvidia/version ] && ls /dev/nvidia0 >/dev/null 2>&1; }

# ---------------------------------------------------------------- a. bundle and build

fetch_bundle() {
  mkdir -p "$BUNDLE/debs" && cd "$BUNDLE/debs" && apt-get download "${DEBS[@]}"
}

# unpack_bundle PREFIX: every package into PREFIX, pkg-config files pointed at it.
unpack_bundle() {
  local prefix=$1 deb
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "$BUNDLE"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$prefix" || return 1
    else # no dpkg: a .deb is an ar archive holding data.tar.*
      (cd "$prefix" && ar p "$deb" "$(ar t "$deb" | grep '^data\.tar')" | tar -x -a -f - 2>/dev/null \
        || ar p "$deb" "$(ar t "$deb" | grep '^data\.tar')" | tar -x --zstd -f - \
        || ar p "$deb" "$(ar t "$deb" | grep '^data\.tar')" | tar -x -J -f -) || return 1
    fi
  done
  # Debian's usrmerge layout: the runtime libraries of some packages sit in /lib and their -dev
  # links point there by absolute path (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13): make
  # every absolute link point into the prefix.
  local l
  find "$prefix" -type l -lname '/*' | while read -r l; do ln -sfn "$prefix$(readlink "$l")" "$l"; done
  # ...and one library folder: the linker, given -L.../usr/lib/x86_64-linux-gnu, must find the
  # bundle's libncursesw.so.6 (in /lib) before the system's, whose newer symbol versions the
  # bundle's libtinfo lacks (seen on Ubuntu 24.04).
  local f lib=$prefix/usr/lib/x86_64-linux-gnu
  mkdir -p "$lib"
  for f in "$prefix"/lib/x86_64-linux-gnu/*; do
    [ -e "$f" ] && [ ! -e "$lib/${f##*/}" ] && ln -s "$f" "$lib/${f##*/}"
  done
  # Every path into the prefix, and the prefix's folders on every module (ncursesw's names
  # none: its headers and libraries are in the system folders on Debian).
  find "$prefix" -name '*.pc' -exec sed -i "s|=/usr|=$prefix/usr|g; s| -I/usr| -I$prefix/usr|g;
    s| -L/usr| -L$prefix/usr|g; s|^Cflags:|Cflags: -I$prefix/usr/include|;
    s|^Libs:|Libs: -L$prefix/usr/lib/x86_64-linux-gnu|" {} +
  mkdir -p "$prefix/bin"
  ln -sf "$prefix/usr/bin/pkgconf" "$prefix/bin/pkg-config"
}

bundle_pc_path() {
  echo "$1/usr/lib/x86_64-linux-gnu/pkgconfig:$1/usr/share/pkgconfig"
}

# check_table: every module cmake/TpDeps.cmake asks for has its packages in MODULE_TABLE (run
# by every dry run, with or without the bundle, so ctest catches a new dependency).
check_table() {
  local p missing=0 mods
  mods=$(deps_modules)
  [ -n "$mods" ] || { echo "no pkg_check_modules found in cmake/TpDeps.cmake"; return 1; }
  for p in $mods; do
    [[ " ${MODULES[*]} " == *" $p "* ]] ||
      { echo "cmake/TpDeps.cmake needs $p: add its packages to MODULE_TABLE in scripts/gpu-proof.sh"; missing=1; }
  done
  echo "modules: $(echo $mods)"
  return $missing
}

# check_bundle: size, every package, every module resolvable from the bundle alone, every
# library symlink resolved inside it.
check_bundle() {
  local missing=0 p bytes prefix=$OUT/bundle-check
  for p in "${DEBS[@]}"; do
    ls "$BUNDLE/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "missing package: $p"; missing=1; }
  done
  [ $missing -eq 0 ] || { echo "run: scripts/gpu-proof.sh --fetch-bundle (here, with network)"; return 1; }
  bytes=$(cat "$BUNDLE"/debs/*.deb | wc -c)
  echo "bundle: ${#DEBS[@]} packages, $bytes bytes (limit $LIMIT_BYTES with the source tree)"
  [ "$bytes" -lt "$LIMIT_BYTES" ] || { echo "bundle too large"; return 1; }
  unpack_bundle "$prefix" || { echo "unpacking failed"; return 1; }
  local pc=$prefix/bin/pkg-config
  local lib libs
  for p in "${MODULES[@]}"; do
    libs=$(LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu PKG_CONFIG_LIBDIR=$(bundle_pc_path "$prefix") \
      "$pc" --cflags --libs "$p" 2>"$OUT/logs/pc-$p.err") \
      || { echo "pkg-config module $p does not resolve from the bundle:"; cat "$OUT/logs/pc-$p.err"; missing=1; }
    for lib in $libs; do # every -lNAME it names must be a library in the bundle (not a dangling link)
      case $lib in
        -l*) [ -e "$prefix/usr/lib/x86_64-linux-gnu/lib${lib#-l}.so" ] ||
               { echo "$p: lib${lib#-l}.so missing or dangling in the bundle"; missing=1; } ;;
      esac
    done
    echo "module $p: $libs"
  done
  for p in "${HEADERS[@]}"; do
    [ -f "$prefix/usr/include/$p" ] || { echo "header $p missing from the bundle"; missing=1; }
  done
  # CMake configured with the bundle's pkg-config files alone (the system's hidden): every
  # library it resolves must be the bundle's, as on the device.
  if [ $missing -eq 0 ] && [ $QUICK -eq 0 ] && command -v cmake >/dev/null; then
    rm -rf "$OUT/bundle-cmake"
    CMAKE_PREFIX_PATH=$prefix/usr LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu PKG_CONFIG_LIBDIR=$(bundle_pc_path "$prefix") \
      cmake -S "$ROOT" -B "$OUT/bundle-cmake" -DTP_CUDA=OFF -DPKG_CONFIG_EXECUTABLE="$pc" \
      >"$OUT/logs/bundle-cmake.log" 2>&1 || { echo "cmake with the bundle failed:"; tail "$OUT/logs/bundle-cmake.log"; missing=1; }
    local outside
    outside=$(grep '^pkgcfg_lib_[^:]*:FILEPATH=' "$OUT/bundle-cmake/CMakeCache.txt" 2>/dev/null | grep -v "=$prefix/")
    [ -z "$outside" ] || { echo "libraries found outside the bundle:"; echo "$outside"; missing=1; }
    echo "cmake configured against the bundle alone: $(grep -c '^pkgcfg_lib_[^:]*:FILEPATH=' "$OUT/bundle-cmake/CMakeCache.txt" 2>/dev/null) libraries, all from it"
    rm -rf "$OUT/bundle-cmake"
  fi
  local src_bytes=$(cd "$ROOT" && git ls-files -z | xargs -0 cat 2>/dev/null | wc -c)
  echo "source tree: $src_bytes bytes; with the bundle: $((src_bytes + bytes)) of $LIMIT_BYTES"
  [ $((src_bytes + bytes)) -lt "$LIMIT_BYTES" ] || { echo "bundle + tree too large"; missing=1; }
  rm -rf "$prefix"
  return $missing
}

# The device has no -dev packages: use the bundle for every module the system lacks.
bundle_env() {
  local p need=0
  for p in "${MODULES[@]}"; do
    pkg-config --exists "$p" 2>/dev/null || need=1
  done
  if [ $need -eq 0 ]; then echo "NOTE: the system has every -dev package; bundle not used"; return 0; fi
  local prefix=$BUNDLE/prefix
  if ! ls "$BUNDLE"/debs/*.deb >/dev/null 2>&1; then
    echo "this machine lacks -dev packages and $BUNDLE/debs is absent: fetch it where there is"
    echo "network (scripts/gpu-proof.sh --fetch-bundle) and carry .deps/gpu-bundle"
    return 1
  fi
  unpack_bundle "$prefix" || return 1
  export PKG_CONFIG_PATH=$(bundle_pc_path "$prefix")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH} # find_package(simdjson)
  command -v pkg-config >/dev/null || export PATH=$prefix/bin:$PATH
  # At run time only the libraries the system lacks come from the bundle: LD_LIBRARY_PATH
  # reaches every process of the run (PyTorch too), which must keep the system's own
  # libz, libzstd, liblzma...; the binaries built here find the rest through their RUNPATH.
  local rt=$BUNDLE/runtime so name have
  have=$(ldconfig -p 2>/dev/null | awk '$NF ~ /^\// {print $1, $NF}' | while read -r name so; do
    [ -e "$so" ] && echo "$name"; done) # the cache's entries whose file is there
  rm -rf "$rt" && mkdir -p "$rt"
  for so in "$prefix"/usr/lib/x86_64-linux-gnu/lib*.so.*; do
    [ -e "$so" ] || continue
    name=$(basename "$so")
    [[ $name =~ \.so\.[0-9]+$ ]] || continue # the sonames the loader asks for
    grep -qx "$name" <<<"$have" || ln -sf "$so" "$rt/$name"
  done
  export LD_LIBRARY_PATH=$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "NOTE: -dev packages from the bundle ($prefix); from it at run time: $(ls "$rt" | tr '\n' ' ')"
}

# cuDNN from the PyTorch wheels (nvidia-cudnn-cu13) when the toolkit has none. nvidia.cudnn is a
# namespace package (no __file__): its folder comes from __path__. The wheel ships only
# libcudnn.so.9, given to CMake by its full path (the linker needs no unversioned name), and
# its folder goes on LD_LIBRARY_PATH for the programs that load it.
CUDNN_DIR=
find_cudnn() {
  local d
  d=$("$PY" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null) || return 0
  [ -e "$d/lib/libcudnn.so.9" ] && [ -e "$d/include/cudnn.h" ] && CUDNN_DIR=$d
  return 0
}

build() {
  [ $DRY -eq 1 ] || bundle_env || return 1
  local gen=() extra=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  find_cudnn
  if [ -n "$CUDNN_DIR" ]; then
    extra=(-DTP_CUDNN_LIBRARY="$CUDNN_DIR/lib/libcudnn.so.9" -DTP_CUDNN_INCLUDE_DIR="$CUDNN_DIR/include")
    export LD_LIBRARY_PATH=$CUDNN_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "NOTE: cuDNN from the PyTorch wheel ($CUDNN_DIR)"
  fi
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra[@]}" &&
    cmake --build "$BUILD" -j "$JOBS"
}

# ---------------------------------------------------------------- b, c: tests and scenarios

TP() { "$BUILD/cli/trainprof" "$@"; }
# Each program the proof runs has a time limit, so one that hangs (a CUPTI deadlock, say) fails
# its step and the run goes on to the next: the device is lent for minutes, never twice.
LIMIT_S=${GPU_PROOF_LIMIT_S:-150}
limited() { timeout -k 10 "$LIMIT_S" "$@"; }

scenarios() { # scenarios DEVICE
  local dev=$1 dir=$OUT/scenarios-$1 spec sc steps rc exp
  mkdir -p "$dir"
  for spec in "${SCENARIOS[@]}"; do
    sc=${spec%%:*} steps=${spec##*:}
    [ $QUICK -eq 1 ] && [ "$sc" != healthy ] && [ "$sc" != pageable-copies ] && continue
    rc=0
    (cd "$dir" && limited "$BUILD/cli/trainprof" record -o "$sc.tprof" --force -- "$BUILD/trainer/trainprof-trainer" \
      --device "$dev" --scenario "$sc" --steps "$steps" --json-summary "$sc.summary.json" \
      >"$sc.record.log" 2>&1) || rc=$?
    exp=0; [ "$sc" = fragmentation-oom ] && exp=3
    [ $rc -eq $exp ] || { echo "$sc: exit $rc, expected $exp"; cat "$dir/$sc.record.log"; return 1; }
    TP report --format json "$dir/$sc.tprof" >"$dir/$sc.report.json" || return 1
    TP report "$dir/$sc.tprof" >"$dir/$sc.report.txt" || return 1
    [ "$sc" = fragmentation-oom ] &&
      TP report --no-symbols --format json "$dir/$sc.tprof" >"$dir/$sc.nosym.report.json"
  done
  if [ $QUICK -eq 1 ]; then
    echo "NOTE: quick mode: healthy and pageable-copies recorded and reported (diagnosis check needs all)"
    grep -q '"id": "pageable-h2d"' "$dir/pageable-copies.report.json"
    return
  fi
  "$PY" "$ROOT/tests/e2e/check_diagnose.py" "$dir"
}

# ---------------------------------------------------------------- d: PyTorch, both tools

torch_proof() { # torch_proof DEVICE
  # 200 steps on the GPU (~3 ms each: the step-time medians settle), 40 on the CPU (~100 ms)
  local dev=$1 d=$OUT/torch-$1 steps=40
  [ "$dev" = cuda ] && steps=${GPU_PROOF_TORCH_STEPS:-200}
  [ $QUICK -eq 1 ] && steps=8
  mkdir -p "$d"
  if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "SKIP: $PY cannot import torch (the PyTorch part runs on the device)"; return 77
  fi
  local run=("$ROOT/bench/torch_cuda_train.py" --device "$dev" --steps "$steps")
  limited "$PY" "${run[@]}" --tool none --summary "$d/steps-plain.json" || return $?
  (cd "$d" && limited "$BUILD/cli/trainprof" record -o "$d/torch-trainprof.tprof" --force -- \
    "$PY" "${run[@]}" --tool trainprof --summary "$d/steps-trainprof.json") || return 1
  limited "$PY" "${run[@]}" --tool torch.profiler --torch-profiler "$d/torch-profiler.json" \
    --summary "$d/steps-torch.json" || return 1
  # what the launch stacks cost: the same recording without them
  (cd "$d" && limited "$BUILD/cli/trainprof" record --stacks none -o "$d/torch-nostacks.tprof" \
    --force -- "$PY" "${run[@]}" --tool trainprof-nostacks --summary "$d/steps-nostacks.json") ||
    return 1
  local nf=() rc=0
  [ "$dev" = cuda ] || nf=(--no-python-frames --allow-empty) # on the CPU: no device work
  "$PY" "$ROOT/scripts/gpu_proof_compare.py" --trainprof "$BUILD/cli/trainprof" \
    --ours "$d/torch-trainprof.tprof" --kineto "$d/torch-profiler.json" "${nf[@]}" \
    --steps-base "$d/steps-plain.json" --steps-ours "$d/steps-trainprof.json" \
    --steps-torch "$d/steps-torch.json" --steps-ours-nostacks "$d/steps-nostacks.json" \
    --out "$d/compare.json" || rc=1
  # Both tools in one process (what a user may do): CUPTI has one subscriber. The program
  # must run as without us, and the recording must say what happened: torch.profiler took
  # CUPTI over (CUDA data missing from then on), or was refused it (PyTorch 2.11 subscribes
  # first and gives up: its trace has no CUDA activity, ours has it all).
  if [ "$dev" = cuda ]; then
    (cd "$d" && limited "$BUILD/cli/trainprof" record -o "$d/torch-both.tprof" --force -- \
      "$PY" "${run[@]}" --tool both --torch-profiler "$d/torch-profiler-both.json" \
      --summary "$d/steps-both.json") >"$d/both.log" 2>&1 || { cat "$d/both.log"; return 1; }
    "$BUILD/cli/trainprof" report "$d/torch-both.tprof" >"$d/both.report.txt" 2>&1
    grep -qE "another CUPTI client (took CUDA tracing over|\(torch.profiler/Kineto\?\) was refused CUPTI)" \
      "$d/both.log" "$d/both.report.txt" ||
      { echo "FAIL: torch.profiler inside a recording: not said"; cat "$d/both.log"; return 1; }
    [ -s "$d/torch-profiler-both.json" ] || { echo "FAIL: torch.profiler wrote nothing"; return 1; }
    echo "torch.profiler inside trainprof record: said"
    rm -f "$d/torch-profiler-both.json" # ~25 MB, its twin is kept
  fi
  return $rc
}

# doctor: what `trainprof doctor` says of the device; its warnings (exit 3) are findings to read
# in the log, not a failed proof; errors (4) are.
doctor() {
  local rc=0
  limited "$BUILD/cli/trainprof" doctor --python "$PY" || rc=$?
  [ $rc -eq 3 ] && echo "NOTE: doctor has warnings (see logs/doctor.log)"
  [ $rc -eq 0 ] || [ $rc -eq 3 ]
}

# The comparison's own check on the CPU: a trainer trace against its Kineto export must agree
# exactly (same kernels, times, copies), so a failure on the GPU is the tools', not the script's.
compare_selfcheck() {
  local d=$OUT/selfcheck
  mkdir -p "$d"
  (cd "$d" && TP record -o t.tprof --force -- "$BUILD/trainer/trainprof-trainer" --device cpu \
    --scenario pageable-copies --steps 4 >/dev/null 2>&1) || return 1
  TP export "$d/t.tprof" --format chrome -o "$d/t.json" --force >/dev/null || return 1
  "$PY" "$ROOT/scripts/gpu_proof_compare.py" --trainprof "$BUILD/cli/trainprof" --ours "$d/t.tprof" \
    --kineto "$d/t.json" --range "" --no-python-frames --tolerance 0.0001 --out "$d/compare.json"
}

# ---------------------------------------------------------------- e: summary

keep_traces() { # small real traces, ready for traces/samples/
  local f
  for f in "$OUT"/scenarios-cuda/*.tprof "$OUT"/torch-cuda/*.tprof "$OUT"/torch-cuda/*.json; do
    [ -f "$f" ] || continue
    [ "$(wc -c <"$f")" -lt $((4 * 1024 * 1024)) ] && cp "$f" "$OUT/traces/"
  done
  return 0
}

summary() {
  local s status name secs note first=1
  {
    echo "{\"dry_run\": $([ $DRY -eq 1 ] && echo true || echo false), \"seconds\": $(( $(date +%s) - T0 )),"
    echo " \"host\": \"$(hostname)\", \"gpu\": \"$( (nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none) | head -1)\","
    echo " \"steps\": ["
    for s in "${STEPS[@]}"; do
      IFS='|' read -r name status secs note <<<"$s"
      [ $first -eq 1 ] || echo ","
      first=0
      printf '  {"name": "%s", "status": "%s", "seconds": %s, "note": "%s"}' "$name" "$status" \
        "$secs" "$(printf '%s' "$note" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
    echo; echo " ],"
    printf ' "compare": %s}\n' "$(cat "$OUT/torch-cuda/compare.json" 2>/dev/null || echo null)"
  } >"$OUT/summary.json"
  {
    echo "gpu-proof $([ $DRY -eq 1 ] && echo '(dry run)') on $(hostname), $(( $(date +%s) - T0 )) s"
    for s in "${STEPS[@]}"; do
      IFS='|' read -r name status secs note <<<"$s"
      printf '  %-18s %-8s %4ss  %s\n' "$name" "$status" "$secs" "$note"
    done
    [ -f "$OUT/logs/torch-cuda.log" ] && grep -v '^==' "$OUT/logs/torch-cuda.log" | tail -n 8
  } >"$OUT/summary.txt"
  cat "$OUT/summary.txt"
}

# ---------------------------------------------------------------- the run

if [ $FETCH -eq 1 ]; then
  fetch_bundle || { echo "gpu-proof: fetching the bundle failed" >&2; exit 1; }
fi
if [ $DRY -eq 0 ] && [ $BUILD_ONLY -eq 0 ] && ! have_gpu; then
  echo "gpu-proof: no NVIDIA GPU here (no /proc/driver/nvidia/version or /dev/nvidia0); use --dry-run" >&2
  exit 1
fi
step deps-table "every module of cmake/TpDeps.cmake has its packages in the bundle's table" check_table
if [ -d "$BUNDLE/debs" ]; then
  step bundle "the -dev packages for the device (${#DEBS[@]} .debs)" check_bundle
elif [ $DRY -eq 1 ]; then
  STEPS+=("bundle|skipped|0|no $BUNDLE/debs here: scripts/gpu-proof.sh --fetch-bundle fetches it")
  echo "== bundle: skipped (no $BUNDLE/debs; --fetch-bundle fetches it)"
fi
if [ $BUILD_IT -eq 1 ]; then
  step build "cmake + build in $BUILD ($JOBS jobs)" build
fi
if [ $BUILD_ONLY -eq 1 ]; then summary; exit $FAILED; fi
if [ ! -x "$BUILD/cli/trainprof" ]; then
  echo "gpu-proof: no trainprof in $BUILD (build it, or give --build-dir)" >&2
  summary
  exit 1
fi
if [ $DRY -eq 1 ]; then
  step compare-check "the comparison on a CPU trace against its own Kineto export" compare_selfcheck
  step scenarios-cpu "trainer scenarios on --device cpu, diagnosed" scenarios cpu
  step torch-cpu "bench/torch_cuda_train.py on the CPU: plain, trainprof, torch.profiler" torch_proof cpu
  plan ctest-gpu "ctest --test-dir $BUILD -L gpu --output-on-failure"
  plan scenarios-cuda "trainer scenarios with --device cuda under trainprof record, check_diagnose.py"
  plan torch-cuda "bench/torch_cuda_train.py on cuda x4 (plain, trainprof record, torch.profiler, record --stacks none) + gpu_proof_compare.py"
else
  step doctor "trainprof doctor on the device (driver, runtime, CUPTI, cuDNN, NCCL, PyTorch)" doctor
  step ctest-gpu "ctest -L gpu" ctest --test-dir "$BUILD" -L gpu --output-on-failure -j 4 --timeout "$LIMIT_S"
  step scenarios-cuda "trainer scenarios with --device cuda, diagnosed" scenarios cuda
  step torch-cuda "PyTorch on the H200: plain, trainprof, torch.profiler, compared" torch_proof cuda
  keep_traces
fi
summary
exit $FAILED
