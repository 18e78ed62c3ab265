"""Exact-value leaks: mechanisms that, on a rare code path, publish an exact answer (or an exact
zero) that the noisy path almost never produces. The atom is an output event of probability zero
under a neighbour, so no finite ``eps`` holds; the delta-leak variants claim ``(eps, delta)``-DP
with a small ``delta`` that the atom exceeds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._core.validation import check_probability
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = [
    "LaplaceSkippedNoise",
    "DeltaLeakMechanism",
    "LaplaceRareExactAnswer",
    "LaplacePairExactCoordinate",
    "NoisyHistZeroBinUnnoised",
]


class _ExactAnswerLeak(FlawedMechanism):
    """A scalar Laplace release ``a + Lap(1/eps)`` that publishes the exact answer ``a`` instead
    with probability ``leak`` (default :attr:`default_leak`): the sampler, parameters and pair
    of the exact-answer leaks."""

    default_k = 1
    #: The probability of the noise-free code path when ``leak`` is not given.
    default_leak = 1e-3

    def __init__(self, eps: float = 0.1, k: int | None = None, leak: float | None = None) -> None:
        super().__init__(eps, k)
        value = self.default_leak if leak is None else leak
        self.leak = check_probability("leak", value, low_open=True)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k`` and ``leak``."""
        return {**super().params(), "leak": self.leak}

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _sample(self, a, size, rng):
        noise = rng.laplace(0.0, 1.0 / self.eps, size)
        exact = rng.random(size) < self.leak
        return a[0] + np.where(exact, 0.0, noise)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")


class LaplaceSkippedNoise(_ExactAnswerLeak):
    """A Laplace mechanism whose noise is skipped with probability ``leak`` (default ``1e-3``; a
    rare code path, e.g. a cache or an error handler, returning the exact answer). True ``eps``
    infinite in exact arithmetic: the atom at the exact answer ``a`` has probability at least
    ``leak`` under ``a`` and zero under ``a' != a``. (In double precision the atom has probability
    of order ``2^-53`` under ``a'``, when the noise happens to equal ``a - a'`` exactly; the leak
    is still enormous.)
    """

    registry_name = "laplace_skipped_noise"
    citation = "rare-event leak; cf. the noise-free code paths found by Ding et al. 2018"


# Mechanisms that claim (eps, delta)-DP with a small delta and leak through exact output events
# that a smooth score cannot see (the events the delta-leak attack looks for).


class DeltaLeakMechanism(FlawedMechanism):
    """Base class of mechanisms that claim ``(eps, claimed_delta)``-DP and leak through an exact
    output event. Their true privacy is not ``(eps', claimed_delta)`` for any ``eps'``: an event
    ``E`` with ``P_D(E) = 0`` and ``P_D'(E) > claimed_delta`` exists (proved per class), so
    :meth:`epsilon_bounds` is ``(inf, inf)`` at ``delta = claimed_delta``."""

    default_k = 1
    claimed_delta = 1e-6

    def epsilon_bounds(self) -> tuple[float, float]:
        """``(inf, inf)``: no ``eps`` makes the mechanism ``(eps, claimed_delta)``-DP."""
        return (math.inf, math.inf)

    def claimed_curve(self) -> TradeoffCurve:
        """The claim as a trade-off curve."""
        return approx_dp(self.eps, self.claimed_delta)

    def _claim_curve(self) -> TradeoffCurve:
        return self.claimed_curve()

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")


class LaplaceRareExactAnswer(_ExactAnswerLeak, DeltaLeakMechanism):
    """Laplace mechanism ``a + Lap(1/eps)`` that, with probability ``leak`` (default ``1e-4``),
    publishes the exact answer ``a`` (a cache hit or an error path skipping the noise).

    On the pair ``a = 0`` vs ``a' = 1`` the event ``E = {y = 1}`` has ``P_a'(E) >= leak`` and
    ``P_a(E) = P(Lap = 1) = 0`` in exact arithmetic (in double precision at most ``2^-53``
    times the noise density bound, far below ``1e-12``), so with ``leak > claimed_delta`` the
    claim fails for every ``eps``.
    """

    registry_name = "laplace_rare_exact_answer"
    citation = "rare noise-free code path; cf. Ding et al. 2018 and Lokna et al. 2023"
    default_leak = 1e-4


class LaplacePairExactCoordinate(LaplaceRareExactAnswer):
    """Two-coordinate release ``(a + Lap, a + Lap)`` (independent noise, ``eps/2`` each) whose
    second coordinate is, with probability ``leak`` (default ``1e-3``), the exact answer ``a``.

    On ``a = 0`` vs ``a' = 1`` the event ``E = {y_2 = 1}`` has ``P_a'(E) >= leak`` and
    ``P_a(E) = 0`` (exact arithmetic), so the ``(eps, claimed_delta)`` claim fails for every
    ``eps`` when ``leak > claimed_delta``. Whole output rows never repeat (the first
    coordinate is continuous): only the per-coordinate event shows the leak.
    """

    registry_name = "laplace_pair_exact_coordinate"
    citation = "exact value in one coordinate of a vector release"
    default_leak = 1e-3

    def _sample(self, a, size, rng):
        scale = 2.0 / self.eps
        first = a[0] + rng.laplace(0.0, scale, size)
        second = a[0] + rng.laplace(0.0, scale, size)
        exact = rng.random(size) < self.leak
        return np.column_stack([first, np.where(exact, a[0], second)])


class NoisyHistZeroBinUnnoised(DeltaLeakMechanism):
    """Noisy histogram ``a + Lap(1/eps)`` per count that releases a count of zero as an exact
    ``0`` (an "empty bins stay empty" shortcut).

    On ``[1, 0, 1, ...]`` vs ``[1, 1, 1, ...]`` (one count moves by one) the event
    ``E = {y_2 = 0}`` has ``P_D(E) = 1`` and ``P_D'(E) = P(1 + Lap = 0) = 0``: not
    ``(eps', delta)``-DP for any ``eps'`` and ``delta < 1``.
    """

    registry_name = "noisy_hist_zero_bin_unnoised"
    citation = "empty-bin shortcut in a noisy histogram"
    adjacency = "l1"
    default_k = 5

    def _sample(self, a, size, rng):
        noisy = a + rng.laplace(0.0, 1.0 / self.eps, (size, self.k))
        return np.where(a == 0.0, 0.0, noisy)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 0, 1, ...]`` vs ``[1, 1, 1, ...]``."""
        d_prime = [1.0] * self.k
        d = list(d_prime)
        d[min(1, self.k - 1)] = 0.0
        return self._pair(d, d_prime, "second count 0 vs 1")
