#!/usr/bin/env bash
# usage: load.sh <tag> <records> <memory> <threads> [java args]
set -euo pipefail
cd /work/main
tag=$1 rec=$2 mem=$3 thr=$4; shift 4
java=java; source bin/jvm-flags.sh
rm -rf /tmp/prof/ldata
java -Xmx2g "${flags[@]}" "$@" -cp /tmp/prof/exp.jar site.ycsb.Client -load -P engine-ycsb/workloads/workloada -db io.basaltdb.ycsb.BasaltClient -p basalt.dir=/tmp/prof/ldata -p basalt.memory=$mem -p basalt.sync=periodic -p basalt.stats=true -p recordcount=$rec -threads $thr > /tmp/prof/$tag.out 2>&1
echo "$(grep -E 'OVERALL\], Throughput' /tmp/prof/$tag.out | awk -F', ' '{print $3}') $(grep -E 'BASALT\], (slowdowns|slowdownNanos|stalls|stallNanos),' /tmp/prof/$tag.out | awk -F', ' '{printf "%s=%s ", $2, $3}') $(grep -E 'INSERT\], 99th' /tmp/prof/$tag.out)"
