#!/usr/bin/env bash
# classify-instr.sh counts instructions per packet of Parse + Classify and
# of Classify alone with 1 and with N site-like MEC rules (default 10 64
# 65 200 1000), under valgrind's callgrind (TestInstrClassifyScale in
# classifier/scale_bench_test.go), and prints each against 1 rule. The
# counts do not depend on the machine's load; each is
# (Ir at 22 passes − Ir at 2 passes) / (20 × 4096 packets).
set -euo pipefail
counts=${*:-10 64 65 200 1000}
TAGS=$(pkg-config --exists libdpdk 2>/dev/null && echo "-tags dpdk" || true)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test $TAGS -c -pgo=off -o "$dir/classifier.test" ./classifier/

# ir RULES PASSES LOOP: total Ir of the harness running LOOP (parse or
# classify) for PASSES passes.
ir() {
  local out="$dir/cg.$1.$2.$3"
  (cd "$dir" && GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off LDAF_INSTR_CLASSIFY="$1 $2 $3" \
    valgrind --tool=callgrind --callgrind-out-file="$out" \
    ./classifier.test -test.run '^TestInstrClassifyScale$' >/dev/null 2>&1)
  awk '/^summary:/ {print $2}' "$out"
}

perpkt() { echo "scale=1; ($(ir "$1" 202 "$2") - $(ir "$1" 2 "$2")) / 819200" | bc; }

p1=$(perpkt 1 parse)
c1=$(perpkt 1 classify)
printf '%6s %14s %8s %10s %8s\n' rules parse+classify x-1rule classify x-1rule
printf '%6s %14s %8s %10s %8s\n' 1 "$p1" 1.00 "$c1" 1.00
for n in $counts; do
  p=$(perpkt "$n" parse)
  c=$(perpkt "$n" classify)
  printf '%6s %14s %8s %10s %8s\n' "$n" "$p" "$(echo "scale=2; $p / $p1" | bc)" "$c" "$(echo "scale=2; $c / $c1" | bc)"
done
