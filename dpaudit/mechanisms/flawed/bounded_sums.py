"""Bounded sums in floating point whose sensitivity is the bounds' width: Casacuberta, Shoemate,
Vadhan & Wagaman 2022 ("Widespread underestimation of sensitivity in differentially private
libraries and how to fix it", CCS).

A bounded sum of ``n`` records in ``[low, high]`` moves by at most ``high - low`` when one record
is replaced, in exact arithmetic. Computed in double precision, each addition rounds to the grid
of the running total, whose spacing grows with the total: when ``high - low`` is small next to
the spacing of ``n * low``, replacing one record moves the rounded sum by whole spacings, many
times the width. Noise scaled to the width then hides too little.

The dataset is the vector of the ``n`` records; neighbours have one record replaced
(``replace_one``). The sum is computed left to right (a loop, ``numpy.cumsum``); the release is
the sum less ``n * low`` (a public constant: ``n`` is public under replacement, and the
subtraction is exact, Sterbenz's lemma) plus Laplace noise, so that the noise, far finer than the
grid of the sum itself, is not rounded away. As for every member of the catalogue the noise is
taken as the ideal Laplace law: the flaw audited is the sum's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._core.validation import check_real
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = ["BoundedFloatSum", "BoundedFloatSumPadded", "float_sum", "rounding_allowance"]

#: Unit roundoff of double precision, ``2^-53``.
UNIT_ROUNDOFF = 2.0**-53


def float_sum(records: np.ndarray) -> float:
    """The sum of ``records`` in double precision, left to right (each addition rounded)."""
    values = np.asarray(records, dtype=np.float64).reshape(-1)
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def rounding_allowance(n: int, low: float, high: float) -> float:
    """An upper bound on how far the left-to-right float sum of ``n`` records in
    ``[low, high]`` can move beyond ``high - low`` when one record is replaced:
    ``2 gamma_{n-1} n max(|low|, |high|)``, with ``gamma_m = m u / (1 - m u)`` and ``u = 2^-53``.

    Each of the two sums is within ``gamma_{n-1} sum |x_i|`` of its exact value (Higham 2002,
    "Accuracy and stability of numerical algorithms", eq. (4.4), recursive summation), and the
    exact sums differ by at most ``high - low``.
    """
    m = max(n - 1, 0)
    gamma = m * UNIT_ROUNDOFF / (1.0 - m * UNIT_ROUNDOFF)
    return 2.0 * gamma * n * max(abs(low), abs(high))


class BoundedFloatSum(FlawedMechanism):
    """Laplace noise of scale ``(high - low) / eps`` on a float sum of ``k`` records in
    ``[low, high]`` (Casacuberta et al. 2022): the sensitivity is taken from the bounds, the
    float sum's is larger.

    Defaults: ``k = 100`` records in ``[1.1, 1.1 + 2^-50]`` (a width of four spacings of 1.1;
    the running total reaches 110, where the spacing is 2^-46). On :meth:`worst_case_pair` (every
    record at ``low``, the first moved to ``high``) the float sums differ by ``16 (high - low)``
    (exactly, and checked against a loop of Python floats in the tests), so the privacy loss of
    that pair under ideal Laplace noise is exactly ``16 eps``: the true ``eps`` is at least that,
    and at most ``eps (high - low + a) / (high - low)`` with ``a`` the
    :func:`rounding_allowance`.
    """

    registry_name = "bounded_float_sum"
    citation = (
        "Casacuberta, Shoemate, Vadhan & Wagaman 2022, Widespread underestimation of "
        "sensitivity in differentially private libraries and how to fix it"
    )
    adjacency = "replace_one"
    default_k = 100

    def __init__(
        self,
        eps: float = 0.1,
        k: int | None = None,
        low: float = 1.1,
        high: float = 1.1 + 2.0**-50,
    ) -> None:
        super().__init__(eps, k)
        self.low = check_real("low", low)
        self.high = check_real("high", high)
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"need finite low < high, got low={low!r} and high={high!r}")

    @property
    def width(self) -> float:
        """``high - low``: the sensitivity the mechanism claims for its sum."""
        return self.high - self.low

    @property
    def scale(self) -> float:
        """The Laplace scale: the claimed sensitivity over ``eps``."""
        return self.width / self.eps

    def params(self) -> dict[str, Any]:
        return {**super().params(), "low": self.low, "high": self.high}

    def _answers(self, dataset: object) -> np.ndarray:
        records = super()._answers(dataset)
        if ((records < self.low) | (records > self.high)).any():
            raise ValueError(
                f"dataset must hold records in [low, high] = [{self.low!r}, {self.high!r}]"
            )
        return records

    def _released_sum(self, records: np.ndarray) -> float:
        """The float sum less the public ``k * low`` (exact: the two are within a factor 2)."""
        return float_sum(records) - self.k * self.low

    def _sample(self, a: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return self._released_sum(a) + rng.laplace(0.0, self.scale, size)

    def pair_epsilon(self, pair: NeighbouringPair) -> float:
        """The privacy loss of ``pair`` under ideal Laplace noise: ``|s - s'| / scale``, the
        float sums ``s`` and ``s'`` of its two datasets."""
        d, d_prime = (self._answers(x) for x in (pair.d, pair.d_prime))
        return abs(self._released_sum(d) - self._released_sum(d_prime)) / self.scale

    def epsilon_bounds(self) -> tuple[float, float]:
        lower = self.pair_epsilon(self.worst_case_pair())
        upper = self.eps * (self.width + rounding_allowance(self.k, self.low, self.high))
        return lower, upper / self.width

    def worst_case_pair(self) -> NeighbouringPair:
        """Every record at ``low``; in ``D_prime`` the first at ``high``."""
        d = [self.low] * self.k
        return self._pair(d, [self.high, *d[1:]], "all records at low vs the first at high")


class BoundedFloatSumPadded(BoundedFloatSum):
    """The same float sum with its sensitivity padded by the :func:`rounding_allowance`: noise
    of scale ``(high - low + a) / eps``, the remedy of Casacuberta et al. 2022 that accounts for
    the rounding of the sum in its sensitivity. Correct: no pair moves the float sum by more
    than ``high - low + a`` (Higham's bound), so the true ``eps`` is at most the claimed one; on
    :meth:`worst_case_pair` it is ``16 (high - low) eps / (high - low + a)``."""

    registry_name = "bounded_float_sum_padded"

    @property
    def scale(self) -> float:
        return (self.width + rounding_allowance(self.k, self.low, self.high)) / self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        return self.pair_epsilon(self.worst_case_pair()), self.eps
