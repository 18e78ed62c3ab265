"""Composition theorems for ``(eps, delta)``-DP and privacy amplification by subsampling.

The theorems of docs/theory.md#composition, from the loosest to the exact one: basic composition,
the advanced composition theorem, composition through zCDP, and the optimal composition of
Kairouz, Oh & Viswanath, which is the exact privacy region of ``k`` runs of an
``(eps, delta)``-DP mechanism. The theorems that give one ``(eps, delta)`` pair return it as a
tuple of floats; those that give a whole privacy profile return an object with ``delta(eps)``,
``epsilon(delta)`` and ``tradeoff()`` (the ``PrivacyProfile`` protocol of dpaudit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpaudit._core.validation import (
    check_eps_array,
    check_integer,
    check_nonnegative,
    check_probability,
    scalar_like,
)
from dpaudit.bounds.tradeoff import PiecewiseLinearTradeoff, from_delta

__all__ = [
    "basic_composition",
    "advanced_composition",
    "zcdp_composition",
    "amplify_by_subsampling",
    "optimal_composition",
    "OptimalComposition",
    "AdvancedComposition",
]

# Bisection steps for inverting delta(eps) (relative precision far below 1e-15).
_BISECTION_STEPS = 200


def basic_composition(
    eps_list: Sequence[float], delta_list: Sequence[float]
) -> tuple[float, float]:
    """Running mechanisms that are ``(eps_j, delta_j)``-DP gives ``(sum eps_j, sum delta_j)``-DP
    (Steinke 2022, Theorem 1; Dwork & Roth 2014, Theorem 3.16). ``delta`` is capped at 1."""
    eps = [check_nonnegative(f"eps_list[{j}]", e, allow_inf=True) for j, e in enumerate(eps_list)]
    delta = [check_probability(f"delta_list[{j}]", d) for j, d in enumerate(delta_list)]
    if len(eps) != len(delta):
        raise ValueError(
            f"eps_list and delta_list must have the same length, got {len(eps)} and {len(delta)}"
        )
    return math.fsum(eps), min(1.0, math.fsum(delta))


def advanced_composition(
    eps: float, delta: float, k: int, delta_prime: float
) -> tuple[float, float]:
    """The advanced composition theorem (Dwork, Rothblum & Vadhan 2010, Theorem III.3;
    docs/theory.md#composition): ``k`` runs of an ``(eps, delta)``-DP mechanism are
    ``(eps', k delta + delta')``-DP
    with ``eps' = eps sqrt(2 k log(1/delta')) + k eps (e^eps - 1)``, for any ``delta' in (0, 1]``.
    The total ``delta`` is capped at 1."""
    eps = check_nonnegative("eps", eps)
    delta = check_probability("delta", delta)
    k = check_integer("k", k, minimum=1)
    delta_prime = check_probability("delta_prime", delta_prime, low_open=True)
    eps_total = eps * math.sqrt(-2.0 * k * math.log(delta_prime)) + _drift(eps, k)
    return eps_total, min(1.0, k * delta + delta_prime)


def _drift(eps: float, k: int) -> float:
    """``k eps (e^eps - 1)``, the mean privacy loss term of the advanced composition theorem
    (``inf`` once it overflows)."""
    return k * eps * math.expm1(eps) if eps < 700.0 else math.inf


def zcdp_composition(eps: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Advanced composition through zCDP (Steinke 2022, Theorem 18): ``k`` runs of an ``eps``-DP
    mechanism are ``(k eps^2 / 2 + eps sqrt(2 k log(1/delta')), delta')``-DP. Each run is
    ``eps^2/2``-zCDP (Bun & Steinke 2016, Proposition 1.4), zCDP composes additively and
    ``rho``-zCDP is ``(rho + 2 sqrt(rho log(1/delta')), delta')``-DP."""
    eps = check_nonnegative("eps", eps)
    k = check_integer("k", k, minimum=1)
    delta_prime = check_probability("delta_prime", delta_prime, low_open=True)
    return 0.5 * k * eps * eps + eps * math.sqrt(-2.0 * k * math.log(delta_prime)), delta_prime


def amplify_by_subsampling(eps: float, delta: float, rate: float) -> tuple[float, float]:
    """Privacy amplification by subsampling (Steinke 2022, Theorem 29; Balle, Barthe & Gaboardi
    2018): an ``(eps, delta)``-DP mechanism run on a subsample (Poisson with rate ``p`` under
    ``add_remove``, or a uniformly random fixed-size subset with ``p = m/n`` under
    ``replace_one``) is ``(log(1 + p (e^eps - 1)), p delta)``-DP. The bound is tight.
    """
    eps = check_nonnegative("eps", eps, allow_inf=True)
    delta = check_probability("delta", delta)
    p = check_probability("rate", rate)
    if p == 0.0:
        return 0.0, 0.0
    if eps <= 1.0:
        eps_sub = math.log1p(p * math.expm1(eps))
    else:  # eps + log(p + (1 - p) e^-eps): no overflow for large eps
        eps_sub = eps + math.log(p + (1.0 - p) * math.exp(-eps))
    return eps_sub, p * delta


class _RepeatedMechanism:
    """``k`` runs of an ``(eps, delta)``-DP mechanism: the checked parameters ``eps_step``,
    ``delta_step`` and ``k`` and the label shared by the theorems that give a whole profile."""

    #: The theorem, the start of ``name``.
    _theorem = ""

    def __init__(self, eps: float, delta: float, k: int) -> None:
        self.eps_step = check_nonnegative("eps", eps)
        self.delta_step = check_probability("delta", delta)
        self.k = check_integer("k", k, minimum=1)
        self.name = f"{self._theorem} (eps={self.eps_step:g}, delta={self.delta_step:g}, k={k})"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


# --------------------------------------------------------------------------------------------
# Optimal composition (Kairouz, Oh & Viswanath 2015)
# --------------------------------------------------------------------------------------------


class OptimalComposition(_RepeatedMechanism):
    """The exact privacy of ``k`` runs of an ``(eps, delta)``-DP mechanism (Kairouz, Oh &
    Viswanath 2015, "The composition theorem for differential privacy", Theorem 3.3).

    Every ``(eps, delta)``-DP pair is a post-processing of the four-point pair
    ``P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0)``,
    ``Q = (0, (1-delta)/(1+e^eps), (1-delta) e^eps/(1+e^eps), delta)`` (KOV Theorem 2.1), so
    the ``k``-fold composition is exactly as private as ``(P^k, Q^k)``. Its privacy loss is
    ``+inf`` with probability ``1 - (1-delta)^k`` and otherwise ``(k - 2l) eps``, where the number
    ``l`` of "flipped" coordinates is Binomial(``k``, ``1/(1+e^eps)``) under ``P``. Hence
    ``delta(eps') = 1 - (1-delta)^k + (1-delta)^k sum_{l : (k-2l) eps > eps'} P_l
    (1 - e^(eps' - (k-2l) eps))``, which at ``eps' = (k-2i) eps`` is KOV's
    ``1 - (1-delta)^k (1 - delta_i)``. The pair is symmetric, so both orders agree.

    All sums are cumulative sums in log space prepared once (``O(k)``), so ``delta`` is
    vectorised and ``k`` of ``10^6`` is fine. ``kind`` of the curve: ``"bound"`` (valid for any
    ``(eps, delta)``-DP mechanism, attained by the worst one).
    """

    _theorem = "KOV optimal composition"

    #: Most runs ``k``: the sums hold ``k + 1`` terms in a few arrays (about 0.5 GB at this
    #: bound); ``k = 10^9`` would ask for tens of GB and minutes before failing.
    max_k = 10**7

    def __init__(self, eps: float, delta: float, k: int) -> None:
        super().__init__(eps, delta, k)
        check_integer("k", k, minimum=1, maximum=self.max_k)
        kk = self.k
        e = self.eps_step
        l_idx = np.arange(kk + 1, dtype=float)
        # log p and log(1 - p) with p = e^eps / (1 + e^eps), the probability of no flip
        log_p = -np.logaddexp(0.0, -e)
        log_1mp = -np.logaddexp(0.0, e)
        log_binom = (
            special.gammaln(kk + 1.0)
            - special.gammaln(l_idx + 1.0)
            - special.gammaln(kk - l_idx + 1.0)
        )
        self._log_pl = log_binom + l_idx * log_1mp + (kk - l_idx) * log_p
        # _log_cp[m] = log sum_{l<m} P_l ; _log_s[m] = log sum_{l<m} P_l e^{-2 eps (m-1-l)}
        self._log_cp = np.concatenate([[-np.inf], np.logaddexp.accumulate(self._log_pl)])
        shifted = np.logaddexp.accumulate(self._log_pl + 2.0 * e * l_idx)
        self._log_s = np.concatenate([[-np.inf], shifted - 2.0 * e * (l_idx)])
        # log (1-delta)^k, and log of the mass 1 - (1-delta)^k of infinite privacy loss
        self._log_keep = kk * math.log1p(-self.delta_step) if self.delta_step < 1 else -math.inf
        self._log_atom = math.log(-math.expm1(self._log_keep)) if self.delta_step else -math.inf

    def _log_delta(self, eps_prime: np.ndarray) -> np.ndarray:
        """``log delta(eps')`` for a flat array of ``eps' >= 0`` (may be ``inf``)."""
        kk, e = self.k, self.eps_step
        out = np.full(eps_prime.shape, self._log_atom)
        if e == 0.0:
            return out
        finite = np.isfinite(eps_prime)
        ep = np.where(finite, eps_prime, kk * e)
        # m = number of l with (k - 2l) eps > eps'; g = (k - 2(m-1)) eps - eps' in (0, 2 eps]
        m = np.clip(np.ceil((kk * e - ep) / (2.0 * e)), 0, kk + 1).astype(np.int64)
        g = (kk - 2.0 * (m - 1)) * e - ep
        m = np.where((m >= 1) & (g <= 0.0), m - 1, m)
        g = (kk - 2.0 * (m - 1)) * e - ep
        active = m >= 1
        mi = np.where(active, m, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            # sum_{l < m-1} P_l (1 - e^{-2 eps (m-1-l)}) = CP(m-1) - e^{-2 eps} S(m-1)
            log_cp_prev = self._log_cp[mi - 1]
            ratio = np.minimum(self._log_s[mi - 1] - 2.0 * e - log_cp_prev, 0.0)
            part1 = log_cp_prev + np.log(-np.expm1(ratio))
            part1 = np.where(np.isneginf(log_cp_prev), -np.inf, part1)
            # S(m) (1 - e^{-g})
            part2 = self._log_s[mi] + np.log(-np.expm1(-np.maximum(g, 0.0)))
            bracket = np.logaddexp(np.nan_to_num(part1, nan=-np.inf), part2)
        log_b = np.where(active, self._log_keep + bracket, -np.inf)
        return np.logaddexp(out, log_b)

    def delta(self, eps: float | np.ndarray) -> float | np.ndarray:
        """Exact ``delta(eps')`` of the ``k``-fold composition, ``eps' >= 0``; vectorised."""
        e = check_eps_array(eps)
        out = np.minimum(np.exp(self._log_delta(e.ravel())), 1.0).reshape(e.shape)
        return scalar_like(out, eps)

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps'`` with ``delta(eps') <= delta``: ``inf`` below ``1 - (1-delta)^k``
        (the mass of infinite privacy loss), otherwise found by bisection on the exact
        ``delta(eps')``, which is continuous and decreasing on ``[0, k eps]`` and equal to that
        mass from ``k eps`` on."""
        target = check_probability("delta", delta)
        if target >= 1.0:
            return 0.0
        log_target = math.log(target) if target > 0 else -math.inf
        if log_target < self._log_atom:
            return math.inf
        hi = self.k * self.eps_step
        if self._log_delta(np.array([0.0]))[0] <= log_target:
            return 0.0
        lo = 0.0
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            if self._log_delta(np.array([mid]))[0] > log_target:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-15 * hi:
                break
        return hi

    def tradeoff(self) -> PiecewiseLinearTradeoff:
        """The exact trade-off curve ``T(P^k, Q^k)``: the supremum of the ``f_{eps_i, delta_i}``
        over KOV's guarantees (Dong, Roth & Su 2022, Proposition 5), as a piecewise-linear curve
        with one vertex per number of flipped coordinates.

        Tests reject ``D`` on outcomes in the order of decreasing ``Q/P``: first ``Q``'s own atom
        (``alpha = 0``, ``beta = (1-delta)^k``), then ``l = k, k-1, ..., 0`` flips, then ``P``'s
        atom. Both error sums are tail sums, computed from the small end.
        """
        kk = self.k
        keep = math.exp(self._log_keep)
        pl = np.exp(self._log_pl)
        tail = np.concatenate([np.cumsum(pl[::-1])[::-1], [0.0]])  # tail[m] = sum_{l>=m} P_l
        m = np.arange(kk + 1, -1, -1)  # reject when l >= m
        alpha = keep * tail[m]
        beta = keep * tail[kk - m + 1]
        return PiecewiseLinearTradeoff(
            np.append(alpha, 1.0),
            np.append(beta, 0.0),
            name=self.name,
            kind="bound",
            symmetric=True,
        )


def optimal_composition(eps: float, delta: float, k: int) -> OptimalComposition:
    """The exact ``k``-fold composition of an ``(eps, delta)``-DP mechanism (Kairouz, Oh &
    Viswanath 2015, Theorem 3.3); see :class:`OptimalComposition`."""
    return OptimalComposition(eps, delta, k)


# --------------------------------------------------------------------------------------------
# The advanced composition theorem as a privacy profile
# --------------------------------------------------------------------------------------------


class AdvancedComposition(_RepeatedMechanism):
    """The advanced composition theorem for ``k`` runs of an ``(eps, delta)``-DP mechanism as a
    privacy profile (Dwork, Rothblum & Vadhan 2010, Theorem III.3; docs/theory.md#composition).

    The theorem gives, for every ``delta' in (0, 1]``, ``(eps'(delta'), k delta + delta')``-DP with
    ``eps'(delta') = eps sqrt(2 k log(1/delta')) + k eps (e^eps - 1)``. :meth:`epsilon` evaluates
    it at ``delta' = delta_total - k delta``; :meth:`delta` inverts it,
    ``delta(eps') = k delta + exp(-(eps' - k eps (e^eps - 1))^2 / (2 k eps^2))`` for ``eps'``
    above the drift ``k eps (e^eps - 1)`` and 1 below (capped at 1).
    """

    _theorem = "advanced composition"

    def __init__(self, eps: float, delta: float, k: int) -> None:
        super().__init__(eps, delta, k)
        self._drift = _drift(self.eps_step, self.k)

    def epsilon(self, delta: float) -> float:
        """``eps'`` of the theorem at total ``delta``; ``inf`` when ``delta <= k delta_step``."""
        target = check_probability("delta", delta)
        if target >= 1.0:
            return 0.0
        delta_prime = target - self.k * self.delta_step
        if delta_prime <= 0.0:
            return math.inf
        return self.eps_step * math.sqrt(-2.0 * self.k * math.log(delta_prime)) + self._drift

    def delta(self, eps: float | np.ndarray) -> float | np.ndarray:
        """Smallest total ``delta`` the theorem gives at ``eps'``; vectorised over ``eps'``."""
        e = check_eps_array(eps)
        base = self.k * self.delta_step
        if self.eps_step == 0.0:
            out = np.full(e.shape, min(1.0, base))
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                excess = e - self._drift
                tail = np.exp(-0.5 * excess**2 / (self.k * self.eps_step**2))
            tail = np.where(np.isinf(e), 0.0, np.where(excess > 0, tail, 1.0))
            out = np.minimum(base + tail, 1.0)
        return scalar_like(out, eps)

    def tradeoff(self) -> PiecewiseLinearTradeoff:
        """``sup`` of ``f_{eps'(delta'), k delta + delta'}`` over ``delta'`` on a log grid from
        ``10^-300`` to 1 (Dong, Roth & Su 2022, Proposition 5, through
        :func:`~dpaudit.bounds.tradeoff.from_delta`): every member is a guarantee of the theorem,
        so the curve is a valid bound (kind ``"bound"``). Members whose ``eps'`` overflows are
        left out, which only weakens the curve."""
        delta_prime = np.geomspace(1e-300, 1.0, 601)
        with np.errstate(invalid="ignore"):
            eps_family = self.eps_step * np.sqrt(-2.0 * self.k * np.log(delta_prime)) + self._drift
        delta_family = np.minimum(self.k * self.delta_step + delta_prime, 1.0)
        finite = np.isfinite(eps_family)
        if not finite.any():  # no usable guarantee: f = 0
            eps_family, delta_family, finite = np.zeros(1), np.ones(1), np.ones(1, dtype=bool)
        return from_delta(eps_family[finite], delta_family[finite], name=self.name, kind="bound")
