"""The peer set kineto_resnet50_memory_oldfmt (a PyTorch-profiler trace recorded with
profile_memory=True): `trainprof report` gives a memory timeline whose peak equals the
trace's own figure, read here from the raw file: the maximum of Total Allocated where the
events carry it, else (this older format writes Bytes only) the maximum of the running sum of
the CUDA device's Bytes in time order. Skips (77) without the peer traces, fails under CI=true.
usage: check_memory_peer.py TRAINPROF"""
import gzip
import json
import os
import subprocess
import sys

SET = "kineto_resnet50_memory_oldfmt"
root = os.environ.get("TP_PEER_TRACES", "")
folder = os.path.join(root, "traces", SET)
if not root or not os.path.isdir(folder):
    if os.environ.get("CI") == "true":
        print("FAIL: peer traces missing (TP_PEER_TRACES=%s) and CI=true" % root)
        sys.exit(1)
    print("SKIP: peer traces not found (TP_PEER_TRACES; ../shared/peer_traces)")
    sys.exit(77)
files = [os.path.join(folder, f) for f in os.listdir(folder) if not f.startswith(".")]
if len(files) != 1:
    print("FAIL: %s holds %d files, expected 1" % (folder, len(files)))
    sys.exit(1)
with gzip.open(files[0]) as f:
    events = json.load(f)["traceEvents"]
mem = sorted((e for e in events if e.get("name") == "[memory]"
              and e.get("args", {}).get("Device Type") == 1), key=lambda e: e["ts"])
if any("Total Allocated" in e["args"] for e in mem):
    want = max(e["args"]["Total Allocated"] for e in mem if "Total Allocated" in e["args"])
else:
    want, run = 0, 0
    for e in mem:
        run += e["args"]["Bytes"]
        want = max(want, run)
out = subprocess.run([sys.argv[1], "report", "--format", "json", folder], check=True,
                     capture_output=True, text=True).stdout
mu = json.loads(out)["ranks"][0]["memory_use"]
failures = 0
for ok, what in [
    (len(mem) > 1000, "%d CUDA [memory] events in the trace" % len(mem)),
    (mu["source"] == "kineto", "memory_use from the [memory] events"),
    (mu["peak_allocated_bytes"] == want,
     "peak allocated %d == the trace's own %d" % (mu["peak_allocated_bytes"], want)),
    (max(s["allocated_max_bytes"] for s in mu["steps"]) == want,
     "the per-step timeline (%d steps) reaches it" % len(mu["steps"])),
    (mu["peak"]["allocated_bytes"] == want, "the peak moment holds it"),
]:
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok
sys.exit(1 if failures else 0)
