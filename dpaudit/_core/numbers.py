"""How dpaudit writes a number for people: significant digits, and the side a bound rounds to.

A bound is never overstated by its display: a lower bound is rounded down and an upper bound up
(``0.99983`` at least is shown as ``0.9998``, never as ``1``), so what is printed still holds.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from dpaudit._core.jsonvalues import from_json_value
from dpaudit._core.validation import check_choice

__all__ = ["ROUNDINGS", "format_number", "format_probability"]

#: How :func:`format_number` rounds: to the nearest, or towards ``-inf`` (a lower bound) or
#: ``+inf`` (an upper bound).
ROUNDINGS = ("nearest", "down", "up")

_MODES = {"down": ROUND_FLOOR, "up": ROUND_CEILING}


def _directed(x: float, text: str, step: Decimal, rounding: str) -> str | None:
    """``x`` rounded to a multiple of ``step`` towards ``rounding``, or ``None`` when ``text``
    (``x`` rounded to the nearest) already lies on that side of ``x``."""
    shown = float(text)
    if rounding == "nearest" or (shown <= x if rounding == "down" else shown >= x):
        return None
    return str(Decimal(x).quantize(step, rounding=_MODES[rounding]))


def format_number(value: Any, digits: int = 4, *, rounding: str = "nearest") -> str:
    """``value`` with ``digits`` significant digits; ``None`` as an em dash, infinity as ``∞``.

    ``rounding="down"`` (for a lower bound) never shows more than ``value``, ``"up"`` (for an
    upper bound) never less; ``"nearest"`` (the default) is for estimates and settings.
    """
    check_choice("rounding", rounding, ROUNDINGS)
    if value is None:
        return "—"
    x = from_json_value(value)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    text = f"{x:.{digits}g}"
    if x == 0:
        return text
    step = Decimal(1).scaleb(Decimal(x).adjusted() - digits + 1)
    directed = _directed(x, text, step, rounding)
    return text if directed is None else f"{float(directed):.{digits}g}"


def format_probability(value: Any, *, rounding: str = "nearest") -> str:
    """A probability: like :func:`format_number`, but a value just below 1 keeps two significant
    digits of its distance to 1 (``0.9999748``, not ``1``); ``rounding`` as there."""
    check_choice("rounding", rounding, ROUNDINGS)
    x = from_json_value(value)
    if x is not None and 0.99 < x < 1.0:
        places = math.ceil(-math.log10(1.0 - x)) + 2
        text = f"{x:.{places}f}"
        directed = _directed(x, text, Decimal(1).scaleb(-places), rounding)
        return text if directed is None else directed
    return format_number(value, rounding=rounding)
