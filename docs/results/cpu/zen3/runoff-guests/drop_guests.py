#!/usr/bin/env python3
"""The guests' runoff records taken out of a tuning log: writes the log as a runoff without
guests would have left it, and prints each instance a guest won, by how much the runoff had
it ahead of the op's own best finalist.

A pair is a guest when its kernel was not among the instance's finalists: the op's 4 fastest
ordinary times within 25% of the best (the runoff's defaults; the log has no earlier runoff).
Usage: drop_guests.py LOG.jsonl OUT.jsonl"""
import collections, json, sys

recs = [json.loads(l) for l in open(sys.argv[1])]
def key(r): return r['mk']['template'] + ':' + json.dumps(r['mk']['params'], sort_keys=True)
ordinary = collections.defaultdict(dict)  # (op, T) -> kernel -> first ordinary time
for r in recs:
    if r.get('kind') == 'measurement' and r.get('status') == 'ok' and not r.get('runoff'):
        ordinary[(r['op'], r['shape']['T'])].setdefault(key(r), r['latency_us'])
finalists = {}
for inst, times in ordinary.items():
    ranked = sorted(times.items(), key=lambda kv: kv[1])
    finalists[inst] = {k for k, t in ranked[:4] if t <= ranked[0][1] * 1.25}
kept, dropped, runoff = [], collections.Counter(), collections.defaultdict(list)
for r in recs:
    if r.get('kind') == 'measurement' and r.get('runoff'):
        inst = (r['op'], r['shape']['T'])
        own = key(r) in finalists[inst]
        runoff[inst].append((r['latency_us'], own))
        if not own:
            dropped[r['op']] += 1
            continue
    kept.append(r)
with open(sys.argv[2], 'w') as f:
    for r in kept: f.write(json.dumps(r) + '\n')
print('guest pairs dropped:', dict(dropped))
for inst, times in sorted(runoff.items()):
    times.sort()
    if not times[0][1]:
        own = [t for t, o in times if o]
        print(f"{inst[0]:5} T={inst[1]:<4} guest {times[0][0]:9.0f} us, own best {own[0]:9.0f} us: "
              f"{own[0] / times[0][0]:.3f}")
