#!/bin/bash
cd /work/main
J="java -Xms2g -Xmx2g -cp engine-jmh/target/benchmarks.jar io.basaltdb.jmh.KeyIndexFormats --entries 1000000 --memory-mib 64 --dir /tmp/kif/stores"
for ks in 16 64 256 1024; do
  $J --pattern random --key-size $ks --gets 200000 --warmup 100000 --scans 10000 > /tmp/kif/random-$ks.txt 2>&1
  rm -rf /tmp/kif/stores/*random${ks}-*
done
$J --pattern two-level --prefix-bytes 100 --gets 100000 --warmup 50000 --scans 5000 > /tmp/kif/twolevel-100.txt 2>&1
rm -rf /tmp/kif/stores/*twolevel100-*
$J --pattern two-level --prefix-bytes 500 --gets 20000 --warmup 20000 --scans 2000 > /tmp/kif/twolevel-500.txt 2>&1
rm -rf /tmp/kif/stores/*twolevel500-*
$J --pattern worst --entries 1048576 --gets 50000 --warmup 50000 --scans 2000 > /tmp/kif/worst.txt 2>&1
java -Dbasalt.test.noTrieSkewRule=true -Xms2g -Xmx2g -cp engine-jmh/target/benchmarks.jar io.basaltdb.jmh.KeyIndexFormats --entries 1048576 --memory-mib 64 --dir /tmp/kif/norule --pattern worst --gets 50000 --warmup 50000 --scans 2000 --engines basalt-trie > /tmp/kif/worst-norule.txt 2>&1
echo finished > /tmp/kif/done
