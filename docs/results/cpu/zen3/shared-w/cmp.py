# Per op, the geometric mean over its instances of one pack's time over another's (bench's
# pack_us), pairing the runs given: python3 cmp.py s 1 n 1 s 2 n 2 m 3 n 3 m 4 n 4
import csv, sys, math
def load(p, r): return {(x['op'], x['shape']): float(x['pack_us']) for x in csv.DictReader(open('whole.%s.%s.csv' % (p, r)))}
a = sys.argv[1:]
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
for i in range(0, len(a), 4):
    x, y = load(a[i], a[i + 1]), load(a[i + 2], a[i + 3])
    ops = {}
    for k in x: ops.setdefault(k[0], []).append(x[k] / y[k])
    print('%s.%s over %s.%s: ' % tuple(a[i:i + 4]) + '  '.join('%s %.3f' % (op, gm(v)) for op, v in ops.items()))
