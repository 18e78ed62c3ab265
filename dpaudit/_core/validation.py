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
    "check_deltas",
    "check_integer",
    "check_seed",
    "check_text",
    "check_choice",
    "check_n_jobs",
    "WORKERS_PER_CORE",
    "check_writable_directory",
    "check_input_file",
    "check_array_in_unit_interval",
    "check_eps_array",
    "available_memory",
    "beyond_memory",
    "check_memory",
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


def check_deltas(name: str, deltas: object, *, high_open: bool = True) -> list[float]:
    """Return ``deltas`` (a number, or a non-empty sequence or array of them) as a list of
    probabilities in ``[0, 1)`` (``[0, 1]`` without ``high_open``); anything else raises
    ``ValueError`` naming ``name`` (``deltas[2]`` for a bad third value)."""
    if isinstance(deltas, Real | np.floating | np.integer) and not isinstance(deltas, bool):
        deltas = [deltas]
    if isinstance(deltas, np.ndarray):
        deltas = deltas.ravel().tolist()
    if isinstance(deltas, str | bytes) or not isinstance(deltas, list | tuple | range):
        raise ValueError(f"{name} must be a non-empty sequence of deltas, got {deltas!r}"[:300])
    if not deltas:
        raise ValueError(f"{name} must hold at least one delta, got none")
    return [check_probability(f"{name}[{i}]", d, high_open=high_open) for i, d in enumerate(deltas)]


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


def check_seed(name: str, value: object) -> int:
    """Return ``value`` as a root seed: an integer ``>= 0`` (a Python or numpy integer). Unlike
    :func:`check_integer`, a float is refused even when whole (``0.0``, ``1e300``): a seed is an
    exact integer, and a float one is most often a mistake whose value is not the one meant."""
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        raise ValueError(f"{name} must be an integer (a seed, not a float), got {value!r}"[:300])
    if value < 0:
        raise ValueError(f"{name} must be an integer in [0, inf), got {int(value)!r}")
    return int(value)


def check_text(name: str, value: object) -> str:
    """Return ``value`` if it is a string (a name, a title or a label), else ``ValueError``
    naming ``name``: a number, a boolean or bytes are not silently turned into text."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}"[:300])
    return value


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
    if out < -cores:
        raise ValueError(
            f"{name} must be at least -{cores} (-k: all of this machine's {cores} cores but "
            f"k - 1, so at least one worker), got {value!r}"
        )
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
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"{name} must be a directory path, got {path!r}"[:300])
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise ValueError(
            f"{name} {path}: a symbolic link that leads nowhere (a loop, or a missing target)"
        )
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
        where = "the current directory" if place == Path() else place
        raise ValueError(
            f"{name} {path}: cannot create a directory in {where} ({reason})"
        ) from None
    return path


def _number_array(name: str, value: object, expected: str, *, booleans: bool) -> np.ndarray:
    """``value`` as a float array when it holds real numbers (booleans too with ``booleans``);
    else ``ValueError`` saying that ``name`` must be ``expected``. Text (``"0.5"``), dates,
    bytes, ragged nestings and integers beyond the float range are refused, not converted."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):  # a ragged nesting such as [[1, 2], [3]]
        raise ValueError(f"{name} must be {expected}, got a ragged or mixed nesting") from None
    kinds = "biuf" if booleans else "iuf"
    if array.dtype.kind == "O":
        items = array.ravel().tolist()
        if not all(
            isinstance(v, Real | np.floating | np.integer) and (booleans or not isinstance(v, bool))
            for v in items
        ):
            raise ValueError(f"{name} must be {expected}, got {type(value).__name__}")
    elif array.dtype.kind not in kinds:
        got = "booleans" if array.dtype.kind == "b" else f"{array.dtype} values"
        raise ValueError(f"{name} must be {expected}, got {got}")
    try:
        return np.asarray(array, dtype=float)
    except OverflowError:  # Python integers such as 10**400
        raise ValueError(
            f"{name} must be {expected} within the float range (below 1.8e308)"
        ) from None


def as_float_array(name: str, value: object, expected: str = "an array of numbers") -> np.ndarray:
    """Return ``value`` (real numbers or booleans) as a float array; text, dates, ragged nestings
    and other values that are not numbers raise ``ValueError`` saying that ``name`` must be
    ``expected`` (e.g. ``"a vector of query answers"``)."""
    return _number_array(name, value, expected, booleans=True)


def real_scores(name: str, values: object) -> np.ndarray:
    """``values`` as a float array of scores. Complex numbers with an imaginary part are refused
    (``ValueError`` naming ``name``) rather than cut to their real part; complex numbers without
    one are their real part."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        array = np.asarray(values, dtype=object)
    if np.iscomplexobj(array):
        if np.any(array.imag != 0):
            raise ValueError(f"{name} holds complex numbers; scores are real")
        array = array.real
    return _number_array(name, array, "an array of numbers", booleans=True)


def check_array_in_unit_interval(
    name: str, value: object, *, low_open: bool = False, high_open: bool = False
) -> np.ndarray:
    """Return ``value`` as a float array with every entry in [0, 1] (no NaN), with either end
    optionally excluded."""
    out = _number_array(name, value, "a number or an array of numbers", booleans=False)
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
    out = _number_array(name, eps, "a real number or array in [0, inf]", booleans=False)
    if np.isnan(out).any() or (out < 0).any():
        raise ValueError(f"{name} must be in [0, inf] (no NaN), got {eps!r}")
    return out


def available_memory() -> int | None:
    """Bytes of memory this process may use: the machine's physical memory, or less under an
    address-space limit (``ulimit -v``); ``None`` where neither can be read."""
    try:
        memory = int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not a POSIX system: not checked
        return None
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return memory
    return memory if limit in (resource.RLIM_INFINITY, -1) or limit <= 0 else min(memory, limit)


def beyond_memory(nbytes: int) -> str | None:
    """``"X GiB, more than a quarter of the Y GiB of memory this process may use"`` when
    ``nbytes`` exceed a quarter of :func:`available_memory`, else ``None``."""
    memory = available_memory()
    if memory is None or nbytes <= memory // 4:
        return None
    return (
        f"{nbytes / 2**30:,.1f} GiB, more than a quarter of the {memory / 2**30:,.1f} GiB of "
        "memory this process may use"
    )


def check_memory(name: str, value: int, nbytes: int, what: str) -> None:
    """Refuse (``ValueError`` naming ``name`` and its ``value``) a size whose arrays, ``what``
    (e.g. ``"its two datasets of float64 records"``), would take ``nbytes``: more than a
    quarter of the memory this process may use. Checked before anything is allocated, so that
    the refusal is one line rather than a ``MemoryError`` or a machine that swaps."""
    beyond = beyond_memory(nbytes)
    if beyond:
        raise ValueError(f"{name} = {value:,}: {what} would need {beyond}")


def scalar_like(values: np.ndarray, like: object) -> float | np.ndarray:
    """A Python float when the caller's argument ``like`` was a scalar, else ``values``."""
    return float(values) if np.ndim(like) == 0 else values
