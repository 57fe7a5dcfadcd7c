#!/usr/bin/env bash
# Issue 33's GPU work in one call, from a clean checkout on the GPU machine (no network):
#   1. the pure-Python wheels carried in .whl/ (diffusers, requests and its dependencies), those
#      whose module the image lacks only, into /tmp/trtp-site (on PYTHONPATH);
#   2. libtrtplugins_kernels.so for sm_90 (reused from build-gpu, scripts/gpu_check.sh's, if there);
#   3. tests/gpu/test_torch_gpu.py (CUDA path vs reference, CUDA graphs, opcheck, Inductor fullgraph);
#   4. benchmarks/bench_torch_overhead.py (host time per call beside torch's);
#   5. benchmarks/bench_models.py (whole models; BUDGET_S caps it, default 180 s; BENCH_ARGS adds options).
# TESTS=0 skips 3 and 4.
# Results and logs in $OUT (default build/torch-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/torch-gpu}
mkdir -p "$OUT"
status=0
t0=$SECONDS
step() { echo "=== [$((SECONDS - t0)) s] $*"; }

step "wheels from .whl/ the image lacks"
SITE=/tmp/trtp-site
missing=$(python3 - <<'PY'
import glob, importlib.util, os
for w in sorted(glob.glob(".whl/*.whl")):  # each carried distribution's module has its name
    if importlib.util.find_spec(os.path.basename(w).split("-")[0].lower()) is None:
        print(w)
PY
)
if [ -n "$missing" ]; then
  echo "$missing"
  python3 -m pip install -q --no-index --no-deps --target "$SITE" $missing || status=1
fi
export PYTHONPATH=$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}
python3 -c "import torch, transformers, diffusers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'diffusers', diffusers.__version__, torch.cuda.get_device_name())" || exit 1

step "kernel library"
if [ -z "${TRTPLUGINS_KERNELS_LIB:-}" ]; then
  lib=build-gpu/libtrtplugins_kernels.so
  if [ ! -f "$lib" ]; then
    lib=build/torch-gpu-kernels/libtrtplugins_kernels.so
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S plugin_src -B build/torch-gpu-kernels "${gen[@]}" -DTRTPLUGINS_CUDA_ARCHS=${TRTPLUGINS_CUDA_ARCHS:-90-real} \
          -DTRTPLUGINS_BUILD_KERNELS=ON -DTRTPLUGINS_TENSORRT_ROOTS= > "$OUT/build.log" 2>&1 &&
      cmake --build build/torch-gpu-kernels -j "$(nproc)" --target trtplugins_kernels >> "$OUT/build.log" 2>&1 ||
      { tail -30 "$OUT/build.log"; exit 1; }
  fi
  export TRTPLUGINS_KERNELS_LIB=$PWD/$lib
fi
echo "TRTPLUGINS_KERNELS_LIB=$TRTPLUGINS_KERNELS_LIB"

if [ "${TESTS:-1}" = 1 ]; then # TESTS=0: the whole-model benchmark alone (tests and host times ran before)
  step "GPU tests of trtplugins.torch"
  TRTP_GPU_SUMMARY=$OUT/torch_gpu_summary.md python3 -m pytest -m gpu tests/gpu/test_torch_gpu.py -q -p no:cacheprovider \
    -rs 2>&1 | tee "$OUT/torch_gpu_tests.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1

  step "host time per call, beside torch"
  python3 benchmarks/bench_torch_overhead.py --out "$OUT" 2>&1 | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

step "whole-model benchmark"
python3 benchmarks/bench_models.py --out "$OUT" --budget-s "${BUDGET_S:-180}" ${BENCH_ARGS:-} 2>&1 |
  grep -v "^USDT\|profiler_st" | tee "$OUT/bench_models.log" | tail -30
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
step "run_torch_gpu: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
