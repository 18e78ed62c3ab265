"""The version of dpaudit and the record of the software a run used."""

from __future__ import annotations

import importlib
import platform
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpaudit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

_LIBRARIES = ("numpy", "scipy", "matplotlib")


def versions(*, libraries: tuple[str, ...] = _LIBRARIES) -> dict[str, str]:
    """Versions of dpaudit, Python, the platform and ``libraries`` (those installed).

    Parameters
    ----------
    libraries:
        Importable names whose ``__version__`` is recorded; a library that is not installed is
        left out rather than imported as a failure.
    """
    out = {
        "dpaudit": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    for name in libraries:
        try:
            out[name] = str(importlib.import_module(name).__version__)
        except ImportError:
            continue
    return out
