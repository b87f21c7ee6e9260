import re,collections,sys,math,statistics as st
cur=None; d=collections.defaultdict(list); blocks=[]
for l in open(sys.argv[1]):
    if l.startswith('=='): cur=' '.join(l.split()[1:3]); vals={}; blocks.append((cur,vals)); continue
    if l.startswith('oneDNN'): vals['oneDNN']=float(l.split()[2]); continue
    m=re.search(r'\.so (\S+) (.*?)\s+([\d.]+) us',l)
    if m: vals[(m.group(1),m.group(2))]=float(m.group(3))
def gm(v):
    lg=[math.log(x) for x in v]; g=math.exp(st.mean(lg)); se=st.stdev(lg)/math.sqrt(len(lg)) if len(lg)>1 else 0
    return g,2*se*g
for cur,vals in blocks:
    for k,v in vals.items():
        if k=='oneDNN': continue
        d[(cur,'%s %s / oneDNN'%k)].append(v/vals['oneDNN'])
        other=('wb' if k[0]=='wbS' else 'wbS', k[1])
        if k[0]=='wbS' and other in vals: d[(cur,'wbS/wb %s'%k[1])].append(v/vals[other])
for k,v in sorted(d.items()):
    g,e=gm(v); print('%-10s %-52s n=%2d geomean %.3f (+-%.3f)'%(k[0],k[1],len(v),g,e))
