"""SmartNoise SQL (``smartnoise-sql``, imported as ``snsql``) on a pandas table, as the battery
calls it.

Calls. A query is parsed, rewritten and run by ``snsql.from_df(...).execute(query)``, which
costs about half a second a call; the noise is added row by row of the exact aggregate, an
OpenDP measurement built for every row. The battery asks for ``size`` outputs in one call: the
table holds every trial's copy of the dataset under a ``trial`` column, each record a person of
its own (``row_privacy``), and the query is grouped by ``trial``, so every trial's group is
aggregated and noised on its own, exactly as the ungrouped query on that trial's records
(``tests/libraries/test_smartnoise_sql.py`` compares the two). Value queries are audited with
``censor_dims: False`` (the grouping by trial must not censor trials; with ``censor_dims`` left
on, SmartNoise refuses any query at ``delta = 0``); censoring is audited on its own, as the
threshold of a grouped count. The noise comes from OpenDP's unseedable generator: audits of
SmartNoise SQL are :data:`~dpaudit.libraries.battery.NOT_REPRODUCIBLE`.

Claims. The claim is SmartNoise's own cost of the query, ``reader.get_privacy_cost(query)``:
``(epsilon, delta)``-DP, where ``epsilon`` adds up the budgets of every noisy aggregate the
query needs (``AVG`` is a noisy ``SUM`` and ``COUNT``: twice the ``Privacy`` epsilon).

Relations. SmartNoise calibrates its noise with OpenDP's privacy map on ``symmetric_distance``
at ``d_in = max_ids`` (``snsql/sql/_mechanisms/laplace.py``, ``Laplace._compute_noise_scale``):
neighbours add or remove one person's rows, audited as ``add_remove`` with one row per person.

SmartNoise SQL pins ``opendp < 0.15`` and ``pandas < 3``: it has its own extra,
``dpaudit[smartnoise-sql]``, and installed next to ``dpaudit[libraries]`` it takes OpenDP back
to 0.14.

Every covered function is made by a factory whose parameters are the settings it is audited at
(``epsilon``, ``delta``, ``bounds``, ``n`` records); :func:`functions` lists the defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.libraries.battery import Function, Library, Release, approx_dp_claim, bounded_pairs
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.pairs import UNITS, unit_pairs

__all__ = ["LIBRARY", "censored_count", "functions", "query"]

#: Records (persons) per dataset of the queries' pairs.
N = 10
#: Declared bounds of the column ``x`` (``lower``, ``upper`` in the metadata).
BOUNDS = (0.0, 1.0)
#: The aggregates covered, and whether the rounding search applies.
AGGREGATES = {"COUNT(*)": False, "SUM(x)": True, "AVG(x)": True, "VAR(x)": False}
#: What a trial whose group SmartNoise censored releases (counts are never negative).
CENSORED = -1.0


def _reader(
    frame: Any, epsilon: float, delta: float, bounds: tuple[float, float], censor: bool
) -> Any:
    import snsql

    table = {
        "row_privacy": True,
        "censor_dims": censor,
        "x": {"type": "float", "lower": float(bounds[0]), "upper": float(bounds[1])},
        "trial": {"type": "int"},
    }
    metadata = {"dpaudit": {"t": {"t": table}}}
    return snsql.from_df(
        frame, privacy=snsql.Privacy(epsilon=epsilon, delta=delta), metadata=metadata
    )


def _frame(dataset: np.ndarray, size: int) -> Any:
    """Every trial's copy of the dataset, under its ``trial`` number."""
    import pandas as pd

    values = np.asarray(dataset, dtype=float).ravel()
    return pd.DataFrame(
        {"x": np.tile(values, size), "trial": np.repeat(np.arange(size), len(values))}
    )


def _by_trial(rows: Sequence[Sequence[Any]], size: int) -> np.ndarray:
    """The released value of each trial (:data:`CENSORED` for a trial not released)."""
    out = np.full(size, CENSORED)
    for trial, value in rows[1:]:  # the first row holds the column names
        out[int(trial)] = float(value)
    return out


def _claim(aggregate: str, epsilon: float, delta: float, bounds: tuple[float, float]) -> Any:
    reader = _reader(_frame(np.zeros(1), 1), epsilon, delta, bounds, censor=False)
    spent_epsilon, spent_delta = reader.get_privacy_cost(f"SELECT {aggregate} FROM t.t")
    return approx_dp_claim(float(spent_epsilon), float(spent_delta), "one person")


def query(
    aggregate: str,
    *,
    epsilon: float = 1.0,
    delta: float = 0.0,
    bounds: tuple[float, float] = BOUNDS,
    n: int = N,
) -> Function:
    """``SELECT {aggregate} FROM t.t`` (one of :data:`AGGREGATES`) under
    ``Privacy(epsilon, delta)``, the column ``x`` declared in ``bounds``, on ``n`` records."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}")
    lo, hi = bounds

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            if size == 0:
                return np.empty(0)
            reader = _reader(_frame(dataset, size), epsilon, delta, bounds, censor=False)
            rows = reader.execute(f"SELECT trial, {aggregate} FROM t.t GROUP BY trial")
            return _by_trial(rows, size)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return bounded_pairs(n, lo, hi, relation, rounding=AGGREGATES[aggregate])

    return Function(
        f"SELECT {aggregate} FROM t.t (epsilon={epsilon:g}, delta={delta:g}, "
        f"bounds=({lo:g}, {hi:g}))",
        release,
        {"add_remove": _claim(aggregate, epsilon, delta, bounds)},
        pairs,
    )


def censored_count(
    *, epsilon: float = 1.0, delta: float = 1e-5, units: Sequence[int] = UNITS
) -> Function:
    """``SELECT g, COUNT(*) FROM t.t GROUP BY g`` with ``censor_dims`` on, under
    ``Privacy(epsilon, delta)``: a group of ``k`` persons against ``k + 1``, for each ``k`` in
    ``units``; the output is the group's noisy count, or :data:`CENSORED` when SmartNoise's
    threshold hides the group."""

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            if size == 0:
                return np.empty(0)
            reader = _reader(_frame(dataset, size), epsilon, delta, BOUNDS, censor=True)
            rows = reader.execute("SELECT trial, COUNT(*) FROM t.t GROUP BY trial")
            return _by_trial(rows, size)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"units": unit_pairs(units, "persons")}

    reader = _reader(_frame(np.zeros(1), 1), epsilon, delta, BOUNDS, censor=True)
    spent = reader.get_privacy_cost("SELECT trial, COUNT(*) FROM t.t GROUP BY trial")
    claim = approx_dp_claim(float(spent[0]), float(spent[1]), "one person")
    return Function(
        f"SELECT g, COUNT(*) FROM t.t GROUP BY g, censor_dims (epsilon={epsilon:g}, "
        f"delta={delta:g})",
        release,
        {"add_remove": claim},
        pairs,
    )


def functions() -> list[Function]:
    """The covered queries of SmartNoise SQL, at their default settings."""
    return [*(query(aggregate) for aggregate in AGGREGATES), censored_count()]


#: SmartNoise SQL in the battery's registry.
LIBRARY = Library(
    "smartnoise-sql",
    "snsql",
    "smartnoise-sql",
    functions,
    seeded=False,
    one_call_per_output=False,
)
