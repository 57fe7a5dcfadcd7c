#!/usr/bin/env bash
# One GPU call for the new GroupNorm kernel: build it (and the current one, and the TensorRT OSS peer),
# check and time it (gn_check.py), then compute-sanitizer over the small checks. Outputs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build/gn} PYTHONUNBUFFERED=1
mkdir -p build "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
NV="nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -shared -Xcompiler -fPIC"
t0=$SECONDS
$NV -Iwip/gn -Iplugin_src/kernels wip/gn/group_norm.cu wip/gn/capi.cu -o build/libgn2.so > build/gn2.log 2>&1 &
$NV -Iplugin_src/kernels plugin_src/kernels/group_norm.cu wip/gn/old_capi.cu -o build/libgn_old.so > build/gn_old.log 2>&1 &
(cd .peers/trtoss_groupnorm && ./build.sh) > build/peer.log 2>&1 &
wait
ls build/libgn2.so build/libgn_old.so || { cat build/gn2.log build/gn_old.log | tail -20; exit 1; }
echo "built in $((SECONDS - t0)) s"
status=0
timeout ${GN_TIMEOUT:-400} python3 wip/gn/gn_check.py --out "$OUT" "$@" || status=1
for tool in memcheck racecheck initcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 wip/gn/gn_check.py --quick --out build/san > "build/san_$tool.log" 2>&1
  rc=$?
  echo "$tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "build/san_$tool.log" | tail -1) $(tail -1 build/san/gn_quick.log 2>/dev/null)"
  [ $rc -eq 0 ] || status=1
done
tail -n 30 build/san_*.log > "$OUT/sanitize.log"
echo "total $((SECONDS - t0)) s"
exit $status
