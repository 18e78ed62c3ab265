"""Trade-off functions: the common currency of every bound in dpaudit.

A trade-off function ``f = T(P, Q)`` maps a type I error ``alpha`` to the smallest type II error
``beta`` any test of ``P`` against ``Q`` can reach (Dong, Roth & Su 2022, "Gaussian differential
privacy", Definition 2). It is convex, continuous, non-increasing and ``f(alpha) <= 1 - alpha``.
Every theoretical object in dpaudit (closed forms, PLDs, RDP curves, composition theorems) can
produce one, which is what makes them comparable with the empirical curves of an audit.

Conventions (THEORY.md section 0): ``alpha = E_P[phi]`` is the false-positive rate,
``beta = 1 - E_Q[phi]`` the false-negative rate, with ``phi`` the probability of answering
"the output came from D_prime".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

from dpaudit.bounds.validation import (
    check_array_in_unit_interval,
    check_choice,
    check_nonnegative,
    check_probability,
)

__all__ = [
    "TradeoffCurve",
    "PiecewiseLinearTradeoff",
    "from_points",
    "KINDS",
]

#: What a curve is, as a statement about the mechanism: ``exact`` (the true curve),
#: ``bound`` (a valid lower bound on the true curve, i.e. a valid privacy guarantee),
#: ``approximation`` (neither, e.g. the GDP central limit), ``empirical`` (measured points).
KINDS = ("exact", "bound", "approximation", "empirical", "claim")

_ArrayFn = Callable[[np.ndarray], np.ndarray]


def _alpha_grid(n: int) -> np.ndarray:
    """A grid on [0, 1] that is dense near both ends (log-spaced) and linear in between."""
    tail = np.geomspace(1e-12, 1e-2, max(n // 4, 8))
    middle = np.linspace(0.0, 1.0, max(n // 2, 8))
    return np.unique(np.concatenate([[0.0, 1.0], tail, middle, 1.0 - tail]))


class TradeoffCurve:
    """A trade-off function, as a vectorised callable on ``alpha`` in [0, 1].

    Parameters
    ----------
    fn:
        Vectorised function ``alpha -> beta``; it receives a float array in [0, 1].
    name:
        Label used in tables and figures (e.g. ``"GDP(mu=1)"``).
    kind:
        One of :data:`KINDS`; says whether the curve is exact, a bound, an approximation, ...
    symmetric:
        ``True`` when ``f`` equals its own inverse (then ``inverse()`` returns ``self``).
    inverse_fn:
        The inverse function ``f^{-1}`` when known in closed form.
    delta_fn:
        The dual privacy profile ``eps -> delta(eps)`` when known in closed form.
    """

    def __init__(
        self,
        fn: _ArrayFn,
        *,
        name: str,
        kind: str = "exact",
        symmetric: bool = False,
        inverse_fn: _ArrayFn | None = None,
        delta_fn: _ArrayFn | None = None,
    ) -> None:
        self._fn = fn
        self.name = name
        self.kind = check_choice("kind", kind, KINDS)
        self.symmetric = bool(symmetric)
        self._inverse_fn = inverse_fn
        self._delta_fn = delta_fn

    def __repr__(self) -> str:
        return f"<TradeoffCurve {self.name} ({self.kind})>"

    def __call__(self, alpha: float | np.ndarray) -> np.ndarray:
        """Evaluate ``beta = f(alpha)``; ``alpha`` must lie in [0, 1]."""
        a = check_array_in_unit_interval("alpha", alpha)
        beta = np.asarray(self._fn(a), dtype=float)
        return np.clip(beta, 0.0, 1.0 - a)

    def points(self, n: int = 801) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(alpha, beta)`` on a grid dense near both ends, for plotting and tables."""
        alpha = _alpha_grid(n)
        return alpha, self(alpha)

    def inverse(self) -> TradeoffCurve:
        """Return ``f^{-1}(beta) = inf{alpha : f(alpha) <= beta}`` (DRS Prop. 2: T(Q,P) = T(P,Q)^{-1})."""
        if self.symmetric:
            return self
        if self._inverse_fn is not None:
            return TradeoffCurve(
                self._inverse_fn,
                name=f"{self.name}^-1",
                kind=self.kind,
                inverse_fn=self._fn,
                delta_fn=self._delta_fn,
            )
        return TradeoffCurve(
            self._numeric_inverse, name=f"{self.name}^-1", kind=self.kind, inverse_fn=self._fn
        )

    def _numeric_inverse(self, beta: np.ndarray) -> np.ndarray:
        """Vectorised bisection for ``inf{alpha : f(alpha) <= beta}`` (f is non-increasing)."""
        beta = np.asarray(beta, dtype=float)
        lo = np.zeros_like(beta)
        hi = np.ones_like(beta)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            ok = self._fn(mid) <= beta
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        return hi

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """The (eps, delta(eps)) guarantee implied by f-DP (DRS Prop. 5, 6):
        ``delta(eps) = 1 - inf_alpha (e^eps alpha + f(alpha))``, for ``eps >= 0``."""
        eps_arr = np.asarray(eps, dtype=float)
        if np.isnan(eps_arr).any() or (eps_arr < 0).any():
            raise ValueError(f"eps must be >= 0 (no NaN), got {eps!r}")
        if self._delta_fn is not None:
            out = np.asarray(self._delta_fn(eps_arr), dtype=float)
        else:
            out = np.vectorize(self._numeric_delta, otypes=[float])(eps_arr)
        return np.clip(out, 0.0, 1.0)

    def _numeric_delta(self, eps: float) -> float:
        """Minimise the convex map ``alpha -> e^eps alpha + f(alpha)``: grid, then Brent refinement."""
        slope = np.exp(eps)
        if not np.isfinite(slope):
            return float(1.0 - self._fn(np.array([0.0]))[0])
        alpha = _alpha_grid(2001)
        values = slope * alpha + self._fn(alpha)
        i = int(np.argmin(values))
        lo, hi = alpha[max(i - 1, 0)], alpha[min(i + 1, alpha.size - 1)]
        best = float(values[i])
        if hi > lo:
            res = optimize.minimize_scalar(
                lambda a: slope * a + float(self._fn(np.array([a]))[0]),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-14},
            )
            best = min(best, float(res.fun))
        return 1.0 - best

    def epsilon(self, delta: float, *, eps_max: float = 1e4) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta``; ``inf`` if none up to ``eps_max``."""
        target = check_probability("delta", delta)
        check_nonnegative("eps_max", eps_max)
        if self.delta(0.0) <= target:
            return 0.0
        if self.delta(eps_max) > target:
            return float("inf")
        lo, hi = 0.0, 1.0
        while self.delta(hi) > target:
            lo, hi = hi, min(2.0 * hi, eps_max)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) > target:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-13 * max(1.0, hi):
                break
        return hi


class PiecewiseLinearTradeoff(TradeoffCurve):
    """A trade-off curve given by its vertices and joined linearly.

    This is the exact trade-off function of a pair of discrete distributions (THEORY section 1)
    and the form of every curve read off a PLD or off empirical points. Its inverse, its
    ``delta(eps)`` and its points are exact (no numerical search).
    """

    def __init__(
        self,
        alpha: np.ndarray,
        beta: np.ndarray,
        *,
        name: str,
        kind: str = "exact",
    ) -> None:
        alpha = np.asarray(alpha, dtype=float)
        beta = np.asarray(beta, dtype=float)
        if alpha.shape != beta.shape or alpha.ndim != 1 or alpha.size < 2:
            raise ValueError("alpha and beta must be 1-d arrays of the same length >= 2")
        order = np.argsort(alpha, kind="stable")
        self.alpha_vertices = alpha[order]
        self.beta_vertices = beta[order]
        super().__init__(self._interp, name=name, kind=kind)

    def _interp(self, a: np.ndarray) -> np.ndarray:
        return np.interp(a, self.alpha_vertices, self.beta_vertices)

    def points(self, n: int = 801) -> tuple[np.ndarray, np.ndarray]:
        """Return the vertices (exact); ``n`` is ignored."""
        return self.alpha_vertices.copy(), self.beta_vertices.copy()

    def inverse(self) -> PiecewiseLinearTradeoff:
        """Exact inverse: the same vertices with the axes swapped."""
        return PiecewiseLinearTradeoff(
            self.beta_vertices[::-1], self.alpha_vertices[::-1], name=f"{self.name}^-1", kind=self.kind
        )

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """``1 - min over vertices of (e^eps alpha_i + beta_i)``: exact for a piecewise-linear f."""
        eps_arr = np.asarray(eps, dtype=float)
        if np.isnan(eps_arr).any() or (eps_arr < 0).any():
            raise ValueError(f"eps must be >= 0 (no NaN), got {eps!r}")
        a, b = self.alpha_vertices, self.beta_vertices
        # For a convex f, the minimiser of e^eps a + f(a) is the vertex where the segment
        # slopes cross -e^eps; slopes are non-decreasing, so a binary search finds it.
        with np.errstate(divide="ignore", invalid="ignore"):
            slopes = np.diff(b) / np.diff(a)
        slopes = np.where(np.isnan(slopes), -np.inf, slopes)
        slopes = np.maximum.accumulate(slopes)
        flat = eps_arr.ravel()
        idx = np.searchsorted(slopes, -np.exp(flat), side="left")
        values = np.exp(flat) * a[idx] + b[idx]
        return np.clip(1.0 - values, 0.0, 1.0).reshape(eps_arr.shape)


def _lower_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower convex hull of points sorted by x (Andrew's monotone chain)."""
    hx: list[float] = []
    hy: list[float] = []
    for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
        while len(hx) >= 2:
            cross = (hx[-1] - hx[-2]) * (yi - hy[-2]) - (hy[-1] - hy[-2]) * (xi - hx[-2])
            if cross <= 0:
                hx.pop()
                hy.pop()
            else:
                break
        hx.append(xi)
        hy.append(yi)
    return np.array(hx), np.array(hy)


def from_points(
    alpha: np.ndarray, beta: np.ndarray, *, name: str = "points", kind: str = "empirical"
) -> PiecewiseLinearTradeoff:
    """The trade-off curve of a set of achievable ``(alpha, beta)`` points.

    All randomised mixtures of the tests behind the points are achievable too, so the curve is
    the lower convex hull of the points together with the trivial tests ``(0, 1)`` and ``(1, 0)``
    (THEORY section 0). Points are validated to lie in [0, 1].
    """
    a = check_array_in_unit_interval("alpha", alpha).ravel()
    b = check_array_in_unit_interval("beta", beta).ravel()
    if a.shape != b.shape:
        raise ValueError(f"alpha and beta must have the same length, got {a.size} and {b.size}")
    a = np.concatenate([[0.0, 1.0], a])
    b = np.concatenate([[1.0, 0.0], b])
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    hx, hy = _lower_hull(a, b)
    # The hull of a trade-off curve is non-increasing: drop the rising tail after the minimum.
    stop = int(np.argmin(hy)) + 1
    hx, hy = hx[:stop], hy[:stop]
    if hx[-1] < 1.0:
        hx, hy = np.append(hx, 1.0), np.append(hy, 0.0)
    return PiecewiseLinearTradeoff(hx, hy, name=name, kind=kind)
