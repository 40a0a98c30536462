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
# ANALYZE_FLAGS to analyze. SCALE_REPEAT=n runs n rounds: each round runs
# one core and two cores back to back, the first of the two alternating
# from round to round, so that a slow spell of the host falls on both.
# Each row is then the median of its runs, and two cores against one is
# the median of the rounds' ratios (each round's range printed too).
# SCALE_CEILING=1 also runs, each round, two one-core analyses at once:
# what the machine itself gives two memory-bound jobs (its two CPUs may
# share a physical core or its caches), as their throughput against one
# alone. Each round is also printed on a line of its own: its two-core
# speed-up, the cache-line round trip between CPUs 0 and 1 measured just
# before and after its two analyses (analyze/analyzetest/linetrip), and
# the two-at-once speed-up.
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
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
# rowof name: the median of each column over name's runs (in $dir/name.runs)
rowof() {
  local f="$dir/$1.runs"
  echo "$1 $(cut -d' ' -f2 "$f" | median) $(cut -d' ' -f3 "$f" | median) $(cut -d' ' -f4 "$f" | median) $(cut -d' ' -f5 "$f" | median)"
}
sync
echo "== $n packets a side ($total in both captures), $repeat round(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(measure capinfos capinfos "$s" "$r")
read -r _ bwall _ _ _ <<<"$base"
printf '%-16s %8s %8s %8s %10s %12s %8s\n' run wall_s user_s sys_s peak_MiB pkts_per_s vs_capinfos
report() {
  local name wall user sys rss
  read -r name wall user sys rss <<<"$1"
  printf '%-16s %8.2f %8.2f %8.2f %10.0f %12.0f %7.2fx\n' "$name" "$wall" "$user" "$sys" "$((${rss%.*} / 1024))" \
    "$(echo "$total / $wall" | bc -l)" "$(echo "$wall / $bwall" | bc -l)"
}
report "$base"
runs=(stream-1core stream-2cores)
[ "${SCALE_WHOLE:-0}" = 1 ] && runs+=(whole-2cores)
rm -f "$dir"/*.runs "$dir/ratios" "$dir/ceiling" "$dir/rounds"
# ceiling: two one-core analyses at once; prints both finished after how
# many seconds
ceiling() {
  local t0 t1
  t0=$(date +%s.%N)
  GOMAXPROCS=1 "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet ${ANALYZE_FLAGS:-} >/dev/null 2>&1 &
  GOMAXPROCS=1 "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet ${ANALYZE_FLAGS:-} >/dev/null 2>&1
  wait
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
analysis() { # name: one run of it, its report kept as name.out
  local name=$1 procs=2 whole=()
  [ "$name" = stream-1core ] && procs=1
  [ "$name" = whole-2cores ] && whole=(--whole-capture)
  GOMAXPROCS=$procs measure "$name" "$bin" analyze --sender "$s" --receiver "$r" --format json --quiet "${whole[@]}" ${ANALYZE_FLAGS:-} \
    >>"$dir/$name.runs"
  cmp -s "$dir/${runs[0]}.out" "$dir/$name.out" 2>/dev/null || [ "$name" = "${runs[0]}" ] ||
    { echo "analyze-scale: $name reported differently from ${runs[0]}"; exit 1; }
  cp "$dir/$name.out" "$dir/$name.kept"
}
# The cache-line round trip between the two CPUs, each round: the
# two-core analysis hands every record between them, and on a virtual
# machine it changes with where the host puts the virtual CPUs.
trip=
if [ "$(nproc)" -ge 2 ] && go build -o "$dir/linetrip" ./analyze/analyzetest/linetrip; then trip="$dir/linetrip"; fi
for i in $(seq "$repeat"); do
  rt=${trip:+$("$trip" --runs 3 2>/dev/null || true)}
  if [ $((i % 2)) = 1 ]; then analysis stream-1core; analysis stream-2cores; else analysis stream-2cores; analysis stream-1core; fi
  [ "${SCALE_WHOLE:-0}" = 1 ] && analysis whole-2cores
  w1=$(tail -1 "$dir/stream-1core.runs" | cut -d' ' -f2) w2=$(tail -1 "$dir/stream-2cores.runs" | cut -d' ' -f2)
  echo "$w1 $w2" | awk '{printf "%.4f\n", $1/$2}' >>"$dir/ratios"
  rt2=${trip:+$("$trip" --runs 3 2>/dev/null || true)}
  line="round $i: one core $w1 s, two cores $w2 s ($(tail -1 "$dir/ratios" | awk '{printf "%.2f", $1}')x)${rt:+; CPU-to-CPU cache-line round trip $rt ns before, $rt2 after}"
  if [ "${SCALE_CEILING:-0}" = 1 ]; then
    c=$(ceiling)
    echo "$w1 $c" | awk '{printf "%.4f\n", 2*$1/$2}' >>"$dir/ceiling"
    line="$line; two one-core analyses at once $(printf '%.2f' "$c") s ($(tail -1 "$dir/ceiling" | awk '{printf "%.2f", $1}')x)"
  fi
  echo "$line" >>"$dir/rounds"
done
cat "$dir/rounds"
for x in "${runs[@]}"; do
  report "$(rowof "$x")"
done
printf 'two cores: %.2fx one core (wall; median of %d rounds: %s); load average after %s\n' \
  "$(median <"$dir/ratios")" "$repeat" "$(sort -g "$dir/ratios" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1}')" "$(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${SCALE_CEILING:-0}" = 1 ]; then
  printf 'two one-core analyses at once: %.2fx the throughput of one alone (median of %d rounds: %s)\n' \
    "$(median <"$dir/ceiling")" "$repeat" "$(sort -g "$dir/ceiling" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1}')"
fi
for x in "${runs[@]:1}"; do
  cmp -s "$dir/${runs[0]}.kept" "$dir/$x.kept" || { echo "analyze-scale: $x reported differently from ${runs[0]}"; exit 1; }
done
echo "reports identical across runs ($(wc -l <"$dir/${runs[0]}.kept") lines)"
