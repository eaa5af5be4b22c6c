#!/usr/bin/env bash
# This session's code against its start (544f8c5), Basalt alone, alternated: the update race's short
# setting with 2 rounds and 50,000 gets.
set -euo pipefail
cd /work/main
out=target/race-regress.txt
mkdir -p target
: > $out
for run in a b; do
  for build in base new; do
    if [ $build = base ]; then jar=/tmp/base/engine-jmh/target/benchmarks.jar; flags=(@/tmp/base/jvm.flags);
    else jar=engine-jmh/target/benchmarks.jar; flags=(@$PWD/jvm.flags); fi
    echo "# $build $run" | tee -a $out
    java -Xmx1g "${flags[@]}" -cp $jar io.basaltdb.jmh.Race --engine basalt --dir target/race-regress \
      --keys 655360 --reads 50000 --memory-mb 32 --values random --update-rounds 2 \
      --basalt-options fragmentationThreshold=0.3 2>&1 | grep -E "^(race|phase)" | tee -a $out
    rm -rf target/race-regress
  done
done
