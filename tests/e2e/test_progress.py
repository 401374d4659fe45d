#!/usr/bin/env python3
"""The progress line on stderr (common/tp_progress), through the real trainprof binary.

No timing: TRAINPROF_PROGRESS_AFTER_MS=0 makes every phase show (its final line is printed
when the phase ends, whatever the clock says), and a threshold of an hour makes every phase
silent. Checked: the final lines' format and figures (the bytes loaded equal the file's size,
the events loaded equal the events the model was built from), every stderr line of a plain
(non-terminal) run is a progress line, --quiet silences it, a terminal gets the line in place
(\\r ... ESC[K) and the final line with its newline, and `export` reports its phase.

usage: test_progress.py TRAINPROF SAMPLES_DIR
"""
import os
import pty
import re
import subprocess
import sys
import tempfile

TP, SAMPLES = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(args, after_ms=None, stderr_tty=False):
    env = dict(os.environ)
    env.pop("TRAINPROF_PROGRESS_AFTER_MS", None)
    if after_ms is not None:
        env["TRAINPROF_PROGRESS_AFTER_MS"] = str(after_ms)
    if not stderr_tty:
        r = subprocess.run([TP] + args, capture_output=True, text=True, env=env, timeout=300)
        return r.returncode, r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen([TP] + args, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        out += b
    os.close(master)
    return p.wait(timeout=300), out.decode("utf-8", "replace")


DONE = re.compile(r"^trainprof (\w+): (.+?): done,(?: (\d+) bytes,)?(?: (\d+) events,)? "
                  r"(\d+\.\d) s$")
RUNNING = re.compile(r"^trainprof (\w+): (.+?):(?: [\d.]+ (?:B|KiB|MiB|GiB|TiB)"
                     r"(?: of [\d.]+ (?:B|KiB|MiB|GiB|TiB) \(\d+ %\))?,)?"
                     r"(?: [\d.]+(?: M)? events,)? \d+\.\d s$")


def done_lines(err):
    return [DONE.match(line) for line in err.splitlines() if DONE.match(line)]


def check_load(trace, cmd="report"):
    size = os.path.getsize(trace)
    name = os.path.basename(trace)
    rc, err = run([cmd, trace], after_ms=0)
    check(rc == 0, f"{cmd} {trace}: exit {rc}: {err}")
    for line in err.splitlines():
        check(DONE.match(line) or RUNNING.match(line), f"not a progress line: {line!r}")
    d = {m.group(2): m for m in done_lines(err)}
    load = d.get("loading " + name)
    check(load is not None, f"no final loading line in {err!r}")
    build = d.get("building the model")
    check(build is not None, f"no final model line in {err!r}")
    check("analysing" in d, f"no final analysing line in {err!r}")
    if load and build:
        check(int(load.group(3)) == size, f"bytes {load.group(3)} != file size {size}")
        check(int(load.group(4)) > 100, f"events {load.group(4)}")
        check(load.group(4) == build.group(4), "events loaded != events in the model")
        # the phases in order: loading, building, analysing
        order = [m.group(2) for m in done_lines(err)]
        check(order == ["loading " + name, "building the model", "analysing"], str(order))
    return int(load.group(4)) if load else 0


tprof = os.path.join(SAMPLES, "cpu-trainer-input-bound.tprof")
with tempfile.TemporaryDirectory() as tmp:
    n_native = check_load(tprof)
    # The same trace as Kineto JSON: the importer reports the bytes it has read.
    js = os.path.join(tmp, "input-bound.json")
    rc, err = run(["export", tprof, "--format", "chrome", "-o", js], after_ms=0)
    check(rc == 0, f"export: {err}")
    exp = [m.group(2) for m in done_lines(err)]
    check(exp == ["exporting " + js], f"export's progress: {err!r}")
    n_json = check_load(js)
    check(n_json > 0 and n_native > 0, "events counted")

    # A threshold not reached: nothing; --quiet: nothing even at 0.
    rc, err = run(["report", js], after_ms=3600 * 1000)
    check(rc == 0 and not done_lines(err) and "loading" not in err, f"not silent: {err!r}")
    rc, err = run(["report", js, "--quiet"], after_ms=0)
    check(rc == 0 and "loading" not in err and "analysing" not in err, f"--quiet: {err!r}")
    rc, err = run(["export", tprof, "--format", "chrome", "-o", js + "2", "-q"], after_ms=0)
    check(rc == 0 and "exporting" not in err, f"export -q: {err!r}")

    # A terminal: each final line is drawn over the running one and ends the line.
    rc, out = run(["report", js], after_ms=0, stderr_tty=True)
    check(rc == 0, f"tty run: exit {rc}")
    check(re.search(r"\rtrainprof report: loading input-bound\.json: done, \d+ bytes, "
                    r"\d+ events, \d+\.\d s\x1b\[K\r?\n", out) is not None,
          f"tty final line: {out!r}")

    # A failed load: one error line, no 'done' line for the phase that failed.
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "name": ')
    rc, err = run(["report", bad], after_ms=0)
    check(rc == 1 and not done_lines(err) and "bad.json" in err, f"failed load: {err!r}")

print("FAIL" if failures else "ok", "test_progress")
sys.exit(1 if failures else 0)
