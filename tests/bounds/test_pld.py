"""Tests of dpaudit.bounds.pld against independent values.

Independent values come from the pinned reference values (tests/reference: closed forms at 60
digits, exact binomial sums, Google's dp-accounting), from closed forms evaluated here, from
quadrature of the hockey-stick divergence ``int (p - e^eps q)_+``, and from brute-force
enumeration of small product spaces. Nothing here is random.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from dpaudit.bounds import pld
from dpaudit.bounds.tradeoff import PiecewiseLinearTradeoff, TradeoffCurve, from_points
from dpaudit.mechanisms.base import PrivacyProfile
from tests.reference import item7_curve, rows

Q_SGD = 256 / 60000  # DP-SGD sampling rate of reference item 5


# ---------------------------------------------------------------------- independent values
def gdp_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of mu-GDP (DRS Corollary 1), in log space for large eps."""
    eps = np.asarray(eps, dtype=float)
    first = special.ndtr(-eps / mu + mu / 2)
    second = np.exp(eps + special.log_ndtr(-eps / mu - mu / 2))
    return first - second


def gdp_eps(mu: float, delta: float) -> float:
    return optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, 50 * mu + 50, xtol=1e-14)


def gdp_curve(mu: float) -> TradeoffCurve:
    return TradeoffCurve(
        lambda a: special.ndtr(special.ndtri(1 - a) - mu), name=f"G({mu})", symmetric=True
    )


def hockey_stick_quad(logp, logq, eps: float, points: list[float]) -> float:
    """int (p - e^eps q)_+ dy by adaptive quadrature on [-40, 40] (tails are below 1e-300)."""

    def integrand(y: float) -> float:
        lp, lq = logp(y), logq(y)
        return max(math.exp(lp) - math.exp(eps + lq), 0.0)

    edges = [-40.0, *sorted(points), 40.0]
    total = 0.0
    for a, b in itertools.pairwise(edges):
        val, _ = integrate.quad(integrand, a, b, epsabs=1e-15, epsrel=1e-12, limit=500)
        total += val
    return total


def subsampled_gaussian_logs(sigma: float, q: float):
    def logp(y):
        return stats.norm.logpdf(y, 0, sigma)

    def logq(y):
        return np.logaddexp(
            math.log1p(-q) + stats.norm.logpdf(y, 0, sigma),
            math.log(q) + stats.norm.logpdf(y, 1, sigma),
        )

    return logp, logq


def exact_discrete_delta(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """max of the two orders of sum (p - e^eps q)_+, the hockey stick of a discrete pair."""
    return max(
        np.maximum(p - math.exp(eps) * q, 0).sum(), np.maximum(q - math.exp(eps) * p, 0).sum()
    )


def assert_bracket(lower, value, upper, rel=1e-12, abs_=1e-300):
    """lower <= value <= upper, allowing float round-off in the last digits."""
    value = np.asarray(value, dtype=float)
    slack = rel * np.abs(value) + abs_
    assert np.all(np.asarray(lower) <= value + slack), (lower, value)
    assert np.all(np.asarray(upper) >= value - slack), (upper, value)


# ---------------------------------------------------------------------- shared, built once
@pytest.fixture(scope="module")
def dpsgd():
    """Poisson-subsampled Gaussian PLDs of reference item 5, composed T times (cached)."""
    base = {s: pld.poisson_subsampled_gaussian(s, rate=Q_SGD) for s in (0.7, 1.1)}
    cache: dict[tuple[float, int], pld.PLD] = {}

    def get(sigma: float, steps: int) -> pld.PLD:
        if (sigma, steps) not in cache:
            cache[(sigma, steps)] = base[sigma].self_compose(steps)
        return cache[(sigma, steps)]

    return get


# ---------------------------------------------------------------------- items 1, 2, 4
@pytest.mark.parametrize(
    "row", rows(item="1", quantity="delta"), ids=lambda r: f"s{r['params']['sigma']}-e{r['query']}"
)
def test_gaussian_delta_item1(row):
    g = pld.gaussian(row["params"]["sigma"])
    up, lo = g.delta(row["query"]), g.delta(row["query"], "lower")
    assert_bracket(lo, row["value"], up, rel=1e-9)
    if row["value"] > 1e-10:  # below ~1e-15 the truncated tails set the resolution
        # acceptance is 1%; connect-the-dots is exact on the grid and second order in between
        assert up == pytest.approx(row["value"], rel=1e-4)
        assert up - lo < 1e-2 * row["value"]


@pytest.mark.parametrize(
    "row", rows(item="1", quantity="eps"), ids=lambda r: f"s{r['params']['sigma']}-d{r['query']}"
)
def test_gaussian_epsilon_item1(row):
    g = pld.gaussian(row["params"]["sigma"])
    up, lo = g.epsilon(row["query"]), g.epsilon(row["query"], "lower")
    assert_bracket(lo, row["value"], up, rel=1e-9)
    assert up == pytest.approx(row["value"], rel=1e-5)  # acceptance: 1%
    assert up - lo < 1e-2 * row["value"]


@pytest.mark.parametrize(
    "row", rows(item="2", quantity="delta"), ids=lambda r: f"b{r['params']['b']}-e{r['query']}"
)
def test_laplace_delta_item2(row):
    lap = pld.laplace(row["params"]["b"])
    up, lo = lap.delta(row["query"]), lap.delta(row["query"], "lower")
    assert_bracket(lo, row["value"], up, rel=1e-9)
    # exact at grid values of eps (the atoms sit on the grid); a chord in between
    assert up == pytest.approx(row["value"], rel=1e-4)
    # one factor: the bracket is about step * |delta'(eps)|, relatively wide only where delta
    # itself vanishes (eps near eps0); the eps bracket is checked below
    assert up - lo < max(1e-2 * row["value"], 2e-3)


@pytest.mark.parametrize(
    "row", rows(item="2", quantity="eps"), ids=lambda r: f"b{r['params']['b']}-d{r['query']}"
)
def test_laplace_epsilon_item2(row):
    lap = pld.laplace(row["params"]["b"])
    up, lo = lap.epsilon(row["query"]), lap.epsilon(row["query"], "lower")
    assert_bracket(lo, row["value"], up, rel=1e-9)
    assert up == pytest.approx(row["value"], rel=1e-5)  # acceptance: 1%
    assert up - lo < 1e-2 * row["value"]


@pytest.mark.parametrize("row", rows(item="4"), ids=lambda r: f"k{r['params']['k']}")
def test_kfold_gaussian_item4(row):
    composed = pld.gaussian(row["params"]["sigma"]).self_compose(row["params"]["k"])
    up, lo = composed.epsilon(row["query"]), composed.epsilon(row["query"], "lower")
    assert_bracket(lo, row["value"], up, rel=1e-9)
    assert up == pytest.approx(row["value"], rel=1e-5)  # acceptance: 1%
    assert up - lo < 1e-2 * row["value"]


# ---------------------------------------------------------------------- item 3 (exact grid)
@pytest.fixture(scope="module")
def rr_compositions():
    cache: dict[tuple[float, int], pld.PLD] = {}

    def get(eps0: float, k: int) -> pld.PLD:
        if (eps0, k) not in cache:
            cache[(eps0, k)] = pld.randomized_response(eps0).self_compose(k)
        return cache[(eps0, k)]

    return get


@pytest.mark.parametrize(
    "row",
    rows(item="3"),
    ids=lambda r: f"{r['quantity']}-e{r['params']['eps0']}-k{r['params']['k']}-{r['query']}",
)
def test_randomized_response_item3_is_exact(row, rr_compositions):
    composed = rr_compositions(row["params"]["eps0"], row["params"]["k"])
    if row["quantity"] == "delta":
        up, lo = composed.delta(row["query"]), composed.delta(row["query"], "lower")
    else:
        up, lo = composed.epsilon(row["query"]), composed.epsilon(row["query"], "lower")
    # the grid is exact; only tails below 1e-15 are cut, so both bounds agree to ~1e-10
    assert up == pytest.approx(row["value"], rel=1e-9)
    assert lo == pytest.approx(row["value"], rel=1e-9)
    assert_bracket(lo, row["value"], up, rel=1e-12)


def test_randomized_response_million_compositions_exact_binomial():
    eps0, k = 0.01, 10**6
    composed = pld.randomized_response(eps0).self_compose(k)  # FFT path, ~16000 bins
    # exact: the loss is (2K - k) eps0 with K ~ Binomial(k, e^eps0/(1+e^eps0)) in both orders
    p_keep = 1.0 / (1.0 + math.exp(-eps0))
    j = np.arange(k + 1)
    pmf = stats.binom.pmf(j, k, p_keep)
    loss = (2 * j - k) * eps0
    for eps in (0.0, 5.0, 20.0, 40.0):
        exact = float(pmf @ -np.expm1(np.minimum(eps - loss, 0.0)))
        assert composed.delta(eps) == pytest.approx(exact, rel=1e-9, abs=1e-13)
        assert_bracket(composed.delta(eps, "lower"), exact, composed.delta(eps), rel=1e-9)


# ---------------------------------------------------------------------- item 5 (DP-SGD)
def _item5_rows(steps: set[int]) -> list[dict]:
    out = rows(item="5", library="dp_accounting", kind="tight_upper")
    return [r for r in out if r["params"]["steps"] in steps]


def _check_item5(row, dpsgd):
    composed = dpsgd(row["params"]["sigma"], row["params"]["steps"])
    up, lo = composed.epsilon(row["query"]), composed.epsilon(row["query"], "lower")
    ref = row["value"]
    assert up == pytest.approx(ref, rel=1e-4)  # acceptance: 1%
    assert (up - lo) / ref < 1e-2
    # the reference is a pessimistic (valid upper) value, so it cannot be below our lower bound
    assert lo <= ref
    # both orders matter and differ; the guarantee is their maximum
    e_pq, e_qp = composed.pq.epsilon(row["query"]), composed.qp.epsilon(row["query"])
    assert up == max(e_pq, e_qp)
    assert abs(e_pq - e_qp) > 1e-2 * ref


@pytest.mark.parametrize(
    "row", _item5_rows({14063}), ids=lambda r: f"s{r['params']['sigma']}-T{r['params']['steps']}"
)
def test_dpsgd_item5_sixty_epochs(row, dpsgd):
    _check_item5(row, dpsgd)


@pytest.mark.slow
@pytest.mark.parametrize(
    "row",
    _item5_rows({235, 3516, 7032}),
    ids=lambda r: f"s{r['params']['sigma']}-T{r['params']['steps']}",
)
def test_dpsgd_item5_sweep(row, dpsgd):
    _check_item5(row, dpsgd)


# ---------------------------------------------------------------------- item 7 (curve)
def test_dpsgd_tradeoff_item7(dpsgd):
    ref = item7_curve()
    alpha = np.array(ref["alpha"])
    composed = dpsgd(1.1, 3516)
    lower, upper = composed.tradeoff(), composed.tradeoff("upper")
    assert lower.kind == "bound" and upper.kind == "approximation"
    lo, up = lower(alpha), upper(alpha)
    assert np.all(lo <= up + 1e-15)
    assert np.max(up - lo) < 5e-3
    # the reference duality curve is a valid lower bound made from an eps grid of step 1e-3:
    # the exact curve lies above it and below our upper bound; ours is at least as tight.
    duality = np.array(ref["beta_pld_duality"])
    assert np.all(duality <= up + 1e-9)
    assert np.max(np.abs(lo - duality)) < 2e-5
    # Neyman-Pearson curves of the discretised orders (dp-accounting, step 1e-5): the column
    # "np_remove" is the P||Q order (P the base Gaussian), "np_remove_inverse" the Q||P order.
    # Tolerance 1e-9: the columns carry 12 digits and the reference pmf lost 1.5e-10 of mass.
    for order, column in (
        (composed.pq, "beta_pld_np_remove"),
        (composed.qp, "beta_pld_np_remove_inverse"),
    ):
        col = np.array(ref[column])
        o_lo, o_up = order.tradeoff()(alpha), order.tradeoff("upper")(alpha)
        assert np.all(col <= o_up + 1e-9)  # the reference is pessimistic: below the exact curve
        assert np.max(np.abs(o_lo - col)) < 1e-6
    np_min = np.array(ref["beta_pld_np_min"])
    ours_min = np.minimum(composed.pq.tradeoff()(alpha), composed.qp.tradeoff()(alpha))
    assert np.max(np.abs(ours_min - np_min)) < 1e-6
    # the symmetric curve is the convex hull of the minimum of the two orders
    assert np.all(lo <= ours_min + 1e-12)


# ---------------------------------------------------------------------- orders and shapes
@pytest.mark.parametrize(
    ("ratio", "base", "prime"),
    [
        (pld._gaussian_ratio(1.3, 1.0), pld._normal(0.0, 1.3), pld._normal(1.0, 1.3)),
        (pld._laplace_ratio(0.8, 1.0), pld._laplace(0.0, 0.8), pld._laplace(1.0, 0.8)),
    ],
    ids=["gaussian", "laplace"],
)
def test_symmetric_mechanisms_have_equal_orders(ratio, base, prime):
    """Gaussian and Laplace are symmetric: the Q||P order, built separately, has the law of
    the P||Q order."""
    both = pld._monotone_pld(ratio, base, prime, 1.0, 1e-3, "pair")
    assert not both.symmetric
    eps = np.linspace(0, 2, 41)
    np.testing.assert_allclose(both.pq.delta(eps), both.qp.delta(eps), rtol=1e-9, atol=1e-15)
    assert both.pq.epsilon(1e-3) == pytest.approx(both.qp.epsilon(1e-3), rel=1e-9)


@pytest.mark.parametrize("scale", [1e-200, 1e200, 1e300])
def test_gaussian_plds_depend_on_the_ratio_alone_at_any_scale(scale):
    # sigma**2 of sigma = 1e300 used to overflow (OverflowError) before the ratio was taken.
    for build in (
        pld.gaussian,
        lambda s, d: pld.poisson_subsampled_gaussian(s, rate=0.2, sensitivity=d),
    ):
        ref = build(1.0, 1.0)
        scaled = build(scale, scale)
        assert scaled.epsilon(1e-5) == pytest.approx(ref.epsilon(1e-5), rel=1e-12)
    assert pld.gaussian(1e300, 1.0).epsilon(1e-5) == 0.0


@pytest.mark.parametrize("sigma", [0.7, 2.0])
def test_subsampled_gaussian_single_step_matches_quadrature(sigma):
    q = 0.05
    sub = pld.poisson_subsampled_gaussian(sigma, rate=q)
    logp, logq = subsampled_gaussian_logs(sigma, q)
    for eps in (0.0, 0.01, 0.1, 0.5):
        d_pq = hockey_stick_quad(logp, logq, eps, [0.0, 0.5, 1.0])
        d_qp = hockey_stick_quad(logq, logp, eps, [0.0, 0.5, 1.0])
        if eps > 0:  # at eps = 0 both orders give the total variation distance
            assert d_pq != pytest.approx(d_qp, rel=1e-3)
        assert_bracket(sub.pq.delta(eps, "lower"), d_pq, sub.pq.delta(eps), rel=1e-8)
        assert_bracket(sub.qp.delta(eps, "lower"), d_qp, sub.qp.delta(eps), rel=1e-8)
        # exact at grid values of eps, a chord (second order in the step) in between
        assert sub.pq.delta(eps) == pytest.approx(d_pq, rel=1e-4, abs=1e-14)
        assert sub.qp.delta(eps) == pytest.approx(d_qp, rel=1e-4, abs=1e-14)
        assert sub.delta(eps) == max(sub.pq.delta(eps), sub.qp.delta(eps))


def test_subsampled_laplace_single_step_matches_quadrature():
    b, q = 0.7, 0.2
    sub = pld.poisson_subsampled_laplace(b, rate=q)

    def logp(y):
        return stats.laplace.logpdf(y, 0, b)

    def logq(y):
        return np.logaddexp(math.log1p(-q) + logp(y), math.log(q) + stats.laplace.logpdf(y, 1, b))

    for eps in (0.0, 0.05, 0.2):
        d_pq = hockey_stick_quad(logp, logq, eps, [0.0, 1.0])
        d_qp = hockey_stick_quad(logq, logp, eps, [0.0, 1.0])
        assert_bracket(sub.pq.delta(eps, "lower"), d_pq, sub.pq.delta(eps), rel=1e-8)
        assert_bracket(sub.qp.delta(eps, "lower"), d_qp, sub.qp.delta(eps), rel=1e-8)
        assert sub.delta(eps) == pytest.approx(max(d_pq, d_qp), rel=1e-6)


def test_subsampled_laplace_composition_brackets_rdp_free_reference():
    """Ten-fold composition of the subsampled Laplace against the exact composition of a fine
    binned version (a post-processing, so its delta is a lower bound) and the PLD upper bound."""
    b, q = 1.0, 0.1
    composed = pld.poisson_subsampled_laplace(b, rate=q).self_compose(10)
    edges = np.concatenate([[-np.inf], np.linspace(-30, 31, 20001), [np.inf]])
    p = np.diff(stats.laplace.cdf(edges, 0, b))
    pp = (1 - q) * p + q * np.diff(stats.laplace.cdf(edges, 1, b))
    binned = pld.discrete(p, pp, step=1e-4).self_compose(10)
    for eps in (0.1, 0.5, 1.0):
        assert binned.delta(eps, "lower") <= composed.delta(eps) + 1e-12
        assert composed.delta(eps, "lower") <= composed.delta(eps)
        assert composed.delta(eps) - binned.delta(eps, "lower") < 1e-3


def test_kind_and_protocol():
    g = pld.gaussian(1.0)
    assert isinstance(g, PrivacyProfile)
    assert g.kind == "bound"
    assert isinstance(g.delta(1.0), float)
    assert g.delta(np.array([0.0, 1.0])).shape == (2,)
    assert isinstance(g.tradeoff(), PiecewiseLinearTradeoff)


# ---------------------------------------------------------------------- brute force composition
@pytest.mark.parametrize("step", [None, 1e-5], ids=["default-step", "fft-step"])
def test_subsampled_discrete_composition_brute_force(step):
    """P vs (1 - q) P + q P' on three outcomes, composed four times, against enumeration of
    the 81 joint outcomes (the fine step forces the FFT path)."""
    p = np.array([0.5, 0.3, 0.2])
    p_prime = np.array([0.1, 0.2, 0.7])
    rate = 0.3
    q = (1 - rate) * p + rate * p_prime
    k = 4
    composed = pld.poisson_subsampled_discrete(p, p_prime, rate=rate, step=step).self_compose(k)
    pk = np.array([np.prod(c) for c in itertools.product(p, repeat=k)])
    qk = np.array([np.prod(c) for c in itertools.product(q, repeat=k)])
    for eps in (0.0, 0.1, 0.3, 0.6, 1.0):
        exact = exact_discrete_delta(pk, qk, eps)
        assert_bracket(
            composed.delta(eps, "lower"), exact, composed.delta(eps), rel=1e-9, abs_=1e-15
        )
        assert composed.delta(eps) - composed.delta(eps, "lower") < 1e-2 * exact + 1e-12
    # a PLD of a discrete pair with an impossible outcome has an atom at +inf
    with_zero = pld.discrete([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    assert with_zero.qp.inf_mass == pytest.approx(0.5)
    assert with_zero.delta(50.0) == pytest.approx(0.5)
    assert with_zero.epsilon(0.4) == math.inf


def test_composition_of_different_mechanisms_against_gdp():
    """Gaussian (sigma 2) composed with Gaussian (sigma 1) on one grid is exactly sqrt(5)/2-GDP."""
    step = 2e-4
    both = pld.gaussian(2.0, step=step).compose(pld.gaussian(1.0, step=step))
    mu = math.sqrt(1 / 4 + 1)
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    exact = gdp_delta(mu, eps)
    assert_bracket(both.delta(eps, "lower"), exact, both.delta(eps), rel=1e-9)
    np.testing.assert_allclose(both.delta(eps), exact, rtol=1e-6)
    with pytest.raises(ValueError, match="step"):
        pld.gaussian(2.0, step=1e-3).compose(pld.gaussian(1.0, step=2e-3))


# ---------------------------------------------------------------------- monotonicity, sanity
@pytest.mark.parametrize(
    "make",
    [
        lambda: pld.gaussian(0.8),
        lambda: pld.laplace(0.5),
        lambda: pld.poisson_subsampled_gaussian(0.9, rate=0.01).self_compose(100),
        lambda: pld.randomized_response(1.0, k=4).self_compose(7),
    ],
    ids=["gaussian", "laplace", "dpsgd100", "rr4"],
)
def test_delta_and_epsilon_are_monotone(make):
    p = make()
    eps = np.linspace(0, 12, 601)
    up, lo = p.delta(eps), p.delta(eps, "lower")
    assert np.all(np.isfinite(up)) and np.all(np.isfinite(lo))
    assert np.all(np.diff(up) <= 1e-15) and np.all(np.diff(lo) <= 1e-15)
    assert np.all(lo <= up)
    np.testing.assert_allclose(p.error(eps), up - lo)
    deltas = np.geomspace(1e-10, 0.5, 30)
    e_up = np.array([p.epsilon(d) for d in deltas])
    e_lo = np.array([p.epsilon(d, "lower") for d in deltas])
    assert np.all(np.diff(e_up) <= 1e-12) and np.all(np.diff(e_lo) <= 1e-12)
    assert np.all(e_lo <= e_up + 1e-12)
    # epsilon inverts delta: the upper delta at the upper epsilon is at most delta
    for d, e in zip(deltas, e_up, strict=True):
        assert p.delta(e) <= d + 1e-15  # absolute precision of delta is ~1e-16


def test_gaussian_tradeoff_brackets_gdp():
    mu = 1.3
    g = pld.gaussian(1 / mu)
    alpha = np.concatenate([[0.0], np.geomspace(1e-10, 0.5, 300), np.linspace(0.5, 1, 101)])
    exact = special.ndtr(special.ndtri(1 - alpha) - mu)
    lo, up = g.tradeoff()(alpha), g.tradeoff("upper")(alpha)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)
    assert np.max(up - lo) < 1e-3


def test_laplace_and_rr_tradeoff_closed_forms():
    eps0 = 1.0
    alpha = np.linspace(0, 1, 1001)
    # Laplace (docs/theory.md#tradeoff): three pieces
    exact = np.where(
        alpha < math.exp(-eps0) / 2,
        1 - math.exp(eps0) * alpha,
        np.where(
            alpha <= 0.5,
            math.exp(-eps0) / (4 * np.maximum(alpha, 1e-300)),
            math.exp(-eps0) * (1 - alpha),
        ),
    )
    lap = pld.laplace(1.0 / eps0)
    lo, up = lap.tradeoff()(alpha), lap.tradeoff("upper")(alpha)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)
    assert np.max(up - lo) < 1e-3
    # binary randomized response: f_{eps0, 0} exactly
    rr = pld.randomized_response(eps0).tradeoff()
    f = np.maximum.reduce(
        [np.zeros_like(alpha), 1 - math.exp(eps0) * alpha, math.exp(-eps0) * (1 - alpha)]
    )
    np.testing.assert_allclose(rr(alpha), f, atol=1e-12)


def test_from_tradeoff_and_compose_tradeoffs():
    # a piecewise-linear curve is reproduced exactly by its canonical pair
    eps, delta = 0.7, 0.02
    a = np.array([0.0, (1 - delta) / (1 + math.exp(eps)), 1.0 - delta, 1.0])
    b = np.array([1.0 - delta, (1 - delta) / (1 + math.exp(eps)), 0.0, 0.0])
    curve = from_points(a, b, kind="exact")
    p = pld.from_tradeoff(curve)
    grid = np.array([0.0, 0.3, 0.7, 1.0, 2.0])
    assert_bracket(p.delta(grid, "lower"), curve.delta(grid), p.delta(grid), rel=1e-9)
    # GDP composes exactly: G_1 (x) G_1.5 = G_sqrt(3.25) (DRS Corollary 2)
    composed = pld.compose_tradeoffs([gdp_curve(1.0), gdp_curve(1.5)])
    assert composed.kind == "bound"
    alpha = np.concatenate([np.geomspace(1e-9, 0.5, 200), np.linspace(0.5, 1, 101)])
    exact = special.ndtr(special.ndtri(1 - alpha) - math.sqrt(3.25))
    got = composed(alpha)
    assert np.all(got <= exact + 1e-12)
    assert np.max(exact - got) < 5e-5
    # ten-fold composition of f_{0.3,0} equals ten-fold randomized response
    rr_curve = pld.randomized_response(0.3).tradeoff()
    ten = pld.compose_tradeoffs([rr_curve] * 10)
    exact10 = pld.randomized_response(0.3).self_compose(10).tradeoff()
    assert np.all(ten(alpha) <= exact10(alpha) + 1e-12)
    assert np.max(exact10(alpha) - ten(alpha)) < 2e-3


# ---------------------------------------------------------------------- extreme parameters
def test_extreme_sigmas_are_finite_and_bracket_the_exact_values():
    for sigma in (0.05, 200.0):
        g = pld.gaussian(sigma)
        eps = np.array([0.0, 0.01, 1.0, 100.0, 300.0])
        exact = np.maximum(gdp_delta(1 / sigma, eps), 0.0)
        up, lo = g.delta(eps), g.delta(eps, "lower")
        assert np.all(np.isfinite(up)) and np.all(np.isfinite(lo))
        assert_bracket(lo, exact, up, rel=1e-9)
        e = gdp_eps(1 / sigma, 1e-5)
        assert_bracket(g.epsilon(1e-5, "lower"), e, g.epsilon(1e-5), rel=1e-9)
        assert g.epsilon(1e-5) == pytest.approx(e, rel=1e-3)


def test_tiny_sampling_rate():
    sub = pld.poisson_subsampled_gaussian(1.0, rate=1e-6)
    # delta(0) is the total variation, q * TV(N(0,1), N(1,1)) for the Q||P order
    tv = 1e-6 * (2 * special.ndtr(0.5) - 1)
    assert sub.delta(0.0) == pytest.approx(tv, rel=1e-3)
    assert_bracket(sub.delta(0.0, "lower"), tv, sub.delta(0.0), rel=1e-6)
    assert sub.epsilon(1e-5) == 0.0
    eps = sub.self_compose(100).epsilon(1e-8)
    assert np.isfinite(eps) and 0 < eps < 1e-2


def test_million_gaussian_compositions_coarsen_and_stay_tight():
    """10^6 compositions of sigma = 1000 is 1-GDP; the grid is coarsened to stay in memory."""
    g = pld.gaussian(1000.0)
    composed = g.self_compose(10**6)
    assert composed.step > g.step
    assert composed.pq.pmf.size <= pld.MAX_BINS
    e = gdp_eps(1.0, 1e-5)
    up, lo = composed.epsilon(1e-5), composed.epsilon(1e-5, "lower")
    assert_bracket(lo, e, up, rel=1e-9)
    assert up == pytest.approx(e, rel=1e-3)
    assert (up - lo) / e < 2e-2


@pytest.mark.parametrize(
    "make",
    [
        lambda: pld.gaussian(1e-3),
        lambda: pld.gaussian(1e6),
        lambda: pld.laplace(1e-5),
        lambda: pld.laplace(1e5),
        lambda: pld.laplace(1.0, step=0.003),
        lambda: pld.poisson_subsampled_gaussian(1.0, rate=1e-12),
        lambda: pld.poisson_subsampled_gaussian(0.1, rate=0.01),
        lambda: pld.poisson_subsampled_laplace(0.1, rate=1e-9),
        lambda: pld.randomized_response(50.0),
        lambda: pld.randomized_response(2.0, k=1000),
        lambda: pld.discrete([0.5, 0.5 - 1e-300, 1e-300], [1e-300, 0.5, 0.5 - 1e-300]),
        lambda: pld.discrete([1.0, 0.0], [0.0, 1.0]),
    ],
    ids=[
        "gauss-sigma1e-3",
        "gauss-sigma1e6",
        "laplace-b1e-5",
        "laplace-b1e5",
        "laplace-offgrid-step",
        "subsampled-rate1e-12",
        "subsampled-sigma0.1",
        "subsampled-laplace-rate1e-9",
        "rr-eps50",
        "rr-k1000",
        "discrete-ratio1e300",
        "discrete-disjoint",
    ],
)
def test_extreme_parameters_never_give_nan(make):
    p = make()
    eps = np.array([0, 1e-9, 1e-3, 0.1, 1, 10, 100, 1e4, np.inf])
    for obj in (p, p.self_compose(3)):
        up, lo = obj.delta(eps), obj.delta(eps, "lower")
        assert np.all(np.isfinite(up)) and np.all(np.isfinite(lo))
        assert np.all(np.diff(up) <= 1e-15) and np.all(lo <= up + 1e-15)
        for d in (0.5, 1e-5):
            e_up, e_lo = obj.epsilon(d), obj.epsilon(d, "lower")
            assert not math.isnan(e_up) and 0 <= e_lo <= e_up
        assert np.all(np.isfinite(obj.tradeoff()(np.linspace(0, 1, 11))))


def test_delta_below_resolution_is_refused_not_nan():
    g = pld.gaussian(1.0)
    with pytest.raises(ValueError, match="delta must exceed the numerical resolution"):
        g.epsilon(1e-300)
    lower = g.epsilon(1e-300, "lower")
    assert np.isfinite(lower) and lower > 0
    assert g.delta(np.inf) <= 1e-15
    assert g.delta(1e6, "lower") == 0.0


# ---------------------------------------------------------------------- the bracket itself
def test_bracket_shrinks_like_sqrt_of_compositions():
    """With a fixed step the eps bracket after T compositions grows like sqrt(T) * step."""
    base = pld.gaussian(30.0, step=1e-4)
    widths = {}
    for t in (100, 1600):
        c = base.self_compose(t)
        widths[t] = c.epsilon(1e-5) - c.epsilon(1e-5, "lower")
        e = gdp_eps(math.sqrt(t) / 30.0, 1e-5)
        assert_bracket(c.epsilon(1e-5, "lower"), e, c.epsilon(1e-5), rel=1e-9)
    assert widths[1600] / widths[100] < 6.0  # sqrt(16) = 4 plus log factors; linear would be 16
    assert widths[1600] < 1600 * 1e-4 / 4


def test_rounding_summary_is_consistent():
    sub = pld.poisson_subsampled_gaussian(1.1, rate=Q_SGD)
    r = sub.pq.rounding
    h = sub.step
    assert r.dominating and r.low == -h and r.high == h
    assert 0 <= r.mean < h**2  # connect-the-dots keeps E[e^-L]: the mean error is second order
    # the rounding mean is E[l_grid] - KL(P||Q); check KL against independent quadrature
    logp, logq = subsampled_gaussian_logs(1.1, Q_SGD)
    kl, _ = integrate.quad(
        lambda y: math.exp(logp(y)) * (logp(y) - logq(y)), -15, 15, epsabs=1e-16, limit=400
    )
    grid_mean = float(sub.pq.losses @ sub.pq.pmf)
    assert grid_mean - kl == pytest.approx(r.mean, abs=1e-13)
    two = sub.pq.compose(sub.pq).rounding
    assert two.mean == pytest.approx(2 * r.mean) and two.var == pytest.approx(2 * r.var)


def test_laplace_loss_moments_closed_form_matches_quadrature():
    b = 0.6
    eps0 = 1 / b
    ratio = pld._laplace_ratio(b, 1.0)
    m1, m2, tol = pld._loss_moments(lambda y: -ratio.z(y), pld._laplace(0.0, b), ratio.kinks)
    assert m1 == pytest.approx(eps0 + math.expm1(-eps0), abs=1e-12)
    assert m2 == pytest.approx(eps0**2 - 2 * eps0 + 4 - (2 * eps0 + 4) * math.exp(-eps0), rel=1e-9)
    assert tol < 1e-10


# ---------------------------------------------------------------------- auto step
def test_auto_step():
    h1 = pld.auto_step(1, loss_std=0.01, loss_mean=1e-5)
    h2 = pld.auto_step(10_000, loss_std=0.01, loss_mean=1e-5)
    assert 0 < h1 < 1e-4 and 0 < h2 < 1e-4
    assert 0.2 < h2 / h1 < 10  # roughly independent of the number of compositions
    capped = pld.auto_step(10**8, loss_std=0.01, max_bins=10**4)
    assert capped >= 20 * 0.01 * 1e4 / 1e4
    # the default step delivers a bracket below 0.5% of eps for a typical DP-SGD run
    sub = pld.poisson_subsampled_gaussian(1.0, rate=0.01).self_compose(1000)
    e_up, e_lo = sub.epsilon(1e-5), sub.epsilon(1e-5, "lower")
    assert (e_up - e_lo) / e_up < 5e-3


# ---------------------------------------------------------------------- argument checks
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: pld.gaussian(0.0), "sigma"),
        (lambda: pld.gaussian(-1.0), "sigma"),
        (lambda: pld.gaussian(math.nan), "sigma"),
        (lambda: pld.gaussian(1.0, 0.0), "sensitivity"),
        (lambda: pld.gaussian(1.0, step=0.0), "step"),
        (lambda: pld.gaussian(1e-6), "sensitivity/sigma"),
        (lambda: pld.laplace(0.0), "scale"),
        (lambda: pld.randomized_response(0.0), "eps"),
        (lambda: pld.randomized_response(1.0, k=1), "k"),
        (lambda: pld.poisson_subsampled_gaussian(1.0, rate=0.0), "rate"),
        (lambda: pld.poisson_subsampled_gaussian(1.0, rate=1.5), "rate"),
        (lambda: pld.poisson_subsampled_laplace(1.0, rate=-0.1), "rate"),
        (lambda: pld.discrete([0.5, 0.6], [0.5, 0.5]), "p"),
        (lambda: pld.discrete([0.5, 0.5], [1.0]), "p and q"),
        (lambda: pld.discrete([0.5, 0.5], [0.1, 0.9], step=1e-9), "step"),
        (lambda: pld.poisson_subsampled_discrete([1.0], [0.5, 0.5], rate=0.1), "p and p_prime"),
        (lambda: pld.gaussian(1.0).delta(-0.1), "eps"),
        (lambda: pld.gaussian(1.0).delta(math.nan), "eps"),
        (lambda: pld.gaussian(1.0).delta(1.0, bound="middle"), "bound"),
        (lambda: pld.gaussian(1.0).epsilon(1.5), "delta"),
        (lambda: pld.gaussian(1.0).self_compose(0), "n"),
        (lambda: pld.gaussian(1.0).compose("x"), "other"),
        (lambda: pld.gaussian(1.0).tradeoff("tight"), "bound"),
        (lambda: pld.from_tradeoff("curve"), "curve"),
        (lambda: pld.compose_tradeoffs([]), "curves"),
        (lambda: pld.auto_step(0), "compositions"),
        (lambda: pld.auto_step(10, loss_std=0.0), "loss_std"),
    ],
)
def test_wrong_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_a_billion_compositions_draw_their_curve_instead_of_overflowing():
    """DP-SGD's subsampled Gaussian composed 10^9 times (``dpaudit scores --one-run --family
    dpsgd --steps 99999999999`` composes 10^11): the vertices' shift exceeds e^709, which used to
    raise OverflowError. Every vertex but alpha = 0 then lies beyond alpha = 1, so the lower
    bound is cut there: it stays below the upper bound of the same PLD, a valid curve."""
    composed = pld.poisson_subsampled_gaussian(5.0, rate=0.1).self_compose(10**9)
    lower, upper = composed.tradeoff("lower"), composed.tradeoff("upper")
    alpha = np.linspace(0.0, 1.0, 101)
    assert np.all(np.isfinite(lower(alpha))) and np.all(lower(alpha) <= upper(alpha) + 1e-12)
    assert np.all(lower(alpha) <= 1.0 - alpha + 1e-12)
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 9007199254740992\]"):
        composed.self_compose(10**40)
