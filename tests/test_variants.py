"""Tests of simulator.kernels.variants: every broken variant is a small rewrite of the correct
description, visible as such in the generated OpenCL; build_any and its errors.
"""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.kernels.families import (FAMILIES, SEQUENCE_FAMILIES, ScheduleError,
                                                    build)
from tiletraffic.simulator.kernels.variants import (CHECK_EXAMPLES, CORRECT_DEMOS, VARIANTS,
                                                    build_any, drop_barrier, names, rewrite,
                                                    strip_guards)
from strategies import sizes


def source(schedule: S.Schedule) -> str:
    return generate(schedule).source


def count_stmts(stmts, kind) -> int:
    n = 0
    for s in stmts:
        n += isinstance(s, kind)
        if isinstance(s, S.If):
            n += count_stmts(s.then, kind) + count_stmts(s.orelse, kind)
        elif isinstance(s, S.For):
            n += count_stmts(s.body, kind)
    return n


gemm_shapes = st.tuples(sizes(40), st.integers(2, 16))


# ------------------------------------------------------------------ generated OpenCL
@pytest.mark.parametrize("name", ["gemm-tiled:no-second-barrier",
                                  "gemm-tiled:no-first-barrier"])
@given(shape=gemm_shapes)
def test_barrier_variants_have_exactly_one_barrier_fewer(name, shape):
    (m, k, n), tile = shape
    correct = source(build("gemm-tiled", m, k, n, tile))
    broken = source(VARIANTS[name].make(m, k, n, tile))
    assert correct.count("barrier(") == 2
    assert broken.count("barrier(") == correct.count("barrier(") - 1
    # nothing else changed: removing the barrier lines leaves the same kernel
    drop = lambda text: [ln for ln in text.splitlines()[1:] if "barrier(" not in ln]
    assert drop(broken) == drop(correct)


def test_second_barrier_is_the_one_after_the_partial_products():
    text = source(VARIANTS["gemm-tiled:no-second-barrier"].make(20, 40, 20, 16))
    body = text[text.index("for (int t"):]
    assert body.index("barrier(") < body.index("acc +="), "the remaining barrier is the first"
    text = source(VARIANTS["gemm-tiled:no-first-barrier"].make(20, 40, 20, 16))
    body = text[text.index("for (int t"):]
    assert body.index("acc +=") < body.index("barrier("), "the remaining barrier is the second"


@given(shape=gemm_shapes)
def test_early_return_returns_before_the_barriers(shape):
    (m, k, n), tile = shape
    correct = source(build("gemm-tiled", m, k, n, tile))
    broken = source(VARIANTS["gemm-tiled:early-return"].make(m, k, n, tile))
    assert "return;" not in correct
    assert broken.count("return;") == 1
    assert broken.index("return;") < broken.index("barrier(")
    assert re.search(r"if \(row >= M \|\| col >= N\) \{\s*return;", broken), broken


@given(shape=gemm_shapes)
def test_no_guards_has_no_if_and_no_zero_fill(shape):
    (m, k, n), tile = shape
    correct = source(build("gemm-tiled", m, k, n, tile))
    broken = source(VARIANTS["gemm-tiled:no-guards"].make(m, k, n, tile))
    assert correct.count("if (") == 3
    assert "if (" not in broken and "else" not in broken
    assert correct.count("= 0.0f;") == 3, "acc and the two zero fills"
    assert broken.count("= 0.0f;") == 1, "only acc"
    assert broken.count("barrier(") == 2
    assert "C[row * N + col] = acc;" in broken


@given(mkn=sizes(40), tile=st.integers(1, 16))
def test_floor_grid_launches_floor_n_over_b_times_b(mkn, tile):
    m, k, n = mkn
    if n < tile or m < tile:  # the floored NDRange would be empty: refused, naming both
        with pytest.raises(ScheduleError, match="below the tile"):
            VARIANTS["gemm-tiled:floor-grid"].make(m, k, n, tile)
        return
    sch = VARIANTS["gemm-tiled:floor-grid"].make(m, k, n, tile)
    assert sch.global_size == (n // tile * tile, m // tile * tile)
    assert sch.local_size == (tile, tile)
    kernel = generate(sch)
    assert tuple(kernel.global_size) == sch.global_size
    # the kernel text is the correct one: only the launch changed
    assert kernel.source.splitlines()[1:] == source(build("gemm-tiled", m, k, n,
                                                          tile)).splitlines()[1:]


def test_fixed_256_declares_256_words_whatever_k():
    sch = VARIANTS["matvec-local-whole:fixed-256"].make(300, 300)
    assert sch.local_arrays[0].size == 256
    assert "#define X_WORDS 256" in source(sch)
    assert build("matvec-local-whole", 300, 300).local_arrays[0].size == 300


def test_unguarded_copy_stores_at_the_local_id_with_no_barrier():
    text = source(VARIANTS["matvec-local-whole:unguarded-copy"].make(128, 8, None, 128))
    assert "barrier(" not in text
    assert "x_local[lid] = x[lid];" in text
    assert "barrier(" in source(build("matvec-local-whole", 128, 8, tile=128))


def test_unguarded_copy_applies_to_matvec_local_whole_only():
    from tiletraffic.simulator.kernels.variants import unguarded_copy
    with pytest.raises(ScheduleError, match="matvec-local-whole"):
        unguarded_copy(build("gemm-tiled", 4, 4, 4, 2))


# -------------------------------------------------------------- the rewrite helpers
@given(shape=gemm_shapes, family=st.sampled_from(FAMILIES))
def test_identity_rewrite_renders_the_same_kernel(shape, family):
    (m, k, n), tile = shape
    if family in ("gemm-vectorized", "gemm-warp-tiled"):  # float4: K, N multiples of 4
        k, n = 4 * k, 4 * n
    if family == "gemm-warp-tiled":  # whole sub-groups: tile x tile a multiple of 32
        tile = 8
    sch = build(family, m, k, n, tile)
    same = S.Schedule(**{**sch.__dict__, "body": rewrite(sch.body, lambda s: None)})
    assert source(same) == source(sch)


@pytest.mark.parametrize("which", [1, 2])
def test_drop_barrier_removes_one_barrier_statement(which):
    sch = build("gemm-tiled", 9, 9, 9, 4)
    assert count_stmts(drop_barrier(sch, which).body, S.Barrier) == 1
    assert count_stmts(drop_barrier(sch, 3).body, S.Barrier) == 2, "no third barrier"


def test_strip_guards_removes_every_if():
    sch = build("gemm-tiled", 9, 9, 9, 4)
    assert count_stmts(sch.body, S.If) == 3
    assert count_stmts(strip_guards(sch).body, S.If) == 0
    assert count_stmts(strip_guards(sch).body, S.Store) == 3, "the then-branches stay"


# ---------------------------------------------------------------------- build_any
def test_build_any_unknown_name_lists_every_name():
    with pytest.raises(ScheduleError) as info:
        build_any("gemm-tiled:no-such-fault")
    message = str(info.value)
    assert "gemm-tiled:no-such-fault" in message
    for name in names():
        assert name in message


def test_names_are_families_demos_and_variants():
    assert names() == [*FAMILIES, *SEQUENCE_FAMILIES, *CORRECT_DEMOS, *VARIANTS]
    assert set(CHECK_EXAMPLES) == set(FAMILIES) | set(SEQUENCE_FAMILIES) | set(CORRECT_DEMOS)


@pytest.mark.parametrize("name", names())
def test_build_any_defaults_to_the_example_shape(name):
    sch = build_any(name)
    example = VARIANTS[name].example if name in VARIANTS else CHECK_EXAMPLES[name]
    m, k = example[0], example[1]
    p = sch.param_values
    assert p.get("K", k) == k
    assert p["M"] == m or name.startswith("demo-shift")
    assert sch.tile == example[3]


def test_build_any_with_m_needs_k():
    with pytest.raises(ScheduleError, match="--k"):
        build_any("gemm-tiled", 20)


def test_build_any_passes_sizes_and_refuses_bad_ones():
    sch = build_any("gemm-tiled:early-return", 30, 7, 11, 4)
    assert sch.param_values == {"M": 30, "K": 7, "N": 11} and sch.tile == 4
    with pytest.raises(ScheduleError, match="positive"):
        build_any("gemm-tiled", 0, 3, 3)
    with pytest.raises(ScheduleError, match="chunk"):
        build_any("gemm-tiled:floor-grid", 20, 20, 20, 16, chunk=4)
    with pytest.raises(ScheduleError, match="33"):
        build_any("demo-shift:no-barrier", 8, 1, None, 8)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_built_by_name_is_named_after_the_variant(name):
    """Hazards, `check` output and the generated kernel's header carry the family name."""
    sch = build_any(name)
    assert sch.family == name
    assert source(sch).startswith(f"// {name}:")
    base = name.split(":")[0]
    if base in FAMILIES:
        assert sch.kernel_name == build(base, 8, 8, 8 if base.startswith("gemm") else None,
                                        4).kernel_name, "same kernel, a changed body"


# ------------------------------------------------------------- found bugs (xfail)
@pytest.mark.parametrize("name, shape", [("demo-shift", (64, 1, None)),
                                         ("demo-column-staging", (8, 8, 8)),
                                         ("demo-shift:no-barrier", (64, 1, None)),
                                         ("demo-column-staging:no-end-barrier", (8, 8, 8))])
def test_build_any_demo_with_sizes_and_no_tile_uses_the_example_tile(name, shape):
    example = VARIANTS[name].example if name in VARIANTS else CHECK_EXAMPLES[name]
    assert build_any(name, *shape).tile == example[3]


def test_build_any_with_k_and_no_m_does_not_ignore_k():
    try:
        sch = build_any("gemm-tiled", k=3)
    except ScheduleError:
        return
    assert sch.param_values["K"] == 3
