#!/usr/bin/env python3
"""test_gpu_samples: what the first GPU run (one H200, scripts/gpu-proof.sh, 2026-12-04) showed
wrong, kept fixed on its real CUPTI traces (traces/samples/gpu-h200-*.tprof).

Each check is one bug that run found, on the traces it was found in:
  - every launch call pairs with its kernel: CUPTI names runtime calls "cudaLaunchKernel_v7000"
    (these traces were recorded before the collector cut the suffix; the loader cuts it);
  - the trainer's data-loading ranges and its CUDA calls are one thread: CUPTI's default thread
    ids are pthread_self() values (input-bound was never found);
  - the driver's facts were read before CUDA's teardown: driver API version, each GPU's SMs,
    capability and memory (they were lost to CUDA_ERROR_DEINITIALIZED at exit);
  - the first step, 90x the median (cuDNN loading its kernels), is left out as warm-up;
  - C++ kernels are named as torch.profiler names them (demangled), not as CUPTI does;
  - launch stacks start at the program's call site, not in CUPTI's callback frames (every
    launch grouped as one stack of libcupti frames), and a PyTorch launch from Python has its
    Python frames while the autograd engine's C++ thread (pt_autograd_0) has none.

The exports' tests run on them too, as on every sample (the Perfetto export used to write
CUPTI's tracks out of time order).

usage: test_gpu_samples.py TRAINPROF DIR"""
import json
import os
import subprocess
import sys

TP, SAMPLES = sys.argv[1:3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def report(name, *args):
    r = subprocess.run([TP, "report", "--format", "json", *args, os.path.join(SAMPLES, name)],
                       capture_output=True, text=True)
    check(r.returncode == 0, "%s: report exit %d: %s" % (name, r.returncode, r.stderr))
    return json.loads(r.stdout)["ranks"][0] if r.returncode == 0 else None


def common(name, r):
    env = r["environment"]
    check(env["process"].get("cuda.driver_api") == "13.0",
          "%s: driver API %r, want 13.0" % (name, env["process"].get("cuda.driver_api")))
    g = env.get("gpus") or [{}]
    check(g[0].get("gpu.name") == "NVIDIA H200" and g[0].get("gpu.sms") == "132"
          and g[0].get("gpu.cc") == "9.0" and g[0].get("gpu.source") == "driver",
          "%s: GPU facts from the driver: %s" % (name, g[0]))
    ops = sum(k["count"] for k in r["kernels"])
    check(r["launch"]["n_pairs"] > 0 and r["launch"]["n_pairs"] == ops,
          "%s: every GPU op pairs with its launch call (%d pairs, %d ops)"
          % (name, r["launch"]["n_pairs"], ops))
    for s in r["launch_stacks"]["stacks"]:
        first = s["frames"][0] if s["frames"] else {}
        check(not first.get("module", "").startswith(("libcupti", "libcuda.so", "libcudart")),
              "%s: a launch stack starts in %s" % (name, first.get("label")))


def main():
    ids = lambda r: [f["id"] for f in r["findings"]]  # noqa: E731

    r = report("gpu-h200-trainer-healthy.tprof")
    if r:
        common("healthy", r)
        check(r["steps"].get("warmup_steps") == 1, "healthy: step 1 is warm-up: %s" % r["steps"])
        check(r["steps"].get("warmup_ns", 0) > 50 * r["steps"]["p50_ns"],
              "healthy: warm-up time %s" % r["steps"])
        # on an H200 the trainer's small CNN is launch-bound: 3 us kernels
        check(ids(r)[:1] == ["launch-bound"], "healthy on H200: launch-bound first, got %s" % ids(r))

    r = report("gpu-h200-trainer-input-bound.tprof")
    if r:
        common("input-bound", r)
        f = r["findings"][0] if r["findings"] else {}
        check(f.get("id") == "input-bound" and f.get("level") == "high"
              and "dataloader wait" in f.get("source", ""),
              "input-bound: found first, high, in 'dataloader wait': %s" % ids(r))

    r = report("gpu-h200-torch-train.tprof")
    if r:
        common("torch", r)
        py = [s for s in r["launch_stacks"]["stacks"] if any(x["python"] for x in s["frames"])]
        check(py and any(x["file"].endswith("conv.py") for s in py for x in s["frames"]),
              "torch: launches from Python have Python frames (torch/nn/modules/conv.py)")
        check(len(py) < len(r["launch_stacks"]["stacks"]),
              "torch: the autograd thread's launches (no Python frames) are their own groups")
        names = [k["name"] for k in r["kernels"]]
        check(any(n.startswith("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128,")
                  for n in names), "torch: kernels demangled as torch.profiler shows them")
        # one that libstdc++ cannot demangle stays as recorded, as Kineto leaves it too
        check(sum(n.startswith("_Z") for n in names) == 1,
              "torch: mangled names left: %s" % [n[:40] for n in names if n.startswith("_Z")])
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
