"""Tests of dpaudit.bounds.rdp: RDP curves of mechanisms, conversions, trade-off region, zCDP.

Every formula is checked against an independent value: the pinned reference values, numerical
quadrature of the Rényi divergence, direct sums over outcomes, closed forms, or dp-accounting
(a test-only oracle).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpaudit.bounds.rdp import (
    DEFAULT_ORDERS,
    ZCDP,
    ApproxZCDP,
    RDPCurve,
    rdp_gaussian,
    rdp_laplace,
    rdp_poisson_subsampled,
    rdp_poisson_subsampled_gaussian,
    rdp_randomized_response,
    zcdp_from_pure_dp,
)
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import PrivacyProfile
from tests.reference import rows

Q_DPSGD = 256 / 60000


def gdp_curve(mu: float, alpha: np.ndarray) -> np.ndarray:
    """Exact trade-off function of N(0,1) vs N(mu,1) (Dong, Roth & Su 2022, Definition 4)."""
    return stats.norm.cdf(stats.norm.ppf(1.0 - alpha) - mu)


def gaussian_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of mu-GDP (Dong, Roth & Su 2022, Corollary 1)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def renyi_quadrature(logp, logq, lam: float, lo: float, hi: float, points) -> float:
    """D_lam(P || Q) = log int p^lam q^(1-lam) / (lam - 1) by adaptive quadrature."""

    def integrand(y: float) -> float:
        return math.exp(lam * logp(y) + (1.0 - lam) * logq(y))

    value, _ = integrate.quad(integrand, lo, hi, points=points, limit=500, epsabs=0, epsrel=1e-12)
    return math.log(value) / (lam - 1.0)


def subsampled_gaussian_quadrature(q: float, sigma: float, lam: float, reverse: bool) -> float:
    """D_lam(Q || P) (or D_lam(P || Q) when ``reverse``) for P = N(0, s^2) and
    Q = (1-q) P + q N(1, s^2): log(1 + E_P[(q/p)^lam - 1]) / (lam - 1) (exponent 1 - lam when
    ``reverse``), by quadrature."""
    power = 1.0 - lam if reverse else lam

    def integrand(z: float) -> float:
        log_ratio = math.log1p(q * math.expm1((2.0 * z - 1.0) / (2.0 * sigma**2)))
        return stats.norm.pdf(z, scale=sigma) * math.expm1(power * log_ratio)

    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    lo, hi = -40.0 * sigma, 40.0 * sigma + lam + 1.0
    points = sorted({0.0, 0.5, 1.0, lam, z0} & set(np.clip([0.0, 0.5, 1.0, lam, z0], lo, hi)))
    value, _ = integrate.quad(integrand, lo, hi, points=points, limit=1000, epsabs=0, epsrel=1e-11)
    return math.log1p(value) / (lam - 1.0)


@pytest.fixture(scope="module")
def dp_accounting_rdp():
    rdp = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    return rdp


# --------------------------------------------------------------------------------------------
# Orders and the RDPCurve value object
# --------------------------------------------------------------------------------------------


def test_default_orders_match_dp_accounting(dp_accounting_rdp):
    assert np.array_equal(np.array(DEFAULT_ORDERS), np.array(dp_accounting_rdp.DEFAULT_RDP_ORDERS))


def test_default_orders_match_reference_method_text():
    # "RdpAccountant default orders (1.1..10.9,11..63,128..1024)"
    orders = np.array(DEFAULT_ORDERS)
    assert orders.size == 99 + 53 + 4
    assert orders[0] == 1.1 and orders[98] == pytest.approx(10.9) and orders[99] == 11.0
    assert orders[151] == 63.0 and list(orders[152:]) == [128.0, 256.0, 512.0, 1024.0]
    assert any("1.1..10.9,11..63,128..1024" in r["method"] for r in rows(item="5"))


def test_rdp_curve_is_immutable_and_sorted():
    curve = RDPCurve([3.0, 2.0], [0.3, 0.2], name="x")
    assert list(curve.orders) == [2.0, 3.0] and list(curve.eps) == [0.2, 0.3]
    with pytest.raises(ValueError):
        curve.eps[0] = 1.0
    with pytest.raises(AttributeError):
        curve.name = "y"  # type: ignore[misc]


def test_compose_adds_order_by_order():
    a = rdp_gaussian(2.0)
    b = rdp_laplace(1.0)
    c = a + b
    assert np.allclose(c.eps, a.eps + b.eps, rtol=0, atol=0)
    assert a.compose(b) == c
    assert np.array_equal(a.self_compose(7).eps, 7 * a.eps)
    assert not a.self_compose(0).eps.any()
    with pytest.raises(ValueError, match="orders"):
        a.compose(rdp_gaussian(2.0, orders=[2, 3]))


def test_profiles_satisfy_protocol():
    assert isinstance(rdp_gaussian(1.0), PrivacyProfile)
    assert isinstance(ZCDP(0.5), PrivacyProfile)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: RDPCurve([1.0, 2.0], [0.1, 0.2]), "orders"),
        (lambda: RDPCurve([2.0, 2.0], [0.1, 0.2]), "orders"),
        (lambda: RDPCurve([2.0, 3.0], [0.1]), "eps"),
        (lambda: RDPCurve([2.0, 3.0], [0.1, np.nan]), "eps"),
        (lambda: RDPCurve([2.0, 3.0], [0.1, -1.0]), "eps"),
        (lambda: rdp_gaussian(0.0), "sigma"),
        (lambda: rdp_gaussian(1.0, sensitivity=-1.0), "sensitivity"),
        (lambda: rdp_gaussian(1.0, orders=[0.5, 2.0]), "orders"),
        (lambda: rdp_gaussian(1.0, orders=[2.0, np.inf]), "orders"),
        (lambda: rdp_laplace(-1.0), "scale"),
        (lambda: rdp_randomized_response(-0.1), "eps"),
        (lambda: rdp_randomized_response(1.0, k=1), "k"),
        (lambda: rdp_poisson_subsampled_gaussian(1.0, rate=1.5), "rate"),
        (lambda: rdp_poisson_subsampled_gaussian(-1.0, rate=0.1), "sigma"),
        (lambda: rdp_poisson_subsampled_gaussian(1.0, rate=0.1, series="x"), "series"),
        (lambda: rdp_poisson_subsampled_gaussian(1.0, rate=0.1, orders=[1e6]), "orders"),
        (lambda: rdp_poisson_subsampled(lambda k: 0.1, rate=0.1, orders=[2.5]), "orders"),
        (lambda: rdp_poisson_subsampled("x", rate=0.1), "base_rdp"),
        (lambda: rdp_poisson_subsampled(lambda k: -1.0, rate=0.1, orders=[2, 3]), "base_rdp"),
        (lambda: rdp_gaussian(1.0).epsilon(1.5), "delta"),
        (lambda: rdp_gaussian(1.0).epsilon(1e-5, conversion="x"), "conversion"),
        (lambda: rdp_gaussian(1.0).delta(-1.0), "eps"),
        (lambda: rdp_gaussian(1.0).self_compose(-1), "n"),
        (lambda: ZCDP(-1.0), "rho"),
        (lambda: ZCDP(1.0).epsilon(1e-5, conversion="standard"), "conversion"),
        (lambda: zcdp_from_pure_dp(np.nan), "eps"),
    ],
)
def test_illegal_arguments_raise_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------------------------------------------------
# Reference values and independent checks of the mechanisms' RDP
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row", rows(quantity="rdp"), ids=lambda r: f"{r['mechanism']}-{r['setting']}-{r['query']}"
)
def test_reference_rdp_values(row):
    params = row["params"]
    order = row["query"]
    if row["mechanism"] == "gaussian":
        curve = rdp_gaussian(params["sigma"], params["sensitivity"], orders=[order])
    elif row["mechanism"] == "laplace":
        curve = rdp_laplace(params["b"], params["sensitivity"], orders=[order])
    else:
        pytest.fail(f"unexpected rdp row for {row['mechanism']}")
    assert curve.eps[0] == pytest.approx(row["value"], rel=1e-6)


def test_reference_has_rdp_rows_for_gaussian_and_laplace():
    mechanisms = {r["mechanism"] for r in rows(quantity="rdp")}
    assert {"gaussian", "laplace"} <= mechanisms


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0])
def test_laplace_matches_quadrature_in_both_orders(scale, sensitivity):
    orders = [1.05, 1.5, 2.0, 7.3, 30.0]
    curve = rdp_laplace(scale, sensitivity, orders=orders)

    def log_lap(mu):
        return lambda y: -abs(y - mu) / scale - math.log(2.0 * scale)

    for lam, eps in zip(curve.orders, curve.eps, strict=True):
        span = 60.0 * scale / min(lam, 2.0) + sensitivity
        for logp, logq in (
            (log_lap(0.0), log_lap(sensitivity)),
            (log_lap(sensitivity), log_lap(0.0)),
        ):
            ref = renyi_quadrature(logp, logq, lam, -span, sensitivity + span, [0.0, sensitivity])
            assert eps == pytest.approx(ref, rel=1e-8)


def test_laplace_extremes_finite_and_monotone():
    for scale in [1e-3, 1e3]:
        curve = rdp_laplace(scale)
        assert np.isfinite(curve.eps).all() and (np.diff(curve.eps) >= 0).all()
        assert (curve.eps <= 1.0 / scale * (1 + 1e-15)).all()
    # small eps0: eps(lambda) ~ lambda eps0^2 / 2 (Mironov 2017, Prop. 6 expanded)
    tiny = rdp_laplace(1e6, orders=[1.5, 2.0, 10.0])
    assert tiny.eps == pytest.approx(np.array([1.5, 2.0, 10.0]) * 1e-12 / 2, rel=1e-5)


@pytest.mark.parametrize("eps0", [0.05, 0.5, 2.0, 8.0])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_randomized_response_matches_direct_sum(eps0, k):
    orders = np.array([1.01, 1.5, 2.0, 3.7, 20.0, 512.0])
    curve = rdp_randomized_response(eps0, k, orders=orders)
    denom = math.exp(eps0) + k - 1
    p = np.full(k, 1.0 / denom)
    q = p.copy()
    p[0] = q[1] = math.exp(eps0) / denom
    for lam, eps in zip(orders, curve.eps, strict=True):
        for a, b in ((p, q), (q, p)):
            direct = np.logaddexp.reduce(lam * np.log(a) + (1.0 - lam) * np.log(b)) / (lam - 1)
            assert eps == pytest.approx(direct, rel=1e-9, abs=1e-15)


def test_randomized_response_matches_dp_accounting(dp_accounting_rdp):
    relation = dp_accounting_rdp.NeighborRel.REPLACE_ONE
    orders = np.array([1.5, 2.0, 4.5, 32.0])
    for eps0 in [0.5, 1.0, 2.0]:
        for k in [2, 5]:
            noise = k / (math.exp(eps0) + k - 1)  # dp-accounting's "report uniform" probability
            ref = dp_accounting_rdp._compute_randomized_response_rdp(noise, k, orders, relation)
            assert rdp_randomized_response(eps0, k, orders).eps == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_composed_randomized_response_equals_exact_divergence_of_the_product(eps0):
    # n-fold RR: outputs are counted by the number of flips, Binomial under both hypotheses.
    n = 12
    orders = np.array([1.5, 2.0, 6.0])
    p_keep = math.exp(eps0) / (1 + math.exp(eps0))
    flips = np.arange(n + 1)
    log_p = stats.binom.logpmf(flips, n, 1 - p_keep)
    log_q = stats.binom.logpmf(flips, n, p_keep)
    composed = rdp_randomized_response(eps0, orders=orders).self_compose(n)
    for lam, eps in zip(orders, composed.eps, strict=True):
        direct = np.logaddexp.reduce(lam * log_p + (1 - lam) * log_q) / (lam - 1)
        assert eps == pytest.approx(direct, rel=1e-10)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0])
def test_pure_dp_bounds_hold_for_randomized_response(eps0):
    # eps0-DP implies (eps0^2/2)-zCDP (Bun & Steinke 2016, Prop. 1.4) and D_lambda <= eps0.
    curve = rdp_randomized_response(eps0)
    rho = zcdp_from_pure_dp(eps0).rho
    assert rho == 0.5 * eps0**2
    assert (curve.eps <= rho * curve.orders * (1 + 1e-12)).all()
    assert (curve.eps <= eps0).all()


# --------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019) and the generic bound
# --------------------------------------------------------------------------------------------

ORACLE_SETTINGS = [(Q_DPSGD, 0.7), (Q_DPSGD, 1.1), (0.01, 2.0), (0.1, 1.0), (0.3, 5.0), (0.9, 3.0)]


@pytest.mark.parametrize(("q", "sigma"), ORACLE_SETTINGS)
def test_subsampled_gaussian_integer_orders_match_dp_accounting(dp_accounting_rdp, q, sigma):
    orders = np.array([2.0, 3.0, 7.0, 16.0, 63.0, 256.0])
    ref = dp_accounting_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    for series in ("signed", "absolute"):
        ours = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders, series=series).eps
        assert ours == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize(("q", "sigma"), ORACLE_SETTINGS)
def test_subsampled_gaussian_fractional_orders_against_dp_accounting(dp_accounting_rdp, q, sigma):
    """dp-accounting sums the MTZ19 fractional series in absolute value: series='absolute' must
    reproduce it; the exact (signed) value can only be smaller."""
    orders = np.array([1.5, 2.5, 3.7, 5.2, 10.6, 30.5])
    ref = dp_accounting_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    absolute = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders, series="absolute").eps
    signed = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders).eps
    assert np.isfinite(absolute).all() and np.isfinite(signed).all()
    # dp-accounting gives up (inf) after 1000 terms and stops its sum once a term is e^-30 of
    # the total; 1e-6 covers that truncation
    done = np.isfinite(ref)
    assert absolute[done] == pytest.approx(ref[done], rel=1e-6)
    assert (signed[done] <= ref[done] * (1 + 1e-8)).all()


@pytest.mark.parametrize(("q", "sigma"), [(Q_DPSGD, 0.7), (0.01, 1.0), (0.1, 2.0), (0.3, 5.0)])
def test_subsampled_gaussian_matches_quadrature_in_both_orders(q, sigma):
    orders = np.array([1.1, 1.5, 2.5, 3.7, 7.3, 7.0])
    curve = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders)
    for lam, eps in zip(curve.orders, curve.eps, strict=True):
        if lam > 4 and sigma < 1:
            continue  # the integrand's peak is far out; covered by the integer-order oracle
        assert eps == pytest.approx(subsampled_gaussian_quadrature(q, sigma, lam, False), rel=1e-8)
        # the other order of the pair is never larger (MTZ19, Theorem 5)
        assert subsampled_gaussian_quadrature(q, sigma, lam, True) <= eps * (1 + 1e-9)


def test_signed_series_is_tighter_than_absolute_at_low_orders():
    signed = rdp_poisson_subsampled_gaussian(0.7, rate=Q_DPSGD, orders=[1.1, 2.0])
    absolute = rdp_poisson_subsampled_gaussian(
        0.7, rate=Q_DPSGD, orders=[1.1, 2.0], series="absolute"
    )
    assert signed.eps[0] < absolute.eps[0] / 1.1  # 13% apart at order 1.1
    assert signed.eps[1] == absolute.eps[1]


@pytest.mark.parametrize("q", [1e-6, 1e-3, 0.2, 0.6, 1.0])
@pytest.mark.parametrize("sigma", [0.05, 0.7, 5.0, 200.0])
def test_subsampled_gaussian_order_two_closed_form(q, sigma):
    # at order 2 the moment is 1 + q^2 (e^(1/sigma^2) - 1) exactly
    eps = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=[2.0]).eps[0]
    log_excess = 2 * math.log(q) + 1 / sigma**2 + math.log(-math.expm1(-1 / sigma**2))
    assert eps == pytest.approx(np.logaddexp(0.0, log_excess), rel=1e-12)


@pytest.mark.parametrize(("q", "sigma"), [(1e-6, 1.0), (1e-6, 200.0), (1e-3, 200.0), (0.004, 0.05)])
def test_subsampled_gaussian_extremes_finite_monotone(q, sigma):
    curve = rdp_poisson_subsampled_gaussian(sigma, rate=q)
    assert np.isfinite(curve.eps).all() and (curve.eps > 0).all()
    assert (np.diff(curve.eps) >= 0).all()
    assert (curve.eps <= curve.orders / (2 * sigma**2) * (1 + 1e-12)).all()  # never above q = 1


@pytest.mark.parametrize(("q", "sigma"), [(1e-6, 1.0), (1e-6, 200.0), (1e-4, 50.0)])
def test_subsampled_gaussian_small_rate_asymptotics(q, sigma):
    """For q -> 0 the moment is 1 + C(lambda, 2) q^2 (e^(1/sigma^2) - 1) + O(q^3), so
    eps(lambda) = lambda q^2 (e^(1/sigma^2) - 1) / 2 up to a relative O(q e^(2/sigma^2) lambda)."""
    orders = np.array([1.1, 1.5, 2.5, 5.5, 10.5])
    eps = rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders).eps
    approx = orders * q**2 * math.expm1(1 / sigma**2) / 2
    assert eps == pytest.approx(approx, rel=20 * q * math.exp(2 / sigma**2) * orders.max())


def test_subsampled_gaussian_rate_edges():
    orders = [1.5, 2.0, 3.0]
    assert not rdp_poisson_subsampled_gaussian(1.0, rate=0.0, orders=orders).eps.any()
    assert rdp_poisson_subsampled_gaussian(2.0, rate=1.0, orders=orders) == rdp_gaussian(
        2.0, orders=orders
    )


@pytest.mark.parametrize(("q", "sigma"), [(Q_DPSGD, 0.7), (0.05, 1.3), (0.5, 4.0), (1e-6, 100.0)])
def test_generic_subsampling_bound_coincides_with_mtz19_for_gaussian(q, sigma):
    orders = [2.0, 3.0, 10.0, 64.0, 512.0]
    generic = rdp_poisson_subsampled(lambda k: k / (2 * sigma**2), rate=q, orders=orders)
    assert generic.eps == pytest.approx(
        rdp_poisson_subsampled_gaussian(sigma, rate=q, orders=orders).eps, rel=1e-12
    )


def test_generic_subsampling_bound_is_valid_for_laplace():
    """Zhu-Wang's bound with a Laplace base must be above the exact RDP of the subsampled
    Laplace mechanism, D_lam(Q || P) with Q = (1-q) Lap(0,1) + q Lap(1,1), P = Lap(0,1)."""
    q, scale = 0.05, 1.0
    base = rdp_laplace(scale, orders=np.arange(2.0, 11.0))
    curve = rdp_poisson_subsampled(lambda k: base.eps[int(k) - 2], rate=q, orders=[2, 5, 10])

    def logp(y):
        return -abs(y) / scale - math.log(2 * scale)

    def logq(y):
        return math.log((1 - q) * math.exp(logp(y)) + q * math.exp(logp(y - 1.0)))

    for lam, eps in zip(curve.orders, curve.eps, strict=True):
        exact = max(
            renyi_quadrature(logq, logp, lam, -60.0, 61.0, [0.0, 1.0]),
            renyi_quadrature(logp, logq, lam, -60.0, 61.0, [0.0, 1.0]),
        )
        assert exact <= eps * (1 + 1e-9)
        assert eps <= base.eps[int(lam) - 2]  # subsampling never hurts


def test_generic_subsampling_bound_rate_edges():
    orders = [2, 3]
    assert not rdp_poisson_subsampled(lambda k: 1.0, rate=0.0, orders=orders).eps.any()
    assert list(rdp_poisson_subsampled(lambda k: 0.5 * k, rate=1.0, orders=orders).eps) == [
        1.0,
        1.5,
    ]


# --------------------------------------------------------------------------------------------
# Conversions to (eps, delta)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dpsgd_curves():
    """Per-step RDP of the item-5 DP-SGD settings, both series, keyed by sigma."""
    return {
        (sigma, series): rdp_poisson_subsampled_gaussian(sigma, rate=Q_DPSGD, series=series)
        for sigma in (0.7, 1.1)
        for series in ("signed", "absolute")
    }


ITEM5_RDP_ROWS = [
    r for r in rows(item="5", quantity="eps") if r["method"].startswith("RdpAccountant")
]


@pytest.mark.parametrize("row", ITEM5_RDP_ROWS, ids=lambda r: f"{r['setting']}-{r['method'][:28]}")
def test_dpsgd_reference_epsilons(row, dpsgd_curves):
    params = row["params"]
    conversion = "improved" if "improved conversion" in row["method"] else "standard"
    assert params["q"] == Q_DPSGD
    absolute = dpsgd_curves[(params["sigma"], "absolute")].self_compose(params["steps"])
    eps = absolute.epsilon(row["query"], conversion)
    assert eps == pytest.approx(row["value"], rel=1e-6)
    order = float(row["notes"].removeprefix("opt order "))
    assert absolute.optimal_order(row["query"], conversion) == pytest.approx(order)
    # the exact (signed) curve is never looser than the reference
    signed = dpsgd_curves[(params["sigma"], "signed")].self_compose(params["steps"])
    assert signed.epsilon(row["query"], conversion) <= row["value"] * (1 + 1e-12)


def test_item5_has_both_conversions():
    methods = {r["method"] for r in ITEM5_RDP_ROWS}
    assert any("improved" in m for m in methods) and any("standard" in m for m in methods)
    assert len(ITEM5_RDP_ROWS) == 16


def test_conversions_match_dp_accounting_on_random_curves(dp_accounting_rdp):
    rng = np.random.default_rng(20261121)
    orders = np.array(DEFAULT_ORDERS)
    for _ in range(60):
        scale = 10 ** rng.uniform(-5, 1.5)
        eps_curve = scale * orders ** rng.uniform(0.3, 1.5) * rng.uniform(0.5, 1.5, orders.size)
        eps_curve = np.maximum.accumulate(eps_curve)
        curve = RDPCurve(orders, eps_curve)
        for delta in [1e-300, 1e-12, 1e-5, 0.01, 0.3, 0.9]:
            ref, ref_order = dp_accounting_rdp.compute_epsilon(orders, eps_curve, delta)
            assert curve.epsilon(delta) == pytest.approx(ref, rel=1e-10, abs=1e-300)
            if ref > 0:
                assert curve.optimal_order(delta) == ref_order
        for eps in [0.0, 0.01, 0.5, 3.0, 30.0, 300.0]:
            ref, _ = dp_accounting_rdp.compute_delta(orders, eps_curve, eps)
            assert curve.delta(eps) == pytest.approx(ref, rel=1e-10, abs=1e-300)


def test_standard_conversion_closed_form():
    curve = RDPCurve([2.0, 5.0, 11.0], [0.1, 0.3, 0.9])
    delta = 1e-6
    expected = min(
        e + math.log(1 / delta) / (a - 1) for a, e in zip(curve.orders, curve.eps, strict=True)
    )
    assert curve.epsilon(delta, "standard") == pytest.approx(expected, rel=1e-15)
    eps = 2.0
    expected_delta = min(
        math.exp((a - 1) * (e - eps)) for a, e in zip(curve.orders, curve.eps, strict=True)
    )
    assert curve.delta(eps, "standard") == pytest.approx(expected_delta, rel=1e-14)


@pytest.mark.parametrize("conversion", ["improved", "standard"])
def test_epsilon_and_delta_are_inverse(conversion):
    curve = rdp_poisson_subsampled_gaussian(1.0, rate=0.01).self_compose(1000)
    for delta in [1e-12, 1e-6, 1e-3]:
        eps = curve.epsilon(delta, conversion)
        assert curve.delta(eps, conversion) == pytest.approx(delta, rel=1e-9)
    deltas = curve.delta(np.linspace(0, 10, 50), conversion)
    assert isinstance(deltas, np.ndarray) and (np.diff(deltas) <= 0).all()


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 3.7, 5.0])
def test_gaussian_rdp_conversion_is_a_valid_upper_bound(sigma):
    curve = rdp_gaussian(sigma)
    for row in rows(item="1", setting=f"sigma={sigma}", quantity="eps"):
        assert curve.epsilon(row["query"]) >= row["value"]
        assert curve.epsilon(row["query"], "standard") >= curve.epsilon(row["query"])
    for row in rows(item="1", setting=f"sigma={sigma}", quantity="delta"):
        assert curve.delta(row["query"]) >= row["value"] * (1 - 1e-12)


def test_conversion_edges():
    curve = rdp_gaussian(1.0)
    assert curve.epsilon(0.0) == math.inf
    assert curve.epsilon(1.0) == 0.0
    assert RDPCurve([2.0], [0.0]).epsilon(0.0) == 0.0
    assert curve.delta(np.inf) == 0.0
    assert RDPCurve([2.0, 3.0], [np.inf, np.inf]).delta(5.0) == 1.0
    # extreme delta and long compositions stay finite
    long_run = rdp_poisson_subsampled_gaussian(0.8, rate=0.01).self_compose(10**6)
    eps = long_run.epsilon(1e-300)
    assert np.isfinite(eps) and eps > long_run.epsilon(1e-5)
    assert isinstance(curve.delta(1.0), float)


# --------------------------------------------------------------------------------------------
# The trade-off curve of an RDP guarantee (Balle et al. 2020)
# --------------------------------------------------------------------------------------------

ALPHA = np.unique(np.concatenate([[0.0], np.geomspace(1e-10, 0.5, 120), np.linspace(0.5, 1, 121)]))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_rdp_tradeoff_is_valid_lower_bound(sigma):
    f = rdp_gaussian(sigma).tradeoff()
    assert f.kind == "bound"
    beta = f(ALPHA)
    exact = gdp_curve(1 / sigma, ALPHA)
    assert (beta <= exact + 1e-12).all()
    assert beta[0] == 1.0 and beta[-1] == 0.0
    # convex and non-increasing on the grid
    assert (np.diff(beta) <= 1e-15).all()
    slopes = np.diff(beta) / np.diff(ALPHA)
    assert (np.diff(slopes) >= -1e-6 * np.abs(slopes[1:])).all()


@pytest.mark.parametrize("eps0", [0.3, 1.0, 3.0])
def test_randomized_response_rdp_tradeoff_is_tight_at_the_vertex(eps0):
    """The test 'report the output' of binary RR has errors (1-p, 1-p) and its Rényi divergence
    equals the mechanism's: the region's boundary passes exactly through that point, and the
    curve stays below the exact f_{eps0, 0} elsewhere."""
    f = rdp_randomized_response(eps0).tradeoff()
    p = math.exp(eps0) / (1 + math.exp(eps0))
    assert f(np.array([1 - p]))[0] == pytest.approx(1 - p, rel=1e-12)
    exact = np.maximum.reduce(
        [np.zeros_like(ALPHA), 1 - math.exp(eps0) * ALPHA, math.exp(-eps0) * (1 - ALPHA)]
    )
    assert (f(ALPHA) <= exact + 1e-12).all()


@pytest.mark.parametrize(
    "curve",
    [rdp_laplace(1.0), rdp_poisson_subsampled_gaussian(1.1, rate=Q_DPSGD).self_compose(3516)],
    ids=["laplace", "dpsgd"],
)
def test_rdp_region_dominates_the_dual_of_the_conversion(curve):
    """Every (eps, delta(eps)) from the conversion is implied by the region, so the region's curve
    is at least sup_eps f_{eps, delta(eps)} (Dong, Roth & Su 2022, Proposition 5)."""
    f = curve.tradeoff()
    eps = np.linspace(0, 30, 601)
    delta = curve.delta(eps)
    dual = np.maximum.reduce(
        [
            np.zeros((eps.size, ALPHA.size)),
            1 - delta[:, None] - np.exp(eps)[:, None] * ALPHA,
            np.exp(-eps)[:, None] * (1 - delta[:, None] - ALPHA),
        ]
    ).max(axis=0)
    assert (f(ALPHA) >= dual - 1e-12).all()


def test_rdp_tradeoff_is_symmetric():
    f = rdp_laplace(0.7).tradeoff()
    inner = ALPHA[(ALPHA > 1e-6) & (ALPHA < 1 - 1e-6)]
    assert f(f(inner)) == pytest.approx(inner, abs=1e-12)


def test_rdp_tradeoff_item7_curve_is_below_pld_reference():
    from tests.reference import item7_curve

    ref = item7_curve()
    alpha = np.array(ref["alpha"])
    f = rdp_poisson_subsampled_gaussian(1.1, rate=Q_DPSGD).self_compose(3516).tradeoff()
    # the RDP bound is looser than the (numerically tight) PLD curve of both orders, but not far
    beta = f(alpha)
    pld = np.array(ref["beta_pld_np_min"])
    assert (beta <= pld + 1e-9).all()
    assert np.max(pld - beta) < 0.2


# --------------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [1e-8, 1e-3, 0.1, 1.0, 50.0])
def test_zcdp_delta_matches_brute_force_over_orders(rho):
    lam = 1 + np.geomspace(1e-7, 1e7, 200001)
    eps = np.array([0.0, 0.01, 0.1, 1.0, 5.0, 30.0, 300.0])
    log_obj = (lam - 1) * (lam * rho - eps[:, None] + np.log1p(-1 / lam)) - np.log(lam)
    brute = np.minimum(
        np.exp(np.minimum(log_obj.min(axis=1), 0.5 * math.log(-math.expm1(-rho)))), 1
    )
    ours = ZCDP(rho).delta(eps)
    assert (ours <= brute * (1 + 1e-12)).all()  # the exact infimum is below any grid minimum
    assert ours == pytest.approx(brute, rel=1e-6)


@pytest.mark.parametrize("rho", [1e-8, 1e-3, 0.1, 1.0, 50.0])
def test_zcdp_epsilon_is_inverse_of_delta_and_beats_simple(rho):
    z = ZCDP(rho)
    for delta in [1e-300, 1e-10, 1e-5, 0.05]:
        eps = z.epsilon(delta)
        simple = z.epsilon(delta, "simple")
        assert simple == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)
        assert 0 <= eps <= simple
        if eps > 0:
            assert z.delta(eps) == pytest.approx(delta, rel=1e-8)
        # the continuum of orders is at least as good as the default grid of orders
        assert eps <= z.to_rdp().epsilon(delta) * (1 + 1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7])
def test_zcdp_of_gaussian_is_a_valid_upper_bound(sigma):
    z = ZCDP(1 / (2 * sigma**2))
    eps = np.linspace(0, 8, 81)
    assert (z.delta(eps) >= gaussian_delta(1 / sigma, eps) * (1 - 1e-12)).all()
    beta = z.tradeoff()(ALPHA)
    assert (beta <= gdp_curve(1 / sigma, ALPHA) + 1e-12).all()


def test_zcdp_composition_and_rdp_view():
    a, b = ZCDP(0.1), ZCDP(0.25)
    assert (a + b).rho == pytest.approx(0.35)
    assert a.self_compose(10).rho == pytest.approx(1.0)
    curve = ZCDP(0.5).to_rdp([1.5, 2.0])
    assert list(curve.eps) == [0.75, 1.0]
    assert ZCDP(0.0).delta(0.0) == 0.0 and ZCDP(0.0).epsilon(1e-9) == 0.0
    assert ZCDP(1.0).epsilon(0.0) == math.inf


def test_zcdp_extremes_never_nan():
    for rho in [1e-30, 1e-12, 1e6]:
        z = ZCDP(rho)
        deltas = z.delta(np.array([0.0, 1e-20, 1.0, 1e3, np.inf]))
        assert np.isfinite(deltas).all() and (np.diff(deltas) <= 0).all()
        assert np.isfinite(z.epsilon(1e-300)) and np.isfinite(z.epsilon(0.5))


@pytest.mark.parametrize(
    "curve",
    [
        rdp_poisson_subsampled_gaussian(200.0, rate=1e-6),
        rdp_gaussian(0.01),
        rdp_randomized_response(50.0),
        RDPCurve([2.0, 3.0], [np.inf, np.inf]),
        ZCDP(1e-30).to_rdp(),
    ],
    ids=["tiny", "huge", "rr50", "no-guarantee", "zcdp-tiny"],
)
def test_rdp_tradeoff_extremes_finite_and_monotone(curve):
    alpha = np.unique(
        np.concatenate([ALPHA, np.geomspace(1e-300, 1e-10, 20), 1 - np.geomspace(1e-16, 1e-3, 10)])
    )
    beta = curve.tradeoff()(alpha)
    assert np.isfinite(beta).all() and (np.diff(beta) <= 1e-15).all()
    assert beta[0] == 1.0 and beta[-1] == 0.0
    assert (beta <= 1 - alpha + 1e-15).all()


# --------------------------------------------------------------------------------------------
# Approximate zCDP, and the (eps, delta) profile each curve carries
# --------------------------------------------------------------------------------------------


def brute_zcdp_delta(rho: float, xi: float, approx_delta: float, eps: np.ndarray) -> np.ndarray:
    """Canonne, Kamath & Steinke 2020, Prop. 12, at each order of ``xi + rho lambda`` on a fine
    grid of orders, capped by the KL route, mixed with the approximate part: computed directly."""
    lam = 1 + np.geomspace(1e-7, 1e6, 200001)
    log_obj = (lam - 1) * (xi + lam * rho - eps[:, None] + np.log1p(-1 / lam)) - np.log(lam)
    cap = 0.5 * math.log(-math.expm1(-(xi + rho)))
    inner = np.minimum(np.exp(np.minimum(log_obj.min(axis=1), cap)), 1.0)
    return approx_delta + (1 - approx_delta) * inner


def test_approx_zcdp_without_slack_is_zcdp():
    eps = np.array([0.0, 0.3, 1.0, 4.0, np.inf])
    for rho in [1e-6, 0.5, 20.0]:
        assert ApproxZCDP(rho).delta(eps) == pytest.approx(ZCDP(rho).delta(eps), rel=1e-14)
        assert ApproxZCDP(rho).epsilon(1e-5) == ZCDP(rho).epsilon(1e-5)
        assert ApproxZCDP(rho).name == ZCDP(rho).name


@pytest.mark.parametrize(
    ("rho", "xi", "approx_delta"),
    [(0.5, 0.0, 1e-6), (0.5, 0.3, 0.0), (0.05, 1.0, 1e-3), (3.0, 0.1, 0.2)],
)
def test_approx_zcdp_delta_matches_brute_force(rho, xi, approx_delta):
    eps = np.array([0.0, 0.05, 0.5, 1.0, 2.0, 5.0, 12.0])
    ours = ApproxZCDP(rho, xi, approx_delta).delta(eps)
    brute = brute_zcdp_delta(rho, xi, approx_delta, eps)
    assert (ours <= brute * (1 + 1e-12)).all()  # the infimum is below any grid minimum
    assert ours == pytest.approx(brute, rel=1e-6)


def test_approx_zcdp_with_rho_zero_is_approximate_dp():
    """(xi, 0)-zCDP conditioned pairs are xi-DP, so the claim is (xi, delta)-DP: delta(0) is
    ``delta + (1 - delta)(e^xi - 1)/(e^xi + 1)`` (Dong, Roth & Su 2022, Prop. 6)."""
    claim = ApproxZCDP(0.0, xi=1.0, approx_delta=0.01)
    assert claim.delta(0.0) == pytest.approx(0.01 + 0.99 * (math.e - 1) / (math.e + 1), rel=1e-14)
    assert claim.delta(1.0) == pytest.approx(0.01, rel=1e-14)
    assert claim.epsilon(0.01) == pytest.approx(1.0, rel=1e-9)
    assert claim.tradeoff()(ALPHA) == pytest.approx(approx_dp(1.0, 0.01)(ALPHA), abs=1e-15)


@pytest.mark.parametrize(("sigma", "approx_delta"), [(1.0, 1e-3), (0.7, 0.1)])
def test_approx_zcdp_holds_for_a_gaussian_mixed_with_disjoint_atoms(sigma, approx_delta):
    """``P = (1-d) N(0, s^2) + d [at +100]``, ``Q = (1-d) N(1, s^2) + d [at -100]`` is
    d-approximately (1/(2 s^2))-zCDP (condition on the Gaussian parts). Its exact profile is
    ``d + (1-d) delta_G(eps)`` and its exact trade-off curve ``(1-d) G(alpha / (1-d))`` (the
    atoms are decided for free): the claim must lie below both, and touch neither by much."""
    d, mu = approx_delta, 1 / sigma
    claim = ApproxZCDP(0.5 / sigma**2, approx_delta=d)
    eps = np.linspace(0, 6, 25)
    exact = d + (1 - d) * gaussian_delta(mu, eps)
    assert (claim.delta(eps) >= exact * (1 - 1e-12)).all()
    beta_exact = (1 - d) * gdp_curve(mu, np.minimum(ALPHA / (1 - d), 1.0))
    beta = claim.tradeoff()(ALPHA)
    assert (beta <= beta_exact + 1e-12).all()
    assert np.max(beta_exact - beta) < 0.15


@pytest.mark.parametrize(
    "guarantee",
    [ZCDP(0.5), ApproxZCDP(0.3, xi=0.2, approx_delta=1e-3), rdp_gaussian(1.3), ZCDP(30.0)],
    ids=["zcdp", "approx-zcdp", "rdp-gaussian", "zcdp-large"],
)
def test_curve_is_never_weaker_than_the_profile_it_reports(guarantee):
    """The curve's own ``delta(eps)`` is the guarantee's conversion, and the curve lies above
    the ``(eps, delta(eps))``-DP curve of every ``eps`` (DRS Prop. 3), so its numerical dual is
    never above that profile: the two forms of the claim never disagree in the claimant's
    favour."""
    curve = guarantee.tradeoff()
    eps = np.linspace(0, 8, 33)
    assert curve.delta(eps) == pytest.approx(np.asarray(guarantee.delta(eps)), rel=1e-14)
    beta = curve(ALPHA)
    for e in eps[::4]:
        assert (beta >= approx_dp(e, float(guarantee.delta(e)))(ALPHA) - 1e-9).all()
    dual = TradeoffCurve(lambda a: curve(a), name="dual", kind="bound").delta(eps[::4])
    assert (dual <= np.asarray(guarantee.delta(eps[::4])) + 1e-9).all()


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5])
def test_gaussian_claims_state_at_least_the_exact_epsilon(sigma):
    """A Gaussian with ``sigma`` is ``1/(2 sigma^2)``-zCDP and ``lambda/(2 sigma^2)``-RDP; the
    epsilon each claim's curve reports is at least the exact one of the Gaussian (bisection on
    its closed-form delta), and the continuum of zCDP orders beats the finite RDP grid."""
    for delta in [1e-6, 1e-3]:
        exact = optimize.brentq(lambda e, d=delta: gaussian_delta(1 / sigma, e) - d, 0, 100)
        zcdp = ZCDP(0.5 / sigma**2).tradeoff().epsilon(delta)
        rdp = rdp_gaussian(sigma).tradeoff().epsilon(delta)
        assert exact <= zcdp <= rdp * (1 + 1e-9)
        assert rdp == pytest.approx(rdp_gaussian(sigma).epsilon(delta), rel=1e-9)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ApproxZCDP(-1.0), "rho"),
        (lambda: ApproxZCDP(1.0, xi=-0.1), "xi"),
        (lambda: ApproxZCDP(1.0, approx_delta=1.0), "approx_delta"),
        (lambda: ApproxZCDP(math.inf), "rho"),
        (lambda: ApproxZCDP(1.0).delta(-1.0), "eps"),
    ],
)
def test_approx_zcdp_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
