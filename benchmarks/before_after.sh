#!/usr/bin/env bash
# Two checkouts, each with its own .venv, taking turns on benchmarks.offsets, .groups and
# .produce_consume (short runs, ROUNDS rounds, the side that goes first alternating), so
# that a change in the machine's load reaches both alike; then the medians per side:
#   benchmarks/before_after.sh BEFORE_DIR AFTER_DIR [ROUNDS=5] [OUT=before-after]
#   python benchmarks/before_after_table.py OUT [OUT2 ...]   # pools the rounds of each OUT
set -u
before=$1; after=$2; rounds=${3:-5}; out=$(realpath -m "${4:-before-after}")
mkdir -p "$out"
for round in $(seq "$rounds"); do
  order="base main"; [ $((round % 2)) = 0 ] && order="main base"
  for side in $order; do
    dir=$before; [ "$side" = main ] && dir=$after
    echo "$(date -u +%H:%M:%S) round $round $side load $(cut -d' ' -f1 /proc/loadavg)" >> "$out/log.txt"
    (cd "$dir" &&
     .venv/bin/python -m benchmarks.offsets --brokers kafkalite --seconds 2 --skip-reload \
       > "$out/offsets-$side-$round.txt" 2>&1
     .venv/bin/python -m benchmarks.groups --brokers kafkalite --sizes 1,10,50 \
       --heartbeats 60000 --latency-samples 500 > "$out/groups-$side-$round.txt" 2>&1
     .venv/bin/python -m benchmarks.produce_consume --brokers kafkalite \
       --counts 500000,100000 --latency-samples 500 > "$out/pc-$side-$round.txt" 2>&1)
  done
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1 /proc/loadavg)" >> "$out/log.txt"
