"""A toy DP library and its dpaudit battery, in one module.

The library: :func:`noisy_sum`, a sum of records clamped to ``bounds`` plus Laplace noise of
scale ``(high - low) / epsilon``, which its maintainers claim ``epsilon``-DP when one record is
replaced. The battery: ``LIBRARY``, which the package registers in the ``dpaudit.libraries``
entry-point group (see this folder's ``pyproject.toml``), so that ``dpaudit library
toy-laplace`` audits it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpaudit.libraries import Function, Library
from dpaudit.libraries.battery import Release, approx_dp_claim
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.pairs import boundary_pairs, random_pairs


def noisy_sum(
    values: np.ndarray,
    epsilon: float,
    bounds: tuple[float, float],
    rng: np.random.Generator,
    size: int = 1,
) -> np.ndarray:
    """``size`` independent releases of the clamped sum of ``values`` with Laplace noise."""
    low, high = bounds
    total = float(np.clip(np.asarray(values, dtype=float), low, high).sum())
    return total + rng.laplace(0.0, (high - low) / epsilon, size=size)


def noisy_sum_function(
    *, epsilon: float = 1.0, bounds: tuple[float, float] = (0.0, 1.0), n: int = 10
) -> Function:
    """The battery's entry for :func:`noisy_sum` at the settings it is audited at."""
    low, high = bounds

    def release() -> Release:
        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            return noisy_sum(dataset, epsilon, bounds, rng, size)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(n, low, high, relation=relation),
            "random": random_pairs(n, low, high, relation=relation, budget=4),
        }

    return Function(
        f"noisy_sum(epsilon={epsilon:g}, bounds=({low:g}, {high:g}))",
        release,
        {"replace_one": approx_dp_claim(epsilon)},
        pairs,
    )


def functions() -> list[Function]:
    """The covered functions of the toy library."""
    return [noisy_sum_function()]


#: What the ``dpaudit.libraries`` entry point loads: a Library named as the entry point.
LIBRARY = Library(
    "toy-laplace",
    "dpaudit_toy_plugin",
    "dpaudit-toy-plugin",
    functions,
    seeded=True,
    one_call_per_output=False,
)
