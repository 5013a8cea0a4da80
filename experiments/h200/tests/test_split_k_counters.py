"""experiments/h200/split_k/counters.py and counters_table.py without a GPU: the cases, the
child's launches and check of C (the simulator standing in for CUDA), the join of ncu's
results to the launches, and the table on a hand-made ncu page (in memory, never committed)."""
from __future__ import annotations

import csv
import io

from experiments.h200.ncu import parse_ncu_raw_csv

from experiments.h200.split_k import counters as K
from experiments.h200.split_k import counters_table as T

SMALL = (40, 256, 132, 16, {"wg_rows": 8, "tm": 8, "tn": 4, "bk": 32, "wn": 32, "splits": 2})
"""A case of seconds: partial blocks of C (40 of 64 rows, 132 of 192 columns), 33 float4
columns for the reduction's 64 work-items."""


def test_three_cases_of_two_kernels_one_of_no_size_a_multiple_of_its_tile():
    cases = K.cases()
    assert len(cases) == 3 and len({c["id"] for c in cases}) == 3
    for c in cases:
        assert [k["kernel_name"] for k in c["kernels"]] == ["gemm_split_k_slices",
                                                            "gemm_split_k_reduce"]
        assert c["kernels"][0]["grid"][2] == c["options"]["splits"]   # a z block per slice
        assert c["k"] % 4 == 0 and c["n"] % 4 == 0
    m, k, n, _, o = K.CASES[2]
    bm, bn = o["tm"] * o["wg_rows"], o["tn"] * 16
    assert m % bm and n % bn and k % o["bk"] and (n // 4) % 64


def test_cuda_sources_are_ascii_and_define_their_kernels():
    c = K.case_dict(*SMALL)
    for kernel, src in zip(c["kernels"], K.cuda_sources(c)):
        assert src.isascii() and f"void {kernel['kernel_name']}(" in src


class _SkipFirstKernel(K.SimulatorLauncher):
    """Launches only the reduction: C_partial stays as filled (never written)."""

    def launch(self, sch, source, buffers):
        if sch.kernel_name != "gemm_split_k_slices":
            super().launch(sch, source, buffers)


def test_the_child_launches_both_kernels_in_order_and_checks_c(tmp_path):
    cases = [K.case_dict(*SMALL), K.case_dict(*SMALL[:3], 8, {**SMALL[4], "tn": 8})]
    entries = K.run_cases(cases, K.SimulatorLauncher(), tmp_path / "child.json")
    assert [[launch["launch_index"] for launch in e["launches"]] for e in entries] == \
        [[0, 1], [2, 3]]
    assert all(e["check"]["ok"] and e["c_partial_unwritten"] == 0 for e in entries)
    assert (tmp_path / "child.json").exists()
    # a run that never launches kernel 1 is caught: every C_partial element unwritten
    bad = K.run_cases(cases[:1], _SkipFirstKernel())[0]
    assert not bad["check"]["ok"] and bad["c_partial_unwritten"] == 2 * 40 * 132


def _page(case: dict, figures: list[dict], names: list[str]) -> str:
    """ncu's raw CSV (header, units, one row per profiled result) with the model's figures."""
    metrics = [metric for _, _, metric, _ in T.QUANTITIES]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(["ID", "Kernel Name", *metrics])
    w.writerow(["", "", *[""] * len(metrics)])
    for i, (fig, name) in enumerate(zip(figures, names)):
        w.writerow([i, f"{name}(const float *, float *, int, int, int)",
                    *[fig[attr] for _, attr, _, _ in T.QUANTITIES]])
    return out.getvalue()


def test_the_table_of_a_hand_made_ncu_page():
    case = K.case_dict(*SMALL)
    entries = K.run_cases([case], K.SimulatorLauncher())
    figures = T.model_figures(case)
    assert figures[1]["local_load_requests"] == 0 and figures[0]["local_load_requests"] > 0
    names = [k["kernel_name"] for k in case["kernels"]]
    data = {"meta": {"cases": [case], "created_utc": "x", "git_commit": "y"}}

    data["ncu"] = {"records": K.join([case], entries, parse_ncu_raw_csv(
        _page(case, figures, names)))}
    rows = T.rows(T.measured(data), {case["id"]: figures})
    assert [T.verdict(r) for r in rows] == ["exact", "exact"]
    assert "2 of 2 kernels measured: 2 exact" in T.markdown(rows, data)

    # the L1 unit's excess (wavefronts and conflicts above by one number), and a miss
    excess = [dict(f) for f in figures]
    excess[0]["local_load_wavefronts"] += 5
    excess[0]["local_load_bank_conflicts"] += 5
    excess[1]["global_store_requests"] += 1
    data["ncu"] = {"records": K.join([case], entries, parse_ncu_raw_csv(
        _page(case, excess, names)))}
    rows = T.rows(T.measured(data), {case["id"]: figures})
    # (the instructions' own wavefronts moved by 5 too: within their 1%)
    assert [T.verdict(r) for r in rows] == ["L1 excess", "off: global st requests"]

    # results in another order than the launches: refused by kernel name, not measured
    data["ncu"] = {"records": K.join([case], entries, parse_ncu_raw_csv(
        _page(case, figures, names[::-1])))}
    entries_t = T.measured(data)
    assert all(e["record"] is None and "expected" in e["why_not"] for e in entries_t)
    assert "Not measured:" in T.markdown(T.rows(entries_t), data)
