#!/usr/bin/env bash
set -euo pipefail
cd /work/main
w=$1 tag=$2; shift 2
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
props=(-db io.basaltdb.jmh.ycsb.RocksDbClient -p rocksdb.memory=32m -p rocksdb.sync=periodic)
if [ ! -d /tmp/prof/rloaded ]; then
  java -Xmx2g "${flags[@]}" -cp $jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada "${props[@]}" -p rocksdb.dir=/tmp/prof/rloaded -p recordcount=50000 -threads 4 > /tmp/prof/rload.out 2>&1
fi
rm -rf /tmp/prof/rdata; cp -r /tmp/prof/rloaded /tmp/prof/rdata
/usr/bin/time -f "CPU user %U sys %S wall %e" -a -o /tmp/prof/$tag.time java -Xmx2g "${flags[@]}" "$@" -cp $jar site.ycsb.Client -t -P engine-ycsb/workloads/$w "${props[@]}" -p rocksdb.dir=/tmp/prof/rdata -p recordcount=50000 -p operationcount=20000000 -p maxexecutiontime=${SECS:-8} -threads 4 > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], Through|AverageLatency|99thPerc" /tmp/prof/$tag.out
