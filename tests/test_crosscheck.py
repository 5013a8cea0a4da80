"""`tiletraffic crosscheck`: the simulator and Oclgrind agree on counts and on faults."""
import json

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.gpu.oclgrind.oclgrind import SIMULATOR_HAZARD_KINDS, oclgrind_available
from tiletraffic.simulator.kernels.variants import CORRECT_DEMOS, VARIANTS
from tiletraffic.simulator.kernels.families import FAMILIES

pytestmark = pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind platform")


@pytest.fixture(scope="module")
def all_results(crosscheck_all):
    assert crosscheck_all["exit_code"] == 0, crosscheck_all["stderr"]
    return {r["schedule"]: r for r in crosscheck_all["stdout"]}


def test_every_correct_schedule_has_identical_counts(all_results):
    for name in (*FAMILIES, *CORRECT_DEMOS):
        r = all_results[name]
        assert r["equal"], r
        for key, pair in r["counts"].items():
            assert pair["simulator"] == pair["oclgrind"], (name, key, pair)
        assert r["counts"]["global_load_elems"]["oclgrind"] > 0


def test_every_broken_variant_is_faulty_for_both_tools(all_results):
    for name, variant in VARIANTS.items():
        r = all_results[name]
        assert r["agree"], r
        assert set(variant.expected) <= set(r["simulator"]), r
        if variant.run_only:  # correct in any one launch: both must find nothing
            assert r["simulator"] == [] and r["oclgrind"] == [], r
        elif any(SIMULATOR_HAZARD_KINDS[kind] for kind in variant.expected):
            assert r["oclgrind"], f"Oclgrind saw nothing wrong in {name}"


def test_global_races_agree_with_oclgrind(all_results):
    """Issue #15 case 1: the in-place reduction races between work-groups and the neighbour
    read behind a local-only fence within one; Oclgrind reports both at the same buffer."""
    for name, buffer in (("demo-reduction:in-place", "buf"), ("demo-neighbour:local-fence", "y")):
        r = all_results[name]
        assert r["simulator"] == ["data-race"] and r["oclgrind"] == ["data-race"], r
        assert all(f" in {buffer}+" in line for line in r["oclgrind_details"]), r


@pytest.mark.parametrize("name", ["demo-reduction", "demo-neighbour"])
def test_oclgrind_finds_nothing_in_the_correct_global_memory_demos(name):
    """The correct forms (own chunk; CLK_GLOBAL_MEM_FENCE) are clean for Oclgrind too."""
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_check
    from tiletraffic.simulator.kernels.variants import build_any

    found = oclgrind_check(build_any(name))
    assert found.ok, found.describe()


def test_single_case_prints_both_columns():
    result = CliRunner().invoke(main, ["crosscheck", "gemm-tiled", "--m", "20", "--k", "20",
                                       "--n", "20", "--tile", "16"])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "global_load_elems" in ln)
    assert line.split()[1:] == ["1600", "1600"]


def test_a_long_hazard_line_is_cut_at_a_word_with_an_ellipsis():
    from tiletraffic.analysis.cli.crosscheck import DETAIL_WIDTH, shortened

    line = ("[data-race] read-write race on global buf between work-groups: e.g. by work-item "
            "1 of work-group (0,) which stores to buf[1] read by work-item 0 of work-group "
            "(1,); OpenCL orders no global memory between work-groups")
    assert len(line) > DETAIL_WIDTH
    cut = shortened(line)
    assert cut.endswith(" …") and len(cut) <= DETAIL_WIDTH + 2
    assert line.startswith(cut[:-2]) and line[len(cut) - 2] == " "   # ends at a whole word
    assert shortened("short line") == "short line"


SHUFFLING_KERNEL = """
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
__kernel void row_sums(__global const float *x, __global float *y) {
    float s = sub_group_reduce_add(x[get_global_id(0)]);
    if (get_sub_group_local_id() == 0) y[get_group_id(0)] = s;
}
"""


def test_counts_of_a_shuffling_kernel_say_why_they_exceed_simulates(tmp_path):
    import tiletraffic as tt
    from tiletraffic.analysis.cli.crosscheck import comparison_text
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts

    sch = tt.from_opencl(SHUFFLING_KERNEL, "row_sums", [64], [32],
                         {"x": {"shape": [64], "access": "in"},
                          "y": {"shape": [2], "access": "out"}})
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    simulated = tt.simulate(sch, compute_values=False).counts
    assert simulated.local_load_elems == 0 < comparison.simulator["local_load_elems"]
    assert "shuffle" in comparison.note and "local" in comparison.note
    assert comparison.to_dict()["note"] == comparison.note
    assert f"  note: {comparison.note}" in comparison_text(comparison)
    plain = compare_counts(tt.build("gemm-tiled", m=16, k=16, n=16, tile=8))
    assert plain.note == "" and "note" not in plain.to_dict()
    assert not any("note" in line for line in comparison_text(plain))


def test_shuffles_part_of_a_block_skips_are_refused_in_one_line(tmp_path):
    (tmp_path / "d.cu").write_text("""__global__ void k(const float *A, float *B) {
  float v = A[threadIdx.x];
  if (threadIdx.x < 32) v += __shfl_down_sync(0xffffffff, v, 1);
  B[threadIdx.x] = v;
}
""")
    (tmp_path / "d.toml").write_text("""source = "d.cu"
kernel = "k"
[launch]
grid = [1]
block = [64]
[args]
A = { shape = [64], access = "in" }
B = { shape = [64], access = "out" }
""")
    res = CliRunner().invoke(main, ["crosscheck", str(tmp_path / "d.toml")])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output
    assert lines[0].startswith("error: cuda:k: not compared: its generated OpenCL C")
    assert "skips a shuffle (barrier at " in lines[0] and "d.cu:3:30)" in lines[0]
