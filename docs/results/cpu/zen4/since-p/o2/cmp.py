# Per kernel: geometric mean over its (op, instance) pairs of the -O2 build's time over the
# -O3 build's, each pair's time the median of the runs of that build.
import collections, gzip, json, math, os, statistics
def load(path):
    out = {}
    for line in (gzip.open(path + ".gz", "rt") if os.path.exists(path + ".gz") else open(path)):
        r = json.loads(line)
        if r.get("status") != "ok" or "latency_us" not in r: continue
        mk = r["mk"]; key = mk["template"] + ":" + ",".join(f"{k}={v}" for k, v in sorted(mk["params"].items()))
        out[(r["op"], json.dumps(r["shape"], sort_keys=True), key)] = r["latency_us"]
    return out
runs = {v: [load(f"{v}.{r}.jsonl") for r in (1, 2)] for v in ("o3", "o2")}
ratios = collections.defaultdict(list); small = collections.defaultdict(list)
for pair in runs["o3"][0]:
    t = {v: [run[pair] for run in runs[v] if pair in run] for v in runs}
    if len(t["o3"]) < 2 or len(t["o2"]) < 2: continue
    r = statistics.median(t["o2"]) / statistics.median(t["o3"])
    ratios[pair[2]].append(r)
    # within-build spread, for the noise: run 2 over run 1 of -O3
    small[pair[2]].append(t["o3"][1] / t["o3"][0])
allr = []
for k, rs in ratios.items():
    g = math.exp(sum(map(math.log, rs)) / len(rs)); n = math.exp(sum(map(math.log, small[k])) / len(small[k]))
    allr += rs
    print(f"{g:.3f}  (-O3 run2/run1 {n:.3f}, {len(rs)} pairs)  {k[:110]}")
print(f"all kernels: -O2/-O3 geomean {math.exp(sum(map(math.log, allr)) / len(allr)):.3f} over {len(allr)} pairs")
