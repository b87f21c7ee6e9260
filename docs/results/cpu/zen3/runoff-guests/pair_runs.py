#!/usr/bin/env python3
"""Pairs bench runs of two packs (G: the tune with runoff guests, H: AG's tune without):
per op, the geometric mean of the pack's time G/H, raw and normalised by oneDNN's time in
the same run (which removes the guest machine's phase between the two runs)."""
import csv, math, sys, collections
def load(p):
    return {(r['op'], r['shape']): r for r in csv.DictReader(open(p))}
runs = sys.argv[1:]  # g1 h1 g2 h2 ...
pairs = [(load(runs[i]), load(runs[i+1])) for i in range(0, len(runs), 2)]
def gm(xs): return math.exp(sum(map(math.log, xs)) / len(xs))
ops = collections.OrderedDict()
for k in pairs[0][0]: ops.setdefault(k[0], []).append(k)
print(f"{'op':5} {'G/H pack time':>22} {'G/H, each over oneDNN':>26}   (one figure per pair of runs)")
allraw = [[] for _ in pairs]; allnorm = [[] for _ in pairs]
for op, keys in ops.items():
    raw = []; norm = []
    for n, (g, h) in enumerate(pairs):
        r = [float(g[k]['pack_us']) / float(h[k]['pack_us']) for k in keys]
        q = [(float(g[k]['pack_us']) / float(g[k]['onednn_us'])) /
             (float(h[k]['pack_us']) / float(h[k]['onednn_us'])) for k in keys]
        raw.append(gm(r)); norm.append(gm(q)); allraw[n] += r; allnorm[n] += q
    print(f"{op:5} {' '.join(f'{x:.3f}' for x in raw):>22} {' '.join(f'{x:.3f}' for x in norm):>26}")
print(f"{'all':5} {' '.join(f'{gm(x):.3f}' for x in allraw):>22} {' '.join(f'{gm(x):.3f}' for x in allnorm):>26}")
if len(sys.argv) > 1 and '--per-instance' in sys.argv: pass
