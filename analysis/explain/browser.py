"""The browser explain pages are tested and photographed in: the system's headless Chromium
(Debian package ``chromium``) driven by Playwright (pip ``playwright``, in the test extra),
with no browser download. Used by ``tests/test_explain_browser.py`` and
``docs/explain/screenshots.py``.
"""
from __future__ import annotations

import os
import shutil

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
"""Chromium's flags: headless, no sandbox (CI runs as root), nothing reaching the network.
Playwright gives every launch a fresh profile (``--user-data-dir``)."""


def chromium_path() -> str | None:
    """``$TILETRAFFIC_CHROMIUM`` (when it names an executable; set but not one: ``None``),
    else ``chromium`` or ``chromium-browser`` on the PATH, else ``None``."""
    chosen = os.environ.get("TILETRAFFIC_CHROMIUM")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) and os.path.isfile(chosen) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def why_no_browser() -> str | None:
    """Why no browser can be driven here (one line), or ``None`` when one can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "no browser: needs playwright (pip install -e '.[test]')"
    if chromium_path() is None:
        return ("no browser: no chromium on the PATH or at $TILETRAFFIC_CHROMIUM "
                "(apt-get install chromium)")
    return None


def launch(playwright):
    """A headless Chromium of ``playwright`` (``sync_playwright()``'s object).

    Raises:
        RuntimeError: no Chromium found; playwright's errors when it does not start.
    """
    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium on the PATH (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=path, headless=True,
                                      args=list(CHROMIUM_FLAGS))
