#!/usr/bin/env python3
"""G (runoff with guests) against G0 (the same log, the guests' runoff records removed): the
instances where the two packs' kernels differ, pack time over oneDNN's in the same run, G/G0
per pair of runs; and the whole workload."""
import csv, math, sys, re
def load(p): return {(r['op'], r['shape']): r for r in csv.DictReader(open(p))}
def kernels(p):
    out = {}; op = None
    for line in open(p):
        m = re.match(r'^(\w+): ', line)
        if m: op = m.group(1)
        m = re.match(r'^\s+(T=\d+)\s+\S+\s+(x86\S+)', line)
        if m and op: out[(op, m.group(1))] = m.group(2)
    return out
kg, k0 = kernels(sys.argv[1]), kernels(sys.argv[2])
runs = sys.argv[3:]  # g0.1 g.1 g0.2 g.2
pairs = [(load(runs[i + 1]), load(runs[i])) for i in range(0, len(runs), 2)]
def gm(x): return math.exp(sum(map(math.log, x)) / len(x))
changed = [k for k in pairs[0][0] if kg.get(k) != k0.get(k)]
print(f"{len(changed)} instances with a different kernel")
rows = []
for k in changed:
    q = [(float(g[k]['pack_us']) / float(g[k]['onednn_us'])) / (float(h[k]['pack_us']) / float(h[k]['onednn_us'])) for g, h in pairs]
    print(f"  {k[0]:5} {k[1]:6} " + " ".join(f"{x:.3f}" for x in q))
    rows.append(q)
def norm(g, h, k):
    return (float(g[k]['pack_us']) / float(g[k]['onednn_us'])) / (float(h[k]['pack_us']) / float(h[k]['onednn_us']))
for n, (g, h) in enumerate(pairs):
    print(f"pair {n+1}: changed instances G/G0 {gm([r[n] for r in rows]):.3f}; "
          f"all 68 instances {gm([norm(g, h, k) for k in g]):.3f}")
