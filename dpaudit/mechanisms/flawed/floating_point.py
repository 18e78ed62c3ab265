"""The Laplace mechanism sampled naively in double precision: Mironov 2012 ("On significance of
the least significant bits for differential privacy", CCS)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = ["LaplaceFloat"]


_TWO52 = 2.0**52
_INV53 = 2.0**-53


def _naive_laplace(x: float, u: np.ndarray, scale: float) -> np.ndarray:
    """``x + noise`` with the textbook inverse-CDF sampler on a 53-bit uniform ``u`` in [0, 1)
    (numpy's ``laplace`` uses the same algorithm): ``scale log(2u)`` below 1/2,
    ``-scale log(2 - 2u)`` above."""
    with np.errstate(divide="ignore"):
        noise = np.where(u < 0.5, scale * np.log(u + u), -scale * np.log(2.0 - u - u))
    return x + noise


class LaplaceFloat(FlawedMechanism):
    """The Laplace mechanism implemented naively in double precision (Mironov 2012).

    ``y = a + noise`` with the inverse-CDF sampler on a 53-bit uniform. The set of doubles the
    sampler can produce is sparse and depends on ``a``: most doubles near ``1 + n`` cannot be
    written ``n'`` for any producible noise ``n'``. Outputs on ``a' = 1`` that ``a = 0`` can never
    produce have positive probability, so the true ``eps`` is infinite (Mironov 2012's attack on
    the textbook sampler).
    :meth:`in_support` decides exactly whether an output can occur on a given answer (it redoes
    the sampler's arithmetic for the few uniforms near the inverse), and :meth:`features` turns it
    into the distinguishing statistic ``1[y producible on a'] - 1[y producible on a]``.
    """

    registry_name = "laplace_float"
    citation = "Mironov 2012, On significance of the least significant bits for DP"
    default_k = 1
    #: Uniforms checked on each side of the inverse (the inverse is accurate to a few units).
    window = 8

    @property
    def scale(self) -> float:
        """Laplace scale ``1/eps`` (sensitivity one)."""
        return 1.0 / self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _uniforms(self, size: int, rng: np.random.Generator) -> np.ndarray:
        u = rng.random(size)
        zero = u == 0.0
        while zero.any():  # u = 0 (probability 2^-53) is rejected, as numpy does
            u[zero] = rng.random(int(zero.sum()))
            zero = u == 0.0
        return u

    def _sample(self, a, size, rng):
        return _naive_laplace(float(a[0]), self._uniforms(size, rng), self.scale)

    def in_support(self, answer: float, outputs: np.ndarray) -> np.ndarray:
        """Whether each output can be produced on the query answer ``answer``.

        The sampler's arithmetic is redone for the ``2 * window + 1`` uniforms nearest to the
        inverse of each output (branch ``u < 1/2`` for outputs at or below the answer,
        ``u >= 1/2`` at or above it). For the default parameters every output sampled on
        ``answer`` is recognised (tested); a miss could only weaken an attack, never a bound.
        """
        y = np.asarray(outputs, dtype=float).reshape(-1)
        x = float(answer)
        b = self.scale
        offsets = np.arange(-self.window, self.window + 1, dtype=np.float64)
        hit = np.zeros(y.size, dtype=bool)
        for low in (True, False):
            sel = np.flatnonzero(y <= x) if low else np.flatnonzero(y >= x)
            # u < 1/2: y = x + b log(2u), 2u = k 2^-52, k in [1, 2^52);
            # u >= 1/2: y = x - b log(2 - 2u), 2 - 2u = m 2^-52, m in [1, 2^52].
            exponent = (y[sel] - x) / b if low else (x - y[sel]) / b
            base = np.floor(np.exp(np.minimum(exponent, 0.0)) * _TWO52)
            cand = np.clip(base[:, None] + offsets, 1.0, _TWO52 - 1.0 if low else _TWO52)
            u = cand * _INV53 if low else (2.0**53 - cand) * _INV53
            hit[sel] |= (_naive_laplace(x, u, b) == y[sel, None]).any(axis=1)
        return hit

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """``1[y producible on d_prime] - 1[y producible on d]`` for every output."""
        a0, a1 = float(np.asarray(pair.d).ravel()[0]), float(np.asarray(pair.d_prime).ravel()[0])

        def support_difference(outputs: np.ndarray) -> np.ndarray:
            y = np.asarray(outputs, dtype=float).reshape(-1)
            return self.in_support(a1, y).astype(float) - self.in_support(a0, y).astype(float)

        return support_difference

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")
