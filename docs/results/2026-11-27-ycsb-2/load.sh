#!/usr/bin/env bash
# usage: load.sh <tag> [java args] -- full-setting load (500k, 128m, 8 threads) into a fresh dir
set -euo pipefail
cd /work/main
tag=$1; shift
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
REC=${REC:-500000}
rm -rf /tmp/prof/ldata
/usr/bin/time -f "CPU user %U sys %S wall %e" -o /tmp/prof/$tag.time java -Xmx2g "${flags[@]}" "$@" -cp $jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada -db io.basaltdb.ycsb.BasaltClient -p basalt.memory=${MEM:-128m} -p basalt.sync=periodic -p basalt.stats=true ${BPROPS:-} -p basalt.dir=/tmp/prof/ldata -p recordcount=$REC -threads ${THREADS:-8} > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], (Through|RunTime)|INSERT\], 99th" /tmp/prof/$tag.out; cat /tmp/prof/$tag.time
grep -E "BASALT\], (flushes|stalls|stallNanos|slowdowns|slowdownNanos|l0Stalls|l0StallNanos|groupCommits|batches|compactions|gcRuns)," /tmp/prof/$tag.out | tr '\n' ' '; echo
