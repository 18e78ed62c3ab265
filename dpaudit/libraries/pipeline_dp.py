"""PipelineDP (``pipeline-dp``, imported as ``pipeline_dp``), on its local backend, as the
battery calls it.

Calls. A ``DPEngine`` on ``LocalBackend`` computes one noisy value per partition, with noise
drawn independently for each. The battery gives every trial of a chunk its own public
partition, holding that trial's copy of the dataset under privacy units of its own (each unit
contributes one record to one partition, ``max_partitions_contributed = 1``,
``max_contributions_per_partition = 1``): one ``aggregate`` (or ``select_partitions``) call
releases ``size`` independent draws of the one-partition release, a fresh engine and budget
accountant per chunk. The noise comes from python-dp's C++ generator and numpy's unseeded
default generator, which cannot be seeded: audits of PipelineDP are
:data:`~dpaudit.libraries.battery.NOT_REPRODUCIBLE`.

Claims. The claim is the budget accountant's: the whole pipeline is
``(total_epsilon, total_delta)``-DP (``NaiveBudgetAccountant``), read back from the accountant
once the engine has split it among its mechanisms.

Relations. PipelineDP states its sensitivities for "adding or removing one privacy unit"
(``AddDPNoiseParams`` in ``pipeline_dp/aggregate_params.py``): each function is audited on
``add_remove`` neighbours, a privacy unit (one record) added.

Input spaces. The sums, means and variances declare what they accept
(:class:`~dpaudit.mechanisms.inputs.InputSpace`, searched by the battery): bounds
(``min_value``, ``max_value``) at offsets from zero to ``2**1000`` (both signs) and widths of 1,
``2**20`` and down to 4 ulps of the offset, datasets of 1 to 10,000 privacy units, ``epsilon``
from 0.1 to 5, and every special record (NaN, the infinities, ``-0.0``, subnormals, values
outside the bounds: ``aggregate`` takes them all without an error), under the one relation
PipelineDP states. Records are floats (``aggregate`` has no record type). The variance's offsets
stop at ``2**100``: at ``2**1000`` the squares of its records overflow and it raises
``OverflowError``, so those settings are left out. The Gaussian sum refuses bounds whose
sensitivity is subnormal (:data:`SMALLEST_NORMAL`), for which python-dp's ``GaussianMechanism``
may not return: the search counts those settings as refused. The default setting, the one
audited without a search, is ``n = 10`` records in ``bounds = (0, 1)``, ``epsilon = 1``. The
generators: records at the bounds, special records and random records, and for the sum and mean
the rounding search on ``numpy.sum``.

Every covered function is made by a factory whose parameters are the settings it is audited at
(``epsilon``, ``delta``, ``bounds``, ``n`` records, the noise); :func:`functions` lists the
default settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.libraries.battery import (
    EPSILONS,
    OFFSETS,
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
from dpaudit.mechanisms.pairs import UNITS, unit_pairs

__all__ = ["LIBRARY", "aggregate", "functions", "select_partitions"]

#: Records (privacy units) per dataset of the aggregations' pairs.
N = 10
#: Declared bounds of the records (``min_value``, ``max_value``).
BOUNDS = (0.0, 1.0)
#: The metrics of ``pipeline_dp.Metrics`` covered, and whether the rounding search applies.
METRICS = {"COUNT": False, "PRIVACY_ID_COUNT": False, "SUM": True, "MEAN": True, "VARIANCE": False}
#: The partition selection strategies covered (names of ``PartitionSelectionStrategy``).
STRATEGIES = ("TRUNCATED_GEOMETRIC", "LAPLACE_THRESHOLDING", "GAUSSIAN_THRESHOLDING")
#: The metrics that declare an input space.
SEARCHED = ("SUM", "MEAN", "VARIANCE")
#: Dataset sizes (privacy units) the search tries (the bounds and ``epsilon`` are the
#: batteries' grid, :data:`~dpaudit.libraries.battery.OFFSETS` and the rest; the variance's
#: offsets are :data:`~dpaudit.libraries.battery.SQUARED_OFFSETS`: at ``2**1000`` the squares
#: of its records overflow and ``aggregate`` raises ``OverflowError``).
SIZES = (1, 10, 100, 1_000, 10_000)
#: The smallest normal float. The Gaussian noise refuses bounds whose sensitivity,
#: ``max(|min_value|, |max_value|)``, is below it: python-dp's ``GaussianMechanism`` does not
#: return for some such sensitivities (e.g. ``2**-1072``, where the bisection of
#: ``CalculateGaussianStddev`` stalls), so they are not in the Gaussian sum's input space.
SMALLEST_NORMAL = float(np.finfo(float).tiny)
#: What one output costs, in records: the local backend handles every row in Python, about
#: 50 us a row, so an output on ``n`` records costs about ``n / 10`` outputs on ten.
RECORDS_PER_OUTPUT = 10.0


def _engine(epsilon: float, delta: float) -> tuple[Any, Any]:
    import pipeline_dp

    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    return pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend()), accountant


def _claim(epsilon: float, delta: float) -> Claimed:
    """The accountant's claim for the whole pipeline, read back from the accountant."""
    accountant = _engine(epsilon, delta)[1]
    return approx_dp_claim(
        float(accountant.total_epsilon), float(accountant.total_delta), "one privacy unit"
    )


def _rows(dataset: np.ndarray, size: int) -> list[tuple[int, int, float]]:
    """``(privacy unit, partition, value)``: trial ``t``'s copy of the dataset in partition
    ``t``, each record a privacy unit of its own."""
    values = [float(v) for v in np.asarray(dataset, dtype=float).ravel()]
    n = len(values)
    return [(t * n + i, t, v) for t in range(size) for i, v in enumerate(values)]


def _extractors() -> Any:
    import pipeline_dp

    return pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0],
        partition_extractor=lambda row: row[1],
        value_extractor=lambda row: row[2],
    )


def aggregate(
    metric: str,
    *,
    epsilon: float = 1.0,
    delta: float = 0.0,
    noise: str = "LAPLACE",
    bounds: tuple[float, float] = BOUNDS,
    n: int = N,
    searched: bool = False,
) -> Function:
    """``DPEngine.aggregate`` of one metric of :data:`METRICS` with ``noise`` (``"LAPLACE"`` or
    ``"GAUSSIAN"``, a ``NoiseKind``), values clamped to ``bounds``, on public partitions, under
    ``NaiveBudgetAccountant(epsilon, delta)``, on ``n`` records (privacy units). ``searched``:
    the function declares its input space (one of :data:`SEARCHED`), searched at every
    ``epsilon`` with ``delta`` and the noise kept."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if noise not in ("LAPLACE", "GAUSSIAN"):
        raise ValueError(f"noise must be 'LAPLACE' or 'GAUSSIAN', got {noise!r}")
    lo, hi = bounds
    if noise == "GAUSSIAN" and 0 < max(abs(lo), abs(hi)) < SMALLEST_NORMAL:
        raise ValueError(
            f"bounds ({lo!r}, {hi!r}) make a subnormal sensitivity, for which python-dp's "
            "GaussianMechanism (PipelineDP's Gaussian noise) may not return"
        )
    field = metric.lower()

    def params() -> Any:
        import pipeline_dp

        return pipeline_dp.AggregateParams(
            noise_kind=getattr(pipeline_dp.NoiseKind, noise),
            metrics=[getattr(pipeline_dp.Metrics, metric)],
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            min_value=float(lo),
            max_value=float(hi),
        )

    def run(dataset: np.ndarray, size: int) -> tuple[np.ndarray, Any]:
        engine, accountant = _engine(epsilon, delta)
        result = engine.aggregate(
            _rows(dataset, size), params(), _extractors(), public_partitions=list(range(size))
        )
        accountant.compute_budgets()
        released = dict(result)
        out = np.array([float(getattr(released[t], field)) for t in range(size)], dtype=float)
        return out, accountant

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            return run(dataset, size)[0] if size else np.empty(0)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return bounded_pairs(n, lo, hi, relation, rounding=METRICS[metric])

    def at(setting: Setting) -> Function:
        return aggregate(
            metric,
            epsilon=setting.epsilon,
            delta=delta,
            noise=noise,
            bounds=setting.bounds,
            n=setting.size,
        )

    space = None
    if searched:
        if metric not in SEARCHED:
            raise ValueError(f"searched needs one of {', '.join(SEARCHED)}, got {metric!r}")
        rounding = METRICS[metric]
        space = InputSpace(
            default=Setting((float(lo), float(hi)), n, "float64", epsilon),
            offsets=OFFSETS if metric != "VARIANCE" else SQUARED_OFFSETS,
            widths=WIDTHS,
            width_ulps=WIDTH_ULPS,
            sizes=SIZES,
            epsilons=EPSILONS,
            specials=SPECIALS,
            relations=("add_remove",),
            generators=("boundary", "rounding", "special", "random")
            if rounding
            else ("boundary", "special", "random"),
            accumulate=np.sum if rounding else None,
            records_per_output=RECORDS_PER_OUTPUT,
        )
    shown = f"epsilon={epsilon:g}, delta={delta:g}, noise={noise}, bounds=({lo:g}, {hi:g})"
    return Function(
        f"aggregate.{metric}({shown})",
        release,
        {"add_remove": _claim(epsilon, delta)},
        pairs,
        space=space,
        at=None if space is None else at,
    )


def select_partitions(
    strategy: str, *, epsilon: float = 1.0, delta: float = 1e-5, units: Sequence[int] = UNITS
) -> Function:
    """``DPEngine.select_partitions`` with ``strategy`` (a ``PartitionSelectionStrategy``)
    under ``NaiveBudgetAccountant(epsilon, delta)``: whether a partition of ``k`` privacy units
    is kept (output 1) against ``k + 1`` units, for each ``k`` in ``units``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")

    def run(dataset: np.ndarray, size: int) -> tuple[np.ndarray, Any]:
        import pipeline_dp

        engine, accountant = _engine(epsilon, delta)
        params = pipeline_dp.SelectPartitionsParams(
            max_partitions_contributed=1,
            partition_selection_strategy=getattr(pipeline_dp.PartitionSelectionStrategy, strategy),
        )
        result = engine.select_partitions(_rows(dataset, size), params, _extractors())
        accountant.compute_budgets()
        kept = np.zeros(size)
        kept[[int(t) for t in result]] = 1.0
        return kept, accountant

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            return run(dataset, size)[0] if size else np.empty(0)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"units": unit_pairs(units, "privacy units")}

    return Function(
        f"select_partitions.{strategy}(epsilon={epsilon:g}, delta={delta:g})",
        release,
        {"add_remove": _claim(epsilon, delta)},
        pairs,
    )


def functions() -> list[Function]:
    """The covered functions of PipelineDP, at their default settings."""
    covered = [aggregate(metric, searched=metric in SEARCHED) for metric in METRICS]
    covered.append(aggregate("SUM", noise="GAUSSIAN", delta=1e-5, searched=True))
    covered += [select_partitions(strategy) for strategy in STRATEGIES]
    return covered


#: PipelineDP in the battery's registry.
LIBRARY = Library(
    "pipeline-dp", "pipeline_dp", "pipeline-dp", functions, seeded=False, one_call_per_output=False
)
