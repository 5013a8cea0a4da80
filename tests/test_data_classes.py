"""Work-group classes by loaded integers (simulator.engine.accelerators.data_classes): on
drawn CSR matrices the default counts (one work-group per class) equal full execution's,
where the proof applies; where it does not (a loaded value in a condition per work-item, a
loaded index that may leave its array, bounds per work-item) it declines with the reason
and every work-group runs."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.simulator.engine.accelerators import INT_BUFFER_DECLINE, Accelerators
from tiletraffic.simulator.engine.accelerators.data_classes import DataClasses, data_classes
from tiletraffic.simulator.engine.fast_path import count_launch

SPARSE = Path(__file__).parent / "corpora" / "opencl" / "silx" / "sparse.cl"
WIDTH = 40
FULL = Accelerators(work_group_classes=False)

ROW_SPMV = """
__kernel void row_spmv(__global const float *val, __global const int *col,
                       __global const int *rowptr, __global const float *x,
                       __global float *y, int rows)
{
    __local float part[32];
    int row = get_group_id(0);
    int lid = get_local_id(0);
    if (row >= rows) return;
    int start = rowptr[row], end = rowptr[row + 1];
    float acc = 0.0f;
    for (int k = start + lid; k < end; k += 32)
        acc += val[k] * x[col[k]];
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0 && START_TEST) {
        float s = 0.0f;
        for (int i = 0; i < 32; i++) s += part[i];
        y[row] = s;
    }
}
"""


def _pointers(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def densify(lengths, seed: int):
    """silx's densify_csr (the corpus's source) on rows of ``lengths`` non-zeros, each row's
    columns distinct and inside the compiled width."""
    rng = np.random.default_rng(seed)
    cols = np.concatenate([rng.permutation(WIDTH)[:n] for n in lengths] +
                          [np.zeros(0, np.int64)]).astype(np.int32)
    rows, nnz = len(lengths), int(sum(lengths))
    return tt.from_opencl(str(SPARSE), "densify_csr", [32, rows], [32, 1], {
        "data": {"shape": [max(nnz, 1)], "access": "in"},
        "ind": {"shape": [max(nnz, 1)], "access": "in",
                "data": cols if nnz else np.zeros(1, np.int32)},
        "iptr": {"shape": [rows + 1], "access": "in", "data": _pointers(lengths)},
        "output": {"shape": [rows, WIDTH], "access": "out"}, "image_height": rows},
        f"-DDTYPE=float -DIDX_DTYPE=int -DIMAGE_WIDTH={WIDTH}")


def row_spmv(lengths, columns: int, seed: int, start_test: str = "1", col=None,
             padding: int = 0):
    """One CSR row per work-group of 32 work-items, a local reduction of the row;
    ``padding`` more work-groups than rows, which return at once."""
    rng = np.random.default_rng(seed)
    nnz = int(sum(lengths))
    if col is None:
        col = rng.integers(0, columns, max(nnz, 1)).astype(np.int32)
    rows = len(lengths)
    return tt.from_opencl(ROW_SPMV.replace("START_TEST", start_test), "row_spmv",
                          [32 * (rows + padding)], [32], {
        "val": {"shape": [max(nnz, 1)], "access": "in"},
        "col": {"shape": [max(nnz, 1)], "access": "in", "data": col},
        "rowptr": {"shape": [rows + 1], "access": "in", "data": _pointers(lengths)},
        "x": {"shape": [columns], "access": "in"}, "y": {"shape": [rows], "access": "out"},
        "rows": rows})


def _same_as_full_execution(sch, hazards="raise"):
    fast = count_launch(sch, hazards=hazards)
    full = count_launch(sch, hazards=hazards, accelerators=FULL)
    assert fast.counts == full.counts
    assert full.work_groups_executed == sch.work_groups
    return fast


SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(lengths=st.lists(st.integers(0, WIDTH), min_size=1, max_size=14),
       seed=st.integers(0, 2 ** 16))
def test_densify_counts_by_loaded_integers_equal_full_execution(lengths, seed):
    sch = densify(lengths, seed)
    fast = _same_as_full_execution(sch)
    assert fast.why_every_work_group == (None,)          # the classes were taken
    found = data_classes(sch)
    assert found.shifted and found.weights.sum() == sch.work_groups
    assert fast.work_groups_executed == len(found.representatives) <= sch.work_groups


@SETTINGS
@given(lengths=st.lists(st.integers(0, 80), min_size=1, max_size=12),
       columns=st.integers(1, 50), seed=st.integers(0, 2 ** 16), padding=st.integers(0, 9))
def test_a_row_per_work_group_counts_equal_full_execution(lengths, columns, seed, padding):
    sch = row_spmv(lengths, columns, seed, padding=padding)   # the padding returns at once
    fast = _same_as_full_execution(sch)
    assert fast.why_every_work_group == (None,)
    assert isinstance(data_classes(sch), DataClasses)


def test_rows_of_equal_length_share_one_class_wherever_they_start():
    sch = row_spmv([7, 3, 7, 7, 3, 7, 0, 7], 20, 1)
    found = data_classes(sch)
    # first, interior and last work-group segments; the interior's rows 1..6 by length
    assert sorted(found.weights.tolist()) == sorted([1, 2, 3, 1, 1])
    assert found.representatives.tolist() == [0, 1, 2, 6, 7]
    _same_as_full_execution(sch)


def test_a_condition_on_a_loaded_value_itself_is_proved_by_the_values():
    sch = row_spmv([5, 9, 5, 5, 2, 9, 5, 1], 16, 2, start_test="start > 9")
    found = data_classes(sch)
    assert isinstance(found, DataClasses) and not found.shifted
    _same_as_full_execution(sch, hazards="report")       # some rows' y is never written


def test_a_loaded_value_in_a_condition_per_work_item_is_declined():
    sch = row_spmv([5, 9, 5, 5, 2, 9], 16, 3, start_test="col[start] > 3")
    why = data_classes(sch)
    assert isinstance(why, str) and "col[start] > 3" in why
    fast = _same_as_full_execution(sch, hazards="report")   # some rows' y is never written
    (note,) = fast.why_every_work_group
    assert note.startswith(INT_BUFFER_DECLINE) and "col[start] > 3" in note


def test_a_loaded_index_that_may_leave_its_array_is_declined():
    lengths = [4, 6, 3, 4, 6, 2]
    col = np.arange(sum(lengths), dtype=np.int32) % 9
    col[-1] = 12                                         # x has 10 elements
    sch = row_spmv(lengths, 10, 4, col=col)
    why = data_classes(sch)
    assert isinstance(why, str) and "can fall outside" in why
    fast = _same_as_full_execution(sch, hazards="report")
    assert any(h.kind == "out-of-bounds" for h in fast.hazards)


def test_bounds_loaded_per_work_item_are_declined():
    lengths = [3, 1, 4, 1, 5, 9, 2, 6]
    sch = tt.from_opencl("""
        __kernel void rows(__global const int *rowptr, __global const float *val,
                           __global float *y) {
            int row = get_global_id(0);
            float acc = 0.0f;
            for (int k = rowptr[row]; k < rowptr[row + 1]; k++) acc += val[k];
            y[row] = acc;
        }""", "rows", [8], [4], {
        "rowptr": {"shape": [9], "access": "in", "data": _pointers(lengths)},
        "val": {"shape": [sum(lengths)], "access": "in"},
        "y": {"shape": [8], "access": "out"}})
    why = data_classes(sch)
    assert isinstance(why, str) and "bound read from a buffer per work-item" in why
    _same_as_full_execution(sch)


def test_the_corpus_densify_counts_equal_oclgrinds():
    from tiletraffic.frontend import launch_file
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available, oclgrind_counts
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sch = launch_file.load(SPARSE.parent / "densify_csr.toml", {"H": 12, "NNZ": 112})
    ours = count_launch(sch)
    assert ours.why_every_work_group == (None,)
    ours, theirs = ours.counts.to_dict(), oclgrind_counts(sch).to_dict()
    for key in ("global_load_elems", "global_store_elems", "local_load_elems",
                "local_store_elems", "barriers"):
        assert ours[key] == theirs[key], key


def test_simulate_counts_a_large_densify_by_classes_without_a_note_of_full_execution():
    import json

    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    rows = 6 * 6000                                      # 1.15 million work-items
    result = CliRunner().invoke(main, ["simulate", str(SPARSE.parent / "densify_csr.toml"),
                                       "--set", f"H={rows}", "--set", f"NNZ={56 * rows // 6}",
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert "every work-group executed" not in result.stderr
    assert "K extrapolation not proved" not in result.stderr
    counts = json.loads(result.stdout)
    assert counts["global_store_elems"] == WIDTH * rows
    assert counts["barriers"] == 2 * rows and counts["work_group_classes"] is True


def test_tt_simulate_with_work_group_classes_takes_them_without_extra_observers():
    from tiletraffic.simulator.observers.counters import Observer
    sch = densify([5, 0, 35, 3, 7, 6] * 4, 5)
    classes = tt.Accelerators(work_group_classes=True)
    by_classes = tt.simulate(sch, compute_values=False, accelerators=classes)
    full = tt.simulate(sch, compute_values=False)
    assert by_classes.counts == full.counts
    assert by_classes.representatives.tolist() == data_classes(sch).representatives.tolist()
    watched = tt.simulate(sch, compute_values=False, accelerators=classes,
                          observers=[Observer()])         # addresses may matter to it
    assert watched.representatives is None and watched.counts == full.counts


def _by_offset(body: str, offsets, extent: int):
    """One work-group of one work-item per entry of ``offsets`` (an int buffer), reading
    ``val`` (``extent`` floats) as ``body`` says."""
    n = len(offsets)
    return tt.from_opencl(f"""
        __kernel void k(__global const int *off, __global const float *val,
                        __global float *y) {{
            int row = get_group_id(0);
            __local float part[4];
            {body}
        }}""", "k", [n], [1], {
        "off": {"shape": [n], "access": "in", "data": np.array(offsets, np.int32)},
        "val": {"shape": [extent], "access": "in"}, "y": {"shape": [n], "access": "out"}})


@pytest.mark.parametrize("body, offsets", [
    ("y[row] = val[off[row]];", [0, 1, 3, 9, 2]),                     # global, past the end
    ("y[row] = val[off[row] + 1];", [0, 1, 3, -2, 2]),                # and before the start
    ("part[off[row]] = 1.0f; y[row] = part[off[row]];", [0, 1, 3, 7, 0]),   # local
    ("float4 v = vload4(0, val + off[row]); y[row] = v.x;", [0, 1, 0, 2, 0]),  # last lane
])
def test_an_index_that_moves_with_a_loaded_integer_is_out_of_bounds_as_in_full_execution(
        body, offsets):
    sch = _by_offset(body, offsets, 5)
    assert isinstance(data_classes(sch), DataClasses)
    with pytest.raises(tt.HazardError, match="out-of-bounds"):
        count_launch(sch, accelerators=FULL)
    with pytest.raises(tt.HazardError, match="out-of-bounds"):
        count_launch(sch)


def test_an_aligned_vector_access_at_a_loaded_offset_is_misaligned_as_in_full_execution():
    sch = _by_offset("float2 v = *(__global const float2 *)(val + off[row]); y[row] = v.x;",
                     [0, 2, 4, 5, 0], 8)
    full = count_launch(sch, hazards="report", accelerators=FULL)
    assert [h.kind for h in full.hazards] == ["misaligned-vector-access"]
    fast = count_launch(sch, hazards="report")
    assert [h.kind for h in fast.hazards] == ["misaligned-vector-access"]
    assert fast.counts == full.counts


def test_an_index_that_moves_with_the_work_group_is_out_of_bounds_as_in_full_execution():
    lengths = [2] * 8                          # rows 1..6: one class by their lengths
    sch = tt.from_opencl("""
        __kernel void k(__global const int *rowptr, __global const float *val,
                        __global float *y, int rows) {
            int row = get_group_id(0);
            if (row >= rows) return;
            float acc = 0.0f;
            for (int i = rowptr[row]; i < rowptr[row + 1]; i++) acc += val[i];
            y[2 * row] = acc;                  /* past y's 11 elements from row 6 on */
        }""", "k", [10], [1], {
        "rowptr": {"shape": [9], "access": "in", "data": _pointers(lengths)},
        "val": {"shape": [16], "access": "in"}, "y": {"shape": [11], "access": "out"},
        "rows": 8})
    assert isinstance(data_classes(sch), DataClasses)
    with pytest.raises(tt.HazardError, match=r"y\[12\]"):
        count_launch(sch, accelerators=FULL)
    with pytest.raises(tt.HazardError, match=r"y\[12\]"):
        count_launch(sch)

def test_a_local_index_that_moves_with_the_work_group_is_declined():
    lengths = [2] * 8
    sch = tt.from_opencl("""
        __kernel void k(__global const int *rowptr, __global const float *val,
                        __global float *y) {
            __local float part[16];
            int row = get_group_id(0), lid = get_local_id(0);
            float acc = 0.0f;
            for (int i = rowptr[row]; i < rowptr[row + 1]; i++) acc += val[i];
            part[lid] = acc;
            part[lid + 8 - row] = 2.0f;        /* meets part[lid] from row 5 on: a race */
            barrier(CLK_LOCAL_MEM_FENCE);
            y[row * 4 + lid] = part[lid];
        }""", "k", [32], [4], {
        "rowptr": {"shape": [9], "access": "in", "data": _pointers(lengths)},
        "val": {"shape": [16], "access": "in"}, "y": {"shape": [32], "access": "out"}})
    why = data_classes(sch)
    assert isinstance(why, str) and "an index of part" in why
    fast = _same_as_full_execution(sch, hazards="report")
    assert {h.kind for h in fast.hazards} == {"data-race"}
