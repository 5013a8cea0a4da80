#!/usr/bin/env bash
# The fifth CUDA corpus device call (experiments/h200/cuda_corpus/call5.py: 12 corpus kernels
# and the examples' templated warp-tiled SGEMM), in one command from the repository root.
#
# Here, once (libclang reads the schedules; it cannot travel with the tree):
#   bash experiments/h200/cuda_corpus/call5.sh --prepare [WHEELS]   (PYTHON: default .venv's)
# writes .call5/pk (the saved schedules, the SGEMMs first) and .call5/whl (the wheels the GPU
# machine lacks, copied from WHEELS, default .whl, without libclang, tree-sitter and vulkan,
# which it does not need); .call5 ignores itself (its .gitignore), so `carry` takes it.
#
# There (one device call, `.call5` carried):
#   bash experiments/h200/cuda_corpus/call5.sh "$OUT"
# installs the wheels into /tmp/site, names the card (nvidia-smi), runs the NVRTC include
# test, then each case: `run`'s function on its own CUDA source (checked against the
# reference, timed: 10 launches after 1 warm-up), Nsight Compute around that same command
# (the compared counters), a second pass of shared-memory counters where the model predicts
# shared traffic; then the table against call5/predicted/ (committed before the call).
# Writes OUT/call5.log, environment.txt, command.txt, results.json, table.md,
# shared_table.md and cuda_corpus5.tar.gz (every case's logs, Nsight Compute pages and
# reports). DEADLINE_S (default 270): no case starts after it; LIMIT_S (default 330): the
# cases stop by then; the tables and the tarball are written after.
set -u
if [ "${1:-}" = "--prepare" ]; then
    WHEELS=${2:-.whl}
    rm -rf .call5 && mkdir -p .call5/whl || exit 1
    echo '*' > .call5/.gitignore      # the folder ignores itself: git never takes it in
    for w in "$WHEELS"/*.whl; do
        case "$(basename "$w")" in libclang-*|tree_sitter*|vulkan-*) ;; *) cp "$w" .call5/whl/ ;; esac
    done
    PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
    "$PY" -m experiments.h200.cuda_corpus.call5 prepare .call5/pk || exit 1
    du -sh .call5/whl .call5/pk
    exit 0
fi
OUT=${1:?usage: call5.sh OUT   (or: call5.sh --prepare [WHEELS])}
D="$OUT/cuda_corpus5"
mkdir -p "$D"
exec > >(tee "$OUT/call5.log") 2>&1
t0=$(date +%s)
[ -d .call5/pk ] || { echo "no .call5/pk: run call5.sh --prepare here first and carry .call5"; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .call5/whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site:$PWD
echo "bash experiments/h200/cuda_corpus/call5.sh \"\$OUT\"  (LIMIT_S=${LIMIT_S:-330}" \
     "DEADLINE_S=${DEADLINE_S:-270}; checkout $(git rev-parse HEAD 2>/dev/null || echo 'without .git'))" \
     > "$OUT/command.txt"
{
    echo "checkout: $(pwd)"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "ncu: $(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null)"
    ncu --version 2>/dev/null | tail -1
    python3 -c "import cupy; print('cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'NVRTC', cupy.cuda.nvrtc.getVersion())"
    python3 -c "from tiletraffic.gpu.runtime.cuda_run import cuda_toolkit_include_folders as f; print('toolkit include folders given to NVRTC:', [str(p) for p in f()])"
} > "$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt"
cp "$OUT/environment.txt" "$D/"
echo "=== $(( $(date +%s) - t0 )) s: NVRTC include test"
timeout 60 python3 -m pytest -q --noconftest -p no:cacheprovider \
    tests/test_cuda_nvrtc_include.py 2>&1 | tail -4 | tee "$D/nvrtc_include_test.txt"
echo "=== $(( $(date +%s) - t0 )) s: cases"
PYTHONUNBUFFERED=1 timeout $(( ${LIMIT_S:-330} - ($(date +%s) - t0) )) \
    python3 -m experiments.h200.cuda_corpus.pickled device .call5/pk "$D" "${DEADLINE_S:-270}"
echo "pickled device exit $? at $(( $(date +%s) - t0 )) s"
cp "$D/results.json" "$OUT/results.json" 2>/dev/null || echo '[]' > "$OUT/results.json"
python3 -m experiments.h200.cuda_corpus.call5 table "$OUT/results.json" "$OUT/environment.txt" \
    > "$OUT/table.md"
python3 -m experiments.h200.cuda_corpus.shared_table "$OUT/results.json" \
    experiments/h200/cuda_corpus/call5/predicted/model_nvidia-h200-cuda.json > "$OUT/shared_table.md"
cat "$OUT/table.md"
tar czf "$OUT/cuda_corpus5.tar.gz" -C "$OUT" cuda_corpus5
if [ "$(stat -c %s "$OUT/cuda_corpus5.tar.gz")" -gt 15000000 ]; then  # keep under 16 MiB
    find "$D" -name '*.ncu-rep' -delete
    tar czf "$OUT/cuda_corpus5.tar.gz" -C "$OUT" cuda_corpus5
fi
rm -rf "$D"
echo "=== $(( $(date +%s) - t0 )) s: done"
ls -la "$OUT"
