#!/usr/bin/env python3
"""test_collector_codec: TRAINPROF_CODEC picks the chunk codec of a real recording.

The launch-bound trainer (CPU device) under `trainprof record` five times: by default, with
TRAINPROF_CODEC=zstd, lz4-planes, lz4-columns and with an unknown name. The chunk headers as
they lie in each file (docs/trace-format.md 3.1) must carry the codec asked for (lz4 over
columns and byte planes without their zero pieces by default, filter 4; zstd with the lane
delta, lz4 over byte planes, the 1.5 layout, or lz4 over columns, the 1.6 layout, on request; a
chunk a codec cannot shrink is stored as it is),
an unknown name must be said on stderr and fall back to the default, and every run must
hold the same records (the trainer's are deterministic), none dropped, integrity ok.

usage: test_collector_codec.py TRAINPROF TRAINER"""
import json
import os
import struct
import subprocess
import sys
import tempfile

TP, TRAINER = sys.argv[1:3]
failures = 0
CHUNK = struct.Struct("<IHBBIIIIQQQQII")  # tp_chunk_header, 64 bytes
DATA, CODEC_NONE, CODEC_ZSTD, CODEC_LZ4 = 1, 0, 1, 2


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def record(tmp, name, codec):
    env = dict(os.environ)
    env.pop("TRAINPROF_CODEC", None)
    if codec is not None:
        env["TRAINPROF_CODEC"] = codec
    out = os.path.join(tmp, name + ".tprof")
    r = subprocess.run([TP, "record", "-o", out, "--", TRAINER, "--device", "cpu", "--scenario",
                        "launch-bound", "--steps", "40", "--log-every", "1000000"],
                       env=env, capture_output=True, text=True, timeout=110)
    check(r.returncode == 0, "%s: record exit %d: %s" % (name, r.returncode, r.stderr))
    return out, r.stderr


def data_chunks(path):
    """(codec, filter) of every DATA chunk, walking the headers from the file header on."""
    with open(path, "rb") as f:
        b = f.read()
    pos, found = 64, []
    while pos + 64 <= len(b):
        h = CHUNK.unpack_from(b, pos)
        magic, kind, codec, filt, payload = h[0], h[1], h[2], h[3], h[4]
        if magic != 0x48435054:  # "TPCH": the trailer comes next
            break
        if kind == DATA:
            found.append((codec, filt))
        pos += 64 + (payload + 7) // 8 * 8
    return found


def info(path):
    r = subprocess.run([TP, "info", "--json", path], capture_output=True, text=True)
    check(r.returncode == 0, "info: " + r.stderr)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def expect(name, chunks, codec, filt):
    check(len(chunks) >= 3, "%s: %d data chunks" % (name, len(chunks)))
    coded = sum(1 for c in chunks if c == (codec, filt))
    stored = sum(1 for c in chunks if c[0] == CODEC_NONE)
    check(coded >= len(chunks) - 2 and coded + stored == len(chunks),
          "%s: chunks %s, want codec %d filter %d" % (name, chunks, codec, filt))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        default, _ = record(tmp, "default", None)
        zstd, _ = record(tmp, "zstd", "zstd")
        planes, _ = record(tmp, "planes", "lz4-planes")
        columns, _ = record(tmp, "columns", "lz4-columns")
        bogus, err = record(tmp, "bogus", "brotli")
        expect("default", data_chunks(default), CODEC_LZ4, 4)
        expect("zstd", data_chunks(zstd), CODEC_ZSTD, 1)
        expect("planes", data_chunks(planes), CODEC_LZ4, 2)
        expect("columns", data_chunks(columns), CODEC_LZ4, 3)
        expect("bogus", data_chunks(bogus), CODEC_LZ4, 4)
        check("TRAINPROF_CODEC=brotli" in err, "unknown codec not said: " + err)
        docs = [info(p) for p in (default, zstd, bogus, planes, columns)]
        for d in docs:
            check(d.get("dropped_total") == 0, "dropped: %s" % d.get("dropped_total"))
            check(d.get("records", {}).get("KERNEL", 0) > 1000, "KERNEL records: %s" % d.get("records"))
        data = [{k: v for k, v in d.get("records", {}).items() if k in ("NVTX_PUSH", "NVTX_POP",
                 "API", "KERNEL", "MEMCPY", "SYNC")} for d in docs]
        check(all(d == data[0] for d in data), "records differ between codecs: %s" % data)
        # columns put each lane's deltas in runs: about 0.55-0.65x the 1.5 layout's bytes
        check(os.path.getsize(default) < os.path.getsize(planes), "columns not smaller than planes")
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


main()
