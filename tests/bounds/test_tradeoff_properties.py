"""Property tests: every constructor yields a trade-off function with a consistent dual.

For random parameters (including extreme legal ones) every curve must be convex,
non-increasing, between 0 and ``1 - alpha`` (DRS Proposition 1); ``delta(eps)`` must lie in
[0, 1] and be non-increasing; ``epsilon(delta(eps)) == eps`` wherever ``delta`` is strictly
decreasing; ``epsilon`` must be finite or ``inf`` (never NaN) and non-increasing in ``delta``.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit.bounds.gaussian_dp import berry_esseen, gdp, gdp_clt
from dpaudit.bounds.tradeoff import (
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

GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 1001), np.geomspace(1e-12, 1e-3, 60)]))
UNIFORM = np.linspace(0.0, 1.0, 1001)
EPS = np.concatenate([np.linspace(0.0, 20.0, 81), [50.0, 1e3]])

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

eps_values = st.one_of(st.sampled_from([0.0, 1e-8, 50.0]), st.floats(0.0, 50.0))
delta_values = st.one_of(st.sampled_from([0.0, 1e-300, 1e-12, 1.0]), st.floats(0.0, 1.0))
mu_values = st.one_of(
    st.sampled_from([1e-6, 40.0]), st.floats(-6.0, math.log10(40.0)).map(lambda x: 10.0**x)
)
probabilities = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))


@st.composite
def pmf_pairs(draw, max_size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(2, max_size))
    weights = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))
    p = np.array(draw(st.lists(weights, min_size=n, max_size=n)))
    q = np.array(draw(st.lists(weights, min_size=n, max_size=n)))
    p[draw(st.integers(0, n - 1))] += 0.5  # both non-zero
    q[draw(st.integers(0, n - 1))] += 0.5
    return p / p.sum(), q / q.sum()


def mixture(base: TradeoffCurve, p: float) -> TradeoffCurve:
    """A non-symmetric trade-off function without closed forms: p f + (1 - p) Id."""
    return TradeoffCurve(lambda a: p * base._fn(a) + (1 - p) * (1 - a), name="mixture")


@st.composite
def curves(draw) -> TradeoffCurve:
    which = draw(
        st.sampled_from(
            [
                "identity",
                "approx_dp",
                "laplace",
                "rr",
                "gdp",
                "gdp_clt",
                "berry_esseen",
                "discrete",
                "from_delta",
                "points",
                "symmetrize",
                "subsample",
                "compose",
            ]
        )
    )
    if which == "identity":
        return identity()
    if which == "approx_dp":
        return approx_dp(draw(eps_values), draw(delta_values))
    if which == "laplace":
        return laplace_tradeoff(draw(eps_values))
    if which == "rr":
        return randomized_response_tradeoff(draw(eps_values), draw(st.integers(2, 50)))
    if which == "gdp":
        return gdp(draw(mu_values))
    if which == "gdp_clt":
        return gdp_clt(
            draw(st.floats(1e-4, 1.0)),
            draw(st.floats(0.5, 10.0)),
            draw(st.integers(1, 10**5)),
            sampling=draw(st.sampled_from(["poisson", "fixed"])),
        )
    if which == "berry_esseen":
        return berry_esseen(
            draw(st.floats(1e-3, 0.5)), draw(st.floats(0.5, 5.0)), draw(st.integers(1, 10**5))
        )
    if which == "discrete":
        return from_discrete(*draw(pmf_pairs()))
    if which == "from_delta":
        n = draw(st.integers(1, 12))
        eps = draw(st.lists(st.floats(0.0, 20.0), min_size=n, max_size=n))
        delta = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
        return from_delta(eps, delta)
    if which == "points":
        n = draw(st.integers(1, 30))
        a = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
        b = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
        return from_points(np.array(a), np.array(b))
    if which == "symmetrize":
        if draw(st.booleans()):
            return symmetrize(from_discrete(*draw(pmf_pairs())))
        return symmetrize(mixture(gdp(draw(st.floats(0.1, 6.0))), draw(st.floats(0.05, 0.95))))
    if which == "subsample":
        base = draw(st.sampled_from(["gdp", "approx_dp", "laplace", "discrete", "mixture"]))
        p = draw(probabilities)
        if base == "gdp":
            return subsample(gdp(draw(mu_values)), p)
        if base == "approx_dp":
            return subsample(approx_dp(draw(st.floats(0.0, 10.0)), draw(delta_values)), p)
        if base == "laplace":
            return subsample(laplace_tradeoff(draw(st.floats(0.0, 10.0))), p)
        if base == "discrete":
            return subsample(from_discrete(*draw(pmf_pairs())), p)
        return subsample(mixture(gdp(draw(st.floats(0.1, 4.0))), 0.5), p)
    mus = draw(st.lists(st.floats(0.0, 5.0), min_size=1, max_size=5))
    return compose(*[gdp(m) for m in mus])


@SETTINGS
@given(curves())
def test_curves_are_trade_off_functions(curve):
    values = curve(GRID)
    assert np.all(np.isfinite(values))
    assert np.all((values >= 0.0) & (values <= 1.0))
    assert np.all(values <= 1.0 - GRID + 1e-15)
    assert np.all(np.diff(values) <= 1e-12)
    u = curve(UNIFORM)
    second = u[:-2] + u[2:] - 2.0 * u[1:-1]
    assert np.all(second >= -1e-11), f"not convex: {second.min()}"


@SETTINGS
@given(curves())
def test_delta_is_a_non_increasing_probability(curve):
    d = curve.delta(EPS)
    assert np.all(np.isfinite(d))
    assert np.all((d >= 0.0) & (d <= 1.0))
    assert np.all(np.diff(d) <= 1e-14)
    # delta(eps) = 1 - inf (e^eps alpha + f(alpha)) can be no smaller than any grid value gives
    for e in (0.0, 0.5, 2.0):
        grid_bound = 1.0 - np.min(math.exp(e) * GRID + curve(GRID))
        assert float(curve.delta(e)) >= grid_bound - 1e-12


@SETTINGS
@given(curves(), st.floats(0.0, 15.0))
def test_epsilon_inverts_delta_where_delta_is_strictly_decreasing(curve, eps):
    d = float(curve.delta(eps))
    h = 1e-4 * max(1.0, eps)
    if d < 1e-8 or d - float(curve.delta(eps + h)) < 1e-9:
        return  # flat (or negligible) from eps on: epsilon(d) is the start of the flat part
    assert abs(curve.epsilon(d) - eps) <= 1e-6 * max(1.0, eps)


@SETTINGS
@given(curves())
def test_epsilon_is_monotone_and_never_nan_down_to_1e_300(curve):
    deltas = [0.5, 1e-3, 1e-10, 1e-100, 1e-300]
    eps = np.array([curve.epsilon(d) for d in deltas])
    assert not np.isnan(eps).any()
    assert np.all((eps >= 0.0) & ((eps < 1e4) | (eps == math.inf)))
    assert np.all(eps[1:] >= eps[:-1])
