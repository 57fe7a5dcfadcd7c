#!/usr/bin/env bash
# The device work queued in RESULTS.md ("Targets still missed"), in one call: the TensorRT OSS GroupNorm
# peer's self-test, the two pending A/Bs, and the ahead-prefetch sweep. Outputs under $OUT.
#   bash benchmarks/experiments/queued.sh [ab1|ab2|ahead|peer ...]   (default: all)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-build/queued}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
steps=${*:-peer ahead}
ab=benchmarks/experiments/ab.py
status=0
for s in $steps; do
  echo "=== $s ($(date +%T))"
  case $s in
    peer) (cd .peers/trtoss_groupnorm && ./build.sh && python3 selftest.py) > "$OUT/peer.log" 2>&1; rc=$?; tail -4 "$OUT/peer.log" ;;
    ab1) python3 $ab small_unroll1 --repeat 2 -- --ops bias_gelu bias_relu6 --hiddens --odd --no-compile; rc=$? ;;
    ab2) python3 $ab gelu_forms -- --ops bias_gelu geglu --no-small --no-compile; rc=$? ;;
    ahead) python3 $ab --no-base --sweep-build loop_rows_ahead --env TRTPLUGINS_AHEAD=0,2048,8192 -- --sweep --looped-only \
             --ops layer_norm rms_norm --dtypes fp16 --hiddens 768 2048 4096 16384 --odd 5121 --no-small; rc=$? ;;
    *) echo "unknown step $s"; rc=2 ;;
  esac
  echo "=== $s: rc $rc"
  [ $rc -eq 0 ] || status=1
done
exit $status
