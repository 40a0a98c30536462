#!/usr/bin/env bash
# same.sh: the streaming and the whole-capture analysis give the same
# report, byte for byte, on the audit's captures. For each situation of
# run.sh, gen.py writes a pair; `ldafwd analyze --synopsis all --truth`
# runs at three interval lengths streaming (the default) and with
# --whole-capture; stdout and stderr must be identical (a refusal too).
#
#   scripts/audit/same.sh [OUTDIR]     # N=30000 packets, SEEDS="1", SCEN=...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${LDAFWD:-$here/../../bin/ldafwd}
out=${1:-out/audit-same}
N=${N:-30000}
# The situations of run.sh, by the same names.
eval "$(sed -n '/^declare -A SC=(/,/^)/p' "$here/run.sh")"
fail=0
for sc in ${SCEN:-${!SC[@]}}; do
  for seed in ${SEEDS:-1}; do
    d=$out/$sc-$seed
    rm -rf "$d" && mkdir -p "$d"
    python3 "$here/gen.py" --n "$N" --seed "$seed" ${SC[$sc]} --out "$d" >/dev/null || exit 2
    for iv in 1s 100ms 0; do
      extra=()
      [ "$sc" = remark ] && extra=(--mec c2=dscp:cs2)
      for mode in stream whole; do
        flag=()
        [ $mode = whole ] && flag=(--whole-capture)
        "$bin" analyze --sender "$d/S.pcap" --receiver "$d/R.pcap" --synopsis all --truth --interval "$iv" "${extra[@]}" \
          "${flag[@]}" --format json --quiet >"$d/$mode-$iv.jsonl" 2>"$d/$mode-$iv.err"
        echo "exit $?" >>"$d/$mode-$iv.err"
      done
      if cmp -s "$d/stream-$iv.jsonl" "$d/whole-$iv.jsonl" && cmp -s "$d/stream-$iv.err" "$d/whole-$iv.err"; then
        echo "== $sc seed $seed --interval $iv: same ($(wc -l <"$d/stream-$iv.jsonl") lines, $(tail -1 "$d/stream-$iv.err"))"
      else
        echo "== $sc seed $seed --interval $iv: DIFFERENT"; fail=1
      fi
    done
  done
done
[ $fail -eq 0 ] && echo "same: streaming and whole-capture reports identical" || echo "same: FAILED"
exit $fail
