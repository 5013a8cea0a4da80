"""The CUDA corpus (tests/corpora/cuda/): public CUDA kernels of matrix work, each copied
byte for byte from a PyPI distribution with its licence and origin, read through a launch file that sets what the
file's own host code sets. Each kernel is read unchanged or refused with the message the
corpus README states; an accepted kernel's simulated counts equal Oclgrind's counts of the
OpenCL C generated from it, its check finds what the README states, and a clean one runs on
PoCL equal to its numpy reference (one with a hazard is refused before launch). At least 90%
of the corpus is accepted.
"""
from __future__ import annotations

import functools
import hashlib
import warnings
from pathlib import Path

import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.launch_file import tomllib
from tiletraffic.frontend.opencl.clang_ast import FrontendError

CORPUS = Path(__file__).resolve().parent / "corpora" / "cuda"
LAUNCH = CORPUS / "launch"
README = CORPUS / "README.md"
PERMISSIVE = ("MIT", "BSD-3-Clause", "Apache-2.0")
ACCEPTED = "accepted"
COLUMNS = ("kernel", "origin", "licence", "source", "reading", "check")


def strip_code(cell: str) -> str:
    """A README cell without the backticks around it."""
    cell = cell.strip()
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


@functools.lru_cache(maxsize=1)
def readme_rows() -> dict[str, dict[str, str]]:
    """The README's corpus table, one row per launch file: its columns by name."""
    lines = [ln for ln in README.read_text().splitlines() if ln.startswith("|")]
    header = [c.strip().lower() for c in lines[0].strip("|").split("|")]
    assert tuple(header) == COLUMNS, header
    rows = {}
    for line in lines[2:]:
        cells = [strip_code(c) for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(COLUMNS), line
        row = dict(zip(COLUMNS, cells))
        assert row["kernel"] not in rows, row["kernel"]
        rows[row["kernel"]] = row
    return rows


NAMES = sorted(p.stem for p in LAUNCH.glob("*.toml"))


@functools.lru_cache(maxsize=None)
def built(name: str):
    """``(schedule, None)`` of a launch file, or ``(None, message)`` where it is refused (its
    paths relative to ``launch/``, on one line, as the README gives them: update_readme.py
    writes them so)."""
    try:
        return tt.build(str(LAUNCH / f"{name}.toml")), None
    except (FrontendError, launch_file.LaunchFileError) as err:
        return None, " ".join(str(err).replace(f"{LAUNCH}/", "").split())


def accepted_names() -> list[str]:
    return [n for n in NAMES if readme_rows().get(n, {}).get("reading") == ACCEPTED]


def schedule_of(name: str):
    sch, message = built(name)
    assert sch is not None, message
    return sch


def verdict(name: str) -> str:
    """``clean`` or the sorted hazard kinds the check finds."""
    kinds = sorted({h.kind for h in tt.check(schedule_of(name), seed=3)})
    return ", ".join(kinds) if kinds else "clean"


def origins() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/ORIGIN"))


def read_origin(folder: Path) -> dict:
    """An ORIGIN file: the PyPI project, version, distribution file and its sha256, the
    folder inside it, the licence file and the copied files with their sha256."""
    fields, files = {}, {}
    for line in (folder / "ORIGIN").read_text().splitlines():
        if line.startswith("  "):
            path, digest = line.split()
            files[path] = digest
        elif ": " in line:
            key, _, value = line.partition(": ")
            fields[key] = value
    return {**fields, "files": files}


def test_the_corpus_is_large_enough_and_at_least_90_percent_accepted():
    rows = readme_rows()
    assert len(NAMES) >= 30
    assert sorted(rows) == NAMES            # one README row per launch file, no other
    accepted = accepted_names()
    assert len(accepted) >= 0.9 * len(NAMES), (len(accepted), len(NAMES))


@pytest.mark.parametrize("folder", origins(), ids=lambda p: p.name)
def test_copied_files_are_unchanged_and_licensed(folder):
    origin = read_origin(folder)
    assert origin["pypi"] and origin["version"]
    assert origin["distribution"].startswith(origin["pypi"].replace("-", "_")) or \
        origin["distribution"].startswith(origin["pypi"])
    assert len(origin["sha256"]) == 64 and int(origin["sha256"], 16) >= 0
    assert origin["licence"] in origin["files"] and (folder / origin["licence"]).is_file()
    for path, digest in origin["files"].items():
        assert hashlib.sha256((folder / path).read_bytes()).hexdigest() == digest, path
    copied = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert copied == set(origin["files"]) | {"ORIGIN"}
    rows = [r for r in readme_rows().values() if r["origin"] == folder.name]
    assert rows and {r["licence"] for r in rows} <= set(PERMISSIVE)


@pytest.mark.parametrize("name", NAMES)
def test_launch_file_reads_a_copied_source(name):
    data = tomllib.loads((LAUNCH / f"{name}.toml").read_text())
    source = (LAUNCH / data["source"]).resolve()
    folder = CORPUS / readme_rows()[name]["origin"]
    assert source.is_relative_to(folder.resolve()), source
    assert str(source.relative_to(folder.resolve())) in read_origin(folder)["files"]
    assert data["language"] == "cuda"
    assert readme_rows()[name]["source"] == f"{source.relative_to(folder.resolve())}:" \
                                            f"{data['kernel']}"


@pytest.mark.parametrize("name", NAMES)
def test_read_or_refused_as_the_readme_states(name):
    sch, message = built(name)
    stated = readme_rows()[name]["reading"]
    if stated == ACCEPTED:
        assert sch is not None, message
    else:
        assert sch is None and stated in message, message


@pytest.mark.parametrize("name", accepted_names())
def test_check_verdict_as_the_readme_states(name):
    assert verdict(name) == readme_rows()[name]["check"]


def oclgrind_crosscheck(name: str):
    """The accepted kernel's generated OpenCL C under Oclgrind next to the simulator (its
    counts where the kernel is clean, its hazards where not). Each kernel's own test runs
    it, so under ``pytest -n`` every kernel runs on Oclgrind once, on one worker."""
    from tiletraffic.gpu.oclgrind.crosscheck import crosscheck
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    return crosscheck(schedule_of(name))


HAZARDS_DIFFER = {"ds_softmax_backward_kernel_arbitrary_length": (
    "the simulator reports float4 loads of output[4096..4099] and grad[4096..4099], past "
    "the 4096-element buffers, in work-group (31, 0); Oclgrind's run of the generated "
    "OpenCL reports the same data race but not these loads (not yet explained)")}
"""Kernels whose hazards the two find differently, and why."""

def known(name: str, gaps: dict):
    """``name`` as a parameter, marked as an expected failure where ``gaps`` explains it."""
    if name in gaps:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=gaps[name]))
    return name


@pytest.mark.parametrize("name", [known(n, HAZARDS_DIFFER) for n in accepted_names()])
def test_oclgrind_of_the_generated_opencl_agrees(name):
    from tiletraffic.gpu.oclgrind.crosscheck import CountsComparison
    result = oclgrind_crosscheck(name)
    if readme_rows()[name]["check"] == "clean":
        assert isinstance(result, CountsComparison), result
        assert result.equal, result.to_dict()
        assert result.oclgrind["global_load_elems"] > 0
    else:
        assert ", ".join(result.simulator_kinds) == readme_rows()[name]["check"]
        assert result.agree, result


RUN_SETS: dict = {}
"""Sizes of a run where the launch file's would not do (none)."""
RUN_INPUTS = {name: "ones" for name in (
    "ds_LayerNormBackward1_means", "ds_LayerNormBackward1_fused_add_means",
    "ds_LayerNormBackward2", "ds_LayerNormBackward2_means", "ds_LayerNormBackward2_fused_add",
    "ds_LayerNormBackward2_fused_add_means")}
"""Inputs of a run where random ones would not do: these kernels take row variances as an
input and take their reciprocal square root, which a negative random variance makes NaN."""


@pytest.mark.parametrize("name", accepted_names())
def test_runs_on_pocl_equal_to_the_reference(name, pocl):
    from tiletraffic.gpu.runtime.checked_run import UnsafeLaunchError
    path = LAUNCH / f"{name}.toml"
    reference = launch_file.reference_function(path)
    if readme_rows()[name]["check"] != "clean":
        with pytest.raises(UnsafeLaunchError):
            tt.run(schedule_of(name), pocl, repeat=10, warmup=1, reference=reference, seed=5)
        return
    sch = tt.build(str(path), set=RUN_SETS[name]) if name in RUN_SETS else schedule_of(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = tt.run(sch, pocl, repeat=10, warmup=1, reference=reference, seed=5,
                        inputs=RUN_INPUTS.get(name, "normal"))
    assert result.check.ok, result.check
