# Per instance, pack n's time over pack o's (bench's pack_us) in each run, and per op the geometric
# mean of that ratio and of each pack's speedup over oneDNN: python3 cmp.py 1 2
import csv, sys, math
def load(f): return {(r['op'], r['shape']): r for r in csv.DictReader(open(f))}
runs = sys.argv[1:]
O = [load('whole.o.%s.csv' % r) for r in runs]; N = [load('whole.n.%s.csv' % r) for r in runs]
ops = {}
for k in O[0]:
    ratios = [float(n[k]['pack_us']) / float(o[k]['pack_us']) for o, n in zip(O, N)]
    print('%-5s %-6s %s' % (k[0], k[1], '  '.join('%.3f' % x for x in ratios)))
    ops.setdefault(k[0], []).append(ratios)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
for op, rows in ops.items():
    print('%-5s n/o per run: %s' % (op, '  '.join('%.3f' % gm([r[i] for r in rows]) for i in range(len(runs)))))
