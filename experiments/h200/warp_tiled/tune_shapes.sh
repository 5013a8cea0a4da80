#!/usr/bin/env bash
# tiletraffic tune at the inference shapes and 1000^3 on the H200, with cuBLAS FP32 before
# and after, in one device call; from the repository root after the device preamble of
# experiments/README.md:
#   PYTHONUNBUFFERED=1 bash experiments/h200/warp_tiled/tune_shapes.sh "$OUT"
# Brings back OUT/tune_shapes.tar.gz (tune JSON per shape, cuBLAS JSON, log).
set -u
OUT=${1:?usage: tune_shapes.sh OUT}
SHAPES=${SHAPES:-"512,11008,4096 128,4096,11008 1000,1000,1000"}
mkdir -p "$OUT/tune_shapes"
start=$(date +%s)
step() { echo "=== $(( $(date +%s) - start )) s: $*"; }
step cublas before
timeout 60 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$OUT/tune_shapes/cublas_before.json" $SHAPES
for s in $SHAPES; do
    IFS=, read -r m k n <<< "$s"
    step "tune $m $k $n"
    timeout ${TUNE_TIMEOUT:-80} python3 -m tiletraffic tune gemm --m $m --k $k --n $n --device NVIDIA \
        --top 4 --jobs 16 --seed 1 --out "$OUT/tune_shapes/tune-$m-$k-$n.json" > "$OUT/tune_shapes/tune-$m-$k-$n.txt" 2>&1 \
        || echo "tune $s exit $?"
    tail -12 "$OUT/tune_shapes/tune-$m-$k-$n.txt"
done
step cublas after
timeout 60 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$OUT/tune_shapes/cublas_after.json" $SHAPES
step done
tar czf "$OUT/tune_shapes.tar.gz" -C "$OUT" tune_shapes && rm -rf "$OUT/tune_shapes"
