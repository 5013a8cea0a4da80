"""A value read from a user's file as a one-line message shows it: in the file format's
words (TOML's or JSON's), never a Python repr. The helper lives beside the device-model
files' checks (:mod:`tiletraffic.simulator.file_values`), which use it too."""
from __future__ import annotations

from tiletraffic.simulator.file_values import LONGEST, shown  # noqa: F401  (re-exported)
