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
# manylinux x86-64) and .whl/tools/ with glslangValidator and libvulkan.so.1 (Debian's
# glslang-tools and libvulkan1, used only where the machine has none):
#   PYTHONUNBUFFERED=1 bash experiments/h200/glsl_vulkan/run.sh "$OUT"
# Brings back OUT/glsl_vulkan.tar.gz: env.txt (what Vulkan found), one JSON and text per
# kernel, size and API, table.md (python3 -m experiments.h200.glsl_vulkan.table).
# SIZES (default "1024 4096"), REPEAT (default 10) and DEVICE (the OpenCL device, default
# NVIDIA) may be set; a rehearsal here: SIZES=64 DEVICE=pocl bash .../run.sh /tmp/out.
set -u
OUT=${1:?usage: run.sh OUT}
SIZES=${SIZES:-"1024 4096"}
REPEAT=${REPEAT:-10}
DEVICE=${DEVICE:-NVIDIA}
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
        echo "glslangValidator: carried, $GLSLANG_VALIDATOR"
    else
        echo "glslangValidator: none"
    fi
    "${GLSLANG_VALIDATOR:-glslangValidator}" --version 2>&1 | head -1
    if ldconfig -p | grep 'libvulkan\.so\.1 ' >/dev/null; then
        echo "loader: $(ldconfig -p | grep 'libvulkan\.so\.1 ' | head -1)"
    elif [ -f "$TOOLS/libvulkan.so.1" ]; then
        export LD_LIBRARY_PATH="$TOOLS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        echo "loader: carried, $TOOLS/libvulkan.so.1"
    else
        echo "loader: none"
    fi
    # NVIDIA's Vulkan driver is libGLX_nvidia.so.0; its manifest nvidia_icd.json is often
    # missing in containers, so one is written for the library where it is found
    ICD=$(find /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia \
          -name 'nvidia_icd*.json' 2>/dev/null | head -1)
    LIB=$(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib \
          -maxdepth 3 -name 'libGLX_nvidia.so.0' 2>/dev/null | head -1)
    echo "manifest found: ${ICD:-none}"
    echo "libGLX_nvidia.so.0 found: ${LIB:-none}"
    if [ -z "$ICD" ] && [ -n "$LIB" ]; then
        ICD="$D/nvidia_icd.json"
        printf '{\n  "file_format_version": "1.0.0",\n  "ICD": {"library_path": "%s", "api_version": "1.3.0"}\n}\n' \
            "$LIB" > "$ICD"
        echo "manifest written: $ICD"
    fi
    if [ -n "$ICD" ]; then
        export VK_ICD_FILENAMES="$ICD" VK_DRIVER_FILES="$ICD"
    fi
    ls /usr/local/nvidia/lib64 2>/dev/null | grep -iE 'vulkan|GLX|nvidia-gl|gpucomp' || true
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || true
    timeout 60 python3 -c "from tiletraffic.gpu.vulkan import open_device; print('device:', open_device())" 2>&1
} > "$D/env.txt" 2>&1
cat "$D/env.txt"

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
