#!/usr/bin/env bash
# accuracy.sh reproduces the ToN LDA paper's Sec. IV experiments (Figs. 4, 5,
# 6) at the paper's parameters and checks the paper's claims; docs/accuracy.md
# quotes its output. Outputs go to $1 (default out/accuracy).
#
#  1. tables.txt (+ sim.csv, sim.jsonl, plots/*.png): the paper's protocol —
#     N = 5 000 000 packets per interval, 1024 counters, 10 runs per point,
#     loss 1e-4 … 0.2. Ten runs estimate an average error only to ±25 %, so
#     claims near their limits can pass or fail by chance here.
#  2. precision.txt (+ precision.csv): the claims' deciding points again with
#     100 runs (±8 %): Fig. 4 at 0.05 % and 5–20 % loss, Fig. 6 at loss ≤ 1 %.
#
# Prints which claims fail in the 100-run precision sweeps; with STRICT=1 it
# then exits 1. (Two of the paper's claims sit at their limits for Weibull
# β = 0.6 — docs/accuracy.md explains why — so the default is a report, not
# a gate.) Takes 5–20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/accuracy}
BIN=${BIN:-bin/ldafwd}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/ldafwd
mkdir -p "$OUT"
rm -f "$OUT/sim.jsonl" "$OUT/precision.txt"
set -x
"$BIN" sim --experiment all --packets 5000000 --runs 10 --counters 1024 --seed 1 \
	--csv "$OUT/sim.csv" --plot "$OUT/plots" --report "$OUT/sim.jsonl" | tee "$OUT/tables.txt"
"$BIN" sim --experiment fig4 --packets 5000000 --runs 100 --counters 1024 --seed 2 \
	--losses 0.0005,0.05,0.1,0.2 --csv "$OUT/precision-fig4.csv" | tee "$OUT/precision.txt"
"$BIN" sim --experiment fig6 --packets 5000000 --runs 100 --counters 1024 --seed 2 \
	--losses 0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01 --csv "$OUT/precision-fig6.csv" | tee -a "$OUT/precision.txt"
set +x
fails=$(grep '^FAIL' "$OUT/precision.txt" | awk '{print $2}' | sort -u | tr '\n' ' ' || true)
if [ -n "$fails" ]; then
	echo "accuracy: claims failing with 100 runs per point: $fails(see docs/accuracy.md); outputs in $OUT" >&2
	[ "${STRICT:-0}" = 1 ] && exit 1
	exit 0
fi
echo "accuracy: every paper claim holds with 100 runs per point; outputs in $OUT"
