import re,collections,math,statistics as st,sys
cur=None; d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith('=='): cur=l[3:].strip(); v={}; continue
    m=re.match(r'(\S+\.so)\s+([\d.]+) us',l)
    if m:
        v[m.group(1).split('/')[-1]]=float(m.group(2))
        if len(v)==2:
            a,b=sorted(v)
            d[cur].append(v[b]/v[a])
for k,x in d.items():
    lg=[math.log(y) for y in x]; g=math.exp(st.mean(lg)); se=st.stdev(lg)/math.sqrt(len(lg))
    print('%-14s second/first geomean %.3f +- %.3f  (%s)'%(k,g,2*se*g,' '.join('%.2f'%y for y in x)))
