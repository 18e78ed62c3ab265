"""Clopper-Pearson, DKW-Massart and empirical Bernstein bounds: exact coverage and formulas."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    dkw_radius,
    empirical_bernstein_radius,
)


@pytest.mark.parametrize("n", [1, 7, 40])
def test_clopper_pearson_solves_the_binomial_tail_equations(n):
    gamma = 0.05
    k = np.arange(n + 1)
    upper = clopper_pearson_upper(k, n, gamma)
    lower = clopper_pearson_lower(k, n, gamma)
    # Upper bound u: P(Bin(n, u) <= k) = gamma; lower bound l: P(Bin(n, l) >= k) = gamma.
    np.testing.assert_allclose(stats.binom.cdf(k[:-1], n, upper[:-1]), gamma, rtol=1e-8)
    np.testing.assert_allclose(stats.binom.sf(k[1:] - 1, n, lower[1:]), gamma, rtol=1e-8)
    assert upper[-1] == 1.0 and lower[0] == 0.0
    assert np.all(np.diff(upper) > 0) and np.all(np.diff(lower) > 0)
    assert np.all(lower < upper)


@pytest.mark.parametrize("n", [10, 60])
def test_clopper_pearson_exact_coverage_is_at_least_the_level(n):
    # Coverage(p) = sum_k pmf(k) 1{bound covers p}, computed exactly on a fine grid of p.
    gamma = 0.1
    k = np.arange(n + 1)
    upper = clopper_pearson_upper(k, n, gamma)
    lower = clopper_pearson_lower(k, n, gamma)
    for p in np.linspace(0.001, 0.999, 400):
        pmf = stats.binom.pmf(k, n, p)
        assert pmf[upper >= p].sum() >= 1 - gamma - 1e-12
        assert pmf[lower <= p].sum() >= 1 - gamma - 1e-12


def test_clopper_pearson_closed_forms_at_the_ends():
    # k = 0: upper = 1 - gamma^(1/n); k = n: lower = gamma^(1/n).
    n, gamma = 25, 0.025
    assert float(clopper_pearson_upper(0, n, gamma)) == pytest.approx(1 - gamma ** (1 / n))
    assert float(clopper_pearson_lower(n, n, gamma)) == pytest.approx(gamma ** (1 / n))


def test_clopper_pearson_accepts_fractional_counts_monotonically():
    k = np.linspace(0, 100, 201)
    u = clopper_pearson_upper(k, 100, 0.05)
    assert np.all(np.diff(u) > 0) and u[-1] == 1.0


@pytest.mark.parametrize(
    "k, n, gamma, message",
    [
        (-1, 10, 0.05, "k"),
        (11, 10, 0.05, "k"),
        (1, 0, 0.05, "n"),
        (1, 10, 0.0, "gamma"),
        (1, 10, 1.0, "gamma"),
        (np.nan, 10, 0.05, "k"),
    ],
)
def test_clopper_pearson_refuses_bad_input(k, n, gamma, message):
    with pytest.raises(ValueError, match=message):
        clopper_pearson_upper(k, n, gamma)
    with pytest.raises(ValueError, match=message):
        clopper_pearson_lower(k, n, gamma)


def test_dkw_radius_formula_and_coverage():
    n, gamma = 50, 0.1
    r = float(dkw_radius(n, gamma))
    assert r == pytest.approx(np.sqrt(np.log(2 / gamma) / (2 * n)))
    # Kolmogorov distance of 4000 uniform samples of size n; the band fails with probability
    # <= gamma (Massart 1990). Binomial test: false failure probability < 1e-4 when the rate is
    # exactly gamma (it is smaller in truth).
    rng = np.random.default_rng(11)
    u = np.sort(rng.random((4000, n)), axis=1)
    i = np.arange(1, n + 1)
    dist = np.maximum(i / n - u, u - (i - 1) / n).max(axis=1)
    failures = int((dist > r).sum())
    assert stats.binomtest(failures, 4000, gamma, alternative="greater").pvalue > 1e-4


def test_empirical_bernstein_formula_and_coverage():
    n, gamma = 400, 0.05
    v = 0.01
    expected = np.sqrt(2 * v * np.log(2 / gamma) / n) + 7 * np.log(2 / gamma) / (3 * (n - 1))
    assert float(empirical_bernstein_radius(v, n, gamma)) == pytest.approx(expected)
    # Bernoulli(0.02) means: the upper bound misses the true mean with probability <= gamma.
    # 3000 repetitions; binomial test false-failure probability < 1e-4 at rate exactly gamma.
    rng = np.random.default_rng(5)
    x = (rng.random((3000, n)) < 0.02).astype(float)
    mean = x.mean(axis=1)
    var = x.var(axis=1, ddof=1)
    misses = int((mean + empirical_bernstein_radius(var, n, gamma) < 0.02).sum())
    assert stats.binomtest(misses, 3000, gamma, alternative="greater").pvalue > 1e-4


def test_empirical_bernstein_refuses_tiny_samples():
    with pytest.raises(ValueError, match="n"):
        empirical_bernstein_radius(0.1, 1, 0.05)
    with pytest.raises(ValueError, match="variance"):
        empirical_bernstein_radius(np.nan, 10, 0.05)
