"""Report noisy max: the index (or the value) of the largest noisy answer, with Laplace or
exponential noise (Ding et al. 2018, Algorithms 5 to 8; StatDP)."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = [
    "ReportNoisyMax",
    "ReportNoisyMaxExponential",
    "ReportNoisyMaxValue",
    "ReportNoisyMaxExponentialValue",
]


class ReportNoisyMax(FlawedMechanism):
    """Report noisy max: the index of the largest ``a_i + Lap(2/eps)`` (Ding et al. 2018,
    Algorithm 5). Correct: each noisy answer alone is ``eps/2``-DP and the standard argument
    (Dwork & Roth 2014, Claim 3.9, with scale doubled for answers that move in both
    directions) gives ``eps``-DP. The exact ``eps`` over all pairs is not known.
    """

    registry_name = "report_noisy_max"
    citation = "Ding et al. 2018, Algorithm 5; Dwork & Roth 2014, Claim 3.9"

    def _noise(self, rng, size):
        return rng.laplace(0.0, 2.0 / self.eps, (size, self.k))

    def epsilon_bounds(self) -> tuple[float, float]:
        return (0.0, self.eps)

    def _sample(self, a, size, rng):
        return np.argmax(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[2, 0, 0, ...]`` (StatDP's counterexample search)."""
        return self._pair(
            [1.0] * self.k, [2.0] + [0.0] * (self.k - 1), "first answer up, rest down"
        )


class ReportNoisyMaxExponential(ReportNoisyMax):
    """Report noisy max with ``Exp(2/eps)`` noise (Ding et al. 2018, Algorithm 6). Correct
    (equivalent to the exponential mechanism's "permute and flip" form; McKenna & Sheldon 2020).
    """

    registry_name = "report_noisy_max_exponential"
    citation = "Ding et al. 2018, Algorithm 6; McKenna & Sheldon 2020"

    def _noise(self, rng, size):
        return rng.exponential(2.0 / self.eps, (size, self.k))

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[0, 2, 2, ...]``."""
        return self._pair(
            [1.0] * self.k, [0.0] + [2.0] * (self.k - 1), "first answer down, rest up"
        )


class ReportNoisyMaxValue(ReportNoisyMax):
    """Report noisy max that releases the noisy maximum *value* instead of its index (Ding et
    al. 2018, Algorithm 7). True ``eps`` exactly ``k eps / 2`` (``0.25`` for ``k = 5``):

    - upper: the value is a function of the ``k`` noisy answers, each ``eps/2``-DP;
    - lower: with ``a = 0`` and ``a' = 1`` (every answer up by one) and ``b = 2/eps``, for
      ``y < 0`` the density of the maximum is ``k F(y)^(k-1) f(y)`` with ``F(y) = e^(y/b)/2``, so
      ``p(y)/q(y) = e^(k/b) = e^(k eps/2)`` on the whole event ``{y < 0}`` (probability
      ``2^-k`` under ``a``).
    """

    registry_name = "report_noisy_max_value"
    citation = "Ding et al. 2018, Algorithm 7"

    def epsilon_bounds(self) -> tuple[float, float]:
        value = self.k * self.eps / 2.0
        return (value, value)

    def _sample(self, a, size, rng):
        return np.max(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0, ..., 0]`` vs ``[1, ..., 1]``: every answer moves up by one."""
        return self._pair([0.0] * self.k, [1.0] * self.k, "every answer up by one")


class ReportNoisyMaxExponentialValue(ReportNoisyMaxExponential):
    """Report noisy max with exponential noise releasing the maximum value (Ding et al. 2018,
    Algorithm 8). True ``eps`` infinite: noise is non-negative, so with ``a = 1`` and ``a' = 2``
    (every answer up by one) outputs in ``[1, 2)`` have probability ``(1 - e^(-eps/2))^k > 0``
    under ``a`` and zero under ``a'``.
    """

    registry_name = "report_noisy_max_exponential_value"
    citation = "Ding et al. 2018, Algorithm 8"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _sample(self, a, size, rng):
        return np.max(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1]`` vs ``[2, ..., 2]``."""
        return self._pair([1.0] * self.k, [2.0] * self.k, "every answer up by one")
