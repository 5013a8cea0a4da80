"""The explain page: the document of :mod:`.collect` rendered into one self-contained HTML
file (Jinja2 template ``templates/page.html.j2``: inline CSS, inline SVG from :mod:`.svg`,
a small inline script for the stepper; no network, no external file). The page embeds the
document as JSON in ``<script type="application/json" id="explain-data">``.
"""
from __future__ import annotations

import json
from pathlib import Path

import jinja2
from markupsafe import Markup

from tiletraffic.simulator.model.prediction import method_text, term_name

from tiletraffic.analysis.files import atomic_write_text
from tiletraffic.analysis.explain import svg

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("tiletraffic.analysis.explain", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 'es' if word.endswith('s') else 's'}"


def _step_notes(doc: dict) -> list[dict]:
    """Per step: its title and one line per array it touches (from the document's counts)."""
    by = doc["steps"]["by"]
    per = doc["steps"]["iterations_per_step"]
    notes = []
    for i, step in enumerate(doc["steps"]["list"]):
        if by == "barrier interval":
            title = (f"barrier interval {step['step']}: after {_plural(step['step'], 'barrier')}"
                     if step["step"] else "barrier interval 0: before the first barrier")
        else:
            first = step["step"] * per
            title = (f"iterations {first}-{first + per - 1} of each load statement (no "
                     "barriers: steps of the tile width, to compare with a tiled kernel)")
        lines = []
        for acc in step["accesses"]:
            verb = "loads" if acc["direction"] == "load" else "stores"
            where = "global memory" if acc["space"] == "global" else "local memory"
            lines.append(f"{verb} {_plural(len(acc['elements']), 'element')} of "
                         f"{acc['array']} ({where}), {_plural(sum(acc['counts']), 'access')} "
                         "by its work-items")
        notes.append({"title": title, "lines": lines})
    return notes


def _step_of_interval(doc: dict, epoch: int) -> int | None:
    for i, step in enumerate(doc["steps"]["list"]):
        if doc["steps"]["by"] == "barrier interval" and step["step"] == epoch:
            return i
    return None


def _hazards(doc: dict) -> list[dict]:
    arrays = {a["name"]: a for a in doc["arrays"]}
    out = []
    for h in doc["hazards"]:
        a = arrays.get(h["array"])
        out.append({
            **h,
            # an out-of-bounds index names its element in the detail (the flat index of an
            # index past one dimension names another element)
            "element": svg.element_name(a, h["index"])
            if a and h["index"] >= 0 and h["kind"] != "out-of-bounds" else None,
            "work_items": [svg.work_item_name(doc["work_group"]["local_size"], w)
                           for w in h["local_ids"]],
            "goto": _step_of_interval(doc, h["epoch"])
            if list(h["group_id"]) == doc["work_group"]["id"][:len(h["group_id"])] else None,
        })
    return out


def _samples(doc: dict, space: str) -> list[dict]:
    """The sample request of every load and store statement of ``space`` with its
    statement's launch-wide counts (global: the loads first, then the stores, each in the
    order first executed; local: the most wavefronts first)."""
    sites = {(s["space"], s["direction"], s["array"], s["site"]): s for s in doc["sites"]}
    out = []
    for sample in doc["samples"]:
        if sample["space"] != space:
            continue
        site = sites[(sample["space"], sample["direction"], sample["array"], sample["site"])]
        out.append({"sample": sample, "site": site})
    if space == "global":
        out.sort(key=lambda s: s["sample"]["direction"] != "load")
    if space == "local":   # the worst request first: that is the one to look at
        key = "local_{}_wavefronts"
        out.sort(key=lambda s: -s["sample"]["figures"][key.format(s["sample"]["direction"])])
    return out


def render_page(doc: dict, *, memory_params: dict | None = None) -> str:
    """The HTML text of the page of ``doc`` (:func:`.collect.explain_data`'s document).

    ``memory_params``: ``sector_bytes``, ``line_bytes``, ``local_banks``, ``bank_bytes`` of
    the pictures (default: the document's ``memory_params``). Optional parts a document
    may lack (``closed_form``, ``closed_form_derived``, a sample's ``element_bytes``) are
    left out of the page (element bytes: 4).

    Raises:
        KeyError, TypeError, jinja2.UndefinedError: a part the page draws is missing or of
            another type (:func:`.report_pages.read_document` names the file).
    """
    mp = memory_params or doc["memory_params"]
    globals_ = _samples(doc, "global")
    locals_ = _samples(doc, "local")
    for s in globals_:
        s["svg"] = Markup(svg.coalescing_picture(s["sample"], mp["sector_bytes"],
                                                 mp["line_bytes"]))
    for s in locals_:
        s["svg"] = Markup(svg.bank_picture(s["sample"], mp["local_banks"], mp["bank_bytes"]))
    reuse = [{"name": name, **r, "svg": Markup(svg.reuse_picture(doc, name))}
             for name, r in doc["reuse"].items()]
    time = doc["time"]
    data = json.dumps(doc, separators=(",", ":")).replace("</", "<\\/")
    return _ENV.get_template("page.html.j2").render(
        doc=doc, tiles=Markup(svg.tiles_picture(doc)),
        work_items=Markup(svg.work_items_picture(doc)), notes=_step_notes(doc),
        reuse=reuse, coalescing=globals_, banks=locals_, hazards=_hazards(doc),
        time=time, time_svg=Markup(svg.time_picture(time)) if "terms_s" in time else None,
        closed_form=doc.get("closed_form"), derived=doc.get("closed_form_derived"),
        term_name=term_name, method_text=method_text,
        seconds=svg.seconds, data=Markup(data), mp=mp)


def write_page(doc: dict, path) -> Path:
    """Write the page of ``doc`` to ``path`` atomically; returns the path."""
    path = Path(path)
    atomic_write_text(path, render_page(doc))
    return path
