#!/usr/bin/env python3
"""view_accessors: rewrites reads of tp_an_view's per-row columns (row, end, gpu, ktype, link)
into the accessors of analyzer/tp_an_view.h, at exactly the places the compiler names (the
method of ev_accessors.py, whose helpers it uses).

    scripts/view_accessors.py BUILD_DIR      # BUILD_DIR: a configured build (compile_commands.json)

Run it with those members renamed away in tp_an_view (say row_, end_, link_; gpu and ktype
are gone: one `kind` byte): each "'tp_an_view' has no member named 'F'" error is a read
`BASE->F[IDX]` or `BASE.F[IDX]`, rewritten to `tp_an_view_F(BASE, IDX)` (or `(&BASE, IDX)`).
Writes, uses of a whole column and analyzer/tp_an_view.[ch] (which own the storage) are
listed, not rewritten: those are edited by hand. clang-format the files it names afterwards."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ev_accessors as ea  # noqa: E402

ea.ACCESSOR = {f: 'tp_an_view_' + f for f in ('row', 'end', 'gpu', 'ktype', 'link')}
OWNERS = ('analyzer/tp_an_view.c', 'analyzer/tp_an_view.h')
ERROR = re.compile(r"^(.*?):(\d+):(\d+): error: .tp_an_view.* has no member named .(\w+).")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    where = collections.defaultdict(set)
    for m in map(ERROR.match, ea.syntax_errors(sys.argv[1]).splitlines()):
        if m and m.group(4) in ea.ACCESSOR and not m.group(1).endswith(OWNERS):
            where[os.path.realpath(m.group(1))].add((int(m.group(2)), int(m.group(3)), m.group(4)))
    ea.rewrite_all(where)


if __name__ == '__main__':
    main()
