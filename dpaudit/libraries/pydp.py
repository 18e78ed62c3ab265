"""Google's DP library (``python-dp``, imported as ``pydp``), as the battery calls it.

Calls. The library is C++ behind Python bindings and draws one output per call: each release
function builds its algorithm or mechanism once per audit and calls it once per trial of a chunk
(``quick_result`` resets the algorithm before every result, so every call is a fresh release of
the whole dataset). Its randomness comes from the C++ library's own secure generator, which
cannot be seeded: an audit of python-dp is valid (every trial an independent draw) but
:data:`~dpaudit.libraries.battery.NOT_REPRODUCIBLE`.

Claims. Every algorithm states ``(epsilon, delta)``-DP for the parameters it was built with; the
claim is read back from the built object (``epsilon``, ``delta``), so a parameter the library
changed or refused shows in the claim.

Relations. The numerical mechanisms (``LaplaceMechanism``, ``GaussianMechanism``) take a
``sensitivity``: how far their one input may move, audited as two one-record datasets that far
apart (``replace_one``). The aggregations of ``algorithms.laplacian`` bound each privacy unit's
contributions (``l0_sensitivity``, ``linf_sensitivity``) without saying in the Python package
which neighbours they mean, so both relations are tried (silent). Partition selection decides
from the number of privacy units in a partition, which only adding or removing a unit changes:
its relation is ``add_remove``.

Input spaces. The bounded sums, means, variances and standard deviations declare what they
accept (:class:`~dpaudit.mechanisms.inputs.InputSpace`, searched by the battery): bounds at
offsets from zero to ``2**1000`` (both signs) and widths of 1, ``2**20`` and down to 4 ulps of the
offset, datasets of 1 to 100,000 records, ``epsilon`` from 0.1 to 5, and every special record
(NaN, the infinities, ``-0.0``, subnormals, values outside the bounds: ``quick_result`` takes
them all without an error). The sums and means take float records and the library's two integer
types (``dtype="int"``, 32 bits, and ``"int64"``; integer bounds within their range). The
variance and standard deviation take float records at offsets to ``2**100``: python-dp refuses
bounds whose squares overflow (float bounds at ``2**1000``, and most of the integer grid: 32-bit
bounds ``2**20`` wide or at ``2**30``, 64-bit bounds from ``2**52``), so those settings
are left out. The default setting,
the one audited without a search, is ``n = 10`` float records in ``bounds = (0, 1)``,
``epsilon = 1``. The generators: records at the bounds, special records and random records, and
for the sums and means the rounding search on a loop sum and overflow pairs for integer
records.

Every covered function is made by a factory whose parameters are the settings it is audited at
(``epsilon``, ``delta``, ``bounds``, ``n`` records, ``dtype``); :func:`functions` lists the
default settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.libraries.battery import (
    EPSILONS,
    OFFSETS,
    RANDOM_BUDGET,
    SQUARED_OFFSETS,
    WIDTH_ULPS,
    WIDTHS,
    Claimed,
    Function,
    Library,
    Release,
    approx_dp_claim,
    bounded_pairs,
)
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.inputs import SPECIALS, InputSpace, Setting
from dpaudit.mechanisms.pairs import (
    UNITS,
    boundary_pairs,
    overflow_pairs,
    random_pairs,
    unit_pairs,
)

__all__ = [
    "LIBRARY",
    "aggregation",
    "functions",
    "mechanism",
    "partition_selection",
]

#: Records per dataset of the aggregations' pairs.
N = 10
#: Declared bounds of the aggregations' records.
BOUNDS = (0.0, 1.0)
#: Bounds of the int64 sum, large enough that four records overflow 64 bits.
INT64_BOUNDS = (0, 2**61)
RELATIONS_SILENT = ("replace_one", "add_remove")
#: The aggregations of ``pydp.algorithms.laplacian`` that take bounds, and whether the rounding
#: search applies (a sum is computed from the records).
BOUNDED = {
    "BoundedSum": True,
    "BoundedMean": True,
    "BoundedVariance": False,
    "BoundedStandardDeviation": False,
    "Max": False,
    "Min": False,
    "Median": False,
    "Percentile": False,
}
#: The aggregations that declare an input space, and whether their records may be integers.
SEARCHED = {
    "BoundedSum": True,
    "BoundedMean": True,
    "BoundedVariance": False,
    "BoundedStandardDeviation": False,
}
#: python-dp's ``dtype`` for each record type of a setting.
DTYPES = {"float64": "float", "int32": "int", "int64": "int64"}
#: Dataset sizes the search tries (the bounds and ``epsilon`` are the batteries' grid,
#: :data:`~dpaudit.libraries.battery.OFFSETS` and the rest; the variance's offsets are
#: :data:`~dpaudit.libraries.battery.SQUARED_OFFSETS`: python-dp refuses bounds whose squares
#: overflow, with ``Squaring the bounds caused overflow`` and ``LInf sensitivity must be a valid
#: numeric value``).
SIZES = (1, 10, 100, 1_000, 10_000, 100_000)
#: What one call costs, in records: ``quick_result`` converts its list of records on every
#: call, about 1.3 ms for 10,000 records against 5 us for 10 (a call on 100 records costs
#: about two on few).
RECORDS_PER_CALL = 100.0


def _number(value: float) -> str:
    return (
        f"2**{int(value).bit_length() - 1}"
        if float(value).is_integer() and value > 2**20 and int(value) & (int(value) - 1) == 0
        else f"{value:g}"
    )


def _claim(built: Any, note: str = "") -> Claimed:
    """The claim of a built algorithm or mechanism, read back from it."""
    return approx_dp_claim(float(built.epsilon), float(getattr(built, "delta", 0.0)), note)


def _loop_sum(records: np.ndarray) -> float:
    """A sum in record order, one addition at a time (as a C++ loop adds)."""
    total = 0.0
    for value in np.asarray(records, dtype=float):
        total += float(value)
    return total


def _python(dataset: np.ndarray, dtype: str) -> list[Any]:
    values = np.asarray(dataset).ravel()
    return [int(v) for v in values] if dtype != "float" else [float(v) for v in values]


def _repeat(call: Callable[[], Any], size: int) -> np.ndarray:
    return np.array([float(call()) for _ in range(size)], dtype=float)


def mechanism(
    name: str, *, epsilon: float = 1.0, delta: float = 1e-5, sensitivity: float = 1.0
) -> Function:
    """``numerical_mechanisms.LaplaceMechanism(epsilon, sensitivity)`` or
    ``GaussianMechanism(epsilon, delta, sensitivity)``: ``add_noise`` on the one record, whose
    neighbours lie ``sensitivity`` apart (``replace_one``)."""
    if name not in ("LaplaceMechanism", "GaussianMechanism"):
        raise ValueError(f"name must be LaplaceMechanism or GaussianMechanism, got {name!r}")
    kwargs: dict[str, float] = {"epsilon": epsilon, "sensitivity": sensitivity}
    if name == "GaussianMechanism":
        kwargs = {"epsilon": epsilon, "delta": delta, "sensitivity": sensitivity}

    def build() -> Any:
        from pydp.algorithms import numerical_mechanisms

        return getattr(numerical_mechanisms, name)(**kwargs)

    def release() -> Release:
        add_noise = build().add_noise

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            value = float(np.asarray(dataset, dtype=float).ravel()[0])
            return _repeat(lambda: add_noise(value), size)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(1, 0, sensitivity, relation=relation),
            "random": random_pairs(1, 0, sensitivity, relation=relation, budget=RANDOM_BUDGET),
        }

    shown = ", ".join(f"{k}={v:g}" for k, v in kwargs.items())
    return Function(
        f"numerical_mechanisms.{name}({shown})",
        release,
        {"replace_one": _claim(build())},
        pairs,
    )


def aggregation(
    name: str,
    *,
    epsilon: float = 1.0,
    bounds: tuple[float, float] | None = BOUNDS,
    n: int = N,
    dtype: str = "float",
    percentile: float = 0.25,
    overflow: bool = False,
    searched: bool = False,
) -> Function:
    """An aggregation of ``pydp.algorithms.laplacian`` (``Count`` or one of :data:`BOUNDED`)
    built with ``epsilon``, ``bounds`` (``lower_bound``, ``upper_bound``; ignored by ``Count``)
    and ``dtype`` (``"float"``, ``"int"`` or ``"int64"``), released by ``quick_result`` on ``n``
    records. ``overflow``: the pairs are those on which a 64-bit sum of the records overflows.
    ``searched``: the function declares its input space (:func:`_space`; one of
    :data:`SEARCHED`, at float records). The library is silent about its relation: both are
    tried."""
    if name != "Count" and name not in BOUNDED:
        raise ValueError(f"name must be Count or one of {', '.join(BOUNDED)}, got {name!r}")
    if dtype not in ("float", "int", "int64"):
        raise ValueError(f"dtype must be 'float', 'int' or 'int64', got {dtype!r}")
    lo, hi = bounds if bounds is not None else BOUNDS
    kwargs: dict[str, Any] = {"epsilon": epsilon, "dtype": dtype}
    if name != "Count":
        cast = float if dtype == "float" else int
        kwargs.update(lower_bound=cast(lo), upper_bound=cast(hi))
    if name == "Percentile":
        kwargs["percentile"] = percentile

    def build() -> Any:
        from pydp.algorithms import laplacian

        return getattr(laplacian, name)(**kwargs)

    def release() -> Release:
        algorithm = build()

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            records = _python(dataset, dtype)
            return _repeat(lambda: algorithm.quick_result(records), size)

        return fn

    integer = dtype != "float"

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        if overflow:
            return {"overflow": overflow_pairs(int(lo), int(hi), relation=relation)}
        rounding = bool(BOUNDED.get(name)) and not integer
        return bounded_pairs(
            n, lo, hi, relation, rounding=rounding, integer=integer, accumulate=_loop_sum
        )

    shown = [f"epsilon={epsilon:g}"]
    if name != "Count":
        shown.append(f"bounds=({_number(lo)}, {_number(hi)})")
    if name == "Percentile":
        shown.append(f"percentile={percentile:g}")
    shown.append(f"dtype={dtype}")

    def at(setting: Setting) -> Function:
        return aggregation(
            name,
            epsilon=setting.epsilon,
            bounds=setting.bounds,
            n=setting.size,
            dtype=DTYPES[setting.dtype],
        )

    space = None
    if searched:
        if name not in SEARCHED or dtype != "float":
            raise ValueError(
                f"searched needs float records and one of {', '.join(SEARCHED)}, got {name!r} "
                f"with dtype {dtype!r}"
            )
        space = _space(Setting((lo, hi), n, "float64", epsilon), integers=SEARCHED[name])
    claim = _claim(build())
    return Function(
        f"laplacian.{name}({', '.join(shown)})",
        release,
        {relation: claim for relation in RELATIONS_SILENT},
        pairs,
        stated=False,
        space=space,
        at=None if space is None else at,
    )


def _space(default: Setting, *, integers: bool) -> InputSpace:
    """The input space of a bounded aggregation at ``default``: float records (and the library's
    integer types with ``integers``, a sum or mean, searched by the rounding and overflow
    generators too) at every offset, width, size and ``epsilon``, every special record, both
    relations; without ``integers`` (a variance) the offsets stop at ``2**100``, where the
    squares of the bounds still fit."""
    generators = ("boundary", "rounding", "overflow", "special", "random")
    return InputSpace(
        default=default,
        offsets=OFFSETS if integers else SQUARED_OFFSETS,
        widths=WIDTHS,
        width_ulps=WIDTH_ULPS,
        sizes=SIZES,
        dtypes=tuple(DTYPES) if integers else ("float64",),
        epsilons=EPSILONS,
        specials=SPECIALS,
        relations=RELATIONS_SILENT,
        generators=generators if integers else ("boundary", "special", "random"),
        accumulate=_loop_sum if integers else None,
        records_per_output=RECORDS_PER_CALL,
    )


#: The partition selection strategies of ``pydp.algorithms.partition_selection``.
STRATEGIES = ("truncated_geometric", "laplace", "gaussian")


def partition_selection(
    strategy: str,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    max_partitions_contributed: int = 1,
    units: Sequence[int] = UNITS,
) -> Function:
    """``create_partition_strategy(strategy, epsilon, delta, max_partitions_contributed)``:
    ``should_keep`` of a partition of ``k`` privacy units (the dataset's records) against
    ``k + 1`` (``add_remove``), for each ``k`` in ``units``; the output is 1 when the partition
    is kept."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")

    def build() -> Any:
        from pydp.algorithms import partition_selection as selection

        return selection.create_partition_strategy(
            strategy, epsilon, delta, max_partitions_contributed
        )

    def release() -> Release:
        should_keep = build().should_keep

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            count = len(np.asarray(dataset).ravel())
            return _repeat(lambda: should_keep(count), size)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"units": unit_pairs(units, "privacy units")}

    built = build()
    return Function(
        f"partition_selection.{strategy}(epsilon={epsilon:g}, delta={delta:g}, "
        f"max_partitions_contributed={max_partitions_contributed})",
        release,
        {"add_remove": _claim(built)},
        pairs,
    )


def functions() -> list[Function]:
    """The covered functions of python-dp, at their default settings."""
    covered = [mechanism("LaplaceMechanism"), mechanism("GaussianMechanism")]
    covered.append(aggregation("Count"))
    covered += [aggregation(name, searched=name in SEARCHED) for name in BOUNDED]
    covered.append(aggregation("BoundedSum", bounds=(0, 10), dtype="int"))
    covered.append(aggregation("BoundedSum", bounds=INT64_BOUNDS, dtype="int64", overflow=True))
    covered += [partition_selection(strategy) for strategy in STRATEGIES]
    return covered


#: python-dp in the battery's registry.
LIBRARY = Library(
    "python-dp", "pydp", "python-dp", functions, seeded=False, one_call_per_output=True
)
