# Pairs bench runs of one pack without and with --constant-weights: compare-runs.py FOLDER resnet run1 run2 run3
# reads FOLDER/PREFIX.packs.RUN.json and FOLDER/PREFIX.constant.RUN.json (dietcode bench --json).
import json,math,sys,statistics as st
folder=sys.argv[1]; pre=sys.argv[2]; runs=sys.argv[3:]
def load(m,r):
    j=json.load(open(f'{folder}/{pre}.{m}.{r}.json'))
    out={}
    for row in j['rows']:
        b={x['name']:x['us'] for x in row.get('baselines',[])}
        out[(row['op'],row['shape'])]=(row['pack_us'],b.get('onednn'),b.get('openblas'),row['weight'])
    return j,out
def wgm(pairs):  # (ratio, weight)
    tw=sum(w for _,w in pairs); return math.exp(sum(w*math.log(r) for r,w in pairs)/tw)
for r in runs:
    line=[r]
    for m in ['packs','constant']:
        _,o=load(m,r)
        d=wgm([(v[1]/v[0],v[3]) for v in o.values()]); b=wgm([(v[2]/v[0],v[3]) for v in o.values()])
        line.append(f"{m}: over oneDNN {d:.3f}x, over OpenBLAS {b:.3f}x, below 0.90x of oneDNN {sum(v[1]/v[0]<0.9 for v in o.values())}")
    print(' | '.join(line))
keys=list(load('packs',runs[0])[1].keys())
rat={};dnn_p={};dnn_c={};blas_c={}
for k in keys:
    rs=[];a=[];b=[];c=[]
    for r in runs:
        p=load('packs',r)[1][k]; q=load('constant',r)[1][k]
        rs.append(q[0]/p[0]); a.append(p[1]/p[0]); b.append(q[1]/q[0]); c.append(q[2]/q[0])
    rat[k]=st.median(rs); dnn_p[k]=st.median(a); dnn_c[k]=st.median(b); blas_c[k]=st.median(c)
def gm(v): return math.exp(sum(math.log(x) for x in v)/len(v))
if '--rows' in sys.argv[0:1] or True:
    print(f"{'op':16}{'shape':8}{'const/packs':>12}{'oneDNN, packs':>15}{'oneDNN, const':>15}")
    for k in keys:
        print(f"{k[0]:16}{k[1]:8}{rat[k]:12.3f}{dnn_p[k]:15.3f}{dnn_c[k]:15.3f}")
print('geomean of the pack time ratio (constant / packs), median over runs per instance:', round(gm(list(rat.values())),3))
ops=[]
for k in keys:
    if k[0] not in ops: ops.append(k[0])
print('per op (geomean over its instances): op, const/packs time, vs oneDNN packs -> const')
for o in ops:
    ks=[k for k in keys if k[0]==o]
    print(f"  {o:16}{gm([rat[k] for k in ks]):7.3f}{gm([dnn_p[k] for k in ks]):8.3f} ->{gm([dnn_c[k] for k in ks]):6.3f}")
