#!/usr/bin/env bash
# The AOT kernels against the hand-written ones with the weights' 16-bit copies (the plugin's weights for a
# 16-bit export): build the AOT library, SkipNorm's GPU tests through it, then STEP:
#   full   the small launches beside the compile (FP16) and three large runs of triton_aot_check (16-bit),
#          what benchmarks/triton_aot/triton_aot_io.json holds
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
check="python3 benchmarks/experiments/triton_aot_check.py --no-compile --dtypes float16 bfloat16"
case ${1:-full} in
  full) timeout 100 python3 scripts/bench_kernels.py --ops layer_norm rms_norm skip_layer_norm skip_rms_norm --dtypes fp16 \
          --hiddens --odd --out "$O/small" > "$O/small.log" 2>&1; tail -2 "$O/small.log"
        for i in 1 2 3; do timeout 80 $check --out "$O/large$i" > "$O/large$i.log" 2>&1; done; grep "^|" "$O/large1.log" ;;
  check) timeout 60 $check --hiddens 4096 5120 8192 --out "$O/check" > "$O/check.log" 2>&1; grep "^|" "$O/check.log" ;;
esac
