"""Make the screenshots of docs/explain.md: explain pages opened in headless Chromium (the
browser the tests use, ``tiletraffic.analysis.explain.browser``), one section each.

    PYTHONPATH=. python docs/explain/screenshots.py     # from the repository root

writes the PNG files beside this script (and nothing else).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import tiletraffic as tt
from tiletraffic.analysis.explain.browser import launch, why_no_browser

HERE = Path(__file__).resolve().parent
GEMM = dict(m=32, k=32, n=32)

SHOTS = (
    # (file, schedule, build options, what to photograph, clicks on "next step", "hazard"
    # for the first hazard's button, or ("work-item", local id, clicks on "next step"))
    ("naive-tiles.png", "gemm-naive", dict(GEMM, tile=16), "#tiles", 1),
    ("naive-work-item.png", "gemm-naive", dict(GEMM, tile=16), "#tiles", ("work-item", 17, 1)),
    ("tiled-tiles.png", "gemm-tiled", dict(GEMM, tile=16), "#tiles", 2),
    ("naive-reuse.png", "gemm-naive", dict(GEMM, tile=16), "#reuse .row", 0),
    ("tiled-reuse.png", "gemm-tiled", dict(GEMM, tile=16), "#reuse .row", 0),
    ("coalescing-row-major.png", "gemm-naive", dict(GEMM, tile=32), "#coalescing", 0),
    ("coalescing-transposed.png", "gemm-naive", dict(GEMM, tile=32, mapping="transposed"),
     "#coalescing", 0),
    ("banks-unpadded.png", "gemm-tiled",
     dict(GEMM, tile=32, a_tile="transposed", padding=0), "#banks .panel >> nth=0", 0),
    ("banks-padded.png", "gemm-tiled",
     dict(GEMM, tile=32, a_tile="transposed", padding=1), "#banks .panel >> nth=0", 0),
    ("race.png", "gemm-tiled:no-second-barrier", {}, "#tiles", "hazard"),
    ("race-hazards.png", "gemm-tiled:no-second-barrier", {}, "#hazards", 0),
    ("time.png", "gemm-tiled", dict(GEMM, tile=16), "#time", 0),
)


def main() -> int:
    reason = why_no_browser()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch(p)
        for name, schedule, options, selector, action in SHOTS:
            page_file = Path(tmp) / f"{name}.html"
            tt.explain(tt.build(schedule, **options), out=page_file)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(page_file.as_uri())
            if action == "hazard":
                page.click("button.goto >> nth=0")
            elif isinstance(action, tuple):
                _, lid, steps = action
                page.click(f'#work-items-svg rect[data-lid="{lid}"]')
                for _ in range(steps):
                    page.click("#step-next")
            else:
                for _ in range(action):
                    page.click("#step-next")
            page.locator(selector).screenshot(path=str(HERE / name))
            page.close()
            print(HERE / name)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
