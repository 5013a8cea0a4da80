"""The closed forms derived from the IR (isl + Barvinok) equal the simulator's counts at sizes
drawn by hypothesis, for every built-in family and every example launch file, and equal
the hand-written closed forms of the built-in families.

Each schedule's forms are derived once, at one size, and evaluated at the drawn sizes: the
forms are functions of the sizes, not the numbers of one launch. Sizes stay small and the
register-blocked families take small blocks, so that the derivations and the simulations
stay cheap."""
from __future__ import annotations

import functools
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.analysis.api.closed_forms import derive
from tiletraffic.frontend.launch_file import LaunchFileError, load
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.kernels import closed_forms
from tiletraffic.simulator.model.derived_counts import NotAffine, SizeBinding
from tiletraffic.simulator.model import derived_counts

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "opencl").glob("*.toml"))
OTHER_LANGUAGES = sorted([*(ROOT / "examples" / "cuda").glob("*.toml"),
                          *(ROOT / "examples" / "glsl").glob("*.toml")])

SMALL_BLOCKS = dict(tile=4, tm=2, tn=2, bk=4, wg_rows=4)
FAMILIES = {
    "gemm-naive": dict(tile=4), "gemm-tiled": dict(tile=4),
    "matvec-naive": dict(tile=8), "matvec-relu": dict(tile=8),
    "matvec-local": dict(tile=8, chunk=4), "matvec-local-whole": dict(tile=8),
    "matvec-rows-reduce": dict(tile=4, wg_rows=2),
    "gemm-register-blocked": SMALL_BLOCKS, "gemm-prefetch": SMALL_BLOCKS,
    "gemm-vectorized": dict(SMALL_BLOCKS, tm=4, tn=4),
    "gemm-warp-tiled": dict(tile=8, wg_rows=4, tm=4, tn=4, bk=8, wn=32),
}
"""Every built-in family with the options it is derived with."""
MULTIPLE_OF_4 = ("gemm-vectorized", "gemm-warp-tiled")
"""Families whose K and N must be multiples of 4 (float4 accesses)."""


def _build(family: str, m: int, k: int, n: int):
    return tt.build(family, m, k, None if family.startswith("matvec") else n,
                    **FAMILIES[family])


@functools.lru_cache(maxsize=None)
def _derived(family: str):
    return derive(_build(family, 24, 24, 24))


def _same(derived: dict, counts: dict) -> list[str]:
    """The counters where the derived counts differ from ``counts`` (every derived one)."""
    return [key for key, value in derived.items()
            if (counts.get(key) if not isinstance(value, dict)
                else {b: counts.get(key, {}).get(b, 0) for b in value}) != value]


def _sizes(family: str, m: int, k: int, n: int) -> dict:
    step = 4 if family in MULTIPLE_OF_4 else 1
    sizes = {"M": m, "K": k * step, "N": n * step}
    return {"M": m, "K": k} if family.startswith("matvec") else sizes


@pytest.mark.parametrize("family", FAMILIES)
def test_every_count_of_a_built_in_family_is_derived(family):
    derived = _derived(family)
    assert set(derived.not_derived) == {"global_load_elems_per_tile"}, derived.not_derived
    assert not derived.notes      # the NDRange is the family's form of the sizes
    assert set(derived.sizes) == ({"M", "K"} if family.startswith("matvec") else
                                  {"M", "K", "N"})


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 20), k=st.integers(1, 10), n=st.integers(1, 10))
def test_derived_forms_equal_the_simulator_and_the_hand_written_forms(family, m, k, n):
    sizes = _sizes(family, m, k, n)
    schedule = _build(family, sizes["M"], sizes["K"], sizes.get("N", 1))
    derived = _derived(family).evaluate(sizes)
    simulated = count_launch(schedule).counts.to_dict()
    assert not _same(derived, simulated), (sizes, _same(derived, simulated))
    assert not _same(derived, closed_forms.counts(schedule))


def test_split_k_forms_add_its_two_kernels():
    sequence = tt.build("gemm-split-k", 20, 40, 12, splits=2,
                        **FAMILIES["gemm-warp-tiled"])
    derived = derive(sequence)
    counts = count_launch(sequence).counts.to_dict()
    assert not _same(derived.evaluate(), counts)
    assert not _same(derived.evaluate(), closed_forms.counts(sequence))
    assert "C_partial" in derived.buffers


# ------------------------------------------------------------------------- launch files
def _load_near(path: Path, sizes: dict):
    """The launch file at ``sizes``, each rounded up to the smallest power of two step
    (1, 2, 4, ... 64) at which the launch is valid (a kernel without edge guards needs
    sizes that are multiples of its work-group)."""
    for step in (1, 2, 4, 8, 16, 32, 64):
        near = {name: -(-value // step) * step for name, value in sizes.items()}
        try:
            return near, load(path, near)
        except LaunchFileError:
            continue
    pytest.skip(f"{path.name}: no valid launch near {sizes}")


@functools.lru_cache(maxsize=None)
def _derived_file(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # a GLSL shader's reserved words, say
        return derive(load(path))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@settings(max_examples=3, deadline=None)
@given(scale=st.lists(st.integers(1, 8), min_size=3, max_size=3))
def test_launch_file_forms_equal_the_simulator_at_other_sizes(path, scale):
    derived = _derived_file(path)
    assert derived.sizes, f"{path.name}: no size is a parameter of its forms"
    drawn = {name: max(1, value * s // 8) if value > 8 else s
             for (name, value), s in zip(derived.sizes.items(), scale * 2)}
    sizes, schedule = _load_near(path, drawn)
    counts = count_launch(schedule, hazards="report").counts.to_dict()
    assert not _same(derived.evaluate(sizes), counts), (sizes, _same(derived.evaluate(sizes),
                                                                     counts))


@pytest.mark.parametrize("path", OTHER_LANGUAGES, ids=lambda p: f"{p.parent.name}-{p.stem}")
@pytest.mark.filterwarnings("ignore")
def test_cuda_and_glsl_launch_file_forms_equal_the_simulator_at_a_smaller_size(path):
    derived = _derived_file(path)
    assert not any("NDRange" in note for note in derived.notes), derived.notes
    sizes, schedule = _load_near(path, {name: max(1, value // 16)
                                        for name, value in derived.sizes.items()})
    counts = count_launch(schedule, hazards="report").counts.to_dict()
    assert not _same(derived.evaluate(sizes), counts), (sizes, _same(derived.evaluate(sizes),
                                                                     counts))


def test_the_course_style_tiled_gemm_loads_2_n_cubed_over_ts():
    """N multiple of TS = 16: A and B each read N³/TS times, barriers 2·(N/TS)³."""
    formula = tt.closed_form(tt.build(str(ROOT / "examples/opencl/mm_tiled.toml")))
    assert formula.source == "derived"
    assert list(formula.sizes) == ["N"]
    for n in (16, 64, 4096, 8192):
        counts = formula.evaluate({"N": n})
        assert counts["global_load_elems"] == 2 * n**3 // 16
        assert counts["barriers"] == 2 * (n // 16) ** 3
    assert "floor((N)/16)" in formula.forms["global_load_elems"]


# ----------------------------------------------------------------- what is not derived
def _kernel(body, params=(("N", 40),), local=(8,), global_size=(40,)):
    x = tt.GlobalArray("x", "in", ("N",))
    y = tt.GlobalArray("y", "out", ("N",))
    return tt.Schedule("test", "k", params, (x, y), (), local, global_size, body, tile=8)


def test_a_product_of_ids_names_the_counts_it_leaves_alone():
    from tiletraffic.simulator.ir.nodes import Param, Var
    x = tt.GlobalArray("x", "in", ("N",))
    y = tt.GlobalArray("y", "out", ("N",))
    i = tt.Let("i", tt.global_id(0))
    body = tt.block(i, tt.If(i.var * i.var < Param("N"), (tt.store(y, i.var, x[i.var]),)),
                    tt.store(y, i.var, x[i.var]))
    sch = tt.Schedule("test", "k", (("N", 40),), (x, y), (), (8,), (40,), body, tile=8)
    derived = derive(sch)
    why = derived.not_derived["global_load_elems_by_buffer[x]"]
    assert "(i * i)" in why and "multiplies two values that vary" in why
    assert "global_load_elems" in derived.not_derived
    assert "work_groups" in derived.forms          # the rest stays derived
    assert any("NDRange is the launch's" in note for note in derived.notes)
    formula = tt.closed_form(sch)
    assert "global_load_elems" not in formula and formula["work_groups"] == 5
    assert Var  # the IR's names are the facade's


def test_a_while_loop_is_named_and_the_counts_outside_it_stay_derived():
    from tiletraffic.simulator.ir.nodes import AssignInt, DeclareInt, Param, Var, While
    x = tt.GlobalArray("x", "in", ("N",))
    y = tt.GlobalArray("y", "out", ("N",))
    i = tt.Let("i", tt.global_id(0))
    body = tt.block(i, DeclareInt("j", tt.Const(0)),
                    While(Var("j") < Param("N"), (tt.store(y, i.var, x[Var("j")]),),
                          (AssignInt("j", Var("j") + 1),)),
                    tt.Barrier())
    sch = tt.Schedule("test", "k", (("N", 40),), (x, y), (), (8,), (40,), body, tile=8)
    derived = derive(sch)
    assert "while loop" in derived.not_derived["global_store_elems_by_buffer[y]"]
    assert derived.evaluate()["barriers"] == 5


def test_evaluate_refuses_an_unknown_size_and_a_non_integer():
    derived = _derived("gemm-tiled")
    with pytest.raises(ValueError, match="'Q' is not a size"):
        derived.evaluate({"Q": 3})
    with pytest.raises(ValueError, match="N = 2.5 is not an integer"):
        derived.evaluate({"N": 2.5})


def test_a_division_by_a_size_is_not_affine():
    from tiletraffic.simulator.ir.nodes import Param
    space = derived_counts._Space(("N",), 1, [])
    affine = derived_counts._Affine(space, {"N": space.aff("N")}, (8,))
    with pytest.raises(NotAffine, match="divides by a value that varies"):
        affine.int(tt.Const(64) // Param("N"), {})
    assert SizeBinding((("N", 8),)).global_size is None


def test_card_of_a_set_with_warp_divisions_counts_each_point_once():
    """A work-item id split into warps and lanes (floor(l/4), floor(l/2), floor(l/8)):
    the divisions turned into variables; the count equals the points enumerated."""
    import islpy as isl

    from tiletraffic.simulator.model.derived_counts import card

    domain = isl.Set("[M, N] -> { [g, l] : g >= 0 and 32g < N and 0 <= l <= 15 and "
                     "8*floor((l)/4) + 2*floor((l)/2) + 32g < N + floor((l)/8) and "
                     "4*floor((l)/4) - l < M }")
    form = card(domain)
    for m, n in ((1, 1), (3, 40), (5, 100), (2, 77)):
        points = sum(1 for g in range(n) for l in range(16)
                     if 32 * g < n and 8 * (l // 4) + 2 * (l // 2) + 32 * g < n + l // 8
                     and 4 * (l // 4) - l < m)
        value = form.eval_with_dict({"M": m, "N": n})
        value = value.to_python() if hasattr(value, "to_python") else value
        assert int(value) == points, (m, n)


def test_a_tiled_kernel_with_edge_guards_is_derived_and_equals_the_simulator():
    """A CUDA GEMM through 32 x 32 shared-memory tiles, its work-item id split by / 16 and
    % 16, every load and store guarded (the CUDA corpus's bitexact matmul_kernel): its
    forms are derived (its time: benchmarks/bench_derived_forms.py) and equal the simulator
    at sizes that are no multiples of the tile."""
    path = ROOT / "tests" / "corpora" / "cuda" / "launch" / "bx_matmul_kernel.toml"
    derived = _derived_file(path)
    assert {"global_load_elems", "global_store_elems", "flop"} <= set(derived.forms)
    for sizes in ({"M": 40, "K": 50, "N": 33}, {"M": 7, "K": 3, "N": 65}):
        counts = count_launch(load(path, sizes), hazards="report").counts.to_dict()
        assert not _same(derived.evaluate(sizes), counts), sizes


def test_a_sum_past_its_time_is_named_and_the_rest_stays_derived(monkeypatch):
    """A counter whose statements' forms are not added within the time allowed
    (``DERIVE_SECONDS``, here none) is named with a one-line reason; a counter of one
    statement stays derived and equals the simulator."""
    monkeypatch.setattr(derived_counts, "DERIVE_SECONDS", 0.0)
    schedule = tt.build("gemm-tiled", m=8, k=8, n=8, tile=4)
    derived = derive(schedule)
    why = derived.not_derived["local_store_elems"]
    assert why.startswith("no closed form derived within 0 s:") and "\n" not in why
    assert "flop" in derived.forms and "local_store_elems" not in derived.forms
    counts = count_launch(schedule, hazards="report").counts.to_dict()
    assert not _same(derived.evaluate(), counts)


def test_pieces_whose_polynomials_agree_are_written_as_one():
    import islpy as isl
    from tiletraffic.simulator.model.derived_counts import form_text, merged_pieces
    form = isl.PwQPolynomial("[M, K] -> { 130 * K : M = 65; 256 * K : M >= 129; "
                             "2 * M * K : M <= 128 and (M <= 64 or M >= 66) }")
    joined = merged_pieces(form)
    assert len(joined.get_pieces()) == 2
    assert form_text(form) == "256 * K : M >= 129; 2 * M * K : M <= 128"
    for m in range(0, 200, 7):
        for k in (1, 5):
            at = {"M": m, "K": k}
            assert joined.eval_with_dict(at) == form.eval_with_dict(at)
    # pieces that differ stay apart
    apart = isl.PwQPolynomial("[M] -> { 85 : M = 56; (28 + M) : M <= 55 }")
    assert len(merged_pieces(apart).get_pieces()) == 2


# ------------------------------------------------------------------ barriers in loops
GRID_STRIDE = {
    "opencl": ("gs.cl", """\
__kernel void gs(__global const float *x, __global float *y, const int n) {
    for (int r = get_global_id(0); r < n; r += get_global_size(0)) {
        barrier(CLK_LOCAL_MEM_FENCE); y[r] = x[r]; }
}
""", '[launch]\nglobal_size = ["256"]\nlocal_size = [64]\n[args]\nn = "N"\n'),
    "cuda": ("gs.cu", """\
__global__ void gs(const float *x, float *y, int n) {
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < n; r += blockDim.x * gridDim.x) {
        __syncthreads(); y[r] = x[r]; }
}
""", '[launch]\ngrid = [4]\nblock = [64]\n[args]\nn = "N"\n'),
}


@pytest.mark.parametrize("language", GRID_STRIDE)
@pytest.mark.filterwarnings("ignore")
def test_a_barrier_in_a_grid_stride_loop_counts_once_per_work_group_and_trip(
        language, tmp_path):
    """A loop whose counter starts at the work-item's global id: the barrier counts once
    per work-group per trip (4 work-groups x 4 trips at N = 1024), also where the
    work-items of a work-group make different numbers of trips (N = 1000, 100: the
    simulator counts a trip any of them reaches)."""
    name, source, launch = GRID_STRIDE[language]
    (tmp_path / name).write_text(source)
    path = tmp_path / "gs.toml"
    path.write_text(f'source = "{name}"\nkernel = "gs"\n[sizes]\nN = 1024\n{launch}'
                    'x = { shape = ["N"], access = "in" }\n'
                    'y = { shape = ["N"], access = "out" }\n')
    derived = derive(load(path))
    assert derived.evaluate()["barriers"] == 16
    for n in (1024, 1000, 100, 7):
        counts = count_launch(load(path, {"N": n}), hazards="report").counts.to_dict()
        assert not _same(derived.evaluate({"N": n}), counts), n


def test_a_barrier_in_nested_loops_that_start_at_the_ids_counts_each_trip_reached():
    """Nested loops whose counters start at the work-item's local and global ids: each
    trip of both loops that some work-item of a work-group reaches counts one barrier."""
    from tiletraffic.simulator.ir.nodes import For, Param, Var
    x = tt.GlobalArray("x", "in", ("N",))
    y = tt.GlobalArray("y", "out", ("N",))
    inner = For("c", tt.local_id(0), Param("N"), tt.Const(3),
                (tt.Barrier(), tt.store(y, Var("c"), x[Var("c")])))
    body = (For("r", tt.global_id(0), Param("N"), tt.Const(16), (inner,)),)
    for n in (40, 37, 5):
        sch = tt.Schedule("test", "k", (("N", n),), (x, y), (), (8,), (16,), body, tile=8)
        derived = derive(sch)
        counts = count_launch(sch, hazards="report").counts.to_dict()
        assert derived.evaluate()["barriers"] == counts["barriers"], n


@pytest.mark.filterwarnings("ignore")
def test_a_shader_define_in_the_workgroups_gives_forms_that_hold_at_other_sizes():
    """The GLSL tiled GEMM dispatches ``(N + TILE_SIZE - 1) // TILE_SIZE`` work-groups
    (``#define TILE_SIZE 16``): derived at 64, its loads at 128 are 2·128³/16."""
    path = str(ROOT / "examples" / "glsl" / "gemm_tiled.toml")
    formula = tt.closed_form(tt.build(path, set={"M": 64, "K": 64, "N": 64}))
    assert not any("NDRange" in note for note in formula.notes), formula.notes
    assert formula.evaluate({"M": 128, "K": 128, "N": 128})["global_load_elems"] == (
        2 * 128 ** 3 // 16)


@pytest.mark.parametrize("value", [-32, 0])
def test_evaluate_refuses_a_size_below_1(value):
    derived = _derived("gemm-tiled")
    with pytest.raises(ValueError, match=f"^size M = {value} is not positive: sizes are "
                                         "integers of at least 1$"):
        derived.evaluate({"M": value, "N": 16, "K": 16})


@pytest.mark.filterwarnings("ignore")
def test_a_size_a_template_argument_reads_is_a_constant_of_the_forms(tmp_path):
    """``template = { LEN = "L" }`` with ``L = "2 * N"``: the kernel is compiled with
    L's value, so L and the size N it reads are constants of the derived forms (another N
    is refused, never a wrong count); the size M nothing compiled reads stays a size."""
    (tmp_path / "cp.cu").write_text(
        "template <int LEN> __global__ void cp(const float *x, float *y, int m) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < LEN && i < m) y[i] = x[i];\n}\n")
    path = tmp_path / "cp.toml"
    path.write_text('source = "cp.cu"\nkernel = "cp"\ntemplate = { LEN = "L" }\n'
                    '[sizes]\nN = 8\nL = "2 * N"\nM = 64\n'
                    '[launch]\ngrid = ["(M + 63) // 64"]\nblock = [64]\n'
                    '[args]\nm = "M"\nx = { shape = ["M"], access = "in" }\n'
                    'y = { shape = ["M"], access = "out" }\n')
    derived = derive(load(path))
    assert set(derived.sizes) == {"M"}
    assert derived.evaluate({"M": 200})["global_load_elems"] == 16
    with pytest.raises(ValueError, match="'N' is not a size"):
        derived.evaluate({"N": 40})
