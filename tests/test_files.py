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
