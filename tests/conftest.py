"""Test configuration: the hypothesis profile "ci" (no deadline, 30 examples) is the default.

Choose another profile with ``HYPOTHESIS_PROFILE=<name>`` ("thorough": 300 examples).
"""
from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=30)
settings.register_profile("thorough", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
