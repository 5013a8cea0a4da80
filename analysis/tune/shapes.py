"""Several GEMM shapes in one tuning command: ``tiletraffic tune gemm --shapes FILE``.

The shapes file is TOML, one ``[[shape]]`` table per GEMM C = A·B (A M×K, B K×N)::

    [[shape]]
    m = 4096
    n = 4096
    k = 1024
    name = "attention output, batch 8"   # optional, shown in the summary

Every shape is tuned as ``tune gemm --m M --n N --k K`` tunes it, with the same options,
into its own results file ``<out folder>/gemm-MxNxK.json`` (``gemm-MxNxK-float16.json``,
``gemm-MxNxK-batch8.json`` for half storage or a batch; resumable one by one); the
candidates of every shape are modelled together and the chosen ones measured together
(:mod:`analysis.tune.sweep`), in one process or on a Ray cluster.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from tiletraffic.analysis.files import FolderLock, held
from tiletraffic.analysis.tune.options import TuneError, TuneOptions

MOST_SHAPES = 1000
"""Most shapes one file may hold."""
KEYS = ("m", "n", "k", "name")


@dataclass(frozen=True)
class Shape:
    """One GEMM of a shapes file: its sizes and optional name."""

    m: int
    n: int
    k: int
    name: str | None = None

    @property
    def sizes(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def file_name(self) -> str:
        """Its results file's name: ``gemm-MxNxK.json``."""
        return self.results_file_name()

    def results_file_name(self, suffix: str = "") -> str:
        """Its results file's name for a problem of ``suffix``
        (:attr:`analysis.tune.options.TuneOptions.results_suffix`):
        ``gemm-MxNxK.json``, ``gemm-MxNxK-float16.json``, ..."""
        return f"gemm-{self.m}x{self.n}x{self.k}{suffix}.json"


def read_shapes(path) -> list[Shape]:
    """The shapes of the file ``path`` (module docstring), in its order.

    Raises:
        TuneError: the file cannot be read or is not TOML; no ``[[shape]]``; more than
            :data:`MOST_SHAPES`; a shape with an unknown key, a size that is not a positive
            integer, a name that is not a string; a shape given twice. One line naming the
            file, the shape (from 1) and the value.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise TuneError(f"--shapes {path}: cannot be read ({err.strerror or err})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise TuneError(f"--shapes {path}: not a TOML file ({' '.join(str(err).split())})"
                        ) from None
    tables = data.get("shape")
    extra = sorted(set(data) - {"shape"})
    if extra:
        raise TuneError(f"--shapes {path}: unknown key {extra[0]!r}: the file holds "
                        "[[shape]] tables (m, n, k, name)")
    if not isinstance(tables, list) or not tables:
        raise TuneError(f"--shapes {path}: no [[shape]] table (each gives m, n and k)")
    if len(tables) > MOST_SHAPES:
        raise TuneError(f"--shapes {path}: {len(tables)} shapes; at most {MOST_SHAPES}")
    shapes: list[Shape] = []
    for place, table in enumerate(tables, 1):
        where = f"--shapes {path}: shape {place}"
        if not isinstance(table, dict):
            raise TuneError(f"{where}: must be a [[shape]] table")
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise TuneError(f"{where}: unknown key {unknown[0]!r} (a shape has m, n, k and "
                            "an optional name)")
        for key in ("m", "n", "k"):
            value = table.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TuneError(f"{where}: {key} must be a positive integer, not "
                                f"{'missing' if value is None else repr(value)}")
        name = table.get("name")
        if name is not None and not isinstance(name, str):
            raise TuneError(f"{where}: name must be a string, not {name!r}")
        shape = Shape(table["m"], table["n"], table["k"], name)
        if any(s.sizes == shape.sizes for s in shapes):
            raise TuneError(f"{where}: M={shape.m} N={shape.n} K={shape.k} is given twice")
        shapes.append(shape)
    return shapes


def tune_shapes(options: TuneOptions, shapes: list[Shape], out_dir) -> list:
    """Tune every shape of ``shapes`` as ``options`` asks (its own sizes and output file
    ``out_dir/gemm-MxNxK<suffix>.json``, the suffix naming a batch or half storage:
    :attr:`TuneOptions.results_suffix`; ``options.m``, ``n``, ``k`` and ``out`` are
    replaced).

    Returns:
        The :class:`analysis.tune.tuner.TuneResult` of each shape, in order.

    Raises:
        as :func:`analysis.tune.tuner.tune` (TuneError before any work: a shape without a
        valid candidate, a results file a resumed tuning does not match);
        TuneInterrupted: Ctrl-C (every file saved; ``.results``: every shape's).
    """
    from tiletraffic.analysis.tune import sweep, tuner
    from tiletraffic.analysis.tune.engine import engine_for

    out_dir = Path(out_dir)
    each = [dataclasses.replace(options, m=s.m, n=s.n, k=s.k,
                                out=str(out_dir / s.results_file_name(options.results_suffix)))
            for s in shapes]
    with engine_for(options.cluster, options.jobs, options.device_workers,
                    options.say) as engine:
        setup = tuner.prepare(options, engine)
        screened = [tuner.screened(o, setup) for o in each]   # every shape before any file
        with contextlib.ExitStack() as locks:   # each results file, in one order
            for path in sorted({o.out for o in each}):
                locks.enter_context(held(FolderLock.of_file(path), f"tuning results {path}",
                                         options.say))
            tunings = [tuner.start(o, setup, valid, rejected, shape=i)
                       for i, (o, (valid, rejected)) in enumerate(zip(each, screened))]
            try:
                sweep.run_tunings(tunings, setup, options, tuner.predict_with)
            except KeyboardInterrupt:
                err = tuner.TuneInterrupted(out_dir, tunings[0].result)
                err.results = [t.result for t in tunings]
                raise err from None
    return [t.result for t in tunings]


def table(shapes: list[Shape], results: list) -> str:
    """One line per shape: its sizes (and name), candidates valid, modelled and measured,
    the model's pick and the best measured with the regret, and its results file."""
    lines = [f"{'M x N x K':>20s}  {'valid':>5s} {'measured':>8s}  {'pick':48s} "
             f"{'regret':>8s}  file"]
    for shape, res in zip(shapes, results):
        s = res.summary
        pick = s.get("pick") or (res.predictions[0] if res.predictions else None)
        regret = "-" if s.get("regret_ratio") is None else f"{s['regret_ratio']:.3f}x"
        label = pick["label"] if pick else "none"
        lines.append(f"{f'{shape.m}x{shape.n}x{shape.k}':>20s}  {s['valid']:>5d} "
                     f"{s['measured_ok'] + s['measured_failed']:>8d}  "
                     f"{label:48s} {regret:>8s}  {res.path}"
                     + (f"  ({shape.name})" if shape.name else ""))
    return "\n".join(lines) + "\n"
