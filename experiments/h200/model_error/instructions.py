"""Where the warp-tiled kernels' time goes, from committed counters (no GPU): the instructions
the H200 executed against the model's ``issued_instructions``, the warps' issue states, and
the issue rate each measured kernel must have reached.

    python -m experiments.h200.model_error.instructions [--cache DIR]

Counters: Nsight Compute on the CUDA build of the warp-tiled study's 8 configurations at
N = 1024 (``reports/nvidia-h200/warp_tiled/counters.json.gz``) and on the OpenCL driver's own
build (the build the timings come from) of 3 warp-tiled configurations at 1000³, 256³ and
777×332×516 (``reports/nvidia-h200/local_counters/run4/``, with PC sampling of the warps'
issue states); the static loop of that OpenCL build's machine code
(``run4/.../code.tar.gz``). Prints three tables: instructions per build and shape; the warp
states at 1000³ (OpenCL); and, for every measured warp-tiled kernel whose configuration was
counted, the instruction ratio r, the issue rate its measured time implies (r x the model's
instructions on the busiest scheduler / (measured time x clock)) and the calibrated model's
error with its issue ceiling scaled by r and then also without its barrier latency.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import tarfile
import warnings
from collections import Counter
from pathlib import Path

from experiments.h200.data import REPORT, read_json
from experiments.h200.model_error import cases as C
from experiments.h200.model_error.table import (MODELS, case_label, observation, predictions,
                                                source_digest)

CUDA_COUNTERS = REPORT / "warp_tiled" / "counters.json.gz"
OPENCL_RUN = REPORT / "local_counters" / "run4" / "local_counters_run.tar.gz"
STATES = ("selected", "not_selected", "short_scoreboard", "long_scoreboard", "wait",
          "dispatch_stall", "barrier", "no_instructions", "mio_throttle")


def _key(family: str, tile: int, options: dict) -> tuple:
    return (family, int(tile), tuple(sorted((k, int(v)) for k, v in options.items())))


def _config_of_id(case_id: str) -> tuple | None:
    """(family, tile, options) of a counter record id such as
    ``gemm-warp-tiled-M1000-K1000-N1000-T16-bk32-tm8-tn4-wg_rows8-wn32-opencl-jit``."""
    m = re.match(r"(gemm-warp-tiled)-M(\d+)-K(\d+)-N(\d+)-T(\d+)-(.*?)(-opencl-jit)?$", case_id)
    if not m:
        return None
    opts = dict(re.match(r"([a-z_]+?)(\d+)$", part).groups() for part in m.group(6).split("-"))
    return _key(m.group(1), int(m.group(5)), opts), tuple(int(m.group(i)) for i in (2, 3, 4))


def opencl_records(path: Path = OPENCL_RUN) -> tuple[list[dict], dict[str, str]]:
    """The OpenCL-build Nsight records of run4 and the OpenCL JIT's machine code (file name
    -> SASS text) of its warp-tiled kernels."""
    with tarfile.open(path) as tar:
        data = json.load(tar.extractfile("lc/local_counters.json"))
        code = tar.extractfile("lc/code.tar.gz")
        with tarfile.open(fileobj=code) as inner:
            sass = {Path(m.name).name: inner.extractfile(m).read().decode()
                    for m in inner.getmembers()
                    if "warp-tiled" in m.name and m.name.endswith(".opencl-jit.0.sass")
                    and "envreg" not in m.name}
    return data["ncu_opencl"]["records"], sass


def counted(cache: Path) -> list[dict]:
    """Every warp-tiled counter record with the model's issued instructions at its shape
    (``nvidia-h200`` for the OpenCL build, ``nvidia-h200-cuda`` for the CUDA build)."""
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.prediction import issued_instructions

    rows = []
    cuda = [(r, "CUDA") for r in read_json(CUDA_COUNTERS)["records"]]
    opencl = [(r, "OpenCL") for r in opencl_records()[0]]
    digest = source_digest()
    for rec, build in cuda + opencl:
        parsed = _config_of_id(rec["id"])
        metrics = rec.get("metrics") or {}
        if parsed is None or "smsp__inst_executed.sum" not in metrics:
            continue
        (family, tile, options), (m, k, n) = parsed
        model = device_model("nvidia-h200" if build == "OpenCL" else "nvidia-h200-cuda")
        case = {"family": family, "m": m, "k": k, "n": n, "tile": tile,
                "options": dict(options)}
        seen = observation(case, model, cache, digest)
        issued = issued_instructions(seen.schedule, seen.counts, seen.memory, model)
        value = lambda name: (metrics.get(name) or {}).get("value")  # noqa: E731
        row = {"config": (family, tile, options), "build": build, "shape": (m, k, n),
               "instructions": value("smsp__inst_executed.sum"), "model_issued": issued,
               "registers": value("launch__registers_per_thread"),
               "warps_per_scheduler": value("smsp__maximum_warps_avg_per_active_cycle")}
        samples = value("smsp__pcsamp_sample_count")
        if samples:
            row["states"] = {s: value(f"smsp__pcsamp_warps_issue_stalled_{s}") / samples
                             for s in STATES}
        rows.append(row)
    return rows


def static_loop(sass: str) -> Counter:
    """Opcodes (without modifiers) of the longest backward-branch loop of a SASS listing."""
    ins = [(int(a, 16), op, line) for line in sass.splitlines()
           for a, op in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)",
                                   line)]
    best: list = []
    for addr, op, line in ins:
        target = re.search(r"BRA\s+(?:`\()?0x([0-9a-f]+)", line) if op == "BRA" else None
        if target and int(target.group(1), 16) < addr:
            body = [o for a, o, _ in ins if int(target.group(1), 16) <= a <= addr]
            best = body if len(body) > len(best) else best
    return Counter(o.split(".")[0] for o in best)


def ratios(rows: list[dict]) -> dict[tuple, tuple[float, str]]:
    """Configuration -> (Nsight instructions / model issued, which record): the OpenCL
    build at 1000³ where counted, else the CUDA build at 1024."""
    out: dict = {}
    for r in rows:
        if r["build"] == "CUDA" and r["config"] not in out:
            out[r["config"]] = (r["instructions"] / r["model_issued"], "CUDA 1024³")
    for r in rows:
        if r["build"] == "OpenCL" and r["shape"] == (1000, 1000, 1000):
            out[r["config"]] = (r["instructions"] / r["model_issued"], "OpenCL 1000³")
    return out


def _cfg(config: tuple) -> str:
    family, tile, options = config
    o = dict(options)
    return f"{o['wg_rows']}×{tile} wi, {o['tm']}×{o['tn']}, bk {o['bk']}, wn {o['wn']}"


def markdown(rows: list[dict], sass: dict[str, str], measured: list[dict]) -> str:
    lines = ["| configuration | build | shape | registers | Nsight instructions | model's "
             "issued | ratio |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {_cfg(r['config'])} | {r['build']} | {'×'.join(map(str, r['shape']))}"
                     f" | {r['registers']} | {r['instructions']:,.0f} | {r['model_issued']:,.0f}"
                     f" | {r['instructions'] / r['model_issued']:.3f} |")
    lines += ["", "Static K-step loop of the OpenCL build (opcodes, modifiers dropped):", "",
              "| kernel | loop instructions | FFMA | LDS | STS | LDG | BAR | other |",
              "|---|---|---|---|---|---|---|---|"]
    for name, text in sorted(sass.items()):
        c = static_loop(text)
        modelled = sum(c[o] for o in ("FFMA", "LDS", "STS", "LDG", "BAR"))
        lines.append(f"| {name.removesuffix('.opencl-jit.0.sass')} | {sum(c.values())} | "
                     f"{c['FFMA']} | {c['LDS']} | {c['STS']} | {c['LDG']} | {c['BAR']} | "
                     f"{sum(c.values()) - modelled} ({sum(c.values()) / modelled:.3f}×) |")
    lines += ["", "Warp states of the OpenCL build (PC sampling, share of samples):", "",
              "| configuration | shape | resident warps per scheduler (occupancy) | "
              + " | ".join(STATES) + " |", "|---|---|---|" + "---|" * len(STATES)]
    for r in rows:
        if "states" in r:
            s = r["states"]
            lines.append(f"| {_cfg(r['config'])} | {'×'.join(map(str, r['shape']))} | "
                         f"{r['warps_per_scheduler']:g} | "
                         + " | ".join(f"{s[k]:.3f}" for k in STATES) + " |")
    by = ratios(rows)
    lines += ["", "| kernel | measured ms | sub-groups per scheduler | r (from) | implied issue "
              "rate | calibrated error | × r | × r, no barrier latency |",
              "|---|---|---|---|---|---|---|---|"]
    errs: dict[str, list[float]] = {"model": [], "r": [], "r_nolat": []}
    for row in measured:
        key = _key(row["family"], row["tile"], row["options"])
        if key not in by:
            continue
        r, where = by[key]
        p = row["calibrated"]
        t = p["terms_s"]
        clock, rate = row["_clock_hz"], row["_issue_rate"]
        per_scheduler = t["issue_s"] * clock * rate * r
        implied = per_scheduler / (row["measured_s"] * clock)
        ceilings = {k: v for k, v in t.items()
                    if k not in ("barrier_latency_s", "tail_s", "launch_overhead_s")}
        scaled = dict(ceilings, issue_s=t["issue_s"] * r)
        with_r = max(scaled.values()) + t["barrier_latency_s"] + t["tail_s"] + t["launch_overhead_s"]
        no_lat = max(scaled.values()) + t["tail_s"] + t["launch_overhead_s"]
        e = [p["error"], with_r / row["measured_s"] - 1, no_lat / row["measured_s"] - 1]
        for name, x in zip(errs, e):
            errs[name].append(x)
        lines.append(f"| {case_label(row)} | {row['measured_s'] * 1e3:.4g} | "
                     f"{p['sub_groups_per_scheduler']:g} | {r:.3f} ({where}) | {implied:.2f} | "
                     + " | ".join(f"{100 * x:+.1f}%" for x in e) + " |")
    if errs["model"]:
        lines += ["", f"Over these {len(errs['model'])} kernels, median / worst |error|: "
                  + "; ".join(f"{name} {100 * statistics.median(abs(x) for x in v):.1f}% / "
                              f"{100 * max(v, key=abs):+.1f}%" for name, v in errs.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from tiletraffic.simulator.model.device_model import device_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/tiletraffic-model-error"))
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    rows = counted(a.cache)
    measured = predictions([c for c in C.all_cases() if c["group"] == "warp-tiled"], a.cache)
    calibrated = device_model(dict(MODELS)["calibrated"])
    for row in measured:
        row["_clock_hz"] = calibrated.clock_hz
        row["_issue_rate"] = calibrated.warp_instructions_per_cycle_per_sub_partition
    print(markdown(rows, opencl_records()[1], measured), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
