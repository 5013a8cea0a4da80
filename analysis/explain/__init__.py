"""``tiletraffic explain``: one launch drawn as a self-contained web page.

:mod:`.collect` observes the launch (the simulator's observers, the same access stream as
``simulate`` and ``model``) into a JSON-ready document; :mod:`.render` draws it as inline
SVG in one HTML page (Jinja2 template ``templates/page.html.j2``, a small script for the
stepper, no network, no external file) that embeds the document it was drawn from.
"""
from __future__ import annotations

from tiletraffic.analysis.explain.collect import (MAX_SIDE_ELEMS, ExplainSizeError, check_size,
                                                  explain_data)
from tiletraffic.analysis.explain.render import render_page, write_page

__all__ = ["explain_data", "render_page", "write_page", "check_size", "ExplainSizeError",
           "MAX_SIDE_ELEMS"]
