#!/usr/bin/env bash
# What expiring writes cost the load: 655,360 keys (random values), plain puts against puts that expire
# in a day (never during the run), alternated, Basalt twice each, RocksDB (TtlDB for the expiring ones) once.
set -euo pipefail
cd /work/main
jar=engine-jmh/target/benchmarks.jar
out=target/race-expiry-cost.txt
mkdir -p target
: > $out
for cfg in "basalt 0" "basalt 86400" "basalt 0" "basalt 86400" "rocksdb 0" "rocksdb 86400"; do
  set -- $cfg
  echo "# $1 ttlSeconds=$2" | tee -a $out
  java -Xmx2g @$PWD/jvm.flags -cp $jar io.basaltdb.jmh.Race --engine $1 --dir target/race-cost-$1 \
    --keys 655360 --reads 0 --memory-mb 32 --values random --ttl-seconds $2 --watch-seconds 0 | tee -a $out
  rm -rf target/race-cost-$1
done
