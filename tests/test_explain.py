"""Tests of the explain page's data and HTML (analysis.explain, simulator.observers.explain),
without a browser (tests/test_explain_browser.py opens the pages in Chromium)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.explain import MAX_SIDE_ELEMS, ExplainSizeError, explain_data
from tiletraffic.analysis.explain.render import render_page


def cli_json(*args) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def embedded(html: str) -> dict:
    """The document a page embeds."""
    found = re.search(r'<script type="application/json" id="explain-data">(.*?)</script>',
                      html, re.S)
    assert found
    return json.loads(found.group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def tiled():
    return explain_data(tt.build("gemm-tiled", m=24, k=40, n=20, tile=8))


def test_reads_sum_to_the_simulated_loads_of_each_buffer(tiled):
    sim = cli_json("simulate", "gemm-tiled", "--m", "24", "--k", "40", "--n", "20",
                   "--tile", "8")
    for name in ("A", "B"):
        assert tiled["reuse"][name]["total"] == sum(tiled["reuse"][name]["reads"]) \
            == sim["global_load_elems_by_buffer"][name]
    # tiled GEMM: each element of A is read ceil(N/B) = 3 times, of B ceil(M/B) = 3 times
    assert set(tiled["reuse"]["A"]["reads"]) == {3}
    assert set(tiled["reuse"]["B"]["reads"]) == {3}
    assert tiled["counts"] == {k: sim[k] for k in tiled["counts"]}


def test_naive_reads_every_element_of_a_n_times():
    doc = explain_data(tt.build("gemm-naive", m=12, k=20, n=28, tile=8))
    assert set(doc["reuse"]["A"]["reads"]) == {28}
    assert set(doc["reuse"]["B"]["reads"]) == {12}
    # no barriers: steps of 8 iterations of the K loop, ceil(20 / 8) = 3
    assert doc["steps"]["by"] == "iterations" and len(doc["steps"]["list"]) == 3


def test_tiled_steps_are_barrier_intervals_with_one_tile_each(tiled):
    steps = tiled["steps"]["list"]
    # ceil(40 / 8) = 5 tiles: 2 intervals each, then the interval that stores C
    assert [s["step"] for s in steps] == list(range(11))
    for s in steps[0:10:2]:   # loads of one 8 x 8 tile of A and of B by 64 work-items
        loads = {a["array"]: a for a in s["accesses"] if a["direction"] == "load"}
        assert len(loads["A"]["elements"]) == 64 and sum(loads["A"]["counts"]) == 64
    t = 1   # the second tile of A for work-group 0: rows 0-7, columns 8-15
    a = next(x for x in steps[2 * t]["accesses"] if x["array"] == "A")
    assert a["elements"] == [r * 40 + c for r in range(8) for c in range(8 * t, 8 * t + 8)]
    stores = [x for x in steps[-1]["accesses"] if x["array"] == "C"]
    assert stores[0]["elements"] == [r * 20 + c for r in range(8) for c in range(8)]


def test_memory_counts_per_statement_sum_to_the_model(tiled):
    model = cli_json("model", "gemm-tiled", "--m", "24", "--k", "40", "--n", "20",
                     "--tile", "8")
    for key in ("global_load_requests", "global_load_sectors", "local_load_wavefronts",
                "local_store_wavefronts", "local_bank_conflicts", "global_store_sectors"):
        assert tiled["memory"][key] == model[key], key
    assert tiled["time"]["terms_s"] == pytest.approx(
        {k: v for k, v in model["time_terms_s"].items()}, rel=1e-12)


def bank_wavefronts(sample: dict, banks: int = 32) -> int:
    """Max distinct words per bank of one scalar request, by hand."""
    per_bank: dict[int, set] = {}
    for elements in sample["elements"]:
        for e in elements:
            per_bank.setdefault(e % banks, set()).add(e)
    return max(len(w) for w in per_bank.values())


def test_transposed_unpadded_a_tile_stores_in_one_bank():
    doc = explain_data(tt.build("gemm-tiled", m=32, k=32, n=32, tile=32, a_tile="transposed",
                                padding=0))
    store_a = next(s for s in doc["samples"] if s["site"] == "store tile_A[lc, lr]")
    # lane l stores word 32 l: all 32 lanes in bank 0
    assert store_a["elements"] == [[32 * lane] for lane in range(32)]
    assert store_a["figures"]["local_store_wavefronts"] == bank_wavefronts(store_a) == 32
    padded = explain_data(tt.build("gemm-tiled", m=32, k=32, n=32, tile=32,
                                   a_tile="transposed", padding=1))
    store_a = next(s for s in padded["samples"] if s["site"] == "store tile_A[lc, lr]")
    assert store_a["figures"]["local_store_wavefronts"] == bank_wavefronts(store_a) == 1


def test_coalescing_sample_of_naive_mappings():
    row = explain_data(tt.build("gemm-naive", m=32, k=32, n=32, tile=32))
    col = explain_data(tt.build("gemm-naive", m=32, k=32, n=32, tile=32, mapping="transposed"))
    b_row = next(s for s in row["samples"] if s["array"] == "B")
    b_col = next(s for s in col["samples"] if s["array"] == "B")
    # row-major: 32 lanes read 32 consecutive floats = 4 sectors; transposed: 32 rows apart
    assert b_row["figures"]["global_load_sectors"] == 4
    assert b_col["figures"]["global_load_sectors"] == 1   # all lanes on one column element
    a_col = next(s for s in col["samples"] if s["array"] == "A")
    assert a_col["figures"]["global_load_sectors"] == 32


def test_hazard_variant_draws_the_race_in_its_interval():
    doc = explain_data(tt.build("gemm-tiled:no-second-barrier"))
    assert {h["kind"] for h in doc["hazards"]} == {"data-race"}
    assert "unavailable" in doc["time"]
    html = render_page(doc)
    assert 'class="hazard-mark"' in html and 'class="goto"' in html


def test_page_embeds_its_document_and_nothing_external(tiled):
    html = render_page(tiled)
    assert embedded(html) == json.loads(json.dumps(tiled))
    assert not re.search(r'(src|href)="(?!#)', html)
    assert "http" not in html.replace("http://www.w3.org/2000/svg", "")   # the SVG namespace


def test_too_large_is_refused_with_the_limit_and_a_size():
    with pytest.raises(ExplainSizeError, match=f"at most {MAX_SIDE_ELEMS} .*--m {MAX_SIDE_ELEMS}"):
        explain_data(tt.build("gemm-tiled", m=128, k=32, n=32, tile=16))
    result = CliRunner().invoke(main, ["explain", "gemm-naive", "--m", "32", "--k", "100",
                                       "--n", "32", "--out", "x.html"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: A is 32 x 100: explain draws every element, at most 64 columns per array; "
        "use --k 64 or less (options: main explain --help)"]


def test_cli_writes_the_page(tmp_path):
    out = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["explain", "matvec-local", "--m", "40", "--k", "48",
                                       "--tile", "16", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = embedded(out.read_text())
    assert doc["reuse"]["x"]["total"] == 48 * 3   # x once per work-group, 3 work-groups
    bad = CliRunner().invoke(main, ["explain", "gemm-naive", "--m", "8", "--k", "8", "--n",
                                    "8", "--tile", "4", "--work-group", "9",
                                    "--out", str(out)])
    assert bad.exit_code == 2 and "outside the launch of 2 x 2" in bad.output


def test_cli_names_work_groups_as_the_other_messages_do(tmp_path):
    out = tmp_path / "page.html"
    sizes = ["--m", "8", "--k", "8", "--n", "8", "--tile", "4", "--out", str(out)]
    ok = CliRunner().invoke(main, ["explain", "gemm-tiled", *sizes, "--work-group", "1,1"])
    assert ok.exit_code == 0, ok.output
    assert ok.stdout == f"wrote {out}: gemm-tiled, work-group (1, 1), 5 steps\n"
    bad = CliRunner().invoke(main, ["explain", "gemm-tiled", *sizes, "--work-group", "5,5"])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: work-group (5, 5) is outside the launch of 2 x 2 "
                                 "work-groups")
    word = CliRunner().invoke(main, ["explain", "gemm-tiled", *sizes, "--work-group", "a"])
    assert word.exit_code == 2 and "error: --work-group a: give I or I,J" in word.stderr


def test_user_schedule_file(tmp_path):
    from pathlib import Path

    spec = f"{Path(__file__).parent.parent / 'examples' / 'rect_tile_gemm.py'}:make_schedule"
    sch = tt.build(spec, m=16, k=16, n=16)
    doc = tt.explain(sch, out=tmp_path / "p.html")
    sim = tt.simulate(sch, compute_values=False).counts
    assert (tmp_path / "p.html").is_file()
    for name in ("A", "B"):
        assert doc["reuse"][name]["total"] == sim.global_load_elems_by_buffer[name]
    assert doc["reuse"]["A"]["per_element_closed_form"] is None   # not a family


def test_observer_needs_every_work_group():
    from tiletraffic.simulator.engine.accelerators import Accelerators
    from tiletraffic.simulator.observers.explain import ExplainObserver, MemoryParams

    with pytest.raises(ValueError, match="work-group classes"):
        tt.simulate(tt.build("gemm-tiled", m=16, k=16, n=16, tile=8), compute_values=False,
                    accelerators=Accelerators(work_group_classes=True),
                    observers=[ExplainObserver(0, MemoryParams())])
    assert np.array_equal(  # the default work-group of a clean launch is 0
        explain_data(tt.build("gemm-naive", m=8, k=8, n=8, tile=4))["work_group"]["id"],
        [0, 0])


def test_report_html_links_the_pairs_and_renders_from_json_only(tmp_path, monkeypatch):
    from tiletraffic.analysis.explain import report_pages
    from tiletraffic.simulator.model.prediction import bound_name

    assert report_pages.write_report_html(tmp_path) is None      # no documents: nothing
    paths = report_pages.observe_pages(tmp_path)
    assert [p.name for p in paths] == [f"{f}.json" for f, _, _ in report_pages.PAGES]

    def no_simulator(*a, **k):
        raise AssertionError("rendering must not simulate")

    import tiletraffic.simulator.engine.simulation
    monkeypatch.setattr(tiletraffic.simulator.engine.simulation, "simulate", no_simulator)
    monkeypatch.setattr(report_pages, "explain_data", no_simulator)
    html = report_pages.write_report_html(tmp_path).read_text()
    for family in ("gemm-naive", "gemm-tiled", "matvec-naive", "matvec-local"):
        assert f'href="explain/{family}.html"' in html
        page = (tmp_path / "explain" / f"{family}.html").read_text()
        doc = json.loads((tmp_path / "explain" / f"{family}.json").read_text())
        assert embedded(page) == doc
    assert "A: 32, B: 32" in html and "A: 2, B: 2" in html     # N = M = 32, B = 16
    # a GEMM's tile, a matrix-vector product's work-group size; the bound as the product
    # names it (L1, DRAM), not the key the documents hold (l1_s)
    assert "M = 32, K = 32, N = 32, tile 16" in html
    assert "M = 64, K = 64, work-group size 16" in html and "K = 64, tile" not in html
    for family in ("gemm-naive", "gemm-tiled", "matvec-naive", "matvec-local"):
        key = json.loads((tmp_path / "explain" / f"{family}.json").read_text())["time"]["bound"]
        row = html.split(f'href="explain/{family}.html"')[1].split("</tr>")[0]
        assert row.endswith(f'<td class="l">{bound_name(key.removesuffix("_s"))}</td>'), row
    assert '<td class="l">l1</td>' not in html and '<td class="l">L1</td>' in html


def test_launch_file_through_the_resolver(tmp_path):
    from pathlib import Path

    launch = str(Path(__file__).parent.parent / "examples" / "opencl" / "mm_tiled.toml")
    out = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["explain", launch, "--set", "N=32", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = embedded(out.read_text())
    sim = cli_json("simulate", launch, "--set", "N=32", "--counts-only")
    for name in ("A", "B"):
        assert doc["reuse"][name]["total"] == sim["global_load_elems_by_buffer"][name]
    too_big = CliRunner().invoke(main, ["explain", launch, "--out", str(out)])
    assert too_big.exit_code == 2
    assert too_big.output.strip().splitlines()[-1].endswith(
        "use --set N=64 or less (options: main explain --help)")


def test_a_launch_of_too_many_work_groups_is_refused():
    import dataclasses

    from tiletraffic.analysis.explain import check_size

    sch = tt.build("gemm-naive", m=64, k=8, n=64, tile=1)       # 4096 work-groups: drawn
    check_size(sch)
    wide = dataclasses.replace(sch, global_size=(128, 64))      # 8192: refused
    with pytest.raises(ExplainSizeError, match="8192 work-groups: .* at most 4096"):
        check_size(wide)


@pytest.mark.parametrize("family, sizes", [
    ("matvec-local-whole", dict(m=40, k=1, tile=32)),     # one load, held to the end
    ("matvec-local", dict(m=40, k=33, tile=32)),          # a last chunk of one word
    ("matvec-rows-reduce", dict(m=40, k=33, tile=32, wg_rows=2)),  # loads, then barriers
    ("gemm-register-blocked", dict(m=32, k=32, n=32)),    # loads merged across iterations
])
def test_loads_a_merging_model_holds_are_counted_per_statement(family, sizes):
    # nvidia-h200-cuda merges consecutive local loads: the loads it holds for merging are
    # counted when a store, a barrier or the end comes, in every statement's counts too
    data = explain_data(tt.build(family, **sizes), "nvidia-h200-cuda")
    model = tt.model(tt.build(family, **sizes), "nvidia-h200-cuda").memory
    for key in ("local_load_requests", "local_load_wavefronts"):
        assert data["memory"][key] == getattr(model, key) > 0, key
    assert data["memory"]["local_bank_conflicts"] == model.local_bank_conflicts
    for sample in data["samples"]:
        if sample["space"] == "local" and sample["direction"] == "load":
            assert sample["figures"]["local_load_requests"] == 1, sample["site"]


def test_a_page_of_a_faulty_kernel_is_written_and_exits_1(tmp_path):
    out = tmp_path / "no-guards.html"
    result = CliRunner().invoke(main, ["explain", "gemm-tiled:no-guards", "--out", str(out)])
    assert result.exit_code == 1, result.output           # a fault found, as simulate says
    assert "hazard(s) drawn" in result.output
    assert embedded(out.read_text())["hazards"]
    clean = CliRunner().invoke(main, ["explain", "gemm-tiled", "--m", "16", "--k", "16",
                                      "--n", "16", "--tile", "4", "--out", str(out)])
    assert clean.exit_code == 0, clean.output


def test_the_size_hint_names_every_size_over_the_limit(tmp_path):
    result = CliRunner().invoke(main, ["explain", "matvec-naive", "--out",
                                       str(tmp_path / "m.html")])
    assert result.exit_code == 2
    assert "A is 300 x 300" in result.output and "use --m 64 --k 64 or less" in result.output
    followed = CliRunner().invoke(main, ["explain", "matvec-naive", "--m", "64", "--k", "64",
                                         "--out", str(tmp_path / "m.html")])
    assert followed.exit_code == 0, followed.output


def test_a_kernel_without_memory_accesses_gets_a_page(tmp_path):
    (tmp_path / "e.cl").write_text("__kernel void k(__global const float *A, "
                                   "__global float *B) { }\n")
    (tmp_path / "e.toml").write_text(
        'source = "e.cl"\nkernel = "k"\n[launch]\nglobal_size = [64]\nlocal_size = [16]\n'
        '[args]\nA = { shape = [64], access = "in" }\nB = { shape = [64], access = "out" }\n')
    out = tmp_path / "e.html"
    result = CliRunner().invoke(main, ["explain", str(tmp_path / "e.toml"), "--out", str(out)])
    assert result.exit_code == 1, result.output    # its output B is never written: a fault
    doc = embedded(out.read_text())
    assert doc["memory"]["global_load_requests"] == 0 == doc["memory"]["local_bank_conflicts"]
    assert {h["kind"] for h in doc["hazards"]} == {"unwritten-output"}


@pytest.mark.parametrize("value_s, text", [
    (8.587e-10, "0.859 ns"), (9.997e-10, "1 ns"), (1.707e-9, "1.71 ns"), (3.192e-7, "319 ns"),
    (1.1e-6, "1.1 µs"), (3e-6, "3 µs"), (0.0125, "12.5 ms"), (999.7, "1,000 s"), (0.0, "0 s"),
    (4.2e-13, "4.2e-13 s"),
])
def test_seconds_are_short_text_with_a_unit(value_s, text):
    from tiletraffic.analysis.explain.svg import seconds

    assert seconds(value_s) == text


def test_time_table_shows_each_term_as_short_text_with_its_unit():
    from html.parser import HTMLParser

    from tiletraffic.analysis.explain.svg import seconds

    doc = explain_data(tt.build("gemm-tiled", m=32, k=32, n=32, tile=16))

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.cells, self.inside = [], False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "td" and ("class", "num") in attrs
            if self.inside:
                self.cells.append([dict(attrs)["title"], ""])

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                self.cells[-1][1] += data

    reader = Cells()
    reader.feed(render_page(doc))
    shown = {float(title.removesuffix(" s")): text for title, text in reader.cells}
    assert len(shown) >= 5
    for value_s in doc["time"]["terms_s"].values():
        assert shown[float(f"{value_s:.6g}")] == seconds(value_s)
    assert not [text for text in shown.values() if "e-" in text or "e+" in text]


def test_bank_picture_is_wide_enough_for_its_captions():
    from tiletraffic.analysis.explain.svg import LABEL_CHAR_PX, bank_picture

    sample = {"lanes": list(range(8)), "elements": [[32 * lane] for lane in range(8)],
              "sub_group": 0}
    svg = bank_picture(sample, banks=16, bank_bytes=4)
    caption = "banks 0-15: one column each, one row per distinct word"
    assert f">{caption}</text>" in svg and ">8 rows = 8 wavefronts</text>" in svg
    width = float(re.search(r'width="([0-9.]+)"', svg).group(1))
    assert width >= LABEL_CHAR_PX * len(caption)


NAIVE_TRANSPOSE = """
__kernel void transpose_naive(__global const float *A, __global float *B, const int N)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    B[x * N + y] = A[y * N + x];
}
"""


def test_coalescing_draws_a_store_request_as_a_load_request():
    """A naive transpose at N = 64, work-groups of 32 x 8: a sub-group's loads read one
    row of A (4 sectors), its stores write one column of B (32 sectors in 32 lines)."""
    sch = tt.from_opencl(NAIVE_TRANSPOSE, "transpose_naive", (64, 64), (32, 8),
                         {"A": {"shape": ("N", "N"), "access": "in"},
                          "B": {"shape": ("N", "N"), "access": "out"}, "N": 64})
    doc = explain_data(sch)
    store = next(s for s in doc["samples"] if s["direction"] == "store")
    assert store["elements"] == [[lane * 64] for lane in range(32)]
    assert store["figures"]["global_store_sectors"] == 32
    assert store["figures"]["global_store_lines"] == 32
    html = render_page(doc)
    section = html[html.index('<section id="coalescing">'):]
    section = section[:section.index("</section>")]
    assert "one load or store instruction of one sub-group" in section
    assert section.count('<svg class="coalescing load"') == 1
    assert section.count('<svg class="coalescing store"') == 1
    drawn = re.search(r'<svg class="coalescing store".*?</svg>', section, re.S).group(0)
    assert drawn.count('class="sector touched"') == 32
    assert "(store of B)" in section and 'data-sectors="32"' in section
    model = tt.model(sch, "nvidia-h200").memory
    requests, sectors = model.global_store_requests, model.global_store_sectors
    assert (requests, sectors) == (128, 4096)
    assert (f"makes {requests} store requests for {sectors:,} sectors: <b>32.00 sectors per "
            "request</b>") in section
    assert (f"All global stores of the launch: {requests} requests, {sectors:,} sectors, "
            "32.00 sectors per request.") in section


def test_time_terms_and_methods_show_their_names_not_their_keys(tiled):
    """The time table, the bars and the methods name the terms as the product does (L1,
    barrier latency, DRAM read bytes); the embedded document keeps its keys."""
    from tiletraffic.simulator.model.prediction import method_text, term_name

    html = render_page(tiled)
    page = html.split('<script type="application/json"')[0]
    time = tiled["time"]
    for key in time["terms_s"]:
        assert f">{term_name(key)}{' (bound)' if key == time['bound'] else ''}</td>" in page
        # (the guessed values' column names device-model fields, as model files spell them)
        assert f'<td class="l">{key}' not in page and f">{key} (bound)" not in page, key
        assert f'class="small">{key}' not in page, key          # the bars' labels
    assert term_name("l1_s") == "L1" and term_name("barrier_latency_s") == "barrier latency"
    assert method_text("dram_read_bytes", "dram: compulsory") == "DRAM read bytes: compulsory"
    assert method_text("l2_read_sectors", "l1: per-work-group footprint") == \
        "L2 -> L1 sectors: per-work-group footprint"
    methods = page.split("Methods: ")[1].split("</p>")[0]
    assert "dram_read_bytes" not in methods and "dram: " not in methods
    assert "DRAM read bytes: " in methods
    assert embedded(html)["time"]["terms_s"].keys() == time["terms_s"].keys()


def _committed_documents(tmp_path):
    """The explain documents of the committed PoCL report, copied under ``tmp_path``."""
    from pathlib import Path

    committed = Path(__file__).resolve().parent.parent / "reports" / "pocl-cpu-amd-epyc"
    (tmp_path / "explain").mkdir()
    for doc in (committed / "explain").glob("*.json"):
        (tmp_path / "explain" / doc.name).write_bytes(doc.read_bytes())
    (tmp_path / "results.json").write_bytes((committed / "results.json").read_bytes())
    return tmp_path / "explain"


def test_documents_without_derived_closed_forms_render_without_them(tmp_path):
    """A document without ``closed_form_derived`` or ``closed_form`` (optional parts)
    renders its page with those parts left out; a document with them shows them."""
    from tiletraffic.analysis.explain import report_pages

    folder = _committed_documents(tmp_path)
    for path in folder.glob("*.json"):
        doc = json.loads(path.read_text())
        doc.pop("closed_form_derived", None)
        if path.stem == "gemm-naive":
            doc.pop("closed_form", None)
        path.write_text(json.dumps(doc))
    assert report_pages.write_report_html(tmp_path) == tmp_path / "report.html"
    for path in folder.glob("*.json"):
        page = path.with_suffix(".html").read_text()
        assert embedded(page) == json.loads(path.read_text())
        assert "Closed forms derived from the kernel" not in page
    naive = (folder / "gemm-naive.html").read_text()
    assert '<td class="l">global_load_elems</td><td>65,536</td><td>-</td>' in naive
    with_forms = dict(json.loads((folder / "gemm-naive.json").read_text()),
                      closed_form_derived={"sizes": {"N": 32}, "forms": {
                          "global_load_elems": "2*N^3"}, "not_derived": {}})
    page = render_page(with_forms)
    assert "Closed forms derived from the kernel" in page and "<code>2*N^3</code>" in page


def test_a_document_missing_a_drawn_part_is_bad_input_naming_the_file(tmp_path):
    from tiletraffic.analysis.explain import report_pages
    from tiletraffic.analysis.files import ResultsFileError

    folder = _committed_documents(tmp_path)
    doc = json.loads((folder / "gemm-tiled.json").read_text())
    del doc["time"]
    (folder / "gemm-tiled.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"gemm-tiled\.json: .*\(time missing\)"):
        report_pages.write_report_html(tmp_path)
    result = CliRunner().invoke(main, ["report", "--render", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "gemm-tiled.json" in result.output and "time missing" in result.output
    doc["time"], doc["steps"] = {"terms_s": {}}, 5        # present, of another shape
    (folder / "gemm-tiled.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["report", "--render", str(tmp_path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "gemm-tiled.json" in result.output and "Traceback" not in result.output
