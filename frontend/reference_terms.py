"""The ``reference.terms`` and ``reference.inputs`` entries of a launch file, in whatever
language its kernel is."""
from __future__ import annotations


def reference_terms(launch, data: dict) -> dict:
    """``{"terms_per_output": n}`` from the launch file's ``reference.terms`` (the terms each
    output sums, for the tolerance) and ``{"reference_inputs": kind}`` from its
    ``reference.inputs`` (the kind of inputs ``run`` draws unless it is given one:
    :data:`~tiletraffic.simulator.engine.data_inputs.INPUT_KINDS`), each left out where the
    file has none; ``launch`` is the :class:`~tiletraffic.frontend.launch_file.LaunchFile`
    whose parsed TOML is ``data``.

    Raises:
        LaunchFileError: ``n`` is not 1 to 2^24 - 1, or the kind is not one of the kinds.
    """
    from tiletraffic.simulator.engine.data_inputs import INPUT_KINDS
    out = {}
    kind = data.get("reference", {}).get("inputs")
    if kind is not None:
        if kind not in INPUT_KINDS:
            raise launch.error("reference.inputs", f"{kind!r} is not one of "
                                                   f"{', '.join(INPUT_KINDS)}")
        out["reference_inputs"] = kind
    terms = data.get("reference", {}).get("terms")
    if terms is None:
        return out
    n = launch.value("reference.terms", terms)
    if not 1 <= n < 2**24:
        raise launch.error("reference.terms", f"{n} terms per output: the tolerance needs 1 "
                           "to 2^24 - 1")
    return {**out, "terms_per_output": n}
