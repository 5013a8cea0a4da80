#!/usr/bin/env bash
# The matrix-operations chapter's naive and tiled GEMM (examples/glsl/gemm_naive.comp,
# gemm_tiled.comp) at N = 1024 and 4096 on the H200, each run twice by `tiletraffic run`:
# the shader itself compiled by glslangValidator and dispatched through NVIDIA's Vulkan driver
# (timestamp queries), and its OpenCL C translation through NVIDIA's OpenCL driver
# (TILETRAFFIC_VULKAN=off); every launch checked against the float64 reference.
#
# From the repository root after the device preamble of experiments/README.md, with `.whl`
# in the run's carry holding, besides the preamble's wheels, the wheels vulkan, cffi,
# pycparser, tree-sitter, tree-sitter-glsl-spec, libclang, click and tqdm (Python 3.12,
# manylinux x86-64) and .whl/tools/ with glslangValidator, and GL_DEBS (default .gl) holding
# Debian's libvulkan1 and the GL vendor-neutral libraries as .deb files (fetched with
# `apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2`),
# unpacked into / here: the machine has NVIDIA's Vulkan driver but no Vulkan loader.
#   PYTHONUNBUFFERED=1 bash experiments/h200/glsl_vulkan/run.sh "$OUT"
# The loader is tried with each NVIDIA manifest in turn (NVIDIA's own folder first, the one
# that opens a device is kept in VK_DRIVER_FILES). Brings back OUT/glsl_vulkan.tar.gz: env.txt
# (what Vulkan found, every manifest tried), one JSON and text per kernel, size and API,
# table.md (python3 -m experiments.h200.glsl_vulkan.table; rows labelled by the API used).
# SIZES (default "1024 4096"), REPEAT (default 10) and DEVICE (the OpenCL device, default
# NVIDIA) may be set; a rehearsal here: SIZES=64 DEVICE=pocl bash .../run.sh /tmp/out.
set -u
OUT=${1:?usage: run.sh OUT}
SIZES=${SIZES:-"1024 4096"}
REPEAT=${REPEAT:-10}
DEVICE=${DEVICE:-NVIDIA}
GL_DEBS=${GL_DEBS:-.gl}
D="$OUT/glsl_vulkan"
mkdir -p "$D"
start=$(date +%s)
step() { echo "=== $(( $(date +%s) - start )) s: $*"; }
TOOLS="$PWD/.whl/tools"

step "Vulkan: compiler, loader, NVIDIA's ICD"
{
    if command -v glslangValidator >/dev/null 2>&1; then
        echo "glslangValidator: $(command -v glslangValidator)"
    elif [ -f "$TOOLS/glslangValidator" ]; then
        chmod +x "$TOOLS/glslangValidator"
        export GLSLANG_VALIDATOR="$TOOLS/glslangValidator"
        export PATH="$TOOLS:$PATH"      # the front end's check finds it on the path
        echo "glslangValidator: carried, $GLSLANG_VALIDATOR"
    else
        echo "glslangValidator: none"
    fi
    "${GLSLANG_VALIDATOR:-glslangValidator}" --version 2>&1 | head -1
    if ! ldconfig -p | grep -q 'libvulkan\.so\.1 ' && ls "$GL_DEBS"/*.deb >/dev/null 2>&1; then
        for f in "$GL_DEBS"/*.deb; do dpkg -x "$f" / && echo "unpacked $(basename "$f")"; done
        ldconfig
    fi
    echo "loader: $(ldconfig -p | grep 'libvulkan\.so\.1 ' | head -1)"
    ls /usr/local/nvidia/lib64 2>/dev/null | grep -iE 'vulkan|GLX_nvidia|gpucomp' || true
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || true
    # a manifest may name the driver library without its folder: the folder goes on the path
    [ -d /usr/local/nvidia/lib64 ] && \
        export LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # NVIDIA's manifests, its own folder first; the first with which a device opens is kept
    chosen=""
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
               /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$icd" ] || continue
        echo "--- manifest $icd:"; cat "$icd"
        opened=$(VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd" timeout 60 python3 -c \
            "from tiletraffic.gpu.vulkan import open_device; print('device:', open_device())" 2>&1)
        rc=$?
        echo "$opened" | tail -2
        if [ "$rc" = 0 ]; then chosen="$icd"; break; fi
    done
    if [ -n "$chosen" ]; then
        echo "VK_DRIVER_FILES=$chosen (a device opened with it)"
    else
        echo "no manifest opened a Vulkan device: the vulkan rows will be the OpenCL C translation"
    fi
    echo "$chosen" > "$D/.chosen_icd"
} > "$D/env.txt" 2>&1
cat "$D/env.txt"
chosen=$(cat "$D/.chosen_icd"); rm -f "$D/.chosen_icd"
[ -n "$chosen" ] && export VK_DRIVER_FILES="$chosen" VK_ICD_FILENAMES="$chosen"

for n in $SIZES; do
    for kernel in gemm_naive gemm_tiled; do
        for api in vulkan opencl; do
            name="$api-$kernel-$n"
            step "$name"
            if [ "$api" = opencl ]; then export TILETRAFFIC_VULKAN=off; else unset TILETRAFFIC_VULKAN; fi
            timeout 400 python3 -m tiletraffic run "examples/glsl/$kernel.toml" \
                --set M=$n --set K=$n --set N=$n --device "$DEVICE" --repeat $REPEAT --warmup 2 \
                --seed 1 --json > "$D/$name.json" 2> "$D/$name.err" || echo "$name exit $?"
            tail -3 "$D/$name.err"
            unset TILETRAFFIC_VULKAN
        done
    done
done
step table
python3 -m experiments.h200.glsl_vulkan.table "$D" > "$D/table.md" 2>&1
cat "$D/table.md"
step done
tar czf "$OUT/glsl_vulkan.tar.gz" -C "$OUT" glsl_vulkan && rm -rf "$D"
