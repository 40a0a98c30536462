#!/usr/bin/env bash
# scripts/lab.sh — two ldafwd appliances as real processes on veth pairs,
# traffic through them, and their reports (issue 6 item 6; docs/run.md).
#
#   gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns (bridge, netem) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
#
# The appliances run `ldafwd run` in the root namespace with afxdp: ports
# on the root ends of the veth pairs. The measured segment is a bridge in
# its own namespace; where the kernel has netem, its egress toward
# ldafwd#2 loses $LOSS and delays by $DELAY. Traffic is a generated pcap
# of IPv4/UDP frames replayed with tcpreplay from the generator namespace.
# The script prints ldafwd#2's interval table (direction a>b) and checks
# Σ lost over valid intervals against the frames the generator sent and
# the sink received (kernel interface counters).
#
# Needs root, iproute2, tcpreplay and python3 (standard library only). It
# creates and deletes only its own namespaces and interfaces (names start
# with ldl<pid>) and sends only into them.
#
# Environment: LDAFWD_BIN (bin/ldafwd), DURATION seconds of traffic (5),
# PPS (10000), INTERVAL (1s), LOSS (1%), DELAY (1ms), PORTS (afxdp, or
# dpdk for DPDK's net_af_packet vdev on the same veths), OUT (a temporary
# directory for the reports and logs; kept).
set -euo pipefail

BIN=${LDAFWD_BIN:-bin/ldafwd}
DURATION=${DURATION:-5}
PPS=${PPS:-10000}
INTERVAL=${INTERVAL:-1s}
LOSS=${LOSS:-1%}
DELAY=${DELAY:-1ms}
PORTS=${PORTS:-afxdp}
OUT=${OUT:-$(mktemp -d /tmp/ldafwd-lab.XXXXXX)}

die() { echo "lab.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth pairs, XDP)"
for c in ip tcpreplay python3; do command -v "$c" >/dev/null || die "needs $c"; done
[ -x "$BIN" ] || die "no $BIN: run make build first (or set LDAFWD_BIN)"
case "$PORTS" in afxdp|dpdk) ;; *) die "PORTS=$PORTS: want afxdp or dpdk" ;; esac
mkdir -p "$OUT"

P=ldl$(( $$ % 100000 ))
NSG=$P-gen NSW=$P-wire NSK=$P-sink
G=${P}g S1=${P}s1 S2=${P}s2 K=${P}k
PIDS=()

cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for ns in "$NSG" "$NSW" "$NSK"; do ip netns del "$ns" 2>/dev/null || true; done
	for l in "$G" "$S1" "$S2" "$K"; do ip link del "$l" 2>/dev/null || true; done
}
trap cleanup EXIT

noipv6() { # noipv6 [ns] ifname: the kernel sends nothing on its own
	if [ $# = 2 ]; then ip netns exec "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
	else sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1"; fi
}

for ns in "$NSG" "$NSW" "$NSK"; do
	ip netns add "$ns"
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set lo up
done
pair() { # pair rootname ns peername
	ip link add "$1" type veth peer name "$3"
	ip link set "$3" netns "$2"
	noipv6 "$1"
	noipv6 "$2" "$3"
	ip link set "$1" up
	ip -n "$2" link set "$3" up
}
pair "$G" "$NSG" "${G}p"
pair "$S1" "$NSW" "${S1}p"
pair "$S2" "$NSW" "${S2}p"
pair "$K" "$NSK" "${K}p"
ip -n "$NSW" link add br0 type bridge
noipv6 "$NSW" br0
ip -n "$NSW" link set "${S1}p" master br0
ip -n "$NSW" link set "${S2}p" master br0
ip -n "$NSW" link set br0 up
if ip netns exec "$NSW" tc qdisc add dev "${S2}p" root netem loss "$LOSS" delay "$DELAY" 2>/dev/null; then
	echo "segment: netem loss $LOSS delay $DELAY toward ldafwd#2"
else
	echo "segment: this kernel has no netem; the segment is lossless"
fi
sleep 0.5 # veth carriers come up asynchronously

"$BIN" keygen --out "$OUT/lab.key" --force 2>/dev/null
spec() { # spec ifname n
	if [ "$PORTS" = afxdp ]; then echo "afxdp:$1"; else echo "dpdk:net_af_packet$2,iface=$1,framecnt=4096"; fi
}
COMMON=(--interval "$INTERVAL" --key-file "$OUT/lab.key" --format table --max-delay 200ms --min-delay -1ms
	--idle-sleep 50us --stats-interval 5s)
"$BIN" run --port-a "$(spec "$G" 0)" --port-b "$(spec "$S1" 1)" --segment-port b "${COMMON[@]}" \
	--report "$OUT/ldafwd1.jsonl" >"$OUT/ldafwd1.out" 2>"$OUT/ldafwd1.log" &
PIDS+=($!)
"$BIN" run --port-a "$(spec "$S2" 0)" --port-b "$(spec "$K" 1)" --segment-port a "${COMMON[@]}" \
	--metrics-addr 127.0.0.1:0 --report "$OUT/ldafwd2.jsonl" >"$OUT/ldafwd2.out" 2>"$OUT/ldafwd2.log" &
PIDS+=($!)

# Wait (at most 15 s) until ldafwd#2 reports a>b intervals: both are up
# and the session's partial first interval is behind.
for _ in $(seq 150); do
	n=$(grep -c '"direction":"a>b"' "$OUT/ldafwd2.jsonl" 2>/dev/null) || n=0
	[ "$n" -ge 2 ] && break
	for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || { cat "$OUT"/ldafwd*.log >&2; die "an appliance exited early"; }; done
	sleep 0.1
done
grep -q '"direction":"a>b"' "$OUT/ldafwd2.jsonl" || { cat "$OUT"/ldafwd*.log >&2; die "no reports from ldafwd#2 within 15 s"; }
echo "appliances up (logs in $OUT); ldafwd#2 metrics: $(grep -o '"addr":"[^"]*"' "$OUT/ldafwd2.log" | head -1)"

# Traffic: PPS × DURATION IPv4/UDP frames over 256 flows, 128 bytes.
python3 - "$OUT/traffic.pcap" $(( PPS * DURATION )) <<'EOF'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        sport, size = 1024 + i % 256, 128
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, i & 0xFFFF, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
        s = sum(struct.unpack("!10H", ip))
        s = (s >> 16) + (s & 0xFFFF); s += s >> 16
        ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
        udp = struct.pack("!HHHH", sport, 9, size - 34, 0)
        payload = struct.pack("!Q", i) + bytes((i + k) & 0xFF for k in range(size - 50))
        frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp + payload
        f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(frame), len(frame)) + frame)
EOF
stat() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
tx0=$(stat "$NSG" "${G}p" tx_packets) rx0=$(stat "$NSK" "${K}p" rx_packets)
echo "traffic: $(( PPS * DURATION )) frames at $PPS pps from $NSG"
ip netns exec "$NSG" tcpreplay -q -i "${G}p" --pps="$PPS" "$OUT/traffic.pcap" >"$OUT/tcpreplay.log" 2>&1 ||
	{ cat "$OUT/tcpreplay.log" >&2; die "tcpreplay failed"; }

# Let the segment drain and two more intervals close, then stop #1 (its
# last interval goes in-band to #2) and #2, each within 15 s.
python3 -c "import sys,re; v=sys.argv[1]; m={'ms':1e-3,'s':1,'us':1e-6,'m':60}; n,u=re.match(r'([0-9.]+)([a-z]+)',v).groups(); import time; time.sleep(2*float(n)*m[u]+0.5)" "$INTERVAL"
sent=$(( $(stat "$NSG" "${G}p" tx_packets) - tx0 )) received=$(( $(stat "$NSK" "${K}p" rx_packets) - rx0 ))
for pid in "${PIDS[@]}"; do
	kill -TERM "$pid"
	for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && die "ldafwd (pid $pid) did not stop within 15 s of SIGTERM"
	wait "$pid" || die "ldafwd (pid $pid) exited with status $?"
done
PIDS=()

echo
echo "== ldafwd#2 (receiver of a>b) =="
cat "$OUT/ldafwd2.out"
echo
python3 - "$OUT/ldafwd2.jsonl" "$sent" "$received" <<'EOF'
import json, sys
path, sent, received = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
valid = invalid = 0
s = r = lost = 0
reasons = {}
for line in open(path):
    o = json.loads(line)
    if o.get("type") != "interval" or o["direction"] != "a>b" or o["mec"] != "all":
        continue
    if o["valid"]:
        valid += 1; s += o["sent"]; r += o["received"]; lost += o["lost"]
    elif o["sent"] or o["received"]:
        invalid += 1; reasons[o.get("reason", "")] = reasons.get(o.get("reason", ""), 0) + 1
print(f"generator sent {sent}, sink received {received}: {sent - received} lost end to end")
print(f"ldafwd#2: {valid} valid a>b intervals: sent {s}, received {r}, lost {lost}; {invalid} invalid with traffic")
for k, v in reasons.items():
    print(f"  {v} × {k}")
if invalid == 0 and s == sent and lost == sent - received:
    print("every frame accounted for: Σ lost over valid intervals = sent − received")
else:
    print("not every frame is in a valid interval (see the reasons above)")
EOF
echo "reports: $OUT/ldafwd1.jsonl $OUT/ldafwd2.jsonl; logs: $OUT/ldafwd1.log $OUT/ldafwd2.log"
