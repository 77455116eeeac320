#!/bin/bash
# For each workload: the archive written by a first run of it, then runs with and without it, alternating.
cd /work/main
OUT=bench/results/class-data-sharing
for W in W1 W2 W3 W4; do
  rm -rf ~/.cache/kspark/cds
  for run in writes-archive on off on off; do
    conf=()
    [ $run = off ] && conf=(--kspark-conf spark.kspark.classDataSharing=false)
    n=$(ls $OUT | grep -c "^$W-$run" )
    echo "== $W $run $(date -u +%H:%M:%S)"
    timeout 900 .venv/bin/python -m bench.run --workload $W --records 1000000 --systems kspark --kspark-rev worktree "${conf[@]}" --json $OUT/$W-$run-$n.json 2>&1 | grep -v "^%" | grep "| $W |"
    ls ~/.cache/kspark/cds 2>/dev/null | tr '\n' ' '; echo
  done
done
