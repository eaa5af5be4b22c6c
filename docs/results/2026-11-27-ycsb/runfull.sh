#!/usr/bin/env bash
set -euo pipefail
cd /work/main
w=$1 tag=$2; shift 2
java=java; source bin/jvm-flags.sh
jar=${JAR:-engine-jmh/target/benchmarks.jar}
java -Xmx2g "${flags[@]}" "$@" -cp $jar site.ycsb.Client -t -P engine-ycsb/workloads/$w -db io.basaltdb.ycsb.BasaltClient -p basalt.memory=128m -p basalt.sync=periodic -p basalt.stats=true -p basalt.dir=/tmp/runs/F-full-new/basalt-data -p recordcount=500000 -p operationcount=20000000 -p maxexecutiontime=${SECS:-20} -threads 8 > /tmp/prof/$tag.out 2>&1
grep -E "OVERALL\], Through" /tmp/prof/$tag.out
