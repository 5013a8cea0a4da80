"""``tiletraffic validate``: the model's predictions against a device, case by case.

- :mod:`.cases`: what is run (:class:`~.cases.Case`, the built-in case lists, case files);
- :mod:`.predict`: the model's prediction of each case, and the predictions file that
  pre-registers them before measuring;
- :mod:`.measure`: one checked, timed run of a schedule on an OpenCL device (every launch's
  result checked against float64 before its time counts), also behind ``tiletraffic run``;
- :mod:`.compare`: measured time and spread, and the model judged against the device (time
  errors, speedups, ranking, the targets);
- :mod:`.run`: the whole validation: predict, measure every case in rounds, compare, save
  ``validation.json``;
- :mod:`.render`: ``validation.md`` and its figure, from ``validation.json``.

The command itself is :mod:`tiletraffic.analysis.cli.validate`.
"""
