"""``report.html``: the report's entry page in a browser, linking explain pages of the seeds'
two comparisons (naive against tiled GEMM, and the matrix-vector product without and with x
staged in local memory), written beside ``report.md`` by ``tiletraffic report``.

Two steps, as the report's: :func:`observe_pages` simulates the launches and writes each
page's document (``explain/<family>.json``); :func:`write_report_html` renders the pages
and ``report.html`` from those documents alone (no simulator), so a report re-renders
without its device.
"""
from __future__ import annotations

from pathlib import Path

import json

import jinja2

from tiletraffic.simulator.kernels.families import build
from tiletraffic.simulator.model.prediction import term_name

from tiletraffic.analysis.device_model import DEFAULT_MODEL
from tiletraffic.analysis.files import ResultsFileError, atomic_write_text, read_json_object
from tiletraffic.analysis.explain.collect import explain_data
from tiletraffic.analysis.explain.render import write_page

PAGES = (
    ("gemm-naive", "naive GEMM", dict(m=32, k=32, n=32, tile=16)),
    ("gemm-tiled", "tiled GEMM", dict(m=32, k=32, n=32, tile=16)),
    ("matvec-naive", "naive matrix-vector product", dict(m=64, k=64, tile=16)),
    ("matvec-local", "matrix-vector product, x staged in local memory",
     dict(m=64, k=64, tile=16)),
)
"""The explain pages of a report: (family, title, sizes): sizes a person can look at."""

PAIRS = (("GEMM: each work-item reads its own row and column, or B x B tiles are shared "
          "through local memory", ("gemm-naive", "gemm-tiled")),
         ("matrix-vector product: each work-item reads all of x, or a work-group stages x "
          "once", ("matvec-naive", "matvec-local")))

EXPLAIN_DIR = "explain"
"""Folder of the explain pages inside a report folder."""

DOCUMENT = "an explain document of tiletraffic report"
"""What :func:`read_document` calls the file in its messages."""

REQUIRED_PARTS = ("schedule", "work_group", "steps", "arrays", "hazards", "samples", "sites",
                  "reuse", "counts", "memory", "memory_params", "time", "device_model")
"""The parts of a document every page draws; the others (``closed_form``,
``closed_form_derived``) are shown where the document has them."""

_PAGE = jinja2.Environment(
    loader=jinja2.PackageLoader("tiletraffic.analysis.explain", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined).get_template("report.html.j2")


def _reads(doc: dict) -> str:
    parts = []
    for name, r in doc["reuse"].items():
        times = str(r["min"]) if r["min"] == r["max"] else f"{r['min']}-{r['max']}"
        parts.append(f"{name}: {times}")
    return ", ".join(parts)


def _sizes_shown(schedule: dict) -> str:
    """A page's sizes as its row shows them: ``M = 32, K = 32, N = 32, tile 16`` for a GEMM
    (its B×B tile), ``M = 64, K = 64, work-group size 16`` for a matrix-vector product (its
    tile parameter is the work-items of its work-group)."""
    sizes = ", ".join(f"{k} = {v}" for k, v in schedule["params"].items())
    if schedule["family"].startswith("matvec"):
        return sizes + ", work-group size " + " x ".join(map(str, schedule["local_size"]))
    return sizes + f", tile {schedule['tile']}"


def observe_pages(out_dir, device_model: str = DEFAULT_MODEL) -> list[Path]:
    """Simulate each of :data:`PAGES` on ``device_model`` and write its document to
    ``out_dir/explain/<family>.json`` (atomically); returns the paths."""
    paths = []
    for family, _title, sizes in PAGES:
        doc = explain_data(build(family, **sizes), device_model)
        path = Path(out_dir) / EXPLAIN_DIR / f"{family}.json"
        atomic_write_text(path, json.dumps(doc))
        paths.append(path)
    return paths


def read_document(path) -> dict:
    """The explain document in ``path`` (:func:`.collect.explain_data`'s, as
    :func:`observe_pages` writes it).

    Raises:
        analysis.files.ResultsFileError: not JSON, not an object, or a part of
            :data:`REQUIRED_PARTS` missing; the message names the file and the parts.
    """
    doc = read_json_object(path, DOCUMENT)
    missing = [part for part in REQUIRED_PARTS if part not in doc]
    if missing:
        raise ResultsFileError(f"{path}: not {DOCUMENT} ({', '.join(missing)} missing)")
    return doc


def _row(doc: dict, family: str, title: str) -> dict:
    """The row of ``report.html`` linking the page of ``doc``."""
    return {
        "href": f"{EXPLAIN_DIR}/{family}.html", "title": title,
        "sizes": _sizes_shown(doc["schedule"]),
        "loads": doc["counts"]["global_load_elems"], "reads": _reads(doc),
        "sectors_per_request": doc["memory"]["global_load_sectors"]
        / max(1, doc["memory"]["global_load_requests"]),
        "bound": term_name(doc["time"].get("bound", "-")),
    }


def write_report_html(out_dir) -> Path | None:
    """From the documents of :func:`observe_pages` in ``out_dir/explain/``, write each page
    (``<family>.html`` beside its JSON) and ``out_dir/report.html`` linking them
    (atomically); returns report.html's path, or ``None`` (nothing written) where no
    document is there.

    Raises:
        analysis.files.ResultsFileError: a document that is not one (:func:`read_document`)
            or whose parts are not of the shapes the page draws; the message names it.
    """
    out_dir = Path(out_dir)
    rows, model = {}, None
    for family, title, _sizes in PAGES:
        source = out_dir / EXPLAIN_DIR / f"{family}.json"
        if not source.is_file():
            continue
        doc = read_document(source)
        model = doc["device_model"]
        try:
            write_page(doc, source.with_suffix(".html"))
            rows[family] = _row(doc, family, title)
        except KeyError as err:
            raise ResultsFileError(f"{source}: not {DOCUMENT} (field {err} missing)") from None
        except jinja2.UndefinedError as err:
            raise ResultsFileError(f"{source}: not {DOCUMENT} (a field is missing: "
                                   f"{err})") from None
        except (TypeError, IndexError, AttributeError, ValueError) as err:
            raise ResultsFileError(f"{source}: not {DOCUMENT} (a field is of another type "
                                   f"or shape: {err})") from None
    if not rows:
        return None
    html = _PAGE.render(title="tiletraffic report: see it", model=model,
                        pairs=[(c, [rows[f] for f in fams if f in rows])
                               for c, fams in PAIRS])
    atomic_write_text(out_dir / "report.html", html)
    return out_dir / "report.html"
