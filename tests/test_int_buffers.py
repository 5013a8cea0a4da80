"""Integer buffers (``int``/``uint`` elements the kernel reads as integers: CSR indices and
row pointers bounding loops and choosing addresses): the simulator's counts equal Oclgrind's,
the kernel run on PoCL equals numpy, every accelerator declines such a kernel, an
out-of-bounds access through a loaded index is found with its indices, and a launch file's
contents of the wrong shape or type are one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.simulator.engine.accelerators import ALL, INT_BUFFER_DECLINE

SPMV = """
__kernel void spmv(__global const float *val, __global const int *col,
                   __global const uint *rowptr, __global const float *x,
                   __global float *y, int rows)
{
    int row = get_global_id(0);
    if (row >= rows) return;
    float acc = 0.0f;
    uint start = rowptr[row], end = rowptr[row + 1];
    for (uint k = start; k < end; k++)
        acc += val[k] * x[col[k]];
    y[row] = acc;
}
"""

ROWS, N = 40, 24
LENGTHS = [(3 * r) % 7 for r in range(ROWS)]          # 0 .. 6 non-zeros per row
ROWPTR = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.uint32)
NNZ = int(ROWPTR[-1])
COL = np.asarray([(5 * r + 7 * j) % N for r in range(ROWS) for j in range(LENGTHS[r])],
                 dtype=np.int32)


def spmv(col=COL, rowptr=ROWPTR):
    return tt.from_opencl(SPMV, "spmv", [64], [32], {
        "val": {"shape": [NNZ], "access": "in"}, "col": {"shape": [NNZ], "access": "in",
                                                         "data": col},
        "rowptr": {"shape": [ROWS + 1], "access": "in", "data": rowptr},
        "x": {"shape": [N], "access": "in"}, "y": {"shape": [ROWS], "access": "out"},
        "rows": ROWS})


def reference(inputs):
    dense = np.zeros((ROWS, N))
    for r in range(ROWS):
        for k in range(ROWPTR[r], ROWPTR[r + 1]):
            dense[r, COL[k]] += inputs["val"][k]
    return {"y": dense @ inputs["x"]}


def test_each_loaded_integer_is_one_counted_global_load_of_4_bytes():
    counts = tt.simulate(spmv(), compute_values=False).counts
    by = counts.global_load_elems_by_buffer
    assert by["rowptr"] == 2 * ROWS and by["col"] == NNZ and by["val"] == NNZ
    assert by["x"] == NNZ and counts.global_store_elems == ROWS


def test_the_values_follow_the_given_contents():
    rng = np.random.default_rng(1)
    inputs = {"val": rng.standard_normal(NNZ).astype(np.float32),
              "x": rng.standard_normal(N).astype(np.float32)}
    result = tt.simulate(spmv(), inputs)
    np.testing.assert_allclose(result.outputs["y"], reference(inputs)["y"], rtol=1e-5,
                               atol=1e-5)


def test_every_accelerator_declines_a_kernel_that_reads_an_integer_buffer():
    from tiletraffic.simulator.engine.accelerators import k_extrapolation
    from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
    from tiletraffic.simulator.engine.accelerators.loop_blocks import LoopBlocks
    from tiletraffic.simulator.engine.accelerators.private_nest import PrivateNests
    from tiletraffic.simulator.engine.fast_path import count_launch
    from tiletraffic.simulator.engine.machine import Machine
    from tiletraffic.simulator.ir import nodes as S
    sch = spmv()
    assert classes_problem(sch) == INT_BUFFER_DECLINE
    assert k_extrapolation.k_extrapolation_problem(sch) == INT_BUFFER_DECLINE
    launch = count_launch(sch)
    (why,) = launch.why_every_work_group       # each row's bounds differ per work-item
    assert why.startswith(INT_BUFFER_DECLINE) and "the loop over k has a bound read" in why
    assert launch.counts == tt.simulate(sch, compute_values=False).counts
    machine = Machine(sch, sch.param_values, {}, {}, [], None, False, ALL)
    assert machine.reads_ints and machine.passes == ()
    loop = next(s for s in _statements(sch.body) if isinstance(s, S.For))
    machine.blocked, mask = False, np.ones((1, 32, 1), bool)
    assert LoopBlocks().applies(machine, loop, mask) is None
    assert PrivateNests().applies(machine, loop, mask) is None
    assert not machine.is_vectorizable(loop)


def _statements(body):
    from tiletraffic.simulator.ir.visitor import walk_statements
    return list(walk_statements(body))


def test_the_closed_forms_decline_a_kernel_that_reads_an_integer_buffer():
    from tiletraffic.simulator.model.derived_counts import SizeBinding, derive
    sch = spmv()
    derived = derive(sch, SizeBinding(tuple(sch.params)))
    assert derived.not_derived and not derived.forms
    assert all("integer buffer" in why for why in derived.not_derived.values())


def test_an_index_loaded_out_of_its_buffer_is_an_out_of_bounds_hazard_with_its_indices():
    bad = COL.copy()
    bad[5] = N + 3                                   # x[27] of 24
    kinds = {h.kind: h for h in tt.check(spmv(col=bad), seed=1)}
    hazard = kinds["out-of-bounds"]
    assert hazard.array == "x" and hazard.index == N + 3
    assert f"x[{N + 3}]" in hazard.detail and f"extent {N}" in hazard.detail


def test_a_row_pointer_past_the_index_buffer_is_found_reading_it():
    bad = ROWPTR.copy()
    bad[-1] = NNZ + 2                                # the last row reads col[NNZ], col[NNZ+1]
    hazards = [h for h in tt.check(spmv(rowptr=bad), seed=1) if h.kind == "out-of-bounds"]
    assert {h.array for h in hazards} >= {"col"}
    assert any(f"col[{NNZ}]" in h.detail for h in hazards)


def test_the_counts_equal_oclgrinds():
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(spmv())
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] == 2 * ROWS + 3 * NNZ


def test_the_run_on_pocl_equals_numpy(pocl):
    result = tt.run(spmv(), pocl, repeat=10, warmup=1, reference=reference, seed=5)
    assert result.check.ok


def _launch(tmp_path, data_line: str):
    (tmp_path / "k.cl").write_text(SPMV)
    (tmp_path / "csr.py").write_text(
        "import numpy as np\n"
        f"def rowptr(sizes):\n    return np.asarray({ROWPTR.tolist()}, dtype=np.uint32)\n"
        f"def col(sizes):\n    return np.asarray({COL.tolist()}, dtype=np.int32)\n"
        "def short(sizes):\n    return np.zeros(3, dtype=np.int32)\n"
        "def wrong_nnz(sizes):\n    raise ValueError(f\"NNZ = {sizes['NNZ']} is not 5\")\n"
        "def exits(sizes):\n    raise SystemExit(3)\n")
    np.save(tmp_path / "col.npy", COL)
    np.save(tmp_path / "col_float.npy", COL.astype(np.float32))
    (tmp_path / "k.toml").write_text(f"""
source = "k.cl"
kernel = "spmv"
[sizes]
ROWS = {ROWS}
NNZ = {NNZ}
N = {N}
[launch]
global_size = [64]
local_size = [32]
[args]
val = {{ shape = ["NNZ"], access = "in" }}
{data_line}
rowptr = {{ shape = ["ROWS + 1"], access = "in", data = "csr.py:rowptr" }}
x = {{ shape = ["N"], access = "in" }}
y = {{ shape = ["ROWS"], access = "out" }}
rows = "ROWS"
""")
    return tmp_path / "k.toml"


@pytest.mark.parametrize("source", ["col.npy", "csr.py:col"])
def test_a_launch_file_gives_the_contents_from_numpy_or_the_users_python(tmp_path, source):
    path = _launch(tmp_path, f'col = {{ shape = ["NNZ"], access = "in", data = "{source}" }}')
    sch = tt.build(str(path))
    assert tt.simulate(sch, compute_values=False).counts == \
        tt.simulate(spmv(), compute_values=False).counts


@pytest.mark.parametrize("source, words", [
    ("csr.py:short", f"gives shape (3,); the buffer's shape is ({NNZ},)"),
    ("col_float.npy", "holds float32; an integer buffer needs integers"),
    ("col.txt", 'must be "FILE.npy" or "FILE.py:FUNCTION"'),
])
def test_wrong_contents_are_one_line_naming_the_value_and_the_limit(tmp_path, source, words):
    path = _launch(tmp_path, f'col = {{ shape = ["NNZ"], access = "in", data = "{source}" }}')
    with pytest.raises(ValueError) as err:
        tt.build(str(path))
    assert words in str(err.value) and "args.col.data" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("source, words", [
    ("csr.py:wrong_nnz", f"csr.py:wrong_nnz({{ROWS: {ROWS}, NNZ: {NNZ}, N: {N}}}) raised "
                         f"ValueError: NNZ = {NNZ} is not 5"),
    ("csr.py:exits", "called sys.exit(3) (SystemExit) instead of returning the buffer's"),
])
def test_a_data_function_that_raises_is_the_launch_files_one_line_error(tmp_path, source,
                                                                         words):
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main
    from tiletraffic.frontend.launch_file import LaunchFileError
    path = _launch(tmp_path, f'col = {{ shape = ["NNZ"], access = "in", data = "{source}" }}')
    with pytest.raises(LaunchFileError) as err:
        tt.build(str(path))
    assert str(err.value).startswith(f"{path}: args.col.data: ")
    assert words in str(err.value) and "\n" not in str(err.value)
    res = CliRunner().invoke(main, ["simulate", str(path)])
    assert res.exit_code == 2, res.output
    assert words in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_value_beyond_32_bits_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"data value -1 does not fit its uint elements"):
        spmv(rowptr=np.concatenate([ROWPTR[:-1], [-1]]).astype(np.int64))


def _gather():
    """A schedule built in Python reading an integer buffer: y[i] = 2 x[ind[i]]."""
    from tiletraffic.simulator.ir import nodes as S
    ind = S.GlobalArray("ind", "in", ("N",), "uint", (3, 0, 7, 1, 2, 5, 6, 4, 9, 8))
    x, y = S.GlobalArray("x", "in", ("N",)), S.GlobalArray("y", "out", ("N",))
    i = S.global_id(0)
    body = S.block(S.If(i < S.Param("N"), (S.store(y, i, x[ind[i]] * 2.0),)))
    return S.Schedule("gather", "gather", (("N", 10),), (ind, x, y), (), (16,), (16,),
                      body, 1)


def test_the_rendered_kernel_of_an_integer_buffer_reads_it_as_uint():
    from tiletraffic.gpu.codegen.generate import generate
    source = generate(_gather()).source
    assert "__global const uint *restrict ind" in source
    assert "x[(long)ind[(int)get_global_id(0)]]" in source


def test_the_rendered_kernels_counts_equal_oclgrinds_and_its_run_equals_numpy(pocl):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = _gather()
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal and comparison.oclgrind["global_load_elems"] == 20
    order = np.asarray(sch.array("ind").values)
    result = tt.run(sch, pocl, repeat=10, warmup=1, seed=5,
                    reference=lambda inputs: {"y": 2 * inputs["x"][order]})
    assert result.check.ok


def test_an_integer_buffer_is_an_input_with_its_contents():
    from tiletraffic.simulator.ir import nodes as S
    with pytest.raises(S.ScheduleError, match="an integer buffer is an input"):
        S.GlobalArray("ind", "out", ("N",), "int", (1, 2))
    with pytest.raises(S.ScheduleError, match="element type 'short'"):
        S.GlobalArray("ind", "in", ("N",), "short", (1, 2))


SPMV_STOP_LOADED = SPMV.replace("spmv(", "spmv_stop(").replace(
    "    uint start = rowptr[row], end = rowptr[row + 1];\n"
    "    for (uint k = start; k < end; k++)",
    "    for (uint k = rowptr[row]; k < rowptr[row + 1]; k++)")


def test_a_loop_stop_read_from_an_integer_buffer_is_loaded_at_every_test():
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    assert "k < rowptr[row + 1]" in SPMV_STOP_LOADED
    sch = tt.from_opencl(SPMV_STOP_LOADED, "spmv_stop", [64], [32], {
        "val": {"shape": [NNZ], "access": "in"},
        "col": {"shape": [NNZ], "access": "in", "data": COL},
        "rowptr": {"shape": [ROWS + 1], "access": "in", "data": ROWPTR},
        "x": {"shape": [N], "access": "in"}, "y": {"shape": [ROWS], "access": "out"},
        "rows": ROWS})
    by = tt.simulate(sch, compute_values=False).counts.global_load_elems_by_buffer
    assert by["rowptr"] == ROWS + (NNZ + ROWS)      # each start, and each test of the stop
    if oclgrind_available():
        assert compare_counts(sch).equal


def test_a_loop_step_read_from_an_integer_buffer_is_loaded_at_every_update():
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    source = """
__kernel void strided(__global const float *x, __global const int *stride,
                      __global float *y, int n)
{
    int i = get_global_id(0);
    float acc = 0.0f;
    for (int k = i; k < n; k += stride[i])
        acc += x[k];
    y[i] = acc;
}
"""
    strides = np.asarray([1 + i % 5 for i in range(32)], dtype=np.int32)
    sch = tt.from_opencl(source, "strided", [32], [32], {
        "x": {"shape": [40], "access": "in"},
        "stride": {"shape": [32], "access": "in", "data": strides},
        "y": {"shape": [32], "access": "out"}, "n": 40})
    by = tt.simulate(sch, compute_values=False).counts.global_load_elems_by_buffer
    assert by["stride"] == by["x"] == sum(len(range(i, 40, int(s)))
                                          for i, s in enumerate(strides))
    if oclgrind_available():
        assert compare_counts(sch).equal


def test_oclgrind_finds_the_same_read_through_a_loaded_index():
    from tiletraffic.gpu.oclgrind.crosscheck import compare_hazards
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    bad = COL.copy()
    bad[5] = N + 3
    comparison = compare_hazards(spmv(col=bad))
    found = comparison.to_dict()
    assert found["agree"], found
    assert "out-of-bounds" in found["simulator"] and "invalid-read" in found["oclgrind"]
    assert any(f"x+{(N + 3) * 4}B" in d for d in found["oclgrind_details"])
