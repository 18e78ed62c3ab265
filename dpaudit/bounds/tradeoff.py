"""Trade-off functions: the common currency of every bound in dpaudit.

A trade-off function ``f = T(P, Q)`` maps a type I error ``alpha`` to the smallest type II error
``beta`` any test of ``P`` against ``Q`` can reach (Dong, Roth & Su 2022, "Gaussian differential
privacy", Definition 2; cited below as DRS). It is convex, continuous, non-increasing and
``f(alpha) <= 1 - alpha`` (DRS Proposition 1). Every theoretical object in dpaudit (closed forms,
PLDs, RDP curves, composition theorems) can produce one, which is what makes them comparable with
the empirical curves of an audit.

Conventions (docs/theory.md#conventions): ``alpha = E_P[phi]`` is the false-positive rate,
``beta = 1 - E_Q[phi]`` the false-negative rate, with ``phi`` the probability of answering
"the output came from D_prime". The dual privacy profile of ``f`` is
``delta(eps) = 1 - inf_alpha (e^eps alpha + f(alpha))`` (DRS Propositions 5 and 6).

Numerics. Curves known in closed form evaluate their closed form. Piecewise-linear curves are
exact: evaluation, inverse and ``delta`` use the vertices. Curves given only as a callable get a
numerical dual (grid search refined by golden-section search); its absolute accuracy is about
``1e-15``, the precision with which ``f`` itself is known near ``beta = 1``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from dpaudit._core.validation import (
    check_array_in_unit_interval,
    check_choice,
    check_eps_array,
    check_integer,
    check_nonnegative,
    check_probability,
)

__all__ = [
    "KINDS",
    "TradeoffCurve",
    "PiecewiseLinearTradeoff",
    "from_points",
    "from_discrete",
    "from_delta",
    "identity",
    "approx_dp",
    "laplace_tradeoff",
    "randomized_response_tradeoff",
    "symmetrize",
    "subsample",
    "compose",
]

#: What a curve is, as a statement about the mechanism: ``exact`` (the true curve),
#: ``bound`` (a valid lower bound on the true curve, i.e. a valid privacy guarantee),
#: ``approximation`` (neither, e.g. the GDP central limit), ``empirical`` (measured points).
KINDS = ("exact", "bound", "approximation", "empirical", "claim")

_ArrayFn = Callable[[np.ndarray], np.ndarray]

#: Largest ``eps`` whose ``e^eps`` is used as a slope by the numerical dual (``e^709`` is the
#: largest finite power). Above it the value at this cap is returned: ``delta`` is non-increasing,
#: so this over-estimates ``delta`` (a conservative answer) and never overflows.
_EXP_CAP = 700.0

_INV_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _alpha_grid(n: int) -> np.ndarray:
    """A grid on [0, 1] that is dense near both ends (log-spaced) and linear in between."""
    tail = np.geomspace(1e-12, 1e-2, max(n // 4, 8))
    middle = np.linspace(0.0, 1.0, max(n // 2, 8))
    return np.unique(np.concatenate([[0.0, 1.0], tail, middle, 1.0 - tail]))


#: Sampling grid of :func:`_sampled_minorant` (about 24 000 points, spacing at most 5e-5).
_MINORANT_GRID = np.unique(
    np.concatenate(
        [
            np.linspace(0.0, 1.0, 20001),
            np.geomspace(1e-16, 1e-2, 2001),
            1.0 - np.geomspace(1e-16, 1e-2, 2001),
        ]
    )
)

#: Grid of the numerical dual: linear, plus log-spaced tails down to 1e-300 (where the minimiser
#: of ``e^eps alpha + f(alpha)`` lies for large eps) and towards 1.
_DUAL_GRID = np.unique(
    np.concatenate(
        [
            np.linspace(0.0, 1.0, 2001),
            np.geomspace(1e-300, 1e-2, 1000),
            1.0 - np.geomspace(1e-16, 1e-2, 300),
        ]
    )
)


def _kind_of_derived(kind: str) -> str:
    """Kind of a guarantee derived from a curve by an operation that is itself only a bound."""
    return "bound" if kind == "exact" else kind


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
        The dual privacy profile ``eps -> delta(eps)`` (``eps >= 0``) when known in closed form.
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
        self._dual_grid: tuple[np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} ({self.kind})>"

    def __call__(self, alpha: float | np.ndarray) -> np.ndarray:
        """Evaluate ``beta = f(alpha)``; ``alpha`` must lie in [0, 1]."""
        return self._eval(check_array_in_unit_interval("alpha", alpha))

    def _eval(self, a: np.ndarray) -> np.ndarray:
        """``f`` on an already validated array, clipped to the trade-off region [0, 1 - alpha]."""
        beta = np.asarray(self._fn(a), dtype=float)
        return np.clip(beta, 0.0, 1.0 - a)

    def points(self, n: int = 801) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(alpha, beta)`` on a grid dense near both ends, for plotting and tables."""
        alpha = _alpha_grid(n)
        return alpha, self._eval(alpha)

    def inverse(self) -> TradeoffCurve:
        """Return ``f^{-1}(beta) = inf{alpha : f(alpha) <= beta}``.

        DRS Prop. 2: ``T(Q, P) = T(P, Q)^{-1}``. Closed form when known, else bisection.
        """
        if self.symmetric:
            return self
        if self._inverse_fn is not None:
            return TradeoffCurve(
                self._inverse_fn, name=f"{self.name}^-1", kind=self.kind, inverse_fn=self._fn
            )
        return TradeoffCurve(
            self._numeric_inverse, name=f"{self.name}^-1", kind=self.kind, inverse_fn=self._fn
        )

    def symmetrize(self) -> TradeoffCurve:
        """``min(f, f^{-1})**``, the guarantee valid in both orders; see :func:`symmetrize`."""
        return symmetrize(self)

    def _numeric_inverse(self, beta: np.ndarray) -> np.ndarray:
        """Vectorised bisection for ``inf{alpha : f(alpha) <= beta}`` (f is non-increasing)."""
        beta = np.asarray(beta, dtype=float)
        lo = np.zeros_like(beta)
        hi = np.ones_like(beta)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            ok = self._eval(mid) <= beta
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        at_zero = self._eval(np.zeros(1))[0] <= beta
        return np.where(at_zero, 0.0, hi)

    def _fixed_point(self) -> float:
        """The ``x`` with ``f(x) = x`` (unique: ``f(x) - x`` is strictly decreasing)."""
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if self._eval(np.array([mid]))[0] > mid:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """The (eps, delta(eps)) guarantee implied by f-DP (DRS Prop. 5, 6):
        ``delta(eps) = 1 - inf_alpha (e^eps alpha + f(alpha))``, for ``eps >= 0``.

        Non-increasing in ``eps``, with values in [0, 1]. Without a closed form the infimum is
        found numerically (see the module docstring); such values never exceed the exact ones
        by more than rounding, and are made non-increasing across the entries of ``eps``.
        """
        eps_arr = check_eps_array(eps)
        if self._delta_fn is not None:
            out = np.asarray(self._delta_fn(eps_arr), dtype=float)
        else:
            out = self._numeric_delta(eps_arr)
        return np.clip(out, 0.0, 1.0) + 0.0  # + 0.0 turns -0.0 into 0.0

    def _dual_samples(self) -> tuple[np.ndarray, np.ndarray]:
        """``f`` on the grid of the numerical dual (computed once; curves are immutable)."""
        if self._dual_grid is None:
            self._dual_grid = (_DUAL_GRID, self._eval(_DUAL_GRID))
        return self._dual_grid

    def _numeric_delta(self, eps: np.ndarray) -> np.ndarray:
        """``1 - min_alpha (e^eps alpha + f(alpha))``: the best point of a fixed grid (log-spaced
        down to ``1e-300``), refined by golden-section search between its grid neighbours, which
        bracket the minimiser of the convex objective. Vectorised over ``eps``."""
        flat = eps.ravel()
        slope = np.exp(np.minimum(flat, _EXP_CAP))
        grid, values = self._dual_samples()
        idx = np.empty(flat.size, dtype=np.intp)
        for start in range(0, flat.size, 256):
            block = slope[start : start + 256, None] * grid[None, :] + values[None, :]
            idx[start : start + 256] = np.argmin(block, axis=1)
        best = slope * grid[idx] + values[idx]
        lo = grid[np.maximum(idx - 1, 0)]
        hi = grid[np.minimum(idx + 1, grid.size - 1)]

        def objective(a: np.ndarray) -> np.ndarray:
            return slope * a + self._eval(a)

        c = hi - _INV_GOLDEN * (hi - lo)
        d = lo + _INV_GOLDEN * (hi - lo)
        fc, fd = objective(c), objective(d)
        best = np.minimum(best, np.minimum(fc, fd))
        for _ in range(80):
            left = fc <= fd
            hi = np.where(left, d, hi)
            lo = np.where(left, lo, c)
            new = np.where(left, hi - _INV_GOLDEN * (hi - lo), lo + _INV_GOLDEN * (hi - lo))
            f_new = objective(new)
            best = np.minimum(best, f_new)
            c, d, fc, fd = (
                np.where(left, new, d),
                np.where(left, c, new),
                np.where(left, f_new, fd),
                np.where(left, fc, f_new),
            )
        delta = 1.0 - best
        # delta is non-increasing and every value here is at most the exact one, so the running
        # maximum from the largest eps down is still at most exact, and closer to it.
        order = np.argsort(-flat, kind="stable")
        delta[order] = np.maximum.accumulate(delta[order])
        return delta.reshape(eps.shape)

    def epsilon(self, delta: float, *, eps_max: float = 1e4) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta``; ``inf`` if none up to ``eps_max``.

        Found by a vectorised multisection search on ``delta(eps)``: a geometric grid brackets
        the answer, then each round evaluates 64 points across the bracket, until the bracket
        is a few units in the last place wide. The returned ``eps`` satisfies
        ``delta(eps) <= delta`` as computed.
        """
        target = check_probability("delta", delta)
        eps_max = check_nonnegative("eps_max", eps_max)
        if self.delta(0.0) <= target:
            return 0.0
        if self.delta(eps_max) > target:
            return float("inf")
        grid = np.concatenate([[0.0], np.geomspace(min(1e-12, eps_max), eps_max, 129)])
        for _ in range(64):
            values = self.delta(grid)
            k = int(np.argmax(values <= target))
            lo, hi = grid[k - 1], grid[k]
            if hi - lo <= 4.0 * np.spacing(hi):
                return float(hi)
            grid = np.linspace(lo, hi, 66)
        return float(hi)


class PiecewiseLinearTradeoff(TradeoffCurve):
    """A trade-off curve given by its vertices and joined linearly.

    This is the exact trade-off function of a pair of discrete distributions
    (docs/theory.md#tradeoff)
    and the form of every curve read off a PLD or off empirical points. Its inverse, its
    ``delta(eps)`` and its points are exact (no numerical search).

    Vertices are sorted by ``alpha``; where several share an ``alpha`` the smallest ``beta`` is
    kept (a trade-off function is the infimum over tests); the first and last values are
    extended flat to ``alpha = 0`` and ``alpha = 1``, as :func:`numpy.interp` does.
    """

    def __init__(
        self,
        alpha: np.ndarray,
        beta: np.ndarray,
        *,
        name: str,
        kind: str = "exact",
        symmetric: bool = False,
    ) -> None:
        alpha = np.asarray(alpha, dtype=float)
        beta = np.asarray(beta, dtype=float)
        if alpha.shape != beta.shape or alpha.ndim != 1 or alpha.size < 2:
            raise ValueError("alpha and beta must be 1-d arrays of the same length >= 2")
        alpha = _clip_unit("alpha", alpha)
        beta = _clip_unit("beta", beta)
        alpha, beta = _sort_unique(alpha, beta)
        if alpha[0] > 0.0:
            alpha, beta = np.concatenate([[0.0], alpha]), np.concatenate([beta[:1], beta])
        if alpha[-1] < 1.0:
            alpha, beta = np.append(alpha, 1.0), np.append(beta, beta[-1])
        self.alpha_vertices = alpha
        self.beta_vertices = beta
        self._hull_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        super().__init__(self._interp, name=name, kind=kind, symmetric=symmetric)

    def _interp(self, a: np.ndarray) -> np.ndarray:
        return np.interp(a, self.alpha_vertices, self.beta_vertices)

    def points(self, n: int = 801) -> tuple[np.ndarray, np.ndarray]:
        """Return the vertices (exact); ``n`` is ignored."""
        return self.alpha_vertices.copy(), self.beta_vertices.copy()

    def inverse(self) -> PiecewiseLinearTradeoff:
        """Exact inverse: the same vertices with the axes swapped."""
        if self.symmetric:
            return self
        return PiecewiseLinearTradeoff(
            self.beta_vertices[::-1],
            self.alpha_vertices[::-1],
            name=f"{self.name}^-1",
            kind=self.kind,
        )

    def _hull(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vertices and slopes of the lower convex hull (``delta`` only depends on it)."""
        if self._hull_cache is None:
            ha, hb = _lower_hull(*_sort_unique(self.alpha_vertices, self.beta_vertices))
            slopes = np.maximum.accumulate(np.diff(hb) / np.diff(ha))
            self._hull_cache = (ha, hb, slopes)
        return self._hull_cache

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """``1 - min over vertices of (e^eps alpha_i + beta_i)``: exact for a piecewise-linear f.

        The minimising vertex of the convex hull is where the segment slopes cross ``-e^eps``
        (binary search). Absolute accuracy is that of ``1 - beta_i`` in floating point.
        """
        eps_arr = check_eps_array(eps)
        ha, hb, slopes = self._hull()
        with np.errstate(over="ignore"):
            slope = np.exp(eps_arr.ravel())
        idx = np.searchsorted(slopes, -slope, side="left")
        a = ha[idx]
        with np.errstate(over="ignore", invalid="ignore"):
            linear = np.where(a > 0.0, slope * a, 0.0)
        values = linear + hb[idx]
        return np.clip(1.0 - values, 0.0, 1.0).reshape(eps_arr.shape) + 0.0


def _clip_unit(name: str, values: np.ndarray) -> np.ndarray:
    """Clip rounding noise (up to 1e-9) into [0, 1]; refuse anything further out or NaN."""
    if not np.isfinite(values).all() or (values < -1e-9).any() or (values > 1.0 + 1e-9).any():
        raise ValueError(f"{name} must lie in [0, 1] (no NaN); got values outside it")
    return np.clip(values, 0.0, 1.0)


#: Abscissae closer than this are merged by :func:`_sort_unique`, so that chord slopes between
#: points of the unit square stay below 1e300 in magnitude and never overflow.
_MERGE_GAP = 1e-300


def _sort_unique(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points sorted by ``x``; runs of points less than ``1e-300`` apart in ``x`` become one point
    at the smallest ``x`` with the smallest ``y``. For a non-increasing lower hull that moves
    points left and down only, so the hull can only get lower (it stays a valid lower bound)."""
    if x.size > 1 and (np.diff(x) > _MERGE_GAP).all():
        return x, y
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    starts = np.flatnonzero(np.concatenate([[True], np.diff(x) > _MERGE_GAP]))
    return x[starts], np.minimum.reduceat(y, starts)


def _lower_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower convex hull of points in the unit square, from :func:`_sort_unique`.

    The slopes of the greatest convex minorant of a point chain are the weighted isotonic
    regression of the chord slopes with weights ``diff(x)`` (Barlow, Bartholomew, Bremner &
    Brunk 1972, "Statistical inference under order restrictions", ch. 1); the pools of the
    pool-adjacent-violators algorithm (``scipy.optimize.isotonic_regression``, O(n) in C) are
    the hull's segments, so the pool boundaries are its vertices.
    """
    from scipy.optimize import isotonic_regression

    if x.size <= 2:
        return x, y
    blocks = isotonic_regression(np.diff(y) / np.diff(x), weights=np.diff(x)).blocks
    return x[blocks], y[blocks]


def _hull_tradeoff(
    a: np.ndarray, b: np.ndarray, *, name: str, kind: str, symmetric: bool = False
) -> PiecewiseLinearTradeoff:
    """The lower convex hull of points together with ``(0, 1)`` and ``(1, 0)``, as a curve."""
    a, b = _sort_unique(np.concatenate([[0.0, 1.0], a]), np.concatenate([[1.0, 0.0], b]))
    hx, hy = _lower_hull(a, b)
    # The hull of a trade-off curve is non-increasing: drop the rising tail after the minimum.
    stop = int(np.argmin(hy)) + 1
    hx, hy = hx[:stop], hy[:stop]
    if hx[-1] < 1.0:
        hx, hy = np.append(hx, 1.0), np.append(hy, 0.0)
    return PiecewiseLinearTradeoff(hx, hy, name=name, kind=kind, symmetric=symmetric)


def from_points(
    alpha: np.ndarray, beta: np.ndarray, *, name: str = "points", kind: str = "empirical"
) -> PiecewiseLinearTradeoff:
    """The trade-off curve of a set of achievable ``(alpha, beta)`` points.

    All randomised mixtures of the tests behind the points are achievable too, so the curve is
    the lower convex hull of the points together with the trivial tests ``(0, 1)`` and ``(1, 0)``
    (docs/theory.md#conventions). Points are validated to lie in [0, 1]. The hull takes
    O(n log n) for
    the sort and O(n) after it (see :func:`_lower_hull`).
    """
    a = check_array_in_unit_interval("alpha", alpha).ravel()
    b = check_array_in_unit_interval("beta", beta).ravel()
    if a.shape != b.shape:
        raise ValueError(f"alpha and beta must have the same length, got {a.size} and {b.size}")
    return _hull_tradeoff(a, b, name=name, kind=kind)


def _check_pmf(name: str, values: object) -> np.ndarray:
    out = np.asarray(values, dtype=float)
    if out.ndim != 1 or out.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of probabilities")
    if not np.isfinite(out).all() or (out < 0).any():
        raise ValueError(f"{name} must have entries in [0, inf) (no NaN), got {values!r}")
    total = float(out.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1 (within 1e-9), got a sum of {total!r}")
    return out / total


def from_discrete(
    p: np.ndarray, q: np.ndarray, *, name: str = "discrete", kind: str = "exact"
) -> PiecewiseLinearTradeoff:
    """The exact trade-off function ``T(P, Q)`` of two pmfs on the same outcomes.

    Neyman-Pearson (docs/theory.md#tradeoff): order the outcomes by likelihood ratio ``q/p``
    from the
    largest down (outcomes with ``p = 0`` first, those with ``q = 0`` last), accumulate
    ``alpha`` (the P-mass) and ``beta`` (1 - the Q-mass) and join the vertices linearly; ties in
    the ratio give collinear vertices. Outcomes with ``p = q = 0`` are ignored.
    """
    p_arr = _check_pmf("p", p)
    q_arr = _check_pmf("q", q)
    if p_arr.shape != q_arr.shape:
        raise ValueError(f"p and q must have the same length, got {p_arr.size} and {q_arr.size}")
    used = (p_arr > 0) | (q_arr > 0)
    p_arr, q_arr = p_arr[used], q_arr[used]
    with np.errstate(divide="ignore"):
        ratio = np.where(p_arr > 0, q_arr / np.where(p_arr > 0, p_arr, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    alpha = np.concatenate([[0.0], np.cumsum(p_arr[order])])
    beta = 1.0 - np.concatenate([[0.0], np.cumsum(q_arr[order])])
    return _hull_tradeoff(np.clip(alpha, 0.0, 1.0), np.clip(beta, 0.0, 1.0), name=name, kind=kind)


def _upper_envelope(
    slopes: np.ndarray, intercepts: np.ndarray, *, name: str, kind: str, symmetric: bool
) -> PiecewiseLinearTradeoff:
    """``max_k (c_k + m_k alpha)`` on [0, 1], exactly, as a piecewise-linear curve.

    By duality the active lines are the vertices of the lower convex hull of the points
    ``(m_k, -c_k)``; the breakpoints in ``alpha`` are the slopes of the hull's edges.
    """
    hm, hc = _lower_hull(*_sort_unique(slopes, -intercepts))
    hc = -hc
    edges = -np.diff(hc) / np.diff(hm)
    alpha = np.concatenate([[0.0], edges[(edges > 0.0) & (edges < 1.0)], [1.0]])
    active = np.searchsorted(edges, alpha, side="left")
    beta = hc[active] + hm[active] * alpha
    return PiecewiseLinearTradeoff(alpha, beta, name=name, kind=kind, symmetric=symmetric)


def from_delta(
    eps: float | np.ndarray,
    delta: float | np.ndarray,
    *,
    name: str = "from_delta",
    kind: str = "bound",
) -> PiecewiseLinearTradeoff:
    """The f-DP guarantee of a family of (eps_i, delta_i)-DP guarantees (DRS Proposition 5).

    ``f(alpha) = sup_i f_{eps_i, delta_i}(alpha)``, computed exactly: it is the upper envelope of
    the lines ``1 - delta_i - e^{eps_i} alpha``, ``e^{-eps_i}(1 - delta_i - alpha)`` and ``0``,
    a convex piecewise-linear function whose vertices are found through the dual convex hull.
    Pairs with ``eps_i > 700`` are left out: their steep line is positive only on
    ``alpha < e^-700``, and leaving a guarantee out can only lower (weaken) the curve.
    """
    e = np.asarray(eps, dtype=float).ravel()
    d = np.asarray(delta, dtype=float).ravel()
    if e.shape != d.shape or e.size == 0:
        raise ValueError(
            f"eps and delta must be non-empty with equal lengths, got {e.size}, {d.size}"
        )
    if not np.isfinite(e).all() or (e < 0).any():
        raise ValueError(f"eps must be in [0, inf) (no NaN), got {eps!r}")
    check_array_in_unit_interval("delta", d)
    keep = e <= _EXP_CAP
    e, d = e[keep], d[keep]
    slopes = np.concatenate([[0.0], -np.exp(e), -np.exp(-e)])
    intercepts = np.concatenate([[0.0], 1.0 - d, np.exp(-e) * (1.0 - d)])
    return _upper_envelope(slopes, intercepts, name=name, kind=kind, symmetric=True)


def identity() -> PiecewiseLinearTradeoff:
    """Perfect privacy, ``Id(alpha) = 1 - alpha`` (DRS Section 2.1): ``delta(eps) = 0``."""
    return PiecewiseLinearTradeoff(
        np.array([0.0, 1.0]), np.array([1.0, 0.0]), name="Id", kind="exact", symmetric=True
    )


def approx_dp(eps: float, delta: float) -> TradeoffCurve:
    """``f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``.

    (eps, delta)-DP is exactly f_{eps,delta}-DP (Wasserman & Zhou 2010; DRS Proposition 3). The
    curve is symmetric. Its dual (DRS Prop. 6) is, with ``x = eps'``:
    ``delta(x) = delta + (1 - delta)(e^eps - e^x)_+ / (1 + e^eps)``, evaluated as
    ``-expm1(min(x - eps, 0)) / (1 + e^-eps)`` so that it never overflows.
    """
    eps_f = check_nonnegative("eps", eps)
    delta_f = check_probability("delta", delta)

    def fn(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            steep = 1.0 - delta_f - np.exp(eps_f + np.log(a))
        flat = math.exp(-eps_f) * (1.0 - delta_f - a)
        return np.maximum(0.0, np.maximum(steep, flat))

    def delta_fn(x: np.ndarray) -> np.ndarray:
        gap = -np.expm1(np.minimum(x - eps_f, 0.0)) / (1.0 + math.exp(-eps_f))
        return delta_f + (1.0 - delta_f) * gap

    return TradeoffCurve(
        fn,
        name=f"({eps_f:g}, {delta_f:g})-DP",
        kind="exact",
        symmetric=True,
        delta_fn=delta_fn,
    )


def laplace_tradeoff(eps: float) -> TradeoffCurve:
    """``T(Lap(0, b), Lap(Delta, b))`` with ``eps = Delta / b`` (DRS Section 2.2;
    docs/theory.md#tradeoff).

    ``1 - e^eps alpha`` for ``alpha < e^-eps / 2``, ``e^-eps / (4 alpha)`` up to ``alpha = 1/2``,
    ``e^-eps (1 - alpha)`` above; symmetric. Dual: ``delta(x) = 1 - e^{(x - eps)/2}`` for
    ``0 <= x <= eps`` and 0 above (docs/theory.md#pld), evaluated with ``expm1``.
    """
    eps_f = check_nonnegative("eps", eps)
    knee = 0.5 * math.exp(-eps_f)

    def fn(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            log_a = np.log(a)
            steep = 1.0 - np.exp(eps_f + log_a)
            curved = np.exp(-eps_f - math.log(4.0) - log_a)
        flat = math.exp(-eps_f) * (1.0 - a)
        return np.where(a < knee, steep, np.where(a <= 0.5, curved, flat))

    def delta_fn(x: np.ndarray) -> np.ndarray:
        return -np.expm1(0.5 * np.minimum(x - eps_f, 0.0))

    return TradeoffCurve(
        fn, name=f"Laplace(eps={eps_f:g})", kind="exact", symmetric=True, delta_fn=delta_fn
    )


def randomized_response_tradeoff(eps: float, k: int = 2) -> TradeoffCurve:
    """Exact trade-off of k-ary randomized response between two different true values.

    The true value is kept with probability ``e^eps / (e^eps + k - 1)``, otherwise one of the
    other ``k - 1`` values is reported uniformly. Ordering the outcomes by likelihood ratio
    (``e^eps``, then ``1`` for the ``k - 2`` bystanders, then ``e^-eps``) gives
    ``f(alpha) = max(0, 1 - e^eps alpha, 1 - c - alpha, e^-eps (1 - alpha))`` with
    ``c = (e^eps - 1)/(e^eps + k - 1)``; for ``k = 2`` this is ``f_{eps,0}``
    (docs/theory.md#tradeoff).
    Symmetric. Dual: ``delta(x) = (e^eps - e^x)_+ / (e^eps + k - 1)``.
    """
    eps_f = check_nonnegative("eps", eps)
    k_i = check_integer("k", k, minimum=2)
    scale = 1.0 + (k_i - 1) * math.exp(-eps_f)
    c = -math.expm1(-eps_f) / scale

    def fn(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            steep = 1.0 - np.exp(eps_f + np.log(a))
        middle = 1.0 - c - a
        flat = math.exp(-eps_f) * (1.0 - a)
        return np.maximum(np.maximum(0.0, steep), np.maximum(middle, flat))

    def delta_fn(x: np.ndarray) -> np.ndarray:
        return -np.expm1(np.minimum(x - eps_f, 0.0)) / scale

    return TradeoffCurve(
        fn,
        name=f"RR(eps={eps_f:g}, k={k_i})",
        kind="exact",
        symmetric=True,
        delta_fn=delta_fn,
    )


def _sampled_minorant(f: TradeoffCurve) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of a piecewise-linear function below the convex ``f``, from samples of ``f``.

    On ``[x_i, x_{i+1}]`` a convex ``f`` lies above the chord through ``x_{i-1}, x_i`` extended to
    the right and above the chord through ``x_{i+1}, x_{i+2}`` extended to the left, so the
    maximum of the two is a valid lower bound; its vertices are the samples plus the crossing
    point of the two extended chords. The first interval uses the right chord only, the last
    the left chord and zero. (A chord hull of samples would lie *above* f.)
    """
    x = _MINORANT_GRID
    y = f._eval(x)
    s = np.diff(y) / np.diff(x)
    n = x.size
    i = np.arange(1, n - 2)
    sl, sr = s[i - 1], s[i + 1]
    xi, yi, xj, yj = x[i], y[i], x[i + 1], y[i + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (yj - yi - sr * xj + sl * xi) / (sl - sr)
    inside = (sl < sr) & (t > xi) & (t < xj)
    cross_x = t[inside]
    cross_y = yi[inside] + sl[inside] * (cross_x - xi[inside])
    # First interval: the chord of [x_1, x_2] extended to x_0.
    y0 = min(y[0], y[1] - s[1] * (x[1] - x[0]))
    # Last interval: max(0, chord of [x_{n-3}, x_{n-2}] extended to the right).
    slope_last = s[n - 3]
    tail_x, tail_y = [x[n - 1]], [max(0.0, y[n - 2] + slope_last * (x[n - 1] - x[n - 2]))]
    if slope_last < 0:
        zero = x[n - 2] - y[n - 2] / slope_last
        if x[n - 2] < zero < x[n - 1]:
            tail_x.insert(0, zero)
            tail_y.insert(0, 0.0)
    ax = np.concatenate([[x[0]], x[1 : n - 1], cross_x, tail_x])
    ay = np.concatenate([[y0], y[1 : n - 1], cross_y, tail_y])
    return ax, np.minimum(ay, 1.0 - ax)


def symmetrize(f: TradeoffCurve) -> TradeoffCurve:
    """``min(f, f^{-1})**``: the largest symmetric trade-off function below both orders.

    If ``T(P, Q) >= f`` holds for one order of every neighbouring pair (and therefore
    ``T(Q, P) >= f^{-1}`` for the other), this lower convex envelope is the guarantee valid in
    both orders (DRS Prop. 2 and Def. 6). A symmetric ``f`` is returned unchanged.

    Exactness: for a piecewise-linear ``f`` the envelope is the lower convex hull of the
    vertices of ``f`` and of ``f^{-1}`` (the vertices with axes swapped) — exact. Any other ``f``
    is first replaced by the piecewise-linear minorant built from extended chords of dense
    samples (:func:`_sampled_minorant`, exact vertices, never above ``f``), so the result is a
    valid lower bound on the exact envelope, off by at most ``f'' h^2`` on a grid of spacing
    ``h <= 5e-5``. An ``exact`` curve yields a ``bound``.
    """
    if not isinstance(f, TradeoffCurve):
        raise ValueError(f"f must be a TradeoffCurve, got {type(f).__name__}")
    if f.symmetric:
        return f
    if isinstance(f, PiecewiseLinearTradeoff):
        a, b = f.alpha_vertices, f.beta_vertices
    else:
        a, b = _sampled_minorant(f)
    return _hull_tradeoff(
        np.concatenate([a, b]),
        np.concatenate([b, a]),
        name=f"sym({f.name})",
        kind=_kind_of_derived(f.kind),
        symmetric=True,
    )


def _subsampled_base_eps(eps: np.ndarray, p: float) -> np.ndarray:
    """``log(1 + (e^eps - 1)/p)``: the base mechanism's eps behind a subsampled eps."""
    with np.errstate(over="ignore", divide="ignore"):
        small = np.log1p(np.expm1(np.minimum(eps, 1.0)) / p)
        large = eps - math.log(p) + np.log1p(-(1.0 - p) * np.exp(-eps))
    return np.where(eps < 1.0, small, large)


def subsample(f: TradeoffCurve, p: float) -> TradeoffCurve:
    """The p-sampling operator ``C_p(f) = min(f_p, f_p^{-1})**`` with ``f_p = p f + (1-p) Id``.

    DRS Definition 6 and Theorem 9: a mechanism that is f-DP becomes ``C_p(f)``-DP when run on a
    subsample of fraction ``p`` (without replacement, ``replace_one``); by
    docs/theory.md#tradeoff the same
    operator covers Poisson sampling with rate ``p`` under ``add_remove``.

    - symmetric ``f`` (not piecewise linear): the closed form of DRS eq. (13) through the fixed
      point ``f(x*) = x*``: ``f_p`` on ``[0, x*]``, ``x* + f_p(x*) - alpha`` on
      ``[x*, f_p(x*)]``, ``f_p^{-1}`` (bisection) above. Its dual is
      ``delta(x) = p delta_f(log(1 + (e^x - 1)/p))`` (DRS eq. (15) with Proposition 8).
    - piecewise-linear ``f``: the exact hull of the vertices of ``f_p`` and ``f_p^{-1}``.
    - any other ``f``: :func:`symmetrize` of ``f_p`` (a valid lower bound).
    """
    if not isinstance(f, TradeoffCurve):
        raise ValueError(f"f must be a TradeoffCurve, got {type(f).__name__}")
    p_f = check_probability("p", p)
    name = f"C_{p_f:g}({f.name})"
    kind = _kind_of_derived(f.kind)
    if p_f == 0.0:
        return PiecewiseLinearTradeoff(
            np.array([0.0, 1.0]), np.array([1.0, 0.0]), name=name, kind=kind, symmetric=True
        )
    if isinstance(f, PiecewiseLinearTradeoff):
        a = f.alpha_vertices
        b = p_f * f.beta_vertices + (1.0 - p_f) * (1.0 - a)
        return _hull_tradeoff(
            np.concatenate([a, b]), np.concatenate([b, a]), name=name, kind=kind, symmetric=True
        )

    def f_p(a: np.ndarray) -> np.ndarray:
        return p_f * f._eval(a) + (1.0 - p_f) * (1.0 - a)

    if not f.symmetric:
        mixed = TradeoffCurve(f_p, name=f"({f.name})_{p_f:g}", kind=f.kind)
        out = symmetrize(mixed)
        out.name = name
        return out

    x_star = f._fixed_point()
    y_star = float(f_p(np.array([x_star]))[0])

    def f_p_inverse(beta: np.ndarray) -> np.ndarray:
        lo = np.zeros_like(beta)
        hi = np.full_like(beta, x_star)
        for _ in range(96):
            mid = 0.5 * (lo + hi)
            ok = f_p(mid) <= beta
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        return np.where(f_p(np.zeros(1))[0] <= beta, 0.0, hi)

    def fn(a: np.ndarray) -> np.ndarray:
        out = np.empty_like(a)
        head = a <= x_star
        body = (a > x_star) & (a <= y_star)
        tail = a > y_star
        out[head] = f_p(a[head])
        out[body] = x_star + y_star - a[body]
        out[tail] = f_p_inverse(a[tail])
        return out

    def delta_fn(x: np.ndarray) -> np.ndarray:
        return p_f * f.delta(_subsampled_base_eps(x, p_f))

    return TradeoffCurve(fn, name=name, kind=kind, symmetric=True, delta_fn=delta_fn)


#: How ``compose`` combines curves, filled in by the theory modules when they are imported (they
#: sit above this module, so it cannot import them): ``exact`` rules are tried in order and return
#: ``None`` when they do not apply (Gaussian DP composes in closed form); ``general`` composes any
#: curves (through privacy loss distributions).
_COMPOSITION_RULES: dict[str, list[Callable[[list[TradeoffCurve]], TradeoffCurve | None]]] = {
    "exact": [],
    "general": [],
}


def register_composition(
    rule: Callable[[list[TradeoffCurve]], TradeoffCurve | None], *, general: bool = False
) -> None:
    """Teach :func:`compose` a composition rule (called by :mod:`dpaudit.bounds.gdp` and
    :mod:`dpaudit.bounds.pld` at import, so that this module does not import them).

    Parameters
    ----------
    rule:
        Takes the list of curves; returns their composition, or ``None`` when the rule does not
        apply (``general`` rules must always apply).
    general:
        True for the fallback rule that composes any curves.
    """
    _COMPOSITION_RULES["general" if general else "exact"].append(rule)


def compose(*curves: TradeoffCurve) -> TradeoffCurve:
    """The tensor product ``f_1 ⊗ ... ⊗ f_n`` (DRS Theorem 4): the guarantee of running the
    mechanisms one after the other on the same data.

    If every curve is Gaussian DP the result is ``G_sqrt(sum mu_i^2)`` exactly (DRS Corollary 2);
    otherwise the product is computed through privacy loss distributions by
    :func:`dpaudit.bounds.pld.compose_tradeoffs`. A single curve is returned unchanged.
    """
    if not curves:
        raise ValueError("compose needs at least one curve, got none")
    for i, c in enumerate(curves):
        if not isinstance(c, TradeoffCurve):
            raise ValueError(f"curves[{i}] must be a TradeoffCurve, got {type(c).__name__}")
    if len(curves) == 1:
        return curves[0]
    for rule in (*_COMPOSITION_RULES["exact"], *_COMPOSITION_RULES["general"]):
        out = rule(list(curves))
        if out is not None:
            return out
    raise ValueError("no composition rule applies: import dpaudit.bounds first")


#: Names of the previous release, kept for one release with a DeprecationWarning: they read the
#: same as the privacy-loss-distribution constructors :func:`dpaudit.bounds.pld.laplace` and
#: :func:`dpaudit.bounds.pld.randomized_response`, which take different arguments.
DEPRECATED_NAMES = {
    "laplace": "laplace_tradeoff",
    "randomized_response": "randomized_response_tradeoff",
}


def deprecated_name(module: str, name: str) -> object:
    """The object behind a deprecated name of :data:`DEPRECATED_NAMES`, with a warning."""
    if name not in DEPRECATED_NAMES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new = DEPRECATED_NAMES[name]
    warnings.warn(
        f"{module}.{name} is deprecated and will be removed in the next release; "
        f"use dpaudit.bounds.{new}",
        DeprecationWarning,
        stacklevel=3,
    )
    return globals()[new]


def __getattr__(name: str) -> object:
    return deprecated_name(__name__, name)
