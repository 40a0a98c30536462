#!/usr/bin/env python3
"""check.py DIR REPORT.jsonl: every line `ldafwd analyze` marked valid against
gen.py's per-packet truth (DIR/pk.json), over the line's own measured range:
loss exactly (LDA, RDA, and LDS per flow: a flow's packets as the LDS counts
them, a tunneled packet in its outer flow, an IP datagram's later fragments in
its hosts' ports-0 flow, a flow line whose datagrams had later fragments
saying so: extra.fragments "whole_and_first"), the mean within the line's mean_ci_ns (every
synopsis), a sample line's quantiles within their bounds (at least as often as
its confidence says: a bound may miss 1 − confidence of the time). EXTLIMIT=N
keeps only packets whose identity reads
at most N L3 bytes (what analyze measures under a snap length). Prints the
counts and the lines that miss; exits 1 if any does."""
import json, sys, os, bisect, math, collections
d = sys.argv[1]
pk = json.load(open(d + '/pk.json'))
flows = pk['flows']; P = sorted(pk['pk'], key=lambda x: x[0]); clock = pk['clock']
ts = [p[0] for p in P]
# Per datagram flow, the send times of its later fragments (counted in its
# hosts' ports-0 flow): a flow line over a range holding any must say it
# counts whole packets and first fragments only.
later = collections.defaultdict(list)
for p in P:
    if len(p) > 6 and p[6] is not None and p[2] != p[6]:
        later[flows[p[6]]].append(p[0])
qchecked = 0; qmiss = 0; qconf = None
bad = 0; n = 0; valid = collections.Counter(); invalid = collections.Counter(); reasons = collections.Counter()
worst = []
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get('type') != 'interval': continue
    syn = r['synopsis']
    if not r['valid']:
        invalid[syn] += 1; reasons[(syn, r.get('reason', '')[:70])] += 1; continue
    valid[syn] += 1
    ex = r.get('extra', {})
    lo = max(r['start_ns'], ex.get('measured_from_ns', 0)); hi = min(r['end_ns'], ex.get('measured_to_ns', 1 << 63) + 1)
    i, j = bisect.bisect_left(ts, lo), bisect.bisect_left(ts, hi)
    sel = P[i:j]
    mec = r['mec']
    if os.environ.get('MEC_C2') and syn != 'lds':
        # --mec c2=dscp:cs2: a class is the packets the sender classed so
        # (an LDS line is a flow's, over every class).
        sel = [p for p in sel if (p[5] == 16) == (mec == 'c2')]
    if os.environ.get('EXTLIMIT'):
        sel = [p for p in sel if p[4] <= int(os.environ['EXTLIMIT'])]
    dsel = None
    if syn == 'lds':
        # The datagrams' view: every fragment of the flow's datagrams. A
        # valid flow line's loss must be theirs too (a lost later fragment
        # is a loss of the flow, though counted in the ports-0 flow).
        if not r.get('flow', '').endswith(':0'):
            dsel = [p for p in sel if p[1] is None and len(p) > 6 and p[6] is not None and flows[p[6]] == r.get('flow')]
        sel = [p for p in sel if p[2] is not None and flows[p[2]] == r.get('flow')]
    if syn == 'lds' and not r.get('flow', '').endswith(':0'):
        lt = later.get(r.get('flow'), [])
        if bisect.bisect_left(lt, hi) > bisect.bisect_left(lt, lo) and ex.get('fragments') != 'whole_and_first':
            bad += 1
            if len(worst) < 12: worst.append((syn, mec, r.get('flow', ''), r['interval'], ['later fragments counted elsewhere, line says fragments %r' % ex.get('fragments')]))
    dl = [p[1] + clock for p in sel if p[1] is not None]
    lost = sum(1 for p in sel if p[1] is None)
    if dsel is not None:
        lost = max(lost, len(dsel))
    n += 1
    problems = []
    if syn == 'sample' and dl:
        # lost counts the sampled packets only; the quantiles hold the
        # truth of every delivered packet within lo_ns..hi_ns.
        dl.sort(); qconf = r['confidence']
        for k, q in (ex.get('quantiles') or {}).items():
            if q.get('lo_ns') is None: continue
            p = float(k[1:]) / 100
            t = dl[max(math.ceil(len(dl) * p - 1e-9), 1) - 1]
            qchecked += 1
            if not (q['lo_ns'] <= t <= q['hi_ns']):
                qmiss += 1
                if len(worst) < 12: worst.append((syn, mec, '', r['interval'], ['%s truth %d outside [%d, %d]' % (k, t, q['lo_ns'], q['hi_ns'])]))
    if syn != 'sample' and r.get('lost') is not None and r['lost'] != lost:
        problems.append('lost %s truth %d (sent %s truth %d)' % (r['lost'], lost, r.get('sent'), len(sel)))
    if dl and r.get('mean_ns') is not None:
        m = sum(dl) / len(dl)
        err = abs(r['mean_ns'] - m)
        if err > r['mean_ci_ns'] * 1.0000001 + 1:
            problems.append('mean %.1f ± %.1f truth %.1f (err/ci %.2f)' % (r['mean_ns'], r['mean_ci_ns'], m, err / max(r['mean_ci_ns'], 1e-9)))
    if problems: problems.append('sel %d lost %d' % (len(sel), lost))
    if problems:
        bad += 1
        if len(worst) < 12: worst.append((syn, mec, r.get('flow', ''), r['interval'], problems))
qallowed = 0
if qchecked:
    a = 1 - qconf
    qallowed = qchecked * a + 3 * math.sqrt(qchecked * a * (1 - a))
    print('sample quantiles: %d bounded, %d missed the truth (%.1f allowed)' % (qchecked, qmiss, qallowed))
    if qmiss > qallowed: bad += 1
print('valid', dict(valid), 'invalid', dict(invalid), 'checked', n, 'BAD', bad)
for w in worst: print('  BAD', w)
for k, v in reasons.most_common(6): print('  invalid', v, k)
sys.exit(1 if bad else 0)
