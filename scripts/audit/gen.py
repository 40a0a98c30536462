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
length, captures of different traffic (--disjoint), tunnels (GRE, VXLAN,
Geneve, MPLS; constant outer IP identification 0: a packet's flow is then the
outer packet's, none for MPLS; --plain writes the same traffic with the
inner packets as they are, no tunnel) and IPv4/IPv6 fragments (each fragment its own
packet, lost or delayed on its own; a later fragment's flow is its hosts' with
ports 0, where ldafwd's LDS counts it)."""
import struct, random, json, sys, math, argparse, zlib
p = argparse.ArgumentParser()
p.add_argument('--n', type=int, default=300000)
p.add_argument('--rate', type=float, default=100000)
p.add_argument('--delay', default='weibull:30000')  # const:N, weibull:MEANNS, pareto:MEAN, uniform:MEAN, fullqueue:N
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
p.add_argument('--gre', type=float, default=0.0)  # fraction of packets in GRE (key) over IPv4
p.add_argument('--vxlan', type=float, default=0.0)  # ... in VXLAN over IPv4
p.add_argument('--geneve', type=float, default=0.0)  # ... in Geneve (one option) over IPv6
p.add_argument('--mpls', type=float, default=0.0)  # ... behind two MPLS labels
p.add_argument('--plain', action='store_true')  # the tunnels' inner packets as they are, with no tunnel: the same traffic otherwise
p.add_argument('--frag4', type=float, default=0.0)  # fraction of IPv4 packets (not tunneled) fragmented
p.add_argument('--frag6', type=float, default=0.0)  # fraction of IPv6 packets (not tunneled) fragmented
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
    if k == 'fullqueue':
        # A tail-drop queue kept full: N ns within ±0.5 %, and 1 % of the
        # packets (those that found it briefly short) 0.5-2 ms sooner: a
        # thin tail a small sample misses.
        if rnd.random() < 0.01: return v - rnd.uniform(500_000, 2_000_000)
        return v * rnd.uniform(0.995, 1.005)
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
TUN_A4, TUN_B4 = bytes([172, 16, 0, 1]), bytes([172, 16, 0, 2])
TUN_A6, TUN_B6 = bytes.fromhex('fd000000000000000000000000000001'), bytes.fromhex('fd000000000000000000000000000002')
def ip4(proto, ipid, payload, src, dst, ttl=64, dscp=0, frag=0):
    hdr = struct.pack('!BBHHHBBH4s4s', 0x45, dscp << 2, 20 + len(payload), ipid, frag, ttl, proto, 0, src, dst)
    return hdr[:10] + struct.pack('!H', csum(hdr)) + hdr[12:] + payload
def ip6(nh, payload, src, dst, hl=64, flow=0):
    return struct.pack('!IHBB', (6 << 28) | flow, len(payload), nh, hl) + src + dst + payload
def entropy_port(fl):
    v6, proto, src, dst, sp, dp = fl
    return 49152 + (zlib.crc32(src + dst + struct.pack('!HH', sp, dp)) & 0x3fff)
def encap(kind, fl, inner_et, inner_ip, ttl, macs):
    """The tunneled frame of an inner IP packet: outer IPv4 identification
    always 0; the outer UDP source port is the endpoint's per-flow entropy."""
    eth = macs[0] + macs[1]
    sport = entropy_port(fl)
    inner_eth = MAC_B + MAC_A + struct.pack('!H', inner_et) + inner_ip
    if kind == 'gre':
        g = struct.pack('!HHI', 0x2000, inner_et, 0x1234) + inner_ip
        return eth + b'\x08\x00' + ip4(47, 0, g, TUN_A4, TUN_B4, ttl=ttl, frag=0x4000)
    if kind == 'vxlan':
        body = struct.pack('!BBHI', 0x08, 0, 0, 0x001020 << 8) + inner_eth
        u = struct.pack('!HHHH', sport, 4789, 8 + len(body), 0xbeef) + body
        return eth + b'\x08\x00' + ip4(17, 0, u, TUN_A4, TUN_B4, ttl=ttl, frag=0x4000)
    if kind == 'geneve':
        body = struct.pack('!BBHI', 0x01, 0, 0x6558, 0x001020 << 8) + bytes([1, 2, 3, 0]) + inner_eth
        u = struct.pack('!HHHH', sport, 6081, 8 + len(body), 0xbeef) + body
        return eth + b'\x86\xdd' + ip6(17, u, TUN_A6, TUN_B6, hl=ttl)
    if kind == 'mpls':
        return eth + b'\x88\x47' + struct.pack('!II', (16 << 12) | ttl, (32 << 12) | 0x100 | ttl) + inner_ip
    raise SystemExit('bad tunnel')
def tunnel_flow(kind, fl):
    """The LDS flow name of a tunneled packet: the outer packet's."""
    if kind == 'gre': return '47 172.16.0.1:0>172.16.0.2:0'
    sport = entropy_port(fl)
    if kind == 'vxlan': return '17 172.16.0.1:%d>172.16.0.2:4789' % sport
    if kind == 'geneve': return '17 [fd00::1]:%d>[fd00::2]:6081' % sport
    return None  # MPLS: not IP at L2, no flow
def l4_of(f, seq, payload):
    v6, proto, src, dst, sp, dp = f
    if proto == 17:
        return struct.pack('!HHHH', sp, dp, 8 + len(payload), 0) + payload
    return struct.pack('!HHIIBBHHH', sp, dp, seq & 0xffffffff, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
def fragments(f, seq, dscp, ttl, ipid, payload, macs, size=48):
    """A datagram cut into fragments of size bytes of L4 data (the first
    carrying the L4 header); IPv6 with a fragment header, no other."""
    v6, proto, src, dst, sp, dp = f
    l4 = l4_of(f, seq, payload)
    out = []
    for off in range(0, len(l4), size):
        part = l4[off:off + size]
        more = off + size < len(l4)
        if v6:
            fh = struct.pack('!BBHI', proto, 0, (off // 8) << 3 | int(more), ipid)
            ip = ip6(44, fh + part, src, dst, hl=ttl, flow=dscp << 22)
            et = 0x86dd
        else:
            ip = ip4(proto, ipid & 0xffff, part, src, dst, ttl=ttl, dscp=dscp, frag=(off // 8) | (0x2000 if more else 0))
            et = 0x0800
        out.append(macs[0] + macs[1] + struct.pack('!H', et) + ip)
    return out
def ext_of(f, payload):
    l4 = (8 if f[1] == 17 else 20) + len(payload)
    if f[0]:
        return min(40 + 8 + l4, 48 + 32)
    return min(20 + l4, 20 + 32)
import ipaddress
def fname(f):
    v6, proto, src, dst, sp, dp = f
    if v6:
        return '%d [%s]:%d>[%s]:%d' % (proto, ipaddress.IPv6Address(src), sp, ipaddress.IPv6Address(dst), dp)
    return '%d %s:%d>%s:%d' % (proto, ipaddress.IPv4Address(src), sp, ipaddress.IPv4Address(dst), dp)
NAMES = [fname(f) for f in flows]; NI = {n: i for i, n in enumerate(NAMES)}
def FL(name):
    """The index of a flow name in pk.json's flows (None: no flow)."""
    if name is None: return None
    if name not in NI:
        NI[name] = len(NAMES); NAMES.append(name)
    return NI[name]
S = []  # (ts, bytes)
PK = []  # per sent packet: (ts, delay or None, flow index, DSCP at the receiver, identity's L3 extent, DSCP sent, its datagram's flow index)
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
    # Tunnels and fragments: the frames as sent, each with how the
    # receiver's copy is built (routed, remarked, tagged), its flow name
    # and its identity's extent.
    # (No extra draws without these options: the other scenarios' captures
    # stay as they were.)
    u = rnd.random() if (a.gre or a.vxlan or a.geneve or a.mpls) else 1.0; kind = None
    for k, frac in (('gre', a.gre), ('vxlan', a.vxlan), ('geneve', a.geneve), ('mpls', a.mpls)):
        if u < frac:
            kind = k; break
        u -= frac
    fname_ = fname(f)
    if kind:
        v6, proto, src, dst, sp, dp = f
        inner = ip6(proto, l4_of(f, i, payload), src, dst, flow=dscp << 22) if v6 else ip4(proto, ipid, l4_of(f, i, payload), src, dst, dscp=dscp)
        iet = 0x86dd if v6 else 0x0800
        mk = lambda rd, ttl, macs, vlan, inner=inner, iet=iet, kind=kind, f=f: encap(kind, f, iet, inner, ttl, macs)
        units = [(mk, tunnel_flow(kind, f), 1000)]
        if a.plain:
            mk = lambda rd, ttl, macs, vlan, inner=inner, iet=iet: macs[0] + macs[1] + struct.pack('!H', iet) + inner
            units = [(mk, fname_, min(len(inner), 72 if v6 else 52))]
    elif (a.frag6 if f[0] else a.frag4) and rnd.random() < (a.frag6 if f[0] else a.frag4):
        payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(100, 200)))
        n = len(fragments(f, i, dscp, 64, ipid, payload, (MAC_B, MAC_A)))
        v6, proto, src, dst, sp, dp = f
        rest = fname((v6, proto, src, dst, 0, 0))
        units = [((lambda rd, ttl, macs, vlan, k=k, f=f, ipid=ipid, payload=payload: fragments(f, i, rd, ttl, ipid, payload, macs)[k]),
                  fname_ if k == 0 else rest, 1000) for k in range(n)]
    else:
        units = [((lambda rd, ttl, macs, vlan, f=f, ipid=ipid, payload=payload: frame(f, i, rd, ttl, ipid, payload, vlan=vlan, macs=macs)),
                  fname_, ext_of(f, payload))]
    # A fragment's datagram flow is the flow of its first fragment: where a
    # user counts it, and what a valid LDS line's loss must agree with.
    dgram_flow = units[0][1]
    for mk, flow_name, ext in units:
      b = mk(dscp, 64, (MAC_B, MAC_A), False)
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
              PK.append((ts, None, FL(flow_name), dscp, ext, dscp, FL(dgram_flow)))
              continue
          d = delay()
          if rnd.random() < a.reorder: d += a.reorder_ns
          rd = dscp
          if dscp == 16 and rnd.random() < a.remark: rd = 0
          rb = mk(rd, 63 if a.routed else 64, ((MAC_C, MAC_A) if a.routed else (MAC_B, MAC_A)), a.vlanpush) if (rd != dscp or a.routed or a.vlanpush) else c
          rts = ts + d + a.clock
          R.append((int(rts), rb))
          d = int(rts) - ts - a.clock
          tr['d'].append(d)
          PK.append((ts, d, FL(flow_name), rd, ext, dscp, FL(dgram_flow)))
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
json.dump({'flows': NAMES, 'pk': PK, 'clock': a.clock}, open(a.out + '/pk.json', 'w'))
print('wrote', len(S), len(R))
