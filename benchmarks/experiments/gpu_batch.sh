#!/usr/bin/env bash
# One device call for a change: build for sm_90 (kernels, both plugin majors' harnesses, the sanitizer
# driver), the GPU tests that cover it, compute-sanitizer over its kernels, and a benchmark. Outputs
# under $OUT. TensorRT headers from .trt/<major>/ (carry .trt), wheels from .whl/ (carry .whl).
#   TESTS="group_norm or bias_activation" SANITIZE="group_norm_resident" MEMCHECK="rows gated" \
#   BENCH="scripts/bench_group_norm.py --quick" bash benchmarks/experiments/gpu_batch.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build-gpu/batch} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
peers() { (cd .peers/trtoss_groupnorm 2>/dev/null && ./build.sh > /dev/null 2>&1); } # TensorRT OSS's GroupNorm harness
if [ -n "${SETUP_ONLY:-}" ]; then peers; exit 0; fi # the wheels above and the peers only (queued.sh cltrim)
roots=$(ls -d "$PWD"/.trt/*/ 2>/dev/null | tr '\n' ';')
t0=$SECONDS
# build-gpu/, as scripts/gpu_check.sh (the loader searches build/'s wheel-tag folders only)
cmake -S plugin_src -B build-gpu -G Ninja -DTRTPLUGINS_CUDA_ARCHS=90-real -DTRTPLUGINS_TENSORRT_ROOTS="$roots" \
      -DTRTPLUGINS_BUILD_TESTS=ON > "$OUT/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - t0)) s"
export TRTPLUGINS_KERNELS_LIB=$PWD/build-gpu/libtrtplugins_kernels.so TRTPLUGINS_LIBRARY=$PWD/build-gpu
status=0
if [ -n "${TESTS:-}" ]; then
  TRTP_GPU_SUMMARY=$OUT/gpu_summary.md timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider \
    -k "$TESTS" > "$OUT/gpu_tests.log" 2>&1 || status=1
  grep -E "passed|failed|error" "$OUT/gpu_tests.log" | tail -3; grep -E "^FAILED|^ERROR" "$OUT/gpu_tests.log" | head -20
  echo "tests done at $((SECONDS - t0)) s"
fi
# SANITIZE: kernel_sanitize parts under all four tools (or SANITIZE_TOOLS; racecheck has 240 s, the others 45, or
# SANITIZE_TIMEOUT); MEMCHECK: parts under memcheck only
for run in $(for p in ${SANITIZE:-}; do for t in ${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}; do echo $p:$t; done; done) \
           $(for p in ${MEMCHECK:-}; do echo $p:memcheck; done); do
  part=${run%%:*} tool=${run##*:}
  {
    limit=${SANITIZE_TIMEOUT:-45}; [ -z "${SANITIZE_TIMEOUT:-}" ] && [ $tool = racecheck ] && limit=240
    timeout "$limit" compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/kernel_sanitize "$part" \
      > "build-gpu/san_${part}_$tool.log" 2>&1
    rc=$?
    echo "$part $tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failures' "build-gpu/san_${part}_$tool.log" | tail -2 | tr '\n' ' ')"
    [ $rc -eq 0 ] || status=1
  }
done
tail -n 4 build-gpu/san_*.log > "$OUT/sanitize.log" 2>/dev/null
if [ -n "${BENCH:-}" ]; then
  peers
  timeout "${BENCH_TIMEOUT:-150}" python3 $BENCH --out "$OUT" > "$OUT/bench.log" 2>&1 || status=1
  tail -4 "$OUT/bench.log"
fi
echo "=== gpu_batch: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s"
exit $status
