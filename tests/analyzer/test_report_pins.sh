#!/bin/sh
# test_report_pins: `trainprof report --format json` (native and --compat hta) of the committed
# sample traces (recorded by the trainer) and of several peer trace sets must hash to the
# SHA-256 in data/report_pins.txt, which the code before the speed work of issue 13 produced
# (main at 52e4ff7). Optimizations of the model and the analyses (radix sorts, percentiles by
# selection, packed columns) must not change a byte. A change of the report on purpose (a new
# section) updates the pins: `test_report_pins.sh TRAINPROF SAMPLES PEERS PINS --update`.
# Peer sets are checked when ../shared/peer_traces is present, else only the samples.
set -u
TP=$1
SAMPLES=$2
PEERS=$3/traces
PINS=$4
UPDATE=${5:-}
fail=0
checked=0
tmp=$(mktemp -d /tmp/tp-pins-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ "$UPDATE" = --update ] && : >"$tmp/new"
while read -r kind name compat want; do
    case "$kind" in '#'* | '') continue ;; esac
    dir=$SAMPLES
    [ "$kind" = peer ] && dir=$PEERS
    [ -e "$dir/$name" ] || continue
    set -- report "$name" --format json
    [ "$compat" = hta ] && set -- "$@" --compat hta
    # The samples name the trainer binary they were recorded from by its absolute path: its
    # frames read "build-id differs" where a checkout at that path has built one, "module file
    # not found" elsewhere. Unsymbolized, the report is the same in every checkout.
    [ "$kind" = sample ] && set -- "$@" --no-symbols
    # relative paths: the report names its input as given
    got=$(cd "$dir" && "$TP" "$@" 2>/dev/null | sha256sum | cut -d' ' -f1)
    checked=$((checked + 1))
    if [ "$UPDATE" = --update ]; then
        echo "$kind $name $compat $got" >>"$tmp/new"
    elif [ "$got" != "$want" ]; then
        echo "FAIL: report of $kind $name ($compat) changed: sha256 $got, pinned $want" \
            "(compare: cd $dir && $TP $*)"
        fail=1
    fi
done <"$PINS"
if [ "$UPDATE" = --update ]; then
    { grep '^#' "$PINS"; cat "$tmp/new"; } >"$tmp/all" && cp "$tmp/all" "$PINS"
fi
echo "$checked reports checked"
[ "$checked" -gt 0 ] || { echo "FAIL: no input found"; exit 1; }
exit $fail
