#!/bin/sh
# test_doctor_cli: `trainprof doctor` as a user runs it, on fake machines (TP_DOCTOR_ROOT and
# --lib-path point at a temporary tree; --python at a stand-in interpreter printing what
# PyTorch's probe prints): the exit codes (0 nothing wrong, 3 warnings, 4 errors, 2 usage), the
# facts it lists and the findings it names, and a PyTorch probe that hangs being cut off by
# --timeout. Never depends on this machine's driver, libraries or Python.
set -u
TP=$1
T=$(mktemp -d /tmp/tp-doctor-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # check WHAT COND...
    what=$1
    shift
    if ! "$@"; then
        echo "FAIL: $what"
        fail=1
    fi
}

machine() { # machine DRIVER: a root with that kernel module and one GPU, and a lib folder
    rm -rf "$T/root" "$T/lib"
    mkdir -p "$T/root/proc/driver/nvidia/gpus/0000:19:00.0" "$T/lib"
    printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Sep 23\n' "$1" \
        >"$T/root/proc/driver/nvidia/version"
    printf 'Model: \t\t NVIDIA H200\nBus Location: \t 0000:19:00.0\n' \
        >"$T/root/proc/driver/nvidia/gpus/0000:19:00.0/information"
    : >"$T/lib/libcuda.so.$1"
    : >"$T/lib/libcudart.so.13.0.48"
    : >"$T/lib/libcupti.so.13"
}

torch() { # torch CUDA CUDNN: a stand-in interpreter for the PyTorch probe
    printf '#!/bin/sh\necho version=2.11.0+cu130\necho cuda=%s\necho cudnn=%s\necho available=1\n' \
        "$1" "$2" >"$T/python"
    chmod +x "$T/python"
}

doctor() { # runs the doctor on the fake machine; output in $T/out, status in $rc
    env -u LD_LIBRARY_PATH -u CUDA_INJECTION64_PATH TP_DOCTOR_ROOT="$T/root" \
        "$TP" doctor --no-default-paths --lib-path "$T/lib" "$@" >"$T/out" 2>&1
    rc=$?
}

has() { grep -q -- "$1" "$T/out"; }

# everything fits: exit 0, the facts listed
machine 580.95.05
torch 13.0 91002
doctor --python "$T/python"
check "fit: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "fit: driver listed" has "NVIDIA driver    580.95.05"
check "fit: runtime listed" has "CUDA runtime     13.0.48"
check "fit: torch listed" has "PyTorch          2.11.0+cu130 (CUDA 13.0, cuDNN 9.10.2)"
check "fit: says so" has "everything fits together"

# CUDA 13 on a 575 driver: errors for the runtime and for PyTorch's, exit 4
machine 575.57.08
doctor --python "$T/python"
check "old driver: exit 4 (got $rc)" [ "$rc" -eq 4 ]
check "old driver: runtime finding" has "\[error\] driver-too-old: the CUDA runtime"
check "old driver: torch finding" has "\[error\] driver-too-old-for-torch"
check "old driver: names the error" has "cudaErrorInsufficientDriver (35"

# a warning only (no CUPTI): exit 3
machine 580.95.05
rm "$T/lib/libcupti.so.13"
doctor --no-python
check "no cupti: exit 3 (got $rc)" [ "$rc" -eq 3 ]
check "no cupti: finding" has "\[warning\] cupti: no libcupti.so found"
check "--no-python: no PyTorch line" sh -c "! grep -q PyTorch '$T/out'"

# no GPU at all: notes, exit 0
rm -rf "$T/root/proc"
doctor --no-python
check "no gpu: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "no gpu: says why" has "\[info\] no-gpu: no NVIDIA driver is loaded"

# a probe that hangs is cut off
machine 580.95.05
printf '#!/bin/sh\nsleep 60\n' >"$T/python"
chmod +x "$T/python"
doctor --python "$T/python" --timeout 1
check "hang: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "hang: timeout said" has "took over 1 s"

# usage errors
doctor --bogus
check "bad option: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "bad option: message" has "bad option '--bogus'"
"$TP" doctor --help >"$T/out" 2>&1
check "help: exit codes documented" has "exit status: 0 nothing wrong, 3 warnings, 4 errors"

exit $fail
