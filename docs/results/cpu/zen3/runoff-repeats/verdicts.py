#!/usr/bin/env python3
"""How well a runoff's verdicts hold in `bench`: for each instance where packs A and B (two
logs) run different kernels, the runoff of log B timed both (when it did): its margin, A's
kernel's time over B's, against bench's, A's pack time over B's (each over oneDNN in its own
run, geometric mean over the pairs of runs). Usage:
  verdicts.py INSPECT_A INSPECT_B LOG_B.jsonl A.1.csv B.1.csv [A.2.csv B.2.csv ...]"""
import csv, json, math, re, sys
def kernels(p):
    out, op = {}, None
    for line in open(p):
        m = re.match(r'^(\w+): ', line)
        if m: op = m.group(1)
        m = re.match(r'^\s+(T=\d+)\s+\S+\s+(x86\S+)', line)
        if m and op: out[(op, m.group(1))] = m.group(2)
    return out
def key(r): return r['mk']['template'] + ':' + ','.join(f'{k}={v}' for k, v in sorted(r['mk']['params'].items()))
ka, kb = kernels(sys.argv[1]), kernels(sys.argv[2])
runoff = {}
for l in open(sys.argv[3]):
    r = json.loads(l)
    if r.get('kind') == 'measurement' and r.get('runoff') and r.get('status') == 'ok':
        runoff[(r['op'], f"T={r['shape']['T']}", key(r))] = r['latency_us']
def load(p): return {(r['op'], r['shape']): r for r in csv.DictReader(open(p))}
runs = [load(p) for p in sys.argv[4:]]
pairs = [(runs[i], runs[i + 1]) for i in range(0, len(runs), 2)]
def norm(a, b, k):
    return (float(a[k]['pack_us']) / float(a[k]['onednn_us'])) / (float(b[k]['pack_us']) / float(b[k]['onednn_us']))
xs, ys, agree = [], [], 0
for k in sorted(k for k in ka if ka[k] != kb.get(k)):
    bench = [norm(a, b, k) for a, b in pairs]
    agree += all(x < 1 for x in bench) or all(x > 1 for x in bench)
    ta, tb = runoff.get((k[0], k[1], ka[k])), runoff.get((k[0], k[1], kb[k]))
    margin = ta / tb if ta and tb else None
    print(f"{k[0]:5} {k[1]:6} bench A/B " + " ".join(f"{x:.3f}" for x in bench) +
          (f"   runoff A/B {margin:.3f}" if margin else "   (A's kernel not in B's runoff)"))
    if margin:
        xs.append(math.log(margin)); ys.append(sum(math.log(x) for x in bench) / len(bench))
n = len(xs)
def rank(v):
    order = sorted(range(len(v)), key=lambda i: v[i]); r = [0] * len(v)
    for j, i in enumerate(order): r[i] = j
    return r
def corr(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
print(f"pairs of runs agreeing in direction: {agree} of {sum(1 for k in ka if ka[k] != kb.get(k))}")
if n > 2: print(f"{n} instances both timed in B's runoff: Spearman {corr(rank(xs), rank(ys)):.3f}, Pearson (logs) {corr(xs, ys):.3f}")
