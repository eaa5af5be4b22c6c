#!/usr/bin/env bash
# usage: race2.sh OUT label jar engine basalt-options
set -euo pipefail
cd /work/main
java=java; source bin/jvm-flags.sh
out=$1; label=$2; jar=$3; engine=$4; opts=$5
echo "=== $label $(date +%T)" >> "$out"
java -Xmx1g "${flags[@]}" -cp "$jar" io.basaltdb.jmh.Race --engine "$engine" --dir /work/main/target/race-m \
  --keys 655360 --reads 50000 --memory-mb 32 --values random --update-rounds 5 --basalt-options "$opts" 2>&1 | sed "s/^/$label /" >> "$out"
rm -rf /work/main/target/race-m
