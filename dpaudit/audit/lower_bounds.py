"""Privacy lower bounds from confidence bounds on a test's errors (docs/theory.md#empirical).

If a test of ``P = M(D)`` against ``Q = M(D_prime)`` has type I error ``alpha <= alpha_upper`` and
type II error ``beta <= beta_upper``, then any ``(eps, delta)``-DP guarantee (in both orders)
needs ``alpha + e^eps beta >= 1 - delta`` and ``beta + e^eps alpha >= 1 - delta`` (Kairouz, Oh &
Viswanath 2015, Theorem 2.1; used for auditing by Jagielski, Ullman & Oprea 2020), hence::

    eps >= max( log((1 - delta - beta_upper) / alpha_upper),
                log((1 - delta - alpha_upper) / beta_upper), 0 ).

A ``mu``-GDP guarantee needs ``beta >= G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)`` (Dong, Roth &
Su 2022, Definition 4), and ``G_mu`` is non-increasing in ``alpha``, hence::

    mu >= Phi^{-1}(1 - alpha_upper) - Phi^{-1}(beta_upper)      (when alpha_upper + beta_upper < 1).

The expression is symmetric in the two errors, so it also covers the reverse order. A claimed
trade-off function ``f`` is violated when ``beta_upper < f(alpha_upper)`` or, for the reverse
order, ``alpha_upper < f(beta_upper)``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = ["epsilon_from_errors", "mu_from_errors", "violation_margin"]


def epsilon_from_errors(
    alpha_upper: np.ndarray | float, beta_upper: np.ndarray | float, delta: float
) -> np.ndarray:
    """The ``eps`` lower bound at ``delta`` implied by upper bounds on a test's two errors.

    Vectorised over the errors; ``0`` where the test says nothing (never negative, never NaN).
    """
    a = np.asarray(alpha_upper, dtype=float)
    b = np.asarray(beta_upper, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        forward = np.log(1.0 - delta - b) - np.log(a)
        reverse = np.log(1.0 - delta - a) - np.log(b)
    out = np.fmax(np.nan_to_num(forward, nan=0.0), np.nan_to_num(reverse, nan=0.0))
    return np.maximum(out, 0.0)


def mu_from_errors(alpha_upper: np.ndarray | float, beta_upper: np.ndarray | float) -> np.ndarray:
    """The ``mu``-GDP lower bound implied by upper bounds on a test's two errors (``>= 0``)."""
    a = np.asarray(alpha_upper, dtype=float)
    b = np.asarray(beta_upper, dtype=float)
    informative = a + b < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = -special.ndtri(a) - special.ndtri(b)
    return np.where(informative, np.maximum(np.nan_to_num(mu, nan=0.0), 0.0), 0.0)


def violation_margin(
    claim: TradeoffCurve, alpha_upper: np.ndarray | float, beta_upper: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """How far below a claimed trade-off function the tests' upper bounds reach, both orders.

    Returns ``(forward, reverse)`` with ``forward = f(alpha_upper) - beta_upper`` and
    ``reverse = f(beta_upper) - alpha_upper``; a positive value is a violation of the claim.
    """
    a = np.clip(np.asarray(alpha_upper, dtype=float), 0.0, 1.0)
    b = np.clip(np.asarray(beta_upper, dtype=float), 0.0, 1.0)
    return np.asarray(claim(a)) - b, np.asarray(claim(b)) - a
