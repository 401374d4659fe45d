"""Assertions for e2e_memory.sh: who holds device memory, checked against the trainer's own
allocator (its --json-summary and its stderr message)."""
import json
import os
import re
import sqlite3
import sys

d = sys.argv[1]
failures = []
KEPT = "range 'forward conv1' in 'step'"  # layer 0's output, kept by --keep-activations


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def case(name):
    rank = load(name + ".report.json")["ranks"][0]
    return rank, load(name + ".summary.json"), {f["id"]: f for f in rank["findings"]}


def stderr_mib(name, what):
    """A MiB figure from the trainer's own failure message on stderr."""
    with open(os.path.join(d, name + ".record.log")) as f:
        m = re.search(r"([0-9.]+) MiB " + what, f.read())
    return float(m.group(1)) if m else None


def common(name, rank, summ):
    mu = rank.get("memory_use")
    check(mu is not None and mu["source"] == "nvtx", name + ": memory_use from NVTX regions")
    check(mu["peak_allocated_bytes"] == summ["peak_allocated_bytes"],
          "%s: peak allocated %d == trainer's %d" % (name, mu["peak_allocated_bytes"],
                                                     summ["peak_allocated_bytes"]))
    check(mu["peak_reserved_bytes"] == summ["peak_reserved_bytes"],
          "%s: peak reserved %d == trainer's %d" % (name, mu["peak_reserved_bytes"],
                                                    summ["peak_reserved_bytes"]))
    top = max(s["allocated_max_bytes"] for s in mu["steps"])
    if name == "grow":  # the peak is the evaluation after the steps
        check(0 < top <= summ["peak_allocated_bytes"], name + ": the per-step timeline")
    else:
        check(top == summ["peak_allocated_bytes"], name + ": the per-step timeline reaches the peak")
    return mu


def oom_numbers(name, mu, summ):
    o = mu["oom"]
    for k in ("requested", "reserved", "free", "largest_free"):
        check(o[k + "_bytes"] == summ["oom_" + k + "_bytes"],
              "%s: oom %s %d == trainer's %d" % (name, k, o[k + "_bytes"],
                                                 summ["oom_" + k + "_bytes"]))
    req = stderr_mib(name, r"\(")  # "tried to allocate X MiB (N bytes)"
    check(req is not None and abs(req - o["requested_bytes"] / 2**20) < 0.01,
          name + ": request as in the trainer's stderr message")
    return o


# fragmentation: the kept activations hold the memory and pin the segments that cannot fit
rank, summ, fs = case("frag")
mu = common("frag", rank, summ)
o = oom_numbers("frag", mu, summ)
check(o["class"] == "fragmentation", "frag: class fragmentation (got %s)" % o["class"])
top = [h["site"] for h in o["state"]["holders"][:3]]
check(KEPT in top, "frag: kept activations among the top 3 holders at the OOM: %s" % top)
kept = [h for h in o["state"]["holders"] if h["site"] == KEPT][0]
check(kept["steps_alive"] >= 2 and kept["blocks"] >= 2,
      "frag: kept activations alive %d steps in %d blocks" % (kept["steps_alive"], kept["blocks"]))
pinned = [s for s in o["state"]["segments"] if s["pinned_by"] == KEPT and not s["fits_request"]]
check(len(pinned) >= 1, "frag: %d segments that cannot fit the request pinned by them" % len(pinned))
check(all(s["largest_hole_bytes"] < o["requested_bytes"] for s in o["state"]["segments"]),
      "frag: no segment has a hole the request fits")
free_holes = sum(s["free_bytes"] for s in o["state"]["segments"])
check(free_holes == summ["oom_free_bytes"],
      "frag: the segments' holes add up to the trainer's free bytes (%d)" % free_holes)
f = fs.get("fragmentation-oom")
check(f is not None and KEPT in f["evidence"] and "pinned by" in f["evidence"],
      "frag: the finding names the kept activations pinning segments")
check("oom" not in fs, "frag: not also a plain oom")

# one request over the budget at step 1: called that, not fragmentation, and not input-bound
rank, summ, fs = case("big")
mu = common("big", rank, summ)
o = oom_numbers("big", mu, summ)
check(o["class"] == "request-over-budget", "big: class request-over-budget (got %s)" % o["class"])
check(o["requested_bytes"] > mu["peak_reserved_bytes"], "big: request > all ever reserved")
check("oom" in fs and "single request" in fs["oom"]["title"], "big: oom says a single request")
check("fragmentation-oom" not in fs, "big: not fragmentation")
check("input-bound" not in fs, "big: step 1 (warm-up) is not judged input-bound")
with open(os.path.join(d, "big.report.txt")) as f:
    check("warm-up" in f.read(), "big: the text says only the warm-up step was recorded")

# keep activations without a limit: growth names the kept activations, never freed
rank, summ, fs = case("grow")
mu = common("grow", rank, summ)
g = mu["growth"]
check(g is not None and g["site"] == KEPT, "grow: the growing site is the kept activations")
check(g["blocks"] == summ["steps_run"] and g["blocks_freed"] == 0,
      "grow: one kept block per step (%d of %d steps), none freed" % (g["blocks"],
                                                                      summ["steps_run"]))
steps = len(mu["steps"])
per_step = (g["last_bytes"] - g["first_bytes"]) / (steps - 1)
check(abs(g["slope_bytes_per_step"] - per_step) <= 0.01 * per_step,
      "grow: slope %.0f B/step == (last - first) / steps %.0f" % (g["slope_bytes_per_step"],
                                                                 per_step))
f = fs.get("memory-growth")
check(f is not None and KEPT in f["evidence"] and "none of its 12 blocks ever freed" in f["evidence"],
      "grow: memory-growth names the site and that it is never freed")
check("memory_snapshot" not in (f or {}).get("advice", ""), "grow: no pointer to another tool")

# exports of frag: the Chrome counters reach the trainer's peaks; SQLite's live blocks at the
# OOM add up to what the trainer had allocated then, the kept activations among them
rank, summ, fs = case("frag")
counters = [e for e in load("frag.chrome.json")["traceEvents"] if e["ph"] == "C"]
check(counters and max(e["args"]["allocated"] for e in counters) == summ["peak_allocated_bytes"],
      "export: Chrome counter allocated peaks at the trainer's peak")
check(counters and max(e["args"]["reserved"] for e in counters) == summ["peak_reserved_bytes"],
      "export: Chrome counter reserved peaks at the trainer's peak reserved")
db = sqlite3.connect(os.path.join(d, "frag.sqlite"))
live = db.execute("SELECT SUM(size) FROM memory_live_blocks WHERE moment = 'oom'").fetchone()[0]
check(live == summ["oom_reserved_bytes"] - summ["oom_free_bytes"],
      "export: SQLite live blocks at the OOM add up to the trainer's allocated (%s)" % live)
peak = db.execute("SELECT SUM(size) FROM memory_live_blocks WHERE moment = 'peak'").fetchone()[0]
check(peak == summ["peak_allocated_bytes"], "export: SQLite live blocks at the peak")
kept = db.execute("SELECT COUNT(*), MAX(steps_alive) FROM memory_live_blocks WHERE moment = 'oom' "
                  "AND site = ?", (KEPT,)).fetchone()
check(kept[0] >= 2 and kept[1] >= 2, "export: the kept activations' blocks at the OOM %s" % (kept,))

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
