# Per-instance speedups over oneDNN of two sets of bench runs (JSON, comma-separated), and B over A.
import json,sys,math,collections
def load(f):
    d=json.load(open(f)); out={}
    for r in d['rows']:
        sp={b['name']:b['speedup'] for b in r.get('baselines',[])}
        out[(r['op'],r['shape'])]=(r['pack_us'],sp.get('onednn'),sp.get('openblas'))
    return out
a=[load(f) for f in sys.argv[1].split(',')]; b=[load(f) for f in sys.argv[2].split(',')]
def gm(xs): return math.exp(sum(map(math.log,xs))/len(xs))
print("op   T     A vs oneDNN (runs)        B vs oneDNN (runs)      B/A")
byop=collections.defaultdict(list)
for k in a[0]:
    av=[x[k][1] for x in a]; bv=[x[k][1] for x in b]
    r=gm(bv)/gm(av); byop[k[0]].append(r)
    print("%-5s %-6s %s   %s   %.3f"%(k[0],k[1]," ".join("%.2f"%x for x in av)," ".join("%.2f"%x for x in bv),r))
for op,v in byop.items(): print(op, "geomean B/A %.3f"%gm(v))
