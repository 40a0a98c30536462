#!/usr/bin/env bash
# accuracy.sh reproduces the ToN LDA paper's Sec. IV experiments (Figs. 4, 5,
# 6) at the paper's parameters and checks the paper's claims; docs/accuracy.md
# quotes its output. Outputs go to $1 (default out/accuracy).
#
#  1. tables.txt (+ sim.csv, sim.jsonl, plots/*.png): the paper's protocol —
#     N = 5 000 000 packets per interval, 1024 counters, 10 runs per point,
#     loss 1e-4 … 0.2. Ten runs estimate an average error only to ±25 %, so
#     claims near their limits can pass or fail by chance here.
#  2. precision.txt (+ precision-*.csv): the claims' deciding points again
#     with 100 runs (±8 %): Fig. 4 at 0.05 % and 5–20 % loss, Fig. 6 at
#     loss ≤ 1 %.
#  3. alpha.txt (+ alpha-*.csv): the choice of α in p = α·m/(L+1) — the
#     single tuned bank for Weibull β = 0.6 and 0.8 at 10 % and 20 % loss,
#     α ∈ {0.5, 0.6, 0.7, 0.8, 1.0}, seeds 2 and 3, 100 runs each.
#  4. designs.txt (+ designs-*.csv): Fig. 6's two-bank LDA against 144 Hz
#     probes at 0.1, 0.5 and 1 % bursty loss for the paper's design rates
#     (0.005, 0.1) and alternatives, seeds 2 and 3, 100 runs each; ends with
#     the probe/LDA error ratio per point.
#
# Then the analyze property sweep, the appliance's and the live sample's
# property sweeps on simulated time and the LDS under loss through
# `ldafwd analyze` (analyze-property.txt, sim-property.txt,
# sample-property.txt, lds-loss.txt).
#
# Prints which claims fail in the 100-run precision sweeps (step 2); with
# STRICT=1 it then exits 1. (Two of the paper's claims sit at their limits
# for Weibull β = 0.6 — docs/accuracy.md explains why — so the default is a
# report, not a gate.) Took 26 minutes on 2 shared, busy cores; SKIP_STUDY=1
# skips steps 3 and 4 (≈ 11 minutes there).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/accuracy}
BIN=${BIN:-bin/ldafwd}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/ldafwd
mkdir -p "$OUT"
rm -f "$OUT/sim.jsonl" "$OUT/precision.txt" "$OUT/alpha.txt" "$OUT/designs.txt"
SIM=("$BIN" sim --packets 5000000 --runs 100 --counters 1024 --workers "${WORKERS:-2}")
set -x
"$BIN" sim --experiment all --packets 5000000 --runs 10 --counters 1024 --seed 1 \
	--csv "$OUT/sim.csv" --plot "$OUT/plots" --report "$OUT/sim.jsonl" | tee "$OUT/tables.txt"
"${SIM[@]}" --experiment fig4 --seed 2 \
	--losses 0.0005,0.05,0.1,0.2 --csv "$OUT/precision-fig4.csv" | tee "$OUT/precision.txt"
"${SIM[@]}" --experiment fig6 --seed 2 \
	--losses 0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01 --csv "$OUT/precision-fig6.csv" | tee -a "$OUT/precision.txt"
set +x
fails=$(grep '^FAIL' "$OUT/precision.txt" | awk '{print $2}' | sort -u | tr '\n' ' ' || true)

if [ "${SKIP_STUDY:-0}" != 1 ]; then
	# 3. α: only two banks are possible at these points (2^-10/2^-11 at
	# 20 %, 2^-9/2^-10 at 10 % loss), but every α is run as asked.
	for seed in 2 3; do
		for a in 0.5 0.6 0.7 0.8 1.0; do
			"${SIM[@]}" --experiment fig4 --series weibull --seed $seed --alpha $a --losses 0.1,0.2 \
				--csv "$OUT/alpha-s$seed-a$a.csv" >"$OUT/alpha-s$seed-a$a.txt"
			grep 'LDA 1 bank tuned  ' "$OUT/alpha-s$seed-a$a.txt" | sed "s/^/seed $seed  α=$a /" | tee -a "$OUT/alpha.txt"
		done
	done
	# 4. Fig. 6 design rates (0.005,0.1 at α = 1 is the paper's LDA tuned
	# for the mean's effective sample size).
	for seed in 2 3; do
		for d in "0.005,0.1 0.5" "0.005,0.05 0.5" "0.001,0.05 0.5" "0.005,0.1 1"; do
			set -- $d
			"${SIM[@]}" --experiment fig6 --seed $seed --alpha "$2" --design-losses "$1" --probe-rates 144 \
				--losses 0.001,0.005,0.01 --csv "$OUT/designs-d$1-a$2-s$seed.csv" >"$OUT/designs-d$1-a$2-s$seed.txt"
			# ratio = probe error / LDA error, its standard error by the delta method.
			awk -v seed=$seed -v a="$2" '
				$1 == "weibull" && / LDA 2 banks / { cfg = $(NF-1) " " $NF; lab = $3 " " $4 " " $5 " " $6 " " $7; l[$8] = $11; ls[$8] = $12; s[$8] = $10 }
				$1 == "weibull" && / probes 144 Hz / { r = $9 / l[$6]; se = r * sqrt(($10/$9)^2 + (ls[$6]/l[$6])^2)
					printf "seed %s  α=%-3s  %-26s %-20s loss %-6s  LDA %5.2f ± %4.2f %% (%6d samples)  probes %5.2f ± %4.2f %%  ratio %5.2f ± %4.2f\n",
						seed, a, lab, cfg, $6, l[$6], ls[$6], s[$6], $9, $10, r, se }' \
				"$OUT/designs-d$1-a$2-s$seed.txt" | tee -a "$OUT/designs.txt"
		done
	done
fi

# The analyze property over many generated capture pairs (loss, duplication,
# reordering, link-local frames, identical frames, remarking, snap lengths,
# partial overlap): every valid line holds the generator's truth.
echo "accuracy: analyze property sweep (200 seeds)" >&2
ANALYZE_PROPERTY_SEEDS=200 go test -count=1 -run TestPropertyValidLinesHoldTheTruth -timeout 30m ./analyze/ | tee "$OUT/analyze-property.txt" ||
	fails="$fails analyze-property "

# The appliance over many simulated demos (loss, duplicates, reordering,
# remarking, link-local frames, lost End markers and fragments, restarts,
# clock steps, calm starts): every line that claims its loss or its delay
# holds the stage's exact truth (docs/architecture.md, "Simulated time").
# make test runs the first 1000 seeds.
echo "accuracy: appliance property sweep (6000 seeds on simulated time)" >&2
SIM_PROPERTY_SEEDS=6000 go test -count=1 -v -run 'TestSimProperty$' -timeout 60m ./appliance/ |
	grep -v -e '^=== ' -e '--- PASS: TestSimProperty/seeds/' | tee "$OUT/sim-property.txt" || fails="$fails sim-property "

# The live trajectory sample over many simulated demos (Weibull, Pareto and
# bimodal delays, 0-20 % loss, reordering, duplicates): every bounded
# quantile of a valid line holds the stage's exact truth, within the misses
# 98 % confidence allows (docs/sample.md, "Accuracy live").
echo "accuracy: live sample property sweep (400 seeds)" >&2
SAMPLE_PROPERTY_SEEDS=400 go test -count=1 -v -run 'TestSampleProperty$' -timeout 30m ./appliance/ |
	grep -v -e '^=== ' -e '--- PASS: TestSampleProperty/seeds/' | tee "$OUT/sample-property.txt" || fails="$fails sample-property "

# The LDS per flow under loss through `ldafwd analyze --synopsis lds
# --interval 0` with default flags (docs/lds.md, "Accuracy under loss"):
# one capture pair of 1.2 M packets in 1.2 s, 40 000 flows of Pareto sizes
# each with its own mean delay, routed frames, 0.1 % uniform loss; the
# test fails unless ≥ 90 % of flows ≥ 500 packets are valid with median
# errors ≤ 2 % (≥ 500) and ≤ 0.5 % (≥ 5000). About a minute.
echo "accuracy: LDS per flow under loss (analyze, default flags, 1.2 M packets)" >&2
LDS_LOSS_FLOWS=40000 LDS_LOSS_SEEDS=1 LDS_LOSS_BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" go test -count=1 -v -run TestLDSLossDefaults -timeout 20m ./analyze/ |
	grep -v '^analyze: ' | tee "$OUT/lds-loss.txt" || fails="$fails lds-loss "

if [ -n "$fails" ]; then
	echo "accuracy: claims failing in step 2 (seed 2, 100 runs per point): $fails(docs/accuracy.md weighs them with steps 3-4's two seeds); outputs in $OUT" >&2
	[ "${STRICT:-0}" = 1 ] && exit 1
	exit 0
fi
echo "accuracy: every paper claim holds with 100 runs per point; outputs in $OUT"
