"""The OpenCL C examples (examples/opencl/): each kernel, read through its launch file, is
counted as its closed forms say, is clean, and its broken twin (one barrier removed from the
source text) races; it is modelled, runs on PoCL equal to its numpy reference, and Oclgrind's
counts of the very source equal the simulator's.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.opencl import clang_ast

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "opencl"


def ceil_div(a, b):
    return -(-a // b)


def closed_forms(name: str, s: dict) -> dict:
    """Exact counts of each example at its launch file's sizes ``s``, worked by hand."""
    if name == "mm_tiled":           # N x N, TS x TS tiles, N / TS tile steps
        n, ts = s["N"], s["TS"]
        return {"global_load_elems": 2 * n ** 3 // ts, "global_store_elems": n * n,
                "local_store_elems": 2 * n ** 3 // ts, "local_load_elems": 2 * n ** 3,
                "barriers": 2 * (n // ts) * (n // ts) ** 2, "flop": 2 * n ** 3}
    if name == "matvec_chunked":     # every work-group stages all of x once
        m, k, wg = s["M"], s["K"], s["WG"]
        groups = ceil_div(m, wg)
        chunks = ceil_div(k, 64)
        return {"global_load_elems": m * k + groups * k, "global_store_elems": m,
                "local_store_elems": groups * k, "local_load_elems": m * k,
                "barriers": groups * 2 * chunks, "flop": 2 * m * k}
    if name == "matvec_half":        # half storage: vload_half4 of A and x, 4 elements each
        m, k = s["M"], s["K"]
        return {"global_load_elems": 2 * m * k, "global_store_elems": m,
                "global_load_bytes": 4 * m * k, "global_store_bytes": 2 * m,
                "local_store_elems": 0, "local_load_elems": 0, "barriers": 0,
                "flop": 2 * m * k}
    if name == "mm_reg2x2":          # 4 loads per k per work-item, no local memory
        m, k, n = s["M"], s["K"], s["N"]
        return {"global_load_elems": m * n * k, "global_store_elems": m * n,
                "local_store_elems": 0, "local_load_elems": 0, "barriers": 0,
                "flop": 2 * m * n * k}
    if name == "transpose_padded":
        n = s["N"]
        return {"global_load_elems": n * n, "global_store_elems": n * n,
                "local_store_elems": n * n, "local_load_elems": n * n,
                "barriers": (n // 32) ** 2, "flop": 0}
    if name == "reduce_local":       # log2(WG) halving steps, one barrier each
        n, wg = s["n"], s["WG"]
        groups, steps = ceil_div(n, wg), int(math.log2(wg))
        adds = groups * (wg - 1)
        return {"global_load_elems": n, "global_store_elems": groups,
                "local_store_elems": groups * wg + min(n, groups * wg) + adds,
                "local_load_elems": 2 * adds + groups, "barriers": groups * (1 + steps),
                "flop": adds}
    if name == "mm_helper":          # zero-padded 8 x 8 tiles, any M, K, N
        m, k, n, b = s["M"], s["K"], s["N"], 8
        tiles, gm, gn = ceil_div(k, b), ceil_div(m, b), ceil_div(n, b)
        return {"global_load_elems": m * k * gn + k * n * gm, "global_store_elems": m * n,
                "local_store_elems": 2 * gm * gn * b * b * tiles,
                "local_load_elems": 2 * gm * gn * b * b * tiles * b,
                "barriers": 2 * tiles * gm * gn,
                "flop": 2 * gm * gn * b * b * tiles * b}
    raise KeyError(name)


NAMES = ("mm_tiled", "matvec_chunked", "mm_reg2x2", "transpose_padded", "reduce_local",
         "mm_helper", "matvec_half")
WITH_BARRIERS = ("mm_tiled", "matvec_chunked", "transpose_padded", "reduce_local",
                 "mm_helper")


def load(name, **sets):
    return launch_file.load(EXAMPLES / f"{name}.toml", sets or None)


def test_every_example_is_listed():
    assert sorted(p.stem for p in EXAMPLES.glob("*.toml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_closed_forms(name):
    sch = load(name)
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    names = launch_file.read(EXAMPLES / f"{name}.toml").names
    expected = closed_forms(name, names)
    assert {k: counts[k] for k in expected} == expected


@pytest.mark.parametrize("name,sets", [("mm_tiled", {"N": 64}), ("matvec_chunked", {"M": 70, "K": 130}),
                                       ("mm_helper", {"M": 9, "K": 17, "N": 5}),
                                       ("reduce_local", {"n": 300})])
def test_counts_follow_set_sizes(name, sets):
    sch = load(name, **sets)
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    names = launch_file.read(EXAMPLES / f"{name}.toml", sets).names
    expected = closed_forms(name, names)
    assert {k: counts[k] for k in expected} == expected


@pytest.mark.parametrize("name", NAMES)
def test_clean_and_modelled(name):
    sch = load(name)
    assert tt.check(sch, seed=3) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch = tt.model(sch, "nvidia-h200")
    assert launch.prediction.predicted_time_s > 0
    assert launch.counts == tt.simulate(sch, compute_values=False).counts


def without_barrier(source: str, path: str, which: int) -> str:
    """``source`` with its ``which``-th (0-based) ``barrier(...);`` statement cut out, found
    through clang's cursors (their byte offsets), not by matching text."""
    from clang.cindex import CursorKind
    tu = clang_ast.parse(source, path)
    calls = [c for c in tu.cursor.walk_preorder()
             if c.kind == CursorKind.CALL_EXPR and c.spelling == "barrier"
             and c.location.file is not None and c.location.file.name == path]
    call = sorted(calls, key=lambda c: c.extent.start.offset)[which]
    start, end = call.extent.start.offset, call.extent.end.offset
    end = source.index(";", end) + 1
    return source[:start] + ";" + source[end:]


@pytest.mark.parametrize("name", WITH_BARRIERS)
def test_broken_twin_races(name):
    sch = load(name)
    user = sch.extra["opencl"]
    which = 1 if name == "mm_tiled" else 0     # mm_tiled: the barrier after the products
    broken_text = without_barrier(user["source"], user["path"], which)
    launch = launch_file.read(EXAMPLES / f"{name}.toml")
    table = launch.data
    args = {}
    for arg, raw in table["args"].items():
        if isinstance(raw, dict):
            args[arg] = {"shape": [launch.names[e] if isinstance(e, str) else e
                                   for e in raw["shape"]], "access": raw["access"]}
        else:
            args[arg] = launch.value(arg, raw)
    broken = tt.from_opencl(broken_text, user["kernel"], sch.global_size, sch.local_size,
                            args, " ".join(launch.build_options()))
    assert tt.simulate(broken, compute_values=False, hazards="report").counts.barriers < \
        tt.simulate(sch, compute_values=False).counts.barriers
    kinds = {h.kind for h in tt.check(broken, seed=3)}
    assert "data-race" in kinds


@pytest.mark.parametrize("name", NAMES)
def test_runs_on_pocl_equal_to_numpy(name, pocl):
    sch = load(name, **{"mm_tiled": {"N": 64}}.get(name, {}))
    ref = launch_file.reference_function(EXAMPLES / f"{name}.toml")
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=ref, seed=5)
    assert result.check.ok


@pytest.mark.parametrize("name", NAMES)
def test_oclgrind_counts_of_the_source_equal_the_simulator(name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    small = {"mm_tiled": {"N": 32}, "matvec_chunked": {"M": 70, "K": 100},
             "reduce_local": {"n": 300}, "transpose_padded": {"N": 64}}.get(name, {})
    sch = load(name, **small)
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


def _work_group_barrier_twin(tmp_path, build_options: str) -> Path:
    """reduce_local with its barriers written as OpenCL C 2.0's work_group_barrier (the
    second with its scope) and ``build_options`` in its launch file."""
    import shutil
    for f in ("reduce_local.toml", "references.py"):
        shutil.copy(EXAMPLES / f, tmp_path / f)
    source = (EXAMPLES / "reduce_local.cl").read_text()
    assert source.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2
    first, _, rest = source.partition("barrier(CLK_LOCAL_MEM_FENCE);")
    (tmp_path / "reduce_local.cl").write_text(
        first + "work_group_barrier(CLK_LOCAL_MEM_FENCE);" + rest.replace(
            "barrier(CLK_LOCAL_MEM_FENCE);",
            "work_group_barrier(CLK_LOCAL_MEM_FENCE, memory_scope_work_group);"))
    toml = tmp_path / "reduce_local.toml"
    toml.write_text(toml.read_text().replace(
        'kernel = "reduce_local"',
        f'kernel = "reduce_local"\nbuild_options = "{build_options}"'))
    return toml


@pytest.mark.parametrize("std", ["CL2.0", "CL3.0"])
def test_work_group_barrier_under_opencl_c_2_is_a_barrier(tmp_path, std):
    twin = tt.build(str(_work_group_barrier_twin(tmp_path, f"-cl-std={std}")))
    counts = tt.simulate(twin, compute_values=False).counts.to_dict()
    assert counts == tt.simulate(load("reduce_local"), compute_values=False).counts.to_dict()
    assert tt.check(twin, seed=3) == []


def test_work_group_barrier_without_opencl_c_2_is_refused(tmp_path):
    for options, given in (("", "no -cl-std option"), ("-cl-std=CL1.2", "-cl-std=CL1.2")):
        with pytest.raises(clang_ast.FrontendError) as err:
            tt.build(str(_work_group_barrier_twin(tmp_path, options)))
        assert f"reduce_local.cl:13:5: work_group_barrier is OpenCL C 2.0 and the build " \
               f"options give {given} (OpenCL C 1.2 has none): add -cl-std=CL2.0 or " \
               "-cl-std=CL3.0 to them, or write barrier(...)" in str(err.value)
    path = _work_group_barrier_twin(tmp_path, "-cl-std=CL2.0")
    cl = tmp_path / "reduce_local.cl"
    cl.write_text(cl.read_text().replace("memory_scope_work_group", "memory_scope_work_item"))
    with pytest.raises(clang_ast.FrontendError, match="narrower than the work-group"):
        tt.build(str(path))


def test_work_group_barrier_runs_on_pocl(tmp_path, pocl):
    path = _work_group_barrier_twin(tmp_path, "-cl-std=CL2.0")
    result = tt.run(tt.build(str(path)), pocl, repeat=10, warmup=1,
                    reference=launch_file.reference_function(path), seed=5)
    assert result.check.ok
