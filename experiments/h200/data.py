"""The raw data of the H200 study: where it lives and how it is read and stored.

Every device call's raw JSON sits under ``reports/nvidia-h200/<question>/`` beside the
``command.txt`` that produced it, stored gzip-compressed as ``<name>.json.gz``: the bytes the
driver wrote on the device, unchanged, in a gzip stream without a file name and with
modification time 0 (so the same JSON always gives the same ``.json.gz``). Three kinds of
JSON stay plain because people read them: ``validation.json`` (rendered), ``predictions.json``
(pre-registered, committed before their device run) and ``results.json`` (the product
report's data, read by ``tiletraffic report --render``).

After copying a new device call's ``$OUT`` into ``reports/nvidia-h200/<question>/``::

    python -m experiments.h200.data compress reports/nvidia-h200/<question>
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
"""The repository root (experiments/h200/data.py is two folders below it)."""

REPORT = REPO / "reports" / "nvidia-h200"
"""The committed H200 data: the issue-4 run here, every other question in a sub-folder."""

PLAIN = ("validation.json", "predictions.json", "results.json")
"""JSON files :func:`compress_tree` leaves plain (people read them)."""


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document at ``path``: gunzipped first when the name ends in ``.gz``.

    Raises:
        FileNotFoundError: no file at ``path``.
    """
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            return json.loads(f.read())
    return json.loads(path.read_bytes())


def load_json(path: str | os.PathLike) -> Any | None:
    """:func:`read_json` of ``path``, or None where there is no such file (a report
    directory's optional raw data)."""
    path = Path(path)
    return read_json(path) if path.exists() else None


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as a deterministic gzip stream: no file name, modification time 0,
    compression level 9."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def compress(path: str | os.PathLike) -> Path:
    """Replace ``name.json`` by ``name.json.gz`` (its bytes unchanged inside, see
    :func:`gzip_bytes`); returns the new path.

    Raises:
        ValueError: ``path`` does not end in ``.json`` or is not valid JSON (nothing is
            written then).
    """
    path = Path(path)
    if path.suffix != ".json":
        raise ValueError(f"{path}: only .json files are compressed")
    data = path.read_bytes()
    try:
        json.loads(data)
    except ValueError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    out = path.with_name(path.name + ".gz")
    tmp = out.with_name("." + out.name + ".tmp")
    tmp.write_bytes(gzip_bytes(data))
    os.replace(tmp, out)
    path.unlink()
    return out


def compress_tree(folder: str | os.PathLike) -> list[Path]:
    """:func:`compress` every ``*.json`` under ``folder`` except the :data:`PLAIN` names;
    returns the written paths."""
    return [compress(p) for p in sorted(Path(folder).rglob("*.json")) if p.name not in PLAIN]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Store raw H200 JSON gzip-compressed "
                                 "(deterministic bytes); validation.json, predictions.json "
                                 "and results.json stay plain.")
    ap.add_argument("command", choices=["compress"])
    ap.add_argument("folders", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            print(f"error: {folder} is not a directory", file=sys.stderr)
            return 2
    for folder in args.folders:
        for written in compress_tree(folder):
            print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
