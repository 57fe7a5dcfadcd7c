#!/usr/bin/env bash
# Everything that needs a GPU, in one go: build (kernels, plugin libraries and
# harnesses for every TensorRT major whose headers are given), the GPU tests
# (bare kernels and plugin adapters vs the numpy reference), compute-sanitizer
# (memcheck, racecheck, initcheck, synccheck) and optionally the benchmark.
#
#   TRT_ROOTS="/opt/TensorRT-10.16;/opt/TensorRT-11.1" bash scripts/gpu_check.sh [--bench]
# Builds in build-gpu/ (outside build/, whose wheel-tag folders the loader searches) with JOBS
# parallel jobs (default: the CPU count); the tests load its libraries through TRTPLUGINS_LIBRARY.
# Logs and results go to $OUT (default build-gpu/out).
set -uo pipefail
case "${1:-}" in
  "" | --bench) ;;
  -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "error: unknown argument ${1}; usage: bash scripts/gpu_check.sh [--bench] (--help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
BUILD=build-gpu
OUT=${OUT:-$BUILD/out}
mkdir -p "$OUT"
ROOTS=${TRT_ROOTS:-${TRTPLUGINS_TENSORRT_ROOTS:-}}
status=0
step() { echo "=== $*"; }

step "build ($ROOTS)"
cmake -S plugin_src -B $BUILD -G Ninja -DTRTPLUGINS_CUDA_ARCHS=${TRTPLUGINS_CUDA_ARCHS:-90-real} \
      -DTRTPLUGINS_BUILD_KERNELS=ON -DTRTPLUGINS_TENSORRT_ROOTS="$ROOTS" > "$OUT/build.log" 2>&1 &&
  cmake --build $BUILD -j "${JOBS:-$(nproc)}" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
grep "trtplugins:" "$OUT/build.log"
export TRTPLUGINS_KERNELS_LIB=$PWD/$BUILD/libtrtplugins_kernels.so TRTPLUGINS_LIBRARY=$PWD/$BUILD

step "GPU tests"
TRTP_GPU_SUMMARY=$OUT/gpu_summary.md python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

step "compute-sanitizer on every kernel path"
for tool in memcheck racecheck initcheck synccheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 $BUILD/kernel_sanitize > "$OUT/sanitize_$tool.log" 2>&1
  rc=$?
  echo "$tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1)"
  [ $rc -eq 0 ] || status=1
done

step "compute-sanitizer memcheck on the plugin adapters (enqueue through the harness)"
TRTP_GPU_SUMMARY=$BUILD/sanitized_summary.md compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/gpu/test_plugin_gpu.py tests/gpu/test_gated_gpu.py -k "trt11 and (768 or 37 or deserialized or bad)" > "$OUT/sanitize_plugin.log" 2>&1
rc=$?
echo "plugin memcheck: exit $rc, $(grep 'ERROR SUMMARY' "$OUT/sanitize_plugin.log" | tail -1), $(grep -E 'passed|failed' "$OUT/sanitize_plugin.log" | tail -1)"
[ $rc -eq 0 ] || status=1

if [ "${1:-}" = "--bench" ]; then
  step "benchmark"
  python3 scripts/bench_kernels.py --out "$OUT" --history benchmarks/RESULTS.md 2>&1 | tee "$OUT/bench.log" | tail -40
fi
echo "=== gpu_check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
