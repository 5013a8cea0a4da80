#!/usr/bin/env bash
# The CUDA examples (examples/cuda/) on the H200, in one device call: each
# launched from its own CUDA source by `tiletraffic run` (checked, timed), profiled by Nsight
# Compute around that same command, and compared with `tiletraffic model --device-model
# nvidia-h200-cuda` (experiments/h200/cuda_examples/driver.py). From the repository root:
#   run(command='bash experiments/h200/cuda_examples/run.sh "$OUT" [CASE ...]', carry=[".whl"])
# .whl/ holds the wheels the device lacks, libclang's among them (the CUDA front end reads
# the source there too): ../shared/device/fetch-wheels.sh libclang (in a git worktree, run
# the pip download line of that script by hand). CASE: launch-file names of the driver's
# CASES (default: all, as many as fit before DEADLINE_S, default 420 s; call again with the
# rest). Brings back OUT/cuda_examples/: environment.txt, command.txt, table.md, results.json
# and a folder per case (run, ncu and model logs, ncu-raw.csv, model.json).
set -u
OUT=${1:?usage: run.sh OUT [CASE ...]}
shift
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
    .whl/*.whl . && export PYTHONPATH=/tmp/site:$PWD || exit 1
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
    > /etc/OpenCL/vendors/nvidia.icd
D="$OUT/cuda_examples"
mkdir -p "$D"
{
    nvidia-smi -L
    echo "ncu: $(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null)"
    ncu --version 2>/dev/null | tail -1
    python3 -c "import cupy, clang.cindex, pyopencl, click; print('cupy', cupy.__version__, 'pyopencl', pyopencl.VERSION_TEXT)"
    python3 -m tiletraffic devices
} > "$D/environment.txt" 2>&1
cat "$D/environment.txt"
CASES=()
for c in "$@"; do CASES+=(--case "$c"); done
PYTHONUNBUFFERED=1 timeout 570 python3 -m experiments.h200.cuda_examples.driver --out "$D" \
    --deadline-s "${DEADLINE_S:-420}" ${CASES[@]+"${CASES[@]}"}
echo "driver exit $?"
