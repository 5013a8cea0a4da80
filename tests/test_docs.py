"""The user documentation: README.md within 300 lines, docs/ built by MkDocs in strict mode
with every link checked (between pages and into the repository: a missing file or heading
fails the build), the repository files the pages link to in the site (reports as pages with
their figures), and the overview linking every page of the nav."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import markdown
import pytest
import yaml

from shared_results import computed_once

ROOT = Path(__file__).resolve().parents[1]
MAX_README_LINES = 300
# The committed reports of the main job that docs/report.md shows, each with its figures.
REPORTS = ("reports/pocl-cpu-amd-epyc/report.md", "reports/nvidia-h200/report.md")
MIN_REPORT_FIGURES = 4


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = _hooks()


def _mkdocs_build(project: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(site)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def _markdown_links(path: Path) -> list[str]:
    html = markdown.markdown(path.read_text(encoding="utf-8"), extensions=["tables"])
    return HOOKS.html_links(html)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The site built from the repository: (the build's output, the site folder). Built
    once per test run (``shared_results.computed_once``); the tests only read it."""
    def build():
        site = tmp_path_factory.mktemp("docs") / "site"
        res = _mkdocs_build(ROOT, site)
        return res.returncode, res.stdout + res.stderr, site

    returncode, output, site = computed_once(tmp_path_factory, "test_docs.built", build)
    assert returncode == 0, output
    return output, site


def test_readme_is_a_short_guide():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    headings = [line for line in lines if line.startswith("## ")]
    for part in ("Install and the two commands", "Python in ten lines", "Where to go next"):
        assert f"## {part}" in headings, part
    # the test command says how long it takes, in the sentence that introduces it
    command = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    intro = " ".join(lines[max(0, command - 5):command])
    assert "Run the tests" in intro and "at most 5 minutes on 2 cores" in intro, intro


def test_html_links_reads_links_and_images_not_text():
    html = markdown.markdown("[a](x.md#h) ![b](../r/f.png) `[c](y.md)` <https://e.org>\n\n"
                             "    [d](z.md)\n", extensions=["tables"])
    assert HOOKS.html_links(html) == ["x.md#h", "../r/f.png", "https://e.org"]
    assert HOOKS.linked_src_uri("../reports/a%20b/r.md#t", "index.md") == "../reports/a b/r.md"
    assert HOOKS.linked_src_uri("f.png", "../reports/x/r.md") == "../reports/x/f.png"
    assert HOOKS.linked_src_uri("https://e.org/a.md", "index.md") is None
    assert HOOKS.site_dest_uri("reports/x/report.md", True) == "reports/x/report/index.html"
    assert HOOKS.site_dest_uri("experiments/README.md", False) == "experiments/README.html"
    assert HOOKS.site_dest_uri("reports/x/f.png", True) == "reports/x/f.png"


def test_mkdocs_builds_strict_with_every_link_resolved(built):
    output, site = built
    unresolved = [line for line in output.splitlines()
                  if "not found among documentation files" in line or "Doc file" in line]
    assert not unresolved, "\n".join(unresolved)
    assert (site / "index.html").exists()
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "tiletraffic.build" in api or "build(" in api, "the API page holds the facade"
    for role in (":func:", ":class:", ":data:", ":meth:", ":mod:", ":attr:", ":exc:"):
        assert role not in api, f"the API page shows the Sphinx role {role} as text"


def test_no_link_in_the_site_is_dead(built):
    _, site = built
    dead = []
    for page in sorted(site.rglob("*.html")):
        for url in HOOKS.html_links(page.read_text(encoding="utf-8")):
            path = url.split("#", 1)[0].split("?", 1)[0]
            if not path or "://" in path or path.startswith(("/", "mailto:")):
                continue
            target = page.parent / path / ("index.html" if path.endswith("/") else "")
            if not target.exists():
                dead.append(f"{page.relative_to(site)}: {url}")
    assert not dead, "links dead in the built site:\n" + "\n".join(dead)


@pytest.mark.parametrize("report", REPORTS)
def test_a_committed_report_is_a_page_of_the_site_with_all_its_figures(built, report):
    _, site = built
    page = site / report.removesuffix(".md") / "index.html"
    assert page.exists(), f"{report} is not a page of the site"
    html = page.read_text(encoding="utf-8")
    assert "<h1" in html and "<table" in html, f"{report} is not rendered as HTML"
    figures = [link for link in _markdown_links(ROOT / report) if link.endswith(".png")]
    assert len(figures) >= MIN_REPORT_FIGURES, figures
    for figure in figures:
        assert (site / Path(report).parent / figure).is_file(), f"{report}: {figure} missing"
    images = [url for url in HOOKS.html_links(html) if url.endswith(".png")]
    assert len(images) == len(figures)
    for url in images:
        assert (page.parent / url).is_file(), f"{report}: image {url} is dead in the site"


def test_the_readme_is_a_page_of_the_site_linking_the_pages(built):
    _, site = built
    html = (site / "README" / "index.html").read_text(encoding="utf-8")
    assert "../tutorial/" in HOOKS.html_links(html)


def test_the_overview_links_every_page_of_the_nav():
    def pages(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from pages(value)
        else:
            for value in item:
                yield from pages(value)

    nav = set(pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]))
    linked = {url.split("#", 1)[0] for url in _markdown_links(ROOT / "docs" / "index.md")}
    assert "opencl.md" in linked
    missing = sorted(nav - linked - {"index.md"})
    assert not missing, f"docs/index.md does not link {missing}"


def _docs_copy(tmp_path: Path) -> Path:
    """A copy of the docs with the repository folders they link to (as symbolic links)."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    for name in ("README.md", "reports", "experiments", "examples", "analysis"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


# Broken links (to a missing heading, page, figure or report), each with the name the
# failed build must give.
BROKEN_LINKS = (
    ("[x](tutorial.md#no-such-heading)", "no-such-heading"),
    ("[x](no-such-page.md)", "no-such-page.md"),
    ("![x](../reports/pocl-cpu-amd-epyc/no-such-figure.png)", "no-such-figure.png"),
    ("[x](../reports/no-such-report.md)", "no-such-report.md"),
)


def _build_docs_copy(tmp_path: Path, links: tuple[str, ...]) -> tuple[int, str]:
    """Builds a copy of the docs whose overview also links a repository file that is there
    and ``links``: (exit status, the build's output)."""
    project = _docs_copy(tmp_path)
    page = project / "docs" / "index.md"
    text = page.read_text(encoding="utf-8") + "\n[report](../reports/nvidia-h200/report.md)\n"
    page.write_text(text + "".join(f"\n{link}\n" for link in links), encoding="utf-8")
    res = _mkdocs_build(project, tmp_path / "site")
    return res.returncode, res.stdout + res.stderr


def test_a_broken_link_fails_the_strict_build_and_a_repository_file_link_does_not(tmp_path):
    """The check can fail: the copy with broken links (to a missing heading, page, figure and
    report) fails to build, naming each of them (the strict build reports every warning
    before it stops); its warnings are those links' and no other, so the link to a
    repository file that is there gives no message and the copy without the broken links
    builds."""
    returncode, output = _build_docs_copy(tmp_path, tuple(link for link, _ in BROKEN_LINKS))
    assert returncode != 0, output
    for link, named in BROKEN_LINKS:
        assert named in output, f"{link}: {named} not named\n{output}"
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == len(BROKEN_LINKS), output
    assert all(sum(named in line for _, named in BROKEN_LINKS) == 1 for line in warnings), output
    assert "nvidia-h200/report.md" not in output, output


def test_readmes_smallest_schedule_is_the_example_file_and_counts_as_it_says():
    import tiletraffic as tt

    code = (ROOT / "examples" / "row_matvec.py").read_text(encoding="utf-8")
    assert code in (ROOT / "README.md").read_text(encoding="utf-8"), "README shows the file"
    m, k = 100, 50
    sch = tt.build("examples/row_matvec.py:make_schedule", m=m, k=k)
    counts = tt.simulate(sch, compute_values=False).counts
    assert counts.global_load_elems == 2 * m * k == 10000    # README: 10000 at 100×50
    assert counts.global_store_elems == m
    assert tt.check(sch) == []
