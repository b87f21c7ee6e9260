# The share of each op's weighted instances whose pack kernel is within 5% of the best time the
# log settles for the instance (latest round time, the latest runoff's finalists by their runoff
# times, the others scaled by the finalists' median ratio, as build reads it), from `inspect`.
# python3 regret.py LOG.jsonl.gz inspect-PACK.txt
import sys, json, gzip, re, collections, statistics as st
ordn = collections.defaultdict(dict); run = collections.defaultdict(dict); runno = collections.defaultdict(int)
def key(mk): return mk['template'] + ':' + ','.join('%s=%s' % (k, v) for k, v in sorted(mk['params'].items()))
for l in gzip.open(sys.argv[1], 'rt'):
    r = json.loads(l)
    if r['kind'] != 'measurement' or r['status'] != 'ok': continue
    I = (r['op'], r['shape']['T']); k = key(r['mk'])
    if r.get('runoff'):
        if r['runoff'] > runno[I]: runno[I] = r['runoff']; run[I] = {}
        if r['runoff'] == runno[I]: run[I][k] = r['latency_us']
    else: ordn[I][k] = r['latency_us']
kernels = {}; tree = {}
op = None
lines = open(sys.argv[2]).read().splitlines()
for l in lines:
    m = re.match(r'op (\w+):', l)
    if m: op = m.group(1); kernels[op] = []; continue
    m = re.match(r'\s+(\d+)\s+(x86\S+)\s', l)
    if m and op: kernels[op].append(m.group(2))
# the dispatch: rebuild from the if/else lines
def parse(op):
    body = []; on = False
    for l in lines:
        if l.startswith('op ' + op + ':'): on = True; continue
        if on and l.startswith('op '): break
        if on and (l.strip().startswith('if T') or l.strip() == 'else:' or l.strip().startswith('kernel ')): body.append(l)
    pos = [0]
    def node():
        l = body[pos[0]].strip(); pos[0] += 1
        if l.startswith('kernel'): k = int(l.split()[1]); return lambda T: k
        t = int(l.split('<=')[1].strip(' :')); a = node(); pos[0] += 1; b = node()
        return lambda T: a(T) if T <= t else b(T)
    return node()
for op in kernels:
    sel = parse(op); within = 0; n = 0; worst = []
    for T in sorted(t for (o, t) in ordn if o == op):
        I = (op, T); o = dict(ordn[I])
        rat = [run[I][k] / o[k] for k in run[I] if k in o]
        sc = st.median(rat) if rat else 1.0
        settled = {k: (run[I][k] if k in run[I] else v * sc) for k, v in o.items()}
        settled.update(run[I])
        best = min(settled.values()); mine = settled.get(kernels[op][sel(T)])
        r = mine / best - 1; n += 1; within += r <= 0.05; worst.append((r, T))
    worst.sort(reverse=True)
    print('%-5s within 5%% on %d of %d instances; worst %s' % (op, within, n, ', '.join('T=%d %+.1f%%' % (T, 100 * r) for r, T in worst[:3])))
