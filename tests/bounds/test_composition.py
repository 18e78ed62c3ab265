"""Tests of dpaudit.bounds.composition: basic, advanced, zCDP and optimal (KOV) composition, and
amplification by subsampling.

The exact composition is checked against the pinned exact values of k-fold randomized response
(item 3), against brute-force enumeration of the product of KOV's four-point pair, against KOV's
closed form at the lattice points and against an independent binomial sum for large k.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from dpaudit.bounds.composition import (
    AdvancedComposition,
    OptimalComposition,
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    optimal_composition,
    zcdp_composition,
)
from dpaudit.bounds.rdp import ZCDP
from dpaudit.mechanisms.base import PrivacyProfile
from tests.reference import rows


def four_point_pair(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The pair every (eps, delta)-DP pair post-processes from (KOV 2015, Theorem 2.1)."""
    e = math.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    return p, p[::-1].copy()


def product_pair(eps: float, delta: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Masses of all 4^k outcomes of the k-fold product pair."""
    p, q = four_point_pair(eps, delta)
    outcomes = np.array(list(itertools.product(range(4), repeat=k)))
    return p[outcomes].prod(axis=1), q[outcomes].prod(axis=1)


def hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def discrete_tradeoff(p: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Exact T(P, Q) of two discrete distributions (docs/theory.md#tradeoff): reject D on
    outcomes in
    order of decreasing q/p, join the vertices linearly."""
    with np.errstate(divide="ignore"):
        ratio = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    a = np.concatenate([[0.0], np.cumsum(p[order])])
    b = np.concatenate([[1.0], 1.0 - np.cumsum(q[order])])
    a, b = np.append(a, 1.0), np.append(b, 0.0)
    # at alpha = 0 the curve is the lowest beta reachable without type I error
    keep = np.append(np.diff(a) > 0, True)
    return np.interp(alpha, a[keep], b[keep])


ALPHA = np.unique(np.concatenate([[0.0], np.geomspace(1e-9, 0.5, 80), np.linspace(0.5, 1, 81)]))


# --------------------------------------------------------------------------------------------
# Optimal composition (Kairouz, Oh & Viswanath 2015)
# --------------------------------------------------------------------------------------------

ITEM3 = rows(item="3")


@pytest.mark.parametrize("row", ITEM3, ids=lambda r: f"{r['setting']}-{r['quantity']}-{r['query']}")
def test_kov_with_zero_delta_is_exact_composed_randomized_response(row):
    """k-fold binary randomized response is the dominating pair of k-fold (eps0, 0)-DP, so KOV
    with delta = 0 reproduces its exact binomial delta(eps) and eps(delta)."""
    params = row["params"]
    kov = optimal_composition(params["eps0"], 0.0, params["k"])
    if row["quantity"] == "delta":
        assert kov.delta(row["query"]) == pytest.approx(row["value"], rel=1e-9, abs=1e-15)
    else:
        assert kov.epsilon(row["query"]) == pytest.approx(row["value"], rel=1e-9)


def test_item3_covers_k_up_to_100():
    assert {r["params"]["k"] for r in ITEM3} == {1, 10, 100}
    assert {r["quantity"] for r in ITEM3} == {"delta", "eps"}


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.3, 0.01, 4), (1.0, 1e-3, 5), (0.05, 0.1, 3)])
def test_kov_matches_brute_force_product(eps, delta, k):
    p, q = product_pair(eps, delta, k)
    kov = optimal_composition(eps, delta, k)
    grid = np.concatenate(
        [np.linspace(0, k * eps * 1.2, 37), (k - 2 * np.arange(k // 2 + 1)) * eps]
    )
    for e in grid:
        expected = max(hockey_stick(p, q, e), hockey_stick(q, p, e))
        assert kov.delta(e) == pytest.approx(expected, rel=1e-11, abs=1e-15)
    curve = kov.tradeoff()
    assert curve(ALPHA) == pytest.approx(discrete_tradeoff(p, q, ALPHA), abs=1e-12)
    # the pair is symmetric: T(Q, P) is the same curve
    assert curve(ALPHA) == pytest.approx(discrete_tradeoff(q, p, ALPHA), abs=1e-12)
    assert curve.kind == "bound"


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.1, 1e-6, 30), (0.7, 1e-3, 15), (2.0, 0.0, 8)])
def test_kov_closed_form_at_lattice_points(eps, delta, k):
    """Theorem 3.3 of KOV: ((k-2i) eps, 1 - (1-delta)^k (1 - delta_i))-DP with
    delta_i = sum_{l<i} C(k,l) (e^((k-l) eps) - e^((k-2i+l) eps)) / (1 + e^eps)^k."""
    kov = optimal_composition(eps, delta, k)
    for i in range(k // 2 + 1):
        delta_i = (
            sum(
                math.comb(k, m) * (math.exp((k - m) * eps) - math.exp((k - 2 * i + m) * eps))
                for m in range(i)
            )
            / (1 + math.exp(eps)) ** k
        )
        expected = 1 - (1 - delta) ** k * (1 - delta_i)
        assert kov.delta((k - 2 * i) * eps) == pytest.approx(expected, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize(("eps", "k"), [(0.01, 10**4), (0.2, 2000)])
def test_kov_large_k_matches_independent_binomial_sum(eps, k):
    kov = optimal_composition(eps, 0.0, k)
    flips = np.arange(k + 1)
    log_p = stats.binom.logpmf(flips, k, 1 / (1 + math.exp(eps)))
    loss = (k - 2 * flips) * eps
    for e in [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]:
        gap = loss - e
        pos = gap > 0
        expected = np.exp(special.logsumexp(log_p[pos] + np.log(-np.expm1(-gap[pos]))))
        assert kov.delta(e) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_kov_k_one_is_the_guarantee_itself():
    kov = optimal_composition(0.8, 1e-4, 1)
    assert kov.delta(0.8) == pytest.approx(1e-4, rel=1e-12)
    assert kov.epsilon(1e-4) == pytest.approx(0.8, rel=1e-12)
    assert kov.delta(1.0) == pytest.approx(1e-4, rel=1e-12)


def test_kov_refuses_more_runs_than_its_sums_can_hold():
    # k = 10^9 used to allocate arrays of 10^9 terms for minutes (dpaudit bounds composed ...)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 10000000\]"):
        optimal_composition(1.0, 0.0, OptimalComposition.max_k + 1)


def test_kov_profile_properties():
    kov = optimal_composition(0.1, 1e-7, 200)
    eps = np.linspace(0, 25, 501)
    deltas = kov.delta(eps)
    assert isinstance(deltas, np.ndarray) and (np.diff(deltas) <= 0).all()
    assert deltas[-1] == pytest.approx(1 - (1 - 1e-7) ** 200, rel=1e-9)
    atom = -math.expm1(200 * math.log1p(-1e-7))  # mass of infinite privacy loss, ~2e-5
    for target in [1e-3, 1e-4, 3e-5]:
        assert kov.delta(kov.epsilon(target)) == pytest.approx(target, rel=1e-9)
    assert kov.epsilon(atom * (1 + 1e-6)) <= 200 * 0.1
    assert kov.epsilon(atom * (1 - 1e-9)) == math.inf
    assert kov.epsilon(1.0) == 0.0
    # the curve's own delta(eps) is the same profile
    assert kov.tradeoff().delta(eps) == pytest.approx(deltas, abs=1e-12)
    assert isinstance(kov, PrivacyProfile) and isinstance(kov, OptimalComposition)


def test_kov_extremes_finite_and_monotone():
    kov = optimal_composition(0.01, 0.0, 10**6)
    eps = np.array([0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 2e4, np.inf])
    deltas = kov.delta(eps)
    assert np.isfinite(deltas).all() and (np.diff(deltas) <= 0).all() and deltas[-1] == 0.0
    values = [kov.epsilon(d) for d in (1e-3, 1e-5, 1e-300)]
    assert np.isfinite(values).all() and values[0] < values[1] < values[2] <= 1e4
    beta = kov.tradeoff()(ALPHA)
    assert np.isfinite(beta).all() and (np.diff(beta) <= 1e-15).all()
    zero = optimal_composition(0.0, 0.0, 5)
    assert zero.delta(0.0) == 0.0 and zero.epsilon(1e-9) == 0.0
    vacuous = optimal_composition(0.5, 1.0, 3)
    assert vacuous.delta(10.0) == 1.0 and vacuous.epsilon(0.5) == math.inf
    assert not vacuous.tradeoff()(ALPHA).any()


# --------------------------------------------------------------------------------------------
# Basic, advanced and zCDP composition
# --------------------------------------------------------------------------------------------


def test_basic_composition_closed_form():
    assert basic_composition([0.1, 0.2, 0.3], [1e-6, 0.0, 2e-6]) == pytest.approx((0.6, 3e-6))
    assert basic_composition([1.0] * 3, [0.5] * 3)[1] == 1.0
    kov = optimal_composition(0.3, 1e-6, 10)
    eps, delta = basic_composition([0.3] * 10, [1e-6] * 10)
    assert kov.epsilon(delta) <= eps * (1 + 1e-12)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [10, 100, 1000])
@pytest.mark.parametrize("delta_prime", [1e-5, 1e-9])
def test_advanced_and_zcdp_composition_are_not_better_than_optimal(eps, k, delta_prime):
    delta = 1e-8
    eps_adv, delta_adv = advanced_composition(eps, delta, k, delta_prime)
    assert delta_adv == pytest.approx(k * delta + delta_prime)
    assert eps_adv >= optimal_composition(eps, delta, k).epsilon(delta_adv) * (1 - 1e-12)
    eps_z, delta_z = zcdp_composition(eps, k, delta_prime)
    assert delta_z == delta_prime
    assert eps_z >= optimal_composition(eps, 0.0, k).epsilon(delta_prime) * (1 - 1e-12)


def test_advanced_composition_closed_form():
    eps, delta, k, dp = 0.1, 1e-7, 50, 1e-6
    expected = eps * math.sqrt(2 * k * math.log(1 / dp)) + k * eps * (math.exp(eps) - 1)
    assert advanced_composition(eps, delta, k, dp) == pytest.approx((expected, k * delta + dp))


def test_zcdp_composition_closed_form_and_consistency():
    eps, k, dp = 0.2, 40, 1e-6
    expected = k * eps**2 / 2 + eps * math.sqrt(2 * k * math.log(1 / dp))
    assert zcdp_composition(eps, k, dp) == pytest.approx((expected, dp))
    rho = ZCDP(k * eps**2 / 2)
    assert zcdp_composition(eps, k, dp)[0] == pytest.approx(rho.epsilon(dp, "simple"), rel=1e-14)
    assert rho.epsilon(dp) <= expected  # the improved conversion is never worse


def test_advanced_composition_profile():
    adv = AdvancedComposition(0.1, 1e-8, 100)
    for delta_total in [1e-5, 1e-3]:
        eps = adv.epsilon(delta_total)
        assert eps == pytest.approx(advanced_composition(0.1, 1e-8, 100, delta_total - 1e-6)[0])
        assert adv.delta(eps) == pytest.approx(delta_total, rel=1e-9)
    assert adv.epsilon(1e-6) == math.inf  # no room left for delta'
    deltas = adv.delta(np.linspace(0, 20, 201))
    assert (np.diff(deltas) <= 0).all() and deltas[0] == 1.0 and deltas[-1] >= 1e-6
    kov = optimal_composition(0.1, 1e-8, 100)
    assert (adv.delta(np.linspace(0, 20, 201)) >= kov.delta(np.linspace(0, 20, 201)) - 1e-15).all()
    curve = adv.tradeoff()
    assert curve.kind == "bound"
    assert (curve(ALPHA) <= kov.tradeoff()(ALPHA) + 1e-12).all()
    assert isinstance(adv, PrivacyProfile)
    assert AdvancedComposition(0.0, 1e-3, 10).delta(0.0) == pytest.approx(1e-2)


def test_composition_extremes_never_nan():
    eps, delta = advanced_composition(50.0, 0.0, 10**6, 1e-300)
    assert eps == math.inf or np.isfinite(eps)
    eps, _ = advanced_composition(0.001, 0.0, 10**6, 1e-300)
    assert np.isfinite(eps)
    eps, _ = zcdp_composition(0.001, 10**6, 1e-300)
    assert np.isfinite(eps)
    adv = AdvancedComposition(1e-3, 0.0, 10**6)
    assert np.isfinite(adv.epsilon(1e-300))
    assert not np.isnan(adv.delta(np.array([0.0, 1.0, 1e3, np.inf]))).any()
    assert np.isfinite(AdvancedComposition(800.0, 0.0, 3).tradeoff()(ALPHA)).all()


# --------------------------------------------------------------------------------------------
# Amplification by subsampling (Steinke 2022, Theorem 29)
# --------------------------------------------------------------------------------------------


def test_amplification_closed_form_and_edges():
    assert amplify_by_subsampling(1.0, 1e-5, 0.1) == pytest.approx(
        (math.log(1 + 0.1 * (math.e - 1)), 1e-6), rel=1e-15
    )
    assert amplify_by_subsampling(0.7, 1e-3, 1.0) == pytest.approx((0.7, 1e-3), rel=1e-15)
    assert amplify_by_subsampling(0.7, 1e-3, 0.0) == (0.0, 0.0)
    assert amplify_by_subsampling(1e-12, 0.0, 0.5)[0] == pytest.approx(0.5e-12, rel=1e-9)
    big, _ = amplify_by_subsampling(1000.0, 0.0, 1e-6)
    assert big == pytest.approx(1000.0 + math.log(1e-6), rel=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("delta", [0.0, 1e-3])
@pytest.mark.parametrize("rate", [1e-3, 0.1, 0.7])
def test_amplification_is_tight_on_the_four_point_pair(eps, delta, rate):
    """Poisson subsampling under add/remove: D gives P, D + {target} gives (1-p) P + p Q. The
    amplified eps' is exactly the largest privacy loss and p delta the hockey-stick at eps'."""
    p, q = four_point_pair(eps, delta)
    mixture = (1 - rate) * p + rate * q
    eps_sub, delta_sub = amplify_by_subsampling(eps, delta, rate)
    # float rounding of (1-p) P + p Q - e^eps' P leaves ~1e-17 where the exact value is 0
    assert hockey_stick(mixture, p, eps_sub) == pytest.approx(delta_sub, rel=1e-9, abs=1e-15)
    assert hockey_stick(p, mixture, eps_sub) <= delta_sub * (1 + 1e-9) + 1e-15
    interior = slice(1, 3)
    assert np.log(mixture[interior] / p[interior]).max() == pytest.approx(eps_sub, rel=1e-12)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: basic_composition([0.1, -0.1], [0.0, 0.0]), "eps_list"),
        (lambda: basic_composition([0.1], [1.5]), "delta_list"),
        (lambda: basic_composition([0.1, 0.2], [0.0]), "same length"),
        (lambda: advanced_composition(0.1, 1e-6, 0, 1e-5), "k"),
        (lambda: advanced_composition(0.1, 1e-6, 10, 0.0), "delta_prime"),
        (lambda: advanced_composition(np.nan, 1e-6, 10, 1e-5), "eps"),
        (lambda: zcdp_composition(-1.0, 10, 1e-5), "eps"),
        (lambda: zcdp_composition(1.0, 2.5, 1e-5), "k"),
        (lambda: amplify_by_subsampling(1.0, 0.0, 1.5), "rate"),
        (lambda: amplify_by_subsampling(1.0, -0.1, 0.5), "delta"),
        (lambda: optimal_composition(-0.1, 0.0, 3), "eps"),
        (lambda: optimal_composition(0.1, 2.0, 3), "delta"),
        (lambda: optimal_composition(0.1, 0.0, 0), "k"),
        (lambda: optimal_composition(0.1, 0.0, 3).delta(-1.0), "eps"),
        (lambda: optimal_composition(0.1, 0.0, 3).epsilon(2.0), "delta"),
        (lambda: AdvancedComposition(0.1, 0.0, 3).epsilon(-1.0), "delta"),
        (lambda: AdvancedComposition(0.1, 0.0, 3).delta(np.nan), "eps"),
    ],
)
def test_illegal_arguments_raise_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
