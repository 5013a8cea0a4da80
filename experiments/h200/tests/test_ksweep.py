"""The K sweep's table (experiments/h200/ladder/ksweep_table.py): the slope on hand values, a
failed check refused, and the committed data's per-step costs as the findings state them."""
from __future__ import annotations

import pytest

from experiments.h200.data import read_json
from experiments.h200.ladder.ksweep_table import slope_s_per_1024_k, table

from experiments.h200.tests.conftest import committed


def test_slope_per_1024_k_of_a_line_and_of_noisy_points():
    # t = 5 us + 2 us per 256 K: 8 us per 1024 K
    ks = [256, 512, 1024, 2048]
    assert slope_s_per_1024_k(ks, [5e-6 + 2e-6 * k / 256 for k in ks]) == pytest.approx(8e-6)
    # least squares through (0, 0), (1024, 1), (2048, 3): slope 1.5 per 1024
    assert slope_s_per_1024_k([0, 1024, 2048], [0.0, 1.0, 3.0]) == pytest.approx(1.5)


def test_a_failed_result_check_is_refused():
    row = {"family": "gemm-prefetch", "options": {"bk": 16, "tm": 4, "tn": 4}, "m": 64,
           "n": 64, "k": 64, "tile": 16, "median_s": 1e-4, "iqr_s": 0.0, "check_ok": False}
    with pytest.raises(ValueError, match="result check failed"):
        table({"rows": [row]}, None)


def _prefetch_over_register_blocked(*folder: str) -> dict[int, float]:
    """M = N -> gemm-prefetch's cost per 1024 more K over gemm-register-blocked's, in the
    committed sweep ``reports/nvidia-h200/<folder>/ksweep.json.gz`` (every result checked)."""
    data = read_json(committed(*folder, "ksweep.json.gz"))
    assert all(r["check_ok"] for r in data["rows"])
    slope = {}
    for fam in ("gemm-register-blocked", "gemm-prefetch"):
        for mn in (1024, 2048):
            pts = sorted((r["k"], r["median_s"]) for r in data["rows"]
                         if r["family"] == fam and r["m"] == mn)
            slope[fam, mn] = slope_s_per_1024_k(*zip(*pts, strict=True))
    return {mn: slope["gemm-prefetch", mn] / slope["gemm-register-blocked", mn]
            for mn in (1024, 2048)}


def test_committed_sweep_prefetch_step_costs_more_at_1024():
    ratio = _prefetch_over_register_blocked("ladder", "ksweep")
    assert 1.08 < ratio[1024] < 1.12
    assert 1.0 < ratio[2048] < 1.04


def test_committed_jit_loops_same_memory_and_fmas_more_instructions_in_prefetch():
    jit = read_json(committed("ladder", "ksweep", "second", "jit.json.gz"))
    assert not jit["missing"]
    (rb,), (pf,) = jit["loops"]["gemm_register_blocked"], jit["loops"]["gemm_prefetch"]
    for key in ("ldg", "lds", "sts", "ffma"):
        assert rb[key] == pf[key], key
    assert (rb["ffma"], rb["lds"]) == (256, 128)  # 16 k x 4 x 4 FMAs, 16 k x (4 + 4) loads
    assert pf["instructions"] / rb["instructions"] == pytest.approx(495 / 461)


def test_committed_sweep_of_the_prefetching_kernel_each_step_costs_less():
    """With step t+1's loads in flight during step t's multiply-adds (ddcf0c6), the slope of
    the fit over K = 256..4096 is 3.6% below gemm-register-blocked's at M = N = 1024 (round
    7's kernel: +7.9% and +9.8% in two calls; the test below: this rests on K = 4096) and
    1.9% below at 2048."""
    ratio = _prefetch_over_register_blocked("ladder", "ksweep", "prefetching")
    assert ratio[1024] == pytest.approx(0.964, abs=5e-3)
    assert ratio[2048] == pytest.approx(0.981, abs=5e-3)


def test_committed_sweep_of_the_prefetching_kernel_at_1024_rests_on_k_4096():
    """The findings' caveat to the slope above: at M = N = 1024 the prefetching kernel's
    whole launches are 1.3-2.4% slower than gemm-register-blocked's at K = 512, 1024 and
    2048 (faster at 256 and 4096); the time each doubling of K adds is 1.13, 1.03, 1.03 and
    0.91 times gemm-register-blocked's, and the slope over K = 256-2048 is 3.7% dearer. At
    2048 it is 1.3-2.3% faster at every K."""
    data = read_json(committed("ladder", "ksweep", "prefetching", "ksweep.json.gz"))
    t = {(r["family"], r["m"], r["k"]): r["median_s"] for r in data["rows"]}
    ks = (256, 512, 1024, 2048, 4096)

    def ratios(mn):
        pf = [t["gemm-prefetch", mn, k] for k in ks]
        rb = [t["gemm-register-blocked", mn, k] for k in ks]
        return pf, rb, [p / r for p, r in zip(pf, rb, strict=True)]

    pf, rb, whole = ratios(1024)
    assert [round(x, 3) for x in whole] == [0.943, 1.013, 1.018, 1.024, 0.964]
    added = [(pf[i + 1] - pf[i]) / (rb[i + 1] - rb[i]) for i in range(4)]
    assert [round(x, 2) for x in added] == [1.13, 1.03, 1.03, 0.91]
    assert slope_s_per_1024_k(ks[:4], pf[:4]) / slope_s_per_1024_k(ks[:4], rb[:4]) == \
        pytest.approx(1.037, abs=5e-4)
    _, _, whole = ratios(2048)
    assert 0.977 <= min(whole) and max(whole) <= 0.987
