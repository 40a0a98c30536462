#!/usr/bin/env bash
# analyze-scale.sh DIR PACKETS: what `ldafwd analyze` costs at capture
# scale (make analyze-scale; docs/analyze.md, "Cost"). Writes a capture
# pair of PACKETS packets a side (genscale), times capinfos reading both
# files (the I/O baseline), then `ldafwd analyze` streaming with
# GOMAXPROCS=1 and 2, and with SCALE_WHOLE=1 also --whole-capture. For
# each run: wall and CPU seconds, peak resident memory, packets per second
# (both captures' packets over wall time) and the time against capinfos'.
# The same report on every run is checked (cmp), so a faster run is never
# a different answer. Then two cores against one (wall time) and the load
# average before and after: other work on the machine slows the runs.
# GENSCALE_FLAGS passes flags to genscale (e.g. "--rate 1000000");
# ANALYZE_FLAGS to analyze; SCALE_REPEAT=n runs each analysis n times
# and reports the fastest.
set -euo pipefail
dir=${1:-out/scale}
n=${2:-10000000}
here=$(cd "$(dirname "$0")" && pwd)
bin=${LDAFWD:-$here/../bin/ldafwd}
mkdir -p "$dir"
s=$dir/s-$n.pcap r=$dir/r-$n.pcap
if [ ! -s "$s" ] || [ ! -s "$r" ]; then
  echo "writing $n packets a side to $dir"
  go run ./analyze/analyzetest/genscale --packets "$n" ${GENSCALE_FLAGS:-} --sender "$s" --receiver "$r"
fi
ls -l "$s" "$r"
rx=$(( $(capinfos -c -M -T "$r" | awk -F'\t' 'NR==2{print $2}') ))
total=$(( n + rx ))
# seconds from /usr/bin/time -v's "h:mm:ss" or "m:ss.ss"
secs() { awk -F: '{ s=0; for (i=1; i<=NF; i++) s = s*60 + $i; printf "%.2f", s }'; }
measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -v "$@" >"$dir/$name.out" 2>"$dir/$name.time" || { tail -5 "$dir/$name.time"; return 1; }
  local wall user sys rss
  wall=$(grep 'Elapsed (wall clock)' "$dir/$name.time" | sed 's/.*): //' | secs)
  user=$(grep 'User time' "$dir/$name.time" | awk '{print $NF}')
  sys=$(grep 'System time' "$dir/$name.time" | awk '{print $NF}')
  rss=$(grep 'Maximum resident' "$dir/$name.time" | awk '{print $NF}')
  echo "$name $wall $user $sys $rss"
}
repeat=${SCALE_REPEAT:-1}
best() { # name, command...: measure, repeat times, the fastest run
  local name=$1 out="" line w bw=""
  shift
  for _ in $(seq "$repeat"); do
    line=$(measure "$name" "$@") || return 1
    read -r _ w _ _ _ <<<"$line"
    if [ -z "$bw" ] || [ "$(echo "$w < $bw" | bc -l)" = 1 ]; then
      bw=$w out=$line
      cp "$dir/$name.out" "$dir/$name.best"
    fi
  done
  mv "$dir/$name.best" "$dir/$name.out"
  echo "$out"
}
sync
echo "== $n packets a side ($total in both captures), best of $repeat; load average $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(measure capinfos capinfos "$s" "$r")
read -r _ bwall _ _ _ <<<"$base"
printf '%-16s %8s %8s %8s %10s %12s %8s\n' run wall_s user_s sys_s peak_MiB pkts_per_s vs_capinfos
report() {
  local name wall user sys rss
  read -r name wall user sys rss <<<"$1"
  printf '%-16s %8.2f %8.2f %8.2f %10.0f %12.0f %7.2fx\n' "$name" "$wall" "$user" "$sys" "$((rss / 1024))" \
    "$(echo "$total / $wall" | bc -l)" "$(echo "$wall / $bwall" | bc -l)"
}
report "$base"
runs=(stream-1core stream-2cores)
one=$(GOMAXPROCS=1 best stream-1core "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet ${ANALYZE_FLAGS:-})
report "$one"
two=$(GOMAXPROCS=2 best stream-2cores "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet ${ANALYZE_FLAGS:-})
report "$two"
if [ "${SCALE_WHOLE:-0}" = 1 ]; then
  runs+=(whole-2cores)
  report "$(GOMAXPROCS=2 best whole-2cores "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet --whole-capture ${ANALYZE_FLAGS:-})"
fi
read -r _ w1 _ _ _ <<<"$one"
read -r _ w2 _ _ _ <<<"$two"
printf 'two cores: %.2fx one core (wall); load average after %s\n' "$(echo "$w1 / $w2" | bc -l)" "$(cut -d' ' -f1-3 /proc/loadavg)"
for x in "${runs[@]:1}"; do
  cmp -s "$dir/${runs[0]}.out" "$dir/$x.out" || { echo "analyze-scale: $x reported differently from ${runs[0]}"; exit 1; }
done
echo "reports identical across runs ($(wc -l <"$dir/${runs[0]}.out") lines)"
