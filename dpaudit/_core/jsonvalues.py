"""The one converter from Python and numpy values to JSON values.

``results.json``, the accountant audit's JSON and the spec echo in reports all go through
:func:`to_json_value`: mappings become objects with string keys, tuples and arrays become lists,
numpy scalars become plain numbers, and non-finite floats become the strings ``"inf"``, ``"-inf"``
and ``"nan"`` (JSON has no such numbers; :func:`from_json_value` reads them back), or ``null``
in the formats that have always written "no finite value" so (accountant audits, one-run audits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["NONFINITE", "UNKNOWN", "from_json_value", "json_leaf", "to_json_value"]

#: What :func:`to_json_value` does with a value that is not a JSON value: keep it as it is (the
#: caller's ``json.dumps`` decides), write its ``str`` (TOML dates and times), or raise.
UNKNOWN = ("keep", "str", "error")

#: What :func:`to_json_value` writes for an infinite or NaN float: its string, or ``None``.
NONFINITE = ("str", "null")


def json_leaf(value: Any) -> Any:
    """A numpy scalar or array as a plain Python value, for ``json.dumps(default=json_leaf)``.

    Raises
    ------
    TypeError
        For any other type (what ``json.dumps`` expects of its ``default``).
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json_value(value: Any, *, unknown: str = "keep", nonfinite: str = "str") -> Any:
    """``value`` as a JSON value (module docstring).

    Parameters
    ----------
    value:
        Nested mappings, sequences, numpy arrays and scalars, strings, numbers, ``None``.
    unknown:
        One of :data:`UNKNOWN`: what to do with any other value.
    nonfinite:
        One of :data:`NONFINITE`: what infinities and NaN become.
    """
    if unknown not in UNKNOWN:
        raise ValueError(f"unknown must be one of {', '.join(UNKNOWN)}; got {unknown!r}")
    if nonfinite not in NONFINITE:
        raise ValueError(f"nonfinite must be one of {', '.join(NONFINITE)}; got {nonfinite!r}")
    return _convert(value, unknown, nonfinite == "str")


def _convert(value: Any, unknown: str, nonfinite_str: bool) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _convert(v, unknown, nonfinite_str) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        # Fast path for the long lists of a record (counts, curves): plain ints, or finite
        # floats (x - x is 0 for those only), are JSON values already.
        if all(type(v) is int for v in value) or all(
            type(v) is float and v - v == 0.0 for v in value
        ):
            return list(value)
        return [_convert(v, unknown, nonfinite_str) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        out = float(value)
        if math.isfinite(out):
            return out
        return str(out) if nonfinite_str else None
    if isinstance(value, str) or value is None or unknown == "keep":
        return value
    if unknown == "str":
        return str(value)
    raise ValueError(f"{type(value).__name__} is not a JSON value")


def from_json_value(value: Any) -> float | None:
    """A number read from JSON: floats stay, ``"inf"``/``"-inf"``/``"nan"`` become floats,
    ``None`` stays ``None``."""
    if value is None:
        return None
    return float(value)
