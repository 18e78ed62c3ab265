"""Monte Carlo estimates of ``delta(eps)`` when the attack score is the exact privacy loss.

For the likelihood-ratio score ``s(y) = log q(y)/p(y)`` the hockey-stick divergence is a mean of
``[0, 1]``-valued variables (docs/theory.md#empirical; Steinke, Proposition 7)::

    delta_{P||Q}(eps) = E_{y~P} (1 - e^{eps - L_{P||Q}(y)})_+,   L_{P||Q} = -s,
    delta_{Q||P}(eps) = E_{y~Q} (1 - e^{eps - L_{Q||P}(y)})_+,   L_{Q||P} = +s,

so both orders are estimated without any threshold search, with empirical Bernstein intervals
(Maurer & Pontil 2009, Theorem 4). The engine does not keep the scores: per bin of the score
grid it keeps the count and the sums of ``e^{s - u}`` and ``e^{2(s - u)}`` with ``u`` the bin's
upper edge (order ``P||Q``), and of ``e^{l - s}``, ``e^{2(l - s)}`` with ``l`` its lower edge
(order ``Q||P``).
All terms are in ``[0, 1]``. Below a score threshold ``t`` (order ``P||Q``, ``t = -eps``) the
first two moments of ``X = (1 - e^{s - t})_+`` over the bins entirely below ``t`` are::

    sum X   = sum_k (n_k - c_k A_k),    sum X^2 = sum_k (n_k - 2 c_k A_k + c_k^2 B_k),

with ``c_k = e^{u_k - t} <= 1``, and symmetrically above ``t = eps`` for ``Q||P``. So the sample
mean and variance are exact whenever no bin holds values on both sides of ``t``: at every grid
edge, and inside a bin that holds a single value (then ``A_k^2 = n_k B_k`` and the value is
``u_k + log(A_k / n_k)``). Elsewhere ``delta`` is bounded by its values at the bin's two edges,
``delta(eps)`` being monotone in ``eps``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit._core.validation import check_eps_array, check_probability
from dpaudit.audit.confidence import empirical_bernstein_radius

__all__ = ["PrivacyLossStatistics"]


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(x)


#: Relative tolerance of the single-value test ``A_k^2 = n_k B_k`` (Cauchy-Schwarz equality).
_SINGLE_TOL = 1e-9


class _Order:
    """One order of the privacy loss, in the score variable ``t``.

    ``sign = +1`` (order ``P||Q``, scores under ``D``): ``X = (1 - e^{s - t})_+`` with ``t = -eps``,
    weights against upper edges. ``sign = -1`` (order ``Q||P``, scores under ``D_prime``):
    ``X = (1 - e^{t - s})_+`` with ``t = eps``, weights against lower edges.
    """

    def __init__(
        self, edges: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, sign: int
    ) -> None:
        self.edges, self.n, self.a, self.b, self.sign = edges, n, a, b, sign
        self.total = float(n.sum())
        with np.errstate(invalid="ignore"):
            spread = n * b - a * a
        # A bin holds one value iff Cauchy-Schwarz is an equality; empty bins trivially do.
        self.single = (n <= 1) | (np.abs(spread) <= _SINGLE_TOL * a * a)
        if sign > 0:
            # bins 0..E-1 have upper edges e_0..e_{E-1}; cumulate from the bottom.
            self.n_cum = np.cumsum(n[:-1])
            self.log_a = np.logaddexp.accumulate(_log(a[:-1]) + edges)
            self.log_b = np.logaddexp.accumulate(_log(b[:-1]) + 2.0 * edges)
        else:
            # bins 1..E have lower edges e_0..e_{E-1}; cumulate from the top.
            self.n_cum = np.cumsum(n[1:][::-1])[::-1]
            self.log_a = np.logaddexp.accumulate((_log(a[1:]) - edges)[::-1])[::-1]
            self.log_b = np.logaddexp.accumulate((_log(b[1:]) - 2.0 * edges)[::-1])[::-1]

    def _edge_bin(self, k: np.ndarray) -> np.ndarray:
        """The edge of bin ``k`` against which its weights were taken."""
        e = self.edges
        idx = k if self.sign > 0 else k - 1
        return e[np.clip(idx, 0, e.size - 1)]

    def moments(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(sum X, sum X^2, known)`` at score thresholds ``t``; where ``known`` is False the
        bin holding ``t`` has several values on both sides of it and the sums are not exact."""
        e, n = self.edges, self.n
        big = e.size
        if self.sign > 0:
            m = np.searchsorted(e, t, side="right")  # bin [e_{m-1}, e_m) holds t
            full = m - 1  # bins 0..m-1 lie entirely below t
            ok = full >= 0
            fi = np.clip(full, 0, big - 1)
            shift = -t
            at_edge = (m >= 1) & (e[np.clip(m - 1, 0, big - 1)] == t)
            has_edge = m < big
        else:
            m = np.searchsorted(e, t, side="left")  # bin [e_{m-1}, e_m) holds t, t <= e_m
            full = m  # index into the top-down cumulation: bins m+1..E lie entirely above t
            ok = full <= big - 1
            fi = np.clip(full, 0, big - 1)
            shift = t
            at_edge = (m < big) & (e[np.clip(m, 0, big - 1)] == t)
            has_edge = m >= 1
        with np.errstate(over="ignore", invalid="ignore"):
            ea = np.where(ok, np.exp(self.log_a[fi] + shift), 0.0)
            eb = np.where(ok, np.exp(self.log_b[fi] + 2.0 * shift), 0.0)
        nf = np.where(ok, self.n_cum[fi], 0.0)
        s1 = nf - ea
        s2 = nf - 2.0 * ea + eb
        # The bin holding t: exact when it is empty, when t sits on the edge that excludes it,
        # or when it holds a single value (its weight then reveals that value).
        nm, am, bm = n[m], self.a[m], self.b[m]
        with np.errstate(over="ignore", invalid="ignore"):
            c = np.exp(self.sign * (self._edge_bin(m) - t))
            part1 = nm - c * am
            inside = has_edge & self.single[m] & (part1 > 0)
            s1 = s1 + np.where(inside, part1, 0.0)
            s2 = s2 + np.where(inside, nm - 2.0 * c * am + c * c * bm, 0.0)
        known = (nm == 0) | at_edge | (has_edge & self.single[m])
        s1 = np.maximum(s1, 0.0)
        return s1, np.clip(s2, 0.0, s1), known

    def bounds(self, eps: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Estimate, lower and upper bound (each one-sided at ``gamma``) of this order."""
        t = -self.sign * eps
        s1, s2, known = self.moments(t)
        est, low, up = self._interval(s1, s2, gamma)
        if known.all():
            return est, low, up
        # Elsewhere bound delta by its values at the edges around t (delta is monotone in eps).
        e = self.edges
        side = "right" if self.sign > 0 else "left"
        m = np.searchsorted(e, t, side=side)
        lo_t = e[np.clip(m - 1, 0, e.size - 1)]
        hi_t = e[np.clip(m, 0, e.size - 1)]
        a1, a2, _ = self.moments(lo_t)
        b1, b2, _ = self.moments(hi_t)
        est_lo, low_lo, up_lo = self._interval(a1, a2, gamma)
        est_hi, low_hi, up_hi = self._interval(b1, b2, gamma)
        valid_lo, valid_hi = m >= 1, m < e.size
        # In t: P||Q has delta increasing in t, Q||P decreasing.
        if self.sign > 0:
            up_f = np.where(valid_hi, up_hi, 1.0)
            low_f = np.where(valid_lo, low_lo, 0.0)
        else:
            up_f = np.where(valid_lo, up_lo, 1.0)
            low_f = np.where(valid_hi, low_hi, 0.0)
        span = np.where(hi_t > lo_t, hi_t - lo_t, 1.0)
        frac = np.clip((t - lo_t) / span, 0.0, 1.0)
        est_f = np.where(valid_lo & valid_hi, est_lo + frac * (est_hi - est_lo), np.nan)
        return (
            np.where(known, est, est_f),
            np.where(known, low, low_f),
            np.where(known, up, up_f),
        )

    def _interval(
        self, s1: np.ndarray, s2: np.ndarray, gamma: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.total
        mean = s1 / n
        if n < 2:  # no variance estimate: only the trivial interval [0, 1]
            return mean, np.zeros_like(mean), np.ones_like(mean)
        var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1.0)
        radius = empirical_bernstein_radius(var, n, gamma)
        return mean, np.maximum(mean - radius, 0.0), np.minimum(mean + radius, 1.0)


class PrivacyLossStatistics:
    """Per-bin sufficient statistics of the privacy loss, and the ``delta(eps)`` they imply.

    Parameters
    ----------
    edges:
        The score grid's ``E`` finite edges.
    counts_d, sum_d, sum_sq_d:
        Under ``D``, per bin: count, ``sum e^{s - upper edge}``, ``sum e^{2(s - upper edge)}``.
    counts_d_prime, sum_d_prime, sum_sq_d_prime:
        Under ``D_prime``, per bin: count, ``sum e^{lower edge - s}``,
        ``sum e^{2(lower edge - s)}``.

    Notes
    -----
    ``delta(eps)`` is exact (the sample mean of ``(1 - e^{eps - L})_+``) at every grid edge and at
    every ``eps`` whose bin holds a single score value, which covers discrete scores such as
    randomized response entirely; between edges of a bin with many values it is bounded by the
    values at the two edges.
    """

    def __init__(
        self,
        edges: np.ndarray,
        counts_d: np.ndarray,
        sum_d: np.ndarray,
        sum_sq_d: np.ndarray,
        counts_d_prime: np.ndarray,
        sum_d_prime: np.ndarray,
        sum_sq_d_prime: np.ndarray,
    ) -> None:
        self.edges = np.asarray(edges, dtype=float)
        e = self.edges.size
        arrays = [counts_d, sum_d, sum_sq_d, counts_d_prime, sum_d_prime, sum_sq_d_prime]
        arrays = [np.asarray(x, dtype=float) for x in arrays]
        if any(x.shape != (e + 1,) for x in arrays):
            raise ValueError(f"every statistic needs {e + 1} bins (len(edges) + 1)")
        if any((x < 0).any() or not np.isfinite(x).all() for x in arrays):
            raise ValueError("statistics must be finite and >= 0")
        (self.counts_d, self.sum_d, self.sum_sq_d) = arrays[:3]
        (self.counts_d_prime, self.sum_d_prime, self.sum_sq_d_prime) = arrays[3:]
        self.n_d = float(self.counts_d.sum())
        self.n_d_prime = float(self.counts_d_prime.sum())
        if self.n_d < 1 or self.n_d_prime < 1:
            raise ValueError("need at least one score under each dataset")
        self._p_q = _Order(self.edges, self.counts_d, self.sum_d, self.sum_sq_d, +1)
        self._q_p = _Order(
            self.edges, self.counts_d_prime, self.sum_d_prime, self.sum_sq_d_prime, -1
        )

    def delta(self, eps: float | np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
        """``delta(eps)`` estimates with an interval holding at ``confidence`` for each ``eps``.

        Four one-sided empirical Bernstein bounds (lower and upper, both orders) share
        ``gamma = 1 - confidence`` equally, so ``[lower, upper]`` covers
        ``max(delta_{P||Q}, delta_{Q||P})`` and each order's interval covers that order.
        Estimates are ``NaN`` outside the grid's ``eps`` range, where only the (valid, trivial)
        bounds ``0`` and ``1`` are reported.
        """
        eps_arr = check_eps_array(eps)
        confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
        gamma = (1.0 - confidence) / 4.0
        flat = eps_arr.ravel()
        est_pq, low_pq, up_pq = self._p_q.bounds(flat, gamma)
        est_qp, low_qp, up_qp = self._q_p.bounds(flat, gamma)

        def shaped(x: np.ndarray) -> np.ndarray | float:
            return float(x[0]) if eps_arr.ndim == 0 else x.reshape(eps_arr.shape)

        return {
            "eps": shaped(flat),
            "delta": shaped(np.fmax(est_pq, est_qp)),
            "lower": shaped(np.maximum(low_pq, low_qp)),
            "upper": shaped(np.maximum(up_pq, up_qp)),
            "delta_d_d_prime": shaped(est_pq),
            "lower_d_d_prime": shaped(low_pq),
            "upper_d_d_prime": shaped(up_pq),
            "delta_d_prime_d": shaped(est_qp),
            "lower_d_prime_d": shaped(low_qp),
            "upper_d_prime_d": shaped(up_qp),
            "confidence": confidence,
            "method": "empirical Bernstein (Maurer-Pontil 2009), gamma/4 per one-sided bound",
        }

    def to_dict(self) -> dict[str, list[float]]:
        """JSON-ready per-bin statistics (the edges are stored with the grid)."""
        return {
            "counts_d": self.counts_d.tolist(),
            "sum_d": self.sum_d.tolist(),
            "sum_sq_d": self.sum_sq_d.tolist(),
            "counts_d_prime": self.counts_d_prime.tolist(),
            "sum_d_prime": self.sum_d_prime.tolist(),
            "sum_sq_d_prime": self.sum_sq_d_prime.tolist(),
        }
