"""The corpus of public OpenCL C kernels (tests/corpora/opencl/): every file as published,
the front end's verdict on each as the README's table says (accepted, or refused with the
words given), `check`'s verdict on each accepted kernel as the table says, and for each
accepted kernel the simulator's counts equal to Oclgrind's on the code that runs (the source
itself; for a file that uses sub-groups, which Oclgrind and PoCL lack, the OpenCL C rendered
from the schedule) and the kernel run on PoCL equal to its numpy reference. Small sizes;
each launch file is read once per process, and the Oclgrind and PoCL runs keep to one worker
each under ``pytest -n 2 --dist loadgroup``."""
from __future__ import annotations

import hashlib
import warnings
from functools import lru_cache
from pathlib import Path

import pytest

import tiletraffic as tt

CORPUS = Path(__file__).parent / "corpora" / "opencl"
ACCEPTANCE_MIN = 0.90


def _table() -> dict[str, tuple[str, str]]:
    """README's table: kernel (launch file path relative to the corpus, without .toml) ->
    (front end verdict, check verdict)."""
    rows = {}
    for line in (CORPUS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and "/" in cells[0] and not cells[0].startswith("-"):
            rows[cells[0].strip("`")] = (cells[4], cells[5])
    return rows


TABLE = _table()
ACCEPTED = sorted(k for k, (verdict, _) in TABLE.items() if verdict == "accepted")


@lru_cache(maxsize=None)
def _load(kernel: str):
    """(schedule, reference function) of the kernel's launch file, or the front end's
    refusal (an exception)."""
    from tiletraffic.frontend import launch_file
    path = CORPUS / f"{kernel}.toml"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return launch_file.load(path), launch_file.reference_function(path)
    except Exception as err:   # the refusal is the verdict under test
        return err


def test_every_kernel_is_in_the_table_with_its_origin_and_licence():
    kernels = sorted(str(p.relative_to(CORPUS).with_suffix("")) for p in CORPUS.glob("*/*.toml"))
    assert kernels == sorted(TABLE) and len(kernels) >= 40
    for folder in {p.parent for p in CORPUS.glob("*/*.toml")}:
        assert (folder / "LICENSE").is_file() and (folder / "ORIGIN").is_file(), folder


def test_every_file_is_byte_for_byte_the_one_origin_records():
    for origin in CORPUS.glob("*/ORIGIN"):
        recorded = {}
        for line in origin.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and len(parts[0]) == 64:
                recorded[parts[1]] = parts[0]
        files = [p for p in origin.parent.iterdir() if p.suffix in (".cl", ".h")
                 or p.name == "LICENSE"]
        assert sorted(recorded) == sorted(p.name for p in files), origin
        for p in files:
            assert hashlib.sha256(p.read_bytes()).hexdigest() == recorded[p.name], p


@pytest.mark.parametrize("kernel", sorted(TABLE))
def test_the_front_end_verdict_is_the_tables(kernel):
    (verdict, check), loaded = TABLE[kernel], _load(kernel)
    if verdict == "accepted":
        assert not isinstance(loaded, Exception), f"{kernel}: refused: {loaded}"
        return
    assert verdict.startswith("refused: ") and check == "-"
    assert isinstance(loaded, Exception), f"{kernel}: accepted, the table says {verdict}"
    message = str(loaded)
    assert verdict[len("refused: "):].strip("`") in message, message
    assert "\n" not in message


@pytest.mark.parametrize("kernel", ACCEPTED)
def test_checks_verdict_is_the_tables(kernel):
    schedule, _ = _load(kernel)
    kinds = sorted({h.kind for h in tt.check(schedule, seed=3)})
    assert (", ".join(kinds) or "clean") == TABLE[kernel][1]


HOST_LOCAL_BYTES = {
    "pyfai/csr_integrate": 32 * 4 * 4,         # WORKGROUP_SIZE * 4 * sizeof(float)
    "pyfai/csr_integrate4": 32 * 8 * 4,        # WORKGROUP_SIZE * 8 * sizeof(float)
    "pyfai/csr_integrate4_single": 32,         # LocalMemory(32), unused
}
"""Local memory per work-group, in bytes, that pyFAI's host allocates for each kernel whose
``__local`` vector argument the launch file sizes (at its work-group size of 32; the sizes
ocl_azim_CSR.cl's comments give)."""


@pytest.mark.parametrize("kernel", sorted(HOST_LOCAL_BYTES))
def test_a_kernels_local_memory_per_work_group_is_what_its_host_allocates(kernel):
    schedule, _ = _load(kernel)
    assert schedule.local_size[0] == 32
    assert schedule.local_mem_bytes == HOST_LOCAL_BYTES[kernel]


def test_at_least_90_percent_of_the_corpus_is_accepted_unchanged():
    assert len(ACCEPTED) / len(TABLE) >= ACCEPTANCE_MIN, f"{len(ACCEPTED)} of {len(TABLE)}"


def test_the_acceptance_the_readme_states_is_the_tables():
    text = (CORPUS / "README.md").read_text()
    assert f"{len(ACCEPTED)} of {len(TABLE)} kernels are accepted unchanged" in text


@pytest.mark.xdist_group("opencl-corpus-oclgrind")
@pytest.mark.parametrize("kernel", ACCEPTED)
def test_an_accepted_kernels_counts_equal_oclgrinds(kernel):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    schedule, _ = _load(kernel)
    comparison = compare_counts(schedule)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_store_elems"] > 0


@pytest.mark.xdist_group("opencl-corpus-pocl")
@pytest.mark.parametrize("kernel", ACCEPTED)
def test_an_accepted_kernel_run_on_pocl_equals_the_reference(kernel, pocl):
    schedule, reference = _load(kernel)
    assert reference is not None, f"{kernel}: its launch file names no reference"
    result = tt.run(schedule, pocl, repeat=10, warmup=1, reference=reference, seed=5)
    assert result.check.ok
