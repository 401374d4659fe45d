"""Compares `trainprof tui --snapshot` frames with `trainprof report --format json`.

usage: check_snapshot.py REPORT.json DIR   (DIR holds summary.txt, kernels.txt, ...)
Each check names the view and the value; the first failure exits 1."""
import json
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def rows_after_header(lines, header_word):
    """Table rows below the header line that contains header_word, without the marker."""
    for i, line in enumerate(lines):
        if header_word in line and "\u25bc" in line:
            out = []
            for row in lines[i + 1:]:
                if not row.strip() or row.startswith(" q Quit"):
                    break
                out.append(row[2:])
            return out
    fail("no table header with %r" % header_word)


def first_cell(row):
    return re.split(r"\s{2,}", row.strip())[0]


def main():
    report = json.load(open(sys.argv[1]))
    d = sys.argv[2]
    r = report["ranks"][0]
    t = r["temporal"]
    view = {v: open("%s/%s.txt" % (d, v), encoding="utf-8").read().splitlines()
            for v in ("summary", "timeline", "kernels", "ranges", "copies")}

    # No frame is wider than the terminal, even with UTF-8 ("µs", "▼") on it.
    for v, lines in view.items():
        wide = [l for l in lines if len(l) > 120]
        if wide:
            fail("%s: line wider than 120 columns: %r" % (v, wide[0]))

    # Summary: utilization, idle share and compute share as the report computes them.
    s = "\n".join(view["summary"])
    util = 100.0 * t["busy_ns"] / t["span_ns"]
    m = re.search(r"Device utilization\s+([\d.]+) %", s)
    if not m or m.group(1) != "%.2f" % util:
        fail("summary utilization %s, report %.2f" % (m and m.group(1), util))
    m = re.search(r"Idle\s+\S+ \S+\s+([\d.]+) %", s)
    if not m or m.group(1) != "%.2f" % t["idle_pct"]:
        fail("summary idle %s, report %.2f" % (m and m.group(1), t["idle_pct"]))
    m = re.search(r"Compute\s+\S+ \S+\s+([\d.]+) %", s)
    if not m or m.group(1) != "%.2f" % t["compute_pct"]:
        fail("summary compute %s, report %.2f" % (m and m.group(1), t["compute_pct"]))
    host = sum(x["host_wait"]["idle_ns"] for x in r["idle"])
    idle_sum = sum(x[c]["idle_ns"] for x in r["idle"] for c in ("host_wait", "kernel_wait", "other"))
    m = re.search(r"host wait \S+ \S+ \(([\d.]+) %\)", s)
    if not m or m.group(1) != "%.2f" % (100.0 * host / idle_sum):
        fail("summary host wait share %s, report %.2f" % (m and m.group(1), 100.0 * host / idle_sum))
    top = [l for l in view["summary"] if l.startswith("Top kernels")]
    i = view["summary"].index(top[0])
    if first_cell(view["summary"][i + 1]) != r["kernels"][0]["name"]:
        fail("summary top kernel %r, report %r" % (view["summary"][i + 1], r["kernels"][0]["name"]))

    # Kernels: every kernel of the report, in its order (by total), with its count.
    rows = rows_after_header(view["kernels"], "total")
    if len(rows) < min(len(r["kernels"]), 30):
        fail("kernels view shows %d rows, report has %d" % (len(rows), len(r["kernels"])))
    for row, k in zip(rows, r["kernels"]):
        cells = re.split(r"\s{2,}", row.strip())
        if cells[0] != k["name"] or int(cells[1]) != k["count"]:
            fail("kernels row %r, report %s x%d" % (row, k["name"], k["count"]))

    # Ranges: first row is the report's top range by total.
    rows = rows_after_header(view["ranges"], "total")
    if first_cell(rows[0]) != r["ranges"][0]["name"]:
        fail("ranges first row %r, report %r" % (rows[0], r["ranges"][0]["name"]))

    # Copies: one row per (kind, source) with the report's count and GB/s.
    rows = rows_after_header(view["copies"], "busy")
    if len(rows) != len(r["copies"]):
        fail("copies view %d rows, report %d" % (len(rows), len(r["copies"])))
    for c in r["copies"]:
        sep = "on" if c["kind"] == "Memset" else "from"
        name = "%s %s %s" % (c["kind"], sep, c["src"])
        hit = [x for x in rows if first_cell(x) == name]
        if not hit:
            fail("copies view has no row %r" % name)
        cells = re.split(r"\s{2,}", hit[0].strip())
        if int(cells[1]) != c["count"] or cells[4] != "%.2f" % c["gbps"]:
            fail("copies row %r, report count %d GB/s %.2f" % (hit[0], c["count"], c["gbps"]))

    # Copies: the concurrent-bandwidth lines under the table.
    text = "\n".join(view["copies"])
    for b in r["memory_bw"]:
        g = b["gbps"]
        want = "%-16s %10.2f %10.2f %10.2f   (%d points)" % (b["type"], g["mean"], g["p50"],
                                                             g["max"], g["count"])
        if want not in text:
            fail("copies view lacks the bandwidth line %r" % want)

    # Timeline: whole rank at zoom 1, one lane per stream, cursor on an op.
    tl = "\n".join(view["timeline"])
    if "zoom 1x" not in tl or ">stream 0" not in tl or "Selected: " not in tl:
        fail("timeline frame lacks the header, the stream lane or the cursor line")
    print("ok: summary, kernels, ranges, copies and timeline agree with the JSON report")


main()
