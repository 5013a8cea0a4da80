"""Every committed H200 ``dram__bytes_write.sum`` next to the model's DRAM writes (issue #14,
item 3): the write-back model (:func:`simulator.model.dram.dram_writes_write_back`, what
``predict`` reports) and the rule it replaced (nothing while inputs + outputs fit in L2,
else the whole output), on the counters' model (nvidia-h200-cuda: the counters were read
from the CUDA build; DRAM bytes do not depend on the build), and the write-back with one L2
partition (no copies) and at the queried L2 size (60 MiB, the model keeps the documented
50 MiB).

No GPU needed: the predictions are computed here, the measurements read from
``reports/nvidia-h200/**.json.gz`` (every record with counters, each launch once: a
schedule and size measured in several runs is listed per run).

    python -m experiments.h200.write_back.table [--out FILE.json] [--max-n 6144]
"""
from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from experiments.h200.hardware import modelled_launch
from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.model.dram import dram_writes_write_back
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES

from experiments.h200.data import REPORT, read_json

QUERIED_L2_BYTES = 62_914_560
"""``device__attribute_l2_cache_size`` of the H200 in every committed Nsight Compute CSV
(reports/nvidia-h200/matvec/extras.tar.gz, ncu-raw.csv): 60 MiB."""

SOURCES = ("h200_raw.json.gz", "holdout/h200_raw.json.gz", "matvec/h200_matvec.json.gz",
           "matvec/busy_sms_clocks/h200_matvec.json.gz", "codegen/h200_codegen.json.gz",
           "l1_pipe/h200_codegen.json.gz", "l1_pipe/holdout/h200_codegen.json.gz")


def records(report: Path = REPORT):
    """(source, record) for every counter record with ``dram__bytes_write.sum``."""
    for name in SOURCES:
        path = report / name
        if not path.exists():
            continue
        data = read_json(path)
        for key in ("counters", "counters_cubin"):
            for rec in (data.get(key) or {}).get("records", []):
                value = rec.get("metrics", {}).get("dram__bytes_write.sum", {}).get("value")
                if isinstance(value, (int, float)):
                    yield name, rec, float(value)


VARIANTS = {"one_partition": (None, 1), "at_queried_l2": (QUERIED_L2_BYTES, None),
            "at_queried_l2_one_partition": (QUERIED_L2_BYTES, 1)}
"""Other write-back figures of the same simulated launch: (L2 bytes, partitions), ``None``
keeping the model's value."""


def write_predictions(rec: dict, model) -> dict:
    """The model's DRAM writes for one record: reported (write-back), the old rule (0 while
    inputs + outputs fit in L2, else the output), and the :data:`VARIANTS`."""
    launch = modelled_launch(rec["schedule"], rec["m"], rec["k"], rec.get("n"), rec["tile"],
                             model)
    p = launch.prediction
    schedule = schedules.build(rec["schedule"], rec["m"], rec["k"], rec.get("n"), rec["tile"])
    pv = schedule.param_values
    sizes = {a.name: int(np.prod([pv[d] for d in a.shape])) * FLOAT_BYTES
             for a in schedule.arrays}
    inputs = sum(v for a, v in sizes.items() if schedule.array(a).is_input)
    outputs = sum(v for a, v in sizes.items() if schedule.array(a).is_output)
    row = {"inputs_bytes": inputs, "outputs_bytes": outputs, "predicted": p.dram_write_bytes,
           "method": p.methods["dram_write_bytes"],
           "old_rule": 0 if inputs + outputs <= model.l2_bytes else outputs}
    for key, (l2, partitions) in VARIANTS.items():
        row[key] = round(dram_writes_write_back(
            launch.buffers, outputs, launch.counts.work_groups, schedule.num_groups[0],
            l2 or model.l2_bytes, model.l2_associativity, partitions or model.l2_partitions))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--max-n", type=int, default=None,
                    help="leave out GEMMs above this size (they take minutes to model)")
    a = ap.parse_args(argv)
    model = DEVICE_MODELS["nvidia-h200-cuda"]
    rows = []
    warnings.simplefilter("ignore")
    cols = ("predicted", "old_rule", *VARIANTS)
    print("| source | case | inputs MB | outputs MB | measured MB | "
          + " | ".join(f"{c} MB (error)" for c in cols) + " |")
    print("|---" * (5 + len(cols)) + "|")
    for name, rec, measured in records():
        if a.max_n and rec["schedule"].startswith("gemm") and rec["m"] > a.max_n:
            continue
        row = {"source": name, "id": rec["id"], "measured": measured,
               **write_predictions(rec, model)}
        rows.append(row)

        def cell(x):
            e = f"{(x - measured) / measured:+.1%}" if measured else "—"
            return f"{x / 1e6:.3f} ({e})"
        print(f"| {name} | {rec['id']} | {row['inputs_bytes'] / 1e6:.1f} | "
              f"{row['outputs_bytes'] / 1e6:.3f} | {measured / 1e6:.3f} | "
              + " | ".join(cell(row[c]) for c in cols) + " |", flush=True)
        if a.out:
            a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
