#!/usr/bin/env bash
# One device call: half (float16) against float32 storage and batched GEMMs against one
# product at a time, our kernels (tiletraffic validate of the committed predictions) and
# cuBLAS through torch in the same call (experiments/h200/half_batched/README.md).
# From the repository root, .whl carried (pyopencl and its wheels):
#   run(command='bash experiments/h200/half_batched/run.sh "$OUT"', carry=[".whl"])
# Brings back OUT/half_batched.tar.gz (validate's results, cuBLAS's JSON, nvidia-smi, the
# log) and OUT/run.log.
set -u
OUT=${1:?usage: run.sh OUT}
HERE=experiments/h200/half_batched
exec > >(tee "$OUT/run.log") 2>&1
t0=$(date +%s)
R="$OUT/half_batched"
mkdir -p "$R"
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
    .whl/*.whl . || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
    > /etc/OpenCL/vendors/nvidia.icd
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total \
    --format=csv > "$R/nvidia-smi.csv" 2>&1
cat "$R/nvidia-smi.csv"
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null || true
# The predictions of the card that came: the H200's calibrated model, or for an H100 the
# nearest built-in model transferred by the H100 SXM5 datasheet (both committed before).
PRED="$HERE/predicted/predictions.json"
if grep -q "H100" "$R/nvidia-smi.csv"; then PRED="$HERE/predicted/predictions-h100.json"; fi
echo "predictions: $PRED"
echo "=== $(( $(date +%s) - t0 )) s: our kernels (validate --predictions)"
PYTHONUNBUFFERED=1 timeout 330 python3 -m tiletraffic validate \
    --predictions "$PRED" --repeat 20 --rounds 2 \
    --out "$R/validate"
echo "validate exit status $?"
echo "=== $(( $(date +%s) - t0 )) s: cuBLAS through torch"
PYTHONUNBUFFERED=1 timeout 120 python3 -m experiments.h200.half_batched.cublas \
    --out "$R/cublas.json"
echo "cublas exit status $?"
echo "=== $(( $(date +%s) - t0 )) s: comparison"
timeout 60 python3 -m experiments.h200.half_batched.analysis --validate "$R/validate" \
    --cublas "$R/cublas.json" --predictions "$PRED" \
    --out "$R/comparison.md"
if [ "$PRED" != "$HERE/predicted/predictions.json" ]; then
    # Not the H200: the card's own model calibrated in this call, beside the committed
    # transferred one (its predictions made after the measurement, so shown, not judged).
    echo "=== $(( $(date +%s) - t0 )) s: calibrate this card"
    timeout 150 python3 -m tiletraffic calibrate --out "$R/calibrated.toml" \
        && timeout 60 python3 -m tiletraffic validate --predict-only \
            --device-model "$R/calibrated.toml" --cases "$HERE/cases.toml" \
            --out "$R/predictions-calibrated.json" \
        && timeout 60 python3 -m experiments.h200.half_batched.analysis \
            --validate "$R/validate" --cublas "$R/cublas.json" \
            --predictions "$R/predictions-calibrated.json" --out "$R/comparison-calibrated.md"
    echo "calibrate exit status $?"
fi
echo "=== $(( $(date +%s) - t0 )) s: done"
cp "$OUT/run.log" "$R/run.log" 2>/dev/null
tar czf "$OUT/half_batched.tar.gz" -C "$OUT" half_batched && rm -rf "$R"
ls -la "$OUT"
