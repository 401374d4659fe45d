#!/usr/bin/env python3
"""ev_accessors: rewrites reads of tp_events columns that the model may store narrower than
their type into the accessors of model/tp_model.h, at exactly the places the compiler names.

    scripts/ev_accessors.py BUILD_DIR      # BUILD_DIR: a configured build (compile_commands.json)

Every source of compile_commands.json is compiled with -fsyntax-only; each "'tp_events' has
no member named 'F'" error for F in the table below is a read `BASE->F[IDX]` or `BASE.F[IDX]`,
rewritten to `tp_ev_F(BASE, IDX)` or `tp_ev_F(&BASE, IDX)` (the sed-able pattern, applied
where the type checker says the base is a tp_events). Writes, uses of a whole column (passed
as an array) and model/tp_model.c, model/tp_model_mem.c (which own the storage) are listed,
not rewritten: those are edited by hand (a write through tp_events_set_*, an array through a
copy or a loop over the accessor). Run it after merging code that reads the columns; clang-format
the files it names afterwards."""
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys

ACCESSOR = {'dur': 'tp_ev_dur', 'stream': 'tp_ev_stream', 'device': 'tp_ev_device',
            'pid': 'tp_ev_pid', 'tid': 'tp_ev_tid', 'correlation': 'tp_ev_corr'}
OWNERS = ('model/tp_model.c', 'model/tp_model_mem.c')
ERROR = re.compile(r"^(.*?):(\d+):(\d+): error: .tp_events.* has no member named .(\w+).")
IDENT = re.compile(r'[A-Za-z0-9_]')


def syntax_errors(build):
    """stderr of a syntax-only compile of every source of the build."""
    def one(e):
        cmd = re.sub(r' -o \S+', ' ', e['command']) + ' -fsyntax-only -fmax-errors=0'
        return subprocess.run(cmd, shell=True, cwd=e['directory'], capture_output=True,
                              text=True).stderr
    with open(os.path.join(build, 'compile_commands.json')) as f:
        cmds = json.load(f)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        return ''.join(ex.map(one, cmds))


def base_start(s, p):
    """Start of the postfix expression (a.b->c[i].d, f(x)->e) that ends just before s[p]."""
    while True:
        if p > 0 and IDENT.match(s[p - 1]):
            while p > 0 and IDENT.match(s[p - 1]):
                p -= 1
            if s[p - 2:p] == '->':
                p -= 2
                continue
            if p > 0 and s[p - 1] == '.':
                p -= 1
                continue
            return p
        if p > 0 and s[p - 1] in '])':
            close = s[p - 1]
            opening = '[' if close == ']' else '('
            depth, q = 0, p - 1
            while True:
                depth += s[q] == close
                depth -= s[q] == opening
                if depth == 0:
                    break
                q -= 1
            p = q
            if close == ')' and not (p > 0 and IDENT.match(s[p - 1])):
                return p  # a parenthesized expression is the whole base
            continue
        return p


def closing(s, p):
    """Index of the ']' matching s[p] == '['."""
    depth = 0
    for q in range(p, len(s)):
        depth += s[q] == '['
        depth -= s[q] == ']'
        if depth == 0:
            return q
    raise ValueError(s)


def rewrite(line, col, field):
    """(new line, None) or (line, why not)."""
    p = col - 1
    if line.startswith(field, p):  # "did you mean": gcc points at the member, not the operator
        p -= 2 if line[p - 2:p] == '->' else 1
    op = '->' if line.startswith('->', p) else '.' if line[p:p + 1] == '.' else None
    if op is None or not line.startswith(field, p + len(op)):
        return line, 'not a member access'
    q = p + len(op) + len(field)
    if q >= len(line) or line[q] != '[':
        return line, 'a whole column'
    e = closing(line, q)
    if re.match(r'(=[^=]|[-+*/|&]=|\+\+|--)', line[e + 1:].lstrip()):
        return line, 'a write'
    b = base_start(line, p)
    if b > 0 and line[b - 1] == '&':
        return line, 'an address'
    base = line[b:p] if op == '->' else '&' + line[b:p]
    call = '%s(%s, %s)' % (ACCESSOR[field], base, line[q + 1:e])
    return line[:b] + call + line[e + 1:], None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    where = collections.defaultdict(set)
    for m in map(ERROR.match, syntax_errors(sys.argv[1]).splitlines()):
        if m and m.group(4) in ACCESSOR and not m.group(1).endswith(OWNERS):
            where[m.group(1)].add((int(m.group(2)), int(m.group(3)), m.group(4)))
    rewrite_all(where)


def rewrite_all(where):
    """Rewrites every (line, column, field) of `where` (path -> set) in place, listing what
    it leaves (writes, addresses, whole columns) on stdout; view_accessors.py uses it too."""
    done = 0
    for path, places in sorted(where.items()):
        with open(path) as f:
            lines = f.read().split('\n')
        for line, col, field in sorted(places, reverse=True):  # right to left: columns hold
            lines[line - 1], why = rewrite(lines[line - 1], col, field)
            if why:
                print('%s:%d:%d: %s: %s' % (path, line, col, field, why))
            done += why is None
        with open(path, 'w') as f:
            f.write('\n'.join(lines))
        print('rewrote %s' % path, file=sys.stderr)
    print('%d reads rewritten' % done, file=sys.stderr)


if __name__ == '__main__':
    main()
