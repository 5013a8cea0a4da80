"""Round trip: the OpenCL C that ``gpu.codegen.generate`` renders from every built-in family, demo and
faulty variant, parsed back by the front end, gives the same simulated counts, the same
hazards and the same model predictions on nvidia-h200 as the schedule it was rendered from.

Shapes are drawn (small, with edge tiles); the parsed schedule is a different object built
from C text only (family ``opencl:<kernel>``), so equal results show the front end reads
every construct the code generator writes as the IR means it.
"""
from __future__ import annotations

import dataclasses
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.frontend.opencl.translate import BufferArg, parse_kernel
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.kernels import variants
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES
from tiletraffic.simulator.kernels.families import build as schedules_build

from strategies import schedules, variant_fault_shapes

NAMES = variants.names()


@st.composite
def named_schedule(draw, name: str):
    """The schedule ``name`` at a drawn small shape."""
    if name in FAMILIES:
        return draw(schedules(families=(name,), max_size=24, max_gemm_tile=8,
                              max_matvec_tile=32, max_chunk=16))
    if name in SEQUENCE_FAMILIES:   # one kernel of the sequence at a time
        m, n, steps = draw(st.integers(1, 24)), 4 * draw(st.integers(1, 6)), draw(
            st.integers(4, 12))
        sequence = schedules_build(name, m, 8 * steps, n, 8, wg_rows=8, tm=4, tn=4, bk=8,
                                   splits=draw(st.integers(2, 4)))
        return draw(st.sampled_from(sequence.kernels))
    if name in variants.VARIANTS:
        shape = draw(variant_fault_shapes(name, max_size=24))
        return variants.build_any(name, *shape)
    if name == "demo-shift":
        items = draw(st.integers(33, 64))
        return variants.build_any(name, items)
    if name in variants.ELEMENT_DEMOS:
        return variants.build_any(name, draw(st.integers(1, 80)), tile=draw(st.integers(2, 16)))
    return variants.CORRECT_DEMOS[name](draw(st.integers(1, 12)), draw(st.integers(1, 6)),
                                        draw(st.integers(1, 5)), draw(st.integers(1, 6)))


def parsed(schedule):
    """``schedule`` rendered to OpenCL C and parsed back, with the same launch."""
    args = dict(schedule.params)
    for a in schedule.arrays:
        args[a.name] = BufferArg(a.shape, a.role)
    return parse_kernel(generate(schedule).source, schedule.kernel_name,
                        schedule.global_size, schedule.local_size, args, path="generated.cl")


def hazard_key(h):
    """A hazard without the texts that name the schedule or spell an index."""
    return dataclasses.replace(h, schedule="", detail="", site="")


def modelled(schedule):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return tt.model(schedule, "nvidia-h200").to_dict()
        except HazardError as err:
            return ("HazardError", str(err).split(":", 1)[0].split(" in ")[0])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_round_trip_same_counts_hazards_and_model(name, data):
    original = data.draw(named_schedule(name))
    again = parsed(original)
    assert again.family == f"opencl:{original.kernel_name}"
    assert again.extra["opencl"]["source"] == generate(original).source

    counts = [tt.simulate(s, compute_values=False, hazards="report").counts
              for s in (original, again)]
    assert counts[0] == counts[1]
    assert counts[0].global_load_elems + counts[0].global_store_elems > 0

    hazards = [sorted(map(hazard_key, tt.check(s, seed=7)), key=repr)
               for s in (original, again)]
    assert hazards[0] == hazards[1]
    if name in variants.VARIANTS and not variants.VARIANTS[name].run_only:
        assert {h.kind for h in hazards[1]} >= set(variants.VARIANTS[name].expected)

    predictions = [modelled(s) for s in (original, again)]
    assert predictions[0] == predictions[1]
