#!/usr/bin/env python3
"""Instruction mix of an fp32 template's K loop, from its SASS: a kernel change checked offline.

On a SIMT GEMM every instruction that is not an FFMA takes an issue slot from one, so the share
of FFMAs in the main loop bounds the fraction of the FMA peak a kernel can reach. This compiles
a template for one micro-kernel with nvcc, disassembles it with cuobjdump (both from the CUDA
toolkit; no GPU needed), finds the K loop (the backward branch whose body holds the most FFMAs)
and prints what it issues per iteration. By default it counts the interior path alone (whole
tiles, every row present: what nearly every iteration runs); --all-paths counts the loop body
as compiled, edge handling included.

It also reads each instruction's control bits (Volta and newer: the stall count the compiler
scheduled and the operand-reuse flags), because two loops with the same mix can still issue at
different rates: an FFMA whose operands do not come from the reuse cache reads the register
file, and reads that collide in a bank hold the dispatch back. --sass reads a dump made
elsewhere (a vendor library's kernel: cuobjdump -sass -fun NAME libcublasLt.so) instead of
compiling a template, so the two can be compared side by side.

  scripts/sass-mix.py WARPS_M=1 WARPS_N=4 THREADS_M=4 THREADS_N=8 TM=16 TN=8 BK=8 VEC=1 STAGES=3
  scripts/sass-mix.py --template dense_f32 --arch sm_90 --static N=768,K=3072 TM=8 TN=6 BK=16
  scripts/sass-mix.py --sass cublas.sass --function tilesize128x128x8

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
    """{kernel name: [(address, opcode, operands, control)]} from cuobjdump -sass output.

    control is the upper 64-bit word of the 128-bit instruction (the line after it), whose top
    23 bits hold the scheduling controls; None where the dump has no encodings."""
    out, cur = {}, None
    lines = sass.splitlines()
    for n, line in enumerate(lines):
        f = re.search(r"Function : (\S+)", line)
        if f:
            cur = out.setdefault(f.group(1), [])
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z0-9_.]+)([^;]*);", line)
        if m and cur is not None:
            hi = re.match(r"\s+/\* 0x([0-9a-f]{16}) \*/\s*$", lines[n + 1]) if n + 1 < len(lines) else None
            cur.append((int(m.group(1), 16), m.group(2), m.group(3),
                        int(hi.group(1), 16) if hi else None))
    return out


def stall_cycles(control):
    """Cycles the compiler scheduled before the next instruction may issue (bits 105-108)."""
    return (control >> 41) & 0xF


def reuse_flags(control):
    """Source operands this instruction leaves in the operand-reuse cache (bits 122-125)."""
    return bin((control >> 58) & 0xF).count("1")


def k_loop(instructions):
    """(FFMA count, [(opcode, control)]) of the backward branch's body with the most FFMAs."""
    best = None
    for addr, op, rest, _ in instructions:
        t = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if not t or int(t.group(1), 16) >= addr:
            continue
        body = [(o, c) for a, o, _, c in instructions if int(t.group(1), 16) <= a <= addr]
        ffma = sum(o.startswith("FFMA") for o, _ in body)
        if ffma and (best is None or ffma > best[0]):
            best = (ffma, body)
    return best


def compile_template(args):
    """SASS of one template micro-kernel, compiled here; None (after a message) on failure."""
    defines = []
    for p in args.params:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=-?[0-9]+", p):
            print(f"sass-mix: expected NAME=VALUE, got \"{p}\"", file=sys.stderr)
            return None
        defines.append("-D" + p)
    for p in filter(None, args.static.split(",")):
        name, _, value = p.partition("=")
        if name not in ("M", "N", "K") or not value.isdigit():
            print(f"sass-mix: --static: expected M=, N= or K= with a number, got \"{p}\"",
                  file=sys.stderr)
            return None
        defines.append(f"-DSTATIC_{name}={value}")
    if not args.all_paths:
        defines.append("-DDIETCODE_SASS_INTERIOR_ONLY")
    source = os.path.join(REPO, "templates", args.template + ".cu")
    if not os.path.isfile(source):
        print(f"sass-mix: no template {source}", file=sys.stderr)
        return None

    nvcc, cuobjdump = tool("nvcc"), tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        built = subprocess.run([nvcc, "-cubin", f"-arch={args.arch}", "-O3", *defines,
                                "-I", os.path.join(REPO, "templates"), source, "-o", cubin],
                               capture_output=True, text=True)
        if built.returncode != 0:
            print(f"sass-mix: nvcc failed:\n{built.stderr.strip()}", file=sys.stderr)
            return None
        return subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("params", nargs="*", help="NAME=VALUE tunables (WARPS_M=1 TM=16 ...)")
    ap.add_argument("--template", default="dense_f32", help="templates/NAME.cu (default dense_f32)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--static", default="N=768,K=3072",
                    help="static extents as code generation passes them (default N=768,K=3072; '' for none)")
    ap.add_argument("--all-paths", action="store_true", help="count edge handling too")
    ap.add_argument("--sass", metavar="FILE",
                    help="read this cuobjdump -sass dump instead of compiling a template")
    ap.add_argument("--function", metavar="TEXT",
                    help="with --sass: the kernel whose name contains TEXT (needed when the dump has several)")
    args = ap.parse_args()

    if args.sass:
        if args.params:
            print("sass-mix: --sass reads a dump: tunables have nothing to compile", file=sys.stderr)
            return 1
        try:
            with open(args.sass) as f:
                sass = f.read()
        except OSError as e:
            print(f"sass-mix: --sass: cannot read {args.sass}: {e.strerror}", file=sys.stderr)
            return 1
    else:
        sass = compile_template(args)
        if sass is None:
            return 1
    kernels = {k: v for k, v in functions(sass).items() if not k.endswith("_reduce")}
    if args.function:
        kernels = {k: v for k, v in kernels.items() if args.function in k}
    if len(kernels) != 1:
        print(f"sass-mix: expected one main kernel, found {sorted(kernels) or 'none'}"
              + ("" if args.function or not args.sass else " (choose with --function)"),
              file=sys.stderr)
        return 1
    name, instructions = next(iter(kernels.items()))
    found = k_loop(instructions)
    if not found:
        print("sass-mix: no loop with FFMAs found", file=sys.stderr)
        return 1
    ffma, body = found
    mix = collections.Counter(o.split(".")[0] for o, _ in body)
    if args.sass:
        title = f"{name} ({args.sass})"
    else:
        path = "all paths" if args.all_paths else "interior path"
        title = f"{args.template} {' '.join(args.params)} ({args.arch}, {path})"
    print(f"{title}: K loop {len(body)} instructions, {ffma} FFMA = {100.0 * ffma / len(body):.1f}%")
    print("  " + ", ".join(f"{k} {v}" for k, v in mix.most_common()))
    ffma_controls = [c for o, c in body if o.startswith("FFMA") and c is not None]
    if ffma_controls:
        slow = sum(stall_cycles(c) > 1 for c in ffma_controls)
        reuse = sum(reuse_flags(c) for c in ffma_controls) / len(ffma_controls)
        print(f"  FFMA controls: {slow} with a stall count above 1; {reuse:.2f} operand-reuse "
              f"flags per FFMA ({3 - reuse:.2f} register-file reads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
