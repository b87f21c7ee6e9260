#!/usr/bin/env python3
"""Instruction mix of an fp32 template's K loop, from its SASS: a kernel change checked offline.

On a SIMT GEMM every instruction that is not an FFMA takes an issue slot from one, so the share
of FFMAs in the main loop bounds the fraction of the FMA peak a kernel can reach. This compiles
a template for one micro-kernel with nvcc, disassembles it with cuobjdump (both from the CUDA
toolkit; no GPU needed), finds the K loop (the backward branch whose body holds the most FFMAs)
and prints what it issues per iteration. By default it counts the interior path alone (whole
tiles, every row present: what nearly every iteration runs); --all-paths counts the loop body
as compiled, edge handling included.

  scripts/sass-mix.py WARPS_M=1 WARPS_N=4 THREADS_M=4 THREADS_N=8 TM=16 TN=8 BK=8 VEC=1 STAGES=3
  scripts/sass-mix.py --template dense_f32 --arch sm_90 --static N=768,K=3072 TM=8 TN=6 BK=16

Parameters not given keep the template's defaults. Exit 1 on bad input, 2 without the toolkit.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tool(name):
    for d in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")] + \
            os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    print(f"sass-mix: {name} not found (the CUDA toolkit's bin/, or PATH)", file=sys.stderr)
    sys.exit(2)


def functions(sass):
    """{kernel name: [(address, opcode, operands)]} from cuobjdump -sass output."""
    out, cur = {}, None
    for line in sass.splitlines():
        f = re.search(r"Function : (\S+)", line)
        if f:
            cur = out.setdefault(f.group(1), [])
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z0-9_.]+)([^;]*);", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def k_loop(instructions):
    """Opcodes of the backward branch's body with the most FFMAs."""
    best = None
    for addr, op, rest in instructions:
        t = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if not t or int(t.group(1), 16) >= addr:
            continue
        body = [o for a, o, _ in instructions if int(t.group(1), 16) <= a <= addr]
        ffma = sum(o.startswith("FFMA") for o in body)
        if ffma and (best is None or ffma > best[0]):
            best = (ffma, body)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("params", nargs="*", help="NAME=VALUE tunables (WARPS_M=1 TM=16 ...)")
    ap.add_argument("--template", default="dense_f32", help="templates/NAME.cu (default dense_f32)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--static", default="N=768,K=3072",
                    help="static extents as code generation passes them (default N=768,K=3072; '' for none)")
    ap.add_argument("--all-paths", action="store_true", help="count edge handling too")
    args = ap.parse_args()

    defines = []
    for p in args.params:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=-?[0-9]+", p):
            print(f"sass-mix: expected NAME=VALUE, got \"{p}\"", file=sys.stderr)
            return 1
        defines.append("-D" + p)
    for p in filter(None, args.static.split(",")):
        name, _, value = p.partition("=")
        if name not in ("M", "N", "K") or not value.isdigit():
            print(f"sass-mix: --static: expected M=, N= or K= with a number, got \"{p}\"",
                  file=sys.stderr)
            return 1
        defines.append(f"-DSTATIC_{name}={value}")
    if not args.all_paths:
        defines.append("-DDIETCODE_SASS_INTERIOR_ONLY")
    source = os.path.join(REPO, "templates", args.template + ".cu")
    if not os.path.isfile(source):
        print(f"sass-mix: no template {source}", file=sys.stderr)
        return 1

    nvcc, cuobjdump = tool("nvcc"), tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        built = subprocess.run([nvcc, "-cubin", f"-arch={args.arch}", "-O3", *defines,
                                "-I", os.path.join(REPO, "templates"), source, "-o", cubin],
                               capture_output=True, text=True)
        if built.returncode != 0:
            print(f"sass-mix: nvcc failed:\n{built.stderr.strip()}", file=sys.stderr)
            return 1
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    kernels = {k: v for k, v in functions(sass).items() if not k.endswith("_reduce")}
    if len(kernels) != 1:
        print(f"sass-mix: expected one main kernel, found {sorted(kernels)}", file=sys.stderr)
        return 1
    found = k_loop(next(iter(kernels.values())))
    if not found:
        print("sass-mix: no loop with FFMAs found", file=sys.stderr)
        return 1
    ffma, body = found
    mix = collections.Counter(o.split(".")[0] for o in body)
    path = "all paths" if args.all_paths else "interior path"
    print(f"{args.template} {' '.join(args.params)} ({args.arch}, {path}): K loop "
          f"{len(body)} instructions, {ffma} FFMA = {100.0 * ffma / len(body):.1f}%")
    print("  " + ", ".join(f"{k} {v}" for k, v in mix.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
