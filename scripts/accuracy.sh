#!/usr/bin/env bash
# accuracy.sh runs the ToN LDA paper's Sec. IV sweeps (Figs. 4, 5, 6) at the
# paper's parameters — N = 5 000 000 packets per interval, 1024 counters,
# 10 runs per point, loss 1e-4 … 0.2 — and checks the paper's claims
# (docs/accuracy.md). Outputs go to $1 (default out/accuracy): tables.txt
# (what docs/accuracy.md quotes), sim.csv, sim.jsonl and plots/*.png.
# Exits 1 if a claim fails. Takes a few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/accuracy}
BIN=${BIN:-bin/ldafwd}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/ldafwd
mkdir -p "$OUT"
rm -f "$OUT/sim.jsonl"
set -x
"$BIN" sim --experiment all --packets 5000000 --runs 10 --counters 1024 --seed 1 \
	--csv "$OUT/sim.csv" --plot "$OUT/plots" --report "$OUT/sim.jsonl" | tee "$OUT/tables.txt"
set +x
if grep -q '^FAIL' "$OUT/tables.txt"; then
	echo "accuracy: a paper claim failed (FAIL lines above; see docs/accuracy.md)" >&2
	exit 1
fi
echo "accuracy: all paper claims hold; outputs in $OUT"
