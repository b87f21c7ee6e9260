# The W-broadcast kernels of a tuning log with SHARE_X = 1 (and THREADS_M = 0, which it
# takes), every other record as it is: the same choices, X shared by the workers.
import gzip, json, sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
with gzip.open(src, 'rt') as f, gzip.open(dst, 'wt') as g:
    for line in f:
        r = json.loads(line)
        mk = r.get('mk')
        if mk and mk.get('template', '').endswith('wbcast_f32') and mk['params'].get('WORKERS', 0) != 1:
            mk['params']['SHARE_X'] = 1
            mk['params']['THREADS_M'] = 0
            n += 1
        g.write(json.dumps(r, sort_keys=True) + '\n')
print(n, 'records changed', file=sys.stderr)
