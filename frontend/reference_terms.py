"""The ``reference.terms`` entry of a launch file, in whatever language its kernel is."""
from __future__ import annotations


def reference_terms(launch, data: dict) -> dict:
    """``{"terms_per_output": n}`` from the launch file's ``reference.terms`` (the terms each
    output sums, for the tolerance), or ``{}`` without it; ``launch`` is the
    :class:`~tiletraffic.frontend.launch_file.LaunchFile` whose parsed TOML is ``data``.

    Raises:
        LaunchFileError: ``n`` is not 1 to 2^24 - 1.
    """
    terms = data.get("reference", {}).get("terms")
    if terms is None:
        return {}
    n = launch.value("reference.terms", terms)
    if not 1 <= n < 2**24:
        raise launch.error("reference.terms", f"{n} terms per output: the tolerance needs 1 "
                           "to 2^24 - 1")
    return {"terms_per_output": n}
