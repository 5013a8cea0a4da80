#!/usr/bin/env bash
# One device call: the time model on new cases (committed predictions), calibrate with the
# issue-rate benchmark, tiletraffic tune at four target shapes, cuBLAS through torch for
# reference (experiments/h200/model_new_cases/README.md). From the repository root, .whl
# carried (pyopencl and its wheels):
#   run(command='bash experiments/h200/model_new_cases/run.sh "$OUT"', carry=[".whl"])
# Brings back OUT/model_new_cases.tar.gz (calibrated model, validate's results, tune's
# results, cuBLAS's JSON, nvidia-smi, the log) and OUT/run.log. Stops itself by
# DEADLINE_S (default 530 s) after its start: each step's timeout is cut to what is left.
set -u
OUT=${1:?usage: run.sh OUT}
HERE=experiments/h200/model_new_cases
DEADLINE_S=${DEADLINE_S:-530}
exec > >(tee "$OUT/run.log") 2>&1
t0=$(date +%s)
R="$OUT/model_new_cases"
mkdir -p "$R/tune"
step() { echo "=== $(( $(date +%s) - t0 )) s: $*"; }
# the smaller of $1 seconds and what is left before the deadline less $2 seconds (at least 1)
budget() { local left=$(( DEADLINE_S - ($(date +%s) - t0) - $2 )); \
           (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"; }
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
    .whl/*.whl . || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
    > /etc/OpenCL/vendors/nvidia.icd
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total \
    --format=csv > "$R/nvidia-smi.csv" 2>&1
cat "$R/nvidia-smi.csv"
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null || true
date -u +%Y-%m-%dT%H:%M:%SZ > "$R/started_utc.txt"
# The committed predictions of the card that came: the H200's calibrated model, or for an
# H100 the nearest built-in model transferred by the H100 SXM5 datasheet.
PRED="$HERE/predicted/predictions.json"
if grep -q "H100" "$R/nvidia-smi.csv"; then PRED="$HERE/predicted/predictions-h100.json"; fi
echo "predictions: $PRED"

step "calibrate (the issue_rate benchmark included)"
timeout "$(budget 90 400)" python3 -m tiletraffic calibrate --device NVIDIA \
    --out "$R/calibrated.toml" > "$R/calibrate.log" 2>&1
echo "calibrate exit status $?"
grep -A3 "^issue_rate\|^register_tile" "$R/calibrate.log"
# tune ranks with this call's calibration (its issue-rate table in the issue term) unless
# TUNE_MODEL names another model (e.g. nvidia-h200-calibrated: the term off)
MODEL=${TUNE_MODEL:-$R/calibrated.toml}
[ "$MODEL" != "$R/calibrated.toml" ] || [ -s "$MODEL" ] || MODEL=nvidia-h200-calibrated
echo "tune's model: $MODEL"

step "new cases: validate --predictions"
timeout "$(budget 260 200)" python3 -m tiletraffic validate --device NVIDIA \
    --predictions "$PRED" --repeat 20 --rounds 2 --out "$R/validate" \
    > "$R/validate.log" 2>&1
echo "validate exit status $?"
tail -8 "$R/validate.log"

step "cuBLAS through torch (TF32 off): the tune shapes and the new cases' GEMM shapes"
timeout "$(budget 60 200)" python3 -m experiments.h200.warp_tiled.cublas_shapes \
    --out "$R/cublas.json" --repeat 30 \
    4096,4096,4096 1000,1000,1000 512,11008,4096 128,4096,11008 8192,8192,8192 \
    2048,2048,2048 2048,4096,11008 2048,11008,4096 512,5120,13824 256,8192,8192 \
    3000,3000,3000 777,2048,1500 6144,6144,6144 512,4096,11008 2048,4096,4096 \
    3072,3072,3072 1500,1500,1500 128,11008,4096 64,4096,4096 256,13824,5120
echo "cublas exit status $?"

# tune at the target shapes in order of priority, ranked by the model calibrated above;
# 8192^3 is left out (ranking its candidates alone took about 170 s of a call).
for s in 4096,4096,4096 1000,1000,1000 512,11008,4096 128,4096,11008; do
    IFS=, read -r m k n <<< "$s"
    t=$(budget 130 25)
    step "tune $m $k $n (timeout $t s)"
    (( t > 20 )) || { echo "tune $s skipped: the call's time is spent"; continue; }
    timeout "$t" python3 -m tiletraffic tune gemm --m "$m" --k "$k" --n "$n" \
        --device NVIDIA --device-model "$MODEL" --top 8 --jobs 16 --seed 1 \
        --out "$R/tune/tune-$m-$k-$n.json" > "$R/tune/tune-$m-$k-$n.txt" 2>&1
    echo "tune $s exit status $?"
    tail -6 "$R/tune/tune-$m-$k-$n.txt"
done

step "done"
cp "$OUT/run.log" "$R/run.log" 2>/dev/null
tar czf "$OUT/model_new_cases.tar.gz" -C "$OUT" model_new_cases && rm -rf "$R"
ls -la "$OUT"
