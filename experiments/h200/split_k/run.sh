#!/usr/bin/env bash
# Split-K on the H200: `tiletraffic tune` (its space now holding gemm-split-k beside
# gemm-warp-tiled) at the shapes with few blocks of C, cuBLAS FP32 (TF32 off) before and
# after in the same call; from the repository root after the device preamble of
# experiments/README.md:
#   PYTHONUNBUFFERED=1 bash experiments/h200/split_k/run.sh "$OUT"
# Brings back OUT/split_k.tar.gz (tune JSON and text per shape, cuBLAS JSON, log).
# SHAPES (M,K,N ...), TIMEOUTS (seconds per tune) and MODEL (a device model for
# --device-model; default: tune's own, the device's queried values over nvidia-h200) may be
# set; a results file resume/tune-M-K-N.json is resumed.
set -u
OUT=${1:?usage: run.sh OUT}
SHAPES=${SHAPES:-"128,4096,11008 512,11008,4096 1000,1000,1000"}
TIMEOUTS=(${TIMEOUTS:-150 170 110})
D="$OUT/split_k"
mkdir -p "$D"
start=$(date +%s)
step() { echo "=== $(( $(date +%s) - start )) s: $*"; }
step cublas before
timeout 60 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$D/cublas_before.json" $SHAPES
i=0
for s in $SHAPES; do
    IFS=, read -r m k n <<< "$s"
    step "tune $m $k $n (timeout ${TIMEOUTS[$i]} s)"
    [ -f "resume/tune-$m-$k-$n.json" ] && cp "resume/tune-$m-$k-$n.json" "$D/" && RESUME=--resume || RESUME=
    timeout ${TIMEOUTS[$i]} python3 -m tiletraffic tune gemm --m $m --k $k --n $n --device NVIDIA \
        --top 4 --jobs 16 --seed 1 $RESUME ${MODEL:+--device-model $MODEL} --out "$D/tune-$m-$k-$n.json" > "$D/tune-$m-$k-$n.txt" 2>&1 \
        || echo "tune $s exit $?"
    tail -8 "$D/tune-$m-$k-$n.txt"
    i=$((i + 1))
done
step cublas after
timeout 60 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$D/cublas_after.json" $SHAPES
step done
tar czf "$OUT/split_k.tar.gz" -C "$OUT" split_k && rm -rf "$D"
