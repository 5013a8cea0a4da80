"""The scale targets of the default path, each measured in one run: its time, its target
and their ratio (below 1 meets it), with the machine's load average beside every figure.

- ``counts``: the exact counts of the path ``simulate`` takes
  (:func:`tiletraffic.simulator.engine.fast_path.count_launch`) at N = 4096 and 8192
  (M = N = K; a matrix-vector product N x N, a reduction of N·N elements) within 2 s, for
  every built-in GEMM family (gemm-split-k included) and every OpenCL example launch file;
  ``path`` says how they were taken (``classes``: one work-group per class, by the
  integers each work-group loads for a kernel whose bounds read an integer buffer; ``+K``:
  the K loop's counts from three short K) and ``closed form`` whether they equal the closed forms
  where the schedule has them;
- ``corpus``: the same for every accepted kernel of the OpenCL corpus (tests/corpora/opencl/)
  at sizes comparable to N = 4096 and 8192: every integer size of its launch file that no
  ``local_size`` expression reads multiplied by one whole factor, the one that brings the
  launch's extent (the larger of its work-items and its largest buffer's elements) nearest
  N² (a generated CSR matrix's non-zero count then the non-zeros of its grown rows); each kernel in a child process stopped after ``--corpus-timeout`` seconds; ``how``
  gives the path, the extent, the ``--set`` sizes and why an accelerator did not apply;
- ``oclgrind``: the same counts as Oclgrind's (``crosscheck``'s run: the kernel on Oclgrind
  with its instruction counter, in a worker process whose CPU time is counted) at N = 128
  and 256, at least 1000 times faster: the speed-up in wall time and in CPU time (the
  fast path's time the best of three calls, each on a schedule built afresh);
- ``check``: ``tiletraffic.check`` (every hazard kind of every work-group: races in local
  and global memory, uninitialised reads, out-of-bounds, barrier divergence) of every GEMM
  family at 1024³ within 10 s; ``path`` says how: ``classes`` where the launch was proved
  clean on its work-group classes (:mod:`tiletraffic.simulator.engine.class_check`: the
  representatives and extreme members of every class, and every work-group executing only
  its outputs' accesses), else ``every work-group``;
- ``launch check``: the check before launch
  (:func:`tiletraffic.simulator.engine.launch_check.check_launch`: one representative
  work-group per class of identical traffic and its extreme members, the edges among them,
  hazards at the real K,
  the sum length from three short K) of every GEMM family at 4096³ within 5 s.

Each row has the wall time and this process's CPU time: on a machine shared with other
work the wall time grows with the load, the CPU time much less (an idle core's time is
about the CPU time). ``ratio`` is the wall time over the target, ``cpu ratio`` the CPU
time's.

    python benchmarks/scale_targets.py [--only counts corpus oclgrind check launch-check]
        [--oclgrind-sizes 128 256] [--corpus-sizes 4096 8192] [--corpus-timeout 30]
        [--corpus-only pyfai/addition ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "opencl"
GEMM_FAMILIES = ("gemm-naive", "gemm-tiled", "gemm-vectorized", "gemm-register-blocked",
                 "gemm-prefetch", "gemm-warp-tiled", "gemm-split-k")
OCLGRIND_CASES = ("gemm-tiled", "examples/opencl/mm_tiled.toml")
OCLGRIND_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
                 "local_store_elems", "barriers")


def launch_sizes(name: str, n: int) -> dict[str, int]:
    """The sizes of the example launch file ``name`` at N = ``n``."""
    return {"mm_tiled": {"N": n}, "mm_helper": {"M": n, "K": n, "N": n},
            "mm_reg2x2": {"M": n, "K": n, "N": n}, "matvec_chunked": {"M": n, "K": n},
            "matvec_half": {"M": n, "K": n},
            "transpose_padded": {"N": n}, "reduce_local": {"n": n * n}}[name]


def build(case: str, n: int):
    import tiletraffic as tt

    if case.endswith(".toml"):
        return tt.build(str(ROOT / case), set=launch_sizes(Path(case).stem, n))
    return tt.build(case, n, n, n)


def measured(fn):
    """``(value, wall s, CPU s, load average)`` of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu, os.getloadavg()[0]


def row(target: str, case: str, n, wall: float, cpu: float, limit: float, how: str,
        load: float) -> None:
    print(f"{target:12s} {case:36s} {n!s:>5s} {wall:8.2f} {cpu:8.2f} {limit:7.1f} "
          f"{wall / limit:6.2f} {cpu / limit:6.2f}  {load:5.1f}  {how}", flush=True)


def counts_target(sizes=(4096, 8192)) -> None:
    from tiletraffic.analysis.api.schedules import closed_form, closed_form_differences
    from tiletraffic.simulator.engine.fast_path import count_launch

    cases = [*GEMM_FAMILIES, *(str(p.relative_to(ROOT)) for p in sorted(EXAMPLES.glob("*.toml")))]
    for case in cases:
        for n in sizes:
            sch = build(case, n)
            counted, wall, cpu, load = measured(lambda: count_launch(sch))
            path = ("classes" if counted.by_classes else "every work-group") + \
                ("+K" if counted.by_classes and counted.k_extrapolated else "")
            formula = closed_form(sch)
            agrees = "-" if formula is None else \
                "agrees" if not closed_form_differences(formula, counted.counts.to_dict()) \
                else "DIFFERS"
            row("counts", case, n, wall, cpu, 2.0, f"{path}; closed form {agrees}", load)


def oclgrind_target(sizes=(128, 256)) -> None:
    import resource

    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_counts
    from tiletraffic.simulator.engine.fast_path import count_launch

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    for case in OCLGRIND_CASES:
        for n in sizes:
            sch = build(case, n)
            before = children_cpu()
            ocl, ocl_wall, _, ocl_load = measured(lambda: oclgrind_counts(sch, timeout_s=3600))
            ocl_cpu = children_cpu() - before   # Oclgrind runs in a worker process
            # the fast path: the best of three (one call takes milliseconds, well inside the
            # noise of a shared machine), each on a fresh schedule (no probe cached)
            fresh = [build(case, n) for _ in range(3)]
            runs = [measured(lambda: count_launch(one)) for one in fresh]
            counted, wall, cpu, load = min(runs, key=lambda r: r[1])
            ours, theirs = counted.counts.to_dict(), ocl.to_dict()
            equal = all(ours[k] == theirs[k] for k in OCLGRIND_KEYS)
            print(f"{'oclgrind':12s} {case:36s} {n:5d} {wall:8.3f} {cpu:8.3f}  Oclgrind "
                  f"{ocl_wall:.1f} s wall, {ocl_cpu:.1f} s CPU (load {ocl_load:.1f}): "
                  f"{ocl_wall / wall:.0f}x faster in wall time, {ocl_cpu / max(cpu, 1e-3):.0f}x "
                  f"in CPU time (target 1000x); counts {'equal' if equal else 'DIFFER'}  "
                  f"load {load:.1f}", flush=True)


def check_target(n: int = 1024) -> None:
    import tiletraffic as tt
    from tiletraffic.simulator.engine.accelerators.class_safety import (classes_problem,
                                                                        translation_problem)
    from tiletraffic.simulator.engine.class_check import worth_classes
    from tiletraffic.simulator.ir.sequence import is_sequence

    for family in GEMM_FAMILIES:
        sch = tt.build(family, n, n, n)
        hazards, wall, cpu, load = measured(lambda: tt.check(sch))
        kernels = sch.kernels if is_sequence(sch) else (sch,)
        by_classes = worth_classes(sch) and not hazards and all(
            classes_problem(k) is None and translation_problem(k) is None for k in kernels)
        row("check", family, n, wall, cpu, 10.0,
            f"{'classes' if by_classes else 'every work-group'}; {len(hazards)} hazard(s)",
            load)


def launch_check_target(n: int = 4096) -> None:
    import tiletraffic as tt
    from tiletraffic.simulator.engine.launch_check import check_launch

    for family in GEMM_FAMILIES:
        sch = tt.build(family, n, n, n)
        checked, wall, cpu, load = measured(lambda: check_launch(sch))
        row("launch check", family, n, wall, cpu, 5.0,
            f"{checked.scope.split(' (')[0]}; sum length {checked.sum_length}; "
            f"{'clean' if not checked.hazards else checked.hazards}", load)


CORPUS = ROOT / "tests" / "corpora" / "opencl"


def corpus_accepted() -> list[str]:
    """The corpus's accepted kernels (launch file path relative to the corpus, no .toml), as
    the corpus README's table lists them."""
    rows = []
    for line in (CORPUS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and "/" in cells[0] and not cells[0].startswith("-") \
                and cells[4] == "accepted":
            rows.append(cells[0].strip("`"))
    return sorted(rows)


def _launch_extent(path: Path, overrides: dict[str, int]) -> int:
    """The larger of the launch's work-items and its largest buffer's elements."""
    from tiletraffic.frontend import launch_file

    launch = launch_file.read(path, overrides)
    items = 1
    for i, raw in enumerate(launch.data.get("launch", {}).get("global_size", [])):
        items *= launch.value(f"launch.global_size[{i}]", raw)
    elements = [1]
    for name, raw in launch.data.get("args", {}).items():
        if isinstance(raw, dict) and isinstance(raw.get("shape"), list):
            n = 1
            for j, e in enumerate(raw["shape"]):
                n *= launch.value(f"args.{name}.shape[{j}]", e)
            elements.append(n)
    return max(items, *elements)


def _consistent(path: Path, sizes: dict[str, int]) -> dict[str, int]:
    """``sizes`` with the non-zero count ``NNZ`` of a launch whose row pointers are the
    corpus's generated CSR matrix (``references.py:csr_row_pointers``) set to the non-zeros
    its grown rows hold (the generator accepts no other count), the other sizes unchanged."""
    from tiletraffic.frontend import launch_file

    launch = launch_file.read(path, sizes)
    generated = [raw for raw in launch.data.get("args", {}).values()
                 if isinstance(raw, dict) and str(raw.get("data", "")).endswith(
                     "references.py:csr_row_pointers")]
    if not generated or "NNZ" not in sizes:
        return sizes
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_references",
                                                  CORPUS / "references.py")
    references = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(references)
    return {**sizes, "NNZ": int(references.csr_row_pointers(dict(launch.names))[-1])}


def corpus_sizes(kernel: str, n: int) -> tuple[dict[str, int], int]:
    """``(--set sizes, extent)``: the kernel's launch file with its problem sizes multiplied
    by one whole factor (at least 1), the one that brings the launch's extent (the larger of
    its work-items and its largest buffer's elements) nearest ``n``². The problem sizes are
    the integer [sizes] that a ``global_size`` expression or the largest global buffer's shape (at
    the file's own sizes) or an integer buffer's computed data reads and no ``local_size``
    expression or local buffer's shape reads: a filter's length, a batch count or an index stays as the file has
    it; where ``global_size`` reads none of them (one fixed NDRange) nothing grows. A
    generated CSR matrix's ``NNZ`` is the non-zeros its grown rows hold (:func:`_consistent`)."""
    from tiletraffic.frontend import expressions, launch_file

    path = CORPUS / f"{kernel}.toml"
    launch = launch_file.read(path)

    def names(raws) -> set[str]:
        out: set[str] = set()
        for raw in raws:
            if isinstance(raw, str):
                out |= expressions.parse(raw, launch.names).names
        return out

    table = launch.data.get("launch", {})
    fixed = names(table.get("local_size", []))
    for raw in launch.data.get("args", {}).values():  # local memory keeps its size
        if isinstance(raw, dict) and "access" not in raw and isinstance(raw.get("shape"), list):
            fixed |= names(raw["shape"])
    read = names(table.get("global_size", []))
    grows = read - fixed
    shapes = [raw["shape"] for raw in launch.data.get("args", {}).values()
              if isinstance(raw, dict) and isinstance(raw.get("shape"), list)
              and "access" in raw]           # a global buffer, not local memory
    if shapes:
        def elements(shape) -> int:
            out = 1
            for j, e in enumerate(shape):
                out *= launch.value(f"shape[{j}]", e)
            return out
        read |= names(max(shapes, key=elements))
    if not grows & set(launch.sizes):
        return {}, _launch_extent(path, {})        # one fixed NDRange: nothing grows
    for raw in launch.data.get("args", {}).values():  # integer data computed from the sizes
        if isinstance(raw, dict) and "data" in raw and isinstance(raw.get("shape"), list):
            read |= names(raw["shape"])
    scalable = [k for k, raw in launch.data.get("sizes", {}).items()
                if isinstance(raw, int) and not isinstance(raw, bool) and k in read
                and k not in fixed]
    target = n * n

    def at(f: int):
        sizes = _consistent(path, {k: launch.sizes[k] * f for k in scalable})
        return sizes, _launch_extent(path, sizes)

    best, f = at(1), 1
    while best[1] < target and scalable:
        f *= 2
        nxt = at(f)
        if nxt[1] == best[1]:
            break
        if nxt[1] > target:
            lo, hi = f // 2, f          # bisect the factor between lo and hi
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if at(mid)[1] > target:
                    hi = mid
                else:
                    lo = mid
            a, b = at(lo), at(hi)
            best = a if abs(a[1] - target) <= abs(b[1] - target) else b
            break
        best = nxt
    return best


def _corpus_case(kernel: str, n: int) -> None:
    """Child process: one corpus kernel's default counts at extent ~n², one line of fields
    separated by tabs."""
    import warnings

    from tiletraffic.frontend import launch_file
    from tiletraffic.simulator.engine.fast_path import count_launch

    sizes, extent = corpus_sizes(kernel, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sch = launch_file.load(CORPUS / f"{kernel}.toml", sizes)
    counted, wall, cpu, load = measured(lambda: count_launch(sch))
    path = ("classes" if counted.by_classes else "every work-group") + \
        ("+K" if counted.by_classes and counted.k_extrapolated else "")
    why = "; ".join(sorted({w for w in (*counted.why_every_work_group,
                                         *counted.why_whole_k_loop) if w}))
    sets = ",".join(f"{k}={v}" for k, v in sizes.items())
    print(f"RESULT\t{wall}\t{cpu}\t{load}\t{extent}\t{sets}\t{path}\t{why}", flush=True)


def corpus_target(sizes=(4096, 8192), timeout_s: float = 30.0, only=None) -> None:
    """Each accepted corpus kernel at extent ~N² (``corpus_sizes``), in a child process
    stopped after ``timeout_s`` (its row then says so)."""
    import subprocess

    for kernel in only or corpus_accepted():
        for n in sizes:
            load0 = os.getloadavg()[0]
            try:
                out = subprocess.run([sys.executable, __file__, "--corpus-case", kernel,
                                      str(n)], capture_output=True, text=True,
                                     timeout=timeout_s)
            except subprocess.TimeoutExpired:
                print(f"{'corpus':12s} {kernel:36s} {n:5d}  over {timeout_s:.0f} s "
                      f"(stopped)  load {load0:.1f}", flush=True)
                continue
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT\t")]
            if not lines:
                err = (out.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{'corpus':12s} {kernel:36s} {n:5d}  failed: {err}", flush=True)
                continue
            _, wall, cpu, load, extent, sets, path, why = lines[0].split("\t")
            row("corpus", kernel, n, float(wall), float(cpu), 2.0,
                f"{path}; extent {int(extent)}; --set {sets or '-'}"
                f"{'; ' + why if why else ''}", float(load))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=["counts", "corpus", "oclgrind",
                                                      "check", "launch-check"])
    parser.add_argument("--oclgrind-sizes", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--corpus-sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--corpus-timeout", type=float, default=30.0)
    parser.add_argument("--corpus-only", nargs="+", default=None,
                        help="corpus kernels to run (default: every accepted one)")
    parser.add_argument("--corpus-case", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus_case:
        _corpus_case(args.corpus_case[0], int(args.corpus_case[1]))
        return
    print(f"{len(os.sched_getaffinity(0))} cores; python {sys.version.split()[0]}")
    print(f"{'target':12s} {'case':36s} {'N':>5s} {'wall s':>8s} {'cpu s':>8s} "
          f"{'target':>7s} {'ratio':>6s} {'cpu':>6s}  {'load':>5s}  how")
    if "counts" in args.only:
        counts_target()
    if "check" in args.only:
        check_target()
    if "launch-check" in args.only:
        launch_check_target()
    if "corpus" in args.only:
        corpus_target(args.corpus_sizes, args.corpus_timeout, args.corpus_only)
    if "oclgrind" in args.only:
        oclgrind_target(args.oclgrind_sizes)


if __name__ == "__main__":
    main()
