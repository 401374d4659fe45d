#!/bin/sh
# Builds each layering probe (see CMakeLists.txt) and checks the outcome: a probe marked
# "not" must fail, and fail on its include ("HEADER: No such file"); the others must build.
# usage: check_layering.sh CMAKE BUILD_DIR TARGET:EXPECT:HEADER...
set -u
cmake=$1 build=$2
shift 2
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
bad=0
for probe in "$@"; do
    target=${probe%%:*} rest=${probe#*:}
    expect=${rest%%:*} header=${rest#*:}
    "$cmake" --build "$build" --target "$target" >"$tmp" 2>&1
    rc=$?
    if [ "$expect" = not ]; then
        if [ $rc -eq 0 ]; then
            echo "FAIL: $target built: the include of $header crosses the folder order"
            bad=1
        elif ! grep -q "$header: No such file" "$tmp"; then
            echo "FAIL: $target failed for another reason than $header:"
            cat "$tmp"
            bad=1
        else
            echo "ok: $target cannot include $header"
        fi
    elif [ $rc -ne 0 ]; then
        echo "FAIL: $target did not build:"
        cat "$tmp"
        bad=1
    else
        echo "ok: $target includes $header"
    fi
done
exit $bad
