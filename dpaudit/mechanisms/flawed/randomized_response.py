"""Randomized response with the right and with the wrong keep probability (Warner 1965; Kairouz, Oh
& Viswanath 2016)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._core.validation import check_integer
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism

__all__ = ["RandomizedResponseBinary", "RandomizedResponseBinaryFormula"]


class RandomizedResponseBinary(FlawedMechanism):
    """Binary randomized response (Warner 1965): report the bit with probability
    ``e^eps/(1 + e^eps)``, else its complement. Correct; true ``eps`` exactly ``eps``. The dataset
    is one category in ``{0, ..., m - 1}`` (``m = 2`` here).
    """

    registry_name = "randomized_response"
    citation = "Warner 1965"
    default_k = 1
    categories = 2

    def _keep(self) -> float:
        return math.exp(self.eps) / (1.0 + math.exp(self.eps))

    def epsilon_bounds(self) -> tuple[float, float]:
        # keep / (other / (m - 1)) = e^eps (m - 1)
        value = self.eps + math.log(self.categories - 1)
        return (value, value)

    def _answers(self, dataset: object) -> np.ndarray:
        a = super()._answers(dataset)
        ok = (a == np.round(a)) & (a >= 0) & (a < self.categories)
        if not ok.all():
            raise ValueError(
                f"dataset must hold one category in [0, {self.categories - 1}], got {a.tolist()}"
            )
        return a

    def _sample(self, a, size, rng):
        x = int(a[0])
        keep = rng.random(size) < self._keep()
        other = (x + rng.integers(1, self.categories, size)) % self.categories
        return np.where(keep, x, other)

    def worst_case_pair(self) -> NeighbouringPair:
        """Category 0 vs category 1."""
        return self._pair([0.0], [1.0], "category 0 vs 1")


class RandomizedResponseBinaryFormula(RandomizedResponseBinary):
    """``m``-ary randomized response that keeps the truth with the *binary* probability
    ``e^eps/(1 + e^eps)`` and otherwise reports one of the ``m - 1`` other categories. The ratio
    of "truth" to "a given other category" is ``e^eps (m - 1)``: true ``eps`` exactly
    ``eps + log(m - 1)`` (the correct probability is ``e^eps/(e^eps + m - 1)``; Kairouz, Oh &
    Viswanath 2016).
    """

    registry_name = "randomized_response_binary_formula"
    citation = "Kairouz, Oh & Viswanath 2016 (correct k-ary form)"

    def __init__(self, eps: float = 0.1, k: int | None = None, m: int = 4) -> None:
        super().__init__(eps, k)
        self.categories = check_integer("m", m, minimum=2)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k`` and the number of categories ``m``."""
        return {**super().params(), "m": self.categories}
