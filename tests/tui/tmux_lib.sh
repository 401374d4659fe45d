# tmux_lib.sh: what the tmux-driven TUI tests share; sourced, with `sock` (the private tmux
# server's name) set first. Skips (exit 77) without tmux. Defines: tmp (a folder removed at
# exit, with the server), T (tmux on that server), fail (prints the last screen, exit 1),
# wait_in SESSION TEXT... (up to 60 s until the screen shows every TEXT, fixed strings) and
# lacks_in SESSION TEXT (up to 60 s until it no longer shows TEXT) and holds_in SESSION WHAT
# CMD... (up to 60 s until CMD, run on a fresh capture in $tmp/screen, succeeds; else fails
# with WHAT). Screens are polled, so no test depends on how fast the machine is, only on a
# bound no loaded machine reaches; a capture can hold part of a frame (curses may paint one
# in several writes), so a check on what else a screen shows polls too.
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
T() { tmux -L "$sock" -f /dev/null "$@"; }
cleanup() { T kill-server >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    cat "$tmp/screen" 2>/dev/null
    exit 1
}

wait_in() {
    _s=$1
    shift
    _i=0
    while [ $_i -lt 600 ]; do
        T capture-pane -p -t "$_s" >"$tmp/screen" 2>/dev/null
        _ok=1
        for _w in "$@"; do
            grep -qF -- "$_w" "$tmp/screen" || _ok=0
        done
        [ $_ok -eq 1 ] && return 0
        sleep 0.1
        _i=$((_i + 1))
    done
    fail "screen never showed: $*"
}

lacks_in() {
    _i=0
    while [ $_i -lt 600 ]; do
        T capture-pane -p -t "$1" >"$tmp/screen" 2>/dev/null
        grep -qF -- "$2" "$tmp/screen" || return 0
        sleep 0.1
        _i=$((_i + 1))
    done
    fail "screen still shows: $2"
}

holds_in() {
    _s=$1 _what=$2
    shift 2
    _i=0
    while [ $_i -lt 600 ]; do
        T capture-pane -p -t "$_s" >"$tmp/screen" 2>/dev/null
        "$@" && return 0
        sleep 0.1
        _i=$((_i + 1))
    done
    fail "$_what"
}
