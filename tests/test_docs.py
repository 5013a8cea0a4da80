"""The user documentation: README.md within 300 lines, docs/ built by MkDocs in strict mode
(broken links and anchors between pages fail it), and every link from README.md or a page
into the repository naming a file that is there."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
MAX_README_LINES = 300


def test_readme_is_a_short_guide():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    headings = [line for line in lines if line.startswith("## ")]
    for part in ("Install and the two commands", "Python in ten lines", "Where to go next"):
        assert f"## {part}" in headings, part


def _links(path: Path):
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        yield target.split("#", 1)[0]


def test_every_link_into_the_repository_names_a_committed_file():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = [f"{page.relative_to(ROOT)}: {target}" for page in pages
               for target in _links(page)
               if target and not (page.parent / target).resolve().exists()]
    assert not missing, "\n".join(missing)


def test_mkdocs_builds_strict(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "site" / "index.html").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "tiletraffic.build" in api or "build(" in api, "the API page holds the facade"
    roles = re.findall(r":(?:func|class|data|meth|mod|attr|exc):", api)
    assert not roles, f"the API page shows {len(roles)} Sphinx roles as text (write Markdown)"
    site, dead = tmp_path / "site", []
    for page in site.rglob("*.html"):
        for url in re.findall(r'(?:href|src)="([^"#?]+)', page.read_text(encoding="utf-8")):
            if "://" in url or url.startswith(("/", "mailto:")):
                continue
            target = page.parent / url / ("index.html" if url.endswith("/") else "")
            if not target.exists():
                dead.append(f"{page.relative_to(site)}: {url}")
    assert not dead, "links dead in the built site (docs/hooks.py copies repository files):\n" \
        + "\n".join(dead)


def test_a_broken_anchor_fails_the_strict_build(tmp_path):
    """The check can fail: a copy of the docs with one link to a missing heading."""
    import shutil

    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[x](tutorial.md#no-such-heading)\n",
                    encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "--site-dir", str(tmp_path / "site")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "no-such-heading" in res.stdout + res.stderr


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
