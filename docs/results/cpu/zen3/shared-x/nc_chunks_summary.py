import re,collections,sys,math,statistics as st
cur=None; d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith('=='): cur=' '.join(l.split()[1:3]); vals={}; continue
    m=re.match(r'\./(\w+?)_(static|chunk)\.so (.*?)\s+([\d.]+) us',l)
    if m:
        vals[(m.group(3),m.group(2))]=float(m.group(4))
        if (m.group(3),'chunk') in vals and (m.group(3),'static') in vals and m.group(2)=='static':
            d[(cur,m.group(3))].append(vals[(m.group(3),'chunk')]/vals[(m.group(3),'static')])
for k,v in sorted(d.items()):
    lg=[math.log(x) for x in v]; g=math.exp(st.mean(lg)); se=st.stdev(lg)/math.sqrt(len(lg))
    print('%-12s %-46s n=%2d geomean chunk/static %.3f (+-%.3f), median %.3f'%(k[0],k[1],len(v),g,2*se*g,st.median(v)))
