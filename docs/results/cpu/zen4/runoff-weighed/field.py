# The runoff's field in a CPU log: per instance, the AVX2 kernels among its finalists as the
# rounds' times choose them unweighed and weighed (AVX2 x 1.10), and among the runoff's records.
import json, collections, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = lambda r: json.dumps(r['mk'], sort_keys=True)
run = [r for r in recs if r.get('runoff')]
ordn = [r for r in recs if not r.get('runoff') and r.get('latency_us') is not None]
isv3 = lambda k: 'avx2' in json.loads(k)['template']
print('runoff records by template', dict(collections.Counter(r['mk']['template'] for r in run)))
best = collections.defaultdict(dict)
for r in ordn:
    inst = (r['op'], r['shape']['T']); k = key(r)
    best[inst][k] = min(best[inst].get(k, 1e30), r['latency_us'])
inrun = collections.defaultdict(set)
for r in run: inrun[(r['op'], r['shape']['T'])].add(key(r))
tot = collections.Counter()
for inst, d in sorted(best.items()):
    lat = sorted(d.items(), key=lambda kv: kv[1]); b = lat[0][1]
    unw = [k for k, v in lat if v <= 1.25 * b][:4]
    wl = sorted((v * (1.1 if isv3(k) else 1.0), k) for k, v in d.items()); wb = wl[0][0]
    w = [k for v, k in wl if v <= 1.25 * wb][:4]
    a = (sum(map(isv3, unw)), sum(map(isv3, w)), sum(map(isv3, inrun[inst])))
    tot.update({'unweighed': a[0], 'weighed': a[1], 'runoff': a[2], 'slots': len(inrun[inst])})
    if a[0] != a[1] or a[2]:
        print(inst, 'AVX2 finalists: unweighed', a[0], 'weighed', a[1], 'in the runoff', a[2], 'of', len(inrun[inst]))
print('AVX2 finalist places: unweighed', tot['unweighed'], 'weighed', tot['weighed'], '; AVX2 runoff records', tot['runoff'], 'of', tot['slots'])
