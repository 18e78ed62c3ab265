"""The version of dpaudit and the record of the software a run used."""

from __future__ import annotations

import importlib
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from dpaudit._core.streams import STREAMS

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


def audit_metadata(mechanism: Any, pair: Any, attack: Any, exact: bool) -> dict[str, Any]:
    """The JSON-ready record of what an audit audited and with which software.

    Parameters
    ----------
    mechanism, pair, attack:
        The audited objects: names, classes and ``params()`` are recorded, and
        ``pair.to_dict()``.
    exact:
        Whether the attack's score is the exact privacy loss of the mechanism on the pair.
    """
    params = mechanism.params() if callable(getattr(mechanism, "params", None)) else {}
    engine_streams = ("fit", "pilot", "selection", "evaluation", "probe")
    return {
        "mechanism": {
            "name": getattr(mechanism, "name", type(mechanism).__name__),
            "class": type(mechanism).__name__,
            "params": params,
        },
        "attack": {
            "name": attack.name,
            "class": type(attack).__name__,
            "params": attack.params(),
            "exact_privacy_loss": bool(exact),
        },
        "pair": pair.to_dict(),
        "versions": versions(libraries=("numpy",)),
        "random": {
            "bit_generator": "PCG64",
            "streams": "SeedSequence(seed, spawn_key=(stream, chunk)); streams "
            + ", ".join(f"{STREAMS[name]} {name}" for name in engine_streams),
        },
    }
