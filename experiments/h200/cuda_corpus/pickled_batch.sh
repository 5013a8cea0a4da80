#!/usr/bin/env bash
# One device call for the CUDA corpus through saved schedules (pickled.py), run from the root
# of a copy of this checkout (libclang cannot travel, so the schedules are read and saved
# beforehand: `python -m experiments.h200.cuda_corpus.pickled prepare PK`):
#   bash experiments/h200/cuda_corpus/pickled_batch.sh OUT PK WHL
# WHL holds the wheels of the package's needs the GPU machine lacks (pyopencl, pytools,
# siphash24, platformdirs, ...; not libclang). Writes OUT/batch4.log, OUT/results.json and
# OUT/cuda_corpus4.tar.gz (environment.txt, the toolkit include check, every case's logs,
# Nsight Compute pages and reports). LIMIT_S (default 540): the cases stop by then, the
# tarball is written after; DEADLINE_S (default 330): no case starts after it.
set -u
OUT=${1:?usage: pickled_batch.sh OUT PK WHL}
PK=${2:?usage: pickled_batch.sh OUT PK WHL}
WHL=${3:?usage: pickled_batch.sh OUT PK WHL}
D="$OUT/cuda_corpus4"
mkdir -p "$D"
exec > >(tee "$OUT/batch4.log") 2>&1
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHL"/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site:$PWD
{
    echo "checkout: $(pwd)"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "ncu: $(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null)"
    ncu --version 2>/dev/null | tail -1
    python3 -c "import cupy; print('cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'NVRTC', cupy.cuda.nvrtc.getVersion())"
    python3 -c "from tiletraffic.gpu.runtime.cuda_run import cuda_toolkit_include_folders as f; print('toolkit include folders given to NVRTC:', [str(p) for p in f()])"
    ls -la /usr/local/cuda /usr/local/cuda/include/crt/mma.h 2>&1
    head -c 300 /usr/local/cuda/version.json 2>&1; echo
    echo "crt/mma.h found at:"; find /usr /opt -path '*crt/mma.h' 2>/dev/null | head
} > "$D/environment.txt" 2>&1
cat "$D/environment.txt"
echo "=== $(( $(date +%s) - t0 )) s: NVRTC include test"
timeout 120 python3 -m pytest -q --noconftest -p no:cacheprovider \
    tests/test_cuda_nvrtc_include.py 2>&1 | tail -4 | tee "$D/nvrtc_include_test.txt"
echo "=== $(( $(date +%s) - t0 )) s: corpus cases"
PYTHONUNBUFFERED=1 timeout $(( ${LIMIT_S:-540} - ($(date +%s) - t0) )) \
    python3 -m experiments.h200.cuda_corpus.pickled device "$PK" "$D" "${DEADLINE_S:-330}"
echo "pickled device exit $?"
cp "$D/results.json" "$OUT/results.json" 2>/dev/null
tar czf "$OUT/cuda_corpus4.tar.gz" -C "$OUT" cuda_corpus4
if [ "$(stat -c %s "$OUT/cuda_corpus4.tar.gz")" -gt 15000000 ]; then  # keep under 16 MiB
    find "$D" -name '*.ncu-rep' -delete
    tar czf "$OUT/cuda_corpus4.tar.gz" -C "$OUT" cuda_corpus4
fi
rm -rf "$D"
echo "=== $(( $(date +%s) - t0 )) s: done"
ls -la "$OUT"
