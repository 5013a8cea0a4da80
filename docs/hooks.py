"""MkDocs hook: the repository files that the pages link to outside ``docs_dir`` (the README,
committed reports and their figures, experiments' findings, examples, the tuning space) are
part of the site, so MkDocs resolves and checks those links like links between pages.

``on_files`` reads the links of every page (its Markdown rendered with the Markdown extensions
named in ``mkdocs.yml``, the links read from the HTML by ``html.parser``) and adds each linked
repository file outside ``docs_dir`` to MkDocs' files, then the links of the Markdown files it
added, and so on:

- a Markdown file becomes a page that is not in the nav: ``<path without .md>/index.html``
  (``<path without .md>.html`` without directory URLs), rendered with the site's theme;
- any other file (PNG, TOML, OpenCL C, Python, JSON, logs) is copied to ``<path>``;

where ``<path>`` is the file's path in the repository. Its ``src_uri`` is its path relative to
``docs_dir`` (``../reports/...``), which is what MkDocs makes of a page's relative link
(``../reports/...`` from ``docs/index.md``), so MkDocs finds the file, rewrites the link to the
file's place in the site and checks anchors into added pages. Links from an added page back
into ``docs_dir`` (``docs/tutorial.md`` from the README) name the page there. A link to a file
that is not in the repository is left to MkDocs, which reports it (a warning: the strict build
fails).
"""
from __future__ import annotations

import os
import posixpath
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import markdown
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import is_markdown_file

LINK_ATTRIBUTES = ("href", "src")


class _LinkReader(HTMLParser):
    """The values of every ``href`` and ``src`` attribute of an HTML fragment, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls.extend(value for name, value in attrs if name in LINK_ATTRIBUTES and value)


def html_links(html: str) -> list[str]:
    """The ``href`` and ``src`` values of the HTML ``html``, as written (not resolved)."""
    reader = _LinkReader()
    reader.feed(html)
    reader.close()
    return reader.urls


def markdown_links(text: str, config) -> list[str]:
    """The links and image sources of the Markdown ``text``, read from its HTML rendered with
    the Markdown extensions (and their settings) named in ``config``; the extensions plugins
    add (instances, such as mkdocstrings' API blocks) are left out."""
    extensions = [ext for ext in config["markdown_extensions"] if isinstance(ext, str)]
    configs = {name: opts for name, opts in config["mdx_configs"].items() if name in extensions}
    return html_links(markdown.Markdown(extensions=extensions,
                                        extension_configs=configs).convert(text))


def linked_src_uri(url: str, page_src_uri: str) -> str | None:
    """The ``src_uri`` (POSIX, relative to ``docs_dir``, as MkDocs normalises it) that the
    relative link ``url`` of the page ``page_src_uri`` names; ``None`` for an external, absolute
    or anchor-only link."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path or url.startswith(("/", "\\")):
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_src_uri),
                                             unquote(parts.path)))


def site_dest_uri(repository_path: str, use_directory_urls: bool) -> str:
    """Where the repository file ``repository_path`` goes in the site: a Markdown file as the
    page ``<path without .md>/index.html`` (or ``.html``), any other file at its own path."""
    if not is_markdown_file(repository_path):
        return repository_path
    stem = posixpath.splitext(repository_path)[0]
    return f"{stem}/index.html" if use_directory_urls else f"{stem}.html"


class RepositoryFiles(Files):
    """MkDocs' files, where a path back into ``docs_dir`` from a page outside it
    (``../docs/tutorial.md``) names the file of the docs folder (``tutorial.md``)."""

    def __init__(self, files, docs_prefix: str) -> None:
        super().__init__(files)
        self.docs_prefix = docs_prefix

    def get_file_from_path(self, path: str) -> File | None:
        posix = Path(path).as_posix()
        if posix.startswith(self.docs_prefix):
            posix = posix[len(self.docs_prefix):]
        return super().get_file_from_path(posix)


def _repository_file(src_uri: str, docs: Path, root: Path) -> Path | None:
    """The file of the repository ``root`` outside ``docs`` that ``src_uri`` (relative to
    ``docs``) names; ``None`` when there is no such file. Paths are compared as written
    (normalised, symbolic links not followed)."""
    target = Path(os.path.normpath(docs / src_uri))
    if not target.is_file() or target.is_relative_to(docs) or not target.is_relative_to(root):
        return None
    return target


def on_files(files: Files, config) -> Files:
    docs = Path(os.path.abspath(config["docs_dir"]))
    root = docs.parent
    site = RepositoryFiles(files, f"../{docs.name}/")
    taken = {file.dest_uri: file.src_uri for file in site}
    pending = [file for file in site if file.is_documentation_page()]
    while pending:
        page = pending.pop()
        for url in markdown_links(page.content_string, config):
            src_uri = linked_src_uri(url, page.src_uri)
            if src_uri is None or site.get_file_from_path(src_uri) is not None:
                continue
            target = _repository_file(src_uri, docs, root)
            if target is None:
                continue                    # MkDocs reports the missing file
            path = target.relative_to(root).as_posix()
            dest_uri = site_dest_uri(path, config["use_directory_urls"])
            if dest_uri in taken:
                raise PluginError(f"{path} (linked from {page.src_uri}) would go to {dest_uri} "
                                  f"in the site, where {taken[dest_uri]} already goes")
            added = File(src_uri, src_dir=str(docs), dest_dir=config["site_dir"],
                         use_directory_urls=config["use_directory_urls"], dest_uri=dest_uri,
                         inclusion=InclusionLevel.NOT_IN_NAV)
            site.append(added)
            taken[dest_uri] = src_uri
            if added.is_documentation_page():
                pending.append(added)
    for file in [f for f in site if f.src_uri.startswith("../") and f.src_uri.endswith(".html")]:
        rewritten = with_page_links(file, site, config)
        if rewritten is not file:
            site.remove(file)
            site.append(rewritten)
    return site


def with_page_links(file: File, site: Files, config) -> File:
    """A repository HTML file copied into the site (a report's ``report.html``) with each of
    its links to a Markdown file the site renders as a page pointing at that page instead;
    ``file`` itself when it has none. Links are read with :func:`html_links`."""
    text = file.content_string
    new = text
    for url in sorted(set(html_links(text))):
        src_uri = linked_src_uri(url, file.src_uri)
        target = site.get_file_from_path(src_uri) if src_uri else None
        if target is None or not target.is_documentation_page():
            continue
        new = new.replace(f'href="{url}"', f'href="{target.url_relative_to(file)}"')
    if new == text:
        return file
    out = File.generated(config, file.src_uri, content=new, inclusion=InclusionLevel.NOT_IN_NAV)
    out.dest_uri = file.dest_uri
    return out
