# Per bench run: the pack's figures over oneDNN and OpenBLAS, per op over oneDNN, and the lowest
# instance: python3 summ.py whole.n.1 whole.z.1 ...
import csv, sys, math, re
for f in sys.argv[1:]:
    txt = open(f + '.txt').read()
    one = re.search(r'over oneDNN[^:]*: ([\d.]+)x', txt).group(1)
    ob = re.search(r'over OpenBLAS[^:]*: ([\d.]+)x', txt).group(1)
    rows = list(csv.DictReader(open(f + '.csv')))
    col = [c for c in rows[0] if 'onednn' in c.lower() and ('speed' in c.lower() or 'vs' in c.lower())][0]
    ops = {}
    for r in rows: ops.setdefault(r['op'], []).append(float(r[col]))
    low = min(rows, key=lambda r: float(r[col]))
    print('%-10s %sx %sx  %s  lowest %.2fx (%s %s)' % (f, one, ob, ' / '.join('%.3f' % math.exp(sum(map(math.log, v)) / len(v)) for v in ops.values()), float(low[col]), low['op'], low['shape']))
