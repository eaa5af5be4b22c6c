#!/usr/bin/env bash
# usage: e.sh <tag> [extra java args]  -- full-setting store (500k, 128m), loaded once, copied, runs workloade
set -euo pipefail
cd /work/main
tag=$1; shift
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
W=${W:-workloade}
props=(-db io.basaltdb.ycsb.BasaltClient -p basalt.memory=${MEM:-128m} -p basalt.sync=periodic -p basalt.stats=true ${BPROPS:-})
REC=${REC:-500000}
L=/tmp/prof/loaded-$REC
if [ ! -d $L ]; then
  java -Xmx2g "${flags[@]}" -cp $jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada "${props[@]}" -p basalt.dir=$L -p recordcount=$REC -threads 8 > /tmp/prof/load-$REC.out 2>&1
fi
rm -rf /tmp/prof/data; cp -r $L /tmp/prof/data
/usr/bin/time -f "CPU user %U sys %S wall %e" -o /tmp/prof/$tag.time java -Xmx2g "${flags[@]}" "$@" -cp $jar site.ycsb.Client -t -P engine-ycsb/workloads/$W "${props[@]}" -p basalt.dir=/tmp/prof/data -p recordcount=$REC -p operationcount=20000000 -p maxexecutiontime=${SECS:-20} -threads ${THREADS:-8} > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], Through|SCAN\], Average|SCAN\], 99th" /tmp/prof/$tag.out; cat /tmp/prof/$tag.time
