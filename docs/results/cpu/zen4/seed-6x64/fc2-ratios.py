# python3 fc2-ratios.py LIST.json RUN.jsonl...: for each run, the geomean over T >= 16 of each listed
# kernel's time over the first one's, from the round's timings and from the runoff's (nan: not a finalist).
import json, sys, math, collections
ks = json.load(open(sys.argv[1]))
keys = [k['template'] + ' ' + ' '.join(f"{a}={b}" for a, b in sorted(k['params'].items())) for k in ks]
for f in sys.argv[2:]:
    t = collections.defaultdict(dict)
    for line in open(f):
        r = json.loads(line)
        if r.get('kind') != 'measurement' or r.get('status') != 'ok': continue
        key = r['mk']['template'] + ' ' + ' '.join(f"{a}={b}" for a, b in sorted(r['mk']['params'].items()))
        T = r['shape']['T']
        which = 'runoff' if r.get('runoff', 0) > 0 else 'round'
        t[(which, key)][T] = r['latency_us']
    out = []
    for which in ('round', 'runoff'):
        base = t.get((which, keys[0]), {})
        row = []
        for k in keys:
            d = t.get((which, k), {})
            common = [T for T in d if T >= 16 and T in base]
            row.append(math.exp(sum(math.log(d[T] / base[T]) for T in common) / len(common)) if common else float('nan'))
        out.append(which + ' ' + ' '.join(f"{x:.3f}" for x in row))
    print(f, ' | '.join(out))
