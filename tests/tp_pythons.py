"""The CPythons a Python test runs besides its own: every one found here (pyenv, /usr/bin,
/usr/local/bin, $TP_TEST_PYTHONS), and what version each is. Shared by the tests that check a
behaviour on every interpreter (test_collector_pyframes, _sampler, _threadcount)."""
import glob
import os
import re
import subprocess


def version(python):
    """(major, minor) of `python`, None when it does not run."""
    r = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                       capture_output=True, text=True)
    return tuple(int(x) for x in r.stdout.split()) if r.returncode == 0 else None


def cpythons(also=()):
    """Every CPython 3 found here and in `also`, one path per file (python3.7 and python3.7m
    are often one file), sorted by path."""
    pats = ["/root/.pyenv/versions/3*/bin/python3.*",
            os.path.expanduser("~/.pyenv/versions/3*/bin/python3.*"), "/usr/bin/python3.*",
            "/usr/local/bin/python3.*"]
    paths = [p for pat in pats for p in glob.glob(pat) if re.search(r"python3\.\d+m?$", p)]
    paths += [p for p in os.environ.get("TP_TEST_PYTHONS", "").split(":") if p]
    seen, out = set(), []
    for p in sorted(set(paths) | set(also)):
        key = (os.stat(p).st_dev, os.stat(p).st_ino) if os.access(p, os.X_OK) else None
        if key and key not in seen:
            seen.add(key)
            out.append(p)
    return out
