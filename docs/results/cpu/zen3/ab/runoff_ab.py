import json,sys,math,collections
# each kernel's runoff time over the fastest kernel's, per (op, instance); geomean per kernel, per run
def key(mk): p=mk["params"]; return f"{mk['template'][9:14]} {p['MR']}x{p['NR']} KC={p['KC']} MC={p['MC']} NC={p['NC']}"
allr=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    t=collections.defaultdict(dict)
    for line in open(f):
        r=json.loads(line)
        if r.get('kind')!='measurement' or not r.get('runoff') or r.get('status')!='ok': continue
        t[(r['op'],r['shape']['T'])][key(r['mk'])]=r['latency_us']
    per=collections.defaultdict(lambda: collections.defaultdict(list))
    for (op,T),d in t.items():
        b=min(d.values())
        for k,v in d.items(): per[op][k].append(math.log(v/b))
    for op,d in per.items():
        for k,v in d.items(): allr[op][k].append(math.exp(sum(v)/len(v)))
for op,d in allr.items():
    print(op)
    for k,v in sorted(d.items(), key=lambda kv: sum(map(math.log,kv[1]))/len(kv[1])):
        print(f"  {k:30} "+' '.join(f'{x:.3f}' for x in v)+f"  geo {math.exp(sum(map(math.log,v))/len(v)):.3f}")
