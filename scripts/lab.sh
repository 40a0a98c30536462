#!/usr/bin/env bash
# scripts/lab.sh — two ldafwd appliances as real processes on veth pairs,
# traffic through them, and their reports (issue 6 item 6; docs/run.md).
#
#   gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns (bridge, netem) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
#
# The appliances run `ldafwd run` in the root namespace with afxdp: ports
# on the root ends of the veth pairs. The measured segment is a bridge in
# its own namespace; where the kernel has netem, its egress toward
# ldafwd#2 loses $LOSS and delays by $DELAY, else a tbf shapes it to
# $RATE. Traffic is a generated pcap
# of IPv4/UDP frames replayed with tcpreplay from the generator namespace.
# The script prints ldafwd#2's interval table (direction a>b), then where
# every frame of direction a>b went, hop by hop, from the kernel's
# interface counters (/sys/class/net/*/statistics), both appliances'
# final port records ("type":"port","final":true in $OUT/ldafwd*.jsonl)
# and their lane counters (the "appliance stopped" line of
# $OUT/ldafwd*.log), and checks that ldafwd#2's Σ sent, Σ received and
# Σ lost over valid intervals are exactly the frames ldafwd#1 put into
# the segment, the frames ldafwd#2 took out of it, and the data frames
# lost in between. It exits 1 when any frame is unexplained (see
# docs/run.md, "The lab").
#
# Needs root, iproute2, tcpreplay and python3 (standard library only). It
# creates and deletes only its own namespaces and interfaces (names start
# with ldl<pid>) and sends only into them.
#
# Environment: LDAFWD_BIN (bin/ldafwd), DURATION seconds of traffic (5),
# PPS (10000), FLOWS (256: distinct 5-tuples, frame i in flow i mod
# FLOWS), INTERVAL (1s), LOSS (1%), DELAY (1ms), RATE (40mbit: a tbf
# instead where the kernel has no netem), PORTS (afxdp, or
# dpdk for DPDK's net_af_packet vdev on the same veths), SYNOPSIS (all:
# the appliances' --synopsis, the same at both ends), COPIES (2: their
# --control-copies, so that a control frame netem loses costs no
# interval), BUDGET (2%: their --control-budget, all copies counted —
# the default 1% per copy; at 10 kpps of 128-byte frames 1% for two
# copies leaves the RDA out), MAX_STAMP_ERR (40us: their
# --max-stamp-err; a busy host's copy-mode AF_XDP transmit stamps can
# carry more), OUT (a temporary directory for the reports and logs;
# kept).
# The equations use ldafwd#2's LDA lines; the RDA and LDS lines are
# counted (valid of total, and why the others are not).
set -euo pipefail

BIN=${LDAFWD_BIN:-bin/ldafwd}
DURATION=${DURATION:-5}
PPS=${PPS:-10000}
FLOWS=${FLOWS:-256}
INTERVAL=${INTERVAL:-1s}
LOSS=${LOSS:-1%}
DELAY=${DELAY:-1ms}
RATE=${RATE:-40mbit}
PORTS=${PORTS:-afxdp}
SYNOPSIS=${SYNOPSIS:-all}
COPIES=${COPIES:-2}
BUDGET=${BUDGET:-2%}
MAX_STAMP_ERR=${MAX_STAMP_ERR:-40us}
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
NETEM=0

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
# No multicast snooping: a snooping bridge joins 224.0.0.106 (RFC 4286)
# and floods its IGMP reports to both ports, a frame ldafwd#2 would take
# for traffic that ldafwd#1 never sent.
ip -n "$NSW" link add br0 type bridge mcast_snooping 0
noipv6 "$NSW" br0
ip -n "$NSW" link set "${S1}p" master br0
ip -n "$NSW" link set "${S2}p" master br0
ip -n "$NSW" link set br0 up
if ip netns exec "$NSW" tc qdisc add dev "${S2}p" root netem loss "$LOSS" delay "$DELAY" 2>/dev/null; then
	echo "segment: netem loss $LOSS delay $DELAY toward ldafwd#2"
	NETEM=1
elif ip netns exec "$NSW" tc qdisc add dev "${S2}p" root tbf rate "$RATE" burst 16kb latency 20ms 2>/dev/null; then
	# No netem: a token bucket queues what exceeds $RATE (queueing
	# delay) and drops what waits over 20 ms; its drops are counted like
	# netem's.
	echo "segment: this kernel has no netem; tbf $RATE toward ldafwd#2"
	NETEM=1
else
	echo "segment: this kernel has neither netem nor tbf; the segment is lossless"
fi
sleep 0.5 # veth carriers come up asynchronously

"$BIN" keygen --out "$OUT/lab.key" --force 2>/dev/null
spec() { # spec ifname n
	if [ "$PORTS" = afxdp ]; then echo "afxdp:$1"; else echo "dpdk:net_af_packet$2,iface=$1,framecnt=4096"; fi
}
# --max-delay 2s: on a loaded 2-core machine the appliances' workers wait
# for a core and frames queue for a long time (intervals with delays
# beyond 200 ms seen with both cores busy); a delay beyond --max-delay
# invalidates its interval. --min-delay -50ms: the sender stamps a burst
# with the midpoint of clock reads around its TxBurst, so a worker
# preempted there stamps late, and a frame can look early by up to half
# that gap (at 200 kpps with both cores busy, -1ms left an interval
# invalid with a bucket out of bounds; -50ms none in two runs). Each
# doubling of the span costs one bit per non-empty bucket (docs/lda.md),
# not resolution.
COMMON=(--interval "$INTERVAL" --key-file "$OUT/lab.key" --format table --max-delay 2s --min-delay -50ms
	--idle-sleep 50us --stats-interval 5s --synopsis "$SYNOPSIS" --control-copies "$COPIES" --control-budget "$BUDGET" --max-stamp-err "$MAX_STAMP_ERR")
# ldafwd#2 first, and ldafwd#1 only once #2's sockets are bound: a frame
# #1 sends (its first End markers) while #2's XDP program has no socket
# yet would be refused where #2 cannot count it.
"$BIN" run --port-a "$(spec "$S2" 0)" --port-b "$(spec "$K" 1)" --segment-port a "${COMMON[@]}" \
	--metrics-addr 127.0.0.1:0 --report "$OUT/ldafwd2.jsonl" >"$OUT/ldafwd2.out" 2>"$OUT/ldafwd2.log" &
P2=$!
PIDS+=("$P2")
for _ in $(seq 150); do
	grep -q '"message":"appliance started"' "$OUT/ldafwd2.log" 2>/dev/null && break
	kill -0 "$P2" 2>/dev/null || { cat "$OUT/ldafwd2.log" >&2; die "ldafwd#2 exited early"; }
	sleep 0.1
done
grep -q '"message":"appliance started"' "$OUT/ldafwd2.log" || { cat "$OUT/ldafwd2.log" >&2; die "ldafwd#2 did not start within 15 s"; }
# With PORTS=dpdk, DPDK 22.11's net_af_packet numbers its PACKET_FANOUT
# group pid XOR ifindex, one interface per group in a network namespace:
# #1 can draw the number #2 holds on another veth, and then exits at once
# ("could not set PACKET_FANOUT"). A new process has a new pid: start it
# again, up to three times.
for try in 1 2 3; do
	"$BIN" run --port-a "$(spec "$G" 0)" --port-b "$(spec "$S1" 1)" --segment-port b "${COMMON[@]}" \
		--report "$OUT/ldafwd1.jsonl" >"$OUT/ldafwd1.out" 2>"$OUT/ldafwd1.log" &
	P1=$!
	for _ in $(seq 100); do
		grep -q '"message":"appliance started"' "$OUT/ldafwd1.log" 2>/dev/null && break
		kill -0 "$P1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$P1" 2>/dev/null && break
	grep -q 'could not set PACKET_FANOUT' "$OUT/ldafwd1.log" || break
	echo "ldafwd#1: net_af_packet's fanout group clashed with another process's (try $try): starting it again" >&2
done
PIDS=("$P1" "$P2") # stopped in this order: #1's last interval goes in-band to #2

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

# Traffic: PPS × DURATION IPv4/UDP frames over FLOWS flows (source port
# and the source address's low 16 bits), 128 bytes.
python3 - "$OUT/traffic.pcap" $(( PPS * DURATION )) "$FLOWS" <<'EOF'
import struct, sys
path, n, flows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        fl = i % flows
        sport, size = 1024 + fl % 60000, 128
        src = bytes([10, 0, (fl // 60000) >> 8 & 0xFF, (fl // 60000) & 0xFF])
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, i & 0xFFFF, 0, 64, 17, 0, src, bytes([10, 0, 0, 2]))
        s = sum(struct.unpack("!10H", ip))
        s = (s >> 16) + (s & 0xFFFF); s += s >> 16
        ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
        udp = struct.pack("!HHHH", sport, 9, size - 34, 0)
        payload = struct.pack("!Q", i) + bytes((i + k) & 0xFF for k in range(size - 50))
        frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp + payload
        f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(frame), len(frame)) + frame)
EOF
N=$(( PPS * DURATION ))
# Failed XDP redirects so far (a diagnostic: any is a control frame, the
# traffic has not started).
v1_0=$(cat "/sys/class/net/$G/statistics/rx_dropped") v2_0=$(cat "/sys/class/net/$S2/statistics/rx_dropped")
echo "traffic: $N frames at $PPS pps from $NSG"
# Start in the middle of an interval (intervals are aligned to the wall
# clock): the first and the last interval with traffic then hold about
# half an interval's frames each, not a handful too few for a delay
# estimate (an interval with under 4 usable rows is invalid).
sleep_to() { # sleep_to FRACTION: until FRACTION of the way into an interval, plus whole intervals
	python3 - "$INTERVAL" "$1" <<'PY'
import re, sys, time
# A Go duration, as ldafwd's --interval takes it: one or more number+unit
# parts ("1s", "250ms", "1m30s").
unit = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
parts = re.findall(r"([0-9.]+)(ns|us|µs|ms|s|m|h)", sys.argv[1])
if not parts or "".join(n + u for n, u in parts) != sys.argv[1]:
    sys.exit(f"lab.sh: INTERVAL={sys.argv[1]!r} is not a duration like 1s, 250ms or 1m30s")
iv = sum(float(n) * unit[u] for n, u in parts)
frac = float(sys.argv[2])
t = time.time()
time.sleep((frac - t / iv % 1) % 1 * iv + int(frac) * iv)
PY
}
sleep_to 0.5
ip netns exec "$NSG" tcpreplay -q -i "${G}p" --pps="$PPS" "$OUT/traffic.pcap" >"$OUT/tcpreplay.log" 2>&1 ||
	{ cat "$OUT/tcpreplay.log" >&2; die "tcpreplay failed"; }

# Let the segment drain and two more intervals close, then stop #1 (its
# last interval goes in-band to #2) and #2, each within 15 s. Each
# writes its final port record after its workers have stopped.
sleep_to 2.5 # the last frames' interval and two more end, then half an interval for the control frames
sleep 0.5
for pid in "${PIDS[@]}"; do
	# Peak resident memory, for docs/performance.md's memory per flow.
	echo "ldafwd pid $pid: $(grep -E '^VmHWM' "/proc/$pid/status" | tr -s ' \t' ' ') peak resident ($FLOWS flows)"
	kill -TERM "$pid"
	for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && die "ldafwd (pid $pid) did not stop within 15 s of SIGTERM"
	wait "$pid" || die "ldafwd (pid $pid) exited with status $?"
done
PIDS=()

# Kernel counters of direction a>b, read once both appliances are gone
# (nothing moves any more). They count from the interfaces' creation:
# the namespaces send nothing of their own (no IPv6, no addresses, no
# snooping bridge), so all of it is the pcap's, and the appliances'
# counters start before the first frame.
k() { # k name ns ifname counter
	local v
	if [ -n "$2" ]; then v=$(ip netns exec "$2" cat "/sys/class/net/$3/statistics/$4"); else v=$(cat "/sys/class/net/$3/statistics/$4"); fi
	printf '"%s":%s,' "$1" "$v"
}
netem_dropped=0
if [ "$NETEM" = 1 ]; then
	netem_dropped=$(ip netns exec "$NSW" tc -s qdisc show dev "${S2}p" | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
fi
KERNEL="{$(k gen_tx "$NSG" "${G}p" tx_packets)$(k gen_tx_dropped "$NSG" "${G}p" tx_dropped)$(k g_rx_dropped "" "$G" rx_dropped)$(k g_rx "" "$G" rx_packets)$(k s2_rx "" "$S2" rx_packets)\
$(k s1_tx_dropped "" "$S1" tx_dropped)$(k s1p_rx_dropped "$NSW" "${S1}p" rx_dropped)$(k s2p_tx_dropped "$NSW" "${S2}p" tx_dropped)\
$(k br_tx "$NSW" br0 tx_packets)$(k br_dropped "$NSW" br0 tx_dropped)$(k s2_rx_dropped "" "$S2" rx_dropped)\
$(k k_tx_dropped "" "$K" tx_dropped)$(k sink_rx "$NSK" "${K}p" rx_packets)\"netem_dropped\":${netem_dropped:-0},\"netem\":$NETEM,\
\"g_rx_dropped_before\":$v1_0,\"s2_rx_dropped_before\":$v2_0}"
echo "$KERNEL" >"$OUT/kernel.json"

echo
echo "== ldafwd#2 (receiver of a>b) =="
cat "$OUT/ldafwd2.out"
echo
echo "== where every frame of a>b went =="
rc=0
python3 - "$OUT" "$N" "$PORTS" <<'PY' || rc=$?
import json, re, sys
out, pcap, ports = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kern = json.load(open(f"{out}/kernel.json"))
bad = []

def final_ports(name):
    """The final port records ("final":true) of one appliance, by port."""
    recs = {}
    for line in open(f"{out}/{name}.jsonl"):
        o = json.loads(line)
        if o.get("type") == "port" and o.get("final"):
            recs[o["port"]] = o
    if set(recs) != {"a", "b"}:
        sys.exit(f"lab.sh: {name}.jsonl has no final port records (did it stop cleanly?)")
    return recs

def stopped(name):
    """The lane and control counters of the "appliance stopped" log line."""
    for line in open(f"{out}/{name}.log"):
        if not line.startswith("{"):
            continue  # DPDK's EAL writes plain text to stderr too
        o = json.loads(line)
        if o.get("message") == "appliance stopped":
            return o
    sys.exit(f"lab.sh: {name}.log has no \"appliance stopped\" line")

def check(what, left, right, terms):
    """Print one equation; record it when left ≠ right."""
    ok = left == right
    print(f"{what:<16} {terms}: {'ok' if ok else f'MISMATCH: {left} ≠ {right} (off by {left - right})'}")
    if not ok:
        bad.append(what)

def overcount(d, v, before):
    """Names the known causes when ldafwd's count differs from the kernel's."""
    if d < v and before:
        return f" ({before} of them before the traffic started)"
    if d <= v:
        return ""
    return (" — ldafwd counted more drops than the kernel (dataplane/afxdp Port.Stats; a frame"
            " without a fill ring frame used to be counted twice, TestRxDroppedExact)")

p1, p2 = final_ports("ldafwd1"), final_ports("ldafwd2")
l1, l2 = stopped("ldafwd1"), stopped("ldafwd2")
m = re.search(r"Successful packets:\s*(\d+)", open(f"{out}/tcpreplay.log").read())
replayed = int(m.group(1)) if m else -1

G = kern["gen_tx"]                                        # frames the generator's veth passed on
A1, D1 = p1["a"]["rx_packets"], p1["a"]["rx_dropped"]     # ldafwd#1 port a: taken in, refused
T1, Y1 = p1["b"]["tx_packets"], p1["b"]["tx_dropped"]     # ldafwd#1 port b: put on the tx ring, rejected
C1 = l1["ends_sent"] + l1["control_injected"]             # of T1: ldafwd#1's own control frames
F1 = T1 - C1                                              # of T1: frames from port a
X1 = l1["sender_tx_dropped"]                              # frames ldafwd#1's a>b (sender) lane dropped (tx stalled)
A2, D2 = p2["a"]["rx_packets"], p2["a"]["rx_dropped"]     # ldafwd#2 port a: taken in, refused
C2, R2 = l2["control_stripped"], l2["received_recorded"]  # of A2: control frames, data frames recorded
T2, X2 = p2["b"]["tx_packets"], l2["receiver_tx_dropped"] # ldafwd#2 port b: transmitted; its a>b (receiver) lane's drops
S = kern["sink_rx"]
# The frames an appliance's port refused. afxdp: its AF_XDP socket (rx
# ring full, or no fill ring frame to copy into), as the kernel's veth
# counts them: an XDP redirect that fails is the veth's rx_drops (its
# rx_dropped), once per frame; the port's rx_dropped must agree. dpdk
# (net_af_packet): the packet socket's drops (its ring full), which the
# veth counts as received: what the veth received less what the port
# read. DPDK 22.11's net_af_packet counts none of them; ldafwd reads
# them from its packet sockets (PACKET_STATISTICS) into the port's
# rx_dropped, which must agree.
if ports == "afxdp":
    V1, V2, how = kern["g_rx_dropped"], kern["s2_rx_dropped"], "its AF_XDP socket refused (failed XDP redirects, the veth's rx_dropped)"
else:
    V1, V2 = kern["g_rx"] - A1, kern["s2_rx"] - A2
    how = "its packet socket dropped (the veth's rx_packets − port rx_packets)"
O = kern["br_tx"]                                         # frames the segment's bridge originated
K = kern["s1_tx_dropped"] + kern["s1p_rx_dropped"] + kern["s2p_tx_dropped"] + kern["br_dropped"] + kern["netem_dropped"]
KS = kern["k_tx_dropped"]

check("generator", replayed, G,
      f"tcpreplay sent {replayed} of {pcap} = the generator veth passed {G} (veth tx_dropped {kern['gen_tx_dropped']})")
check("into ldafwd#1", G, A1 + V1,
      f"{G} = port a rx_packets {A1} + {V1} {how}")
check("", D1, V1, f"  ldafwd#1 counted them too: port a rx_dropped {D1} = {V1}{overcount(D1, V1, kern['g_rx_dropped_before'] if ports == 'afxdp' else 0)}")
check("in ldafwd#1", A1, F1 + X1,
      f"{A1} = {F1} put into the segment (port b tx_packets {T1} − {C1} own control frames) + {X1} dropped by its a>b lane")
check("segment", T1 + O, A2 + V2 + Y1 + K,
      f"{T1} + {O} the bridge originated = ldafwd#2 port a rx_packets {A2} + {V2} {how.split(' (')[0]}"
      f" + ldafwd#1 port b tx_dropped {Y1} + {K} dropped by the segment (veths, bridge{', netem' if kern['netem'] else ''})")
check("", D2, V2, f"  ldafwd#2 counted them too: port a rx_dropped {D2} = {V2}{overcount(D2, V2, kern['s2_rx_dropped_before'] if ports == 'afxdp' else 0)}")
check("in ldafwd#2", A2, C2 + R2, f"{A2} = {C2} control frames stripped + {R2} frames recorded")
check("", R2, T2 + X2, f"  {R2} = port b tx_packets {T2} + {X2} dropped by its a>b lane")
check("sink", T2, S + KS, f"{T2} = sink rx_packets {S} + {KS} dropped by its veth")

valid = invalid = counted = 0
s = r = lost = inv_s = inv_r = 0
reasons = {}
tally = {}  # synopsis → [valid, total, {reason: count}] over lines with traffic or a budget reason
for line in open(f"{out}/ldafwd2.jsonl"):
    o = json.loads(line)
    if o.get("type") != "interval" or o["direction"] != "a>b" or o["mec"] != "all":
        continue
    if not o.get("config"):
        print(f"interval {o['interval']} {o['synopsis']}: no config"); bad.append("config")
    if o["sent"] or o["received"] or "control budget" in o.get("reason", ""):
        t = tally.setdefault(o["synopsis"], [0, 0, {}])
        t[1] += 1
        if o["valid"]:
            t[0] += 1
        else:
            t[2][o.get("reason", "")] = t[2].get(o.get("reason", ""), 0) + 1
    if o["synopsis"] != "lda":
        continue
    # The frame sums need exact counts (loss_valid), not a delay: an
    # interval with a handful of packets (traffic starting at its end)
    # has exact counts but too few for a standard deviation.
    if o["valid"] or o.get("loss_valid"):
        valid += o["valid"]; counted += not o["valid"]
        s += o["sent"]; r += o["received"]; lost += o["lost"]
    elif o["sent"] or o["received"]:
        invalid += 1; inv_s += o["sent"]; inv_r += o["received"]
        reasons[o.get("reason", "")] = reasons.get(o.get("reason", ""), 0) + 1
print(f"ldafwd#2: {valid} valid a>b intervals"
      + (f" and {counted} with exact counts but no delay" if counted else "")
      + f": Σ sent {s}, Σ received {r}, Σ lost {lost}; {invalid} invalid with traffic"
      + (f" (they say sent {inv_s}, received {inv_r})" if invalid else ""))
for k, v in reasons.items():
    print(f"  {v} × {k}")
for syn, (v, n, why) in sorted(tally.items()):
    print(f"ldafwd#2 {syn} lines of a>b with traffic: {v} of {n} valid")
    if syn != "lda":
        for k, c in why.items():
            print(f"  {c} × {k}")
seg_lost = V2 + Y1 + K - (C1 - C2)
if invalid == 0:
    check("Σ sent", s, F1, f"{s} = {F1} frames ldafwd#1 put into the segment (its sender recorded {l1['sent_recorded']})")
    check("Σ received", r, R2, f"{r} = {R2} frames ldafwd#2 recorded")
    check("Σ lost", lost, seg_lost,
          f"{lost} = lost between ldafwd#1's port b and ldafwd#2: {V2} + {Y1} + {K} − {C1 - C2} control frames among them")
else:
    print("not every frame is in a valid interval (see the reasons above): Σ sent, Σ received, Σ lost not checked")
if bad:
    print(f"unaccounted frames: {len(bad)} equation(s) above do not hold")
    sys.exit(1)
if invalid == 0:
    print(f"every frame accounted for: generator sent {G} = sink received {S} + {V1} dropped at ldafwd#1's port a"
          f" + {X1} dropped in ldafwd#1 + Σ lost {lost} + {X2} dropped in ldafwd#2 + {KS} dropped at the sink"
          f" (Σ lost over intervals with exact counts = data frames lost between the appliances)")
PY
echo "reports: $OUT/ldafwd1.jsonl $OUT/ldafwd2.jsonl; logs: $OUT/ldafwd1.log $OUT/ldafwd2.log; kernel counters: $OUT/kernel.json"
[ "$rc" = 0 ] || die "not every frame is accounted for (exit $rc)"
