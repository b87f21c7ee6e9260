#!/usr/bin/env bash
# The whole job on a GPU host: build -> GPU tests -> devices -> tune BERT-base dense -> build its
# pack -> bench it against cuBLAS and cuBLASLt -> time its launch overhead -> run it under
# compute-sanitizer -> docs/results/<gpu>/ (JSON, CSV, SVG, README.md with the figures).
#
# In one go it takes about 25 minutes on an H100. Shared GPU hosts often cap a job at 10
# minutes, so it also runs in stages, one per command, each well inside 10 minutes on a 16-core
# host and each resuming from what the previous one left in the build folder and in OUT:
#   scripts/gpu-run.sh --stage build    Release build of dietcode and the GPU tests only (~4 min)
#   scripts/gpu-run.sh --stage test     nvidia-smi, devices, ctest -L gpu one kernel family at a time
#   scripts/gpu-run.sh --stage tune     tune (6 min by default) and build the pack
#   scripts/gpu-run.sh --stage bench    bench, launch overhead, compute-sanitizer, README
#
#   scripts/gpu-run.sh [options]
#     --stage NAME          build, test, tune, bench, or all (default: all, in one go)
#     --budget MIN          total minutes to plan for (default 25); tuning gets what the other
#                           steps leave (budget - 13 min, at least 3 min); --stage tune alone
#                           tunes for 6 minutes unless --tune-budget says otherwise
#     --tune-budget DUR     tuning wall time instead (90s, 10m, 1h30m)
#     --trials N            tuning trials per op (default: none, so the time budget decides)
#     --repeats N           bench: timed runs per shape (default 30)
#     --shapes SPEC         bench: shapes instead of the tuned range (T=1:128:4)
#     --workload FILE       instead of configs/workloads/bert_base_dense.json
#     --baselines LIST      bench against each (default "cublas cublaslt"; "auto" for a
#                           conv2d workload: cuDNN for conv2d, cuBLAS for the GEMMs)
#     --device N            GPU ordinal (default 0)
#     --skip-tests          no ctest -L gpu
#     --skip-tune           reuse configs/tuned/<gpu>/<workload>.jsonl (or .jsonl.gz) as it is
#     --prebuilt DIR        run DIR/dietcode, made by scripts/bundle-binaries.sh on a build host,
#                           instead of building here: no build stage, and GPU tests only when the
#                           bundle has them (--with-tests: the kernel families; the measurer's and
#                           bench's need a build); for short reservations and hosts without a
#                           compiler
#
# For hosts without a package registry it builds against the offline bundle when one was
# copied here (.bundle/env.sh; see scripts/bundle-deps.sh and docs/offline-gpu-hosts.md).
# Every step logs to OUT (env OUT, default out/gpu-run) and everything it produces is copied
# there too, so a caller can fetch one folder. A failed step is reported loudly (FAILED, the
# tail of its log) and the next one still runs when it can: failed GPU tests do not stop the
# tuning, a failed tuning still builds an untuned pack. The exit status is 1 if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$(pwd)

budget_min=25
tune_budget=""
trials=""
repeats=30
shapes=""
workload=configs/workloads/bert_base_dense.json
baselines="cublas cublaslt"
device=0
skip_tests=0
skip_tune=0
stage=all
prebuilt=""

usage() { sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --budget) budget_min=$2; shift ;;
    --tune-budget) tune_budget=$2; shift ;;
    --trials) trials=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --shapes) shapes=$2; shift ;;
    --workload) workload=$2; shift ;;
    --baselines) baselines=$2; shift ;;
    --device) device=$2; shift ;;
    --skip-tests) skip_tests=1 ;;
    --skip-tune) skip_tune=1 ;;
    --prebuilt) prebuilt=$2; shift ;;
    --stage) stage=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-run: unknown option $1 (see --help)" >&2; exit 1 ;;
  esac
  shift
done
[[ $budget_min =~ ^[0-9]+$ ]] || { echo "gpu-run: --budget takes whole minutes" >&2; exit 1; }
[[ -f $workload ]] || { echo "gpu-run: no workload $workload" >&2; exit 1; }
case $stage in
  build | test | tune | bench | all) ;;
  *) echo "gpu-run: --stage: expected build, test, tune, bench or all, got \"$stage\"" >&2; exit 1 ;;
esac
# wants STAGE: whether this run does that stage.
wants() { [[ $stage == all || $stage == "$1" ]]; }
if [[ -z $tune_budget && $stage == tune ]]; then
  tune_budget=6m
elif [[ -z $tune_budget ]]; then
  tune_min=$((budget_min - 13))
  ((tune_min < 3)) && tune_min=3
  tune_budget="${tune_min}m"
fi

OUT=${OUT:-$repo/out/gpu-run}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
build=${DIETCODE_BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
dietcode="$repo/$build/dietcode"
run_pack=examples/c/run_pack
if [[ -n $prebuilt ]]; then
  [[ -x $prebuilt/dietcode ]] || { echo "gpu-run: no $prebuilt/dietcode (scripts/bundle-binaries.sh makes it)" >&2; exit 1; }
  prebuilt=$(cd "$prebuilt" && pwd)
  dietcode="$prebuilt/dietcode"
  run_pack="$prebuilt/bin/run_pack"
  [[ -x $prebuilt/run-gpu-tests ]] || skip_tests=1
  [[ $stage == build ]] && { echo "gpu-run: --prebuilt: nothing to build" >&2; exit 1; }
fi
wl_name=$(basename "$workload" .json)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

failed=()
summary="$OUT/summary.txt"
# Staged runs add to one summary: the first stage (build, or all) starts it.
[[ $stage == all || $stage == build || ! -f $summary ]] && : >"$summary"

# step NAME COMMAND...: runs it with its output on the terminal and in $OUT/NAME.log.
step() {
  local name=$1
  shift
  local log="$OUT/$name.log" start=$SECONDS rc
  echo "== $name: $*"
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local took=$((SECONDS - start))
  if ((rc == 0)); then
    echo "ok      $name (${took}s)" | tee -a "$summary"
  else
    failed+=("$name")
    echo "FAILED  $name (exit $rc, ${took}s; log: $log)" | tee -a "$summary"
    echo "!! $name FAILED with exit $rc; last lines of $log:" >&2
    tail -n 15 "$log" >&2
  fi
  return "$rc"
}

skipped() {
  echo "skipped $1 ($2)" | tee -a "$summary"
}

# The folder name of a GPU: "NVIDIA H100 80GB HBM3" -> h100, "NVIDIA A100-SXM4-80GB" -> a100,
# "NVIDIA GeForce RTX 4090" -> rtx4090, "Tesla T4" -> t4.
gpu_id() {
  echo "$1" | tr '[:upper:]' '[:lower:]' |
    sed -E 's/^(nvidia|tesla|geforce|quadro| )+//; s/^rtx /rtx/; s/^(nvidia|tesla|geforce|quadro| )+//' |
    sed -E 's/[ -].*//; s/[^a-z0-9]//g'
}

# --- 1. build ---------------------------------------------------------------------------------
if [[ -z ${DIETCODE_OFFLINE_PREFIX:-} && -f .bundle/env.sh ]] &&
  ! bash scripts/setup.sh --check >/dev/null 2>&1; then
  echo "gpu-run: using the offline bundle in .bundle"
  # shellcheck source=/dev/null
  source .bundle/env.sh
fi
# Only what the GPU stages run: the CLI, the gpu-labelled tests and the launch-overhead client,
# Release without debug info (a full RelWithDebInfo build of every test takes four times as
# long on the same cores).
gpu_targets=(dietcode dietcode_pack_stress_plain)
for test_source in tests/gpu/*_test.cc; do
  gpu_targets+=("gpu_$(basename "$test_source" .cc)")
done
if wants build && [[ -z $prebuilt ]]; then
  build_ok=1
  step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release || build_ok=0
  ((build_ok)) && { step build cmake --build "$build" -j "$jobs" --target "${gpu_targets[@]}" || build_ok=0; }
  if ((!build_ok)); then
    echo "gpu-run: dietcode did not build; nothing else can run. Logs in $OUT" >&2
    exit 1
  fi
fi
if [[ ! -x $dietcode ]]; then
  echo "gpu-run: no $dietcode: run --stage build first. Logs in $OUT" >&2
  exit 1
fi
[[ $stage == build ]] && { cat "$summary"; echo "gpu-run: built; next: --stage test"; exit 0; }

# --- 2. GPU tests, devices ----------------------------------------------------------------------
if wants test; then  # the driver, clocks and persistence, whether or not tests run
  nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$OUT/nvidia-smi.txt"
  nvidia-smi -q -d CLOCK,PERFORMANCE >>"$OUT/nvidia-smi.txt" 2>&1
fi
if ! wants test; then
  :
elif ((skip_tests)); then
  skipped ctest-gpu "${prebuilt:+--prebuilt without --with-tests: no test binaries; }--skip-tests"
else
  # One kernel family at a time, each under its own limit, so that a family that hangs or
  # fails names itself and the others still run (each case also has its own CTest limit,
  # tests/CMakeLists.txt). The tensor-core samples split three ways by DIETCODE_TEST_SAMPLES.
  # On an H200 the families took 200 s in all (docs/results/h200/). A prebuilt bundle runs its
  # own test binary instead of CTest, with the same filters; the families it does not carry are
  # reported as skipped.
  family() {  # family NAME LIMIT FILTER [SAMPLES]; FILTER: GoogleTest's, 'Suite.Case*:...'
    local samples=()
    [[ -n ${4:-} ]] && samples=("DIETCODE_TEST_SAMPLES=$4")
    if [[ -n $prebuilt ]]; then
      if "$prebuilt/run-gpu-tests" "$3" --gtest_list_tests >/dev/null; then
        step "test-$1" env "${samples[@]}" timeout "$2" "$prebuilt/run-gpu-tests" "$3"
      else
        skipped "test-$1" "not in the prebuilt bundle"
      fi
      return
    fi
    # The same filter as a CTest name regex: gpu.Suite.Case, '.' literal, '*' any, ':' or.
    local regex
    regex=$(sed -e 's/\./\\./g' -e 's/\*/.*/g' -e 's/:/|/g' <<<"$3")
    step "test-$1" env "${samples[@]}" timeout "$2" \
      ctest --test-dir "$build" -L gpu -R "^gpu\\.($regex)" --output-on-failure -j 1
  }
  family handles 60 'CudaHandles.*'
  family dense-f32 150 'DenseF32Gpu.*'
  family batch-matmul-f32 120 'BatchMatmulGpu.*'
  family conv2d-f32 120 'Conv2dGpu.*'
  family dense-tc-mma-sync 150 'DenseTcGpu.Sampled*' 'tc '
  family dense-wgmma-cp-async 120 'DenseTcGpu.Sampled*' 'wgmma cp.async'
  family dense-wgmma-tma 120 'DenseTcGpu.Sampled*' 'wgmma tma'
  family dense-tc-split-k-reference 90 'DenseTcGpu.SplitK*:DenseTcGpu.Reference*'
  family batch-matmul-tc 120 'BatchMatmulTcGpu.*'
  family measurer 150 'GpuMeasurerOnDevice.*'
  family bench-baselines 120 'BenchGpu.*:ConvBaselineGpu.*'
  # Test suites added later without a family above still run, together.
  covered='CudaHandles|DenseF32Gpu|BatchMatmulGpu|Conv2dGpu|DenseTcGpu|BatchMatmulTcGpu'
  covered+='|GpuMeasurerOnDevice|BenchGpu|ConvBaselineGpu'
  if [[ -z $prebuilt ]]; then
    step test-others timeout 300 ctest --test-dir "$build" -L gpu -E "gpu\\.($covered)\\." \
      --no-tests=ignore --output-on-failure -j 1
  fi
fi
if wants test || [[ ! -s $OUT/devices.json ]]; then
  step devices "$dietcode" devices
  "$dietcode" devices --json >"$OUT/devices.json" 2>/dev/null
fi
[[ -s $OUT/nvidia-smi.txt ]] || nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1

gpu_name=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['devices'][$device]['name'])" \
  "$OUT/devices.json" 2>/dev/null)
[[ -z $gpu_name ]] && gpu_name=$(nvidia-smi -i "$device" --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
gpu=$(gpu_id "${gpu_name:-unknown}")
[[ -z $gpu ]] && gpu=unknown
driver=$(nvidia-smi -i "$device" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)
echo "gpu-run: device $device is ${gpu_name:-unknown} -> configs/tuned/$gpu, docs/results/$gpu"

tuned_dir=configs/tuned/$gpu
results=docs/results/$gpu
mkdir -p "$tuned_dir" "$results"
log=$tuned_dir/$wl_name.jsonl

[[ $stage == test ]] && { cat "$summary"; echo "gpu-run: tested; next: --stage tune"; exit 0; }

# --- 3. tune ------------------------------------------------------------------------------------
tune_seconds=""
if ! wants tune; then
  :
elif ((skip_tune)); then
  skipped tune "--skip-tune; using $log (or its .gz) as it is"
else
  tune_args=("$workload" -o "$log" --time-budget "$tune_budget" --device "$device")
  [[ -n $trials ]] && tune_args+=(--trials "$trials")
  start=$SECONDS
  step tune "$dietcode" tune "${tune_args[@]}"
  tune_seconds=$((SECONDS - start))
fi
# The log holds a record per kernel and instance (about 23 MB for a 4-minute BERT tune on an
# H200) and compresses about 25x: the .gz is the copy to commit and to fetch; build and inspect
# read it as it is, and the plain .jsonl stays for a resumed tune.
if [[ -f $log ]]; then
  gzip -9 -c "$log" >"$log.gz" && cp "$log.gz" "$OUT/"
fi

# --- 4. pack ------------------------------------------------------------------------------------
pack_dir="$OUT/pack"
mkdir -p "$pack_dir"
pack_name=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['name'])" "$workload" 2>/dev/null)
pack_name=${pack_name:-$wl_name}
pack="$pack_dir/lib$pack_name.so"
# The plain log, else its committed .gz (a fresh checkout with --skip-tune).
pack_log=$log
[[ ! -s $pack_log && -s $log.gz ]] && pack_log=$log.gz
pack_note="tuned on this GPU ($pack_log)"
[[ -s $pack_log ]] || pack_note="UNTUNED: no tuning log, so the pack holds template defaults"
if wants tune || [[ ! -f $pack ]]; then
  if [[ -s $pack_log ]]; then
    step build-pack "$dietcode" build "$workload" --log "$pack_log" -o "$pack"
  else
    step build-pack "$dietcode" build "$workload" -o "$pack"
  fi
fi
if [[ $stage == tune ]]; then
  [[ -n $tune_seconds ]] && echo "$tune_seconds $tune_budget" >"$OUT/tune-seconds.txt"
  cat "$summary"
  echo "gpu-run: tuned and packed; next: --stage bench"
  exit 0
fi
[[ -z $tune_seconds && -s $OUT/tune-seconds.txt ]] && read -r tune_seconds tune_budget <"$OUT/tune-seconds.txt"

# --- 5. bench -----------------------------------------------------------------------------------
bench_args=(--workload "$workload" --device "$device" --repeats "$repeats" --l2 flush)
[[ -n $shapes ]] && bench_args+=(--shapes "$shapes")
for baseline in $baselines; do
  if [[ ! -f $pack ]]; then
    skipped "bench-$baseline" "no pack"
    continue
  fi
  stem="$results/$wl_name-vs-$baseline"
  step "bench-$baseline" timeout 900 "$dietcode" bench "$pack" --baseline "$baseline" "${bench_args[@]}" \
    --json "$stem.json" --csv "$stem.csv" --plot "$stem.svg"
  cp "$OUT/bench-$baseline.log" "$stem.txt" 2>/dev/null
done

# --- 5a. launch overhead ---------------------------------------------------------------------------
# The host-side cost of dietcode_launch against a bare cuLaunchKernel, from 1 and 16 threads, at
# the smallest shape of the first op (tests/data/pack_stress; needs a one-variable op).
stress_client="$repo/$build/tests/pack_stress/pack_stress_plain"
first_op=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops'][0]['name'])" "$workload" 2>/dev/null)
if [[ ! -f $pack || ! -x $stress_client || -z $first_op ]]; then
  skipped launch-overhead "no pack or no stress client"
else
  step launch-overhead "$stress_client" "$pack" "$first_op" 1 bench 20000 &&
    cp "$OUT/launch-overhead.log" "$results/$wl_name-launch-overhead.txt"
fi

# --- 5b. the pack under compute-sanitizer ------------------------------------------------------
# Every op of the pack once, at the middle of its tuned range, through examples/c/run_pack
# (which checks the result against a CPU reference), under memcheck and racecheck.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ ! -f $pack ]]; then
  skipped sanitize "no pack"
elif [[ ! -x $sanitizer ]]; then
  skipped sanitize "no compute-sanitizer in the toolkit"
else
  [[ -n $prebuilt ]] || make -s -C examples/c run_pack CC="${CC:-cc}" >/dev/null 2>&1
  ops=$(python3 -c "import json,sys; print(' '.join(o['name'] for o in json.load(open(sys.argv[1]))['ops']))" "$workload" 2>/dev/null)
  sanitize() {
    local rc=0 op tool
    for op in $ops; do
      for tool in memcheck racecheck; do
        echo "-- $tool $op"
        "$sanitizer" --tool "$tool" --error-exitcode 3 "$run_pack" "$pack" "$op" || rc=1
      done
    done
    return $rc
  }
  step sanitize sanitize
fi

# --- 6. README of the results ---------------------------------------------------------------------
figures() {  # lines per baseline from its JSON: geomean, worst instance, ceiling, failures
  python3 - "$@" <<'EOF' 2>/dev/null || echo "(python3 missing: see the JSON files)"
import json, sys
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception as e:
        print(f"- {path}: not written ({e.__class__.__name__})")
        continue
    g = r.get("geomean_speedup")
    w = r.get("worst") or {}
    rows = r.get("rows", [])
    print(f"- vs {r['baseline']} (L2 {r['l2']}, {len(rows)} instances, median of {r['repeats']} runs): "
          f"weighted geometric-mean speedup **{g:.3f}x**" if g else f"- vs {r['baseline']}: no speedup")
    if w:
        row = next((x for x in rows if x['op'] == w['op'] and x['shape'] == w['shape']), {})
        print(f"  worst instance {w['op']} {w['shape']}: {w['speedup']:.2f}x "
              f"(pack {row.get('pack_us')} us, {r['baseline']} {row.get('baseline_us')} us)")
    c = r.get("ceiling_speedup")
    if c:
        print(f"  ceiling (every instance at 100% of the GPU's peak): {c:.3f}x")
    print(f"  results that disagree with the baseline: {r['failures']}")
EOF
}

finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# $wl_name on ${gpu_name:-unknown}"
  echo
  echo "Measured by \`scripts/gpu-run.sh\` from $started to $finished (UTC), commit $commit."
  echo
  echo "- GPU: ${gpu_name:-unknown} (device $device), driver ${driver:-unknown}"
  echo "- Pack: $pack_note"
  if [[ -n $tune_seconds ]]; then
    records=0
    if [[ -f $log ]]; then
      records=$(wc -l <"$log")
    elif [[ -f $log.gz ]]; then
      records=$(gzip -dc "$log.gz" | wc -l)
    fi
    echo "- Tuning: ${tune_seconds}s wall time (budget $tune_budget), $records log records"
  fi
  echo "- Bench: every op at every shape instance, pack and baseline interleaved in one stream,"
  echo "  CUDA events, median of $repeats runs, L2 flushed before every timed launch"
  echo
  echo "## Figures"
  echo
  jsons=() plots=""
  for baseline in $baselines; do
    jsons+=("$results/$wl_name-vs-$baseline.json")
    plots+="${plots:+, }[vs $baseline]($wl_name-vs-$baseline.svg)"
  done
  figures "${jsons[@]}"
  echo
  echo "Plots: $plots."
  echo "Tables: \`$wl_name-vs-*.txt\`; rows: \`*.csv\`, \`*.json\`."
  echo
  if [[ -f $results/$wl_name-launch-overhead.txt ]]; then
    echo "## Launch overhead"
    echo
    echo '```'
    cat "$results/$wl_name-launch-overhead.txt"
    echo '```'
    echo
  fi
  echo "## Steps"
  echo
  echo '```'
  cat "$summary"
  echo '```'
  echo
  echo "## Commands"
  echo
  echo '```sh'
  echo "dietcode tune $workload -o $log --time-budget $tune_budget --device $device${trials:+ --trials $trials}"
  echo "dietcode build $workload --log $pack_log -o lib$pack_name.so"
  for baseline in $baselines; do
    echo "dietcode bench lib$pack_name.so --baseline $baseline ${bench_args[*]} \\"
    echo "    --json $wl_name-vs-$baseline.json --csv $wl_name-vs-$baseline.csv --plot $wl_name-vs-$baseline.svg"
  done
  echo '```'
} >"$results/README.md"

rm -rf "$OUT/results-$gpu"
cp -r "$results" "$OUT/results-$gpu"
cp "$results/README.md" "$OUT/README.md"
echo
cat "$summary"
echo "gpu-run: results in $results, everything in $OUT"
if ((${#failed[@]})); then
  echo "gpu-run: FAILED steps: ${failed[*]}" >&2
  exit 1
fi
