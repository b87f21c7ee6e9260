# One listed tune's times per instance, round (O) and runoff (R), over the instance's fastest:
# python3 tab.py listed-ab3a.jsonl.gz
import sys,json,collections,gzip
d=collections.defaultdict(dict)
names={}
for f in sys.argv[1:]:
  for l in (gzip.open(f,'rt') if f.endswith('.gz') else open(f)):
    r=json.loads(l)
    if r['kind']!='measurement' or r['status']!='ok': continue
    p=r['mk']['params']; key='%dx%d-L%d-NC%d'%(16 if p['MR']==6 else 24, p['MR'], p['LOOP_ORDER'], p['NC'])
    d[(r['shape']['T'],'R' if r.get('runoff') else 'O')].setdefault(key,[]).append(r['latency_us'])
keys=sorted({k for v in d.values() for k in v})
print('T    kind '+' '.join('%14s'%k for k in keys))
for (T,kind) in sorted(d):
  v=d[(T,kind)]; b=min(min(x) for x in v.values())
  print('%3d %s '%(T,kind)+' '.join('%14s'%(' '.join('%.3f'%(y/b) for y in v[k]) if k in v else '-') for k in keys))
