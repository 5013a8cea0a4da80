#!/usr/bin/env bash
# The register budget through the product command: `tiletraffic run gemm-warp-tiled` (the
# 128x128 block, 8x8 per work-item, BK 16) with and without --max-registers 128 at 4096^3
# and with it at 8192^3, cuBLAS FP32 (TF32 off) before and after in the same call; from the
# repository root after the device preamble of experiments/README.md:
#   PYTHONUNBUFFERED=1 bash experiments/h200/ptx_budget/product_run.sh "$OUT/pr"
set -u
D=${1:?usage: product_run.sh OUT}
mkdir -p "$D"
SHAPES="4096,4096,4096 8192,8192,8192"
BLOCK="--tile 16 --wg-rows 16 --tm 8 --tn 8 --bk 16 --wn 64"
timeout 90 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$D/cublas_before.json" $SHAPES
for n in 4096 8192; do
    for budget in 128 none; do
        [ "$n" = 8192 ] && [ "$budget" = none ] && continue
        opt=$([ "$budget" = none ] || echo "--max-registers $budget")
        echo "=== run $n budget $budget"
        timeout 150 python3 -m tiletraffic run gemm-warp-tiled --m $n --k $n --n $n $BLOCK $opt \
            --device NVIDIA --repeat 20 --json > "$D/run-$n-$budget.json" 2> "$D/run-$n-$budget.err"
        echo "exit $?"; tail -3 "$D/run-$n-$budget.err"
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['median_s'], d['max_registers'], d['registers_per_work_item'], d['check']['ok'])" "$D/run-$n-$budget.json"
    done
done
timeout 90 python3 -m experiments.h200.warp_tiled.cublas_shapes --out "$D/cublas_after.json" $SHAPES
