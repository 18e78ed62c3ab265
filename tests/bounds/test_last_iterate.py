"""The last-iterate PLD of DP-SGD and the Gaussian-mixture PLD behind it, against independent
values: the Gaussian closed form at ``q = 1``, quadrature of the mixture's hockey-stick
divergence at ``q < 1``, and the composition of every step, which it must never exceed.

All checks are deterministic (no Monte Carlo): they cannot fail by chance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpaudit.bounds import pld
from dpaudit.bounds.gaussian_dp import gdp, gdp_delta, gdp_epsilon
from dpaudit.mechanisms import DPSGD

EPS = np.array([0.0, 0.1, 0.3, 0.7, 1.0, 1.5, 2.5, 4.0])


def _mixture_delta(eps: float, steps: int, rate: float, sigma: float) -> float:
    """``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))`` of ``P = N(0, T sigma^2)`` and
    ``Q = sum_k Bin(k; T, q) N(k, T sigma^2)`` by adaptive quadrature, split where the two
    densities cross (the integrand's kink)."""
    s = sigma * math.sqrt(steps)
    k = np.arange(steps + 1)
    w = stats.binom.pmf(k, steps, rate)

    def p(y: float) -> float:
        return stats.norm.pdf(y, 0.0, s)

    def q(y: float) -> float:
        return float(w @ stats.norm.pdf(y, k, s))

    lo, hi = -12.0 * s, steps + 12.0 * s
    out = []
    for first, second in ((q, p), (p, q)):

        def gap(y: float, a=first, b=second) -> float:
            return a(y) - math.exp(eps) * b(y)

        grid = np.linspace(lo, hi, 2001)
        values = np.array([gap(y) for y in grid])
        crossings = [
            optimize.brentq(gap, grid[i], grid[i + 1])
            for i in np.flatnonzero(np.sign(values[:-1]) != np.sign(values[1:]))
        ]
        edges = [lo, *crossings, hi]
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            mid = 0.5 * (a + b)
            if gap(mid) > 0:
                total += integrate.quad(gap, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
        out.append(total)
    return max(out)


def test_q_one_is_the_gaussian_mechanism_with_mu_sqrt_t_over_sigma():
    # Bin(T, 1) = T: N(T, T sigma^2) against N(0, T sigma^2), i.e. G_mu with mu = sqrt(T)/sigma
    for sigma, steps in ((1.0, 100), (2.0, 30), (0.7, 8)):
        mu = math.sqrt(steps) / sigma
        curve = pld.last_iterate(sigma, steps, rate=1.0)
        exact = gdp_delta(EPS, mu)
        assert (curve.delta(EPS, "lower") <= exact + 1e-12).all()
        assert (curve.delta(EPS, "upper") >= exact - 1e-12).all()
        assert np.max(curve.delta(EPS, "upper") - curve.delta(EPS, "lower")) < 2e-3
        reference = gdp_epsilon(1e-5, mu)
        assert curve.epsilon(1e-5, "lower") <= reference <= curve.epsilon(1e-5, "upper")
        alpha = np.geomspace(1e-6, 0.9, 40)
        low, high = curve.tradeoff("lower")(alpha), curve.tradeoff("upper")(alpha)
        assert (low <= gdp(mu)(alpha) + 1e-12).all() and (gdp(mu)(alpha) <= high + 1e-12).all()


def test_a_single_atom_mixture_is_the_gaussian_pld():
    mixture = pld.gaussian_mixture([1.5], [1.0], sigma=1.0)
    exact = gdp_delta(EPS, 1.5)
    assert (mixture.delta(EPS, "lower") <= exact + 1e-12).all()
    assert (mixture.delta(EPS, "upper") >= exact - 1e-12).all()


@pytest.mark.parametrize("sigma, steps, rate", [(0.7, 40, 0.1), (1.0, 60, 0.05), (0.5, 20, 0.3)])
def test_q_below_one_matches_quadrature_of_the_mixture(sigma, steps, rate):
    curve = pld.last_iterate(sigma, steps, rate=rate)
    for eps in (0.0, 0.2, 0.5, 1.0, 2.0):
        reference = _mixture_delta(eps, steps, rate, sigma)
        assert curve.delta(eps, "lower") - 1e-10 <= reference <= curve.delta(eps, "upper") + 1e-10
    # the bracket is narrow: the check above has teeth
    assert np.max(curve.delta(EPS, "upper") - curve.delta(EPS, "lower")) < 5e-3


def test_the_two_orders_differ_and_the_larger_delta_is_taken():
    curve = pld.last_iterate(0.7, 40, rate=0.1)
    pq = curve.pq.delta(0.5, "upper")
    qp = curve.qp.delta(0.5, "upper")
    assert pq != pytest.approx(qp, rel=1e-3)
    assert curve.delta(0.5, "upper") == max(pq, qp)


@pytest.mark.parametrize("sigma, steps, rate", [(1.0, 200, 0.01), (0.8, 300, 0.02), (2.0, 50, 0.2)])
def test_the_last_iterate_is_never_less_private_than_the_composition(sigma, steps, rate):
    """The final model is a post-processing of the updates, so its curve lies above the
    composition of every step at every alpha. Checked where the certified brackets resolve it:
    the last iterate's upper delta against the composition's lower delta at every eps in
    [0, 8] (which fixes both curves wherever their slopes are at most -1), and the last
    iterate's lower trade-off bound against the composition's upper one for alpha <= 0.3
    (beyond, the composition's upper curve is too coarse to separate them)."""
    mechanism = DPSGD(sigma=sigma, rate=rate, steps=steps)
    last, composed = mechanism.theory("last_iterate"), mechanism.theory("pld")
    eps = np.linspace(0.0, 8.0, 81)
    assert (last.delta(eps, "upper") <= composed.delta(eps, "lower") + 1e-12).all()
    alpha = np.concatenate([np.geomspace(1e-9, 1e-2, 200), np.linspace(0.01, 0.3, 100)])
    assert (last.tradeoff("lower")(alpha) >= composed.tradeoff("upper")(alpha) - 1e-9).all()
    assert last.epsilon(1e-5, "upper") < composed.epsilon(1e-5, "lower")


def test_the_documented_figures_last_iterate_against_composition():
    """eps(1e-5) of the last iterate and of the composition (docs/guide/dpsgd.md states them):
    q = 0.01, sigma = 1, T = 1000: 1.278 against 1.828; sigma = 0.8, T = 2500: 2.700 against
    4.77 to 4.79. The brackets are the certified lower and upper values."""
    cases = [
        ((1.0, 1000), (1.277, 1.278), (1.821, 1.829)),
        ((0.8, 2500), (2.698, 2.700), (4.76, 4.79)),
    ]
    for (sigma, steps), last_range, composed_range in cases:
        mechanism = DPSGD(sigma=sigma, rate=0.01, steps=steps)
        last = mechanism.theory("last_iterate")
        lo, hi = last.epsilon(1e-5, "lower"), last.epsilon(1e-5, "upper")
        assert last_range[0] <= lo <= hi <= last_range[1]
        composed = mechanism.theory("pld")
        lo, hi = composed.epsilon(1e-5, "lower"), composed.epsilon(1e-5, "upper")
        assert composed_range[0] <= lo <= hi <= composed_range[1]


def test_insertions_at_some_steps_are_a_binomial_over_those_steps():
    every_step = pld.last_iterate(1.0, 100, rate=0.1)
    some = pld.last_iterate(1.0, 100, rate=0.1, insertions=25)
    assert some.epsilon(1e-5) < every_step.epsilon(1e-5)
    # 25 insertions among 100 steps: Bin(25, q) against noise of 100 steps, which is the
    # 25-step last iterate with every shift halved (sigma doubled)
    same = pld.last_iterate(2.0, 25, rate=0.1)
    assert some.epsilon(1e-5) == pytest.approx(same.epsilon(1e-5), rel=2e-3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: pld.gaussian_mixture([-1.0], [1.0]), "non-negative"),
        (lambda: pld.gaussian_mixture([1.0, 2.0], [1.0]), "same length"),
        (lambda: pld.gaussian_mixture([1.0, 2.0], [0.5, 0.6]), "weights must sum to 1"),
        (lambda: pld.gaussian_mixture([1.0], [1.0], sigma=0.0), "sigma"),
        (lambda: pld.last_iterate(1.0, 10, rate=0.0), "rate"),
        (lambda: pld.last_iterate(1.0, 10, rate=0.1, insertions=11), "insertions must be at most"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
