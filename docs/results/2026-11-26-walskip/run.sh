#!/usr/bin/env bash
set -euo pipefail
cd /work/main
jar=engine-jmh/target/benchmarks.jar
out=target/race-walskip${SUFFIX:-}.txt
: > $out
for cfg in "basalt walSkipBytes=0" "basalt walSkipBytes=4194304" "rocksdb -"; do
  set -- $cfg
  engine=$1 opts=$2
  extra=""
  [ "$opts" != "-" ] && extra="--basalt-options $opts"
  echo "# $engine $opts" | tee -a $out
  java -Xmx2g @$PWD/jvm.flags -cp $jar io.basaltdb.jmh.Race --engine $engine --dir target/race-ws-$engine \
    --keys 655360 --reads 0 --memory-mb 32 --batch 3942 ${VALUES:-} $extra | tee -a $out
  rm -rf target/race-ws-$engine
done
