"""The accelerators' environment switches are read by the command line only
(analysis.environment): ``0`` turns an accelerator off, anything else leaves it as given; the
library's defaults ignore the environment."""
from __future__ import annotations

from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis import environment
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.cli import simulate as simulate_command
from tiletraffic.simulator.engine.accelerators import ALL, Accelerators, private_nest


def test_zero_turns_an_accelerator_off_and_nothing_else_does():
    assert environment.accelerators(ALL, {}) == ALL
    assert environment.accelerators(ALL, {"TILETRAFFIC_LOOP_BLOCKS": "1",
                                          "TILETRAFFIC_PRIVATE_NESTS": "yes"}) == ALL
    off = environment.accelerators(ALL, {"TILETRAFFIC_LOOP_BLOCKS": "0"})
    assert off == ALL.replace(loop_blocks=False)
    both = environment.accelerators(Accelerators(work_group_classes=True),
                                    {"TILETRAFFIC_LOOP_BLOCKS": "0",
                                     "TILETRAFFIC_PRIVATE_NESTS": "0"})
    assert both == Accelerators(work_group_classes=True, private_nests=False,
                                loop_blocks=False)


def test_the_command_line_passes_the_switches_and_the_library_ignores_them(monkeypatch):
    """``simulate --counts-only`` of a small launch counts with the default accelerators the
    environment leaves on: ``TILETRAFFIC_PRIVATE_NESTS=0`` turns the private nests off."""
    seen = []
    real_count = simulate_command.count_launch

    def spy(*args, accelerators=None, **kw):
        seen.append(accelerators)
        return real_count(*args, accelerators=accelerators, **kw)

    monkeypatch.setattr(simulate_command, "count_launch", spy)
    monkeypatch.setenv("TILETRAFFIC_PRIVATE_NESTS", "0")
    result = CliRunner().invoke(main, ["simulate", "gemm-register-blocked", "--m", "16",
                                       "--k", "16", "--n", "16", "--counts-only", "--json"])
    assert result.exit_code == 0, result.output
    assert seen == [Accelerators(private_nests=False)]
    real = tt.simulate
    # the library, same environment: its default runs the private nests
    applied = []
    ready = private_nest.ready
    monkeypatch.setattr(private_nest, "ready",
                        lambda *a: applied.append(ready(*a)) or applied[-1])
    sch = tt.build("gemm-register-blocked", m=16, k=16, n=16)
    fast = real(sch, compute_values=False)
    assert any(plan is not None for plan in applied)
    slow = real(sch, compute_values=False, accelerators=Accelerators(private_nests=False))
    assert fast.counts.to_dict() == slow.counts.to_dict()
