#!/usr/bin/env python3
"""trainprof report --format html, rendered in a real browser (headless Chromium).

usage: test_html_report.py TRAINPROF TRAINER PEER_DIR

For each page: (1) the file stands alone: no script, no stylesheet or font link, no src or
href that leaves the page, no http(s) URL at all; (2) Chromium's screenshot is not blank (the
PNG decoded here: many colours, enough non-white pixels, and the step chart's compute colour
drawn); (3) the numbers in Chromium's DOM (data-* attributes) equal `report --format json` on
the same trace: GPU busy and span (utilization), step count and median, the top kernels',
ranges' and CPU ops' totals, the launching stacks' GPU time, ops and innermost frames (the
trainer is recorded with --stacks api), the finding ids in order, the memory peak, the per-step bars
(their parts add up to the step, their median is the report's), and with several ranks the
cross-rank rows and findings.
Pages: the trainer recorded under the collector (input-bound, CPU device); a rank without a
device (its host step split); a synthetic
2-rank PyTorch-profiler job whose kernel and range names hold <, >, & and a </td><script>
(shown as text, never parsed as markup) and whose rank 1 is a straggler; the peer 8-rank
DLRM set (skipped without ../shared/peer_traces, failed under CI=true). Nothing here depends
on timing: every figure is compared with the JSON report of the same file."""
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import zlib
from html.parser import HTMLParser

TP, TRAINER, PEER = sys.argv[1:4]
CI = os.environ.get("CI") == "true"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def skip_or_fail(why):
    if CI:
        print("FAIL " + why + " (CI=true)")
        sys.exit(1)
    print("SKIP " + why)
    sys.exit(77)


def same(a, b):
    """Numbers of the page (attribute text) and of the JSON report: equal, NaN as null."""
    if b is None:
        return a == ""
    if a == "":
        return False
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))


# ------------------------------------------------------------------ the browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp, args, page):
    """Runs headless Chromium on file `page` with a private profile; returns its stdout."""
    prof = tempfile.mkdtemp(dir=tmp, prefix="profile")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--user-data-dir=" + prof] + args + [
               "file://" + os.path.abspath(page)]
    r = subprocess.run(cmd, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return r.stdout.decode()


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA PNG (what Chromium writes): (width, height, rows of
    (r, g, b) tuples)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr")


class Dom(HTMLParser):
    """The elements carrying data-* attributes, each with its rank section and table class."""

    def __init__(self):
        super().__init__()
        self.stack, self.items, self.scripts, self.texts, self.cell = [], [], 0, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        ctx = dict(self.stack[-1][1]) if self.stack else {}
        if tag == "section":
            ctx["section"] = a.get("data-rank", a.get("id"))
        if tag == "table":
            ctx["table"] = a.get("class")
        if tag == "ol":
            ctx["list"] = a.get("class")
        if tag == "td" and a.get("class") == "name":
            self.cell = []
        if tag not in VOID:  # the DOM dump closes every other element, SVG ones included
            self.stack.append((tag, ctx))
        if any(k.startswith("data-") for k in a):
            self.items.append((tag, a, ctx))

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.texts.append("".join(self.cell))
            self.cell = None
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def find(self, section=None, table=None, lst=None, key=None):
        return [a for t, a, c in self.items
                if (section is None or c.get("section") == section)
                and (table is None or c.get("table") == table)
                and (lst is None or c.get("list") == lst)
                and (key is None or key in a)]


# ------------------------------------------------------------------ the checks

def report(tmp, name, traces):
    j = subprocess.run([TP, "report", "--format", "json"] + traces, capture_output=True, text=True)
    assert j.returncode == 0, j.stderr
    page = os.path.join(tmp, name + ".html")
    r = subprocess.run([TP, "report", "--format", "html", "-o", page] + traces,
                       capture_output=True, text=True)
    check(r.returncode == 0 and not r.stdout, "%s: report --format html -o exits 0, prints "
          "nothing (%s)" % (name, r.stderr.strip()))
    if r.returncode:
        sys.exit(1)
    return json.loads(j.stdout), page


def check_standalone(name, text, limit):
    low = text.lower()
    check(low.startswith("<!doctype html>"), name + ": an HTML5 document")
    check("<script" not in low and "<link" not in low and "@import" not in low
          and "url(" not in low, name + ": no script, no linked stylesheet or font")
    check("http://" not in low and "https://" not in low, name + ": no http(s) URL anywhere")
    import re
    refs = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', text)
    check(all(r.startswith("#") for r in refs), name + ": every src/href stays in the page "
          "(%d in-page links)" % len(refs))
    check(len(text) < limit, name + ": %d bytes, under %d" % (len(text), limit))


def check_screenshot(tmp, name, page):
    shot = os.path.join(tmp, name + ".png")
    # half scale: the page laid out at 1280 CSS px, a quarter of the pixels to decode here
    chromium(tmp, ["--window-size=1280,2600", "--force-device-scale-factor=0.5",
                   "--screenshot=" + shot], page)
    w, h, rows = png_pixels(shot)
    colours, inked, compute = set(), 0, 0
    for row in rows:
        for px in row:
            colours.add(px)
            inked += px != (255, 255, 255)
            compute += px == (0x4E, 0x79, 0xA7)  # the compute / own-work colour of the bars
    total = w * h
    check(w == 640 and h == 1300, name + ": screenshot %dx%d" % (w, h))
    check(len(colours) >= 16, name + ": screenshot has %d colours (not blank)" % len(colours))
    check(inked > total * 0.03, name + ": %.1f %% of the screenshot is not white" %
          (100.0 * inked / total))
    check(compute > 100, name + ": the charts are drawn (%d pixels of the bar colour)" % compute)


def check_rank(name, dom, rk):
    sec = str(rk["rank"])
    tag = "%s rank %s" % (name, sec)
    one = lambda key: (dom.find(section=sec, key=key) or [{}])[0].get(key)
    t = rk["temporal"]
    if rk["has_gpu"]:
        check(one("data-busy-ns") == str(t["busy_ns"]) and one("data-span-ns") == str(t["span_ns"]),
              tag + ": utilization = busy %s / span %s as in JSON" % (t["busy_ns"], t["span_ns"]))
    st = rk["steps"]
    check(one("data-steps") == str(st["count"]), tag + ": %d steps" % st["count"])
    check(same(one("data-step-p50-ns"), st["p50_ns"]) and same(one("data-step-p90-ns"), st["p90_ns"]),
          tag + ": step median %s and p90 as in JSON" % st["p50_ns"])
    ids = [f["data-finding-id"] for f in dom.find(section=sec, lst="findings", key="data-finding-id")]
    check(ids == [f["id"] for f in rk["findings"]], tag + ": findings %s in JSON's order" % ids)
    sev = [f["data-severity"] for f in dom.find(section=sec, lst="findings", key="data-severity")]
    check(all(same(a, f["severity"]) for a, f in zip(sev, rk["findings"])), tag + ": severities")
    top = int(dom.find(key="data-top")[0]["data-top"])
    for table, key, rows, field in (("kernels", "data-sum-ns", rk["kernels"], "sum_ns"),
                                    ("ranges", "data-total-ns", rk["ranges"], "total_ns"),
                                    ("cpuops", "data-self-ns", rk["cpu_ops"]["ops"], "self_ns")):
        if not rk["has_gpu"] and table == "kernels":
            continue
        got = [int(a[key]) for a in dom.find(section=sec, table=table, key=key)]
        want = [r[field] for r in rows[:top]]
        check(got == want, tag + ": top %d %s (%s) as in JSON" % (len(want), table, want[:3]))
    ls = rk.get("launch_stacks", {}).get("stacks", [])
    got = [(int(a["data-gpu-ns"]), int(a["data-count"]))
           for a in dom.find(section=sec, table="stacks", key="data-gpu-ns")]
    check(got == [(g["gpu_ns"], g["count"]) for g in ls[:top]],
          tag + ": top %d launching stacks (GPU time, ops) as in JSON" % min(top, len(ls)))
    check(all(any(g["frames"][0]["label"] in t for t in dom.texts) for g in ls[:top]),
          tag + ": each shown group's innermost frame as in JSON")
    mu = rk.get("memory_use")
    if mu and mu["peak_allocated_bytes"] >= 0:
        check(one("data-peak-allocated-bytes") == str(mu["peak_allocated_bytes"]),
              tag + ": memory peak %d B" % mu["peak_allocated_bytes"])
    if not rk["has_gpu"] and rk["host"]["window_ns"] > 0:
        h = rk["host"]
        check((one("data-host-window-ns"), one("data-host-data-ns"), one("data-host-ops-ns"),
               one("data-host-unrecorded-ns")) ==
              (str(h["window_ns"]), str(h["data_ns"]), str(h["ops_ns"]), str(h["unrecorded_ns"])),
              tag + ": host window %d, data loading %d, ops %d, no range open %d as in JSON" %
              (h["window_ns"], h["data_ns"], h["ops_ns"], h["unrecorded_ns"]))
    bars = dom.find(section=sec, table="steps", key="data-dur-ns")
    if rk["has_gpu"] and st["count"]:
        parts = ("compute", "comm", "memory", "other", "idle")
        check(sum(int(b["data-step-count"]) for b in bars) == st["count"],
              tag + ": the step bars cover the %d steps" % st["count"])
        check(all(sum(int(b["data-%s-ns" % p]) for p in parts) == int(b["data-dur-ns"])
                  for b in bars), tag + ": each bar's parts add up to its steps' time")
        if all(b["data-step-count"] == "1" for b in bars):
            med = statistics.median(int(b["data-dur-ns"]) for b in bars)
            check(same(str(med), st["p50_ns"]), tag + ": median bar %s = the step median" % med)


def check_page(tmp, name, traces, limit=2_000_000):
    js, page = report(tmp, name, traces)
    text = open(page, encoding="utf-8").read()
    check_standalone(name, text, limit)
    dom = Dom()
    dom.feed(chromium(tmp, ["--dump-dom"], page))
    check(dom.scripts == 0, name + ": the browser's DOM holds no script element")
    check(dom.find(key="data-ranks")[0]["data-ranks"] == str(len(js["ranks"])),
          name + ": %d rank(s)" % len(js["ranks"]))
    for rk in js["ranks"]:
        check(len(dom.find(section=str(rk["rank"]), key="data-has-gpu")) == 1,
              "%s: rank %d has its section" % (name, rk["rank"]))
        check_rank(name, dom, rk)
    if "cross_rank" in js:
        x = js["cross_rank"]
        rows = dom.find(section="cross-rank", table="ranks", key="data-xr-rank")
        check([(int(r["data-xr-rank"]), r["data-step-p50-ns"]) for r in rows] and
              all(int(r["data-xr-rank"]) == w["rank"] and same(r["data-step-p50-ns"], w["step_p50_ns"])
                  and int(r["data-exposed-comm-ns"]) == w["exposed_comm_ns"]
                  for r, w in zip(rows, x["ranks"])) and len(rows) == len(x["ranks"]),
              name + ": the cross-rank rows as in JSON")
        got = [(f["data-finding-id"], int(f["data-rank"]))
               for f in dom.find(section="cross-rank", key="data-finding-id")]
        check(got == [(f["id"], f["rank"]) for f in x["findings"]],
              name + ": cross-rank findings %s as in JSON" % got)
    check_screenshot(tmp, name, page)
    return js, dom


# ------------------------------------------------------------------ the traces

ODD_KERNEL = "void gemm<float, 128>(T const&, T*) </td><script>alert(1)</script> & more"
ODD_RANGE = "fwd <b>bold</b> & 'quoted' \"x\""


def kineto(k, world, step_us, comp_us, steps=8):
    ev, t = [], 1000.0
    for i in range(steps):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": t, "dur": step_us})
        ev.append({"ph": "X", "cat": "user_annotation", "name": ODD_RANGE, "pid": 1, "tid": 1,
                   "ts": t + 0.5, "dur": 12})
        for c, (kname, start, dur) in enumerate(((ODD_KERNEL, 10, comp_us),
                                                 ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                                  20 + comp_us, 30))):
            corr = 2 * i + c + 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t + 1 + 5 * c, "dur": 4, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7 + c,
                       "ts": t + start, "dur": dur,
                       "args": {"stream": 7 + c, "device": 0, "correlation": corr}})
        t += step_us + 10
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200"}],
            "distributedInfo": {"backend": "nccl", "rank": k, "world_size": world},
            "traceEvents": ev}


def host_only():
    """One rank without a device: steps, the DataLoader inside them, framework ops."""
    ev = []
    for i in range(6):
        t = 1000.0 + 1000 * i
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": t, "dur": 900})
        ev.append({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_next_",
                   "pid": 1, "tid": 1, "ts": t + 10, "dur": 500})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1,
                   "ts": t + 520, "dur": 300})
    return {"schemaVersion": 1, "traceEvents": ev}


def main():
    if not CHROMIUM:
        skip_or_fail("chromium is not installed (scripts/install-deps.sh)")
    with tempfile.TemporaryDirectory() as tmp:
        # the trainer under the collector: a real recording
        trace = os.path.join(tmp, "input-bound.tprof")
        r = subprocess.run([TP, "record", "--stacks", "api", "-o", trace, "--", TRAINER,
                            "--device", "cpu",
                            "--scenario", "input-bound", "--read-loss-every", "1", "--steps", "12"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        js, _ = check_page(tmp, "trainer", [trace])
        check(js["ranks"][0]["findings"] and js["ranks"][0]["findings"][0]["id"] == "input-bound",
              "trainer: input-bound is the top finding (the page shows it first)")
        check(len(js["ranks"][0]["launch_stacks"]["stacks"]) >= 3,
              "trainer: recorded with launching stacks (the page's stacks table has rows)")

        # two ranks, rank 1 three times slower, names that are markup
        job = os.path.join(tmp, "job")
        os.mkdir(job)
        for k, (step, comp) in enumerate(((400, 100), (700, 300))):
            with open(os.path.join(job, "rank%d.json" % k), "w") as f:
                json.dump(kineto(k, 2, step, comp), f)
        js, dom = check_page(tmp, "synthetic-2rank", [job])
        check(ODD_KERNEL in dom.texts and ODD_RANGE in dom.texts,
              "synthetic-2rank: the kernel and range names with <, >, & show as their exact text")
        check(any(f["id"] == "straggler" for f in js.get("cross_rank", {}).get("findings", [])),
              "synthetic-2rank: the job has a straggler finding to show")

        # many steps: the page stays small, each bar the mean of a few steps, all counted
        many = os.path.join(tmp, "many.json")
        with open(many, "w") as f:
            json.dump(kineto(0, 1, 400, 100, steps=1000), f)
        js, dom = check_page(tmp, "1000-steps", [many], limit=400_000)
        rows = dom.find(table="steps", key="data-step-count")
        check(len(rows) <= 240 and max(int(r["data-step-count"]) for r in rows) > 1,
              "1000-steps: %d bars of up to %s steps (at most 240)" %
              (len(rows), max(int(r["data-step-count"]) for r in rows)))

        # a rank without a device: the host's step split instead of the device charts
        cpu = os.path.join(tmp, "host.json")
        with open(cpu, "w") as f:
            json.dump(host_only(), f)
        js, _ = check_page(tmp, "host-only", [cpu])
        check(not js["ranks"][0]["has_gpu"] and js["ranks"][0]["host"]["data_ns"] > 0,
              "host-only: a rank without device activity, with data loading in its steps")
        _, page = report(tmp, "host-only-text", [cpu])
        html = open(page, encoding="utf-8").read()
        check("no device activity: judged from the host&#39;s steps" in html.replace("'", "&#39;")
              and "not judged without device activity: input-bound" in html,
              "host-only: the diagnosis says what it is judged from and what it cannot judge")

        dlrm = os.path.join(PEER, "param_dlrm_8rank")
        if os.path.isdir(dlrm):
            js, _ = check_page(tmp, "dlrm-8rank", [dlrm])
            check(len(js["ranks"]) == 8, "dlrm-8rank: 8 ranks")
        elif CI:
            check(False, "peer set param_dlrm_8rank present (CI=true)")
        else:
            print("SKIP peer set param_dlrm_8rank: %s not present" % dlrm)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


main()
