"""Trade-off curves: closed forms, exact discrete curves, duality, symmetrisation, subsampling.

Every formula is checked against something computed another way: pinned reference values
(tests/reference), a linear programme over all randomised tests, Neyman-Pearson threshold
tests built from scipy.stats distributions, an independent hull (monotone chain), or the generic
numerical dual.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq, linprog

from dpaudit.bounds.gaussian_dp import GDPTradeoff, gdp
from dpaudit.bounds.tradeoff import (
    KINDS,
    PiecewiseLinearTradeoff,
    TradeoffCurve,
    approx_dp,
    compose,
    from_delta,
    from_discrete,
    from_points,
    identity,
    laplace_tradeoff,
    randomized_response_tradeoff,
    subsample,
    symmetrize,
)
from tests.reference import rows

ALPHA = np.linspace(0.0, 1.0, 2001)


def numeric_copy(curve: TradeoffCurve) -> TradeoffCurve:
    """The same function without its closed forms: exercises the generic numerical dual."""
    return TradeoffCurve(curve._fn, name=f"numeric {curve.name}", kind=curve.kind)


def monotone_chain_lower_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference lower convex hull (Andrew's monotone chain), independent of dpaudit's."""
    order = np.lexsort((y, x))
    hx: list[float] = []
    hy: list[float] = []
    for xi, yi in zip(x[order].tolist(), y[order].tolist(), strict=True):
        while len(hx) >= 2:
            cross = (hx[-1] - hx[-2]) * (yi - hy[-2]) - (hy[-1] - hy[-2]) * (xi - hx[-2])
            if cross <= 0:
                hx.pop()
                hy.pop()
            else:
                break
        hx.append(xi)
        hy.append(yi)
    return np.array(hx), np.array(hy)


def envelope_of_min(f_vals_alpha, f_vals_beta, grid):
    """Chord hull of the samples of min(f, f^{-1}): lies on or above the exact envelope."""
    x = np.concatenate([f_vals_alpha, f_vals_beta, [0.0, 1.0]])
    y = np.concatenate([f_vals_beta, f_vals_alpha, [1.0, 0.0]])
    hx, hy = monotone_chain_lower_hull(x, y)
    return np.interp(grid, hx, hy)


# --- reference values ------------------------------------------------------------------------


@pytest.mark.parametrize("row", rows(item="2", quantity="delta"), ids=lambda r: r["setting"])
def test_laplace_delta_matches_reference(row):
    curve = laplace_tradeoff(1.0 / row["params"]["b"])
    value = float(curve.delta(row["query"]))
    if row["value"] == 0.0:
        assert value == 0.0
    else:
        assert value == pytest.approx(row["value"], rel=1e-9)


@pytest.mark.parametrize("row", rows(item="2", quantity="eps"), ids=lambda r: r["setting"])
def test_laplace_epsilon_matches_reference(row):
    curve = laplace_tradeoff(1.0 / row["params"]["b"])
    assert curve.epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-9)


def _rr_rows(quantity: str) -> list[dict]:
    return [r for r in rows(item="3", quantity=quantity) if r["params"]["k"] == 1]


@pytest.mark.parametrize("row", _rr_rows("delta"), ids=lambda r: r["setting"])
def test_binary_randomized_response_delta_matches_reference(row):
    curve = randomized_response_tradeoff(row["params"]["eps0"])
    value = float(curve.delta(row["query"]))
    assert value == pytest.approx(row["value"], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("row", _rr_rows("eps"), ids=lambda r: r["setting"])
def test_binary_randomized_response_epsilon_matches_reference(row):
    curve = randomized_response_tradeoff(row["params"]["eps0"])
    assert curve.epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-9)


# --- closed forms against independent constructions ------------------------------------------


@pytest.mark.parametrize("eps0", [0.1, 1.0, 2.5])
def test_laplace_curve_is_the_neyman_pearson_curve(eps0):
    # Lap(0, 1) against Lap(eps0, 1): the likelihood ratio increases on (0, eps0), so the
    # threshold tests "x > t" with t there trace the curve (the rest is randomised mixtures).
    t = np.linspace(0.0, eps0, 20001)
    alpha = stats.laplace.sf(t, loc=0.0)
    beta = stats.laplace.cdf(t, loc=eps0)
    reference = from_points(alpha, beta)
    assert np.max(np.abs(laplace_tradeoff(eps0)(ALPHA) - reference(ALPHA))) < 1e-8


def test_laplace_with_zero_eps_is_identity():
    assert np.allclose(laplace_tradeoff(0.0)(ALPHA), 1.0 - ALPHA, atol=1e-15)


@pytest.mark.parametrize(("eps", "k"), [(0.5, 2), (1.0, 3), (2.0, 10), (0.0, 4)])
def test_randomized_response_matches_its_output_distributions(eps, k):
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    other = 1.0 / (math.exp(eps) + k - 1)
    p = np.full(k, other)
    q = np.full(k, other)
    p[0], q[1] = keep, keep  # true value 0 under D, 1 under D_prime
    exact = from_discrete(p, q)
    curve = randomized_response_tradeoff(eps, k)
    assert np.max(np.abs(curve(ALPHA) - exact(ALPHA))) < 1e-14
    eps_grid = np.linspace(0.0, 3.0, 61)
    assert np.max(np.abs(curve.delta(eps_grid) - exact.delta(eps_grid))) < 1e-14


def test_binary_randomized_response_is_pure_dp_curve():
    for eps in (0.3, 1.0, 4.0):
        assert (
            np.max(np.abs(randomized_response_tradeoff(eps)(ALPHA) - approx_dp(eps, 0.0)(ALPHA)))
            < 1e-15
        )


@pytest.mark.parametrize(
    "curve",
    [
        approx_dp(1.0, 1e-3),
        approx_dp(0.0, 0.2),
        approx_dp(3.0, 0.0),
        laplace_tradeoff(0.7),
        laplace_tradeoff(3.0),
        randomized_response_tradeoff(1.0, 5),
        randomized_response_tradeoff(2.0),
    ],
    ids=lambda c: c.name,
)
def test_closed_form_delta_matches_numeric_duality(curve):
    eps = np.concatenate([np.linspace(0.0, 4.0, 81), [10.0, 50.0]])
    closed = curve.delta(eps)
    numeric = numeric_copy(curve).delta(eps)
    assert np.max(np.abs(closed - numeric)) < 1e-12
    assert np.all(np.diff(closed) <= 0.0)


def test_approx_dp_formula_and_symmetry():
    eps, delta = 1.3, 0.05
    f = approx_dp(eps, delta)
    expected = np.maximum.reduce(
        [
            np.zeros_like(ALPHA),
            1 - delta - math.exp(eps) * ALPHA,
            math.exp(-eps) * (1 - delta - ALPHA),
        ]
    )
    assert np.max(np.abs(f(ALPHA) - expected)) < 1e-15
    assert f.symmetric and f.inverse() is f
    # symmetric: f(f(alpha)) = alpha wherever f(alpha) > 0
    inside = ALPHA <= 1 - delta
    assert np.max(np.abs(f(f(ALPHA[inside])) - ALPHA[inside])) < 1e-12


# --- from_discrete: exact trade-off of two pmfs ----------------------------------------------


def lp_tradeoff(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """min over all randomised tests phi in [0,1]^n with E_P[phi] <= alpha of 1 - E_Q[phi]."""
    res = linprog(-q, A_ub=p[None, :], b_ub=[alpha], bounds=[(0.0, 1.0)] * p.size)
    assert res.status == 0
    return 1.0 + res.fun


@pytest.mark.parametrize("seed", range(6))
def test_from_discrete_matches_all_randomised_tests(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    p = rng.dirichlet(np.ones(n))
    q = rng.dirichlet(np.ones(n))
    if seed % 2 == 0:  # outcomes impossible under one of the two distributions
        p[0] = 0.0
        q[-1] = 0.0
        p, q = p / p.sum(), q / q.sum()
    if seed == 5:  # a tie in the likelihood ratio and an outcome impossible under both
        p = np.array([0.2, 0.4, 0.0, 0.4])
        q = np.array([0.1, 0.2, 0.0, 0.7])
    curve = from_discrete(p, q)
    alphas = np.linspace(0.0, 1.0, 41)
    brute = np.array([lp_tradeoff(p, q, a) for a in alphas])
    assert np.max(np.abs(curve(alphas) - brute)) < 1e-9


def test_from_discrete_inverse_is_the_swapped_pair():
    rng = np.random.default_rng(11)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    f = from_discrete(p, q)
    g = from_discrete(q, p)  # T(Q, P) = T(P, Q)^{-1} (DRS Prop. 2)
    assert np.max(np.abs(f.inverse()(ALPHA) - g(ALPHA))) < 1e-12
    back = f.inverse().inverse()
    assert np.max(np.abs(back(ALPHA) - f(ALPHA))) < 1e-12


def test_from_discrete_delta_is_the_hockey_stick_divergence():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    eps = np.linspace(0.0, 3.0, 31)
    # delta(eps) of T(P, Q) is sum_y (q(y) - e^eps p(y))_+ (docs/theory.md#conventions)
    hockey = np.array([np.sum(np.maximum(q - math.exp(e) * p, 0.0)) for e in eps])
    assert np.max(np.abs(from_discrete(p, q).delta(eps) - hockey)) < 1e-14


def test_from_discrete_point_mass_epsilon_at_tiny_delta():
    # binary randomized response as pmfs: delta(eps) = 0 from eps0 on, so even delta = 1e-300
    # gives eps0 (finite), and delta below 1 - f(0) is impossible when q has mass where p = 0.
    e0 = 1.0
    keep = math.exp(e0) / (1 + math.exp(e0))
    f = from_discrete([keep, 1 - keep], [1 - keep, keep])
    assert f.epsilon(1e-300) == pytest.approx(e0, rel=1e-9)
    g = from_discrete([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    assert g.epsilon(0.4) == math.inf
    assert g.epsilon(0.5) == 0.0


# --- piecewise-linear curves and hulls --------------------------------------------------------


def test_from_points_hull_matches_monotone_chain():
    rng = np.random.default_rng(7)
    a = rng.uniform(size=5000)
    b = np.clip(1 - a - 0.2 * np.sin(np.pi * a) + rng.normal(0, 0.02, a.size), 0.0, 1.0)
    curve = from_points(a, b)
    hx, hy = monotone_chain_lower_hull(np.append(a, [0.0, 1.0]), np.append(b, [1.0, 0.0]))
    # keep the non-increasing part, as a trade-off curve does
    stop = int(np.argmin(hy)) + 1
    ref = np.interp(ALPHA, np.append(hx[:stop], 1.0), np.append(hy[:stop], 0.0))
    assert np.max(np.abs(curve(ALPHA) - ref)) < 1e-12
    # every point lies on or above the hull
    assert np.all(curve(a) <= b + 1e-12)


def test_from_points_with_subnormal_gaps_stays_convex():
    # chord slopes across gaps of 1e-308 exceed the float range; such points are merged
    a = np.array([0.0, 1.1125369292536007e-308, 0.25, 5e-310, 0.5])
    b = np.array([0.5, 1.0, 0.5, 0.7, 0.2])
    curve = from_points(a, b)
    values = curve(ALPHA)
    assert np.all(np.diff(values) <= 0.0)
    assert np.all(values[:-2] + values[2:] - 2 * values[1:-1] >= -1e-15)
    assert np.all(curve(a) <= b + 1e-15)
    assert float(curve(0.0)) == 0.5 and float(curve(0.5)) == pytest.approx(0.2)


def test_from_points_handles_a_million_points():
    rng = np.random.default_rng(8)
    a = rng.uniform(size=10**6)
    b = (1.0 - np.sqrt(a)) ** 2  # strictly convex: every point is a hull vertex
    curve = from_points(a, b)
    assert curve.alpha_vertices.size > 0.99 * 10**6
    assert np.max(np.abs(curve(ALPHA) - (1 - np.sqrt(ALPHA)) ** 2)) < 1e-6


def test_piecewise_linear_keeps_lowest_beta_at_repeated_alpha_and_pads():
    f = PiecewiseLinearTradeoff(
        np.array([0.0, 0.0, 0.5, 0.8]), np.array([1.0, 0.6, 0.1, 0.0]), name="x"
    )
    assert f(0.0) == pytest.approx(0.6)
    assert f(1.0) == 0.0
    assert f.alpha_vertices[-1] == 1.0
    inv = f.inverse()
    assert inv(0.0) == pytest.approx(0.8)  # inf{alpha : f(alpha) <= 0}
    assert inv(0.6) == pytest.approx(0.0)


def test_piecewise_linear_delta_is_exact_and_uses_the_hull():
    a = np.array([0.0, 0.1, 0.2, 0.5, 1.0])
    b = np.array([1.0, 0.5, 0.45, 0.05, 0.0])  # not convex at 0.2
    f = PiecewiseLinearTradeoff(a, b, name="nonconvex")
    eps = np.linspace(0.0, 3.0, 31)
    brute = np.array([1.0 - np.min(math.exp(e) * a + b) for e in eps])
    assert np.max(np.abs(f.delta(eps) - np.clip(brute, 0, 1))) < 1e-15


@pytest.mark.filterwarnings("error")
def test_huge_eps_gives_no_overflow_warning():
    curves = [
        from_points(np.array([0.1, 0.3]), np.array([0.5, 0.2])),
        numeric_copy(gdp(1.0)),
        approx_dp(800.0, 0.0),
        laplace_tradeoff(800.0),
        randomized_response_tradeoff(800.0, 3),
        gdp(1.0),
    ]
    for curve in curves:
        d = curve.delta(np.array([0.0, 1e3, 1e4, 1e300, np.inf]))
        assert np.all(np.isfinite(d)) and np.all(np.diff(d) <= 0)
        assert np.isfinite(curve.epsilon(1e-12)) or curve.epsilon(1e-12) == math.inf
        curve(ALPHA)


def test_generic_epsilon_round_trip_and_tiny_delta():
    f = numeric_copy(gdp(1.5))
    for eps in (0.1, 1.0, 3.0):
        assert f.epsilon(float(f.delta(eps))) == pytest.approx(eps, rel=1e-6)
    # the generic dual resolves delta to about 1e-15; smaller targets still give a finite,
    # monotone answer at least as large as the one for 1e-12
    e12, e300 = f.epsilon(1e-12), f.epsilon(1e-300)
    assert math.isfinite(e300) and e300 >= e12


# --- (eps, delta) families -> f-DP (DRS Prop. 5) ----------------------------------------------


def test_from_delta_single_pair_is_approx_dp():
    for eps, delta in [(0.0, 0.0), (1.0, 1e-5), (2.0, 0.3), (50.0, 1e-300)]:
        f = from_delta(eps, delta)
        assert np.max(np.abs(f(ALPHA) - approx_dp(eps, delta)(ALPHA))) < 1e-14
        assert f.symmetric


def test_from_delta_is_the_supremum_of_the_family():
    rng = np.random.default_rng(5)
    eps = rng.uniform(0, 3, 40)
    delta = rng.uniform(0, 0.2, 40)
    f = from_delta(eps, delta)
    brute = np.max([approx_dp(e, d)(ALPHA) for e, d in zip(eps, delta, strict=True)], axis=0)
    assert np.max(np.abs(f(ALPHA) - brute)) < 1e-14


def test_from_delta_of_gdp_profile_is_a_close_lower_bound():
    mu = 1.0
    eps = np.linspace(0.0, 12.0, 600)
    f = from_delta(eps, gdp(mu).delta(eps))
    exact = gdp(mu)(ALPHA)
    assert np.all(f(ALPHA) <= exact + 1e-15)  # supporting lines never exceed G_mu
    assert np.max(exact - f(ALPHA)) < 1e-3


def test_from_delta_drops_only_lines_too_steep_to_matter():
    f = from_delta([1000.0, 1.0], [0.0, 0.1])
    assert np.max(np.abs(f(ALPHA) - approx_dp(1.0, 0.1)(ALPHA))) < 1e-15


# --- symmetrisation ---------------------------------------------------------------------------


def test_symmetrize_returns_symmetric_curves_unchanged():
    for f in (gdp(1.0), approx_dp(1.0, 0.1), identity()):
        assert symmetrize(f) is f
        assert f.symmetrize() is f


def test_symmetrize_piecewise_linear_is_exact():
    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    f = from_discrete(p, q)
    s = symmetrize(f)
    a, b = f.points()
    ref = envelope_of_min(a, b, ALPHA)  # vertices only: the exact envelope
    assert np.max(np.abs(s(ALPHA) - ref)) < 1e-12
    assert np.max(np.abs(s.inverse()(ALPHA) - s(ALPHA))) < 1e-12
    assert s.kind == "bound"


def test_symmetrize_smooth_curve_is_a_valid_close_lower_bound():
    # f_p = p G_1 + (1 - p) Id is the exact curve of one order of a Poisson-subsampled Gaussian
    p = 0.3
    f = TradeoffCurve(lambda a: p * gdp(1.0)._fn(a) + (1 - p) * (1 - a), name="f_p")
    s = symmetrize(f)
    grid = np.unique(np.concatenate([np.linspace(0, 1, 40001), np.geomspace(1e-12, 1e-2, 4000)]))
    chord = envelope_of_min(grid, f(grid), ALPHA)  # on or above the exact envelope
    assert np.all(s(ALPHA) <= chord + 1e-15)
    assert np.max(chord - s(ALPHA)) < 1e-6
    # never above min(f, f^{-1}) anywhere on a fine grid
    fine = np.linspace(0, 1, 100001)
    assert np.all(s(fine) <= np.minimum(f(fine), f.inverse()(fine)) + 1e-15)


# --- subsampling: C_p (DRS Def. 6, Thm. 9) ----------------------------------------------------


def test_poisson_subsampled_gaussian_order_is_the_mixture_curve():
    # docs/theory.md#tradeoff: T(P, (1-p) P + p P') = p T(P, P') + (1-p) Id; check for N(0,1),
    # N(mu,1):
    # the likelihood ratio is increasing in y, so thresholds trace the exact curve.
    p, mu = 0.25, 1.5
    t = np.linspace(-12, 14, 40001)
    alpha = stats.norm.sf(t)
    beta = (1 - p) * stats.norm.cdf(t) + p * stats.norm.cdf(t - mu)
    ref = from_points(alpha, beta)
    mixture = p * gdp(mu)(ALPHA) + (1 - p) * (1 - ALPHA)
    assert np.max(np.abs(ref(ALPHA) - mixture)) < 1e-7
    # the other order: the likelihood ratio now decreases in y, so the tests are "y < t"
    reverse = from_points(beta, alpha)  # alpha' = mixture cdf, beta' = 1 - Phi(t) = sf(t)
    f_p = TradeoffCurve(lambda a: p * gdp(mu)._fn(a) + (1 - p) * (1 - a), name="f_p")
    assert np.max(np.abs(reverse(ALPHA) - f_p.inverse()(ALPHA))) < 1e-7


@pytest.mark.parametrize(
    ("base", "p", "kinks"),
    [
        (gdp(1.0), 0.3, []),
        (gdp(1.8), 0.35, []),
        (gdp(4.0), 0.05, []),
        (laplace_tradeoff(2.0), 0.5, []),
        (gdp(0.5), 1.0, []),
        (approx_dp(3.0, 0.1), 0.2, [0.9 / (1 + math.exp(3.0)), 0.9]),
    ],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_subsample_closed_form_matches_definition(base, p, kinks):
    curve = subsample(base, p)
    grid = np.unique(
        np.concatenate([np.linspace(0, 1, 40001), np.geomspace(1e-12, 1e-2, 4000), kinks])
    )
    f_p = p * base(grid) + (1 - p) * (1 - grid)
    chord = envelope_of_min(grid, f_p, ALPHA)  # min(f_p, f_p^{-1})** from samples, from above
    values = curve(ALPHA)
    assert np.all(values <= chord + 1e-12)
    assert np.max(chord - values) < 1e-6
    assert np.max(np.abs(curve.inverse()(ALPHA) - values)) < 1e-15  # symmetric


@pytest.mark.parametrize(
    ("eps", "delta", "p"), [(3.0, 0.1, 0.2), (1.0, 1e-3, 0.5), (0.5, 0.0, 0.1)]
)
def test_subsample_of_approx_dp(eps, delta, p):
    # Def. 6 directly: C_p(f_{eps,delta}) = max(f_{eps',delta'}, 1 - c - alpha), where the
    # middle segment passes through (x*, f_p(x*)), x* = (1 - delta)/(1 + e^eps):
    # c = p (e^eps - 1 + 2 delta)/(e^eps + 1). (DRS eq. (14) prints p delta + p(e^eps-1)/(e^eps+1),
    # which is larger, i.e. a weaker bound; the two agree when delta = 0.)
    closed = subsample(approx_dp(eps, delta), p)
    eps_p = math.log(1 - p + p * math.exp(eps))
    c = p * (math.exp(eps) - 1 + 2 * delta) / (math.exp(eps) + 1)
    expected = np.maximum(approx_dp(eps_p, p * delta)(ALPHA), 1 - c - ALPHA)
    assert np.max(np.abs(closed(ALPHA) - expected)) < 1e-12
    printed = np.maximum(
        approx_dp(eps_p, p * delta)(ALPHA),
        1 - p * delta - p * (math.exp(eps) - 1) / (math.exp(eps) + 1) - ALPHA,
    )
    assert np.all(printed <= closed(ALPHA) + 1e-15)
    # the piecewise-linear path (exact hull of vertices) gives the same curve
    pl = subsample(from_delta(eps, delta), p)
    assert np.max(np.abs(pl(ALPHA) - expected)) < 1e-12


@pytest.mark.parametrize(
    ("base", "p"), [(gdp(1.0), 0.3), (gdp(3.0), 0.01), (laplace_tradeoff(1.0), 0.2)]
)
def test_subsample_delta_matches_numeric_duality(base, p):
    curve = subsample(base, p)
    eps = np.concatenate([np.linspace(0.0, 4.0, 41), [8.0]])
    assert np.max(np.abs(curve.delta(eps) - numeric_copy(curve).delta(eps))) < 1e-12
    # classical amplification at eps' = log(1 + p (e^eps - 1)): delta' = p delta(eps)
    e = 1.0
    e_sub = math.log1p(p * math.expm1(e))
    assert float(curve.delta(e_sub)) == pytest.approx(p * float(base.delta(e)), rel=1e-12)


def test_subsample_edge_rates_and_non_symmetric_input():
    assert np.allclose(subsample(gdp(2.0), 0.0)(ALPHA), 1 - ALPHA, atol=1e-15)
    assert np.max(np.abs(subsample(gdp(2.0), 1.0)(ALPHA) - gdp(2.0)(ALPHA))) < 1e-12
    # a non-symmetric base goes through the sampled minorant: a valid, close lower bound
    base = TradeoffCurve(lambda a: 0.5 * gdp(2.0)._fn(a) + 0.5 * (1 - a), name="asym")
    curve = subsample(base, 0.4)
    grid = np.unique(np.concatenate([np.linspace(0, 1, 40001), np.geomspace(1e-12, 1e-2, 4000)]))
    f_p = 0.4 * base(grid) + 0.6 * (1 - grid)
    chord = envelope_of_min(grid, f_p, ALPHA)
    assert np.all(curve(ALPHA) <= chord + 1e-15)
    assert np.max(chord - curve(ALPHA)) < 1e-6


# --- inverses ---------------------------------------------------------------------------------


def test_numeric_inverse_and_inverse_of_inverse():
    f = TradeoffCurve(lambda a: 0.4 * gdp(1.5)._fn(a) + 0.6 * (1 - a), name="f")
    inv = f.inverse()
    for beta in (0.05, 0.3, 0.7, 0.95):
        root = brentq(lambda a, b=beta: float(f(a)) - b, 0.0, 1.0, xtol=1e-15)
        assert float(inv(beta)) == pytest.approx(root, abs=1e-12)
    back = inv.inverse()
    assert np.array_equal(back(ALPHA), f(ALPHA))
    assert not f.symmetric and f.inverse() is not f


# --- composition ------------------------------------------------------------------------------


def binned_gaussian(mu: float, edges: np.ndarray) -> np.ndarray:
    """Masses of N(mu, 1) on the bins (outer bins take the tails), accurate in both tails."""
    cdf = stats.norm.cdf(edges, loc=mu)
    sf = stats.norm.sf(edges, loc=mu)
    cdf[0], cdf[-1], sf[0], sf[-1] = 0.0, 1.0, 1.0, 0.0
    upper = edges[:-1] > mu
    return np.where(upper, sf[:-1] - sf[1:], np.diff(cdf))


def test_gdp_composition_closed_form_matches_numeric_product():
    mu1, mu2 = 0.8, 1.5
    composed = compose(gdp(mu1), gdp(mu2))
    assert isinstance(composed, GDPTradeoff)
    assert composed.mu == pytest.approx(math.hypot(mu1, mu2), rel=1e-15)
    # Binned Gaussians are a post-processing of the Gaussians, so the trade-off curve of the
    # product of the binned pairs lies above the exact composition, and close to it.
    edges = np.linspace(-9.0, 11.0, 1001)
    p = np.outer(binned_gaussian(0.0, edges), binned_gaussian(0.0, edges)).ravel()
    q = np.outer(binned_gaussian(mu1, edges), binned_gaussian(mu2, edges)).ravel()
    product = from_discrete(p, q)
    gap = product(ALPHA) - composed(ALPHA)
    assert np.all(gap >= -1e-12)
    assert np.max(gap) < 2e-3


def test_compose_kinds_and_single_curve():
    f = laplace_tradeoff(1.0)
    assert compose(f) is f
    assert compose(gdp(1.0, kind="approximation"), gdp(1.0)).kind == "approximation"
    assert compose(gdp(1.0, kind="bound"), gdp(2.0)).kind == "bound"


def test_compose_non_gdp_goes_through_privacy_loss_distributions():
    pld = pytest.importorskip("dpaudit.bounds.pld")
    if not hasattr(pld, "compose_tradeoffs"):
        pytest.skip("dpaudit.bounds.pld.compose_tradeoffs is not available")
    e1, e2 = 1.0, 0.5
    k1, k2 = math.exp(e1) / (1 + math.exp(e1)), math.exp(e2) / (1 + math.exp(e2))
    exact = from_discrete(
        np.outer([k1, 1 - k1], [k2, 1 - k2]).ravel(), np.outer([1 - k1, k1], [1 - k2, k2]).ravel()
    )
    out = compose(randomized_response_tradeoff(e1), randomized_response_tradeoff(e2))
    assert isinstance(out, TradeoffCurve) and out.kind in KINDS
    assert np.all(out(ALPHA) <= exact(ALPHA) + 1e-6)
    assert np.max(exact(ALPHA) - out(ALPHA)) < 1e-2


# --- argument checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: approx_dp(-1.0, 0.0), "eps"),
        (lambda: approx_dp(math.nan, 0.0), "eps"),
        (lambda: approx_dp(1.0, 1.5), "delta"),
        (lambda: laplace_tradeoff(-0.1), "eps"),
        (lambda: laplace_tradeoff(math.inf), "eps"),
        (lambda: randomized_response_tradeoff(1.0, 1), "k"),
        (lambda: randomized_response_tradeoff(1.0, 2.5), "k"),
        (lambda: from_discrete([0.5, 0.6], [0.5, 0.5]), "p"),
        (lambda: from_discrete([0.5, 0.5], [-0.5, 1.5]), "q"),
        (lambda: from_discrete([1.0], [0.5, 0.5]), "p and q"),
        (lambda: from_delta([-1.0], [0.1]), "eps"),
        (lambda: from_delta([1.0], [1.1]), "delta"),
        (lambda: from_delta([1.0, 2.0], [0.1]), "eps and delta"),
        (lambda: subsample(gdp(1.0), 1.5), "p"),
        (lambda: subsample("gdp", 0.5), "f"),
        (lambda: symmetrize(0.5), "f"),
        (lambda: compose(), "compose"),
        (lambda: compose(gdp(1.0), "x"), r"curves\[1\]"),
        (lambda: from_points([0.1, 1.2], [0.5, 0.5]), "alpha"),
        (lambda: PiecewiseLinearTradeoff([0.0, 1.0], [1.0, 2.0], name="x"), "beta"),
        (lambda: gdp(1.0)(1.5), "alpha"),
        (lambda: gdp(1.0).delta(-1.0), "eps"),
        (lambda: laplace_tradeoff(1.0).epsilon(2.0), "delta"),
        (lambda: TradeoffCurve(lambda a: 1 - a, name="x", kind="sure"), "kind"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_extreme_legal_parameters_are_finite():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for curve in (
            approx_dp(50.0, 1e-300),
            laplace_tradeoff(50.0),
            randomized_response_tradeoff(50.0, 7),
        ):
            values = curve(ALPHA)
            assert np.all(np.isfinite(values)) and np.all(np.diff(values) <= 0)
            assert curve.epsilon(1e-300) == pytest.approx(50.0, rel=1e-12)
