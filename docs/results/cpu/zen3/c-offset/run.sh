#!/bin/bash
# The C-offset A/B of docs/results/cpu/README.md, AE: builds c_offset_ab.cc against this tree's
# templates and those of 598e22f (namespace renamed dc_x86_old), then runs it 3 times on one
# thread with warm caches and 3 times on two threads with caches evicted, C 4 floats (16 bytes)
# past a page in the OFFSET rows. Run with nothing else on the cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
tmp=$(mktemp -d)
mkdir -p "$tmp/old/x86"
for f in "$root"/templates/x86/*.h; do
  git -C "$root" show "598e22f:templates/x86/$(basename "$f")" > "$tmp/old/x86/$(basename "$f")"
done
cp "$root/templates/dietcode_args.h" "$tmp/old/"
sed -i 's/dc_x86/dc_x86_old/g' "$tmp"/old/x86/*.h
g++ -std=c++17 -O3 -march=x86-64-v3 -mtune=generic -ffp-contract=fast -I"$root/templates" \
  -I"$tmp" -I"$here" -DVARIANTS='"variants.inc"' "$here/c_offset_ab.cc" -o "$tmp/ab" -ldl -pthread
for i in 1 2 3; do WHICH=c OFF=4 OMP_NUM_THREADS=1 "$tmp/ab" 15 > "$tmp/1t.$i.txt"; done
for i in 1 2 3; do
  EVICT=1 WHICH=c OFF=4 THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive "$tmp/ab" 21 > "$tmp/2t.$i.txt"
done
echo "1 thread, warm (3 runs)"; python3 "$here/sum2.py" "$tmp"/1t.*.txt
echo; echo "2 threads, caches evicted (3 runs)"; python3 "$here/sum2.py" "$tmp"/2t.*.txt
