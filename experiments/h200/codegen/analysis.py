"""Two builds of one source on the H200: the section of ``validation.md`` that compares the
machine code NVIDIA's OpenCL driver runs with the CUDA build the counters come from.

Reads ``codegen/h200_codegen.json.gz`` (written on the device by
:mod:`experiments.h200.codegen.driver`)
and renders it with the predictions of both device models (``nvidia-h200``: the OpenCL
build, scalar local loads; ``nvidia-h200-cuda``: 128-bit local loads). Nothing here needs a
GPU.
"""
from __future__ import annotations

from pathlib import Path

from tiletraffic.simulator.model.device_model import DeviceModel

from experiments.h200.hardware import modelled_launch
from experiments.h200.ncu import metric_value

from experiments.h200.data import load_json

SHARED_LD = "smsp__inst_executed_op_shared_ld.sum"
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"


def load_codegen(directory: str | Path) -> dict | None:
    """``codegen/h200_codegen.json.gz`` of a report directory, or None if it has none."""
    return load_json(Path(directory) / "codegen" / "h200_codegen.json.gz")


def _local_loads(counts: dict | None) -> str:
    if not counts:
        return "—"
    return f"{counts.get('LDS', 0)} / {counts.get('LDS.128', 0)}"


def _ms(run: dict | None) -> str:
    if not run or "median_s" not in run:
        return "—"
    ok = run.get("check", {}).get("ok")
    return f"{run['median_s'] * 1e3:.3f}" + ("" if ok else " (check failed)")




def code_rows(data: dict) -> list[dict]:
    """Per kernel, the static local-load instructions (32-bit LDS, 128-bit LDS.128) of the
    OpenCL driver's JIT output, the CUDA driver's JIT of the same PTX, and the NVRTC build
    assembled by ptxas."""
    jit = data.get("jit_sass", {}).get("kernels", {})
    offline = {k["id"]: k for k in data.get("code", {}).get("kernels", [])}
    rows = []
    for name, by in jit.items():
        first = {d: (by.get(d, {}).get("sass_counts") or [None])[0] for d in ("opencl", "cuda")}
        rows.append({"kernel": name, "opencl_driver": first["opencl"],
                     "cuda_driver_same_ptx": first["cuda"],
                     "nvrtc_build": offline.get(name, {}).get("cuda", {}).get("sass_counts")})
    return rows


def cubin_checks(data: dict, model: DeviceModel) -> list[dict]:
    """Nsight Compute's local-load counters of the OpenCL driver's own cubins against the
    OpenCL build's model (``model``)."""
    out = []
    for rec in data.get("counters_cubin", {}).get("records", []):
        measured = metric_value(rec, SHARED_LD)
        if measured is None:
            continue
        launch = modelled_launch(rec["schedule"], rec["m"], rec["k"], rec.get("n"),
                                 rec["tile"], model)
        out.append({"case": rec["id"], "predicted": launch.memory.local_load_requests,
                    "measured": measured,
                    "wavefronts": metric_value(rec, SHARED_WAVEFRONTS),
                    "predicted_wavefronts": launch.memory.local_load_wavefronts,
                    "duration_s": (metric_value(rec, "gpu__time_duration.sum") or 0) * 1e-9})
    return out


def codegen_section(data: dict | None, model: DeviceModel) -> tuple[list[str], dict]:
    """Markdown lines of the section and its machine-readable summary (``{}`` without data)."""
    if not data:
        return [], {}
    rows = code_rows(data)
    times = data.get("times", {}).get("cases", [])
    cubin = {r["id"]: r for r in data.get("opencl_cubin", {}).get("cases", [])}
    checks = cubin_checks(data, model)
    occupancy = data.get("opencl_occupancy", {}).get("cases", [])
    carveout = data.get("carveout", {}).get("cases", [])
    options = data.get("opencl_options", {}).get("cases", [])
    meta = data.get("meta", {})
    lines = [
        "## Two builds of one source", "",
        "The OpenCL event times of the tiled kernels are longer than Nsight's durations of "
        "the CUDA build of the same generated source, the naive kernels' are not. "
        "`experiments/h200/codegen/driver.py` (one device call on "
        f"{meta.get('created_utc', '?')}, `codegen/command.txt`) looked at the machine code "
        "each build runs: the OpenCL driver's PTX (`CL_PROGRAM_BINARIES`), what its JIT made "
        "of it (read from the driver's compute cache, `CUDA_CACHE_PATH`), the same PTX "
        "compiled by the CUDA driver's JIT, and the NVRTC build; and it timed them side by "
        "side, every result checked against a float64 product. Files: `codegen/` "
        "(`code.tar.gz` holds every PTX, cubin and disassembly).", "",
        "Local-load instructions in the machine code (static count in the disassembly, "
        "32-bit `LDS` / 128-bit `LDS.128`; the compilers unroll loops differently, so a row "
        "shows which widths each build uses, not equal work):", "",
        "| kernel | OpenCL driver's JIT | CUDA driver's JIT of the same PTX | NVRTC build |",
        "|---|---|---|---|"]
    for r in rows:
        if not any((r["opencl_driver"] or {}).get(k) or (r["nvrtc_build"] or {}).get(k)
                   for k in ("LDS", "LDS.128")):
            continue
        lines.append(f"| {r['kernel']} | {_local_loads(r['opencl_driver'])} | "
                     f"{_local_loads(r['cuda_driver_same_ptx'])} | "
                     f"{_local_loads(r['nvrtc_build'])} |")
    lines += [
        "", "Kernel times (ms, median of 10 launches after 2 warm-ups, measured in this "
        "call, so they differ slightly from the validation run's above): the OpenCL build "
        "through OpenCL (events); the OpenCL driver's cubin loaded through CUDA; the OpenCL "
        "driver's PTX compiled by the CUDA driver; the NVRTC build (CuPy events):", "",
        "| case | OpenCL | OpenCL driver's cubin via CUDA | its PTX via CUDA's JIT | NVRTC build |",
        "|---|---|---|---|---|"]
    for t in times:
        if "opencl" not in t:
            continue
        lines.append(f"| {t['id']} | {_ms(t.get('opencl'))} | {_ms(cubin.get(t['id']))} | "
                     f"{_ms(t.get('opencl_ptx'))} | {_ms(t.get('cuda'))} |")
    refused = [f"{t['id']} ({t['error'].split(':', 1)[-1].strip()})" for t in times
               if "opencl" not in t and t.get("error")]
    lines += ["", "— : not run. The OpenCL driver's cubin was launched through CUDA for the "
              "five cases of the Nsight table below only; matvec-local-whole's OpenCL PTX made "
              "an illegal memory access when loaded through CUDA in a first run (which ends a "
              "CUDA context) and was not loaded so again."
              + (" Not in the table: " + "; ".join(refused) + "." if refused else "")]
    exact = sum(1 for c in checks if c["predicted"] == c["measured"])
    by_id = {t["id"]: t for t in times}
    cubin_pairs = [(r["median_s"], by_id[r["id"]]["opencl"]["median_s"]) for r in cubin.values()
                   if r.get("check", {}).get("ok") and "opencl" in by_id.get(r["id"], {})]
    cubin_gap = max((abs(a / b - 1) for a, b in cubin_pairs), default=0.0)
    local = [t for t in times if ("tiled" in t["id"] or "-local" in t["id"])
             and "opencl" in t and "opencl_ptx" in t]
    faster = [1 - t["opencl_ptx"]["median_s"] / t["opencl"]["median_s"] for t in local]
    ptx_faster = (min(faster, default=0.0), max(faster, default=0.0))
    naive = [t for t in times if "naive" in t["id"] and "opencl" in t and "cuda" in t]
    naive_gap = max((abs(t["cuda"]["median_s"] / t["opencl"]["median_s"] - 1) for t in naive),
                    default=0.0)
    lines += ["", "Nsight Compute on the OpenCL driver's own cubins (loaded through CUDA), "
              f"against the `{model.name}` model (the OpenCL build's: scalar local loads):", "",
              "| case | local load instructions, predicted | measured | local load "
              "wavefronts, predicted | measured | duration (ms) |", "|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c['case']} | {c['predicted']:,} | {c['measured']:,.0f} | "
                     f"{c['predicted_wavefronts']:,} | {c['wavefronts'] or 0:,.0f} | "
                     f"{c['duration_s'] * 1e3:.3f} |")
    res = ", ".join(f"{o['id']}: {o.get('max_resident_per_sm', '?')} "
                    f"({o.get('sms_used', '?')} SMs used)" for o in occupancy)
    lines += [
        "", "What the data say:", "",
        "- **The OpenCL time belongs to the OpenCL driver's machine code.** Its JIT compiles "
        "every local load to a 32-bit `LDS`; the CUDA driver, given the very same PTX, and "
        "NVRTC merge four consecutive words of a work-item's row of `tile_A` (and of "
        "matvec-local's `x` chunk) into one 128-bit `LDS.128`. The OpenCL driver's cubin, "
        f"launched through CUDA, takes the OpenCL time (within {cubin_gap * 100:.2f}% for "
        f"the {len(cubin_pairs)} cases run); the CUDA driver's code of the same PTX takes "
        f"{ptx_faster[0] * 100:.0f}–{ptx_faster[1] * 100:.0f}% less time than the OpenCL "
        "build for the kernels with local memory. "
        f"The naive kernels have no local loads; their NVRTC build's times differ from the "
        f"OpenCL ones by at most {naive_gap * 100:.1f}% of the OpenCL time.",
        f"- **Local-load instructions of the OpenCL build: {exact} of {len(checks)} equal** "
        f"(of which {sum(1 for c in checks if c['measured'] == 0)} without local loads) "
        f"to the `{model.name}` model's count (scalar loads: two per multiply-add and "
        "sub-group for the tiled GEMMs); the CUDA build's counts in \"Every case\" are "
        "compared with `nvidia-h200-cuda` (128-bit loads).",
        f"- **Not occupancy**: most work-groups resident at once per SM under OpenCL, measured "
        f"(`%smid` and `%globaltimer` per work-group, inline PTX): {res}; as under CUDA "
        "(the matrix-vector launches have fewer work-groups than SMs).",
    ]
    if carveout:
        parts = {True: [], False: []}
        for cc in carveout:
            if "tiled" not in cc["id"] and "local" not in cc["id"]:
                continue  # no local memory: the same time in every build
            runs = [r for r in cc.get("runs", []) if r.get("check", {}).get("ok")]
            default = next((r for r in runs if r["carveout"] == -1), None)
            same = [r["median_s"] for r in runs if default and
                    r["occupancy_calculator_resident"] == default["occupancy_calculator_resident"]]
            ocl = next((t.get("opencl", {}).get("median_s") for t in times
                        if t["id"] == cc["id"]), None)
            if same and ocl and (max(same) < ocl or min(same) <= ocl):
                parts[max(same) < ocl].append(
                    f"{cc['id']} {min(same) * 1e3:.2f}–{max(same) * 1e3:.2f} ms "
                    f"(OpenCL {ocl * 1e3:.2f})")
        lines.append("- **Not the shared-memory carveout**: no carveout (0–100%, `carveout`) "
                     "that leaves the occupancy as it is makes the CUDA driver's code of the "
                     "OpenCL PTX as slow as OpenCL for " + "; ".join(parts[True]) + "."
                     + (" For " + "; ".join(parts[False]) + " the carveouts' range contains "
                        "the OpenCL time; there the cubin run above decides."
                        if parts[False] else ""))
    if options:
        lines.append("- **Not a build option**: the tiled kernels built with " + ", ".join(
            f"`{' '.join(r['options'])}`" for r in options[0]["runs"] if r["options"])
            + " take the OpenCL time of the default build within "
            + f"{_option_spread(options) * 100:.2f}% (`opencl_options`).")
    lines += [
        "", "The device model therefore comes in two builds: `nvidia-h200` (what tiletraffic "
        "launches through OpenCL: `local_vector_words` = 1) and `nvidia-h200-cuda` "
        "(`local_vector_words` = 4); times, speedups and rankings use the first, the "
        "Nsight counters are compared with the second.", ""]
    summary = {"code": rows, "cubin_local_loads": checks,
               "cubin_vs_opencl_max_relative_difference": cubin_gap,
               "opencl_ptx_via_cuda_faster_than_opencl": list(ptx_faster),
               "naive_opencl_vs_nvrtc_max_relative_difference": naive_gap,
               "cubin_local_loads_exact": f"{exact}/{len(checks)}",
               "opencl_resident_per_sm": {o["id"]: o.get("max_resident_per_sm")
                                          for o in occupancy}}
    return lines, summary


def _option_spread(options: list[dict]) -> float:
    """Largest relative difference of a build option's OpenCL time from the default's."""
    worst = 0.0
    for case in options:
        runs = [r for r in case.get("runs", []) if "median_s" in r]
        base = next((r["median_s"] for r in runs if not r["options"]), None)
        if base:
            worst = max([worst] + [abs(r["median_s"] / base - 1) for r in runs])
    return worst
