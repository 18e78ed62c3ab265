"""Exact probability that uniform order statistics stay below a boundary.

For ``n`` independent uniforms on ``[0, 1]`` with order statistics ``U_(1) <= ... <= U_(n)``, and
ranks ``r_1 < ... < r_K`` with bounds ``b_1, ..., b_K``,

    P(U_(r_j) <= b_j for every j)

is computed exactly, not by a union bound: the events are strongly dependent (neighbouring order
statistics move together), so the joint probability of failing anywhere is far below the sum of
the single failures. This is what makes a confidence band simultaneous over every threshold at its
stated level (:mod:`dpaudit.audit.strategies`).

Method: Moscovich and Nadler 2017, "Fast calculation of boundary crossing probabilities for
Poisson processes", Statistics and Probability Letters 123, 177-182, Section 2. The event
``U_(r) <= b`` is ``N(b) >= r`` for the counting process ``N(t) = #{i: U_i <= t}``. A Poisson
process of rate ``n`` on ``[0, 1]``, conditioned on ``N(1) = n``, is that counting process, so

    P(N(b_j) >= r_j for every j) = P_Poisson(N(b_j) >= r_j for every j, N(1) = n) / P(N(1) = n);

the numerator is propagated from checkpoint to checkpoint: between ``b_{j-1}`` and ``b_j`` the
count gains a ``Poisson(n (b_j - b_{j-1}))`` increment independent of the past (a convolution),
and at ``b_j`` the states below ``r_j`` are removed (Noé 1972's recursion in the Poisson form).
With every rank ``1..n`` as a checkpoint it is the one-sided Kolmogorov-Smirnov distribution
(``tests/audit/test_crossing.py`` checks it against published values and Steck's determinant).

Numerics. At each checkpoint only the states within :data:`TAIL_SDS` Poisson standard deviations
of the mean, and from which ``N(1) = n`` can still be reached, are kept. The states dropped carry
probability below ``1e-20``; dropping them only *removes* probability from the numerator, so the
value returned is a lower bound on the true probability, with an error far below ``1e-12``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special
from scipy.fft import next_fast_len

from dpaudit._core.validation import check_integer

__all__ = ["TAIL_SDS", "noncrossing_probability"]

#: States kept around the mean of each Poisson count, in standard deviations (plus their square,
#: for the small counts where the Poisson law is skewed): the mass outside is below ``1e-20``.
TAIL_SDS = 10.0

#: Below this many terms the convolution is direct; above, it goes through the FFT.
_DIRECT = 64


def _poisson_pmf(k: np.ndarray, mean: float) -> np.ndarray:
    """``P(Poisson(mean) = k)`` for an array of non-negative integers ``k`` (as floats)."""
    if mean <= 0.0:
        return (k == 0).astype(float)
    return np.exp(special.xlogy(k, mean) - mean - special.gammaln(k + 1.0))


def _reach(mean: float) -> int:
    """A count that ``Poisson(mean)`` exceeds with probability below ``1e-20`` (Bernstein)."""
    return int(math.ceil(mean + TAIL_SDS * math.sqrt(mean) + TAIL_SDS**2))


def _advance(f: np.ndarray, lo: int, new_lo: int, top: int, mean: float) -> np.ndarray:
    """The weights of the states ``new_lo..top`` after a ``Poisson(mean)`` increment, from the
    weights ``f`` of the states ``lo..lo + len(f) - 1``. The increments that cannot land in the
    new window, and those beyond ``TAIL_SDS`` deviations of the mean, are left out (they only
    remove weight)."""
    hi = lo + f.size - 1
    k_lo = max(0, new_lo - hi, int(math.floor(mean - TAIL_SDS * math.sqrt(mean))))
    k_hi = min(top - lo, _reach(mean))
    if k_hi < k_lo:
        return np.zeros(top - new_lo + 1)
    kernel = _poisson_pmf(np.arange(k_lo, k_hi + 1, dtype=float), mean)
    size = f.size + kernel.size - 1
    if min(f.size, kernel.size) <= _DIRECT:
        g = np.convolve(f, kernel)
    else:
        m = next_fast_len(size, real=True)
        g = np.fft.irfft(np.fft.rfft(f, m) * np.fft.rfft(kernel, m), m)[:size]
    # g[i] is the weight of the state lo + k_lo + i.
    out = np.zeros(top - new_lo + 1)
    first = new_lo - (lo + k_lo)
    take = g[max(first, 0) : first + out.size]
    out[max(-first, 0) : max(-first, 0) + take.size] = take
    return out


def noncrossing_probability(ranks: np.ndarray, bounds: np.ndarray, n: int) -> float:
    """``P(U_(r_j) <= b_j for every j)`` for the order statistics of ``n`` uniforms on ``[0, 1]``.

    Parameters
    ----------
    ranks:
        Strictly increasing ranks ``1 <= r_j <= n``.
    bounds:
        The bound of each rank, in ``[0, 1]``. They need not be increasing: ``U_(r_i) <= U_(r_j)``
        for ``i < j``, so the bound that binds at ``r_i`` is the smallest of ``b_i, b_{i+1}, ...``.
    n:
        Number of uniforms.

    Returns
    -------
    float
        The probability, exact up to a lower-side error below ``1e-12`` (module docstring).
    """
    n = check_integer("n", n, minimum=1)
    r = np.asarray(ranks, dtype=np.int64).ravel()
    b = np.asarray(bounds, dtype=float).ravel()
    if r.shape != b.shape:
        raise ValueError(f"ranks and bounds must have the same length, got {r.size} and {b.size}")
    if r.size and (r[0] < 1 or r[-1] > n or np.any(np.diff(r) <= 0)):
        raise ValueError(f"ranks must be strictly increasing integers in [1, {n}]")
    if np.isnan(b).any():
        raise ValueError("bounds must not be NaN")
    b = np.minimum.accumulate(b[::-1])[::-1]
    binding = b < 1.0
    r, b = r[binding], b[binding]
    if r.size and b[0] <= 0.0:
        return 0.0
    rate = float(n)
    lo, f, t_prev = 0, np.ones(1), 0.0
    for rank, t in zip(r.tolist(), b.tolist(), strict=True):
        # The states kept: within TAIL_SDS binomial standard deviations of n t (the law of N(t)
        # given N(1) = n, the only states that carry weight at the end), and at least the rank.
        mean, spread = rate * t, TAIL_SDS * math.sqrt(rate * t * (1.0 - t)) + TAIL_SDS**2
        top = min(n, int(math.ceil(mean + spread)))
        new_lo = max(rank, lo, int(math.floor(mean - spread)))
        if new_lo > top:
            return 0.0
        f = _advance(f, lo, new_lo, top, rate * (t - t_prev))
        lo, t_prev = new_lo, t
    last = _poisson_pmf(n - (lo + np.arange(f.size, dtype=float)), rate * (1.0 - t_prev))
    total = float(f @ last) / float(_poisson_pmf(np.array([float(n)]), rate)[0])
    return min(max(total, 0.0), 1.0)
