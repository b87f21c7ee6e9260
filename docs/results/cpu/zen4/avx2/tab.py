# The bench runs of section AT on the Zen 4 guest (held/: every contender held to x86-64-v3), one row
# per (pack, run): the report's geometric means, per op over oneDNN, the lowest instance and
# T=128's share of that run's own peak probe (the higher of its two). Then per pack and op the
# median over its runs. run in held/ or margin/: python3 ../tab.py [TAG...] (reads whole.TAG.N.txt/csv there)
import collections, csv, glob, math, re, statistics, sys
tags = sys.argv[1:] or ["v", "f"]
def geo(xs): return math.exp(sum(map(math.log, xs)) / len(xs))
per = collections.defaultdict(lambda: collections.defaultdict(list))
print("| pack | run | probes before / after | over oneDNN | over OpenBLAS | qkv / proj / fc1 / fc2 over oneDNN | lowest over oneDNN | T=128 % of peak |")
print("|---|---|---|---|---|---|---|---|")
for tag in tags:
    for path in sorted(glob.glob(f"whole.{tag}.*.txt"), key=lambda p: int(p.split(".")[2])):
        run = path.split(".")[2]
        text = open(path).read()
        m = re.findall(r"^weighted geometric-mean speedup over (\S+).*?: ([\d.]+)x", text, re.M)
        probes = re.search(r"\((\d+) before the first timing, (\d+) after the last\)", text)
        rows = list(csv.DictReader(open(path[:-4] + ".csv")))
        ops = collections.OrderedDict()
        for r in rows:
            ops.setdefault(r["op"], []).append(float(r["onednn_speedup"]))
            per[tag][(r["op"], r["shape"])].append(float(r["onednn_speedup"]))
        low = min(rows, key=lambda r: float(r["onednn_speedup"]))
        t128 = [f'{float(r["percent_of_peak"]):.0f}' for r in rows if r["shape"] == "T=128"]
        print(f"| {tag} | {run} | {probes.group(1)} / {probes.group(2)} | {m[0][1]}x | {m[1][1]}x | "
              + " / ".join(f"{geo(v):.3f}" for v in ops.values())
              + f' | {float(low["onednn_speedup"]):.2f}x ({low["op"]} {low["shape"]}) | ' + " / ".join(t128) + " |")
print()
for tag in tags:
    print(f"pack {tag}, median over its runs of the speedup over oneDNN:")
    for op in ("qkv", "proj", "fc1", "fc2"):
        vals = [(s, statistics.median(v)) for (o, s), v in per[tag].items() if o == op]
        big = [v for s, v in vals if int(s[2:]) >= 16]
        print(f"  {op}: T=1 {vals[0][1]:.2f}, T=8 {vals[1][1]:.2f}, T>=16 {geo(big):.3f} (min {min(big):.2f})")
