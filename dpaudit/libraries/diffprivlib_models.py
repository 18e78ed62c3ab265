"""diffprivlib's models (``diffprivlib.models``) whose fitted parameters are the DP release, as
the battery calls them: a library of their own, ``diffprivlib-models``, because one fit costs
10 to 60 ms and an audit needs tens of thousands (run it with few trials,
``dpaudit library diffprivlib-models --quick --trials 1000``).

Calls. One fit per output, a fresh ``BudgetAccountant`` per fit, every fit of a chunk given
one ``numpy.random.RandomState`` drawn from the audit's generator. ``PCA`` still draws from a
generator that ``random_state`` does not reach (two fits with equal seeds differ), so the
library is declared unseedable: its audits are
:data:`~dpaudit.libraries.battery.NOT_REPRODUCIBLE`. The output is the vector of the released
parameters, in a fixed order; the centres of ``KMeans`` are sorted, which is post-processing.

Claims. diffprivlib states ``epsilon``-DP for a fitted model (its parameters); the claim is
``approx_dp(epsilon, 0)``. The library is silent about its relation: both are tried.

Covered: ``GaussianNB`` (``theta_``, ``var_``, ``class_count_``), ``StandardScaler``
(``mean_``, ``var_``), ``LinearRegression`` (``coef_``, ``intercept_``), ``PCA``
(``components_``, ``mean_``) and ``KMeans`` (``cluster_centers_``). Left out:
``LogisticRegression`` (about a second a fit: an audit would take hours) and the tree models
(``RandomForestClassifier``, ``DecisionTreeClassifier``), whose release is a tree, not a vector
of parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit.libraries.battery import RANDOM_BUDGET, Function, Library, Release, approx_dp_claim
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.pairs import record_pairs

__all__ = ["LIBRARY", "MODELS", "functions", "model"]

#: Records per dataset of the models' pairs.
N = 10
RELATIONS_SILENT = ("replace_one", "add_remove")


def _labelled(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return features[:, :-1], features[:, -1]


#: model -> (settings beyond epsilon, record width, whether the last column is the target,
#: released attributes, extreme records of the pairs).
MODELS: Mapping[str, tuple[dict[str, Any], int, bool, tuple[str, ...], tuple[Any, ...]]] = {
    "GaussianNB": (
        {"bounds": (0.0, 1.0)},
        2,
        True,
        ("theta_", "var_", "class_count_"),
        ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)),
    ),
    "StandardScaler": ({"bounds": (0.0, 1.0)}, 1, False, ("mean_", "var_"), ((0.0,), (1.0,))),
    "LinearRegression": (
        {"bounds_X": (0.0, 1.0), "bounds_y": (0.0, 1.0)},
        2,
        True,
        ("coef_", "intercept_"),
        ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)),
    ),
    "PCA": (
        {"n_components": 1, "data_norm": float(np.sqrt(2)), "bounds": (0.0, 1.0)},
        2,
        False,
        ("components_", "mean_"),
        ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)),
    ),
    "KMeans": (
        {"n_clusters": 2, "bounds": (0.0, 1.0)},
        1,
        False,
        ("cluster_centers_",),
        ((0.0,), (1.0,)),
    ),
}


def _base(width: int, n: int) -> np.ndarray:
    """``n`` records spread over the unit box (labels alternate when the last column is one)."""
    grid = np.linspace(0.0, 1.0, n)
    columns = [np.roll(grid, j) for j in range(width)]
    if width > 1:
        columns[-1] = (np.arange(n) % 2).astype(float)
    return np.column_stack(columns)


def model(name: str, *, epsilon: float = 1.0, n: int = N) -> Function:
    """``diffprivlib.models.{name}`` (one of :data:`MODELS`) fitted with ``epsilon`` on ``n``
    records; the output is its released parameters."""
    if name not in MODELS:
        raise ValueError(f"name must be one of {', '.join(MODELS)}, got {name!r}")
    settings, width, supervised, attributes, extremes = MODELS[name]

    def fit(records: np.ndarray, state: Any) -> np.ndarray:
        from diffprivlib import models
        from diffprivlib.accountant import BudgetAccountant

        built = getattr(models, name)(
            epsilon=epsilon, **settings, random_state=state, accountant=BudgetAccountant()
        )
        if supervised:
            features, target = _labelled(records)
            built.fit(features, target.astype(int) if name == "GaussianNB" else target)
        else:
            built.fit(records)
        released = [np.ravel(np.asarray(getattr(built, a), dtype=float)) for a in attributes]
        if name == "KMeans":
            released = [np.sort(r) for r in released]
        return np.concatenate(released)

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            state = np.random.RandomState(int(rng.integers(2**31)))
            records = np.asarray(dataset, dtype=float).reshape(-1, width)
            return np.array([fit(records, state) for _ in range(size)]).reshape(size, -1)

        return fn

    base = _base(width, n)

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        values = [np.asarray(v, dtype=float) for v in extremes]
        return {
            "boundary": record_pairs(base, values, relation=relation),
            "random": record_pairs(
                base, [], relation=relation, random_pairs=RANDOM_BUDGET, low=0.0, high=1.0
            ),
        }

    shown = ", ".join(
        f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in settings.items()
    )
    return Function(
        f"models.{name}(epsilon={epsilon:g}, {shown})",
        release,
        {relation: approx_dp_claim(epsilon) for relation in RELATIONS_SILENT},
        pairs,
        stated=False,
    )


def functions() -> list[Function]:
    """The covered models of diffprivlib, at their default settings."""
    return [model(name) for name in MODELS]


#: diffprivlib's models in the battery's registry.
LIBRARY = Library(
    "diffprivlib-models",
    "diffprivlib",
    "diffprivlib",
    functions,
    seeded=False,
    one_call_per_output=True,
)
