"""Noisy histograms: a Laplace draw added to every count (Ding et al. 2018, Algorithms 9 and 10;
StatDP). Neighbouring histograms differ by one in one count."""

from __future__ import annotations

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = ["NoisyHist", "NoisyHistWrongScale"]


class NoisyHist(FlawedMechanism):
    """Noisy histogram, ``a + Lap(1/eps)`` per count (Ding et al. 2018, Algorithm 9). Correct.

    True ``eps`` exactly ``eps``: with one count moving by one this is the Laplace mechanism
    with ``l1`` sensitivity one (Dwork et al. 2006), and the ratio ``e^eps`` is attained for
    outputs below both counts.
    """

    registry_name = "noisy_hist"
    citation = "Ding et al. 2018, Algorithm 9; Dwork, McSherry, Nissim & Smith 2006"
    adjacency = "l1"

    @property
    def scale(self) -> float:
        """Laplace scale of every count."""
        return 1.0 / self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        return (1.0 / self.scale, 1.0 / self.scale)

    def _sample(self, a, size, rng):
        return a + rng.laplace(0.0, self.scale, (size, self.k))

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[2, 1, ...]`` (the pair StatDP reports)."""
        d = [1.0] * self.k
        return self._pair(d, [2.0] + d[1:], "first count 1 vs 2")


class NoisyHistWrongScale(NoisyHist):
    """Noisy histogram with the scale inverted, ``Lap(eps)`` instead of ``Lap(1/eps)`` (Ding et
    al. 2018, Algorithm 10). True ``eps`` exactly ``1/eps`` (``10`` for ``eps = 0.1``): the Laplace
    mechanism with scale ``eps`` and sensitivity one.
    """

    registry_name = "noisy_hist_wrong_scale"
    citation = "Ding et al. 2018, Algorithm 10"

    @property
    def scale(self) -> float:
        """Laplace scale of every count (the bug: ``eps`` instead of ``1/eps``)."""
        return self.eps
