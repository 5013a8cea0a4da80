"""Options that would be ignored in the combination given are refused (exit 2, one line naming
the option and why), through the one helper ``analysis.cli.common.refuse_unused``; the same
options where they have an effect are taken."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = str(ROOT / "examples" / "opencl" / "mm_tiled.toml")
SMALL = ("--m", "8", "--k", "8", "--n", "8")
BIG = ("--m", "512", "--k", "512", "--n", "512")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@pytest.mark.parametrize("args, options, why", [
    (("simulate", "gemm-tiled", *SMALL, "--device-model", "nvidia-h200", "--seed", "3"),
     ["--seed"], "with --device-model"),
    (("simulate", "gemm-tiled", *SMALL, "--device-model", "generic-gpu", "--values",
      "--no-limits", "--hazards", "report", "--inputs", "ones"),
     ["--values", "--no-limits", "--hazards", "--inputs"], "with --device-model"),
    (("simulate", "gemm-tiled", *SMALL, "--counts-only", "--inputs", "arange"),
     ["--inputs"], "with --counts-only"),
    (("simulate", "gemm-tiled", *BIG, "--seed", "1"), ["--seed"], "add --values"),
    (("simulate", "gemm-tiled", *SMALL, "--inputs", "ones", "--seed", "1"), ["--seed"],
     "with --inputs ones: the inputs are not random"),
    (("check", "gemm-tiled", "--inputs", "arange", "--seed", "1"), ["--seed"],
     "with --inputs arange"),
    (("check", "--all", "--inputs", "ones", "--seed", "1"), ["--seed"], "with --inputs ones"),
    (("run", "gemm-tiled", *SMALL, "--inputs", "arange", "--seed", "1", "--device", "pocl"),
     ["--seed"], "give --inputs normal or uniform"),
    (("simulate", "gemm-tiled", *SMALL, "--max-registers", "64"), ["--max-registers"],
     "without --device-model"),
    (("check", "gemm-tiled", "--max-registers", "64"), ["--max-registers"], "in check"),
    (("check", "--all", "--m", "64", "--tm", "4"), ["--m", "--tm"], "with --all"),
    (("check", "--all", "--no-limits"), ["--no-limits"], "with --all"),
    (("check", "--all", "--force"), ["--force"], "with --all"),
    (("crosscheck", "--all", "--tile", "8"), ["--tile"], "with --all"),
    (("crosscheck", "gemm-tiled", "--max-registers", "64"), ["--max-registers"],
     "in crosscheck"),
    (("explain", "gemm-tiled", *SMALL, "--step-iterations", "2", "--out", "{tmp}/p.html"),
     ["--step-iterations"], "barrier interval"),
    (("report", "--render", "{tmp}/r", "--device", "pocl", "--quick"),
     ["--device", "--quick"], "with --render"),
    (("report", "--render", "{tmp}/r", "-r", "20"), ["--repeat"], "with --render"),
    (("validate", "--render", "{tmp}/v", "--rounds", "3"), ["--rounds"], "with --render"),
    (("validate", "--print-cases", "--out", "{tmp}/v", "--targets",
      str(ROOT / "analysis" / "validation" / "targets.toml")), ["--out", "--targets"],
     "with --print-cases"),
    (("validate", "--print-cases", "--quick", "--device", "pocl"), ["--device"],
     "with --print-cases and a case list"),
    (("validate", "--predict-only", "--device-model", "generic-gpu", "--repeat", "20",
      "--out", "{tmp}/p.json"), ["--repeat"], "with --predict-only"),
    (("validate", "--predict-only", "--device-model", "generic-gpu", "--device", "pocl",
      "--out", "{tmp}/p.json"), ["--device"], "with --predict-only"),
    (("tune", "gemm", *SMALL, "--top", "0", "--warmup", "3", "--rounds", "3",
      "--out", "{tmp}/t.json"), ["--warmup", "--rounds"], "with --top 0"),
    (("tune", "gemm", *SMALL, "--top", "0", "--recheck", "4", "--out", "{tmp}/t.json"),
     ["--recheck"], "no --device"),
    (("tune", LAUNCH, "--param", "TS=8", "--top", "0", "--device", "pocl", "--seed", "1",
      "--out", "{tmp}/t.json"), ["--device", "--seed"], "with --top 0"),
    (("tune", LAUNCH, "--param", "TS=8", "--top", "0", "-r", "20",
      "--out", "{tmp}/t.json"), ["--repeat"], "with --top 0"),
])
def test_an_option_without_effect_is_refused_naming_it(tmp_path, args, options, why):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = invoke(*args)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line.startswith(f"error: {', '.join(options)} ha") and " no effect " in line, line
    assert why in line, line
    assert list(tmp_path.iterdir()) == [], "refused before writing anything"


@pytest.mark.parametrize("args", [
    ("simulate", "gemm-tiled", *SMALL, "--seed", "1", "--inputs", "uniform", "--no-limits"),
    ("simulate", "gemm-tiled", *SMALL, "--inputs", "ones"),
    ("simulate", "gemm-tiled", *SMALL, "--counts-only", "--no-limits", "--hazards", "report"),
    ("simulate", "gemm-tiled", *BIG, "--counts-only"),
    ("simulate", "gemm-tiled", *SMALL, "--device-model", "generic-gpu", "--max-registers",
     "64"),
    ("model", "gemm-tiled", *SMALL, "--max-registers", "64"),
    ("check", "gemm-tiled", "--m", "20", "--k", "20", "--n", "20", "--no-limits", "--seed",
     "1"),
    ("check", "--all", "--seed", "1", "--inputs", "uniform"),
    ("explain", "gemm-naive", *SMALL, "--step-iterations", "2", "--out", "{tmp}/p.html"),
    ("tune", "gemm", *SMALL, "--top", "0", "--seed", "1", "--out", "{tmp}/t.json"),
    ("tune", LAUNCH, "--param", "TS=8", "--set", "N=32", "--top", "0", "--device-model",
     "generic-gpu", "--out", "{tmp}/t.json"),
])
def test_the_same_options_where_they_have_an_effect_are_taken(tmp_path, args):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = invoke(*args)
    assert res.exit_code == 0, (res.output, res.exception)
    assert "no effect" not in res.output


def test_every_refusal_of_an_unused_option_goes_through_the_one_helper():
    cli = ROOT / "analysis" / "cli"
    texts = {p.name: p.read_text() for p in cli.glob("*.py")}
    assert [name for name, text in texts.items() if "no effect" in text] == ["common.py"]
    assert sum("refuse_unused(" in text for text in texts.values()) >= 8
