"""Rankings and the pairs of schedules the prediction and the measurement order differently
(analysis.hardware._discordant_pairs, analysis.hardware_report._discordant_text), on
hand-made cases."""
from __future__ import annotations

from types import SimpleNamespace

from tiletraffic.analysis.hardware import _discordant_pairs
from tiletraffic.analysis.hardware_report import _discordant_text


def case(name: str, predicted: float, measured: float | None, counter: float | None = None):
    """A stand-in with what the ranking code reads: an id, a time pair, Nsight's time."""
    return SimpleNamespace(case_id=name, counter_time_s=counter,
                           time_pair=lambda opencl=True: (predicted, measured))


def test_only_pairs_in_the_wrong_order_are_listed():
    # predicted order a < b < c; measured b < a < c: only (a, b) is discordant
    a, b, c = case("a", 1.0, 2.0, 1.5), case("b", 2.0, 1.0, 3.0), case("c", 3.0, 3.0)
    label = {"a": "A", "b": "B", "c": "C"}
    pairs = _discordant_pairs([a, b, c], label, opencl=True)
    assert [p["pair"] for p in pairs] == [["A", "B"]]
    assert pairs[0]["predicted_s"] == [1.0, 2.0] and pairs[0]["measured_s"] == [2.0, 1.0]
    assert pairs[0]["counter_build_s"] == [1.5, 3.0]
    # with Nsight's durations as the measurement, no second build to quote
    assert _discordant_pairs([a, b, c], label, opencl=False)[0]["counter_build_s"] is None
    # a case without a measured time is never part of a pair
    assert _discordant_pairs([a, case("d", 1.5, None)], {"a": "A", "d": "D"}, True) == []


def test_the_text_names_both_times_the_errors_and_the_other_builds_order():
    text = _discordant_text({"pair": ["T16", "N32"], "predicted_s": [0.3376e-3, 0.3516e-3],
                             "measured_s": [0.3519e-3, 0.3385e-3],
                             "counter_build_s": [0.3058e-3, 0.3513e-3]})
    assert text.startswith("T16 against N32: measured 0.3519 and 0.3385 ms (T16 4.0% slower)")
    assert "model -4.1%" in text and "model +3.9%" in text
    assert text.endswith("the CUDA build under Nsight: 0.3058 and 0.3513 ms, the predicted "
                         "order.")
    tie = _discordant_text({"pair": ["N", "W"], "predicted_s": [0.5491e-3, 0.5498e-3],
                            "measured_s": [0.6222e-3, 0.5541e-3], "counter_build_s": None})
    assert "within 0.1% of each other" in tie and "0.5541 ms" in tie
