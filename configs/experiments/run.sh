#!/usr/bin/env bash
# The experiments of this folder on a GPU host, from a prebuilt bundle, in parts that each end
# well inside a 10-minute job limit; every step has its own time limit, logs to $OUT/PART/
# (default out/experiments) and adds one line to $OUT/summary.txt, and a failed step does not
# stop the next. Each finished part is rolled into $OUT/PART.tar.gz: hosts that copy a job's
# output back often cap the number and size of files, and run 5 lost two logs left loose.
#
#   configs/experiments/run.sh BUNDLE PART...
#     tests       the tensor-core kernels' GPU tests from the bundle (made --with-tests):
#                 dense_wgmma's samples and split-K, the tensor-core batch_matmul, and the
#                 driver handles with the shared L2 flush (~3 min)
#     widths      wgmma-widths.json on Llama-7B's gate and down, and the table (~2 min)
#     staged      wgmma-staged-store.json on BERT's bf16 qkv and fc1, and the table (~1 min)
#     preload     preload-ab.json on BERT's fp32 qkv and fc2, and the table (~2 min)
#     bert-bf16   tune BERT-base dense in bf16 for 150 s, build, bench against cuBLAS (~5 min)
#     m-tiles     wgmma-m-tiles.json on BERT's bf16 qkv, proj and fc1, and the table (~2 min)
#     qkv-tiles   wgmma-qkv-tiles.json (cuBLAS's 192 x 176 tile) on BERT's bf16 qkv (~1 min)
#     pack-vs-tune  the committed bf16 BERT log's pack: its kernels retimed by tune --kernels,
#                 the pack benched, and pack-vs-tune.py's split of the gap between them (~3 min)
#
# SIMULATE=h200 runs the tunes against the simulated device instead (a dry run of the commands
# on a machine without a GPU; its numbers are a model's, and bench needs a GPU).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
(($# >= 2)) || { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 1; }
[[ -x $1/dietcode ]] || { echo "run.sh: no $1/dietcode (scripts/bundle-binaries.sh makes it)" >&2; exit 1; }
bundle=$(cd "$1" && pwd)
shift
dietcode=$bundle/dietcode
OUT=${OUT:-out/experiments}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
simulate=() allow_simulated=()
if [[ -n ${SIMULATE:-} ]]; then
  simulate=(--simulate "$SIMULATE")
  allow_simulated=(--allow-simulated)
fi
x=configs/experiments
w=configs/workloads

# step NAME LIMIT COMMAND...: output in $dir/NAME.log, one line in the summary.
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  echo "== $name: $*"
  timeout "$limit" "$@" >"$dir/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc, $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
  tail -n 25 "$dir/$name.log"
}

# ab NAME WORKLOAD OPS LIST LIMIT: time a kernel list on some ops, then each kernel against the
# fastest per instance.
ab() {
  step "$1" "$5" "$dietcode" tune "$w/$2" --ops "$3" --kernels "$x/$4" "${simulate[@]}" \
    -o "$dir/$1.jsonl"
  step "$1-by-kernel" 60 "$dietcode" inspect "$dir/$1.jsonl" --by-kernel
}

for part in "$@"; do
  dir=$OUT/$part
  rm -rf "$dir" "$OUT/$part.tar.gz"
  mkdir -p "$dir"
  case $part in
    tests)
      if [[ -x $bundle/run-gpu-tests ]]; then
        step tests-wgmma 240 env DIETCODE_TEST_SAMPLES=wgmma "$bundle/run-gpu-tests" \
          'DenseTcGpu.Sampled*:DenseTcGpu.SplitK*'
        step tests-batch-matmul-tc 120 "$bundle/run-gpu-tests" 'BatchMatmulTcGpu.*'
        step tests-cuda-handles 60 "$bundle/run-gpu-tests" 'CudaHandles.*'
      else
        echo "tests: skipped, the bundle has no tests (bundle-binaries.sh --with-tests)" |
          tee -a "$OUT/summary.txt"
      fi
      ;;
    widths) ab widths llama7b_mlp.json gate,down wgmma-widths.json 240 ;;
    staged) ab staged bert_base_dense_bf16.json qkv,fc1 wgmma-staged-store.json 120 ;;
    preload) ab preload bert_base_dense.json qkv,fc2 preload-ab.json 180 ;;
    m-tiles) ab m-tiles bert_base_dense_bf16.json qkv,proj,fc1 wgmma-m-tiles.json 180 ;;
    qkv-tiles) ab qkv-tiles bert_base_dense_bf16.json qkv wgmma-qkv-tiles.json 120 ;;
    bert-bf16)
      mkdir -p "$dir/pack"
      step bert-bf16-tune 240 "$dietcode" tune "$w/bert_base_dense_bf16.json" --time-budget 150s \
        "${simulate[@]}" -o "$dir/bert_bf16.jsonl"
      step bert-bf16-build 120 "$dietcode" build "$w/bert_base_dense_bf16.json" \
        --log "$dir/bert_bf16.jsonl" "${allow_simulated[@]}" -o "$dir/pack/libbert_dense_bf16.so"
      step bert-bf16-bench 120 "$dietcode" bench "$dir/pack/libbert_dense_bf16.so" \
        --baseline cublas --repeats 20 --json "$dir/bert_bf16-vs-cublas.json" \
        --csv "$dir/bert_bf16-vs-cublas.csv" --plot "$dir/bert_bf16-vs-cublas.svg"
      rm -rf "$dir/pack"  # rebuilt from the log in seconds, and too large to ship back
      ;;
    pack-vs-tune)
      mkdir -p "$dir/pack"
      step pvt-build 120 "$dietcode" build "$w/bert_base_dense_bf16.json" \
        --log configs/tuned/h200/bert_base_dense_bf16.jsonl.gz "${allow_simulated[@]}" \
        -o "$dir/pack/libbert_dense_bf16.so"
      step pvt-inspect 60 "$dietcode" inspect "$dir/pack/libbert_dense_bf16.so" --json
      step pvt-list 60 "$x/pack-vs-tune.py" "$dir/pvt-inspect.log" --kernel-list "$dir/kernels.json"
      step pvt-retime 240 "$dietcode" tune "$w/bert_base_dense_bf16.json" --kernels "$dir/kernels.json" \
        "${simulate[@]}" -o "$dir/retimed.jsonl"
      step pvt-bench 120 "$dietcode" bench "$dir/pack/libbert_dense_bf16.so" --baseline cublas \
        --repeats 20 --csv "$dir/bench.csv"
      step pvt-split 60 "$x/pack-vs-tune.py" "$dir/pvt-inspect.log" --bench "$dir/bench.csv" \
        --retimed "$dir/retimed.jsonl"
      rm -rf "$dir/pack"
      ;;
    *) echo "run.sh: unknown part \"$part\" (tests, widths, staged, preload, m-tiles, qkv-tiles, bert-bf16, pack-vs-tune)" >&2 ;;
  esac
  tar czf "$OUT/$part.tar.gz" -C "$OUT" "$part" && rm -rf "$dir"
done
