"""The corpus of public GLSL compute shaders (tests/corpora/glsl/): every file as published,
the front end's verdict on each as the README's table says, and for each accepted shader the
simulator's counts equal to Oclgrind's on the generated OpenCL C and the shader itself,
dispatched through Vulkan, equal to the reference. Small sizes; each shader is read once."""
from __future__ import annotations

import hashlib
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

CORPUS = Path(__file__).parent / "corpora" / "glsl"
ACCEPTANCE_MIN = 0.85


def _table() -> dict[str, str]:
    """README's table: shader path (relative to the corpus) -> verdict."""
    rows = {}
    for line in (CORPUS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].endswith(".comp"):
            rows[cells[0]] = cells[2]
    return rows


TABLE = _table()
ACCEPTED = sorted(s for s, v in TABLE.items() if v == "accepted")


@lru_cache(maxsize=None)
def _load(shader: str):
    """(schedule, reference function) of the shader's launch file, or the front end's
    refusal (an exception)."""
    pytest.importorskip("tree_sitter_glsl_spec", reason="the GLSL front end's parser")
    from tiletraffic.frontend import launch_file
    path = str((CORPUS / shader).with_suffix(".toml"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return launch_file.load(path), launch_file.reference_function(path)
    except Exception as err:   # the refusal is the verdict under test
        return err


def test_every_shader_is_in_the_table_with_its_launch_file_and_origin():
    shaders = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.comp"))
    assert shaders == sorted(TABLE) and len(shaders) >= 15
    for folder in {p.parent for p in CORPUS.glob("*/*.comp")}:
        assert (folder / "LICENSE").is_file() and (folder / "ORIGIN").is_file()
    for shader in shaders:
        assert (CORPUS / shader).with_suffix(".toml").is_file(), shader


def test_every_file_is_byte_for_byte_the_one_origin_records():
    for origin in CORPUS.glob("*/ORIGIN"):
        recorded = {}
        for line in origin.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and len(parts[0]) == 64:
                recorded[parts[1]] = parts[0]
        files = [p for p in origin.parent.iterdir() if p.suffix == ".comp" or p.name == "LICENSE"]
        assert sorted(recorded) == sorted(p.name for p in files), origin
        for p in files:
            assert hashlib.sha256(p.read_bytes()).hexdigest() == recorded[p.name], p


@pytest.mark.parametrize("shader", sorted(TABLE))
def test_the_front_end_verdict_is_the_tables(shader):
    verdict, loaded = TABLE[shader], _load(shader)
    if verdict == "accepted":
        assert not isinstance(loaded, Exception), f"{shader}: refused: {loaded}"
    else:
        assert verdict.startswith("refused: ")
        assert isinstance(loaded, Exception), f"{shader}: accepted, the table says {verdict}"
        assert verdict[len("refused: "):] in str(loaded)
        assert "\n" not in str(loaded) and f"{Path(shader).name}:" in str(loaded)


def test_at_least_85_percent_of_the_corpus_is_accepted_unchanged():
    assert len(ACCEPTED) / len(TABLE) >= ACCEPTANCE_MIN, f"{len(ACCEPTED)} of {len(TABLE)}"


@pytest.mark.parametrize("shader", ACCEPTED)
def test_an_accepted_shaders_counts_equal_oclgrinds(shader):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    schedule, _ = _load(shader)
    comparison = compare_counts(schedule)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


@pytest.mark.parametrize("shader", ACCEPTED)
def test_an_accepted_shader_run_through_vulkan_equals_the_reference(shader):
    from tiletraffic.gpu.vulkan.runner import TIMING, run_shader, unavailable_reason
    if (why := unavailable_reason()) is not None:
        pytest.skip(f"no Vulkan: {why}")
    schedule, reference = _load(shader)
    result = run_shader(None, schedule, repeat=10, warmup=1, reference_fn=reference,
                        rng=np.random.default_rng(0))
    assert result.check.ok and result.run.timing == TIMING
    assert 0 in result.launch_checks and 10 in result.launch_checks
