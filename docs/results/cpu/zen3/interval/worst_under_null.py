# The worst instance a pack exactly level with oneDNN everywhere would show, from one run's own
# rounds: every row's per-round times resampled (pack and oneDNN of a round together), its
# speedup divided by the row's measured one (centred at 1), the minimum over the 68 rows taken.
# Usage: python3 worst_under_null.py z3h.1.json
import json, random, statistics as st, sys
j = json.load(open(sys.argv[1]))
rows = []
for row in j['rows']:
    b = [x for x in row['baselines'] if x['name'] == 'onednn'][0]
    p, q = row['pack_runs_us'], b['runs_us']
    rows.append((p, q, st.median(q) / st.median(p)))
rng = random.Random(1)
mins = []
for _ in range(2000):
    m = 9.0
    for p, q, s0 in rows:
        idx = [rng.randrange(len(p)) for _ in p]
        m = min(m, st.median([q[i] for i in idx]) / st.median([p[i] for i in idx]) / s0)
    mins.append(m)
mins.sort()
print('%s: worst of %d instances each level at 1.0: median %.3f, p10 %.3f, p90 %.3f; '
      'below 0.90 in %.0f%% of resamples, below 0.95 in %.0f%%' %
      (sys.argv[1], len(rows), mins[1000], mins[200], mins[1800],
       100 * sum(x < 0.9 for x in mins) / 2000, 100 * sum(x < 0.95 for x in mins) / 2000))
