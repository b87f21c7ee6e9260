import sys,re,statistics
rows={}
for f in sys.argv[1:]:
    d={}
    for l in open(f):
        m=re.match(r'(.*?)\s+([\d.]+) us',l)
        if m: d[m.group(1).strip()]=float(m.group(2))
    ref=d['oneDNN sgemm']
    for k,v in d.items(): rows.setdefault(k,[]).append(v/ref)
for k,v in rows.items():
    print(f"{k:45s} " + " ".join(f"{x:.3f}" for x in v) + f"   median {statistics.median(v):.3f}")
