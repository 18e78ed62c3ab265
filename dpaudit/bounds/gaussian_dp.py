"""Gaussian differential privacy: ``G_mu``, its (eps, delta) dual, central limits, Berry-Esseen.

References (cited as in docs/theory.md):

- DRS: Dong, Roth & Su 2022, "Gaussian differential privacy" (JRSS-B). Definition 4 (``G_mu``),
  Corollary 1 (its dual ``delta(eps)``), Corollary 2 (composition), Theorem 5 (Berry-Esseen),
  Corollary 4 (central limit for fixed-size batches), Lemma 4 and Corollary 5 (Berry-Esseen for
  NoisySGD).
- Bu, Dong, Long & Su 2019, "Deep learning with Gaussian differential privacy": the central limit
  for Poisson-sampled NoisySGD, ``mu = q sqrt(T (e^{1/sigma^2} - 1))``.
- Balle & Wang 2018, "Improving the Gaussian mechanism": the same ``delta(eps)`` as the exact
  privacy profile of the Gaussian mechanism.

The central limits are approximations (``kind="approximation"``), not bounds: they can
underestimate eps badly for few epochs (docs/theory.md#gdp). The Berry-Esseen curve is a valid
bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr, ndtri

from dpaudit._core.validation import (
    check_array_in_unit_interval,
    check_choice,
    check_eps_array,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
)
from dpaudit.bounds.tradeoff import TradeoffCurve, register_composition

__all__ = [
    "GDPTradeoff",
    "gdp",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "clt_mu_poisson",
    "clt_mu_fixed",
    "gdp_clt",
    "BerryEsseenFunctionals",
    "BerryEsseenTradeoff",
    "berry_esseen_functionals",
    "berry_esseen",
]

_SQRT_HALF = math.sqrt(0.5)


def _as_output(x: np.ndarray) -> float | np.ndarray:
    return float(x) if x.ndim == 0 else x


def _gaussian_tradeoff(alpha: np.ndarray, mu: float) -> np.ndarray:
    """``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``, with ``Phi^{-1}(1 - a) = -Phi^{-1}(a)``
    so that small ``alpha`` keeps full precision."""
    return ndtr(-ndtri(alpha) - mu)


def _log1mexp(t: np.ndarray) -> np.ndarray:
    """``log(1 - e^t)`` for ``t <= 0``, accurate on both sides of ``-log 2`` (Maechler 2012)."""
    with np.errstate(divide="ignore"):
        return np.where(t > -math.log(2.0), np.log(-np.expm1(t)), np.log1p(-np.exp(t)))


def _log_delta(eps: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``log delta_mu(eps)`` of DRS Corollary 1 for ``mu > 0``, ``0 <= eps < inf``.

    ``delta = Phi(a) - e^eps Phi(b)`` with ``a = -eps/mu + mu/2``, ``b = a - mu``, written as
    ``log Phi(a) + log(1 - e^t)`` with ``t = eps + log Phi(b) - log Phi(a) <= 0``. For ``a <= 0``
    the identity ``Phi(x) = erfcx(-x/sqrt 2) e^{-x^2/2} / 2`` and ``(a^2 - b^2)/2 = -eps`` give
    ``t = log erfcx(-b/sqrt 2) - log erfcx(-a/sqrt 2)`` with no cancellation against ``eps``,
    so ``delta`` keeps its relative accuracy down to the smallest doubles. Against 60-digit
    arithmetic the relative error is below 1e-12 for ``mu >= 0.01`` and about 1e-8 at
    ``mu = 1e-6`` (where ``t`` is itself of order ``mu / |a|``).
    """
    a = -eps / mu + 0.5 * mu
    b = a - mu
    t = np.empty_like(a)
    tail = a <= 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t[tail] = np.log(erfcx(-b[tail] * _SQRT_HALF)) - np.log(erfcx(-a[tail] * _SQRT_HALF))
        body = ~tail
        t[body] = eps[body] + log_ndtr(b[body]) - log_ndtr(a[body])
        out = log_ndtr(a) + _log1mexp(np.minimum(t, 0.0))
    return np.where(np.isfinite(a), out, -np.inf)


def _check_mu_values(mu: object) -> np.ndarray:
    arr = check_eps_array(mu, "mu")
    if not np.isfinite(arr).all():
        raise ValueError(f"mu must be in [0, inf), got {mu!r}")
    return arr


def _delta_array(eps: np.ndarray, mu: np.ndarray) -> np.ndarray:
    eps, mu = np.broadcast_arrays(eps, mu)
    out = np.zeros(eps.shape)
    live = (mu > 0) & np.isfinite(eps)
    out[live] = np.exp(_log_delta(eps[live], mu[live]))
    return np.clip(out, 0.0, 1.0)


def gdp_delta(eps: float | np.ndarray, mu: float | np.ndarray) -> float | np.ndarray:
    """``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (DRS Corollary 1).

    The exact (eps, delta) profile of mu-GDP, and of the Gaussian mechanism with
    ``mu = sensitivity / sigma`` (Balle & Wang 2018). Vectorised and broadcast over ``eps`` and
    ``mu``; computed in log space (see :func:`_log_delta`) so values down to ``1e-300`` keep their
    relative accuracy (about 1e-12 for ``mu >= 0.01``); ``mu = 0`` or ``eps = inf`` give 0.
    """
    return _as_output(_delta_array(check_eps_array(eps), _check_mu_values(mu)))


def gdp_epsilon(delta: float | np.ndarray, mu: float | np.ndarray) -> float | np.ndarray:
    """Smallest ``eps >= 0`` with ``delta_mu(eps) <= delta``: the inverse of :func:`gdp_delta`.

    Vectorised bisection on ``log delta_mu(eps)`` over ``[0, mu (mu/2 - Phi^{-1}(delta))]`` (the
    upper end satisfies ``delta_mu <= Phi(-eps/mu + mu/2) = delta``), run until the bracket is a
    few units in the last place wide. ``delta = 0`` gives ``inf`` (for ``mu > 0``).
    """
    d = check_array_in_unit_interval("delta", delta)
    d, m = np.broadcast_arrays(d, _check_mu_values(mu))
    shape = d.shape
    d, m = d.astype(float).ravel(), m.astype(float).ravel()
    out = np.zeros(d.shape)
    out[(d == 0) & (m > 0)] = np.inf
    live = (d > 0) & (m > 0)
    live[live] = _delta_array(np.zeros(int(live.sum())), m[live]) > d[live]
    if live.any():
        dl, ml = d[live], m[live]
        log_target = np.log(dl)
        lo = np.zeros_like(dl)
        hi = ml * (0.5 * ml - ndtri(dl))
        for _ in range(1100):
            mid = 0.5 * (lo + hi)
            above = _log_delta(mid, ml) > log_target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
            if (hi - lo <= 4.0 * np.spacing(hi)).all():
                break
        out[live] = hi
    return _as_output(out.reshape(shape))


def gdp_mu(eps: float | np.ndarray, delta: float | np.ndarray) -> float | np.ndarray:
    """The ``mu`` with ``delta_mu(eps) = delta``: the GDP parameter matching one (eps, delta) pair.

    ``delta_mu(eps)`` increases strictly from 0 (``mu -> 0``) to 1 (``mu -> inf``), so the root is
    unique; found by vectorised bisection in ``mu`` after doubling an upper end.
    """
    e = check_eps_array(eps)
    if not np.isfinite(e).all():
        raise ValueError(f"eps must be finite, got {eps!r}")
    d = check_array_in_unit_interval("delta", delta, low_open=True, high_open=True)
    e, d = np.broadcast_arrays(e, d)
    shape = e.shape
    e, d = e.astype(float).ravel(), d.astype(float).ravel()
    log_target = np.log(d)
    hi = np.ones_like(e)
    for _ in range(1100):
        short = _log_delta(e, hi) < log_target
        if not short.any():
            break
        hi = np.where(short, 2.0 * hi, hi)
    lo = np.zeros_like(e)
    for _ in range(1100):
        mid = 0.5 * (lo + hi)
        below = _log_delta(e, mid) < log_target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if (hi - lo <= 4.0 * np.spacing(hi)).all():
            break
    return _as_output((0.5 * (lo + hi)).reshape(shape))


class GDPTradeoff(TradeoffCurve):
    """``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``: mu-Gaussian DP (DRS Definition 4).

    The trade-off between ``N(0, 1)`` and ``N(mu, 1)``; the Gaussian mechanism with
    ``l2``-sensitivity ``Delta`` and noise ``sigma`` is exactly ``Delta/sigma``-GDP (DRS Thm. 1).
    Symmetric; ``delta`` is the closed form of :func:`gdp_delta`, ``epsilon`` that of
    :func:`gdp_epsilon`, and the fixed point ``G_mu(x) = x`` is ``Phi(-mu/2)``.

    Attributes
    ----------
    mu:
        The GDP parameter (``0`` is perfect privacy).
    """

    def __init__(self, mu: float, *, kind: str = "exact", name: str | None = None) -> None:
        self.mu = check_nonnegative("mu", mu)
        mu_f = self.mu
        super().__init__(
            lambda a: _gaussian_tradeoff(a, mu_f),
            name=name if name is not None else f"GDP(mu={mu_f:.6g})",
            kind=kind,
            symmetric=True,
            delta_fn=lambda e: _delta_array(e, np.asarray(mu_f)),
        )

    def _fixed_point(self) -> float:
        return float(ndtr(-0.5 * self.mu))

    def epsilon(self, delta: float, *, eps_max: float = 1e4) -> float:
        """Smallest ``eps >= 0`` with ``delta_mu(eps) <= delta`` (:func:`gdp_epsilon`);
        ``inf`` if it exceeds ``eps_max``."""
        target = check_probability("delta", delta)
        eps_max = check_nonnegative("eps_max", eps_max)
        out = float(gdp_epsilon(target, self.mu))
        return out if out <= eps_max else float("inf")


def gdp(mu: float, *, kind: str = "exact") -> GDPTradeoff:
    """The mu-GDP trade-off curve ``G_mu`` (DRS Definition 4); see :class:`GDPTradeoff`."""
    return GDPTradeoff(mu, kind=kind)


def _check_dpsgd(rate: float, sigma: float, steps: int) -> tuple[float, float, int]:
    return (
        check_probability("rate", rate, low_open=True),
        check_positive("sigma", sigma),
        check_integer("steps", steps, minimum=1),
    )


def clt_mu_poisson(rate: float, sigma: float, steps: int) -> float:
    """Central-limit GDP parameter of Poisson-sampled NoisySGD (Bu et al. 2019, Theorem 3):
    ``mu = q sqrt(T (e^{1/sigma^2} - 1))``, an *approximation* for small ``q`` and large ``T``.

    Evaluated as ``q sqrt(T) e^{1/(2 sigma^2)} sqrt(1 - e^{-1/sigma^2})``; a ``sigma`` so small
    that ``mu`` overflows raises ``ValueError``.
    """
    q, s, t = _check_dpsgd(rate, sigma, steps)
    inv = 1.0 / (s * s)
    log_mu = math.log(q) + 0.5 * math.log(t) + 0.5 * inv + 0.5 * math.log(-math.expm1(-inv))
    if log_mu > 700.0:
        raise ValueError(f"sigma={s!r} is too small: mu = exp({log_mu:.4g}) overflows")
    return math.exp(log_mu)


def clt_mu_fixed(rate: float, sigma: float, steps: int) -> float:
    """Central-limit GDP parameter of NoisySGD with fixed-size batches (DRS Corollary 4):
    ``mu = sqrt(2) p sqrt(T) sqrt(chi2)``, ``chi2 = e^{1/sigma^2} Phi(1.5/sigma) +
    3 Phi(-0.5/sigma) - 2`` (DRS Lemma 3, ``chi^2_+(G_{1/sigma})``). An *approximation*.

    ``chi2`` is evaluated as ``expm1(m^2) Phi(1.5 m) + erf(1.5 m/sqrt 2)/2 - 3 erf(m/(2 sqrt 2))/2``
    with ``m = 1/sigma``, which avoids the cancellation of the textbook form for large ``sigma``.
    """
    p, s, t = _check_dpsgd(rate, sigma, steps)
    m = 1.0 / s
    if m * m > 700.0:
        raise ValueError(f"sigma={s!r} is too small: e^(1/sigma^2) overflows")
    chi2 = (
        math.expm1(m * m) * float(ndtr(1.5 * m))
        + 0.5 * math.erf(1.5 * m * _SQRT_HALF)
        - 1.5 * math.erf(0.5 * m * _SQRT_HALF)
    )
    return math.sqrt(2.0) * p * math.sqrt(t) * math.sqrt(max(chi2, 0.0))


def gdp_clt(rate: float, sigma: float, steps: int, *, sampling: str = "poisson") -> GDPTradeoff:
    """The GDP central-limit curve of NoisySGD, ``kind="approximation"``.

    ``sampling="poisson"``: :func:`clt_mu_poisson` (add/remove neighbours);
    ``sampling="fixed"``: :func:`clt_mu_fixed` (DRS Corollary 4, replace-one neighbours).
    """
    check_choice("sampling", sampling, ("poisson", "fixed"))
    mu = (clt_mu_poisson if sampling == "poisson" else clt_mu_fixed)(rate, sigma, steps)
    name = f"GDP-CLT(q={rate:g}, sigma={sigma:g}, T={steps}, {sampling})"
    return GDPTradeoff(mu, kind="approximation", name=name)


class BerryEsseenFunctionals(NamedTuple):
    """The moment functionals of one trade-off function (DRS Section 3.2): ``kl``, ``kappa2`` and
    ``kappa3_bar`` are the mean, raw second moment and central absolute third moment of the
    log-likelihood ratio."""

    kl: float
    kappa2: float
    kappa3_bar: float


def _z_function(x: np.ndarray, p: float, mu: float) -> np.ndarray:
    """``Z(x) = log(p e^{mu x - mu^2/2} + 1 - p)`` of DRS Lemma 4, accurate for small ``p``."""
    w = mu * x - 0.5 * mu * mu
    with np.errstate(over="ignore"):
        small = np.log1p(p * np.expm1(np.minimum(w, 700.0)))
    large = np.logaddexp(w + math.log(p), math.log1p(-p) if p < 1.0 else -np.inf)
    return np.where(w < 700.0, small, large)


def berry_esseen_functionals(rate: float, sigma: float) -> BerryEsseenFunctionals:
    """``kl``, ``kappa2`` and ``kappa3_bar`` of ``C_p(G_{1/sigma})`` by quadrature (DRS Lemma 4).

    With ``Z(x) = log(p e^{mu x - mu^2/2} + 1 - p)``, ``mu = 1/sigma`` and ``phi`` the standard
    normal density, each functional is an integral over ``x >= mu/2``:
    ``kl = p int Z (phi(x-mu) - phi(x))``, ``kappa2 = int Z^2 (p phi(x-mu) + (2-p) phi(x))``,
    ``kappa3_bar = int |Z - kl|^3 (p phi(x-mu) + (1-p) phi(x)) + int |Z + kl|^3 phi(x)``.
    The integrals run to ``max(mu, mu/2) + 40`` (the weights are below ``e^-800`` beyond), with
    relative tolerance ``1e-11``.
    """
    from scipy import integrate

    p = check_probability("rate", rate, low_open=True)
    mu = 1.0 / check_positive("sigma", sigma)
    lo, hi = 0.5 * mu, mu + 40.0

    def phi(x: float) -> float:
        return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)

    def z(x: float) -> float:
        return float(_z_function(np.asarray(x), p, mu))

    def quad(fn: Callable[[float], float]) -> float:
        value, _ = integrate.quad(fn, lo, hi, points=[mu], epsabs=0.0, epsrel=1e-11, limit=500)
        return value

    kl = p * quad(lambda x: z(x) * (phi(x - mu) - phi(x)))
    kappa2 = quad(lambda x: z(x) ** 2 * (p * phi(x - mu) + (2.0 - p) * phi(x)))
    kappa3_bar = quad(lambda x: abs(z(x) - kl) ** 3 * (p * phi(x - mu) + (1.0 - p) * phi(x)))
    kappa3_bar += quad(lambda x: abs(z(x) + kl) ** 3 * phi(x))
    return BerryEsseenFunctionals(kl, kappa2, kappa3_bar)


class BerryEsseenTradeoff(TradeoffCurve):
    """``f(alpha) = max(G_mu(alpha + gamma) - gamma, 0)`` with ``G_mu = 0`` above 1 (DRS Cor. 5).

    Symmetric (``G_mu`` is its own inverse). Its dual has a closed form: with
    ``u* = Phi(-eps/mu - mu/2)`` (where ``G_mu'(u) = -e^eps``) clipped to ``[gamma, G_mu(gamma)]``,
    ``delta(eps) = 1 + gamma - G_mu(u) - e^eps (u - gamma)``. Since ``f(0) = G_mu(gamma) - gamma
    < 1``, ``delta(eps) >= 1 - f(0) > gamma`` for every eps. If ``gamma >= 1/2`` the curve is 0.

    Attributes
    ----------
    mu, gamma:
        ``mu~`` and ``gamma`` of DRS Corollary 5.
    functionals:
        The per-step :class:`BerryEsseenFunctionals`.
    """

    def __init__(
        self, mu: float, gamma: float, functionals: BerryEsseenFunctionals, *, name: str
    ) -> None:
        self.mu = mu
        self.gamma = gamma
        self.functionals = functionals
        super().__init__(self._f, name=name, kind="bound", symmetric=True, delta_fn=self._dual)

    def _f(self, a: np.ndarray) -> np.ndarray:
        u = np.minimum(a + self.gamma, 1.0)
        return np.maximum(_gaussian_tradeoff(u, self.mu) - self.gamma, 0.0)

    def _dual(self, eps: np.ndarray) -> np.ndarray:
        g = self.gamma
        top = float(_gaussian_tradeoff(np.asarray(min(g, 1.0)), self.mu))
        if top <= g:
            return np.ones_like(eps)
        u = np.clip(ndtr(-eps / self.mu - 0.5 * self.mu), g, top)
        with np.errstate(over="ignore", invalid="ignore"):
            linear = np.where(u > g, np.exp(np.minimum(eps, 700.0)) * (u - g), 0.0)
        return 1.0 + g - _gaussian_tradeoff(u, self.mu) - linear


def berry_esseen(rate: float, sigma: float, steps: int) -> BerryEsseenTradeoff:
    """The Berry-Esseen f-DP bound of NoisySGD (DRS Theorem 5 and Corollary 5), ``kind="bound"``.

    For the ``T``-fold composition of ``C_p(G_{1/sigma})`` (``p = rate``, ``T = steps``):
    ``mu~ = 2 sqrt(T) kl / sqrt(kappa2 - kl^2)``,
    ``gamma = 0.56 kappa3_bar / (sqrt(T) (kappa2 - kl^2)^{3/2})`` with the functionals of
    :func:`berry_esseen_functionals`, and ``f(alpha) = max(G_mu~(alpha + gamma) - gamma, 0)``.
    DRS state it for fixed-size batches (replace-one); since ``C_p`` also bounds each step of
    Poisson sampling under add/remove (docs/theory.md#tradeoff), it is a bound there too.
    """
    q, s, t = _check_dpsgd(rate, sigma, steps)
    fun = berry_esseen_functionals(q, s)
    var = fun.kappa2 - fun.kl**2
    if not (var > 0.0 and math.isfinite(var)):
        raise ValueError(
            f"rate={q!r}, sigma={s!r} give a degenerate log-likelihood ratio "
            f"(kappa2 - kl^2 = {var!r}); the Berry-Esseen bound needs it in (0, inf)"
        )
    mu = 2.0 * math.sqrt(t) * fun.kl / math.sqrt(var)
    gamma = 0.56 * fun.kappa3_bar / (math.sqrt(t) * var**1.5)
    name = f"Berry-Esseen(q={q:g}, sigma={s:g}, T={t})"
    return BerryEsseenTradeoff(mu, gamma, fun, name=name)


def _compose_gdp(curves: list[TradeoffCurve]) -> GDPTradeoff | None:
    """``G_mu1 ⊗ ... ⊗ G_mun = G_sqrt(sum mu_i^2)`` (DRS Corollary 2); ``None`` unless every
    curve is Gaussian DP."""
    if not all(isinstance(c, GDPTradeoff) for c in curves):
        return None
    kinds = {c.kind for c in curves}
    kind = (
        kinds.pop()
        if len(kinds) == 1
        else ("approximation" if "approximation" in kinds else "bound")
    )
    return gdp(math.sqrt(math.fsum(c.mu**2 for c in curves)), kind=kind)


register_composition(_compose_gdp)

# ``dpaudit.bounds.gdp`` is this module and, called, the curve constructor gdp(mu).
