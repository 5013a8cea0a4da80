"""The register-limited occupancy of the device model against Nsight Compute's own
(``launch__occupancy_limit_registers``) for every kernel profiled on the H200."""
from __future__ import annotations

import glob

import pytest

from tiletraffic.simulator.model.device_model import NVIDIA_H200

from experiments.h200.data import REPORT, read_json

from experiments.h200.tests.conftest import committed


def _records(x, found):
    if isinstance(x, dict):
        if "launch__occupancy_limit_registers" in x and "launch__registers_per_thread" in x:
            found.append({k: (v["value"] if isinstance(v, dict) else v) for k, v in x.items()
                          if k.startswith("launch__")})
        for v in x.values():
            _records(v, found)
    elif isinstance(x, list):
        for v in x:
            _records(v, found)


@pytest.fixture(scope="module")
def launches() -> list[dict]:
    committed()
    found: list[dict] = []
    for path in sorted(glob.glob(str(REPORT / "**" / "*.json.gz"), recursive=True)):
        _records(read_json(path), found)
    assert found, "no Nsight launch__ records under reports/nvidia-h200"
    return found


def test_register_limit_equals_nsight_for_every_profiled_launch(launches):
    pairs = {(r["launch__block_size"], r["launch__registers_per_thread"],
              r["launch__occupancy_limit_registers"]) for r in launches}
    # the committed data has kernels of 16, 22, 29-32 and 40 registers, 64-1024 work-items
    assert len(pairs) >= 10
    for items, registers, nsight in pairs:
        assert NVIDIA_H200.register_limited_work_groups_per_cu(items, registers) == nsight, \
            (items, registers)
