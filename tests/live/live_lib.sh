# Sourced by the live tests: a private folder $W with its own XDG_RUNTIME_DIR (so the jobs'
# sockets are the test's alone, in $SOCKDIR), a cleanup that kills the job ($JOB) and the
# recorder ($REC) left behind, and the helpers every test uses. KEEP_W=1 keeps $W of a
# failed run to look at.
W=$(mktemp -d)
export XDG_RUNTIME_DIR=$W/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
SOCKDIR=$XDG_RUNTIME_DIR/trainprof
REC=
JOB=
live_cleanup() {
    [ -n "$JOB" ] && kill -KILL "$JOB" 2>/dev/null
    [ -n "$REC" ] && kill -KILL "$REC" 2>/dev/null
    [ -n "${KEEP_W:-}" ] || rm -rf "$W"
}
trap live_cleanup EXIT

# fail WHY: says why, shows the ends of the test's logs and frames, exits 1.
fail() {
    echo "FAIL: $*"
    for f in "$W"/*.log "$W"/*.txt; do [ -f "$f" ] && { echo "== $f"; tail -30 "$f"; }; done
    exit 1
}

# poll CMD...: runs CMD every 0.2 s until it succeeds, at most 120 s.
poll() {
    for _ in $(seq 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}

has_sock() { compgen -G "$SOCKDIR/*.sock" >/dev/null; }

# need_venv PY: skips (77) without the nvtx venv's python, fails under CI.
need_venv() {
    if [ ! -x "$1" ]; then
        [ "${CI:-}" = true ] && { echo "FAIL: no venv python at $1"; exit 1; }
        echo "SKIP: no venv python at $1 (scripts/install-deps.sh makes it)"
        exit 77
    fi
}
