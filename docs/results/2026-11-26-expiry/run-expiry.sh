#!/usr/bin/env bash
# The expiry race: 655,360 keys (665 MiB, random values), every write expiring 30 s after it is made,
# then 120 s without writes; Basalt at its defaults, Basalt without retained checkpoints, RocksDB TtlDB.
set -euo pipefail
cd /work/main
jar=engine-jmh/target/benchmarks.jar
out=target/race-expiry.txt
mkdir -p target
: > $out
for cfg in "basalt -1" "basalt 0" "rocksdb -1"; do
  set -- $cfg
  echo "# $1 checkpointRetentionMs=$2" | tee -a $out
  java -Xmx2g @$PWD/jvm.flags -cp $jar io.basaltdb.jmh.Race --engine $1 --dir target/race-exp-$1 \
    --keys 655360 --reads 0 --memory-mb 32 --values random --ttl-seconds 30 --watch-seconds 120 \
    --checkpoint-retention-ms $2 | tee -a $out
  rm -rf target/race-exp-$1
done
