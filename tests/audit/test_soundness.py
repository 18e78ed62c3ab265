"""Soundness: lower bounds of correct mechanisms exceed the truth no more often than allowed.

For each strategy, 200 independent audits (seeds 0..199, small trial counts) of mechanisms whose
privacy is known exactly. Every bound is valid at 95%, so the number of audits whose bound
exceeds the truth is at most Binomial(200, 0.05) in distribution. A check fails when a one-sided
binomial test rejects that rate at level 1e-3: if the bounds are valid, each soundness test fails
with probability at most 1e-3 (9 of them: at most 1% for the file).

Every soundness test has a twin that shows it has power: the same check on the same audits, with
the bound replaced by the point estimate it guards (the same statistic at the best threshold of
the evaluation counts, or at the user's thresholds for ``"fixed"``, without confidence bound or
selection split), must be rejected. The settings are chosen so that the truth is within reach:
the Gaussian ``eps`` is checked at the ``delta`` where the user's threshold 1.8 on the privacy
loss score is the optimal test (``eps = 1.8``), not at a ``delta`` whose ``eps`` no sample of
this size can approach. With seeds 0..199 the point estimates exceed the truth in 106 to 200 of
the 200 audits (bounds: at most 1); the rejection needs 22, so at a true exceedance rate of
one half a power test fails falsely with probability below 1e-30.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpaudit
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors
from dpaudit.mechanisms import Gaussian, RandomizedResponse

AUDITS = 200
LEVEL = 1e-3
STRATEGIES = ("holdout", "bonferroni", "fixed")
#: N(0,1) vs N(1,1): the test "privacy loss >= 1.8" (the default likelihood-ratio score) is optimal
#: for eps = 1.8, whose delta is Phi(-eps + 1/2) - e^eps Phi(-eps - 1/2) (Balle & Wang 2018,
#: Theorem 8), here in closed form rather than through dpaudit.bounds.
EPS_GAUSSIAN = 1.8
DELTA_GAUSSIAN = float(
    stats.norm.cdf(-EPS_GAUSSIAN + 0.5)
    - math.exp(EPS_GAUSSIAN) * stats.norm.cdf(-EPS_GAUSSIAN - 0.5)
)
THRESHOLDS = {"Gaussian": [0.0, 1.8], "RandomizedResponse": 0.0}


def exceed_rate_ok(exceed: int) -> bool:
    return stats.binomtest(exceed, AUDITS, 0.05, alternative="greater").pvalue > LEVEL


def run(mechanism, strategy):
    kwargs = dict(trials=2000, selection_trials=2000, strategy=strategy)
    if strategy == "fixed":
        kwargs["threshold"] = THRESHOLDS[type(mechanism).__name__]
    return [dpaudit.audit_mechanism(mechanism, seed=seed, **kwargs) for seed in range(AUDITS)]


def point_errors(result) -> tuple[np.ndarray, np.ndarray]:
    """Error estimates of the tests the strategy chooses among, on the evaluation counts."""
    if result.strategy == "fixed":
        fp, fn = result.fixed_counts
        return fp / result.tradeoff.n_d, fn / result.tradeoff.n_d_prime
    return result.tradeoff.alpha, result.tradeoff.beta


def point_mu(result) -> float:
    return float(np.max(mu_from_errors(*point_errors(result))))


def point_epsilon(result, delta: float) -> float:
    return float(np.max(epsilon_from_errors(*point_errors(result), delta)))


@pytest.fixture(scope="module")
def gaussian_audits():
    return {strategy: run(Gaussian(1.0), strategy) for strategy in STRATEGIES}


@pytest.fixture(scope="module")
def rr_audits():
    return {strategy: run(RandomizedResponse(1.0), strategy) for strategy in STRATEGIES}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gaussian_mu_bound_is_sound(gaussian_audits, strategy):
    exceed = sum(r.mu_lower_bound() > 1.0 for r in gaussian_audits[strategy])
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} mu bounds exceed mu = 1"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gaussian_mu_check_rejects_point_estimates(gaussian_audits, strategy):
    exceed = sum(point_mu(r) > 1.0 for r in gaussian_audits[strategy])
    assert not exceed_rate_ok(exceed), f"only {exceed} of {AUDITS} point estimates exceed mu = 1"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gaussian_eps_bound_is_sound(gaussian_audits, strategy):
    exceed = sum(
        r.epsilon_lower_bound(DELTA_GAUSSIAN) > EPS_GAUSSIAN for r in gaussian_audits[strategy]
    )
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} eps bounds exceed {EPS_GAUSSIAN}"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gaussian_eps_check_rejects_point_estimates(gaussian_audits, strategy):
    exceed = sum(point_epsilon(r, DELTA_GAUSSIAN) > EPS_GAUSSIAN for r in gaussian_audits[strategy])
    assert not exceed_rate_ok(exceed), f"only {exceed} of {AUDITS} point estimates exceed"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_randomized_response_eps_bound_is_sound(rr_audits, strategy):
    exceed = sum(r.epsilon_lower_bound(0.0) > 1.0 for r in rr_audits[strategy])
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} eps bounds exceed eps = 1"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_randomized_response_eps_check_rejects_point_estimates(rr_audits, strategy):
    exceed = sum(point_epsilon(r, 0.0) > 1.0 for r in rr_audits[strategy])
    assert not exceed_rate_ok(exceed), f"only {exceed} of {AUDITS} point estimates exceed eps = 1"


def test_gaussian_delta_is_the_profile_at_eps():
    """The closed-form delta above agrees with dpaudit's Gaussian profile (independent check of
    the constant the eps tests use)."""
    assert DELTA_GAUSSIAN == pytest.approx(float(Gaussian(1.0).delta(EPS_GAUSSIAN)), rel=1e-9)
