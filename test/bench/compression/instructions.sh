#!/usr/bin/env bash
# instructions.sh - callgrind instruction counts of gzip compression of the
# deflate package's text corpus (300 KB, in sync-flushed 4 KiB pieces as the
# compressor filter writes): Outrigger's deflate encoder and klauspost's (the
# package's BenchmarkGzip) beside C zlib (python3's zlib module, the library
# nginx and Envoy use), per compression of the corpus: the difference between
# 12 and 2 iterations, divided by 10, so start-up costs cancel out.
#
# Usage: bash test/bench/compression/instructions.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$(python3 -c 'import sys; print(sys.executable)')  # not a shim: valgrind follows no children
BIN=$(mktemp /tmp/deflate-bench.XXXXXX)
trap 'rm -f "$BIN"' EXIT
cd "$ROOT/pkg/proxy/compression/deflate"
go test -c -o "$BIN" .
ir() {
  GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 |
    grep -o "Collected : [0-9]*" | grep -o "[0-9]*$"
}
for b in zlib-L6-W15-M8 zlib-L6-W12-M5 zlib-L1-W15-M8 klauspost-L6 klauspost-L1; do
  a=$(ir "$BIN" -test.run XXX -test.bench "BenchmarkGzip/$b\$" -test.benchtime 2x)
  c=$(ir "$BIN" -test.run XXX -test.bench "BenchmarkGzip/$b\$" -test.benchtime 12x)
  echo "go $b $(( (c - a) / 10 ))"
done
for p in "6 15 8" "6 12 5" "1 15 8"; do
  set -- $p
  s="import sys, zlib
d = open('testdata/corpus.txt', 'rb').read()
for _ in range(int(sys.argv[1])):
    c = zlib.compressobj($1, zlib.DEFLATED, 16 + $2, $3)
    for i in range(0, len(d), 4096):
        c.compress(d[i:i + 4096]); c.flush(zlib.Z_SYNC_FLUSH)
    c.flush()"
  a=$(ir "$PY" -c "$s" 2); c=$(ir "$PY" -c "$s" 12)
  echo "C-zlib L$1-W$2-M$3 $(( (c - a) / 10 ))"
done
