# Per listed tune (dietcode tune --ops proj --kernels ab3.json), the 16x6 kernels' time over the
# 24x4 one's on each instance from T = 24 up (the faster of its round and runoff times), as a
# geometric mean with its range: python3 rat.py listed-*.jsonl.gz
import sys,json,collections,gzip,math
for f in sys.argv[1:]:
  d=collections.defaultdict(list)
  for l in (gzip.open(f,'rt') if f.endswith('.gz') else open(f)):
    r=json.loads(l)
    if r['kind']!='measurement' or r['status']!='ok': continue
    p=r['mk']['params']; key='%dx%d-L%d'%(16 if p['MR']==6 else 24, p['MR'], p['LOOP_ORDER'])
    d[(key,r['shape']['T'])].append(r['latency_us'])
  out=[]
  for k in ['16x6-L0','16x6-L1']:
    rs=[min(d[(k,T)])/min(d[('24x4-L0',T)]) for T in range(24,129,8) if (k,T) in d and ('24x4-L0',T) in d]
    out.append('%s/24x4 geo(T>=24) %.3f [%.2f..%.2f]'%(k, math.exp(sum(map(math.log,rs))/len(rs)), min(rs), max(rs)))
  print(f, ' | '.join(out))
