"""The explain pages in a real browser: headless Chromium (the system's, Debian package
``chromium``) driven by Playwright, no browser download.

Each page (gemm-naive, gemm-tiled, gemm-tiled with a transposed unpadded A tile, and
``gemm-tiled:no-second-barrier``) must load without console errors or requests beyond
itself, draw its SVG pictures, move its stepper on a click, render a non-blank picture, and
embed a document whose numbers equal ``tiletraffic simulate --json`` and ``model --json``.
The whole module skips, with one line saying why, where no browser can be started.
"""
from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.explain.browser import chromium_path, launch, why_no_browser

if why_no_browser():
    pytest.skip(why_no_browser(), allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402

CASES = {
    "gemm-naive": ["gemm-naive", "--m", "32", "--k", "32", "--n", "32", "--tile", "16"],
    "gemm-tiled": ["gemm-tiled", "--m", "32", "--k", "32", "--n", "32", "--tile", "16"],
    "gemm-tiled-transposed": ["gemm-tiled", "--m", "32", "--k", "32", "--n", "32", "--tile",
                              "32", "--a-tile", "transposed", "--padding", "0"],
    "gemm-tiled:no-second-barrier": ["gemm-tiled:no-second-barrier"],
}


def invoke(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        try:
            b = launch(p)
        except Exception as err:  # noqa: BLE001 - any failure to start is a skip
            pytest.skip(f"no browser: {chromium_path()} did not start "
                        f"({str(err).splitlines()[0]})")
        yield b
        b.close()


@pytest.fixture(scope="module", params=list(CASES))
def page(request, browser, tmp_path_factory):
    """(case, the opened page, console errors, requests, the CLI's output)."""
    args = CASES[request.param]
    out = tmp_path_factory.mktemp("explain") / "page.html"
    result = invoke("explain", *args, "--out", str(out))
    faulty = ":" in args[0]     # a known-faulty variant: the page draws its hazards, exit 1
    assert result.exit_code == (1 if faulty else 0), result.output
    assert out.exists()
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(out.as_uri())
    yield request.param, pg, errors, requests, out
    context.close()


def test_no_console_errors_and_no_requests(page):
    case, pg, errors, requests, out = page
    assert errors == []
    assert requests == [out.as_uri()]


def test_the_pictures_are_drawn(page):
    case, pg, *_ = page
    assert pg.locator("#tiles-svg g.step").count() >= 2
    assert pg.locator("#tiles-svg g.step.current rect.acc").count() > 0
    assert pg.locator("svg.heat").count() == 2                 # A and B
    assert pg.locator("svg.heat rect title").count() > 0       # exact counts on hover
    assert pg.locator("svg.coalescing.load").count() == 2      # one load each of A and B
    assert pg.locator("svg.coalescing.store").count() == 1     # and the store of C
    if case == "gemm-naive":
        assert pg.locator("svg.banks").count() == 0
    else:
        assert pg.locator("svg.banks").count() == 4
    if case == "gemm-tiled:no-second-barrier":
        assert pg.locator("#tiles-svg rect.hazard-mark").count() >= 1
        assert pg.locator("#time-svg").count() == 0            # not modelled: a hazard
    else:
        assert pg.locator("#time-svg rect.term.bound").count() == 1


def current_cells(pg):
    return pg.eval_on_selector_all(
        "#tiles-svg g.step", "gs => gs.filter(g => g.style.display !== 'none').map(g => "
        "[g.dataset.step, Array.from(g.querySelectorAll('rect')).map(r => r.getAttribute('x') "
        "+ ',' + r.getAttribute('y')).sort().join(' ')])")


def test_the_stepper_moves_the_highlighted_tile(page):
    case, pg, *_ = page
    before = current_cells(pg)
    pg.click("#step-next")
    after = current_cells(pg)
    assert len(before) == len(after) == 1
    assert before[0][0] == "0" and after[0][0] == "1"
    assert before[0][1] != after[0][1]                          # other cells highlighted
    assert pg.inner_text("#step-label").startswith("2 /")
    pg.click("#step-prev")
    assert current_cells(pg) == before
    if case == "gemm-tiled:no-second-barrier":                  # jump to the race
        pg.click("button.goto >> nth=0")
        assert current_cells(pg)[0][0] == "1"
        pg.click("#step-prev")


def test_screenshot_is_not_blank(page):
    import matplotlib.image

    case, pg, *_ = page
    png = pg.locator("#tiles-svg").screenshot()
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]
    colours = {tuple(p) for p in pixels.reshape(-1, 3)[::7].round(2).tolist()}
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert len(colours) >= 4 and pixels.std() > 0.05


def test_embedded_numbers_equal_simulate_and_model(page):
    case, pg, *_ = page
    doc = pg.evaluate("JSON.parse(document.getElementById('explain-data').textContent)")
    args = CASES[case]
    sim = json.loads(invoke("simulate", *args, "--counts-only", "--hazards", "report",
                            "--json").output)
    for name in ("A", "B"):
        assert sum(doc["reuse"][name]["reads"]) == sim["global_load_elems_by_buffer"][name]
    assert doc["counts"]["global_load_elems"] == sim["global_load_elems"]
    assert [h["kind"] for h in doc["hazards"]] == [h["kind"] for h in sim["hazards"]]
    if case == "gemm-tiled:no-second-barrier":
        return   # the model refuses a launch with a hazard
    model = json.loads(invoke("model", *args, "--json").output)
    for key in ("global_load_requests", "global_load_sectors", "local_load_wavefronts",
                "local_store_wavefronts", "local_bank_conflicts"):
        assert doc["memory"][key] == model[key], key
    assert doc["time"]["bound"] == model["bound"] + "_s"
    # the bank picture: the wavefronts it shows are its sample's, counted by the model's
    # code; by hand, the most distinct words in one of the 32 banks
    shown = [int(x) for x in pg.eval_on_selector_all(
        "b.wavefronts", "bs => bs.map(b => b.dataset.wavefronts)")]
    samples = sorted((s for s in doc["samples"] if s["space"] == "local"),
                     key=lambda s: -s["figures"][f"local_{s['direction']}_wavefronts"])
    for value, sample in zip(shown, samples):
        per_bank: dict[int, set] = {}
        for elements in sample["elements"]:
            for e in elements:
                per_bank.setdefault(e % 32, set()).add(e)
        assert value == max(len(w) for w in per_bank.values())
    assert len(shown) == len(samples)
    if case == "gemm-tiled-transposed":
        assert shown[0] == 32                                    # store tile_A[lc][lr]


def test_a_clicked_work_item_outlines_its_own_elements(page):
    case, pg, errors, *_ = page
    doc = pg.evaluate("JSON.parse(document.getElementById('explain-data').textContent)")

    def own(step: int, lid: int) -> int:
        return sum(len(elements) for entry in doc["steps"]["list"][step]["by_work_item"]
                   for item, elements in entry["work_items"] if item == lid)

    pg.click('#work-items-svg rect[data-lid="17"]')
    assert pg.locator("#work-item-overlay rect").count() == own(0, 17) > 0
    if case == "gemm-naive":   # work-item (1, 1): row 1 of A and column 1 of B, k = 0..15
        a = next(e for e in doc["steps"]["list"][0]["by_work_item"] if e["array"] == "A")
        assert dict((i, els) for i, els in a["work_items"])[17] == list(range(32, 48))
    width = doc["work_group"]["local_size"][0]
    assert pg.inner_text("#work-item-label").startswith(
        f"work-item ({17 % width}, {17 // width}): reads ")
    pg.click("#step-next")
    assert pg.locator("#work-item-overlay rect").count() == own(1, 17)
    pg.click("#step-prev")
    pg.click('#work-items-svg rect[data-lid="17"]')            # a second click clears it
    assert pg.locator("#work-item-overlay rect").count() == 0
    assert errors == []


def test_every_caption_of_the_pictures_is_fully_visible(page):
    """Each text of each SVG picture lies inside its picture (none is cut off at the edge)."""
    case, pg, *_ = page
    clipped = pg.eval_on_selector_all("svg text", """texts => texts.flatMap(t => {
        const svg = t.ownerSVGElement, box = t.getBBox(), view = svg.viewBox.baseVal;
        const w = view && view.width ? view.width : svg.width.baseVal.value;
        const h = view && view.height ? view.height : svg.height.baseVal.value;
        const m = t.getCTM(), r = svg.getCTM();
        const x = box.x + (m ? m.e - r.e : 0), y = box.y + (m ? m.f - r.f : 0);
        return (x < -0.5 || y < -0.5 || x + box.width > w + 0.5 || y + box.height > h + 0.5)
            ? [`${svg.id || svg.className.baseVal}: "${t.textContent}" spans x ${x.toFixed(1)}`
               + `..${(x + box.width).toFixed(1)} of ${w}`] : [];
    })""")
    assert clipped == [], "\n".join(clipped[:10])


def test_numbers_in_the_tables_do_not_wrap(page):
    """Every table cell that holds a number shows it on one line."""
    case, pg, *_ = page
    wrapped = pg.eval_on_selector_all("td", """cells => cells.filter(c => /\\d/.test(c.textContent)
        && !/[a-z_]{3}/.test(c.textContent)).flatMap(c => {
        const range = document.createRange(); range.selectNodeContents(c);
        const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        return lines.size > 1 ? [c.textContent] : [];
    })""")
    assert wrapped == []
