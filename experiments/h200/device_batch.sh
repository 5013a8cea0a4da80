#!/usr/bin/env bash
# One device call for the GLSL and CUDA questions on the H200: the CUDA example
# transpose_shared (experiments/h200/cuda_examples), the chapter's GLSL GEMMs through Vulkan
# and OpenCL (experiments/h200/glsl_vulkan), then kernels of the CUDA corpus
# (experiments/h200/cuda_corpus) until CORPUS_DEADLINE_S (default 220 s of the corpus
# driver). EXAMPLES (default "transpose_shared") names the cases of the CUDA examples' driver;
# GLSL=0 leaves the GLSL part out. From the repository root, `.whl` carried (wheels and
# tools/glslangValidator) and GL_DEBS (default .gl) holding the Vulkan loader's .deb files:
#   run(command='bash experiments/h200/device_batch.sh "$OUT"', carry=[".whl", ".gl"])
# Brings back OUT/cuda_examples.tar.gz, OUT/glsl_vulkan.tar.gz, OUT/cuda_corpus.tar.gz and
# OUT/batch.log.
set -u
OUT=${1:?usage: device_batch.sh OUT}
exec > >(tee "$OUT/batch.log") 2>&1
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
    .whl/*.whl . || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
    > /etc/OpenCL/vendors/nvidia.icd
EXAMPLES=${EXAMPLES:-transpose_shared}
echo "=== $(( $(date +%s) - t0 )) s: CUDA examples $EXAMPLES"
mkdir -p "$OUT/cuda_examples"
CASES=()
for c in $EXAMPLES; do CASES+=(--case "$c"); done
PYTHONUNBUFFERED=1 timeout 240 python3 -m experiments.h200.cuda_examples.driver \
    --out "$OUT/cuda_examples" "${CASES[@]}" --deadline-s 120
tar czf "$OUT/cuda_examples.tar.gz" -C "$OUT" cuda_examples && rm -rf "$OUT/cuda_examples"
echo "=== $(( $(date +%s) - t0 )) s: glsl_vulkan"
[ "${GLSL:-1}" = 0 ] || PYTHONUNBUFFERED=1 timeout 260 bash experiments/h200/glsl_vulkan/run.sh "$OUT"
[ -d "$OUT/glsl_vulkan" ] && tar czf "$OUT/glsl_vulkan.tar.gz" -C "$OUT" glsl_vulkan \
    && rm -rf "$OUT/glsl_vulkan"     # what a run stopped by its timeout left
echo "=== $(( $(date +%s) - t0 )) s: cuda_corpus"
DEADLINE_S=${CORPUS_DEADLINE_S:-220} timeout $(( 570 - ($(date +%s) - t0) )) \
    bash experiments/h200/cuda_corpus/run.sh "$OUT"
tar czf "$OUT/cuda_corpus.tar.gz" -C "$OUT" cuda_corpus && rm -rf "$OUT/cuda_corpus"
echo "=== $(( $(date +%s) - t0 )) s: done"
ls -la "$OUT"
