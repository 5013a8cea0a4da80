"""A value read from a user's file as a one-line message shows it: in the file format's
words (TOML's or JSON's), never a Python repr (``None``, ``'N'``, ``[...]``)."""
from __future__ import annotations

LONGEST = 40
"""A string longer than this is cut (with ``...``) in a message."""


def shown(value, form: str = "TOML") -> str:
    """``value`` (from a file of ``form``, ``"TOML"`` or ``"JSON"``) in that format's words:
    ``the string "N"``, ``true``, ``2.5``, ``a list``, ``a table`` (JSON: ``an object``),
    ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= LONGEST else value[:LONGEST - 3] + "..."
        return f'the string "{text}"'
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "an empty list" if not value else "a list"
    if isinstance(value, dict):
        return "an object" if form == "JSON" else "a table"
    return type(value).__name__
