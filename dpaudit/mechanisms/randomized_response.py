"""k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016 for the k-ary form).

Records are categories ``0 .. k-1``. Every record is reported independently: the true category
with probability ``e^eps / (e^eps + k - 1)``, otherwise one of the ``k - 1`` other categories
uniformly at random. Changing one record (relation ``replace_one``) changes the law of one report
only, and the likelihood ratio of any report is at most ``e^eps``: the mechanism is ``(eps, 0)``-DP.
For ``k = 2`` its trade-off function is exactly ``f_{eps,0}`` (Dong, Roth & Su 2022, "Gaussian
differential privacy", Section 2.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit._core.validation import as_float_array, check_integer, check_positive
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds import tradeoff
from dpaudit.bounds.rdp import RDPCurve, rdp_randomized_response
from dpaudit.mechanisms.base import (
    CurveProfile,
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_rng,
    check_size,
)

__all__ = ["RandomizedResponse"]


class RandomizedResponse(Mechanism):
    """k-ary randomized response applied to every record.

    ``sample(dataset, size, rng)`` returns integer reports of shape ``(size, n_records)``.

    Parameters
    ----------
    eps:
        Privacy parameter: the true category is kept with probability ``e^eps / (e^eps + k - 1)``.
    k:
        Number of categories (``k >= 2``).
    """

    relation = "replace_one"

    def __init__(self, eps: float, k: int = 2) -> None:
        self.eps = check_positive("eps", eps)
        self.k = check_integer("k", k, minimum=2)
        # log P(truth) = -log(1 + (k-1) e^{-eps}); each other category has e^{-eps} times that.
        self.log_p_keep = -math.log1p((self.k - 1) * math.exp(-self.eps))
        self.log_p_other = self.log_p_keep - self.eps

    @property
    def p_keep(self) -> float:
        """Probability ``e^eps / (e^eps + k - 1)`` of reporting the true category."""
        return math.exp(self.log_p_keep)

    @property
    def pure_epsilon(self) -> float:
        """``eps``: the mechanism is ``(eps, 0)``-DP."""
        return self.eps

    def params(self) -> dict[str, Any]:
        """``{"eps": ..., "k": ...}``."""
        return {"eps": self.eps, "k": self.k}

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distribution of one report (losses ``+eps``, ``0``, ``-eps``).

        ``step=None`` puts the grid at multiples of ``eps``, so the PLD and all its
        compositions are exact; a given ``step`` rounds the losses up to that grid (used when
        composing with mechanisms on another grid).
        """
        return pld_lib.randomized_response(self.eps, self.k, step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP curve of k-ary randomized response (exact, both orders)."""
        return rdp_randomized_response(self.eps, self.k, orders=orders)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``exact`` (one report's trade-off; ``f_{eps,0}`` for ``k = 2``), ``pld``, ``rdp``."""
        return {
            "exact": lambda: CurveProfile(tradeoff.randomized_response_tradeoff(self.eps, self.k)),
            "pld": self.pld,
            "rdp": self.rdp,
        }

    def _records(self, dataset: object) -> np.ndarray:
        """Validate ``dataset``: a 1-d array of integer categories in ``[0, k)``."""
        values = as_float_array("dataset", dataset, "an array of categories")
        if values.ndim != 1:
            raise ValueError(
                f"dataset must have shape (n,) (one category per record), got {values.shape}"
            )
        ok = np.isfinite(values) & (values == np.round(values)) & (values >= 0) & (values < self.k)
        if not ok.all():
            bad = values[~ok][0]
            raise ValueError(
                f"dataset records must be integer categories in [0, {self.k - 1}], got {bad!r}"
            )
        return values.astype(np.int64)

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``(n_records,)``: one report per record."""
        return self._records(dataset).shape

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent report vectors, int64 of shape ``(size, n_records)``."""
        x = self._records(dataset)
        size = check_size(size)
        rng = check_rng(rng)
        keep = rng.random((size, x.size)) < self.p_keep
        if self.k == 2:
            flipped = 1 - x
        else:
            flipped = (x + rng.integers(1, self.k, size=(size, x.size))) % self.k
        return np.where(keep, x, flipped)

    def torch_sample(
        self, dataset: np.ndarray, sizes: Sequence[int], generators: Sequence[Any]
    ) -> Any:
        """The device twin of :meth:`sample`: ``sum(sizes)`` report vectors as one int64 tensor
        on the generators' device, block ``i`` (``sizes[i]`` of them) drawn from
        ``generators[i]`` alone."""
        import torch

        x = self._records(dataset)
        device = generators[0].device
        truth = torch.as_tensor(x, dtype=torch.int64, device=device)
        out = torch.empty((sum(sizes), x.size), dtype=torch.int64, device=device)
        start = 0
        for size, generator in zip(sizes, generators, strict=True):
            uniform = torch.empty((size, x.size), dtype=torch.float64, device=device)
            keep = uniform.uniform_(generator=generator) < self.p_keep
            if self.k == 2:
                flipped = 1 - truth
            else:
                shift = torch.empty((size, x.size), dtype=torch.int64, device=device)
                flipped = (truth + shift.random_(1, self.k, generator=generator)) % self.k
            out[start : start + size] = torch.where(keep, truth, flipped)
            start += size
        return out

    def torch_log_density(self, dataset: np.ndarray, outputs: Any) -> Any:
        """The device twin of :meth:`log_density` on reports drawn by :meth:`torch_sample`
        (categories in ``[0, k)``, so every report has positive mass): float64, ``(size,)``."""
        import torch

        x = self._records(dataset)
        truth = torch.as_tensor(x, dtype=torch.int64, device=outputs.device)
        matches = (outputs == truth).sum(dim=1).to(torch.float64)
        return matches * self.log_p_keep + (x.size - matches) * self.log_p_other

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log probability of each report vector, shape ``(size,)``.

        ``m`` reports equal to the truth and ``n - m`` others have log mass
        ``m log p_keep + (n - m) log p_other``; reports that are not categories in ``[0, k)`` have
        probability zero (log mass ``-inf``).
        """
        x = self._records(dataset)
        y = np.asarray(outputs)
        if y.ndim != 2 or y.shape[1] != x.size:
            raise ValueError(
                f"outputs must have shape (size, {x.size}) on this dataset, got {y.shape}"
            )
        if y.dtype.kind in "iub":
            valid = (y >= 0) & (y < self.k)
        else:
            y = y.astype(float)
            if np.isnan(y).any():
                raise ValueError("outputs must not contain NaN")
            valid = (y >= 0) & (y < self.k) & (y == np.floor(y))
        # logical_and.reduce and count_nonzero are much faster than .all/.sum on short rows
        in_support = np.logical_and.reduce(valid, axis=1)
        matches = np.count_nonzero(y == x, axis=1)
        log_mass = matches * self.log_p_keep + (x.size - matches) * self.log_p_other
        return np.where(in_support, log_mass, -np.inf)

    def worst_case_pair(self) -> NeighbouringPair:
        """One record, category 0 against category 1 (relation ``replace_one``)."""
        return NeighbouringPair(
            np.array([0]),
            np.array([1]),
            "replace_one",
            description="one record: category 0 vs category 1",
        )
