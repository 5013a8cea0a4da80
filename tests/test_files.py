"""analysis.files: the one atomic-write helper."""
from __future__ import annotations

import os

import pytest

from tiletraffic.analysis.files import atomic_path, atomic_write_bytes, atomic_write_text


def test_writes_text_as_utf8_into_a_new_folder_with_normal_permissions(tmp_path):
    path = tmp_path / "new" / "report.md"
    atomic_write_text(path, "3 µs → 4 µs\n")
    assert path.read_bytes() == "3 µs → 4 µs\n".encode("utf-8")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    assert os.listdir(path.parent) == ["report.md"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "results.json"
    atomic_write_bytes(path, b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(path, suffix=".json") as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer failed")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["results.json"]


def test_atomic_path_replaces_the_file_when_the_block_ends(tmp_path):
    path = tmp_path / "figure.png"
    with atomic_path(path, suffix=".png") as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and not path.exists()
        tmp.write_bytes(b"png")
    assert path.read_bytes() == b"png" and not tmp.exists()


def test_an_unwritable_output_folder_is_the_users_error(tmp_path):
    from tiletraffic.analysis.files import OutputNotWritable, ensure_writable
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(OutputNotWritable) as info:
        ensure_writable(blocker / "reports")
    assert isinstance(info.value, OSError) and info.value.filename == str(blocker)
    assert info.value.strerror == f"{blocker} is a file, not a folder"
    ensure_writable(tmp_path / "new" / "reports")        # a folder that can be made is fine
    assert os.listdir(tmp_path / "new" / "reports") == []


@pytest.mark.parametrize("command", [["report", "--quick"], ["validate", "--quick"]])
def test_report_and_validate_refuse_an_unwritable_out_with_exit_2(tmp_path, command):
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    from tiletraffic.gpu.devices.device import list_devices
    if not list_devices():
        pytest.skip("no OpenCL device: the device is chosen before the output folder")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, [*command, "--out", str(blocker / "out")])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "cannot write the" in lines[0]
    assert f"{blocker} is a file, not a folder" in lines[0]


def test_check_writable_creates_nothing_and_refuses_a_file_in_the_way(tmp_path):
    from tiletraffic.analysis.files import OutputNotWritable, check_writable

    check_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputNotWritable, match="is a file, not a folder"):
        check_writable(tmp_path / "f" / "b")


def test_a_value_from_a_users_file_is_shown_in_the_formats_words():
    from tiletraffic.simulator.model.file_values import shown

    assert [shown(v) for v in (None, True, False, "N", 2.5, -1.0, 7, [], [1], {})] == [
        "null", "true", "false", 'the string "N"', "2.5", "-1", "7", "an empty list",
        "a list", "a table"]
    assert shown({}, "JSON") == "an object"
    assert shown("x" * 100) == f'the string "{"x" * 37}..."'


def test_a_full_disk_under_an_out_folder_is_one_line_and_exit_2(tmp_path, monkeypatch):
    """A full disk while the report is written: as on stdout, exit 2 (1 says a fault)."""
    import errno

    from click.testing import CliRunner

    import tiletraffic.analysis.report.build as report
    from tiletraffic.analysis.cli import main

    target = tmp_path / "out" / "dev" / "report.md"

    def full(**_):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))
    monkeypatch.setattr(report, "make_report", full)
    res = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert res.output == (f"error: cannot write the report under {str(tmp_path / 'out')!r}: "
                          f"No space left on device ({target})\n")


def test_predict_only_refuses_an_unwritable_out_before_predicting(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import tiletraffic.analysis.validation.predict as predict
    from tiletraffic.analysis.cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("predicted before the output was checked")
    monkeypatch.setattr(predict, "write_predictions", refuse)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--quick", "--device-model",
                                    "generic-gpu", "--out", str(blocker / "p.json")])
    assert res.exit_code == 2, res.output
    assert f"{blocker} is a file, not a folder" in res.output


def test_json_output_is_standard_json_with_null_for_non_finite_numbers(tmp_path):
    import json

    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    from tiletraffic.analysis.files import json_text

    assert json_text({"a": float("inf"), "b": [1.5, float("nan")], "c": (2,)}) == \
        '{"a": null, "b": [1.5, null], "c": [2]}'
    # a copy kernel checked against a reference one away: a copy's running error bound is at
    # most float64 rounding noise, so the error over tolerance is enormous (or infinite,
    # written as null)
    (tmp_path / "cp.cl").write_text("__kernel void k(__global const float *A, __global float *B)"
                                    " { int i = get_global_id(0); B[i] = A[i]; }\n")
    (tmp_path / "ref.py").write_text("def r(inputs):\n    return inputs['A'] + 1\n")
    (tmp_path / "cp.toml").write_text(
        'source = "cp.cl"\nkernel = "k"\n[launch]\nglobal_size = [64]\nlocal_size = [16]\n'
        '[args]\nA = { shape = [64], access = "in" }\nB = { shape = [64], access = "out" }\n'
        '[reference]\nfunction = "ref.py:r"\n')
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "cp.toml"), "--json"])
    assert res.exit_code == 1    # a wrong result
    doc = json.loads(res.stdout, parse_constant=lambda name: pytest.fail(name))
    ratio = doc["result_error_over_tolerance"]
    assert ratio is None or ratio > 1e6


@pytest.mark.parametrize("stamp", ["../../escaped", "a\u0000b", "x" * 300, 12])
def test_an_edited_created_utc_does_not_name_the_archived_file(tmp_path, stamp):
    import json

    from tiletraffic.analysis.files import archive_previous

    old = tmp_path / "t.json"
    old.write_text(json.dumps({"meta": {"created_utc": stamp}}))
    moved = archive_previous(old)
    assert moved.parent == tmp_path / "history" and moved.name.startswith("t-20")
    assert json.loads(moved.read_text())["meta"]["created_utc"] == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history"]


def test_a_plain_created_utc_names_the_archived_file(tmp_path):
    from tiletraffic.analysis.files import archive_previous

    old = tmp_path / "t.json"
    old.write_text('{"meta": {"created_utc": "2026-12-03T15:41:00Z"}}')
    assert archive_previous(old).name == "t-2026-12-03T154100Z.json"
