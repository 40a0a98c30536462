#!/usr/bin/env bash
# run.sh: the independent accuracy audit. gen.py writes captures of a
# segment with every impairment an honest report must survive, using no
# ldafwd code; `ldafwd analyze` at its default flags (plus --synopsis all)
# reports them at three interval lengths; check.py holds every valid line
# to the per-packet truth. Exits 1 if any valid line misses its truth, or
# if the captures that share no traffic are not refused, or if a scenario
# with tunnels shares more identities (analyze's "identities seen more than
# once") than the same traffic written with --plain, no tunnel.
#
#   scripts/audit/run.sh [OUTDIR]     # N=150000 packets, SEEDS="1 2", SCEN=...
#
# Took about 25 minutes for every scenario and two seeds on 2 cores (most
# of it gen.py); `make audit` runs it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${LDAFWD:-$here/../../bin/ldafwd}
out=${1:-out/audit}
N=${N:-150000}
declare -A SC=(
  [nolosspath]="--delay const:1000000"
  [nolossjit]="--delay uniform:500000"
  [loss1]="--loss 0.01 --delay weibull:30000"
  [bursty]="--loss 0.01 --burst 50 --delay weibull:30000"
  [reorder]="--reorder 0.01"
  [clock]="--clock -250000 --delay weibull:35000 --loss 0.002"
  [dup]="--dup 0.001 --loss 0.001 --delay pareto:100000"
  [linklocal]="--linklocal 200 --rxonly 50"
  [identical]="--identical 0.05 --loss 0.002"
  [remark]="--cs2 0.3 --remark 0.05"
  [snap]="--snap 96 --vlanpush --ipv6 0.5 --routed --loss 0.003"
  [disjoint]="--disjoint"
  [tunnels]="--gre 0.3 --vxlan 0.3 --geneve 0.1 --mpls 0.1 --ipv6 0.3 --loss 0.003"
  [tunnelsdup]="--gre 0.3 --vxlan 0.3 --identical 0.01 --loss 0.003"
  [fragments]="--frag4 0.1 --frag6 0.05 --ipv6 0.3 --loss 0.002"
  [congested]="--loss 0.47 --delay fullqueue:63000000"
)
fail=0
for sc in ${SCEN:-${!SC[@]}}; do
  for seed in ${SEEDS:-1 2}; do
    d=$out/$sc-$seed
    rm -rf "$d" && mkdir -p "$d"
    python3 "$here/gen.py" --n "$N" --seed "$seed" ${SC[$sc]} --out "$d" >/dev/null || exit 2
    for iv in 1s 100ms 0; do
      extra=()
      [ "$sc" = remark ] && extra=(--mec c2=dscp:cs2)
      "$bin" analyze --sender "$d/S.pcap" --receiver "$d/R.pcap" --synopsis all --interval "$iv" "${extra[@]}" \
        --format json --quiet >"$d/rep-$iv.jsonl" 2>"$d/err-$iv.txt"
      rc=$?
      echo "== $sc seed $seed --interval $iv: exit $rc"
      if [ "$sc" = disjoint ]; then
        # Captures of different traffic: analyze must refuse them.
        if [ $rc -eq 0 ] || ! grep -q "do not see the same traffic" "$d/err-$iv.txt"; then
          echo "   BAD: captures of different traffic not refused"; fail=1
        fi
        continue
      fi
      [ $rc -ne 0 ] && { cat "$d/err-$iv.txt"; fail=1; continue; }
      lim=""
      # Under a snap length analyze measures the packets whose identity
      # both captures keep: the snap length minus Ethernet and two tags.
      [ "$sc" = snap ] && lim=74
      c2=""
      [ "$sc" = remark ] && c2=1
      MEC_C2=$c2 EXTLIMIT=$lim python3 "$here/check.py" "$d" "$d/rep-$iv.jsonl" || fail=1
    done
    case " ${SC[$sc]} " in *" --gre "*|*" --vxlan "*|*" --geneve "*|*" --mpls "*)
      # The same traffic without the tunnels: the identity reads through
      # them, so they must add no shared identity.
      mkdir -p "$d/plain" && python3 "$here/gen.py" --n "$N" --seed "$seed" ${SC[$sc]} --plain --out "$d/plain" >/dev/null || exit 2
      "$bin" analyze --sender "$d/plain/S.pcap" --receiver "$d/plain/R.pcap" --synopsis all --interval 0 \
        --format json --quiet >/dev/null 2>"$d/plain/err-0.txt"
      shared() { sed -n 's/.*identities seen more than once: \([0-9]*\) sent, \([0-9]*\) received.*/\1 \2/p' "$1"; }
      read -r ts tr < <(shared "$d/err-0.txt")
      read -r ps pr < <(shared "$d/plain/err-0.txt")
      echo "   shared identities: tunneled $ts sent, $tr received; plain $ps sent, $pr received"
      if [ -z "$ts" ] || [ -z "$ps" ] || [ "$ts" -gt "$ps" ] || [ "$tr" -gt "$pr" ]; then
        echo "   BAD: the tunnels share more identities than the same traffic without them"; fail=1
      fi
      ;;
    esac
  done
done
[ $fail -eq 0 ] && echo "audit: every valid line holds its truth" || echo "audit: FAILED"
exit $fail
