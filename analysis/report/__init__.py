"""The main job's report (``tiletraffic report``)."""

DEFAULT_OUT_ROOT = "tiletraffic-reports"
"""Where a run writes its report folder unless told otherwise: relative to the current
folder, never the repository's committed reports (``reports/``)."""
