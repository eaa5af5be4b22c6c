#!/usr/bin/env bash
# usage: run.sh <workload> <tag> [extra java args...]  -- loads once into /tmp/prof/loaded, copies, runs workload with JFR
set -euo pipefail
cd /work/main
w=$1 tag=$2; shift 2
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
props=(-db io.basaltdb.ycsb.BasaltClient -p basalt.memory=32m -p basalt.sync=periodic -p basalt.stats=true ${BPROPS:-})
if [ ! -d /tmp/prof/loaded ]; then
  java -Xmx2g "${flags[@]}" -cp $jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada "${props[@]}" -p basalt.dir=/tmp/prof/loaded -p recordcount=50000 -threads 4 > /tmp/prof/load.out 2>&1
fi
rm -rf /tmp/prof/data; cp -r /tmp/prof/loaded /tmp/prof/data
/usr/bin/time -f "CPU user %U sys %S wall %e" -a -o /tmp/prof/$tag.time java -Xmx2g "${flags[@]}" "$@" -cp $jar site.ycsb.Client -t -P engine-ycsb/workloads/$w "${props[@]}" -p basalt.dir=/tmp/prof/data -p recordcount=50000 -p operationcount=20000000 -p maxexecutiontime=${SECS:-8} -threads 4 > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], Through|AverageLatency|99thPerc" /tmp/prof/$tag.out
