#!/usr/bin/env python3
"""Use a dietcode kernel pack from Python with ctypes.

    python3 run_pack.py libbert_dense.so [OP] [VAR=VALUE ...]      e.g.  ... qkv T=37

Loads the pack, prints its manifest summary and the dispatcher's choice, and runs the op: a CPU
pack's on host buffers (ctypes arrays, checked against plain Python), a GPU pack's, when
PyTorch and a GPU are present, on CUDA tensors (their data_ptr(), on PyTorch's current stream),
checked against PyTorch. Exit status: 0 ok, 1 mismatch or error, 77 no GPU.

The Pack class is the part to copy into a program: a pack needs nothing but ctypes.
"""
import ctypes
import json
import math
import re
import sys

DIETCODE_ERRORS = {1: "INVALID_ARGUMENT", 2: "UNKNOWN_OP", 3: "NO_DEVICE",
                   4: "ARCH_MISMATCH", 5: "CUDA"}


class PackError(RuntimeError):
    def __init__(self, code, message):
        super().__init__(f"DIETCODE_ERR_{DIETCODE_ERRORS.get(code, code)}: {message}")
        self.code = code


class Pack:
    """A dietcode kernel pack loaded with ctypes.

    ABI versions only add functions, so a program checks `abi_version >= N` for the newest
    function it calls, never `==`: select and launch are in every version, the thread-pool
    calls since version 3."""

    def __init__(self, path):
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.dietcode_abi_version.restype = ctypes.c_int
        lib.dietcode_manifest.restype = ctypes.c_char_p
        lib.dietcode_last_error.restype = ctypes.c_char_p
        lib.dietcode_select.restype = ctypes.c_int
        lib.dietcode_select.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64),
                                        ctypes.c_int]
        lib.dietcode_launch.restype = ctypes.c_int
        lib.dietcode_launch.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                        ctypes.c_int, ctypes.c_void_p]
        self.lib = lib
        self.abi_version = lib.dietcode_abi_version()
        if self.abi_version >= 3:
            lib.dietcode_set_num_threads.restype = ctypes.c_int
            lib.dietcode_set_num_threads.argtypes = [ctypes.c_int]
            lib.dietcode_num_threads.restype = ctypes.c_int
        self.manifest = json.loads(lib.dietcode_manifest().decode())
        self.ops = {op["name"]: op for op in self.manifest["ops"]}
        # "cpu" or "cuda"; a pack older than ABI 3 is a GPU pack and does not say.
        self.target = self.manifest.get("target", "cuda")

    def _error(self, code):
        return PackError(code, self.lib.dietcode_last_error().decode())

    def select(self, op, values):
        """The kernel id the dispatcher picks for these shape values (in the op's var order)."""
        v = (ctypes.c_int64 * max(len(values), 1))(*values)
        k = self.lib.dietcode_select(op.encode(), v, len(values))
        if k < 0:
            raise self._error(-k)
        return k

    def set_num_threads(self, n):
        """A CPU pack's thread pool size (0: every core); a GPU pack ignores it. ABI >= 3."""
        if self.abi_version < 3:
            return
        status = self.lib.dietcode_set_num_threads(n)
        if status:
            raise self._error(status)

    def launch(self, op, pointers, values, stream=0):
        """Runs op on device pointers (ints, e.g. tensor.data_ptr()) in argument order; for a
        CPU pack, host pointers and no stream."""
        args = (ctypes.c_void_p * len(pointers))(*pointers)
        v = (ctypes.c_int64 * max(len(values), 1))(*values)
        status = self.lib.dietcode_launch(op.encode(), args, len(pointers), v, len(values),
                                          ctypes.c_void_p(stream or None))
        if status:
            raise self._error(status)


def evaluate(expr, values):
    """A dimension expression of the manifest ("16*T", "B*T + 1") at these values."""
    if not re.fullmatch(r"[\w\s*+-]+", expr):
        raise ValueError(f"unexpected dimension expression {expr!r}")
    return int(eval(expr, {"__builtins__": {}}, dict(values)))


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 1
    pack = Pack(argv[1])
    m = pack.manifest
    rest = argv[2:]
    name = rest.pop(0) if rest and "=" not in rest[0] else m["ops"][0]["name"]
    if name not in pack.ops:
        print(f"the pack has no op {name} (it has {', '.join(pack.ops)})", file=sys.stderr)
        return 1
    op = pack.ops[name]
    ranges = {v["name"]: (v["min"], v["max"]) for v in m["shape_vars"]}
    given = dict(item.split("=", 1) for item in rest)
    values = {v: int(given.get(v, sum(ranges[v]) // 2)) for v in op["vars"]}
    print(f"pack {m['name']} (dietcode {m['tool_version']}, {', '.join(m['archs'])}; "
          f"{m['choices']})")
    kernel = pack.select(name, list(values.values()))
    shape = " ".join(f"{k}={v}" for k, v in values.items())
    print(f"op {name} ({op['op']} {op['dtype']}, epilogue {op['epilogue']}) at {shape}: "
          f"kernel {kernel}, {op['kernels'][kernel]['key']}")

    if pack.target == "cpu":
        return run_on_host(pack, name, op, values)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("PyTorch is not installed: stopping here. To launch, pass device pointers "
              "(tensor.data_ptr()) and a stream (torch.cuda.current_stream().cuda_stream) to "
              "Pack.launch.")
        return 0
    if not torch.cuda.is_available():
        print("no GPU: PyTorch sees no CUDA device; the manifest and dispatcher above need "
              "none, launching does")
        return 77
    if op["op"] not in ("dense", "batch_matmul"):
        print(f"this example checks dense and batch_matmul ops, not {op['op']}")
        return 0

    dims = {d: evaluate(e, values) for d, e in op["dims"].items()}
    dtype = {"float32": torch.float32, "float16": torch.float16,
             "bfloat16": torch.bfloat16}[op["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(0)
    rand = lambda *shape: torch.rand(*shape, generator=gen, device="cuda").mul_(2).sub_(1).to(dtype)
    M, N, K = dims["M"], dims["N"], dims["K"]
    if op["op"] == "dense":
        a, b = rand(M, K), rand(N, K)
        want = a.float() @ b.float().T
        out = torch.empty(M, N, device="cuda", dtype=dtype)
    else:
        B = dims["B"]
        a = rand(B, K, M) if op.get("transpose_a") else rand(B, M, K)
        b = rand(B, N, K) if op.get("transpose_b") else rand(B, K, N)
        at = a.float().transpose(1, 2) if op.get("transpose_a") else a.float()
        bt = b.float().transpose(1, 2) if op.get("transpose_b") else b.float()
        want = at @ bt
        out = torch.empty(B, M, N, device="cuda", dtype=dtype)
    pointers = [a.data_ptr(), b.data_ptr()]
    if "bias" in op["args"]:
        bias = rand(N)
        pointers.append(bias.data_ptr())
        want = want + bias.float()
    if "relu" in op["epilogue"]:
        want = F.relu(want)
    if "gelu" in op["epilogue"]:
        want = F.gelu(want, approximate="tanh")
    pointers.append(out.data_ptr())
    pack.launch(name, pointers, list(values.values()), torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    error = (out.float() - want).abs().max().item()
    scale = want.abs().max().item() or 1.0
    tolerance = (1e-4 if dtype == torch.float32 else 2e-2) * scale
    ok = error <= tolerance
    print(f"{'OK' if ok else 'FAILED'}: max |error| {error:.3g} (tolerance {tolerance:.3g})")
    return 0 if ok else 1


def run_on_host(pack, name, op, values):
    """A CPU pack: ctypes float arrays in, the same out, checked against plain Python."""
    if op["op"] not in ("dense", "batch_matmul") or op["dtype"] != "float32":
        print(f"this example checks float32 dense and batch_matmul ops, not {op['op']}")
        return 0
    dims = {d: evaluate(e, values) for d, e in op["dims"].items()}
    B, M, N, K = dims.get("B", 1), dims["M"], dims["N"], dims["K"]
    seed = [12345]

    def rand(count):
        out = (ctypes.c_float * count)()
        for i in range(count):
            seed[0] = (seed[0] * 1664525 + 1013904223) % 2**32
            out[i] = ((seed[0] >> 8) & 0xFFFF) / 32768.0 - 1.0
        return out

    ta, tb = op.get("transpose_a", False), op.get("transpose_b", op["op"] == "dense")
    a, b = rand(B * M * K), rand(B * N * K)
    bias = rand(N) if "bias" in op["args"] else None
    out = (ctypes.c_float * (B * M * N))()
    buffers = [a, b] + ([bias] if bias is not None else []) + [out]
    pack.launch(name, [ctypes.addressof(x) for x in buffers], list(values.values()))
    worst = 0.0
    for bi in range(B):
        for i in range(M):
            for j in range(N):
                total, size = 0.0, 0.0
                for k in range(K):
                    x = a[bi * M * K + (k * M + i if ta else i * K + k)]
                    w = b[bi * N * K + (j * K + k if tb else k * N + j)]
                    total += x * w
                    size += abs(x * w)
                v = total + (bias[j] if bias is not None else 0.0)
                if "relu" in op["epilogue"]:
                    v = max(v, 0.0)
                if "gelu" in op["epilogue"]:
                    v = 0.5 * v * (1 + math.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))
                got = out[(bi * M + i) * N + j]
                worst = max(worst, abs(got - v) / (1e-4 * (abs(v) + size / math.sqrt(K)) + 1e-30))
    ok = worst <= 1
    print(f"{'OK' if ok else 'FAILED'} on the CPU: worst error {worst:.3f} of the tolerance")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
