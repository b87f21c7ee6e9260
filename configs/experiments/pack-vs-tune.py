#!/usr/bin/env python3
"""How a pack's bench times compare with the tune's times of the kernels it dispatches to.

The H200's fifth run found bf16 packs 4-8% slower in `bench` than the best kernel `tune` had
timed on each instance, while the dispatch trees lose only 0.5-1.2%. This splits that gap per
op: for every instance it follows the pack's tree to the kernel the pack launches, then sets
the bench's time beside the time the pack's own log gave that kernel (recorded in the pack)
and, with --retimed, beside a fresh timing of the same kernels (`tune --kernels` on the list
that --kernel-list writes). A bench/retimed ratio near 1 puts the gap in the tune's choice of
minimum over noisy repeats; a ratio well above 1 puts it in how bench and tune time a launch.

  dietcode inspect PACK.so --json > pack.json
  pack-vs-tune.py pack.json --kernel-list kernels.json     # the kernels, for tune --kernels
  pack-vs-tune.py pack.json --bench BENCH.csv [--retimed LOG.jsonl[.gz]] [--arch sm_90a]
"""
import argparse
import collections
import csv
import gzip
import json
import math
import statistics
import sys


def leaf_kernel(node, values):
    while "kernel" not in node:
        node = node["left"] if values[node["var"]] <= node["le"] else node["right"]
    return node["kernel"]


def dispatcher(op, arch):
    if "dispatchers" not in op:  # a pack for one arch has one tree
        return op["tree"]["root"]
    for d in op["dispatchers"]:
        if arch in d["archs"]:
            return d["tree"]["root"]
    sys.exit(f"pack-vs-tune: op {op['name']} has no dispatcher for {arch}")


def shape_key(values):
    return ",".join(f"{k}={v}" for k, v in sorted(values.items()))


def parse_shape(text):
    return {k.strip(): int(v) for k, v in (p.split("=") for p in text.split(","))}


def retimed_latencies(path):
    """{(op, shape key, template): [(params, the minimum of the log's times)]}"""
    opener = gzip.open if path.endswith(".gz") else open
    best = {}
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") != "measurement" or r.get("status") != "ok":
                continue
            p = r["mk"]["params"]
            k = (r["op"], shape_key(r["shape"]), r["mk"]["template"],
                 tuple(sorted(p.items())))
            best[k] = min(best.get(k, math.inf), r["latency_us"])
    out = collections.defaultdict(list)
    for (op, shape, template, params), t in best.items():
        out[(op, shape, template)].append((dict(params), t))
    return out


def retimed_latency(retimed, op, shape, kernel):
    """The retimed time of a pack's kernel. A pack built from a log older than a template's
    newest tunable names fewer params than the retiming, which fills that tunable with its
    default (run 6: M_TILES=1): match on the params the pack names."""
    times = [t for params, t in retimed.get((op, shape, kernel["template"]), [])
             if all(params.get(k) == v for k, v in kernel["params"].items())]
    return min(times) if times else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pack_json", help="dietcode inspect PACK.so --json")
    ap.add_argument("--kernel-list", help="write the pack's kernels as a tune --kernels list")
    ap.add_argument("--bench", help="dietcode bench --csv of this pack")
    ap.add_argument("--retimed", help="a log of tune --kernels on the --kernel-list")
    ap.add_argument("--arch", default="sm_90a", help="the dispatcher the GPU runs (sm_90a on Hopper)")
    a = ap.parse_args()
    try:
        return run(a)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"pack-vs-tune: {e}")


def run(a):
    pack = json.load(open(a.pack_json))
    if a.kernel_list:
        seen, out = set(), []
        for op in pack["ops"]:
            for k in op["kernels"]:
                if k["key"] not in seen:
                    seen.add(k["key"])
                    out.append({"template": k["template"], "params": k["params"]})
        json.dump(out, open(a.kernel_list, "w"), indent=1)
        print(f"{a.kernel_list}: {len(out)} kernels")
    if not a.bench:
        return
    bench = {(r["op"], shape_key(parse_shape(r["shape"]))): float(r["pack_us"])
             for r in csv.DictReader(open(a.bench))}
    retimed = retimed_latencies(a.retimed) if a.retimed else {}
    print(f"{'op':6} {'instances':>9} {'bench/log':>10} {'bench/retimed':>14} {'retimed/log':>12}"
          f" {'log chosen/best':>16}  bench - retimed, median us by template")
    for op in pack["ops"]:
        root = dispatcher(op, a.arch)
        inst = op["instances"]
        r_log, r_re, re_log, chosen_best = [], [], [], []
        offsets = collections.defaultdict(list)  # template (+ split-K) -> bench - retimed, us
        for i, vals in enumerate(inst["values"]):
            values = dict(zip(op["vars"], vals))
            b = bench.get((op["name"], shape_key(values)))
            if b is None:
                continue
            k = leaf_kernel(root, values)
            logged = inst["latency_us"][i][k]
            r_log.append(b / logged)
            chosen_best.append(logged / inst["best_us"][i])
            t = retimed_latency(retimed, op["name"], shape_key(values), op["kernels"][k])
            if t:
                r_re.append(b / t)
                re_log.append(t / logged)
                kernel = op["kernels"][k]
                split = "+splitK" if kernel["params"].get("SPLITK", 1) > 1 else ""
                offsets[kernel["template"] + split].append(b - t)
        print(f"{op['name']:6} {len(r_log):9d} {geomean(r_log):10.3f} {geomean(r_re):14.3f}"
              f" {geomean(re_log):12.3f} {geomean(chosen_best):16.3f}  "
              + ", ".join(f"{t} {statistics.median(d):+.2f} ({len(d)})"
                          for t, d in sorted(offsets.items())))


if __name__ == "__main__":
    main()
