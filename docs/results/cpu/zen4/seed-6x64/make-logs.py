# The logs of packs A and B: n's log (configs/tuned/cpu-epyc-zen4-2core/bert_dense_cpu_geomean3)
# with its fc2 records replaced by one listed run (fc2-listed.jsonl.gz: n's six fc2 kernels and
# the two 6 x 64 BLIS kernels, timed together), B without the 6 x 64 kernels' records.
#   python3 make-logs.py N_LOG.jsonl fc2-listed.jsonl
import json, sys
listed = json.load(open('fc2-listed.json'))
six = {json.dumps(k['params'], sort_keys=True) for k in listed[6:]}
base = [l for l in open(sys.argv[1]) if json.loads(l).get('op') != 'fc2']
L = open(sys.argv[2]).readlines()
def is_six(line):
    r = json.loads(line)
    return r.get('kind') == 'measurement' and json.dumps(r['mk']['params'], sort_keys=True) in six
open('A.jsonl', 'w').writelines(base + L)
open('B.jsonl', 'w').writelines(base + [l for l in L if not is_six(l)])
