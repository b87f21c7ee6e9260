import csv,sys,math
def load(f): return {(r['op'],r['shape']):r for r in csv.DictReader(open(f))}
runs=sys.argv[1:]
A=[load('whole.a.%s.csv'%r) for r in runs]; B=[load('whole.b.%s.csv'%r) for r in runs]
print('%-5s %-6s %s'%('op','shape','  '.join('b/a(pack) b/a(vs onednn) r%s'%r for r in runs)))
for k in A[0]:
    row=[]
    for a,b in zip(A,B):
        row.append('%.3f %.3f'%(float(b[k]['pack_us'])/float(a[k]['pack_us']), float(b[k]['onednn_speedup'])/float(a[k]['onednn_speedup'])))
    print('%-5s %-6s %s'%(k[0],k[1],'   '.join(row)))
