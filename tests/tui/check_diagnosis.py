"""Compares `trainprof tui --snapshot --view diagnosis` with the findings of
`trainprof report --format json` for the same trace.

usage: check_diagnosis.py REPORT.json FRAME.txt
Every finding of the report must be in the frame, in the report's order, with the same
level, severity, title, evidence, source and fix (wrapped lines joined; whitespace aside);
the frame must list no other finding. The first difference exits 1."""
import json
import re
import sys

HEAD = re.compile(r"^[> ] (\d+)\. \[(\w+) +(\d+)%\] (.*)$")
LABELS = {"evidence:": "evidence", "source:": "source", "fix:": "advice", "go to:": "goto"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def squash(s):
    return "".join(s.split())


def parse(lines):
    """The findings of the frame: number, level, percent, title and the labelled blocks."""
    out, cur, field = [], None, None
    for line in lines:
        m = HEAD.match(line)
        if m:
            cur = {"n": int(m.group(1)), "level": m.group(2), "pct": int(m.group(3)),
                   "title": m.group(4), "evidence": "", "source": "", "advice": ""}
            out.append(cur)
            field = "title"  # a long title goes on under itself
            continue
        if cur is None or not line.strip() or line.startswith(" q Quit"):
            field = None
            continue
        body = line.strip()
        for label, key in LABELS.items():
            if line.startswith("     " + label):
                field, body = key, line[5 + len(label):].strip()
                break
        if field == "title":
            cur["title"] += " " + body
        elif field:
            cur[field] = cur.get(field, "") + " " + body
    return out


def main():
    report = json.load(open(sys.argv[1]))
    lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
    want = report["ranks"][0]["findings"]
    got = parse(lines)
    if not want:
        fail("the report has no finding: the trace does not exercise the view")
    if len(got) != len(want):
        fail("frame lists %d findings, report %d" % (len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        where = "finding %d (%s)" % (i + 1, w["id"])
        if g["n"] != i + 1:
            fail("%s: numbered %d" % (where, g["n"]))
        if g["level"] != w["level"]:
            fail("%s: level %s, report %s" % (where, g["level"], w["level"]))
        if g["pct"] != int("%.0f" % (100 * w["severity"])):
            fail("%s: severity %d%%, report %.4f" % (where, g["pct"], w["severity"]))
        if " ".join(g["title"].split()) != " ".join(w["title"].split()):
            fail("%s: title %r, report %r" % (where, g["title"], w["title"]))
        for key in ("evidence", "source", "advice"):
            if squash(g[key]) != squash(w[key]):
                fail("%s: %s %r, report %r" % (where, key, g[key].strip(), w[key]))
    print("ok: %d findings agree with the JSON report" % len(want))


main()
