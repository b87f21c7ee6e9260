# Paired bench runs of one pack with its adaptive choice on and off: the pack's time over the
# other run's, on the instances whose dispatcher leaf names an alternate and on the others,
# beside oneDNN's ratio between the same two runs (what the machine's phase moved).
# Usage: pair_runs.py PACK.so ON.csv OFF.csv [ON.csv OFF.csv ...]
import csv, json, math, sys, ctypes
def load(f): return {(r['op'], r['shape']): r for r in csv.DictReader(open(f))}
lib = ctypes.CDLL(sys.argv[1])
man = json.loads(ctypes.c_char_p(ctypes.cast(lib.dietcode_manifest, ctypes.CFUNCTYPE(ctypes.c_char_p))()).value)
def leaf(node, t):
    while 'kernel' not in node: node = node['left'] if t <= node['le'] else node['right']
    return node
alt = {}
for op in man['ops']:
    tree = op.get('tree') or op['dispatchers'][0]['tree']
    for t in range(1, 129):
        alt[(op['name'], 'T=%d' % t)] = 'alternate' in leaf(tree['root'], t)
pairs = [(sys.argv[i], sys.argv[i+1]) for i in range(2, len(sys.argv), 2)]
for a, b in pairs:
    A, B = load(a), load(b)
    for name, sel in (('with alternate', True), ('without', False), ('all', None)):
        ks = [k for k in A if sel is None or alt[k] == sel]
        g = math.exp(sum(math.log(float(A[k]['pack_us']) / float(B[k]['pack_us'])) for k in ks) / len(ks))
        go = math.exp(sum(math.log(float(A[k]['onednn_us']) / float(B[k]['onednn_us'])) for k in ks) / len(ks))
        print(f"{a} / {b}: {name:15} {len(ks):3} instances: pack time ratio {g:.4f}; oneDNN's {go:.4f}")
