#!/usr/bin/env bash
# Installs what trainprof's build and tests need on Debian/Ubuntu. Idempotent: packages
# already present are left alone and apt is not even called. Run as root or with sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libzstd-dev        # chunk compression in .tprof files (TRAINPROF_CODEC=zstd; traces before format 1.5)
  liblz4-dev         # chunk compression in .tprof files: the default codec since format 1.5
  libunwind-dev      # call stacks in the collector
  libyajl-dev        # streaming JSON parser for PyTorch-profiler traces (prefix, tail, errors; merge's tree)
  libsimdjson-dev    # simdjson On-Demand: walks the traceEvents array of Kineto traces (model/tp_json_walk)
  rapidjson-dev      # header-only; only bench/bench_json_parsers (the parser comparison), optional
  zlib1g-dev         # .json.gz input and chunk checksums (crc32)
  libdeflate-dev     # gzip members deflated on every core (export .json.gz), whole-file inflate (import)
  libisal-dev        # ISA-L igzip: the Kineto import's streaming inflate (~3x zlib; optional, zlib without it)
  libncurses-dev     # the terminal UI
  libsqlite3-dev     # trainprof export --format sqlite
  libdw-dev          # elfutils libdw: offline symbolization of stacks in the analyzer
  tmux               # drives the terminal UI in tests
  chromium           # test-only: renders `report --format html` headless (screenshot, DOM)
  clang llvm libclang-rt-14-dev  # libFuzzer targets, sanitizer runtimes
  binutils           # addr2line: offline symbolization in tests
  python3            # a few test helpers
  python3-venv       # .deps/pyenv: real CPython programs under the collector (nvtx package)
  time               # /usr/bin/time for the benchmarks' peak-memory figures
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# NVTX v3 headers are needed even without CUDA (the trainer and the collector's NVTX side).
# The CUDA toolkit ships them; Debian does not. Without a toolkit, fetch the PyPI wheel that
# carries the headers into .deps/ (the build looks there).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f /usr/local/cuda/include/nvtx3/nvToolsExt.h ] && [ ! -f "$here/.deps/nvtx/include/nvtx3/nvToolsExt.h" ]; then
  echo "install-deps: no CUDA toolkit; fetching NVTX headers from PyPI into .deps/"
  tmp=$(mktemp -d)
  python3 -m pip download --no-deps -q -d "$tmp" nvidia-nvtx  # CUDA 13 wheel: has the memory extension
  mkdir -p "$here/.deps/nvtx"
  python3 - "$tmp" "$here/.deps/nvtx" <<'PY'
import sys, zipfile, glob, os
whl = glob.glob(os.path.join(sys.argv[1], '*.whl'))[0]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if '/include/' in n and not n.endswith('/'):
            dst = os.path.join(sys.argv[2], 'include', n.split('/include/', 1)[1])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            open(dst, 'wb').write(z.read(n))
PY
  rm -rf "$tmp"
fi
# Real CPython programs under the collector (tests/collector/test_collector_python) use the
# `nvtx` PyPI package, in a virtual environment of their own: .deps/pyenv. The Perfetto export
# test decodes our .pftrace with the official schema, shipped by the `perfetto` package
# (perfetto_trace_pb2, over `protobuf`); test-only, never a dependency of trainprof.
pyenv="$here/.deps/pyenv"
if ! "$pyenv/bin/python3" -c "import nvtx" >/dev/null 2>&1; then
  echo "install-deps: making $pyenv with the nvtx package"
  python3 -m venv "$pyenv"
  "$pyenv/bin/python3" -m pip install -q nvtx
fi
if ! "$pyenv/bin/python3" -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" >/dev/null 2>&1; then
  echo "install-deps: adding the perfetto schema (perfetto, protobuf) to $pyenv"
  "$pyenv/bin/python3" -m pip install -q perfetto protobuf
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: CUDA toolkit found: the CUPTI collector and CUDA kernels will be built"
else
  echo "install-deps: no CUDA toolkit: CPU-only build (install the CUDA 13 toolkit for the CUDA paths)"
fi
