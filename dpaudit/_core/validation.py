"""Argument checks shared by every public constructor and function of dpaudit.

Each check raises ``ValueError`` naming the parameter, the value it got and the allowed range,
so that wrong input is refused at construction (docs/architecture.md#contracts). The module lives in
the plumbing layer ``dpaudit._core``, below every other part, so that every part may use it; the
old path ``dpaudit.bounds.validation`` still works.
"""

from __future__ import annotations

import math
import os
import stat
import tempfile
from numbers import Integral, Real
from pathlib import Path

import numpy as np

__all__ = [
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_integer",
    "check_choice",
    "check_n_jobs",
    "WORKERS_PER_CORE",
    "check_writable_directory",
    "check_input_file",
    "check_array_in_unit_interval",
    "check_eps_array",
    "scalar_like",
    "as_float_array",
    "real_scores",
]


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        out = float(value)
    except OverflowError:  # an integer beyond the float range, e.g. 10**400
        raise ValueError(
            f"{name} must be a real number within the float range (below 1.8e308), got an "
            f"integer of about 1e{int(int(value).bit_length() * math.log10(2))}"
        ) from None
    if math.isnan(out):
        raise ValueError(f"{name} must be a real number, got nan")
    return out


def check_real(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float; refuse NaN, non-numbers and (unless allowed) infinities."""
    out = _as_float(name, value)
    if not allow_inf and math.isinf(out):
        raise ValueError(f"{name} must be finite, got {out!r}")
    return out


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float in (0, inf) (or (0, inf] with ``allow_inf``)."""
    out = check_real(name, value, allow_inf=allow_inf)
    if out <= 0:
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"{name} must be in (0, {upper}, got {out!r}")
    return out


def check_nonnegative(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float in [0, inf) (or [0, inf] with ``allow_inf``)."""
    out = check_real(name, value, allow_inf=allow_inf)
    if out < 0:
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"{name} must be in [0, {upper}, got {out!r}")
    return out


def check_probability(
    name: str, value: object, *, low_open: bool = False, high_open: bool = False
) -> float:
    """Return ``value`` as a float in [0, 1], with either end optionally excluded."""
    out = check_real(name, value)
    too_low = out <= 0 if low_open else out < 0
    too_high = out >= 1 if high_open else out > 1
    if too_low or too_high:
        raise ValueError(f"{name} must be in {_unit_interval(low_open, high_open)}, got {out!r}")
    return out


def _unit_interval(low_open: bool, high_open: bool) -> str:
    return ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")


def check_integer(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int in [minimum, maximum]; floats such as ``1e6`` are accepted
    when they are whole numbers."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, Integral | np.integer):
        out = int(value)
    elif isinstance(value, Real | np.floating) and float(value).is_integer():
        out = int(value)
    else:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if out < minimum or (maximum is not None and out > maximum):
        upper = "inf)" if maximum is None else f"{maximum}]"
        raise ValueError(f"{name} must be an integer in [{minimum}, {upper}, got {out!r}")
    return out


def check_choice(name: str, value: object, choices: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


#: Most worker processes per core that ``n_jobs`` may ask for: more only costs memory (every
#: worker is a Python process), and a mistyped count must not start thousands of processes.
WORKERS_PER_CORE = 8


def check_n_jobs(name: str, value: object) -> int:
    """Return ``value`` as a number of parallel workers in joblib's convention: a positive
    integer of at most :data:`WORKERS_PER_CORE` per core of this machine, or a negative one
    counted from the number of cores (``-1`` all cores, ``-2`` all but one)."""
    try:
        out = check_integer(name, value, minimum=-(2**62))
    except ValueError:
        out = 0
    if out == 0:
        raise ValueError(
            f"{name} must be a non-zero integer (-1: all cores, -2: all but one), got {value!r}"
        )
    cores = os.cpu_count() or 1
    if out > WORKERS_PER_CORE * cores:
        raise ValueError(
            f"{name} must be at most {WORKERS_PER_CORE * cores} ({WORKERS_PER_CORE} worker "
            f"processes for each of this machine's {cores} cores; -1: all cores), got {value!r}"
        )
    return out


def check_input_file(path: str | os.PathLike[str], what: str = "file") -> Path:
    """Return ``path`` as a ``Path`` if it names a regular file (or a link to one).

    Refuses (``ValueError`` starting with the path) a missing path (``<path>: <what> not found``)
    and anything else that is not a regular file: a directory, or a FIFO or device, whose reading
    could block forever.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ValueError(f"{path}: {what} not found") from None
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise ValueError(f"{path}: cannot read the {what} ({reason})") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path}: the {what} is not a regular file")
    return path


def check_writable_directory(
    name: str, path: str | os.PathLike[str], *, replaced: bool = False
) -> Path:
    """Return ``path`` as a ``Path`` if a directory can be created, or written, there.

    Refuses (``ValueError`` naming ``name`` and ``path``) a path that exists and is not a
    directory, one under a file, and one whose nearest existing directory does not accept a new
    directory (read-only, ``/proc``, no permission): tried by creating and removing an empty
    directory there, so that the refusal comes before any work instead of after it. With
    ``replaced``, ``path`` is written as a whole beside itself (built in a sibling and renamed),
    so the place tried is its parent. Nothing is left behind.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path}: exists and is not a directory")
    place = path.parent if replaced else path
    while not place.exists() and place != place.parent:
        place = place.parent
    if place.exists() and not place.is_dir():
        raise ValueError(f"{name} {path}: {place} is a file, not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dpaudit-probe-", dir=place))
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise ValueError(
            f"{name} {path}: cannot create a directory in {place} ({reason})"
        ) from None
    return path


def as_float_array(name: str, value: object, expected: str = "an array of numbers") -> np.ndarray:
    """Return ``value`` as a float array; a value that is not numeric raises ``ValueError``
    saying that ``name`` must be ``expected`` (e.g. ``"a vector of query answers"``)."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be {expected}, got {type(value).__name__}") from exc


def real_scores(name: str, values: object) -> np.ndarray:
    """``values`` as a float array of scores. Complex numbers with an imaginary part are refused
    (``ValueError`` naming ``name``) rather than cut to their real part; complex numbers without
    one are their real part."""
    array = np.asarray(values)
    if np.iscomplexobj(array):
        if np.any(array.imag != 0):
            raise ValueError(f"{name} holds complex numbers; scores are real")
        array = array.real
    try:
        return np.asarray(array, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {array.dtype} values") from None


def check_array_in_unit_interval(
    name: str, value: object, *, low_open: bool = False, high_open: bool = False
) -> np.ndarray:
    """Return ``value`` as a float array with every entry in [0, 1] (no NaN), with either end
    optionally excluded."""
    out = np.asarray(value, dtype=float)
    too_low = out <= 0 if low_open else out < 0
    too_high = out >= 1 if high_open else out > 1
    outside = np.isnan(out) | too_low | too_high
    if outside.any():
        raise ValueError(
            f"{name} must lie in {_unit_interval(low_open, high_open)} (no NaN); got values "
            "outside it, such as "
            f"{float(out[outside].flat[0])!r}"
        )
    return out


def check_eps_array(eps: object, name: str = "eps") -> np.ndarray:
    """Return ``eps`` as a float array with every entry in [0, inf] (no NaN)."""
    try:
        out = np.asarray(eps, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a real number or array in [0, inf], got {eps!r}"
        ) from None
    if np.isnan(out).any() or (out < 0).any():
        raise ValueError(f"{name} must be in [0, inf] (no NaN), got {eps!r}")
    return out


def scalar_like(values: np.ndarray, like: object) -> float | np.ndarray:
    """A Python float when the caller's argument ``like`` was a scalar, else ``values``."""
    return float(values) if np.ndim(like) == 0 else values
