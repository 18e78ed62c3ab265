"""Rényi differential privacy (RDP) and zero-concentrated differential privacy (zCDP).

A mechanism is ``(lambda, eps(lambda))``-RDP (Mironov 2017, "Rényi differential privacy",
Definition 4) when the Rényi divergence ``D_lambda(P || Q) = log E_Q[(p/q)^lambda] / (lambda - 1)``
is at most ``eps(lambda)`` for every neighbouring pair, in both orders (docs/theory.md#rdp).
An :class:`RDPCurve` holds such a guarantee at a finite set of orders; it composes by adding
order by order and converts into ``(eps, delta)`` statements and into a trade-off curve, so that it
can be drawn on the same ``(alpha, beta)`` plane as every other bound of dpaudit.

``rho``-zCDP (Bun & Steinke 2016, Definition 1.1) is the RDP curve ``eps(lambda) = rho lambda``
for every ``lambda > 1``; :class:`ZCDP` keeps the continuum of orders and optimises over it exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpaudit._core.validation import (
    as_float_array,
    check_choice,
    check_eps_array,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
    scalar_like,
)
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp

__all__ = [
    "DEFAULT_ORDERS",
    "DEFAULT_INTEGER_ORDERS",
    "RDP_CONVERSIONS",
    "ZCDP_CONVERSIONS",
    "RDPCurve",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_randomized_response",
    "rdp_poisson_subsampled_gaussian",
    "rdp_poisson_subsampled",
    "ZCDP",
    "ApproxZCDP",
    "zcdp_from_pure_dp",
]

#: The orders of dp-accounting's ``RdpAccountant`` default: 1.1, 1.2, ..., 10.9, then the integers
#: 11, ..., 63, then 128, 256, 512 and 1024.
DEFAULT_ORDERS: tuple[float, ...] = (
    tuple(1.0 + x / 10.0 for x in range(1, 100))
    + tuple(float(x) for x in range(11, 64))
    + (128.0, 256.0, 512.0, 1024.0)
)

#: The integer orders >= 2 of :data:`DEFAULT_ORDERS` (the orders the generic subsampling bound
#: of :func:`rdp_poisson_subsampled` can use).
DEFAULT_INTEGER_ORDERS: tuple[float, ...] = tuple(o for o in DEFAULT_ORDERS if o.is_integer())

#: Conversions from RDP to ``(eps, delta)``: ``"improved"`` (Canonne, Kamath & Steinke 2020,
#: Proposition 12; Balle et al. 2020, arXiv:2001.05990, Eq. 20) and ``"standard"`` (Mironov 2017,
#: Proposition 3).
RDP_CONVERSIONS = ("improved", "standard")

#: Conversions from zCDP to ``(eps, delta)``: ``"improved"`` (Steinke 2022, Proposition 14, the
#: infimum over all orders) and ``"simple"`` (``rho + 2 sqrt(rho log(1/delta))``, Bun & Steinke
#: 2016, Proposition 1.3).
ZCDP_CONVERSIONS = ("improved", "simple")

# Largest order accepted by the subsampled-mechanism constructors, whose integer-order sums
# have one term per integer up to the order.
_MAX_SUBSAMPLED_ORDER = 65536

#: The ``eps`` at which a trade-off curve of this module takes the envelope of its own privacy
#: profile (any finite set gives a valid lower bound).
_ENVELOPE_EPS = np.unique(
    np.concatenate([np.linspace(0.0, 10.0, 2001), np.linspace(10.0, 100.0, 901), [200.0, 700.0]])
)

# Bisection steps for the trade-off region and the zCDP optimisations.
_BISECTION_STEPS = 64
# Terms of the fractional-order series computed per block, and the most blocks tried.
_SERIES_BLOCK = 64
_SERIES_MAX_BLOCKS = 1024
# A series has converged when a block's largest term is below exp(-_SERIES_TOL) times the sum.
_SERIES_TOL = 32.0
_TINY = np.finfo(float).tiny


# --------------------------------------------------------------------------------------------
# Numerical helpers (log space)
# --------------------------------------------------------------------------------------------


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """``log(exp(x) - 1)`` for ``x >= 0`` without overflow (``-inf`` at ``x = 0``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        big = x > 1.0
        small = np.log(np.expm1(np.where(big, 1.0, x)))
        large = x + np.log1p(-np.exp(-np.where(big, x, 1.0)))
    return np.where(big, large, small)


def _log_abs_expm1(x: np.ndarray) -> np.ndarray:
    """``log|exp(x) - 1|`` for any real ``x`` (``-inf`` at ``x = 0``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        negative = np.log(-np.expm1(np.minimum(x, 0.0)))
    return np.where(x > 0, _log_expm1(np.maximum(x, 0.0)), negative)


def _log_ndtr_diff(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``log(Phi(hi) - Phi(lo))`` for ``hi >= lo``, accurate in both tails."""
    hi = np.asarray(hi, dtype=float)
    lo = np.asarray(lo, dtype=float)
    upper = lo > 0  # both in the upper tail: use Phi(-lo) - Phi(-hi)
    a = np.where(upper, -lo, hi)
    b = np.where(upper, -hi, lo)
    log_a = special.log_ndtr(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = log_a + np.log(-np.expm1(special.log_ndtr(b) - log_a))
    return np.where(hi == lo, -np.inf, out)


def _signed_log_add(
    log_x: np.ndarray, sign_x: np.ndarray, log_y: np.ndarray, sign_y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``x + y`` for numbers given as ``(log|.|, sign)``; returns the same representation."""
    logs = np.stack([log_x, log_y], axis=-1)
    signs = np.stack([sign_x, sign_y], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out, sign = special.logsumexp(logs, axis=-1, b=signs, return_sign=True)
    out = np.where(np.isnan(out), -np.inf, out)
    return out, np.where(np.isfinite(out), sign, 0.0)


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log|C(n, k)|`` for real ``n`` and integer ``k >= 0`` (generalised binomial coefficient)."""
    return special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _check_orders(
    orders: object, *, integer: bool = False, maximum: float | None = None
) -> np.ndarray:
    """Orders as a sorted float array: finite, > 1 (integers >= 2 if ``integer``), distinct;
    ``None`` is :data:`DEFAULT_ORDERS` (:data:`DEFAULT_INTEGER_ORDERS` if ``integer``)."""
    if orders is None:
        orders = DEFAULT_INTEGER_ORDERS if integer else DEFAULT_ORDERS
    try:
        arr = np.asarray(orders, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"orders must be a sequence of real numbers > 1, got {orders!r}") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"orders must be a non-empty 1-d sequence, got shape {arr.shape}")
    if np.isnan(arr).any() or np.isinf(arr).any() or (arr <= 1.0).any():
        raise ValueError(f"orders must be finite numbers in (1, inf), got {orders!r}")
    if integer and ((arr < 2) | (arr != np.round(arr))).any():
        raise ValueError(f"orders must be integers in [2, inf) for this bound, got {orders!r}")
    if maximum is not None and (arr > maximum).any():
        raise ValueError(f"orders must be in (1, {maximum:g}] here, got max {arr.max()!r}")
    arr = np.sort(arr)
    if (np.diff(arr) == 0).any():
        raise ValueError(f"orders must be distinct, got {orders!r}")
    return arr


# --------------------------------------------------------------------------------------------
# The RDP curve
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RDPCurve:
    """An RDP guarantee ``D_lambda <= eps(lambda)`` at finitely many orders, both orders of every
    neighbouring pair.

    Parameters
    ----------
    orders:
        The orders ``lambda > 1`` (stored sorted, read-only).
    eps:
        ``eps(lambda)`` at each order, in ``[0, inf]`` (``inf`` = no guarantee at that order).
    name:
        Label for tables and figures.

    Notes
    -----
    Composition adds the curves order by order (Mironov 2017, Proposition 1); ``a + b`` is
    :meth:`compose`. The conversions to ``(eps, delta)`` minimise over the stored orders.
    """

    orders: np.ndarray
    eps: np.ndarray
    name: str = "RDP"

    def __post_init__(self) -> None:
        orders = as_float_array("orders", self.orders, "an array of Renyi orders")
        eps = as_float_array("eps", self.eps, "an array of Renyi eps, one per order")
        if orders.ndim == 0:
            orders, eps = orders.reshape(1), eps.reshape(-1)
        if eps.shape != orders.shape:
            raise ValueError(
                f"eps must have one value per order: {orders.size} orders, eps of shape {eps.shape}"
            )
        order = np.argsort(orders, kind="stable")
        orders = _check_orders(orders)
        eps = eps[order]
        if np.isnan(eps).any() or (eps < 0).any():
            raise ValueError(f"eps must lie in [0, inf] (no NaN), got {self.eps!r}")
        orders.setflags(write=False)
        eps = eps.copy()
        eps.setflags(write=False)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "eps", eps)

    def __repr__(self) -> str:
        lo, hi = self.orders[0], self.orders[-1]
        return f"<RDPCurve {self.name}: {self.orders.size} orders in [{lo:g}, {hi:g}]>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RDPCurve):
            return NotImplemented
        return bool(
            np.array_equal(self.orders, other.orders) and np.array_equal(self.eps, other.eps)
        )

    __hash__ = None  # type: ignore[assignment]

    # ---- composition -----------------------------------------------------------------------

    def compose(self, other: RDPCurve) -> RDPCurve:
        """The RDP curve of running both mechanisms (Mironov 2017, Proposition 1): ``eps`` add."""
        if not isinstance(other, RDPCurve):
            raise ValueError(f"other must be an RDPCurve, got {type(other).__name__}")
        if not np.array_equal(self.orders, other.orders):
            raise ValueError("other must have the same orders as this curve to compose")
        return RDPCurve(self.orders, self.eps + other.eps, name=f"{self.name} + {other.name}")

    def __add__(self, other: RDPCurve) -> RDPCurve:
        """``a + b`` is ``a.compose(b)``."""
        return self.compose(other)

    def self_compose(self, n: int) -> RDPCurve:
        """The ``n``-fold composition of the mechanism with itself: ``n eps(lambda)``."""
        n = check_integer("n", n, minimum=0)
        eps = n * self.eps if n else np.zeros_like(self.eps)
        return RDPCurve(self.orders, eps, name=f"{n} x {self.name}")

    # ---- conversion to (eps, delta) ---------------------------------------------------------

    def _eps_per_order(self, delta: float, conversion: str) -> np.ndarray:
        lam, r = self.orders, self.eps
        log_delta = math.log(delta)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if conversion == "standard":
                return r - log_delta / (lam - 1.0)
            # Canonne-Kamath-Steinke 2020, Prop. 12, with the two guards of dp-accounting:
            # the KL route (delta(0) <= TV <= sqrt(1 - exp(-KL)), KL <= eps(lambda)) and no use of
            # orders <= 1.01, where the formula is numerically unstable.
            out = r + np.log1p(-1.0 / lam) - (log_delta + np.log(lam)) / (lam - 1.0)
            out = np.where(lam > 1.01, out, np.inf)
            out = np.where(delta * delta + np.expm1(-r) > 0, 0.0, out)
        return np.where(np.isinf(r), np.inf, out)

    def epsilon(self, delta: float, conversion: str = "improved") -> float:
        """Smallest ``eps`` such that the curve implies ``(eps, delta)``-DP, minimised over orders.

        ``conversion="improved"``: ``eps(lambda) + log((lambda-1)/lambda) - (log delta +
        log lambda)/(lambda-1)`` (Canonne, Kamath & Steinke 2020, Proposition 12; the same bound
        as Balle et al. 2020, arXiv:2001.05990, Eq. 20), with dp-accounting's two guards:
        ``eps = 0`` when ``delta^2 >= 1 - exp(-eps(lambda))`` (total variation bounded through
        the KL divergence), and orders ``<= 1.01`` unused. ``conversion="standard"``:
        ``eps(lambda) + log(1/delta)/(lambda-1)`` (Mironov 2017, Proposition 3). ``delta = 0``
        gives ``inf`` unless the curve is identically 0.
        """
        delta = check_probability("delta", delta)
        conversion = check_choice("conversion", conversion, RDP_CONVERSIONS)
        if delta == 0.0:
            return 0.0 if not self.eps.any() else math.inf
        return max(0.0, float(np.min(self._eps_per_order(delta, conversion))))

    def optimal_order(self, delta: float, conversion: str = "improved") -> float:
        """The order at which :meth:`epsilon` attains its minimum (the first one on ties)."""
        delta = check_probability("delta", delta, low_open=True)
        conversion = check_choice("conversion", conversion, RDP_CONVERSIONS)
        return float(self.orders[int(np.argmin(self._eps_per_order(delta, conversion)))])

    def delta(self, eps: float | np.ndarray, conversion: str = "improved") -> float | np.ndarray:
        """Smallest ``delta`` such that the curve implies ``(eps, delta)``-DP, minimised over
        orders.

        ``"improved"``: ``exp((lambda-1)(eps(lambda) - eps)) (1 - 1/lambda)^(lambda-1) / lambda``
        (Canonne, Kamath & Steinke 2020, Proposition 12), together with the order-free
        ``sqrt(1 - exp(-eps(lambda)))`` (Bretagnolle-Huber through the KL divergence, which
        dp-accounting also uses); orders ``<= 1.01`` only enter through the latter.
        ``"standard"``: ``exp((lambda-1)(eps(lambda) - eps))`` (Mironov 2017, Proposition 3).
        Vectorised over ``eps``; capped at 1.
        """
        conversion = check_choice("conversion", conversion, RDP_CONVERSIONS)
        e = check_eps_array(eps)
        lam, r = self.orders, self.eps
        flat = e.reshape(-1, 1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if conversion == "standard":
                log_delta = (lam - 1.0) * (r - flat)
            else:
                kl = np.where(r > 0, 0.5 * np.log(-np.expm1(-r)), -np.inf)
                ckss = (lam - 1.0) * (r - flat + np.log1p(-1.0 / lam)) - np.log(lam)
                log_delta = np.where(lam > 1.01, np.minimum(kl, ckss), kl)
            log_delta = np.where(np.isinf(r), 0.0, log_delta)
        out = np.minimum(np.exp(log_delta.min(axis=1)), 1.0)
        return scalar_like(out.reshape(e.shape), eps)

    # ---- trade-off curve ---------------------------------------------------------------------

    def tradeoff(self) -> TradeoffCurve:
        """The trade-off curve implied by the RDP guarantee: the hypothesis-testing region of
        Balle, Barthe, Gaboardi, Hsu & Sato 2020 ("Hypothesis testing interpretations and Rényi
        differential privacy", arXiv:2001.05990).

        A test with errors ``(alpha, beta)`` post-processes ``P`` and ``Q`` into ``Bern(alpha)``
        and ``Bern(1 - beta)``, so by the data-processing inequality (van Erven & Harremoës 2014,
        Theorem 9), at every order,
        ``(1-beta)^lambda alpha^(1-lambda) + beta^lambda (1-alpha)^(1-lambda) <= exp((lambda-1)
        eps(lambda))``, and the same with ``alpha`` and ``beta`` exchanged (the other order of
        the pair). The KL divergence is below every ``eps(lambda)`` (Rényi divergences increase
        with the order, ibid. Theorem 3), which adds the same constraint at order 1 with
        ``min eps``. The curve is the lower boundary of the region these constraints cut out: a
        valid lower bound on the true trade-off function (kind ``"bound"``), symmetric and
        convex, and at least as strong as the duality curve of :meth:`delta`. The curve's
        ``delta(eps)`` and ``epsilon(delta)`` are this object's :meth:`delta` and its inverse (the
        conversion an RDP accountant reports), not the numerical dual of the region. Each evaluation
        bisects on all orders at once (about 0.5 s for 800 values of ``alpha`` and the 156
        default orders); for ``(eps, delta)`` statements use :meth:`epsilon` and :meth:`delta`.
        """
        return _region_curve(self.orders, self.eps, self.name, self.delta)


def _region_curve(
    orders: np.ndarray,
    eps: np.ndarray,
    name: str,
    delta_fn: Callable[[np.ndarray], np.ndarray],
) -> TradeoffCurve:
    """The curve of :meth:`RDPCurve.tradeoff` for the constraints ``eps`` at ``orders``, whose
    privacy profile is ``delta_fn`` (the conversion the guarantee's own :meth:`delta` states).

    Both the region and the profile are valid guarantees, so the curve is the larger of the
    region's boundary and the profile's envelope ``sup_x max(0, 1 - delta(x) - e^x alpha,
    e^-x (1 - delta(x) - alpha))`` (Dong, Roth & Su 2022, Proposition 3, at every ``x`` of
    :data:`_ENVELOPE_EPS`): the curve is never weaker than the ``(eps, delta)`` statements it
    reports, even where finitely many orders leave the region a little short of them.
    """
    finite = np.isfinite(eps)
    lam = orders[finite]
    bound = (lam - 1.0) * eps[finite]
    kl = float(eps.min())
    grid: list[np.ndarray] = []

    def fn(alpha: np.ndarray) -> np.ndarray:
        flat = alpha.ravel()
        if not grid:
            grid.append(np.asarray(delta_fn(_ENVELOPE_EPS), dtype=float))
        envelope = np.zeros_like(flat)
        keep = 1.0 - grid[0]
        for start in range(0, flat.size, 1024):
            a = flat[start : start + 1024, None]
            steep = keep - np.exp(_ENVELOPE_EPS) * a
            flat_part = np.exp(-_ENVELOPE_EPS) * (keep - a)
            envelope[start : start + 1024] = np.maximum(steep, flat_part).max(axis=1)
        region = _region_boundary(flat, lam, bound, kl)
        return np.maximum(region, envelope).reshape(alpha.shape)

    return TradeoffCurve(fn, name=name, kind="bound", symmetric=True, delta_fn=delta_fn)


def _moment_violation(
    alpha: np.ndarray, beta: np.ndarray, lam: np.ndarray, bound: np.ndarray
) -> np.ndarray:
    """``log`` Rényi moment minus ``(lambda - 1) eps(lambda)`` for the Bernoulli pair a test with
    errors ``(alpha, beta)`` induces, the larger of its two orders; broadcast elementwise, for
    ``0 < alpha``, ``0 < beta`` and ``alpha + beta <= 1``."""
    la, l1a = np.log(alpha), np.log1p(-alpha)
    lb, l1b = np.log(beta), np.log1p(-beta)
    q_side = np.logaddexp(lam * l1b + (1.0 - lam) * la, lam * lb + (1.0 - lam) * l1a)
    p_side = np.logaddexp(lam * la + (1.0 - lam) * l1b, lam * l1a + (1.0 - lam) * lb)
    return np.maximum(q_side, p_side) - bound


def _kl_violation(alpha: np.ndarray, beta: np.ndarray, kl: float) -> np.ndarray:
    """The same at order 1: the larger KL divergence of the induced pair minus ``kl``."""
    kl_q = special.rel_entr(1.0 - beta, alpha) + special.rel_entr(beta, 1.0 - alpha)
    kl_p = special.rel_entr(alpha, 1.0 - beta) + special.rel_entr(1.0 - alpha, beta)
    return np.maximum(kl_q, kl_p) - kl


def _region_boundary(
    alpha: np.ndarray, lam: np.ndarray, bound: np.ndarray, kl: float
) -> np.ndarray:
    """Smallest ``beta in (0, 1-alpha]`` inside the RDP region of :meth:`RDPCurve.tradeoff`, for
    ``alpha`` of shape ``(n,)`` and constraints ``lam``, ``bound`` of shape ``(m,)``.

    Each constraint function is convex in ``beta`` with its minimum 0 at ``beta = 1 - alpha``,
    hence decreasing on ``(0, 1-alpha]``, and infinite at ``beta = 0`` when ``alpha < 1``: a
    vectorised bisection on ``log beta`` applies (relative precision ``~1e-16`` however small the
    boundary). It returns the infeasible end of the final bracket, never above the boundary.
    """
    a = alpha.reshape(-1, 1)
    interior = (a > 0.0) & (a < 1.0)
    a = np.where(interior, a, 0.5)
    floor = math.log(_TINY)
    lo = np.full(a.shape, floor)
    hi = np.log1p(-a)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        beta = np.exp(mid)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            ok = (_moment_violation(a, beta, lam, bound) <= 0.0).all(axis=1, keepdims=True)
            ok &= _kl_violation(a, beta, kl) <= 0.0
        lo = np.where(ok, lo, mid)
        hi = np.where(ok, mid, hi)
    # lo never moved: even the smallest positive beta is feasible, so the boundary is below it
    beta = np.where(lo > floor, np.exp(lo), 0.0)
    out = np.where(interior, beta, np.where(alpha.reshape(-1, 1) <= 0.0, 1.0, 0.0))
    return out[:, 0]


# --------------------------------------------------------------------------------------------
# RDP of basic mechanisms
# --------------------------------------------------------------------------------------------


def rdp_gaussian(sigma: float, sensitivity: float = 1.0, orders: object = None) -> RDPCurve:
    """RDP of the Gaussian mechanism ``N(f(D), sigma^2)`` with l2-sensitivity ``sensitivity``:
    ``eps(lambda) = lambda sensitivity^2 / (2 sigma^2)`` (Mironov 2017, Proposition 7), exact in
    both orders of the pair ``N(0, sigma^2)``, ``N(sensitivity, sigma^2)``.
    """
    sigma = check_positive("sigma", sigma)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    lam = _check_orders(orders)
    rho = 0.5 * (sensitivity / sigma) ** 2
    return RDPCurve(
        lam, rho * lam, name=f"RDP Gaussian(sigma={sigma:g}, sensitivity={sensitivity:g})"
    )


def rdp_laplace(scale: float, sensitivity: float = 1.0, orders: object = None) -> RDPCurve:
    """RDP of the Laplace mechanism with scale ``b`` and l1-sensitivity ``Delta`` (Mironov 2017,
    Proposition 6), ``eps0 = Delta / b``:
    ``eps(lambda) = log( lambda/(2lambda-1) e^((lambda-1) eps0) + (lambda-1)/(2lambda-1)
    e^(-lambda eps0) ) / (lambda-1)``, exact and the same in both orders. Evaluated as
    ``eps0 + log1p((lambda-1) expm1(-(2lambda-1) eps0) / (2lambda-1)) / (lambda-1)``, which neither
    overflows for large ``eps0`` nor loses precision for orders near 1.
    """
    scale = check_positive("scale", scale)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    lam = _check_orders(orders)
    eps0 = sensitivity / scale
    if not math.isfinite(eps0):
        raise ValueError(f"sensitivity / scale must be finite, got {sensitivity!r} / {scale!r}")
    eps = eps0 + np.log1p((lam - 1.0) * np.expm1(-(2.0 * lam - 1.0) * eps0) / (2.0 * lam - 1.0)) / (
        lam - 1.0
    )
    eps = np.clip(eps, 0.0, eps0)
    return RDPCurve(lam, eps, name=f"RDP Laplace(scale={scale:g}, sensitivity={sensitivity:g})")


def rdp_randomized_response(eps: float, k: int = 2, orders: object = None) -> RDPCurve:
    """RDP of ``k``-ary randomized response with parameter ``eps``: the true value is reported
    with probability ``e^eps / (e^eps + k - 1)``, each other value with ``1 / (e^eps + k - 1)``;
    neighbours differ in the input value (``replace_one``). For binary ``k = 2`` this keeps the
    bit with ``p = e^eps / (1 + e^eps)`` and gives docs/theory.md#rdp:
    ``log(p^lambda (1-p)^(1-lambda) + (1-p)^lambda p^(1-lambda)) / (lambda-1)``.

    In general ``D_lambda = log(1 + (e^{x} - 1)(1 - e^{-x-eps}) e^{eps} / (e^eps + k - 1))
    / (lambda-1)`` with ``x = (lambda-1) eps``: the sum over outputs of ``P^lambda Q^(1-lambda)``,
    written around its value 1 so that small ``eps`` keeps full relative precision. Both orders of
    the pair give the same value.
    """
    eps = check_nonnegative("eps", eps)
    k = check_integer("k", k, minimum=2)
    lam = _check_orders(orders)
    x = (lam - 1.0) * eps
    # log of (expm1(x) * exp(-x) * expm1(eps + x)) = log of the excess of the Rényi moment over 1
    # times (e^eps + k - 1); then divide by (e^eps + k - 1) in log space.
    log_num = _log_expm1(x) - x + _log_expm1(eps + x)
    log_den = np.logaddexp(eps, math.log(k - 1))
    rdp = np.logaddexp(0.0, log_num - log_den) / (lam - 1.0)
    return RDPCurve(
        lam, np.clip(rdp, 0.0, eps), name=f"RDP randomized response(eps={eps:g}, k={k})"
    )


# --------------------------------------------------------------------------------------------
# Poisson subsampling
# --------------------------------------------------------------------------------------------


def _log_binomial_excess(q: float, lam: np.ndarray, log_expm1_c: np.ndarray) -> np.ndarray:
    """``log(A(lambda) - 1)`` for integer orders, where
    ``A(lambda) = sum_{k=0}^{lambda} C(lambda,k) (1-q)^(lambda-k) q^k exp(c_k)`` with ``c_0 =
    c_1 = 0``; ``log_expm1_c[k - 2] = log(exp(c_k) - 1)`` for ``k = 2 ... max(lam)``.

    Because the binomial weights sum to 1, ``A - 1 = sum_{k>=2} C(lambda,k) (1-q)^(lambda-k) q^k
    (exp(c_k) - 1)``: a sum of non-negative terms, so the excess keeps full relative precision
    even when it is far below machine epsilon (tiny ``q``, huge ``sigma``). Rows are processed in
    chunks so memory stays bounded for large orders.
    """
    lam = np.asarray(lam, dtype=float)
    out = np.empty_like(lam)
    kmax = int(lam.max())
    ks = np.arange(2, kmax + 1, dtype=float)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    rows = max(1, 4_000_000 // ks.size)
    for start in range(0, lam.size, rows):
        lam_c = lam[start : start + rows, None]
        valid = ks[None, :] <= lam_c
        safe_k = np.where(valid, ks[None, :], 0.0)
        terms = (
            _log_binom(lam_c, safe_k)
            + (lam_c - safe_k) * log_1mq
            + safe_k * log_q
            + log_expm1_c[None, :]
        )
        terms = np.where(valid, terms, -np.inf)
        with np.errstate(divide="ignore"):
            out[start : start + rows] = special.logsumexp(terms, axis=1)
    return out


def _gaussian_integer_excess(q: float, sigma: float, lam: np.ndarray) -> np.ndarray:
    """``log(A - 1)`` of the Poisson-subsampled Gaussian at integer orders (MTZ19, Section 3.2)."""
    ks = np.arange(2, int(lam.max()) + 1, dtype=float)
    return _log_binomial_excess(q, lam, _log_expm1(ks * (ks - 1.0) / (2.0 * sigma**2)))


def _fractional_log_excess(q: float, sigma: float, alpha: np.ndarray, series: str) -> np.ndarray:
    """``log(A - 1)`` at fractional orders ``alpha`` (MTZ19 Section 3.3); ``nan`` where the series
    has not converged within ``_SERIES_BLOCK * _SERIES_MAX_BLOCKS`` terms.

    ``series="signed"`` sums the series with the signs of the generalised binomial coefficients,
    which gives the exact Rényi moment. For ``q <= 1/4`` the sum is arranged around the value 1 of
    the moment: with ``w = 1 - q + q mu1/mu0``, ``E_{mu0}[w] = 1`` gives ``A - 1 = E_{mu0}[g(w)]``,
    ``g(w) = w^alpha - 1 - alpha (w - 1) >= 0``. Below ``z0`` this is
    ``sum_{i>=2} C(alpha,i) (1-q)^(alpha-i) q^i (M_i - Phi0) + alpha q ((1-q)^(alpha-1) - 1)
    (M_1 - Phi0)`` with ``Phi0 = Phi(z0/sigma)`` (because ``sum_i C(alpha,i) (1-q)^(alpha-i) q^i
    = 1`` for ``q < 1/2``); above ``z0`` it is the upper series minus ``Phi(-z0/sigma) + alpha q
    (N_1 - Phi(-z0/sigma))``. No term is then of order 1, so ``A - 1`` keeps its relative precision
    when it is tiny. For ``q > 1/4``, where ``A - 1`` is not tiny, the plain sum is used.

    ``series="absolute"`` adds the absolute values of the terms, as dp-accounting's
    ``RdpAccountant`` does: a valid but looser bound.

    Terms are produced in blocks for all unfinished orders at once; an order is finished when the
    largest term of a block is below ``exp(-_SERIES_TOL)`` times the current ``A - 1`` and the
    terms decrease across the block.
    """
    n = alpha.size
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    c = z0 / sigma
    two_s2 = 2.0 * sigma**2
    excess_form = series == "signed" and q <= 0.25
    log_phi0 = float(special.log_ndtr(c))
    if excess_form:
        # the i = 1 correction of the lower part (>= 0) and the subtrahend of the upper part
        log_aq = np.log(alpha * q)
        low_fixed = (
            log_aq
            + _log_abs_expm1((alpha - 1.0) * math.log1p(-q))
            + _log_ndtr_diff(np.array(c), np.array((z0 - 1.0) / sigma))
        )
        up_fixed = np.logaddexp(
            special.log_ndtr(-c),
            log_aq + _log_ndtr_diff(np.array((1.0 - z0) / sigma), np.array(-c)),
        )
    low_log, low_sign = np.full(n, -np.inf), np.zeros(n)
    up_log, up_sign = np.full(n, -np.inf), np.zeros(n)
    result = np.full(n, np.nan)
    todo = np.arange(n)
    for block in range(_SERIES_MAX_BLOCKS):
        if todo.size == 0:
            break
        a = alpha[todo, None]
        i = np.arange(block * _SERIES_BLOCK, (block + 1) * _SERIES_BLOCK, dtype=float)[None, :]
        j = a - i
        log_c = _log_binom(a, i)
        sign_c = special.gammasgn(j + 1.0) if series == "signed" else np.ones_like(log_c)
        # lower part: C(a,i) (1-q)^(a-i) q^i e^((i^2-i)/(2 s^2)) Phi((z0-i)/s)
        log_lower = log_c + j * math.log1p(-q) + i * math.log(q)
        log_phi_i = special.log_ndtr((z0 - i) / sigma)
        if excess_form:  # ... with Phi((z0-i)/s) e^(..) replaced by M_i - Phi0, for i >= 2
            d = (i * i - i) / two_s2 + log_phi_i - log_phi0
            low_terms = np.where(i >= 2, log_lower + log_phi0 + _log_abs_expm1(d), -np.inf)
            low_signs = sign_c * np.sign(d)
        else:
            low_terms = log_lower + (i * i - i) / two_s2 + log_phi_i
            low_signs = sign_c
        # upper part: C(a,i) (1-q)^i q^(a-i) e^((j^2-j)/(2 s^2)) Phi((j-z0)/s), j = a - i
        up_terms = (
            log_c
            + i * math.log1p(-q)
            + j * math.log(q)
            + (j * j - j) / two_s2
            + special.log_ndtr((j - z0) / sigma)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            bl, bs = special.logsumexp(low_terms, axis=1, b=low_signs, return_sign=True)
            ul, us = special.logsumexp(up_terms, axis=1, b=sign_c, return_sign=True)
        bl, ul = np.nan_to_num(bl, nan=-np.inf), np.nan_to_num(ul, nan=-np.inf)
        low_log[todo], low_sign[todo] = _signed_log_add(low_log[todo], low_sign[todo], bl, bs)
        up_log[todo], up_sign[todo] = _signed_log_add(up_log[todo], up_sign[todo], ul, us)
        # current estimate of A - 1 as (log|.|, sign)
        if excess_form:
            lo_l, lo_s = _signed_log_add(
                low_log[todo], low_sign[todo], low_fixed[todo], np.ones(todo.size)
            )
            up_l, up_s = _signed_log_add(
                up_log[todo], up_sign[todo], up_fixed[todo], -np.ones(todo.size)
            )
            est_log, est_sign = _signed_log_add(lo_l, lo_s, up_l, up_s)
        else:
            log_a, sign_a = _signed_log_add(
                low_log[todo], low_sign[todo], up_log[todo], up_sign[todo]
            )
            est_log = _log_abs_expm1(log_a)
            est_sign = np.where((log_a > 0.0) & (sign_a > 0), 1.0, -1.0)
        terms = np.maximum(low_terms, up_terms)
        decreasing = (terms[:, -1] < terms[:, 0]) | np.isneginf(terms[:, -1])
        finished = (terms.max(axis=1) < est_log - _SERIES_TOL) & decreasing & (est_sign > 0)
        result[todo[finished]] = est_log[finished]
        todo = todo[~finished]
    return result


def rdp_poisson_subsampled_gaussian(
    sigma: float,
    *,
    rate: float,
    orders: object = DEFAULT_ORDERS,
    series: str = "signed",
) -> RDPCurve:
    """RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019, "Rényi
    differential privacy of the sampled Gaussian mechanism"), ``add_remove`` neighbours.

    Each record is used with probability ``rate`` (``q``); noise ``N(0, sigma^2)`` in units of the
    l2-sensitivity. ``P = N(0, sigma^2)`` and ``Q = (1-q) N(0, sigma^2) + q N(1, sigma^2)``;
    the value is ``D_lambda(Q || P)``, the larger of the two orders (Steinke 2022, Theorem 35).

    Integer orders use the binomial sum of MTZ19 Section 3.2,
    ``eps(lambda) = log sum_{k=0}^{lambda} C(lambda,k) (1-q)^(lambda-k) q^k e^((k^2-k)/(2 sigma^2))
    / (lambda-1)``, fractional orders the two-sided series of MTZ19 Section 3.3; everything is
    summed in log space around the value 1 of the moment (see ``_fractional_log_excess``), so
    tiny rates and huge ``sigma`` keep full relative precision.

    ``series``: ``"signed"`` (default) sums the fractional-order series with the signs of the
    generalised binomial coefficients and gives the exact Rényi divergence (checked against
    quadrature to about 1e-11). ``"absolute"`` adds absolute values of the terms, as
    dp-accounting's ``RdpAccountant`` does; that is a looser but valid bound (13% larger at
    order 1.1 for ``q = 256/60000``, ``sigma = 0.7``) and reproduces the numbers published with
    that library. Integer orders are the same for both. A fractional order whose series has not
    converged after 65536 terms takes the value of the next integer order, a valid bound because
    ``D_lambda`` is non-decreasing in ``lambda``.
    """
    q = check_probability("rate", rate)
    sigma = check_positive("sigma", sigma)
    series = check_choice("series", series, ("signed", "absolute"))
    lam = _check_orders(orders, maximum=_MAX_SUBSAMPLED_ORDER)
    name = f"RDP Poisson-subsampled Gaussian(rate={q:g}, sigma={sigma:g})"
    if q == 0.0:
        return RDPCurve(lam, np.zeros_like(lam), name=name)
    if q == 1.0:
        return RDPCurve(lam, lam / (2.0 * sigma**2), name=name)
    # Orders at which the sum is evaluated: the fractional ones whose series does not converge
    # are replaced by the next integer (D_lambda is non-decreasing in lambda).
    at = lam.copy()
    integer = lam == np.round(lam)
    log_excess = np.empty_like(lam)
    if (~integer).any():
        log_excess[~integer] = _fractional_log_excess(q, sigma, lam[~integer], series)
        failed = np.isnan(log_excess) & ~integer
        at[failed] = np.ceil(lam[failed])
        integer |= failed
    if integer.any():
        log_excess[integer] = _gaussian_integer_excess(q, sigma, at[integer])
    eps = np.logaddexp(0.0, log_excess) / (at - 1.0)
    return RDPCurve(lam, eps, name=name)


def rdp_poisson_subsampled(
    base_rdp: Callable[[float], float],
    *,
    rate: float,
    orders: object = DEFAULT_INTEGER_ORDERS,
) -> RDPCurve:
    """RDP of a Poisson-subsampled mechanism from the RDP curve of the base mechanism, integer
    orders ``>= 2`` (Steinke 2022, Theorem 34, which bounds both orders of the pair; the order
    ``P || Q`` is never the larger one, his Theorem 35), ``add_remove`` neighbours:

    ``eps'(lambda) <= log( (1-q)^(lambda-1) (lambda q - q + 1) + sum_{k=2}^{lambda} C(lambda,k)
    (1-q)^(lambda-k) q^k e^((k-1) eps(k)) ) / (lambda-1)``.

    ``base_rdp`` maps an integer order ``k`` to the base mechanism's ``eps(k)``; it is called for
    every ``k = 2 ... max(orders)``. For the Gaussian base (``eps(k) = k / (2 sigma^2)``) the bound
    is the exact MTZ19 value. Summed in log space as ``1 + sum_k ... (e^((k-1) eps(k)) - 1)``.
    """
    q = check_probability("rate", rate)
    lam = _check_orders(orders, integer=True, maximum=_MAX_SUBSAMPLED_ORDER)
    if not callable(base_rdp):
        raise ValueError(f"base_rdp must be a callable order -> eps, got {base_rdp!r}")
    ks = np.arange(2, int(lam.max()) + 1, dtype=float)
    base = np.array([float(base_rdp(float(k))) for k in ks])
    bad = np.isnan(base) | (base < 0)
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(
            f"base_rdp must return values in [0, inf]; base_rdp({ks[first]:g}) = {base[first]!r}"
        )
    name = f"RDP Poisson-subsampled(rate={q:g})"
    if q == 0.0:
        return RDPCurve(lam, np.zeros_like(lam), name=name)
    if q == 1.0:
        return RDPCurve(lam, base[(lam - 2).astype(int)], name=name)
    log_excess = _log_binomial_excess(q, lam, _log_expm1((ks - 1.0) * base))
    with np.errstate(invalid="ignore"):
        eps = np.logaddexp(0.0, log_excess) / (lam - 1.0)
    return RDPCurve(lam, eps, name=name)


# --------------------------------------------------------------------------------------------
# Zero-concentrated differential privacy
# --------------------------------------------------------------------------------------------

#: Orders used to draw the trade-off curve of a zCDP guarantee (any finite set gives a valid
#: bound; this one is dense where the region's boundary is decided).
_ZCDP_TRADEOFF_ORDERS = 1.0 + np.geomspace(1e-3, 1e4, 71)


def _zcdp_log_delta(rho: float, shift: np.ndarray, kl: float) -> np.ndarray:
    """``log`` of ``inf_{lambda > 1} exp((lambda-1)(lambda rho - x)) (1 - 1/lambda)^(lambda-1)
    / lambda`` at each finite ``x`` of ``shift`` (any sign), for ``rho > 0``, capped by
    ``log sqrt(1 - exp(-kl))``.

    This is Canonne, Kamath & Steinke 2020, Proposition 12, applied at every order of the RDP
    curve ``eps(lambda) = xi + rho lambda`` with ``x = eps - xi``. The logarithm of the objective
    has derivative ``(2 lambda - 1) rho - x + log(1 - 1/lambda)``, increasing from ``-inf`` to
    ``+inf``. At ``lambda = 2 + (max(x, 0) + 1) / rho`` it equals ``3 rho + 2 + 2 max(x, 0) - x +
    log(1 - 1/lambda) >= 2 - log 2 > 0``, so bisection on ``(1, lambda]`` finds the minimiser.
    """
    lo = np.ones_like(shift)
    hi = 2.0 + (np.maximum(shift, 0.0) + 1.0) / rho
    with np.errstate(divide="ignore"):
        for _ in range(_BISECTION_STEPS + 40):
            mid = 0.5 * (lo + hi)
            grad = (2.0 * mid - 1.0) * rho - shift + np.log1p(-1.0 / mid)
            lo = np.where(grad < 0, mid, lo)
            hi = np.where(grad < 0, hi, mid)
    # hi > 1 always (the derivative is -inf at 1), so every term below is finite
    lam = hi
    log_delta = (lam - 1.0) * (lam * rho - shift + np.log1p(-1.0 / lam)) - np.log(lam)
    return np.minimum(log_delta, 0.5 * math.log(-math.expm1(-kl)))


@dataclass(frozen=True)
class ZCDP:
    """A ``rho``-zCDP guarantee: ``D_lambda <= rho lambda`` for every order ``lambda > 1``
    (Bun & Steinke 2016, Definition 1.1), both orders of every neighbouring pair.

    Composition adds ``rho`` (Steinke 2022, Theorem 13); ``a + b`` is :meth:`compose`.
    """

    rho: float
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_nonnegative("rho", self.rho))
        if not self.name:
            object.__setattr__(self, "name", f"zCDP(rho={self.rho:g})")

    def compose(self, other: ZCDP) -> ZCDP:
        """``(rho1 + rho2)``-zCDP for running both mechanisms."""
        if not isinstance(other, ZCDP):
            raise ValueError(f"other must be a ZCDP, got {type(other).__name__}")
        return ZCDP(self.rho + other.rho)

    def __add__(self, other: ZCDP) -> ZCDP:
        """``a + b`` is ``a.compose(b)``."""
        return self.compose(other)

    def self_compose(self, n: int) -> ZCDP:
        """``n rho``-zCDP for ``n`` runs."""
        return ZCDP(check_integer("n", n, minimum=0) * self.rho)

    def to_rdp(self, orders: object = DEFAULT_ORDERS) -> RDPCurve:
        """The RDP curve ``eps(lambda) = rho lambda`` at ``orders``."""
        lam = _check_orders(orders)
        return RDPCurve(lam, self.rho * lam, name=self.name)

    def delta(self, eps: float | np.ndarray) -> float | np.ndarray:
        """``delta(eps) = inf_{lambda > 1} exp((lambda-1)(lambda rho - eps))
        (1 - 1/lambda)^(lambda-1) / lambda`` (Steinke 2022, Proposition 14; Canonne, Kamath &
        Steinke 2020, Proposition 12), also capped by ``sqrt(1 - exp(-rho))`` (total variation
        through the KL divergence ``<= rho``), as in :meth:`RDPCurve.delta`. Vectorised over
        ``eps``.

        The logarithm of the objective, ``h(lambda)``, has derivative ``(2 lambda - 1) rho - eps
        + log(1 - 1/lambda)``, which increases from ``-inf`` to ``+inf``: the minimiser is its
        unique root, found by vectorised bisection.
        """
        e = check_eps_array(eps)
        flat = e.ravel()
        if self.rho == 0.0:
            out = np.zeros_like(flat)
        else:
            finite = np.isfinite(flat)
            log_delta = _zcdp_log_delta(self.rho, np.where(finite, flat, 0.0), self.rho)
            out = np.where(finite, np.minimum(np.exp(log_delta), 1.0), 0.0)
        return scalar_like(out.reshape(e.shape), eps)

    def epsilon(self, delta: float, conversion: str = "improved") -> float:
        """Smallest ``eps`` with ``(eps, delta)``-DP.

        ``"improved"``: ``inf_{lambda > 1} rho lambda + log(1 - 1/lambda) - (log delta +
        log lambda)/(lambda - 1)`` (Steinke 2022, Proposition 14, the inverse of :meth:`delta`);
        its derivative ``rho + log(delta lambda)/(lambda-1)^2`` has a single sign change, found by
        bisection. ``eps = 0`` when ``delta >= sqrt(1 - exp(-rho))``.
        ``"simple"``: ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Proposition 1.3).
        """
        delta = check_probability("delta", delta)
        conversion = check_choice("conversion", conversion, ZCDP_CONVERSIONS)
        rho = self.rho
        if rho == 0.0 or delta == 1.0:
            return 0.0
        if delta == 0.0:
            return math.inf
        log_delta = math.log(delta)
        if conversion == "simple":
            return rho + 2.0 * math.sqrt(-rho * log_delta)
        if delta * delta + math.expm1(-rho) > 0:
            return 0.0
        # k(lambda) = rho (lambda-1)^2 + log lambda + log delta is increasing with k(1) < 0.
        lo, hi = 1.0, 1.0 + math.sqrt(-log_delta / rho)
        for _ in range(_BISECTION_STEPS + 40):
            mid = 0.5 * (lo + hi)
            if rho * (mid - 1.0) ** 2 + math.log(mid) + log_delta < 0:
                lo = mid
            else:
                hi = mid
        lam = hi
        eps = rho * lam + math.log1p(-1.0 / lam) - (log_delta + math.log(lam)) / (lam - 1.0)
        return max(0.0, eps)

    def tradeoff(self) -> TradeoffCurve:
        """The trade-off curve implied by zCDP: the RDP hypothesis-testing region of
        :meth:`RDPCurve.tradeoff` (Balle et al. 2020) at 71 orders from ``1.001`` to ``10^4``.
        Using finitely many of the orders only weakens the constraint, so the curve is a valid
        lower bound on the true one; where the envelope of :meth:`delta` is higher, the curve is
        that envelope. Its ``delta(eps)`` and ``epsilon(delta)`` are :meth:`delta` and its inverse,
        the continuum-of-orders conversion."""
        orders = _ZCDP_TRADEOFF_ORDERS
        return _region_curve(orders, self.rho * orders, self.name, self.delta)


@dataclass(frozen=True)
class ApproxZCDP:
    """A ``delta``-approximate ``(xi, rho)``-zCDP guarantee (Bun & Steinke 2016, "Concentrated
    differential privacy: simplifications, extensions, and lower bounds", Definition 8.1): for
    every neighbouring pair there are events of probability at least ``1 - delta`` under each
    output distribution, conditioned on which ``D_lambda <= xi + rho lambda`` for every order
    ``lambda > 1``, both orders of the pair. ``ApproxZCDP(rho)`` is ``rho``-zCDP (:class:`ZCDP`).

    Parameters
    ----------
    rho:
        The slope ``rho >= 0``.
    xi:
        The offset ``xi >= 0`` (``0`` for the usual zCDP).
    approx_delta:
        The ``delta`` of the definition, in ``[0, 1)``.
    name:
        Label for tables and figures.

    Notes
    -----
    Writing ``P = (1-delta) P|E + (P(E) - 1 + delta) P|E + P(E^c) P|E^c``, the definition gives
    ``P = (1-delta) P' + delta P''`` and ``Q = (1-delta) Q' + delta Q''`` with ``(P', Q')``
    ``(xi, rho)``-zCDP. Every test's errors then satisfy ``alpha >= (1-delta) alpha'`` and
    ``beta >= (1-delta) beta' >= (1-delta) f'(alpha')``, where ``f'`` is the trade-off curve of
    ``(xi, rho)``-zCDP, so the guarantee is ``g(alpha) = (1-delta) f'(min(1, alpha/(1-delta)))``
    and its privacy profile ``delta + (1-delta) delta'(eps)`` (the dual of ``g``; ``delta'`` is
    that of ``f'``). With ``rho = 0`` the conditioned pair is ``xi``-DP, so the whole guarantee
    is exactly ``(xi, delta)``-DP (:func:`~dpaudit.bounds.tradeoff.approx_dp`).
    """

    rho: float
    xi: float = 0.0
    approx_delta: float = 0.0
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_nonnegative("rho", self.rho))
        object.__setattr__(self, "xi", check_nonnegative("xi", self.xi))
        approx = check_probability("approx_delta", self.approx_delta, high_open=True)
        object.__setattr__(self, "approx_delta", approx)
        if not math.isfinite(self.rho) or not math.isfinite(self.xi):
            raise ValueError(f"rho and xi must be finite, got {self.rho!r} and {self.xi!r}")
        if not self.name:
            label = f"zCDP(rho={self.rho:g}"
            if self.xi:
                label += f", xi={self.xi:g}"
            if approx:
                label += f", delta={approx:g}"
            object.__setattr__(self, "name", label + ")")

    def delta(self, eps: float | np.ndarray) -> float | np.ndarray:
        """``delta(eps) = approx_delta + (1 - approx_delta) delta'(eps)``, where ``delta'`` is the
        conversion of Canonne, Kamath & Steinke 2020, Proposition 12, at every order of the RDP
        curve ``xi + rho lambda``: ``delta'(eps) = inf_{lambda > 1} exp((lambda-1)(xi + lambda rho
        - eps)) (1 - 1/lambda)^(lambda-1) / lambda``, capped by ``sqrt(1 - exp(-(xi + rho)))``
        (total variation through the KL divergence, as :meth:`ZCDP.delta`). With ``rho = 0``,
        ``delta'`` is the profile of ``xi``-DP. Vectorised over ``eps``.
        """
        e = check_eps_array(eps)
        flat = e.ravel()
        finite = np.isfinite(flat)
        x = np.where(finite, flat, 0.0)
        if self.rho == 0.0:
            # xi-DP: delta'(eps) = (e^xi - e^eps)_+ / (1 + e^xi) (Dong, Roth & Su 2022, Prop. 6)
            inner = -np.expm1(np.minimum(x - self.xi, 0.0)) / (1.0 + math.exp(-self.xi))
        else:
            log_inner = _zcdp_log_delta(self.rho, x - self.xi, self.xi + self.rho)
            inner = np.minimum(np.exp(log_inner), 1.0)
        out = self.approx_delta + (1.0 - self.approx_delta) * np.where(finite, inner, 0.0)
        return scalar_like(np.minimum(out, 1.0).reshape(e.shape), eps)

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps`` with :meth:`delta` ``<= delta`` (``inf`` for ``delta <
        approx_delta``); :meth:`ZCDP.epsilon` when ``xi = approx_delta = 0``."""
        delta = check_probability("delta", delta)
        if self.xi == 0.0 and self.approx_delta == 0.0:
            return ZCDP(self.rho).epsilon(delta)
        return self.tradeoff().epsilon(delta)

    def tradeoff(self) -> TradeoffCurve:
        """The trade-off curve ``g`` of the class notes: ``f'`` is the RDP hypothesis-testing
        region of :meth:`RDPCurve.tradeoff` (Balle et al. 2020) for ``xi + rho lambda`` at the
        orders of :meth:`ZCDP.tradeoff`, a valid lower bound; ``delta(eps)`` is :meth:`delta`."""
        if self.rho == 0.0:
            curve = approx_dp(self.xi, self.approx_delta)
            return TradeoffCurve(
                curve, name=self.name, kind="bound", symmetric=True, delta_fn=self.delta
            )
        orders = _ZCDP_TRADEOFF_ORDERS
        conditioned = ApproxZCDP(self.rho, self.xi)
        inner = _region_curve(
            orders, self.xi + self.rho * orders, conditioned.name, conditioned.delta
        )
        keep = 1.0 - self.approx_delta

        def fn(alpha: np.ndarray) -> np.ndarray:
            return keep * inner(np.minimum(alpha / keep, 1.0))

        return TradeoffCurve(fn, name=self.name, kind="bound", symmetric=True, delta_fn=self.delta)


def zcdp_from_pure_dp(eps: float) -> ZCDP:
    """``eps``-DP implies ``(eps^2 / 2)``-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
    eps = check_nonnegative("eps", eps)
    return ZCDP(0.5 * eps * eps, name=f"zCDP from {eps:g}-DP")
