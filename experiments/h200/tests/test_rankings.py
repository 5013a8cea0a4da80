"""Rankings and the pairs of schedules the prediction and the measurement order differently
(experiments.h200.hardware.rankings and _discordant_pairs), on hand-made cases."""
from __future__ import annotations

from types import SimpleNamespace

from experiments.h200.hardware import _discordant_pairs, rankings


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
