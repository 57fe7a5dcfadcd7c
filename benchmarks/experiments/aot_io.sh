#!/usr/bin/env bash
# The AOT kernels against the hand-written ones, with FP32 weights and with the weights' 16-bit copies (the
# plugin's weights for a 16-bit export): build the AOT library, SkipNorm's GPU tests through it, then STEP:
#   full   every form and dtype: small launches (1 and 64 rows) and three large runs of triton_aot_check, then
#          $OUT/commit/ holds what benchmarks/triton_aot/ commits (triton_aot.json: the first large run;
#          triton_aot_io.json: the three runs' 16-bit rows; triton_aot_small.json) and the table they make,
#          triton_picks.json (for plugin_src/ops/skip_norm/); last, the small launches of the four norms (FP16)
#          beside the max-autotune compile
#   check  the picks of that run at 4096-8192: picked io us == AOT us where the table says io
set -u; export PYTHONPATH=/tmp/site; O=${OUT:-build/aot_io}; t0=$(date +%s); mkdir -p "$O"
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
cmake -S plugin_src -B build-aot -G Ninja -DTRTPLUGINS_CUDA_ARCHS=90-real -DTRTPLUGINS_BUILD_KERNELS=ON -DTRTPLUGINS_TENSORRT_ROOTS= \
  -DTRTPLUGINS_TRITON_AOT=ON > "$O/build.log" 2>&1 && cmake --build build-aot -j "$(nproc)" --target trtplugins_kernels >> "$O/build.log" 2>&1 ||
  { tail -20 "$O/build.log"; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s"
export TRTPLUGINS_KERNELS_LIB=$PWD/build-aot/libtrtplugins_kernels.so
timeout 90 python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -k "skip_norm and not plugin and not torch" > "$O/gpu_tests.log" 2>&1
tail -2 "$O/gpu_tests.log"
check="python3 benchmarks/experiments/triton_aot_check.py --no-compile"
case ${1:-full} in
  full) for i in 1 2 3; do timeout 80 $check --dtypes float32 float16 bfloat16 --out "$O/large$i" > "$O/large$i.log" 2>&1; done
        timeout 150 $check --dtypes float32 float16 bfloat16 --rows 1 64 --out "$O/small" > "$O/small.log" 2>&1
        mkdir -p "$O/commit" && python3 - "$O" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, "plugin_src")
import triton_aot
out = Path(sys.argv[1])
runs = [json.loads((out / f"large{i}" / "triton_aot.json").read_text()) for i in (1, 2, 3)]
files = {"triton_aot.json": runs[0], "triton_aot_io.json": [r for run in runs for r in run if r["dtype"] != "float32"],
         "triton_aot_small.json": json.loads((out / "small" / "triton_aot_small.json").read_text())}
for name, rows in files.items():
    (out / "commit" / name).write_text(json.dumps(rows, indent=1) + "\n")
picks = triton_aot.committed_picks(out / "commit")
(out / "commit" / "triton_picks.json").write_text(json.dumps(picks, indent=1) + "\n")
print({k: len(v) for k, v in picks.items()}, "picked")
PY
        grep "^|" "$O/large1.log" | grep -E "no_sum|^\| form"; grep "^|" "$O/small.log" | grep -E "no_sum|^\| form"
        timeout 100 python3 scripts/bench_kernels.py --ops layer_norm rms_norm skip_layer_norm skip_rms_norm --dtypes fp16 \
          --hiddens --odd --out "$O/smallbench" > "$O/smallbench.log" 2>&1; tail -2 "$O/smallbench.log" ;;
  check) timeout 60 $check --dtypes float16 bfloat16 --hiddens 4096 5120 8192 --out "$O/check" > "$O/check.log" 2>&1; grep "^|" "$O/check.log" ;;
esac
