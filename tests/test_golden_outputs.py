"""Behaviour kept: the command line's ``--json`` outputs equal the recorded golden outputs.

Every case of ``tests/golden/record.py`` (``simulate``, ``model`` on nvidia-h200 and
generic-gpu, ``check`` for every family, demo and faulty variant at two small sizes;
``check --all``; ``crosscheck --all`` at the example shapes (without Oclgrind's messages,
whose order varies); the tuner's ranking of the
built-in GEMM space at 64³) is run again in-process and compared with its file under
``tests/golden/``: exit status, stdout and stderr identical, except for words about the
project's history (``record.PROCESS_WORDS``), which are removed from both sides, and floats,
equal to 1e-9 relative (1e-6 for the result checks' error / tolerance; ``record.REL_TOL``).

When a change of behaviour is intended (a clearer hazard message, a new field, a corrected
count), update the golden outputs with the record script and say why in the commit:

    PYTHONPATH=. python tests/golden/record.py [simulate model-nvidia-h200 model-generic-gpu
                                                check crosscheck tune]
    git diff tests/golden/   # every changed line is the intended change, and only that
    git commit -m "golden outputs: <what changed in the output and why>" tests/golden/

A new family or variant makes ``test_every_case_has_a_golden_output`` fail until its second
size is added to ``record.SECOND_SIZES`` and the files are recorded again.
"""
from __future__ import annotations

import pytest

from golden import record

SIZED = record.sized_cases()
GOLDEN = {stem: record.load(stem) for stem in record.STEMS}


def assert_golden(case_id: str, actual: dict) -> None:
    expected = GOLDEN[record.golden_file(case_id)][case_id]
    diffs = record.differences(record.normalized(expected), record.normalized(actual))
    assert not diffs, (f"{case_id} ({' '.join(expected['argv'])}) differs from "
                       f"tests/golden/{record.golden_file(case_id)}.json:\n  "
                       + "\n  ".join(diffs[:20]))


def test_every_case_has_a_golden_output():
    recorded = {case for stem in ("simulate", "check", *(f"model-{m}" for m in
                                                         record.DEVICE_MODELS))
                for case in GOLDEN[stem]}
    assert recorded == set(SIZED), (
        "cases without a golden output (record them: tests/golden/record.py): "
        f"{sorted(set(SIZED) - recorded)}; golden outputs of no case: "
        f"{sorted(recorded - set(SIZED))}")
    for case_id, argv in SIZED.items():
        assert GOLDEN[record.golden_file(case_id)][case_id]["argv"] == argv, case_id


@pytest.mark.parametrize("case_id", sorted(SIZED))
def test_simulate_model_and_check_outputs_are_the_golden_ones(case_id):
    assert_golden(case_id, record.invoke(SIZED[case_id]))


def test_crosscheck_outputs_are_the_golden_ones(crosscheck_all):
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available

    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    assert_golden("crosscheck/--all", record.crosscheck_outcome(crosscheck_all))


def test_the_tuners_ranking_at_64_is_the_golden_one():
    assert_golden(f"tune/gemm@{record.TUNE_SIZE}", record.run_tune())


def test_the_comparison_finds_a_changed_count_and_ignores_process_words():
    """The comparison is not vacuous: a count one off, a float beyond the tolerance and a
    changed message are differences; an issue or round number removed is not."""
    case = GOLDEN["simulate"]["simulate/gemm-tiled@example"]
    changed = {**case, "stdout": {**case["stdout"],
                                  "global_load_elems": case["stdout"]["global_load_elems"] + 1}}
    assert record.differences(case, changed) == [
        f"/stdout/global_load_elems: '{case['stdout']['global_load_elems'] + 1}' != golden "
        f"'{case['stdout']['global_load_elems']}'"]
    assert record.differences({"t": 1.0}, {"t": 1.0 + 1e-6})
    assert not record.differences({"t": 1.0}, {"t": 1.0 + 1e-12})
    assert record.differences({"stderr": "race in tile_A"}, {"stderr": "race in tile_B"})
    assert not record.differences(
        record.normalized({"stderr": "the targets (issue #14) are met as in round 8"}),
        record.normalized({"stderr": "the targets are met as in"}))
