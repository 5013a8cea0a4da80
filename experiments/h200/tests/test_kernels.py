"""The drivers' hand-written kernels are files beside them (experiments/h200/*/*.cu, .cuh,
.cl), read at run time; building them needs the device (python -m
experiments.h200.check_kernels), composing them does not."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.h200.check_kernels import sources
from experiments.h200.kernels import kernel_source

H200 = Path(__file__).resolve().parents[1]


def test_every_source_defines_its_entry_points_once():
    for name, (code, entries) in sources().items():
        for entry in entries:
            defined = re.findall(rf"__global__ void(?: __launch_bounds__\(\d+\))?\s+{entry}\(",
                                 code)
            assert len(defined) == 1, (name, entry)


def test_every_kernel_file_is_used_by_a_script_beside_it():
    files = sorted(p for ext in ("*.cu", "*.cuh", "*.cl") for p in H200.glob(f"*/{ext}"))
    assert len(files) == 15
    scripts: dict = {}
    for p in H200.glob("*/*.py"):
        scripts[p.parent] = scripts.get(p.parent, "") + p.read_text()
    for f in files:
        assert f'"{f.name}"' in scripts[f.parent], f


def test_a_missing_kernel_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        kernel_source(str(tmp_path / "driver.py"), "absent.cu")
