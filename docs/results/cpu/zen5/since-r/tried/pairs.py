import json,collections,statistics as st,sys
recs=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
# runoff records only: those with kind measurement after offset; group by (op,T,key)
t=collections.defaultdict(list)
for r in recs:
  if r.get('kind')!='measurement' or r['status']!='ok': continue
  p=dict(r['mk']['params']); tm=r['mk']['template']
  t[(r['op'],r['shape']['T'],tm,json.dumps(p,sort_keys=True))].append(r['latency_us'])
ratios=collections.defaultdict(list)
for (op,T,tm,ps),v in t.items():
  p=json.loads(ps); sk='SHARE_X' if 'wbcast' in tm else 'SHARE_W'
  if p.get(sk)!=1: continue
  for tmo in [0,1,2,4]:
    q=dict(p); q[sk]=0; q['THREADS_M']=tmo
    o=t.get((op,T,tm,json.dumps(q,sort_keys=True)))
    if o: ratios[op].append((T, st.median(o)/st.median(v)))
for op,v in ratios.items():
  rs=[x for _,x in v]
  print(op, 'pairs',len(rs),'static/shared median %.3f'%st.median(rs), 'min %.2f max %.2f'%(min(rs),max(rs)), 'shared faster in %d'%sum(x>1 for x in rs))
