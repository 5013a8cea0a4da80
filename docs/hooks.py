"""MkDocs hook: a page's links to repository files outside docs/ (reports, figures, examples,
the tuning space, experiments' findings) work in the built site too.

Each link or image whose relative path, resolved against the page's Markdown file, names a
file of the repository outside ``docs_dir`` is rewritten to that file's copy in the site,
``<site>/<its path in the repository>``, and the file is copied there after the build. Links
between pages are MkDocs' own and are left alone; a link to a missing file stays as written
(``tests/test_docs.py`` fails on it).
"""
from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

_LINK = re.compile(r'(?P<attr>href|src)="(?P<url>[^"]+)"')
_copies: dict[str, Path] = {}


def _repository_file(url: str, page_dir: Path, docs: Path, root: Path) -> str | None:
    """The repository path (POSIX, relative to ``root``) that ``url`` names from a page in
    ``page_dir``, when it is a file outside ``docs``; otherwise ``None``."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path or url.startswith(("#", "/")):
        return None
    target = (page_dir / unquote(parts.path)).resolve()
    if not target.is_file() or target.is_relative_to(docs) or not target.is_relative_to(root):
        return None
    return target.relative_to(root).as_posix()


def on_page_content(html: str, page, config, files) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    page_dir = (docs / page.file.src_path).parent
    page_url_dir = posixpath.dirname("/" + page.url) if not page.url.endswith("/") \
        else "/" + page.url.rstrip("/")

    def rewrite(match: re.Match) -> str:
        url = match["url"]
        path = _repository_file(url, page_dir, docs, root)
        if path is None:
            return match.group(0)
        _copies[path] = root / path
        fragment = urlsplit(url).fragment
        new = posixpath.relpath("/" + path, page_url_dir or "/")
        return f'{match["attr"]}="{new}{"#" + fragment if fragment else ""}"'

    return _LINK.sub(rewrite, html)


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    for path, source in sorted(_copies.items()):
        out = site / path
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, out)
