"""The matrix-operations chapter's four GLSL listings (examples/glsl/), as printed: each is
read through its launch file; simulate gives the chapter's counts (2·N³ global reads for
the naive GEMM, 2·N³/16 for the tiled one), check finds the shared-memory matrix-vector's
``shared_vector[256]`` overflow for N > 256, explain draws them, Oclgrind's counts of the
generated OpenCL C equal the simulator's, and run falls back to that OpenCL C with a note.
"""
from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main as cli_main
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.glsl import syntax
from tiletraffic.simulator.engine.fast_path import count_launch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "glsl"

LISTINGS = {
    "matvec_naive": "578b5944f1091784a1919bf845191e9f8933fcef23e67a8d363e2d758c0cc390",
    "matvec_shared": "d83432bbe91eddf1695bb506242998d14b22131f2181b4f099d24c5df1f1220d",
    "gemm_naive": "24de3bfc6a89e6fc37b66e853f072401cf34d58cce7a27c630745bfd812c9f38",
    "gemm_tiled": "62fa03a4ac2ad9939adeb211714c4fbf2cca13c825c18a8555ef0cc69df91b51",
}
"""Each listing's SHA-256: the files are the chapter's text, byte for byte."""

SMALL = {"matvec_naive": {"M": 70, "N": 40}, "matvec_shared": {"M": 70, "N": 200},
         "gemm_naive": {"M": 20, "K": 24, "N": 36}, "gemm_tiled": {"M": 20, "K": 24, "N": 36}}
"""Sizes that are not multiples of the work-group size, so the guards matter."""


def load(name, **sets):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", syntax.ReservedWordWarning)
        warnings.simplefilter("ignore", syntax.ValidatorMissingWarning)
        return launch_file.load(EXAMPLES / f"{name}.toml", sets or None)


def test_the_listings_are_the_chapters_text():
    assert sorted(p.stem for p in EXAMPLES.glob("*.comp")) == sorted(LISTINGS)
    assert sorted(p.stem for p in EXAMPLES.glob("*.toml")) == sorted(LISTINGS)
    for name, digest in LISTINGS.items():
        assert hashlib.sha256((EXAMPLES / f"{name}.comp").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("name,reads", [("gemm_naive", 2 * 1024 ** 3),
                                        ("gemm_tiled", 2 * 1024 ** 3 // 16)])
def test_gemm_global_reads_are_the_chapters_at_1024(name, reads):
    sch = load(name)
    assert (sch.global_size, sch.local_size) == ((1024, 1024), (16, 16))
    counted = count_launch(sch)
    assert counted.counts.global_load_elems == reads
    assert counted.counts.global_store_elems == 1024 * 1024


@pytest.mark.parametrize("name", LISTINGS)
def test_small_sizes_count_as_worked_by_hand(name):
    s = SMALL[name]
    counts = tt.simulate(load(name, **s), compute_values=False).counts
    if name.startswith("gemm"):
        m, k, n = s["M"], s["K"], s["N"]
        tiles = -(-k // 16)
        groups = -(-m // 16) * -(-n // 16)
        expected = 2 * m * n * k if name == "gemm_naive" else \
            groups * tiles * (16 * 16) * 2 - _tiled_skipped(m, k, n)
        assert counts.global_load_elems == expected
        assert counts.global_store_elems == m * n
    else:
        m, n = s["M"], s["N"]
        groups = -(-m // 256)
        staged = groups * n if name == "matvec_shared" else 0
        assert counts.global_load_elems == m * n + (m * n if name == "matvec_naive" else 0) \
            + staged
        assert counts.global_store_elems == m


def _tiled_skipped(m, k, n):
    """Loads the tiled listing's guards skip (zero-filled tile elements), worked out per
    element of the padded index space."""
    gm, gn, tiles = -(-m // 16) * 16, -(-n // 16) * 16, -(-k // 16)
    skipped_a = sum(1 for row in range(gm) for col in range(tiles * 16)
                    if not (row < m and col < k)) * (gn // 16)
    skipped_b = sum(1 for row in range(tiles * 16) for col in range(gn)
                    if not (row < k and col < n)) * (gm // 16)
    return skipped_a + skipped_b


def test_shared_vector_overflows_beyond_256():
    hazards = tt.check(load("matvec_shared", M=256, N=512), seed=1)
    kinds = {h.kind for h in hazards}
    assert kinds == {"out-of-bounds"}
    text = " ".join(str(h) for h in hazards)
    assert "shared_vector" in text and "matvec_shared.comp:32" in text
    assert tt.check(load("matvec_shared", M=256, N=256), seed=1) == []


def test_check_command_names_the_overflow():
    result = CliRunner().invoke(cli_main, ["check", str(EXAMPLES / "matvec_shared.toml"),
                                           "--set", "N=300", "--set", "M=256"])
    assert result.exit_code == 1, result.output
    assert "[out-of-bounds] local store of shared_vector[256]" in result.output


@pytest.mark.parametrize("name", ["matvec_naive", "gemm_naive", "gemm_tiled"])
def test_clean(name):
    assert tt.check(load(name, **SMALL[name]), seed=2) == []


@pytest.mark.skipif(syntax.validator() is None, reason="glslangValidator is not installed")
def test_the_reserved_word_is_named():
    with pytest.warns(syntax.ReservedWordWarning, match=r"matvec_naive.comp:14:11: 'output'"):
        launch_file.load(EXAMPLES / "matvec_naive.toml", {"M": 8, "N": 8})


def test_explain_renders(tmp_path):
    out = tmp_path / "tiled.html"
    result = CliRunner().invoke(cli_main, ["explain", str(EXAMPLES / "gemm_tiled.toml"),
                                           "--set", "M=32", "--set", "K=32", "--set", "N=32",
                                           "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "glsl:gemm_tiled" in result.output and out.stat().st_size > 10_000


@pytest.mark.parametrize("name", LISTINGS)
def test_oclgrind_counts_of_the_translation_equal_the_simulator(name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(load(name, **SMALL[name]))
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


def test_run_falls_back_to_the_translation_with_a_note(pocl):
    from tiletraffic.gpu.runtime import shader_runner
    if shader_runner.vulkan_runner() is not None:
        pytest.skip("a Vulkan runner is available")
    result = CliRunner().invoke(
        cli_main, ["run", str(EXAMPLES / "gemm_tiled.toml"), "--set", "M=20", "--set", "K=24",
                   "--set", "N=36", "--repeat", "10", "--warmup", "1"])
    assert result.exit_code == 0, result.output + result.stderr
    assert "no Vulkan runner is available" in result.stderr
    assert "result equals the reference" in result.output


def test_a_listing_is_a_validation_case_of_its_own_kind():
    from tiletraffic.analysis.validation.cases import Case
    case = Case.from_dict({"launch": str(EXAMPLES / "gemm_tiled.toml"),
                           "set": {"M": 32, "K": 32, "N": 32}})
    assert case.family == "glsl:gemm_tiled" and case.kind == "glsl"
    assert case.problem == "glsl gemm_tiled.toml K=32 M=32 N=32"
    assert tt.simulate(case.build(), compute_values=False).counts.global_load_elems == \
        2 * 32 ** 3 // 16


def test_the_api_runs_the_translation_with_a_warning(pocl):
    from tiletraffic.gpu.runtime import shader_runner
    if shader_runner.vulkan_runner() is not None:
        pytest.skip("a Vulkan runner is available")
    ref = launch_file.reference_function(EXAMPLES / "gemm_naive.toml")
    with pytest.warns(shader_runner.TranslationRunWarning, match="gemm_naive.comp"):
        result = tt.run(load("gemm_naive", M=20, K=24, N=36), pocl, reference=ref, seed=3)
    assert result.check.ok


@pytest.mark.skipif(syntax.validator() is None, reason="glslangValidator is not installed")
def test_the_matvec_listings_compile_with_the_reserved_word_renamed(tmp_path):
    for name in ("matvec_naive", "matvec_shared"):
        text = (EXAMPLES / f"{name}.comp").read_bytes()
        renamed = syntax.compilable(text)
        assert renamed != text and b"output_[row] = sum;" in renamed
        syntax.validate(tmp_path / f"{name}.comp", renamed)     # raises where rejected
