# Pack d (trees fitted with the timing noise) against pack n (every instance's best in the log)
# timed together (packs_ab.cc, 21 rounds, medians): per instance, d's time over n's, and whether
# the two packs run the same kernel there. python3 choice.py choice-ab.txt inspect-n.txt inspect-d.txt
import sys, re, math
def trees(path):
    lines = open(path).read().splitlines(); out = {}; op = None; kern = {}
    for l in lines:
        m = re.match(r'op (\w+):', l)
        if m: op = m.group(1); kern[op] = []; continue
        m = re.match(r'\s+(\d+)\s+(x86\S+)\s', l)
        if m and op: kern[op].append(m.group(2))
    for op in kern:
        body = []; on = False
        for l in lines:
            if l.startswith('op ' + op + ':'): on = True; continue
            if on and l.startswith('op '): break
            s = l.strip()
            if on and (s.startswith('if T') or s == 'else:' or s.startswith('kernel ')): body.append(s)
        pos = [0]
        def node():
            s = body[pos[0]]; pos[0] += 1
            if s.startswith('kernel'): k = kern[op][int(s.split()[1])]; return lambda T: k
            t = int(s.split('<=')[1].strip(' :')); a = node(); pos[0] += 1; b = node()
            return lambda T: a(T) if T <= t else b(T)
        out[op] = node()
    return out
n, d = trees(sys.argv[2]), trees(sys.argv[3])
cur = None; v = {}; same = []; diff = []
for l in open(sys.argv[1]):
    m = re.match(r'== (\w+) T=(\d+)', l)
    if m: cur = (m.group(1), int(m.group(2))); v = {}; continue
    m = re.match(r'(\w)/lib\w\.so\s+([\d.]+) us', l)
    if m:
        v[m.group(1)] = float(m.group(2))
        if len(v) == 2:
            op, T = cur; r = v['d'] / v['n']
            (same if n[op](T) == d[op](T) else diff).append((r, op, T))
gm = lambda x: math.exp(sum(math.log(r) for r, _, _ in x) / len(x))
print('same kernel in both: %d instances, d/n geomean %.3f, range %.3f-%.3f' % (len(same), gm(same), min(same)[0], max(same)[0]))
print('different kernels:   %d instances, d/n geomean %.3f' % (len(diff), gm(diff)))
print('  d more than 5%% slower than n on %d of them: %s' % (sum(r > 1.05 for r, _, _ in diff), ', '.join('%s T=%d %.3f' % (op, T, r) for r, op, T in sorted(diff, reverse=True) if r > 1.05)))
print('  d more than 5%% faster than n on %d of them: %s' % (sum(r < 1 / 1.05 for r, _, _ in diff), ', '.join('%s T=%d %.3f' % (op, T, r) for r, op, T in sorted(diff) if r < 1 / 1.05)))
for op in ['qkv', 'proj', 'fc1', 'fc2']:
    x = [t for t in diff if t[1] == op]
    if x: print('  %-4s %s' % (op, ' '.join('T%d:%.2f' % (T, r) for r, _, T in sorted(x, key=lambda t: t[2]))))
