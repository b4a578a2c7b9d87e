#!/bin/sh
# Regenerates instances/philly/ from the Philly trace (run from the repository root).
# Each instance: one virtual cluster, jobs submitted in one 6-hour window (30-60 jobs,
# chosen for their share of multi-GPU jobs), mapped onto 16 servers x 8 GPUs with
# seeded model draws; the time scale is set per instance so that the longest job
# takes 1200 slots (see docs/traces.md and README.md here).
set -e
TRACE=${1:-../shared/data/philly/philly.csv}
convert() {  # name vc start end
    sjfbco_out=$(mktemp -d)
    python -m sjfbco convert philly "$TRACE" --cluster 16x8 --vc "$2" --start "$3" --end "$4" \
        --seed 0 --name "$1" -o "$sjfbco_out"
    mv "$sjfbco_out/$1.json" instances/philly/
    rm "$sjfbco_out/conversion.json"  # its drop report is printed above (nothing is dropped)
    rmdir "$sjfbco_out"
}
convert philly-6214e9-1107 6214e9 2017-11-07T18:00 2017-11-08T00:00
convert philly-6214e9-1005 6214e9 2017-10-05T12:00 2017-10-05T18:00
convert philly-11cb48-1109 11cb48 2017-11-09T18:00 2017-11-10T00:00
convert philly-6c71a0-1111 6c71a0 2017-11-11T06:00 2017-11-11T12:00
convert philly-6c71a0-1121 6c71a0 2017-11-21T00:00 2017-11-21T06:00
