"""Confidence bounds for the quantities an audit measures.

Three exact (non-asymptotic) constructions, each valid for any sample size:

- Clopper-Pearson bounds for a binomial proportion (Clopper & Pearson 1934): the one-sided upper
  bound at level ``1 - gamma`` for ``k`` successes in ``n`` trials is the ``1 - gamma`` quantile of
  ``Beta(k + 1, n - k)`` (``1`` when ``k = n``); the lower bound is the ``gamma`` quantile of
  ``Beta(k, n - k + 1)`` (``0`` when ``k = 0``). docs/theory.md#empirical.
- The Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant (Massart 1990, "The tight
  constant in the DKW inequality", Theorem 1): ``P(sup_x |F_n(x) - F(x)| > r) <= 2 exp(-2 n r^2)``,
  a band for a whole distribution function at once.
- The empirical Bernstein bound for the mean of ``[0, 1]``-valued variables (Maurer & Pontil 2009,
  "Empirical Bernstein bounds and sample variance penalization", Theorem 4): with probability at
  least ``1 - gamma``, ``E X <= mean + sqrt(2 V log(2/gamma) / n) + 7 log(2/gamma) / (3 (n - 1))``
  with ``V`` the unbiased sample variance.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpaudit._core.validation import as_float_array, check_array_in_unit_interval

__all__ = [
    "BLOCK",
    "clopper_pearson_upper",
    "clopper_pearson_lower",
    "dkw_radius",
    "empirical_bernstein_radius",
]


#: Values per call of scipy's ``betaincinv``. One call holds the interpreter lock throughout, so
#: that no other thread of the process runs (the heartbeat of a long command says nothing): a
#: million counts take seconds, and go in blocks of this many.
BLOCK = 2**16


def _betaincinv(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``scipy.special.betaincinv(a, b, y)``, broadcast, in blocks of :data:`BLOCK` values (the
    same values as one call: the function is evaluated element by element)."""
    a, b, y = np.broadcast_arrays(a, b, y)
    if a.size <= BLOCK:
        return special.betaincinv(a, b, y)
    out = np.empty(a.shape)
    flat_out, flat_a, flat_b, flat_y = out.reshape(-1), a.ravel(), b.ravel(), y.ravel()
    for start in range(0, a.size, BLOCK):
        block = slice(start, start + BLOCK)
        flat_out[block] = special.betaincinv(flat_a[block], flat_b[block], flat_y[block])
    return out


def _check_gamma(gamma: np.ndarray | float) -> np.ndarray:
    return check_array_in_unit_interval("gamma", gamma, low_open=True, high_open=True)


def _check_counts(k: np.ndarray | float, n: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    k_arr = as_float_array("k (count)", k)
    n_arr = as_float_array("n (number of trials)", n)
    if np.isnan(k_arr).any() or (k_arr < 0).any():
        raise ValueError(f"k (count) must be >= 0, got {k!r}")
    if np.isnan(n_arr).any() or (n_arr < 1).any():
        raise ValueError(f"n (number of trials) must be >= 1, got {n!r}")
    if (k_arr > n_arr).any():
        raise ValueError("k (count) must be in [0, n]; got a count larger than its n")
    return k_arr, n_arr


def clopper_pearson_upper(
    k: np.ndarray | float, n: np.ndarray | float, gamma: np.ndarray | float
) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound on a binomial proportion, at level ``1 - gamma``.

    ``Beta^{-1}(1 - gamma; k + 1, n - k)``, and ``1`` when ``k = n`` (docs/theory.md#empirical).
    Vectorised over ``k``, ``n`` and ``gamma``. ``k`` may be fractional (the formula is the
    continuous extension), which the engine uses to predict bounds at another sample size.
    """
    k_arr, n_arr = _check_counts(k, n)
    g = _check_gamma(gamma)
    full = k_arr >= n_arr
    b = np.where(full, 1.0, n_arr - k_arr)
    out = _betaincinv(k_arr + 1.0, b, 1.0 - g)
    return np.where(full, 1.0, out)


def clopper_pearson_lower(
    k: np.ndarray | float, n: np.ndarray | float, gamma: np.ndarray | float
) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound on a binomial proportion, at level ``1 - gamma``.

    ``Beta^{-1}(gamma; k, n - k + 1)``, and ``0`` when ``k = 0``. Vectorised like
    :func:`clopper_pearson_upper`.
    """
    k_arr, n_arr = _check_counts(k, n)
    g = _check_gamma(gamma)
    empty = k_arr <= 0
    a = np.where(empty, 1.0, k_arr)
    out = _betaincinv(a, n_arr - k_arr + 1.0, g)
    return np.where(empty, 0.0, out)


def dkw_radius(n: np.ndarray | float, gamma: np.ndarray | float) -> np.ndarray:
    """Half-width ``sqrt(log(2 / gamma) / (2 n))`` of the two-sided DKW-Massart band.

    With probability at least ``1 - gamma`` the empirical distribution function of ``n`` i.i.d.
    draws is within this distance of the true one at every point simultaneously (Massart 1990).
    """
    g = _check_gamma(gamma)
    n_arr = np.asarray(n, dtype=float)
    if np.isnan(n_arr).any() or (n_arr < 1).any():
        raise ValueError(f"n (number of trials) must be >= 1, got {n!r}")
    return np.sqrt(np.log(2.0 / g) / (2.0 * n_arr))


def empirical_bernstein_radius(
    variance: np.ndarray | float, n: np.ndarray | float, gamma: np.ndarray | float
) -> np.ndarray:
    """One-sided empirical Bernstein radius for the mean of ``n`` i.i.d. values in ``[0, 1]``.

    ``sqrt(2 V log(2/gamma) / n) + 7 log(2/gamma) / (3 (n - 1))`` with ``V`` the unbiased sample
    variance (Maurer & Pontil 2009, Theorem 4): the true mean exceeds the sample mean by more than
    this with probability at most ``gamma``; applied to ``1 - X`` it bounds the mean from below.
    Needs ``n >= 2``.
    """
    g = _check_gamma(gamma)
    v = np.asarray(variance, dtype=float)
    n_arr = np.asarray(n, dtype=float)
    if np.isnan(n_arr).any() or (n_arr < 2).any():
        raise ValueError(f"n (number of trials) must be >= 2, got {n!r}")
    if np.isnan(v).any():
        raise ValueError("variance must not be NaN")
    log_term = np.log(2.0 / g)
    return np.sqrt(2.0 * np.maximum(v, 0.0) * log_term / n_arr) + 7.0 * log_term / (
        3.0 * (n_arr - 1.0)
    )
