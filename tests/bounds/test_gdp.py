"""Gaussian DP: G_mu, its exact (eps, delta) profile, the central limits and Berry-Esseen.

Pinned to tests/reference (items 1, 4, 5, 7), to 60-digit mpmath where available, and to
quadratures of the defining integrals (hockey-stick divergence, chi^2_+, the moment functionals
written in the alpha domain rather than in the x domain of DRS Lemma 4).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from dpaudit.bounds.gaussian_dp import (
    BerryEsseenTradeoff,
    GDPTradeoff,
    berry_esseen,
    berry_esseen_functionals,
    clt_mu_fixed,
    clt_mu_poisson,
    gdp,
    gdp_clt,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
)
from dpaudit.bounds.tradeoff import TradeoffCurve
from tests.reference import item7_curve, rows

ALPHA = np.linspace(0.0, 1.0, 2001)


# --- reference values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row", rows(item="1", quantity="delta"), ids=lambda r: f"{r['setting']}-eps{r['query']}"
)
def test_gaussian_delta_matches_reference(row):
    mu = 1.0 / row["params"]["sigma"]
    assert float(gdp(mu).delta(row["query"])) == pytest.approx(row["value"], rel=1e-9)
    assert gdp_delta(row["query"], mu) == pytest.approx(row["value"], rel=1e-9)


@pytest.mark.parametrize(
    "row", rows(item="1", quantity="eps"), ids=lambda r: f"{r['setting']}-delta{r['query']}"
)
def test_gaussian_epsilon_matches_reference(row):
    mu = 1.0 / row["params"]["sigma"]
    assert gdp(mu).epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-9)
    assert gdp_epsilon(row["query"], mu) == pytest.approx(row["value"], rel=1e-9)
    # and back: the mu whose profile passes through (eps, delta)
    assert gdp_mu(row["value"], row["query"]) == pytest.approx(mu, rel=1e-9)


@pytest.mark.parametrize("row", rows(item="4"), ids=lambda r: r["setting"])
def test_k_fold_gaussian_epsilon_matches_reference(row):
    mu = math.sqrt(row["params"]["k"]) / row["params"]["sigma"]
    assert gdp(mu).epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-9)


def _item5(quantity: str, method_start: str) -> list[dict]:
    return [r for r in rows(item="5", quantity=quantity) if r["method"].startswith(method_start)]


@pytest.mark.parametrize(
    "row",
    _item5("mu", "GDP CLT") + _item5("mu", "analysis.gdp"),
    ids=lambda r: f"{r['setting']}-{r['library']}",
)
def test_clt_mu_matches_reference(row):
    prm = row["params"]
    mu = clt_mu_poisson(prm["q"], prm["sigma"], prm["steps"])
    assert mu == pytest.approx(row["value"], rel=1e-6)


@pytest.mark.parametrize(
    "row",
    _item5("eps", "GDP CLT") + _item5("eps", "GaussianAccountant"),
    ids=lambda r: f"{r['setting']}-{r['library']}",
)
def test_clt_epsilon_matches_reference(row):
    prm = row["params"]
    curve = gdp_clt(prm["q"], prm["sigma"], prm["steps"])
    assert curve.kind == "approximation"
    assert curve.epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-6)


def test_clt_curve_matches_reference_tradeoff_column():
    cols = item7_curve()
    alpha = np.array(cols["alpha"])
    ref = np.array(cols["beta_gdp_clt"])
    curve = gdp_clt(256 / 60000, 1.1, 3516)
    values = curve(alpha)
    positive = ref > 0
    np.testing.assert_allclose(values[positive], ref[positive], rtol=1e-6)
    assert np.all(values[~positive] <= 1e-12)


# --- the GDP curve and its dual, computed other ways ------------------------------------------


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_gdp_curve_is_the_gaussian_neyman_pearson_curve(mu):
    t = np.linspace(-10, 10 + mu, 4001)
    alpha, beta = stats.norm.sf(t), stats.norm.cdf(t, loc=mu)
    assert np.max(np.abs(gdp(mu)(alpha) - beta)) < 1e-12
    # reverse order, N(mu, 1) against N(0, 1) with tests "y < t": the same curve
    alpha, beta = stats.norm.cdf(t, loc=mu), stats.norm.sf(t)
    assert np.max(np.abs(gdp(mu)(alpha) - beta)) < 1e-12


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 5.0])
def test_gdp_delta_is_the_hockey_stick_integral(mu, eps):
    # H_{e^eps}(Q || P) = int (q(y) - e^eps p(y))_+ dy for P = N(0,1), Q = N(mu,1): positive
    # where y > eps/mu + mu/2.
    lo = eps / mu + mu / 2

    def integrand(y: float) -> float:
        return stats.norm.pdf(y, loc=mu) - math.exp(eps) * stats.norm.pdf(y)

    value, _ = integrate.quad(integrand, lo, lo + 40, epsabs=1e-15, epsrel=1e-12)
    assert gdp_delta(eps, mu) == pytest.approx(value, rel=1e-9, abs=1e-15)


def _mp_delta(mp, eps, mu):
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize(
    ("mu", "rel_delta", "rel_eps"),
    [
        (1e-6, 1e-7, 1e-10),
        (0.1, 1e-11, 1e-12),
        (1.0, 1e-11, 1e-12),
        (10.0, 1e-11, 1e-12),
        (40.0, 1e-11, 1e-12),
    ],
)
def test_gdp_profile_down_to_1e_300_against_mpmath(mu, rel_delta, rel_eps):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    for target in (1e-20, 1e-100, 1e-200, 1e-300):
        lo, hi = mp.mpf(0), mp.mpf(mu) * (mp.mpf(mu) / 2 + 40)
        for _ in range(260):
            mid = (lo + hi) / 2
            if _mp_delta(mp, mid, mu) > target:
                lo = mid
            else:
                hi = mid
        eps_ref = float(hi)
        assert gdp_epsilon(target, mu) == pytest.approx(eps_ref, rel=rel_eps)
        delta_ref = float(_mp_delta(mp, eps_ref, mu))
        assert gdp_delta(eps_ref, mu) == pytest.approx(delta_ref, rel=rel_delta)


def test_gdp_is_symmetric_with_closed_form_fixed_point():
    for mu in (0.2, 1.0, 5.0):
        g = gdp(mu)
        assert g.inverse() is g
        inner = ALPHA[(ALPHA > 1e-3) & (ALPHA < 1 - 1e-3)]
        assert np.max(np.abs(g(g(inner)) - inner)) < 1e-9
        x = g._fixed_point()
        assert float(g(x)) == pytest.approx(x, rel=1e-12)
        assert TradeoffCurve._fixed_point(g) == pytest.approx(x, rel=1e-12)


def test_gdp_delta_matches_numeric_duality():
    eps = np.linspace(0.0, 8.0, 81)
    for mu in (0.3, 1.0, 3.0):
        g = gdp(mu)
        numeric = TradeoffCurve(g._fn, name="numeric").delta(eps)
        assert np.max(np.abs(g.delta(eps) - numeric)) < 1e-12


def test_gdp_epsilon_and_mu_round_trips_vectorised():
    deltas = np.array([0.5, 1e-3, 1e-5, 1e-12, 1e-100])
    for mu in (0.05, 1.0, 7.0):
        eps = gdp_epsilon(deltas, mu)
        achievable = deltas < gdp_delta(0.0, mu)
        np.testing.assert_allclose(gdp_delta(eps[achievable], mu), deltas[achievable], rtol=1e-9)
        assert np.all(eps[~achievable] == 0.0)
        np.testing.assert_allclose(gdp_mu(eps[achievable], deltas[achievable]), mu, rtol=1e-9)
    assert gdp_epsilon(0.0, 1.0) == math.inf
    assert gdp_epsilon(1e-5, 0.0) == 0.0
    assert gdp_delta(np.inf, 1.0) == 0.0 and gdp_delta(3.0, 0.0) == 0.0


def test_extreme_mu_and_delta_give_finite_monotone_answers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        deltas = np.array([1e-1, 1e-5, 1e-20, 1e-100, 1e-300])
        for mu in (1e-6, 40.0):
            g = gdp(mu)
            eps = np.array([g.epsilon(float(d)) for d in deltas])
            assert np.all(np.isfinite(eps)) and np.all(np.diff(eps) >= 0)
            d = g.delta(np.array([0.0, 1e-6, 1.0, 50.0, 1e4]))
            assert np.all(np.isfinite(d)) and np.all(np.diff(d) <= 0)
            values = g(ALPHA)
            assert np.all(np.isfinite(values)) and np.all(np.diff(values) <= 0)
        assert gdp(40.0).delta(50.0) == pytest.approx(1.0)
        assert gdp(1e-6).delta(0.0) == pytest.approx(2 * ndtr(5e-7) - 1, rel=1e-9)


# --- central limits ---------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.0, 1e3])
def test_fixed_batch_chi2_matches_its_integral(sigma):
    # DRS Lemma 3: chi^2_+(G_m) = int_0^1 (|G_m'(x)| - 1)_+^2 dx, m = 1/sigma; in z = -ndtri(x)
    # the integrand is (e^{m z - m^2/2} - 1)^2 phi(z) on z > m/2.
    m = 1.0 / sigma

    def integrand(z: float) -> float:
        return math.expm1(m * z - m * m / 2) ** 2 * stats.norm.pdf(z)

    chi2, _ = integrate.quad(integrand, m / 2, m / 2 + 40, epsabs=0.0, epsrel=1e-12)
    mu = clt_mu_fixed(0.01, sigma, 100)
    assert mu == pytest.approx(math.sqrt(2) * 0.01 * 10 * math.sqrt(chi2), rel=1e-8)


def test_clt_limits_agree_for_large_sigma_and_are_approximations():
    # chi^2_+ = 1/(2 sigma^2) + O(sigma^-3) and e^{1/sigma^2} - 1 = 1/sigma^2 + O(sigma^-4)
    for sigma in (50.0, 500.0):
        assert clt_mu_fixed(0.01, sigma, 400) == pytest.approx(
            clt_mu_poisson(0.01, sigma, 400), rel=2.0 / sigma
        )
    assert gdp_clt(0.01, 1.0, 100, sampling="fixed").kind == "approximation"
    assert gdp_clt(0.01, 1.0, 100).mu == pytest.approx(0.01 * math.sqrt(100 * math.expm1(1.0)))


def test_clt_underestimates_epsilon_against_the_tight_accountant():
    # tests/reference/README.md: at one epoch, sigma = 0.7, the CLT says 0.605 where the
    # PLD accountant says 1.551.
    pld = [
        r
        for r in rows(item="5", quantity="eps")
        if r["kind"] == "tight_upper" and r["setting"] == "sigma=0.7,epochs=1,T=235"
    ]
    clt = gdp_clt(256 / 60000, 0.7, 235).epsilon(1e-5)
    assert clt == pytest.approx(0.6046, abs=1e-3)
    assert pld and clt < 0.5 * pld[0]["value"]


# --- Berry-Esseen -----------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.8, 1.3, 3.0])
def test_berry_esseen_functionals_without_subsampling_are_gaussian_moments(sigma):
    # p = 1: the log-likelihood ratio is N(mu^2/2, mu^2) (in absolute value of its mean).
    mu = 1.0 / sigma
    fun = berry_esseen_functionals(1.0, sigma)
    assert fun.kl == pytest.approx(mu**2 / 2, rel=1e-9)
    assert fun.kappa2 == pytest.approx(mu**2 + mu**4 / 4, rel=1e-9)
    assert fun.kappa3_bar == pytest.approx(2 * math.sqrt(2 / math.pi) * mu**3, rel=1e-9)
    steps = 50
    be = berry_esseen(1.0, sigma, steps)
    assert be.mu == pytest.approx(math.sqrt(steps) * mu, rel=1e-9)
    assert be.gamma == pytest.approx(0.56 * 2 * math.sqrt(2 / math.pi) / math.sqrt(steps), rel=1e-9)
    assert np.all(be(ALPHA) <= gdp(math.sqrt(steps) * mu)(ALPHA) + 1e-15)


def _alpha_domain_functionals(p: float, sigma: float) -> tuple[float, float, float]:
    """kl, kappa2, kappa3_bar from their definitions (DRS Section 3.2), integrals over x in [0, 1]
    of powers of log|f'(x)|, for f = C_p(G_mu) in the closed form of DRS eq. (13).

    On [0, x*] f = f_p with log|f_p'(x)| = Z(x) = log(p e^{mu z - mu^2/2} + 1 - p),
    z = -ndtri(x); the middle segment has slope -1 (log 0); on [f_p(x*), 1] f = f_p^{-1}, whose
    log-slope at x = f_p(y) is -Z(y), so that part is int_0^{x*} h(-Z(y)) |f_p'(y)| dy.
    """
    mu = 1.0 / sigma
    x_star = float(ndtr(-mu / 2))

    def z_of(y: float) -> float:
        return math.log1p(p * math.expm1(-mu * float(ndtri(y)) - mu * mu / 2))

    # integrate over u = log y: the integrands are smooth in u down to y = 1e-300
    def quad_log(fn, points=()) -> float:
        value, _ = integrate.quad(
            lambda u: fn(math.exp(u)) * math.exp(u),
            math.log(1e-300),
            math.log(x_star),
            points=[math.log(t) for t in points] or None,
            epsabs=0.0,
            epsrel=1e-9,
            limit=400,
        )
        return value

    def both(h):
        return lambda y: h(z_of(y)) + h(-z_of(y)) * math.exp(z_of(y))

    # for kl the two parts nearly cancel: Z - Z e^Z = -Z expm1(Z)
    kl = quad_log(lambda y: z_of(y) * math.expm1(z_of(y)))
    kappa2 = quad_log(both(lambda g: g * g))
    kink = brentq(lambda y: z_of(y) - kl, 1e-300, x_star)  # where |kl - Z| has its kink
    kappa3_bar = quad_log(both(lambda g: abs(g + kl) ** 3), points=[kink])
    return kl, kappa2, kappa3_bar


@pytest.mark.parametrize(("p", "sigma"), [(0.05, 1.0), (0.3, 0.8), (256 / 60000, 1.1)])
def test_berry_esseen_functionals_match_alpha_domain_quadrature(p, sigma):
    fun = berry_esseen_functionals(p, sigma)
    kl, kappa2, kappa3_bar = _alpha_domain_functionals(p, sigma)
    assert fun.kl == pytest.approx(kl, rel=1e-9)
    assert fun.kappa2 == pytest.approx(kappa2, rel=1e-9)
    assert fun.kappa3_bar == pytest.approx(kappa3_bar, rel=1e-9)


def test_berry_esseen_is_below_the_exact_dpsgd_curve():
    cols = item7_curve()
    alpha = np.array(cols["alpha"])
    be = berry_esseen(256 / 60000, 1.1, 3516)
    assert isinstance(be, BerryEsseenTradeoff) and be.kind == "bound"
    # beta_pld_np_min is the exact Neyman-Pearson curve of the composed mechanism (both orders)
    assert np.all(be(alpha) <= np.array(cols["beta_pld_np_min"]) + 1e-12)
    assert np.all(be(alpha) <= np.array(cols["beta_pld_duality"]) + 1e-12)
    # it is a loose bound here: the CLT value sits well above it somewhere in the middle
    assert np.max(np.array(cols["beta_gdp_clt"]) - be(alpha)) > 0.01


def test_berry_esseen_curve_shape_and_dual():
    be = berry_esseen(0.01, 1.0, 1000)
    a = ALPHA
    g = gdp(be.mu)
    expected = np.maximum(g(np.minimum(a + be.gamma, 1.0)) - be.gamma, 0.0)
    assert np.max(np.abs(be(a) - expected)) < 1e-15
    inside = be(a) > 1e-6
    assert np.max(np.abs(be(be(a[inside])) - a[inside])) < 1e-9  # symmetric
    eps = np.linspace(0.0, 6.0, 61)
    numeric = TradeoffCurve(be._fn, name="numeric").delta(eps)
    assert np.max(np.abs(be.delta(eps) - numeric)) < 1e-12
    assert np.all(be.delta(eps) >= 1 - float(be(0.0)) - 1e-15)


def test_berry_esseen_with_large_gamma_is_the_zero_curve():
    be = berry_esseen(0.5, 1.0, 1)
    assert be.gamma >= 0.5
    assert np.all(be(ALPHA) == 0.0)
    assert np.all(be.delta(np.array([0.0, 3.0])) == 1.0)


# --- types and argument checks ----------------------------------------------------------------


def test_gdp_objects():
    g = gdp(1.5)
    assert isinstance(g, GDPTradeoff) and g.mu == 1.5 and g.kind == "exact" and g.symmetric
    assert gdp(0.0)(0.3) == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: gdp(-1.0), "mu"),
        (lambda: gdp(math.nan), "mu"),
        (lambda: gdp(math.inf), "mu"),
        (lambda: gdp(1.0, kind="maybe"), "kind"),
        (lambda: gdp_delta(-1.0, 1.0), "eps"),
        (lambda: gdp_delta(1.0, -1.0), "mu"),
        (lambda: gdp_epsilon(1.5, 1.0), "delta"),
        (lambda: gdp_epsilon(1e-5, math.nan), "mu"),
        (lambda: gdp_mu(1.0, 0.0), "delta"),
        (lambda: gdp_mu(math.inf, 0.1), "eps"),
        (lambda: clt_mu_poisson(0.0, 1.0, 10), "rate"),
        (lambda: clt_mu_poisson(1.5, 1.0, 10), "rate"),
        (lambda: clt_mu_poisson(0.1, 0.0, 10), "sigma"),
        (lambda: clt_mu_poisson(0.1, 1.0, 0), "steps"),
        (lambda: clt_mu_poisson(0.1, 0.01, 10), "sigma"),
        (lambda: clt_mu_fixed(0.1, 0.01, 10), "sigma"),
        (lambda: gdp_clt(0.1, 1.0, 10, sampling="shuffle"), "sampling"),
        (lambda: berry_esseen(0.1, -1.0, 10), "sigma"),
        (lambda: berry_esseen_functionals(0.0, 1.0), "rate"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
