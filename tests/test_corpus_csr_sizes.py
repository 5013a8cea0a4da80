"""silx's densify_csr at grown sizes: its row width is the kernel's compiled-in
``IMAGE_WIDTH`` (its local array's length), so growing the launch grows the rows and the
non-zeros only, the generated CSR matrix stays inside the width, and the counts are those of
its rows (no out-of-bounds store into the local row). The benchmark grows pyFAI's CSR
launches with the non-zeros their rows hold; a data function refusing the sizes is a
one-line error; the estimate of counting by loaded integers charges the proved loop trips,
and states no time where loop trips come from the data unbounded."""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiletraffic.frontend import launch_file
from tiletraffic.simulator.engine.fast_path import count_launch

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / "tests" / "corpora" / "opencl" / "silx" / "densify_csr.toml"
WIDTH = 40   # -DIMAGE_WIDTH of the launch file


def _load(rows: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return launch_file.load(LAUNCH, {"H": rows, "NNZ": 56 * rows // 6})


def _scale_targets():
    spec = importlib.util.spec_from_file_location("scale_targets",
                                                  ROOT / "benchmarks" / "scale_targets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rows", [6, 66])
def test_the_counts_at_grown_sizes_are_those_of_its_rows(rows):
    nnz = 56 * rows // 6
    counts = count_launch(_load(rows), hazards="raise").counts
    assert counts.global_load_elems_by_buffer == {"data": nnz, "ind": nnz,
                                                  "iptr": 2 * 32 * rows, "output": 0}
    assert counts.global_store_elems == WIDTH * rows       # each row written once
    assert counts.local_store_elems == WIDTH * rows + nnz  # zeroed, then its non-zeros
    assert counts.local_load_elems == WIDTH * rows
    assert counts.barriers == 2 * rows


def test_the_generated_column_indices_stay_inside_the_compiled_width():
    sch = _load(60)
    ind = next(a for a in sch.arrays if a.name == "ind")
    iptr = next(a for a in sch.arrays if a.name == "iptr")
    cols, starts = np.asarray(ind.values), np.asarray(iptr.values)
    assert cols.min() >= 0 and cols.max() < WIDTH
    for r in range(60):                                    # distinct within each row
        row = cols[starts[r]:starts[r + 1]]
        assert len(set(row.tolist())) == len(row)


def test_a_non_zero_count_that_does_not_fit_the_rows_is_refused_naming_it():
    with pytest.raises(ValueError, match="NNZ = 57, but 6 rows hold 56"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            launch_file.load(LAUNCH, {"H": 6, "NNZ": 57})


def test_the_benchmark_grows_the_rows_and_keeps_the_compiled_width():
    sizes, extent = _scale_targets().corpus_sizes("silx/densify_csr", 4096)
    assert set(sizes) == {"H", "NNZ"} and sizes["NNZ"] * 6 == sizes["H"] * 56
    assert extent == WIDTH * sizes["H"] and abs(extent - 4096 ** 2) <= WIDTH * 6


PYFAI = ROOT / "tests" / "corpora" / "opencl" / "pyfai"


@pytest.mark.parametrize("kernel", ["csr_integrate", "csr_integrate4"])
def test_the_benchmark_grows_a_generated_csr_matrix_with_the_non_zeros_of_its_rows(kernel):
    sizes, extent = _scale_targets().corpus_sizes(f"pyfai/{kernel}", 4096)
    rows = sizes["B"]
    held = 56 * (rows // 6) + sum((5, 0, 35, 3, 7, 6)[:rows % 6])
    assert sizes["NNZ"] == held and rows > 8
    assert extent == max(32 * rows, sizes["P"] * (4 if kernel.endswith("4") else 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch_file.load(PYFAI / f"{kernel}.toml", {**sizes, "B": 64, "P": 512,
                                                    "NNZ": 56 * 10 + 5 + 0 + 35 + 3})


def test_a_data_function_refusing_the_sizes_is_a_one_line_error_exit_2():
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main

    result = CliRunner().invoke(main, ["simulate", str(PYFAI / "csr_integrate.toml"),
                                       "--set", "B=16", "--set", "NNZ=61"])
    assert result.exit_code == 2
    assert "csr_column_indices" in result.output
    assert "NNZ = 61, but 16 rows hold 155 non-zeros" in result.output
    assert "Traceback" not in result.output


def test_the_estimate_of_counting_by_loaded_integers_charges_the_proved_loop_trips():
    from tiletraffic.simulator.engine.accelerators.class_proof import MAX_WHILE_ITERATIONS
    from tiletraffic.simulator.engine.accelerators.data_classes import data_classes
    from tiletraffic.simulator.engine.budget import estimate_simulation

    sch = _load(6 * 2000)
    found = data_classes(sch)
    assert 2 <= found.loop_steps <= MAX_WHILE_ITERATIONS   # a row of 35 in steps of 32
    est = estimate_simulation(sch, compute_values=False, work_group_classes=True)
    assert est.time_known and est.time_s < 1.0
    full = estimate_simulation(sch, compute_values=False, work_group_classes=False)
    assert not full.time_known and "not estimated" in full.time_text()
    assert " and " not in full.describe().split(" for ")[0].replace("about ", "")


@settings(max_examples=25, deadline=None)
@given(factor=st.integers(1, 60), kernel=st.sampled_from(["csr_integrate", "csr_integrate4",
                                                         "csr_integrate_single"]))
def test_the_benchmarks_non_zero_count_is_the_one_the_generator_accepts(factor, kernel):
    """The launch file's sizes (B = 8, P = 64) grown by a drawn factor, as the benchmark
    grows them: the generated CSR matrix of the grown rows is accepted."""
    import importlib.util as iu

    bench = _scale_targets()
    path = PYFAI / f"{kernel}.toml"
    sizes = bench._consistent(path, {"B": 8 * factor, "P": 64 * factor, "NNZ": 61 * factor})
    spec = iu.spec_from_file_location("refs", ROOT / "tests" / "corpora" / "opencl"
                                      / "references.py")
    refs = iu.module_from_spec(spec)
    spec.loader.exec_module(refs)
    names = dict(launch_file.read(path, sizes).names)
    assert sizes["NNZ"] == int(refs.csr_row_pointers(names)[-1])
    assert len(refs.csr_column_indices(names)) == sizes["NNZ"]   # accepted, not refused
