"""experiments/h200/ladder/registers.py: the compile-only call of round 8 (every ladder
kernel built, nothing launched) on PoCL, and its committed H200 output."""
from __future__ import annotations

import json

import pytest

from experiments.h200.ladder import cases as C
from experiments.h200.ladder import registers

from experiments.h200.tests.conftest import committed


def test_every_ladder_kernel_builds_without_a_launch_on_pocl(tmp_path):
    from tiletraffic.gpu.devices.device import list_devices

    if not any(d.is_pocl for d in list_devices()):
        pytest.skip("no PoCL platform")
    assert registers.main(["--out", str(tmp_path), "--device", "pocl"]) == 0
    doc = json.loads((tmp_path / "registers.json").read_text())
    assert [r["label"] for r in doc["cases"]] == [c[0] for c in C.CASES]
    assert doc["created_utc"].endswith("Z") and "git_commit" in doc["tiletraffic"]
    # PoCL reports no registers: None, never a guess
    assert all(r["status"] == "ok" and r["run"]["registers_per_work_item"] is None
               for r in doc["cases"])


def test_committed_h200_registers_cover_every_case():
    doc = json.loads(committed("preregistered8", "registers", "registers.json").read_text())
    regs = {r["label"]: r["run"]["registers_per_work_item"] for r in doc["cases"]}
    assert list(regs) == [c[0] for c in C.CASES] and all(v > 0 for v in regs.values())
    assert (regs["register-blocked"], regs["prefetch"], regs["prefetch 8x8 bk8"]) == \
        (64, 79, 128)
