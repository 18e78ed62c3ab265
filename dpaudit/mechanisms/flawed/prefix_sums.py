"""Prefix sums of a histogram: noise on the counts (correct) or on the sums (Wang et al. 2019;
the continual-counting mistake)."""

from __future__ import annotations

import numpy as np

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = ["PrefixSum", "NoisyPrefixSums"]


class PrefixSum(FlawedMechanism):
    """Prefix sums of a noisy histogram: ``cumsum(a + Lap(1/eps))`` (Wang et al. 2019, PLDI,
    "PrefixSum"). Correct for histogram neighbours (one count moves by one): the noisy counts are
    the Laplace mechanism and the prefix sums a bijection of them, so the true ``eps`` is exactly
    ``eps``. (DP-Sniper audits it with every answer moving, where it is ``k eps``-DP.)
    """

    registry_name = "prefix_sum"
    citation = "Wang, Ding, Wang, Kifer & Zhang 2019 (PLDI), PrefixSum"
    adjacency = "l1"
    default_k = 10

    def epsilon_bounds(self) -> tuple[float, float]:
        return (self.eps, self.eps)

    def _sample(self, a, size, rng):
        return np.cumsum(a + rng.laplace(0.0, 1.0 / self.eps, (size, self.k)), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1]`` vs ``[2, 1, ..., 1]``: the first count moves every prefix sum."""
        d = [1.0] * self.k
        return self._pair(d, [2.0] + d[1:], "first count 1 vs 2")


class NoisyPrefixSums(PrefixSum):
    """Noise added to every prefix sum instead of every count: ``cumsum(a) + Lap(1/eps)`` per
    entry. Changing the first count moves all ``k`` sums, so this is the Laplace mechanism with
    ``l1`` sensitivity ``k``: true ``eps`` exactly ``k eps`` (the ratio ``e^(k eps)`` is attained
    where every output lies below both sums).
    """

    registry_name = "noisy_prefix_sums"
    citation = "the classic continual-counting mistake (cf. Chan, Shi & Song 2011)"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (self.k * self.eps, self.k * self.eps)

    def _sample(self, a, size, rng):
        return np.cumsum(a) + rng.laplace(0.0, 1.0 / self.eps, (size, self.k))
