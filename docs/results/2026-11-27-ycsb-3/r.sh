#!/usr/bin/env bash
# usage: r.sh <tag> [-p prop=value ...] -- RocksDB JNI on a store loaded once and copied (as e.sh for Basalt):
# REC records (default 500000), MEM budget (128m), THREADS (8), SECS (20), W workload (workloade)
set -euo pipefail
cd /work/main
tag=$1; shift
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
W=${W:-workloade}
REC=${REC:-500000}
props=(-db io.basaltdb.jmh.ycsb.RocksDbClient -p rocksdb.memory=${MEM:-128m} -p rocksdb.sync=periodic)
L=/tmp/prof/rloaded-$REC
if [ ! -d $L ]; then
  java -Xmx2g "${flags[@]}" -cp $jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada "${props[@]}" -p rocksdb.dir=$L -p recordcount=$REC -threads 8 > /tmp/prof/rload-$REC.out 2>&1
fi
rm -rf /tmp/prof/rdata; cp -r $L /tmp/prof/rdata
/usr/bin/time -f "CPU user %U sys %S wall %e" -o /tmp/prof/$tag.time java -Xmx2g "${flags[@]}" ${JOPTS:-} -cp $jar site.ycsb.Client -t -P engine-ycsb/workloads/$W "${props[@]}" "$@" -p rocksdb.dir=/tmp/prof/rdata -p recordcount=$REC -p operationcount=20000000 -p maxexecutiontime=${SECS:-20} -threads ${THREADS:-8} > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], Through|SCAN\], 99th|READ\], 99th" /tmp/prof/$tag.out
cat /tmp/prof/$tag.time
