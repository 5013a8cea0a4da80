#!/usr/bin/env bash
# Issue #14's pre-registered test and issue #13's tuned ladder step on the lent H200, in ONE
# device call. Everything it compares against was committed before the call:
#   reports/nvidia-h200/preregistered/predictions.json      validate --predict-only, calibrated model
#   reports/nvidia-h200/preregistered/predictions-generic.json   the same, --base generic-gpu model
# (the tuner's ranking is computed by the tuner itself, on the device machine's 16 cores, before
# it measures: its JSON holds every prediction)
#   reports/nvidia-h200/strides/predictions.json            experiments.h200.strides.predict
# Run from the repository root after the device preamble of experiments/README.md, in two calls
# (each under the 10-minute limit of one device command):
#   PYTHONUNBUFFERED=1 bash experiments/h200/preregistered/run.sh "$OUT" measure   # validate, cuBLAS, strides
#   PYTHONUNBUFFERED=1 bash experiments/h200/preregistered/run.sh "$OUT" tune      # the tuner at 1024/4096/8192
# Each brings back PART.tar.gz.
# Round 2 (reports/nvidia-h200/preregistered2: the staging_round_trip calibration and the
# staged tile loads): R=reports/nvidia-h200/preregistered2 TUNE_SIZES="1024 4096" and PART
# measure2 (validate, the ladder at 1024/4096/8192 with cuBLAS; no strides: their model did not
# change), then tune.
set -u
OUT=${1:?usage: run.sh OUT measure|measure2|tune}
PART=${2:?usage: run.sh OUT measure|measure2|tune}
R=${R:-reports/nvidia-h200/preregistered}
TUNE_SIZES=${TUNE_SIZES:-1024 4096 8192}
TT="python3 -m tiletraffic"
mkdir -p "$OUT/tune"
start=$(date +%s)
step() { echo "=== $(( $(date +%s) - start )) s: $*"; }
if [ "$PART" = measure ]; then
step validate
timeout 300 $TT validate --device NVIDIA --predictions "$R/predictions.json" --out "$OUT/validate" \
    || echo "validate exit $?"
step cublas
timeout 60 python3 -m experiments.h200.ladder.driver --cublas-only --out "$OUT/cublas" || echo "cublas exit $?"
step strides
timeout 150 python3 -m experiments.h200.strides.driver --out "$OUT/strides" || echo "strides exit $?"
step done
tar czf "$OUT/measure.tar.gz" -C "$OUT" validate cublas strides && rm -rf "$OUT/validate" "$OUT/cublas" "$OUT/strides"
elif [ "$PART" = measure2 ]; then
step validate
timeout 240 $TT validate --device NVIDIA --predictions "$R/predictions.json" --out "$OUT/validate" \
    || echo "validate exit $?"
step ladder   # with cuBLAS FP32 at each size, in the same process
timeout 260 python3 -m experiments.h200.ladder.driver --out "$OUT/ladder" --budget-s 230 || echo "ladder exit $?"
step done
tar czf "$OUT/measure.tar.gz" -C "$OUT" validate ladder && rm -rf "$OUT/validate" "$OUT/ladder"
else
for n in $TUNE_SIZES; do
    step "tune $n"
    timeout 180 $TT tune gemm --m $n --n $n --k $n --device NVIDIA --device-model "$R/h200-calibrated.toml" \
        --top 8 --jobs 16 --seed $n --out "$OUT/tune/gemm-$n.json" || echo "tune $n exit $?"
done
step done
tar czf "$OUT/tune.tar.gz" -C "$OUT" tune && rm -rf "$OUT/tune"
fi
