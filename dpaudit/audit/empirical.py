"""Empirical trade-off curves: from per-bin score counts to ``(alpha, beta)`` points with
confidence bounds and a simultaneous band.

With ``N0`` scores under ``D`` and ``N1`` under ``D_prime`` binned on fixed thresholds
``t_0 < ... < t_{E-1}``, the test at ``t_j`` answers "D_prime" iff ``score >= t_j``; it has
``FP_j = #{score >= t_j under D}`` false positives and ``FN_j = #{score < t_j under D_prime}``
false negatives, so ``alpha_j = FP_j / N0`` and ``beta_j = FN_j / N1`` (docs/theory.md#empirical).
Ties inside a bin are resolved by randomised tests: the curve is the lower convex hull of the
points (DRS Section 2; :func:`dpaudit.bounds.tradeoff.from_points`).

Two kinds of confidence statement (``gamma = 1 - confidence``):

- **pointwise** (``alpha_upper`` ...): one-sided Clopper-Pearson bounds at level ``1 - gamma/2``
  each, so that ``(alpha_upper, beta_upper)`` of one threshold chosen without looking at these
  counts holds jointly at ``1 - gamma`` (docs/theory.md#empirical).
- **band** (``band_alpha_upper`` ...): all four bounds at every threshold at once, at level
  ``1 - gamma``. Half of ``gamma`` pays for Clopper-Pearson bounds made simultaneous by Bonferroni
  over the ``4E`` one-sided bounds (``gamma / (8E)`` each); the other half for the DKW-Massart band
  of each of the two score distributions (``gamma/4`` each, two-sided). Both hold together with
  probability ``>= 1 - gamma``, so at every point the tighter of the two is valid; ``band_method``
  says which one was used.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from dpaudit._core.validation import check_probability
from dpaudit.audit.confidence import clopper_pearson_lower, clopper_pearson_upper, dkw_radius
from dpaudit.bounds.tradeoff import PiecewiseLinearTradeoff, from_points

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = ["EmpiricalTradeoff", "cumulative_errors"]


def cumulative_errors(
    counts_d: np.ndarray, counts_d_prime: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(FP_j, FN_j)`` at the ``E`` inner edges from per-bin counts of length ``E + 1``.

    ``FP_j`` counts ``D`` scores in bins ``> j`` (score ``>= t_j``), ``FN_j`` counts ``D_prime``
    scores in bins ``<= j`` (score ``< t_j``).
    """
    c0 = np.asarray(counts_d, dtype=np.int64)
    c1 = np.asarray(counts_d_prime, dtype=np.int64)
    fp = np.cumsum(c0[::-1])[::-1][1:]
    fn = np.cumsum(c1)[:-1]
    return fp, fn


def _unique_bound(fn, k: np.ndarray, n: int, gamma: float) -> np.ndarray:
    """Apply a Clopper-Pearson bound once per distinct count (tails repeat counts a lot)."""
    values, inverse = np.unique(k, return_inverse=True)
    return fn(values, n, gamma)[inverse]


#: The four bounds of the trade-off points: upper and lower, on ``alpha`` and on ``beta``.
_BOUNDS = ("alpha_upper", "alpha_lower", "beta_upper", "beta_lower")


class EmpiricalTradeoff:
    """Measured trade-off points of a threshold attack, with Clopper-Pearson bounds and a band.

    Parameters
    ----------
    thresholds:
        The ``E`` sorted finite thresholds (bin edges) fixed before the counts were taken.
    counts_d, counts_d_prime:
        Number of scores per bin under ``D`` and under ``D_prime``; ``E + 1`` bins each (bin 0 is
        below ``t_0``, bin ``E`` at or above ``t_{E-1}``).
    confidence:
        ``1 - gamma``; see the module docstring for how it is spent.
    name:
        Label of the curve.
    """

    def __init__(
        self,
        thresholds: np.ndarray,
        counts_d: np.ndarray,
        counts_d_prime: np.ndarray,
        *,
        confidence: float = 0.95,
        name: str = "empirical",
    ) -> None:
        self.thresholds = np.asarray(thresholds, dtype=float)
        self.counts_d = np.asarray(counts_d, dtype=np.int64)
        self.counts_d_prime = np.asarray(counts_d_prime, dtype=np.int64)
        e = self.thresholds.size
        if self.thresholds.ndim != 1 or e < 1:
            raise ValueError("thresholds must be a 1-d array of at least one threshold")
        if self.counts_d.shape != (e + 1,) or self.counts_d_prime.shape != (e + 1,):
            raise ValueError(
                f"counts_d and counts_d_prime must have {e + 1} bins (len(thresholds) + 1), "
                f"got {self.counts_d.shape} and {self.counts_d_prime.shape}"
            )
        if (self.counts_d < 0).any() or (self.counts_d_prime < 0).any():
            raise ValueError("counts must be >= 0")
        self.n_d = int(self.counts_d.sum())
        self.n_d_prime = int(self.counts_d_prime.sum())
        if self.n_d < 1 or self.n_d_prime < 1:
            raise ValueError(
                f"need at least one score under each dataset, got {self.n_d} and {self.n_d_prime}"
            )
        self.confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
        self.gamma = 1.0 - self.confidence
        self.name = name
        self.fp, self.fn = cumulative_errors(self.counts_d, self.counts_d_prime)

    @classmethod
    def from_scores(
        cls,
        scores_d: np.ndarray,
        scores_d_prime: np.ndarray,
        thresholds: np.ndarray | None = None,
        *,
        confidence: float = 0.95,
        name: str = "empirical",
    ) -> EmpiricalTradeoff:
        """Count raw scores on ``thresholds`` (default: every distinct score value)."""
        s0 = np.asarray(scores_d, dtype=float).ravel()
        s1 = np.asarray(scores_d_prime, dtype=float).ravel()
        if np.isnan(s0).any() or np.isnan(s1).any():
            raise ValueError("scores must not contain NaN")
        if thresholds is None:
            t = np.unique(np.concatenate([s0, s1]))
            t = t[np.isfinite(t)]
            if t.size == 0:
                t = np.array([0.0])
        else:
            t = np.asarray(thresholds, dtype=float)
        c0 = np.bincount(np.searchsorted(t, s0, side="right"), minlength=t.size + 1)
        c1 = np.bincount(np.searchsorted(t, s1, side="right"), minlength=t.size + 1)
        return cls(t, c0, c1, confidence=confidence, name=name)

    # ----------------------------------------------------------------- point estimates
    @property
    def alpha(self) -> np.ndarray:
        """Estimated type I error ``FP_j / N0`` at every threshold."""
        return self.fp / self.n_d

    @property
    def beta(self) -> np.ndarray:
        """Estimated type II error ``FN_j / N1`` at every threshold."""
        return self.fn / self.n_d_prime

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)`` at every threshold."""
        return self.alpha, self.beta

    # ----------------------------------------------------------------- pointwise bounds
    def _clopper_pearson(self, key: str, gamma: float) -> np.ndarray:
        """The Clopper-Pearson bound ``key`` (one of :data:`_BOUNDS`) at each threshold, each
        with error probability ``gamma``."""
        bound = clopper_pearson_upper if key.endswith("upper") else clopper_pearson_lower
        count, n = (self.fp, self.n_d) if key.startswith("alpha") else (self.fn, self.n_d_prime)
        return _unique_bound(bound, count, n, gamma)

    @cached_property
    def alpha_upper(self) -> np.ndarray:
        """Clopper-Pearson upper bound on ``alpha`` at each threshold, level ``1 - gamma/2``."""
        return self._clopper_pearson("alpha_upper", self.gamma / 2)

    @cached_property
    def beta_upper(self) -> np.ndarray:
        """Clopper-Pearson upper bound on ``beta`` at each threshold, level ``1 - gamma/2``."""
        return self._clopper_pearson("beta_upper", self.gamma / 2)

    @cached_property
    def alpha_lower(self) -> np.ndarray:
        """Clopper-Pearson lower bound on ``alpha`` at each threshold, level ``1 - gamma/2``."""
        return self._clopper_pearson("alpha_lower", self.gamma / 2)

    @cached_property
    def beta_lower(self) -> np.ndarray:
        """Clopper-Pearson lower bound on ``beta`` at each threshold, level ``1 - gamma/2``."""
        return self._clopper_pearson("beta_lower", self.gamma / 2)

    # ----------------------------------------------------------------- simultaneous band
    @property
    def band_gamma_bonferroni(self) -> float:
        """Error probability of each Clopper-Pearson bound in the band: ``gamma / (8E)``."""
        return self.gamma / (8 * self.thresholds.size)

    @cached_property
    def _band(self) -> dict[str, np.ndarray]:
        g = self.band_gamma_bonferroni
        r0 = float(dkw_radius(self.n_d, self.gamma / 4))
        r1 = float(dkw_radius(self.n_d_prime, self.gamma / 4))
        a, b = self.alpha, self.beta
        cp = {key: self._clopper_pearson(key, g) for key in _BOUNDS}
        dkw = {
            "alpha_upper": np.minimum(a + r0, 1.0),
            "alpha_lower": np.maximum(a - r0, 0.0),
            "beta_upper": np.minimum(b + r1, 1.0),
            "beta_lower": np.maximum(b - r1, 0.0),
        }
        out: dict[str, np.ndarray] = {}
        for key in cp:
            upper = key.endswith("upper")
            use_dkw = dkw[key] < cp[key] if upper else dkw[key] > cp[key]
            out[key] = np.where(use_dkw, dkw[key], cp[key])
            out[key + "_method"] = np.where(use_dkw, "dkw", "bonferroni")
        return out

    @property
    def band_alpha_upper(self) -> np.ndarray:
        """Simultaneous upper bound on ``alpha`` (all thresholds, all four sides at once)."""
        return self._band["alpha_upper"]

    @property
    def band_alpha_lower(self) -> np.ndarray:
        """Simultaneous lower bound on ``alpha``."""
        return self._band["alpha_lower"]

    @property
    def band_beta_upper(self) -> np.ndarray:
        """Simultaneous upper bound on ``beta``."""
        return self._band["beta_upper"]

    @property
    def band_beta_lower(self) -> np.ndarray:
        """Simultaneous lower bound on ``beta``."""
        return self._band["beta_lower"]

    @property
    def band_method(self) -> dict[str, np.ndarray]:
        """Per bound and threshold, which construction was tighter: ``"dkw"``/``"bonferroni"``."""
        return {k[: -len("_method")]: v for k, v in self._band.items() if k.endswith("_method")}

    # ----------------------------------------------------------------- curves
    def curve(self) -> PiecewiseLinearTradeoff:
        """The empirical trade-off curve: lower convex hull of the ``(alpha, beta)`` points."""
        return from_points(self.alpha, self.beta, name=self.name, kind="empirical")

    def upper_band_curve(self) -> PiecewiseLinearTradeoff:
        """Hull of the band's ``(alpha+, beta+)`` corners.

        With probability ``>= confidence`` the trade-off function ``T(P, Q)`` of the audited
        pair lies below it everywhere: ``T`` is convex and ``T(alpha+_j) <= T(alpha_j) <= beta_j
        <= beta+_j`` at every threshold, so ``T`` is below every chord of those corners.
        """
        return from_points(
            self.band_alpha_upper,
            self.band_beta_upper,
            name=f"{self.name} (upper band)",
            kind="empirical",
        )

    def lower_band_curve(self) -> PiecewiseLinearTradeoff:
        """Hull of the band's ``(alpha-, beta-)`` corners.

        With probability ``>= confidence`` it lies below the true curve of the thresholded score
        on this grid (every true point dominates its lower corner). For the likelihood-ratio
        score on a fine grid that curve is ``T(P, Q)`` up to the grid's resolution.
        """
        return from_points(
            self.band_alpha_lower,
            self.band_beta_lower,
            name=f"{self.name} (lower band)",
            kind="empirical",
        )

    # ----------------------------------------------------------------- tables
    def to_frame(self) -> pd.DataFrame:
        """One row per threshold: counts, estimates, pointwise bounds and the band."""
        import pandas as pd

        band = self._band
        return pd.DataFrame(
            {
                "threshold": self.thresholds,
                "fp": self.fp,
                "fn": self.fn,
                "alpha": self.alpha,
                "beta": self.beta,
                "alpha_lower": self.alpha_lower,
                "alpha_upper": self.alpha_upper,
                "beta_lower": self.beta_lower,
                "beta_upper": self.beta_upper,
                "band_alpha_lower": band["alpha_lower"],
                "band_alpha_upper": band["alpha_upper"],
                "band_beta_lower": band["beta_lower"],
                "band_beta_upper": band["beta_upper"],
                "band_alpha_lower_method": band["alpha_lower_method"],
                "band_alpha_upper_method": band["alpha_upper_method"],
                "band_beta_lower_method": band["beta_lower_method"],
                "band_beta_upper_method": band["beta_upper_method"],
            }
        )

    def __repr__(self) -> str:
        return (
            f"<EmpiricalTradeoff {self.name}: {self.thresholds.size} thresholds, "
            f"N0={self.n_d}, N1={self.n_d_prime}, confidence={self.confidence}>"
        )
