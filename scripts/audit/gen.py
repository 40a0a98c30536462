#!/usr/bin/env python3
"""gen.py: captures of a generated segment, written without any ldafwd code.

Writes OUT/S.pcap (the sender's end) and OUT/R.pcap (the receiver's end),
nanosecond pcap, and OUT/pk.json: per sent packet its send time, its delay
(receiver stamp minus sender stamp, the receiver clock's offset removed) or
null when no copy arrived, its flow, its DSCP at the receiver and how many
L3 bytes its identity reads (for snap-length scenarios). check.py holds
`ldafwd analyze` reports to it. Impairments: loss (uniform or in bursts),
reordering, duplication inside the segment, a receiver clock offset,
link-local frames only the sender sees and ARP only the receiver sees,
bit-identical frames from the source, DSCP remarking, a VLAN tag pushed,
routed frames (TTL and MACs rewritten), IPv6 with a hop-by-hop header, a snap
length, and captures of different traffic (--disjoint)."""
import struct, random, json, sys, math, argparse
p = argparse.ArgumentParser()
p.add_argument('--n', type=int, default=300000)
p.add_argument('--rate', type=float, default=100000)
p.add_argument('--delay', default='weibull:30000')  # const:N, weibull:MEANNS, pareto:MEAN
p.add_argument('--loss', type=float, default=0.0)
p.add_argument('--burst', type=int, default=1)
p.add_argument('--reorder', type=float, default=0.0)  # fraction delayed extra
p.add_argument('--reorder-ns', type=float, default=200000)
p.add_argument('--dup', type=float, default=0.0)
p.add_argument('--clock', type=float, default=0.0)  # receiver clock offset ns
p.add_argument('--linklocal', type=int, default=0)  # frames only at sender
p.add_argument('--rxonly', type=int, default=0)  # frames only at receiver (switch's own)
p.add_argument('--identical', type=float, default=0.0)  # fraction of packets followed by an identical copy from the source
p.add_argument('--remark', type=float, default=0.0)  # fraction of dscp cs2 packets remarked to 0
p.add_argument('--cs2', type=float, default=0.0)  # fraction of packets with DSCP cs2
p.add_argument('--vlanpush', action='store_true')
p.add_argument('--ipv6', type=float, default=0.0)
p.add_argument('--snap', type=int, default=0)
p.add_argument('--routed', action='store_true')
p.add_argument('--flows', type=int, default=1000)
p.add_argument('--seed', type=int, default=1)
p.add_argument('--disjoint', action='store_true')
p.add_argument('--out', default='.')
a = p.parse_args()
rnd = random.Random(a.seed)
T0 = 1_700_000_000_300_000_000
def delay():
    k, v = a.delay.split(':'); v = float(v)
    if k == 'const': return v
    if k == 'weibull':
        shape = 0.6; scale = v / math.gamma(1 + 1/shape)
        return rnd.weibullvariate(scale, shape)
    if k == 'pareto':
        alpha = 2.5; xm = v*(alpha-1)/alpha
        return xm * rnd.paretovariate(alpha)
    if k == 'uniform': return rnd.uniform(0, 2*v)
    raise SystemExit('bad delay')
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
flows = []
for i in range(a.flows):
    v6 = rnd.random() < a.ipv6
    proto = rnd.choice([6, 17])
    if v6:
        src = bytes(rnd.getrandbits(8) for _ in range(16)); dst = bytes(rnd.getrandbits(8) for _ in range(16))
    else:
        src = bytes([10, rnd.randrange(256), rnd.randrange(256), rnd.randrange(1, 255)]); dst = bytes([192, 168, rnd.randrange(256), rnd.randrange(1, 255)])
    flows.append((v6, proto, src, dst, rnd.randrange(1024, 65535), rnd.choice([53, 80, 443, 4791, rnd.randrange(1024, 65535)])))
# Zipf-ish flow weights
w = [1.0/(i+1)**0.9 for i in range(a.flows)]
MAC_A = bytes.fromhex('020000000001'); MAC_B = bytes.fromhex('020000000002'); MAC_C = bytes.fromhex('020000000003')
def frame(f, seq, dscp, ttl, ipid, payload, vlan=False, macs=(MAC_B, MAC_A)):
    v6, proto, src, dst, sp, dp = f
    if proto == 17:
        l4 = struct.pack('!HHHH', sp, dp, 8 + len(payload), 0) + payload
    else:
        l4 = struct.pack('!HHIIBBHHH', sp, dp, seq & 0xffffffff, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    if v6:
        ext = bytes([proto, 0, 1, 4, 0, 0, 0, 0])  # hop-by-hop with PadN
        ip = struct.pack('!IHBB', (6 << 28) | (dscp << 22), len(ext) + len(l4), 0, ttl) + src + dst + ext + l4
        et = 0x86dd
    else:
        hdr = struct.pack('!BBHHHBBH4s4s', 0x45, dscp << 2, 20 + len(l4), ipid, 0, ttl, proto, 0, src, dst)
        hdr = hdr[:10] + struct.pack('!H', csum(hdr)) + hdr[12:]
        ip = hdr + l4; et = 0x0800
    eth = macs[0] + macs[1]
    if vlan: eth += struct.pack('!HH', 0x8100, 100)
    return eth + struct.pack('!H', et) + ip
def ext_of(f, payload):
    l4 = (8 if f[1] == 17 else 20) + len(payload)
    if f[0]:
        return min(40 + 8 + l4, 48 + 32)
    return min(20 + l4, 20 + 32)
S = []  # (ts, bytes)
PK = []  # per sent packet: (ts, delay or None, flow index, DSCP at the receiver, identity's L3 extent, DSCP sent)
FI = {id(f): i for i, f in enumerate(flows)}
R = []
truth = {}
gap = 1e9 / a.rate
t = float(T0)
lost_run = 0
for i in range(a.n):
    t += rnd.expovariate(1.0) * gap
    f = rnd.choices(flows, weights=w)[0] if i % 64 else flows[rnd.randrange(len(flows))]
    dscp = 16 if rnd.random() < a.cs2 else rnd.choice([0, 0, 0, 46, 10])
    ipid = rnd.getrandbits(16)
    payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(16, 90)))
    b = frame(f, i, dscp, 64, ipid, payload)
    copies = [b]
    if rnd.random() < a.identical:
        copies.append(b)  # the source sends the very same frame twice
    for c in copies:
        ts = int(t); t += 50
        S.append((ts, c))
        iv = ts // 1_000_000_000
        tr = truth.setdefault(iv, {'sent': 0, 'lost': 0, 'd': []})
        tr['sent'] += 1
        if lost_run > 0:
            lost = True; lost_run -= 1
        elif rnd.random() < a.loss / a.burst:
            lost = True; lost_run = a.burst - 1
        else:
            lost = False
        if lost or a.disjoint:
            tr['lost'] += 1
            PK.append((ts, None, FI[id(f)], dscp, ext_of(f, payload), dscp))
            continue
        d = delay()
        if rnd.random() < a.reorder: d += a.reorder_ns
        rd = dscp
        if dscp == 16 and rnd.random() < a.remark: rd = 0
        rb = frame(f, i, rd, 63 if a.routed else 64, ipid, payload, vlan=a.vlanpush, macs=((MAC_C, MAC_A) if a.routed else (MAC_B, MAC_A))) if (rd != dscp or a.routed or a.vlanpush) else c
        rts = ts + d + a.clock
        R.append((int(rts), rb))
        d = int(rts) - ts - a.clock
        tr['d'].append(d)
        PK.append((ts, d, FI[id(f)], rd, ext_of(f, payload), dscp))
        if rnd.random() < a.dup:
            R.append((int(rts + rnd.uniform(100, 5000)), rb))
if a.disjoint:
    for (ts, c) in list(S):
        R.append((ts + 30000, c[:26] + bytes([c[26] ^ 0x5a]) + c[27:]))  # a header byte: another packet
# link-local at sender only (LLDP / STP)
for j in range(a.linklocal):
    ts = T0 + int(j * (a.n * gap) / max(1, a.linklocal))
    if j % 2:
        b = bytes.fromhex('0180c200000e') + MAC_A + b'\x88\xcc' + bytes(rnd.getrandbits(8) for _ in range(46))
    else:
        b = bytes.fromhex('0180c2000000') + MAC_A + struct.pack('!H', 39) + b'\x42\x42\x03' + bytes(rnd.getrandbits(8) for _ in range(36))
    S.append((ts, b))
for j in range(a.rxonly):
    ts = T0 + int(j * (a.n * gap) / max(1, a.rxonly)) + 777
    b = bytes.fromhex('ffffffffffff') + MAC_C + b'\x08\x06' + bytes([0,1,8,0,6,4,0,1]) + MAC_C + bytes([10,0,0,1]) + bytes(6) + bytes([10,0,0,rnd.randrange(256)]) + bytes(18)
    R.append((ts, b))
S.sort(key=lambda x: x[0]); R.sort(key=lambda x: x[0])
def write(path, pk):
    with open(path, 'wb') as fo:
        fo.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, a.snap or 65535, 1))
        for ts, b in pk:
            cap = b[:a.snap] if a.snap else b
            fo.write(struct.pack('<IIII', ts // 1_000_000_000, ts % 1_000_000_000, len(cap), len(b)))
            fo.write(cap)
write(a.out + '/S.pcap', S); write(a.out + '/R.pcap', R)
out = {}
for iv, tr in truth.items():
    d = tr['d']; n = len(d)
    m = sum(d)/n if n else None
    sd = math.sqrt(sum((x-m)**2 for x in d)/n) if n > 1 else None
    out[str(iv)] = {'sent': tr['sent'], 'lost': tr['lost'], 'mean_ns': m, 'sd_ns': sd}
json.dump(out, open(a.out + '/truth.json', 'w'), indent=1)
import ipaddress
def fname(f):
    v6, proto, src, dst, sp, dp = f
    if v6:
        return '%d [%s]:%d>[%s]:%d' % (proto, ipaddress.IPv6Address(src), sp, ipaddress.IPv6Address(dst), dp)
    return '%d %s:%d>%s:%d' % (proto, ipaddress.IPv4Address(src), sp, ipaddress.IPv4Address(dst), dp)
json.dump({'flows': [fname(f) for f in flows], 'pk': PK, 'clock': a.clock}, open(a.out + '/pk.json', 'w'))
print('wrote', len(S), len(R))
