"""Model predictions for the stride family, computed without a GPU and committed BEFORE the
device run (``created_utc`` earlier than the run's): ``tiletraffic.model(schedule,
"nvidia-h200")`` for every case of :mod:`experiments.h200.strides.cases`, with its time
terms, bound, DRAM bytes and any stride warning, written after each case (atomically; a run
stopped early keeps what it finished and a later run completes it).

    python -m experiments.h200.strides.predict --out reports/nvidia-h200/strides/predictions.json
    python -m experiments.h200.strides.predict --quick --out /tmp/strides-quick/predictions.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import time
import warnings
from pathlib import Path

from tiletraffic.analysis.files import atomic_write_text

from experiments.h200.strides import cases as C


def predict_case(case, model: str = "nvidia-h200") -> dict:
    """The model's figures for one case (no GPU)."""
    import tiletraffic

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = tiletraffic.model(C.build(case), model)
    p = m.prediction
    return {"id": C.case_id(case), "label": case[0], "family": case[1], "m": case[2],
            "k": case[3], "n": case[4], "tile": case[5],
            "stride_multiple_of_128_bytes": C.stride_multiple_of_line(case),
            "predicted_time_s": p.predicted_time_s, "bound": p.bound,
            "time_terms_s": p.time_terms_s, "dram_read_bytes": p.dram_read_bytes,
            "dram_write_bytes": p.dram_write_bytes, "methods": p.methods,
            "warnings": sorted({str(w.message) for w in caught
                                if "guess" not in str(w.message)}),
            "model_seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true", help="the PoCL rehearsal's tiny cases")
    p.add_argument("--device-model", default="nvidia-h200")
    a = p.parse_args(argv)
    todo = C.QUICK if a.quick else C.FULL
    a.out.parent.mkdir(parents=True, exist_ok=True)
    doc = json.loads(a.out.read_text()) if a.out.exists() else {
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "device_model": a.device_model, "quick": a.quick, "cases": {}}
    for case in todo:
        cid = C.case_id(case)
        if cid in doc["cases"]:
            continue
        doc["cases"][cid] = predict_case(case, a.device_model)
        atomic_write_text(a.out, json.dumps(doc, indent=1) + "\n")
        r = doc["cases"][cid]
        print(f"{cid}: {r['predicted_time_s'] * 1e3:.4f} ms ({r['bound']}), "
              f"{r['model_seconds']:.1f} s", flush=True)
    doc["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat()
    atomic_write_text(a.out, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
