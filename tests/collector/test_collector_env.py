#!/usr/bin/env python3
"""test_collector_env: the environment in every trace (ENV records, format 1.4).

A real CPython program (the venv with the `nvtx` package) loads, through ctypes, stand-ins of
the CUDA libraries' version functions named as the real libraries are (fake_cudalibs.c:
libcuda.so.580.65.06, libcudart.so.13.0.48, libcudnn.so.9.10.2, libnccl.so.2.27.3) and a fake
torch package (torch/lib/libtorch_python.so next to torch/version.py), under `trainprof
record` with some variables set. `trainprof info --json` and `trainprof report --format json`
must show exactly those versions, the one GPU the fake driver describes, the interpreter's
version, the selected variables and not the others. A second run loads nothing: the trace then
has no CUDA facts at all (the collector never loads CUDA itself). A third runs on one CPU
(an affinity mask): cpu.allowed says so.

usage: test_collector_env.py TRAINPROF PYTHON FAKE_LIB_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TP, PY, LIBS = sys.argv[1:4]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


PROG = r"""
import ctypes, sys
for p in sys.argv[1:]:
    ctypes.CDLL(p)
import nvtx
with nvtx.annotate("env-test"):
    pass
"""


def record(tmp, libs, extra_env):
    env = dict(os.environ)
    env.update(extra_env)
    out = os.path.join(tmp, "t.tprof")
    r = subprocess.run([TP, "record", "-o", out, "--", PY, "-c", PROG] + libs, env=env,
                       cwd=tmp, capture_output=True, text=True, timeout=90)
    check(r.returncode == 0, "record exit %d: %s" % (r.returncode, r.stderr))
    return out


def info_env(trace):
    r = subprocess.run([TP, "info", "--json", trace], capture_output=True, text=True)
    check(r.returncode == 0, "info: " + r.stderr)
    doc = json.loads(r.stdout)
    check(tuple(map(int, doc["version"].split("."))) >= (1, 4), "format version " + doc["version"])
    env = {}
    for e in doc["environment"]:
        env[(e["device"], e["key"])] = e["value"]
    return env


def report_env(trace):
    r = subprocess.run([TP, "report", "--format", "json", trace], capture_output=True,
                       text=True)
    check(r.returncode == 0, "report: " + r.stderr)
    return json.loads(r.stdout)["ranks"][0].get("environment")


def fake_torch(tmp):
    lib = os.path.join(tmp, "site", "torch", "lib")
    os.makedirs(lib)
    shutil.copy(os.path.join(LIBS, "libtorch_python.so"), lib)
    with open(os.path.join(tmp, "site", "torch", "version.py"), "w") as f:
        f.write("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda']\n"
                "__version__ = '2.11.0+cu130'\ndebug = False\n"
                "cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n")
    return os.path.join(lib, "libtorch_python.so")


def python_version():
    r = subprocess.run([PY, "-c", "import platform; print(platform.python_version())"],
                       capture_output=True, text=True)
    return r.stdout.strip()


def test_with_libraries():
    tmp = tempfile.mkdtemp(prefix="tp-env-")
    libs = [os.path.join(LIBS, n) for n in ("libcuda.so.580.65.06", "libcudart.so.13.0.48",
                                            "libcudnn.so.9.10.2", "libnccl.so.2.27.3",
                                            "libcupti.so.13.2.20")]
    libs.append(fake_torch(tmp))
    trace = record(tmp, libs, {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_IB_DISABLE": "1",
                               "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                               "OMP_NUM_THREADS": "3", "TP_TEST_SECRET": "hunter2"})
    env = info_env(trace)
    want = {
        (None, "cuda.driver"): "580.65.06",  # libcuda's file name as loaded
        (None, "cuda.driver_api"): "13.0",
        (None, "cuda.runtime"): "13.0",
        (None, "cudnn"): "9.10.2",
        (None, "nccl"): "2.27.3",
        (None, "cupti"): "13.2.20",  # its file name: CUPTI was loaded, never started by us
        (None, "torch"): "2.11.0+cu130",
        (None, "torch.cuda"): "13.0",
        (None, "python"): python_version(),
        (None, "env.CUDA_LAUNCH_BLOCKING"): "1",
        (None, "env.NCCL_IB_DISABLE"): "1",
        (None, "env.PYTORCH_CUDA_ALLOC_CONF"): "expandable_segments:True",
        (None, "env.OMP_NUM_THREADS"): "3",
        (0, "gpu.name"): "Fake GPU H200",
        (0, "gpu.sms"): "132",
        (0, "gpu.cc"): "9.0",
        (0, "gpu.memory"): "150000000000",
        (0, "gpu.clock_mhz"): "1980",
        (0, "gpu.mem_clock_mhz"): "3201",
        (0, "gpu.pci"): "0000:19:00.0",
        (0, "gpu.source"): "driver",
    }
    if os.path.exists("/proc/driver/nvidia/version"):
        del want[(None, "cuda.driver")]  # a real driver here may differ; the file name wins
    for k, v in want.items():
        check(env.get(k) == v, "%s = %r, want %r" % (k, env.get(k), v))
    check((None, "env.TP_TEST_SECRET") not in env, "an unselected variable was recorded")
    check(all(k[0] in (None, 0) for k in env), "facts about a GPU that does not exist")
    check(env.get((None, "cpu.cores"), "0").isdigit() and int(env[(None, "cpu.cores")]) > 0,
          "cpu.cores")
    check((None, "host") in env, "host")
    rep = report_env(trace)
    check(rep is not None, "report has no environment")
    if rep:
        check(rep["process"].get("cudnn") == "9.10.2", "report cudnn")
        check(rep["gpus"] and rep["gpus"][0]["device"] == 0
              and rep["gpus"][0].get("gpu.pci") == "0000:19:00.0", "report gpus")
    shutil.rmtree(tmp)


def test_without_libraries():
    tmp = tempfile.mkdtemp(prefix="tp-env-")
    trace = record(tmp, [], {})
    env = info_env(trace)
    for k in ("cuda.runtime", "cuda.driver_api", "cudnn", "nccl", "cupti", "torch"):
        check((None, k) not in env, "%s recorded although nothing loaded it" % k)
    check(not any(k[0] is not None and env[k] == "driver" for k in env),
          "GPU facts from a driver nobody initialised")
    check(env.get((None, "python")) == python_version(), "python version")
    shutil.rmtree(tmp)


def test_affinity():
    """Run on one CPU (taskset's mask): cpu.allowed 1 where the machine has more; the report's
    environment shows it. A cgroup quota, when there is one, reads as a number of CPUs."""
    tmp = tempfile.mkdtemp(prefix="tp-env-")
    one = min(os.sched_getaffinity(0))
    env = dict(os.environ)
    out = os.path.join(tmp, "t.tprof")
    r = subprocess.run([TP, "record", "-o", out, "--", PY, "-c", PROG], env=env, cwd=tmp,
                       capture_output=True, text=True, timeout=90,
                       preexec_fn=lambda: os.sched_setaffinity(0, {one}))
    check(r.returncode == 0, "record on one CPU: " + r.stderr)
    env = info_env(out)
    cores = int(env.get((None, "cpu.cores"), "0"))
    if cores > 1:
        check(env.get((None, "cpu.allowed")) == "1", "cpu.allowed = %r on one CPU of %d" %
              (env.get((None, "cpu.allowed")), cores))
        rep = report_env(out)
        check(rep and rep["process"].get("cpu.allowed") == "1", "report cpu.allowed")
    quota = env.get((None, "cpu.quota"))
    check(quota is None or float(quota) > 0, "cpu.quota %r" % quota)
    shutil.rmtree(tmp)


def main():
    if not os.path.exists(PY):
        print("SKIP: no venv python at", PY)
        sys.exit(77)
    test_with_libraries()
    test_without_libraries()
    test_affinity()
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


main()
