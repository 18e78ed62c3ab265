"""The eps / mu lower bounds and the violation margin against closed forms
(docs/theory.md#empirical)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors, violation_margin
from dpaudit.bounds.gaussian_dp import gdp


@pytest.mark.parametrize("eps, delta", [(0.5, 0.0), (1.0, 1e-3), (4.0, 1e-5)])
def test_epsilon_is_recovered_on_the_privacy_region_boundary(eps, delta):
    # A test on the boundary beta = 1 - delta - e^eps alpha of f_{eps,delta} certifies exactly eps.
    alpha = np.array([1e-4, 1e-3, 0.01]) * np.exp(-eps)
    beta = 1 - delta - np.exp(eps) * alpha
    np.testing.assert_allclose(epsilon_from_errors(alpha, beta, delta), eps, rtol=1e-9)
    # Both orders: swapping the two errors gives the same bound.
    np.testing.assert_allclose(epsilon_from_errors(beta, alpha, delta), eps, rtol=1e-9)


def test_epsilon_is_zero_for_uninformative_tests_and_never_nan():
    alpha = np.array([0.5, 0.7, 1.0, 0.3])
    beta = np.array([0.5, 0.6, 1.0, 0.7])
    out = epsilon_from_errors(alpha, beta, 0.0)
    np.testing.assert_allclose(out, 0.0, atol=1e-12)
    assert float(epsilon_from_errors(0.2, 0.99999, 0.1)) == 0.0  # 1 - delta - beta < 0
    assert not np.isnan(epsilon_from_errors(np.array([0.0, 1.0]), np.array([1.0, 0.0]), 0.5)).any()


def test_epsilon_is_the_larger_of_the_two_ratios():
    a, b, d = 0.01, 0.3, 1e-4
    expected = max(np.log((1 - d - b) / a), np.log((1 - d - a) / b))
    assert float(epsilon_from_errors(a, b, d)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_mu_is_recovered_on_the_gdp_curve(mu):
    alpha = np.array([1e-6, 1e-3, 0.1, 0.3, 0.6])
    beta = stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu)
    np.testing.assert_allclose(mu_from_errors(alpha, beta), mu, rtol=1e-8)
    np.testing.assert_allclose(mu_from_errors(beta, alpha), mu, rtol=1e-8)


def test_mu_is_zero_when_errors_sum_to_one_or_more():
    np.testing.assert_array_equal(mu_from_errors(np.array([0.5, 0.9]), np.array([0.5, 0.3])), 0.0)


def test_violation_margin_both_orders():
    claim = gdp(1.0)
    a = np.array([0.1, 0.1])
    b = np.array([float(claim(0.1)) - 0.05, float(claim(0.1)) + 0.05])
    forward, reverse = violation_margin(claim, a, b)
    np.testing.assert_allclose(forward, [0.05, -0.05], atol=1e-12)
    # Reverse order: the same test with the roles of the errors swapped.
    forward_swapped, reverse_swapped = violation_margin(claim, b, a)
    np.testing.assert_allclose(reverse_swapped, forward, atol=1e-12)
    np.testing.assert_allclose(forward_swapped, reverse, atol=1e-12)
