"""Strided global requests (simulator/strides.py): counts by hand and the declaration."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tiletraffic
from tiletraffic.simulator.counters import AccessEvent
from tiletraffic.simulator.device_model import GuessedValueWarning
from tiletraffic.simulator.strides import (StridedRequests, StridedRequestWarning,
                                           StrideObserver, strided_declaration)


def event(index, mask=True, space="global", vector_width=1):
    """One work-group's access; ``index`` per work-item, or (work-items, elements) for a
    vector access."""
    index = np.asarray(index, dtype=np.int64)
    index = index.reshape(1, index.shape[0], -1)
    return AccessEvent(space, "load", "A", 1 << 30, index,
                       np.broadcast_to(np.asarray(mask), index.shape), index.shape,
                       np.arange(1), vector_width=vector_width)


def observe(*events, weights=None):
    obs = StrideObserver(32, 128)
    obs.on_batch(np.arange(1), 32, weights)
    for ev in events:
        obs.on_access(ev)
    return obs.counts


def test_row_per_work_item_requests_by_hand():
    # 32 work-items, each at the start of its own row of K floats
    # K = 4096: 32 lines, all at offset 0 -> 32 aligned lines
    assert observe(event(np.arange(32) * 4096)) == StridedRequests(32, 0)
    # K = 4097: row r starts at byte 16388 r, offset 4 r mod 128: 32 lines, offsets differ
    assert observe(event(np.arange(32) * 4097)) == StridedRequests(0, 32)
    # K = 32 floats = 128 B: 32 adjacent lines at one offset -> aligned too
    assert observe(event(np.arange(32) * 32)) == StridedRequests(32, 0)
    # only 7 distinct rows (work-items 7 apart share a row): 7 lines < 8 -> not strided
    assert observe(event((np.arange(32) % 7) * 4096)) == StridedRequests(0, 0)


def test_contiguous_broadcast_and_local_requests_are_not_strided():
    assert observe(event(np.arange(32))) == StridedRequests()            # one line
    assert observe(event(np.arange(32) + 5)) == StridedRequests()        # two lines
    assert observe(event(np.zeros(32))) == StridedRequests()             # broadcast
    assert observe(event(np.arange(32) * 4096, space="local")) == StridedRequests()
    # float4: 32 work-items x 4 floats = 512 B, 4 lines
    assert observe(event(np.arange(128).reshape(32, 4), vector_width=4)) == StridedRequests()
    # float4 rows 4096 floats apart: 32 lines at offset 0
    rows = np.arange(32)[:, None] * 4096 + np.arange(4)
    assert observe(event(rows, vector_width=4)) == StridedRequests(32, 0)
    # GEMM with B = 8: a sub-group reads 4 rows of A (8 work-items each): 4 lines
    assert observe(event(np.repeat(np.arange(4), 8) * 4096)) == StridedRequests()


def test_masked_work_items_and_class_weights():
    # 16 of 32 active: 16 lines; the work-group stands for 3 (class weight)
    mask = np.arange(32) < 16
    assert observe(event(np.arange(32) * 4096, mask.reshape(32, 1)),
                   weights=np.array([3])) == \
        StridedRequests(48, 0)


def test_declaration_threshold_and_text():
    assert strided_declaration(StridedRequests(9, 0), 100) is None       # 9% < 10%
    text = strided_declaration(StridedRequests(10, 0), 100)
    assert text.startswith("outside the model: 10% of the L1 wavefronts")
    assert "a row stride that is a multiple of 128 B" in text
    text = strided_declaration(StridedRequests(3, 30), 100)
    assert "not a multiple of 128 B" in text
    assert strided_declaration(StridedRequests(5, 0), 0) is None


def test_model_declares_matvec_naive_and_not_gemm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        with pytest.warns(StridedRequestWarning, match="matvec_naive: outside the model"):
            m = tiletraffic.model(tiletraffic.build("matvec-naive", m=256, k=512, tile=64))
        assert "multiple of 128 B" in m.prediction.methods["l1_strided_requests"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", StridedRequestWarning)
            g = tiletraffic.model(tiletraffic.build("gemm-tiled", m=64, k=64, n=64, tile=16))
    assert "l1_strided_requests" not in g.prediction.methods


def test_cli_model_prints_the_declaration_apart_from_the_guesses():
    import json

    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main

    res = CliRunner().invoke(main, ["model", "matvec-naive", "--m", "256", "--k", "512",
                                    "--tile", "64", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert len(out["model_warnings"]) == 1
    assert "outside the model" in out["model_warnings"][0]
    assert all("is a guess" in g for g in out["guessed_values"])
    assert "multiple of 128 B" in out["methods"]["l1_strided_requests"]
