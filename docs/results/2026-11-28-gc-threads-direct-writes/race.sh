#!/usr/bin/env bash
# usage: race.sh OUT label engine basalt-options...
set -euo pipefail
cd /work/main
java=java; source bin/jvm-flags.sh
out=$1; label=$2; engine=$3; opts=$4
echo "=== $label $(date +%T)" >> "$out"
java -Xmx1g "${flags[@]}" -cp engine-jmh/target/benchmarks.jar io.basaltdb.jmh.Race --engine "$engine" --dir /work/main/target/race-m \
  --keys 655360 --reads 50000 --memory-mb 32 --values random --update-rounds 5 --basalt-options "$opts" 2>&1 | sed "s/^/$label /" >> "$out"
rm -rf /work/main/target/race-m
