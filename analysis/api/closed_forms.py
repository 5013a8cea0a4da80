"""The closed forms of a schedule's counts: the hand-written ones of a built-in family or of a
user's schedule file, and those derived from the IR for any schedule whose loop bounds,
guards and ids are affine in its sizes (:mod:`simulator.model.derived_counts`).

:class:`ClosedForm` is what ``tt.closed_form`` returns: a dictionary of the counts at the
schedule's own sizes (the keys of ``TrafficCounts.to_dict()``) with the derived forms beside
it: :attr:`ClosedForm.forms` (text, e.g. ``512 * floor((N)/16)^3 : N >= 16``),
:attr:`ClosedForm.sizes`, :attr:`ClosedForm.not_derived` and
:meth:`ClosedForm.evaluate` at other sizes.
"""
from __future__ import annotations

from typing import Mapping


class ClosedForm(dict):
    """The closed-form counts of one schedule at its sizes (a ``dict`` with the keys of
    ``TrafficCounts.to_dict()`` that are given), with the derived forms.

    Attributes:
        source: where the numbers of the dictionary come from: ``"built-in family"``,
            the user's file (``"FILE.py: closed_form"``), or ``"derived"`` (from the IR).
    """

    def __init__(self, counts: dict, source: str, schedule, derived=None):
        super().__init__(counts)
        self.source = source
        self._schedule = schedule
        self._derived = derived

    @property
    def derived(self):
        """The :class:`simulator.model.derived_counts.DerivedCounts` of the schedule (derived
        on first use for a built-in family, whose numbers are the hand-written ones)."""
        if self._derived is None:
            self._derived = derive(self._schedule)
        return self._derived

    @property
    def sizes(self) -> dict[str, int]:
        """The sizes of the derived forms with the schedule's values (``{"N": 256}``)."""
        return dict(self.derived.sizes)

    @property
    def forms(self) -> dict[str, str]:
        """Counter (``global_load_elems_by_buffer[A]`` per buffer) -> the derived piecewise
        quasi-polynomial of the sizes, as text (isl's notation: ``floor((15 + N)/16)``,
        pieces ``form : condition`` joined by ``;``; 0 outside every piece)."""
        return self.derived.texts()

    @property
    def not_derived(self) -> dict[str, str]:
        """Counter -> why it has no derived form (the simulated count stands alone)."""
        return dict(self.derived.not_derived)

    @property
    def notes(self) -> list[str]:
        """What the derived forms assume (a fixed NDRange, an argument at its value)."""
        return list(self.derived.notes)

    def evaluate(self, sizes: Mapping[str, int] | None = None) -> dict:
        """The derived counts at ``sizes`` (size -> integer; one left out keeps the
        schedule's value): the keys of ``TrafficCounts.to_dict()`` that are derived.

        Raises:
            ValueError: a name that is no size, a value that is not an integer of at least
                1.
        """
        return self.derived.evaluate(sizes)


def binding(schedule):
    """The sizes of ``schedule``'s derived forms: a launch file's [sizes]
    (:func:`frontend.launch_file.size_binding`), a built-in family's ``M``, ``K``, ``N``
    with its NDRange's forms, else every integer argument with the NDRange fixed."""
    from tiletraffic.frontend.launch_file import size_binding
    from tiletraffic.simulator.ir.sequence import is_sequence
    from tiletraffic.simulator.kernels.ndrange import global_size_forms
    from tiletraffic.simulator.model import derived_counts
    from tiletraffic.simulator.ir.nodes import Param

    if not is_sequence(schedule):
        from_file = size_binding(schedule)
        if from_file is not None:
            return from_file
    if is_sequence(schedule) or global_size_forms(schedule) is not None:
        return derived_counts.builtin_binding(schedule)
    sizes = tuple((name, value) for name, value in schedule.params if isinstance(value, int)
                  and not isinstance(value, bool))
    return derived_counts.SizeBinding(sizes, {name: Param(name) for name, _ in sizes})


def derive(schedule):
    """:func:`simulator.model.derived_counts.derive` of ``schedule`` in the sizes of
    :func:`binding`."""
    from tiletraffic.simulator.model.derived_counts import derive as derive_counts

    return derive_counts(schedule, binding(schedule))


def derived_closed_form(schedule) -> ClosedForm | None:
    """The derived forms of ``schedule`` as a :class:`ClosedForm` whose numbers are their
    values at the schedule's sizes; None where no counter is derived, or where isl and
    Barvinok (the ``islpy-barvinok`` package) are not installed."""
    try:
        import islpy  # noqa: F401  (the counting library the derivation needs)
    except ImportError:
        return None
    derived = derive(schedule)
    counts = derived.evaluate()
    if not any(isinstance(v, int) for v in counts.values() if not isinstance(v, dict)):
        return None
    return ClosedForm(counts, "derived", schedule, derived)


SHOWN = ("global_load_elems", "global_store_elems", "local_load_elems", "local_store_elems",
         "barriers", "flop", "work_groups")
"""The counters whose derived forms :meth:`ClosedForm.lines` shows (with each buffer's)."""

LONG_FORM_CHARS = 240
"""A derived form longer than this (characters) is shown by its value at the launch's sizes
and its number of pieces instead of in full (the whole form: ``--json`` or
``tt.closed_form``)."""


def _shown(text: str, value) -> str:
    """``text``, a derived form as :meth:`DerivedCounts.texts` writes it (pieces joined by
    ``"; "``), or for one longer than :data:`LONG_FORM_CHARS` its ``value`` here and its
    number of pieces."""
    if len(text) <= LONG_FORM_CHARS:
        return text
    pieces = text.count("; ") + 1
    return (f"{value} here; a form of {pieces} piece{'s' if pieces > 1 else ''} in the sizes, "
            f"{len(text)} characters long (the whole form: --json or tt.closed_form)")


def form_lines(formula: ClosedForm) -> list[str]:
    """The derived forms of ``formula`` for people: a header naming the sizes, one line
    per counter (and per buffer that is read or written), what is not derived and why,
    and what the forms assume."""
    derived = formula.derived
    sizes = ", ".join(f"{n} (here {v})" for n, v in derived.sizes.items()) or "none"
    lines = [f"closed forms derived from the kernel, in the sizes {sizes}:"]
    forms = derived.texts()
    values = derived.evaluate()
    for key in SHOWN:
        if key in forms:
            lines.append(f"  {key} = {_shown(forms[key], values.get(key))}")
        for buffer in derived.buffers:
            by = f"{key}_by_buffer[{buffer}]"
            if key.startswith("global_") and forms.get(by, "0") != "0":
                here = values.get(f"{key}_by_buffer", {}).get(buffer)
                lines.append(f"  {by} = {_shown(forms[by], here)}")
    lines += [f"  not derived: {key}: {why}" for key, why in derived.not_derived.items()]
    lines += [f"  assumed: {note}" for note in derived.notes]
    return lines


def derived_summary(formula: ClosedForm | None) -> dict | None:
    """The derived forms of a :class:`ClosedForm` whose numbers are derived, as plain data
    (``sizes``, ``forms`` of the counters of :data:`SHOWN`, ``not_derived``); None for one
    with hand-written numbers or none."""
    if formula is None or formula.source != "derived":
        return None
    forms = formula.forms
    return {"sizes": formula.sizes, "forms": {k: forms[k] for k in SHOWN if k in forms},
            "not_derived": formula.not_derived}


def derived_forms(formula: ClosedForm | None) -> dict[str, str] | None:
    """The derived forms as text by counter where ``formula``'s numbers are derived (what
    ``simulate --json`` gives as ``closed_forms``), else None."""
    return formula.forms if formula is not None and formula.source == "derived" else None
