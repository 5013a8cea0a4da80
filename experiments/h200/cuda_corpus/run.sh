#!/usr/bin/env bash
# Kernels of the committed CUDA corpus (tests/corpora/cuda/) on the H200, in one device call:
# each launched from its own CUDA source by `tiletraffic run` (NVRTC through CuPy; checked,
# timed), profiled by Nsight Compute around that same command where the run succeeded, and
# compared with `tiletraffic model --device-model nvidia-h200-cuda`
# (experiments/h200/cuda_corpus/driver.py). From the repository root, `.whl` carried (the
# wheels of experiments/h200/cuda_examples/run.sh, libclang's among them):
#   bash experiments/h200/cuda_corpus/run.sh "$OUT" [CASE ...]
# Brings back OUT/cuda_corpus/: environment.txt, command.txt, table.md, results.json and a
# folder per case (run, ncu and model logs, ncu-raw.csv, model.json). DEADLINE_S (default
# 300): no case is started after it.
set -u
OUT=${1:?usage: run.sh OUT [CASE ...]}
shift
python3 -c "import clang.cindex, tiletraffic" 2>/dev/null || {
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
        .whl/*.whl . && export PYTHONPATH=/tmp/site:$PWD || exit 1; }
D="$OUT/cuda_corpus"
mkdir -p "$D"
{
    nvidia-smi -L
    echo "ncu: $(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null)"
    ncu --version 2>/dev/null | tail -1
    python3 -c "import cupy; print('cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'NVRTC', cupy.cuda.nvrtc.getVersion())"
} > "$D/environment.txt" 2>&1
cat "$D/environment.txt"
CASES=()
for c in "$@"; do CASES+=(--case "$c"); done
PYTHONUNBUFFERED=1 timeout 570 python3 -m experiments.h200.cuda_corpus.driver --out "$D" \
    --deadline-s "${DEADLINE_S:-300}" ${CASES[@]+"${CASES[@]}"}
echo "driver exit $?"
