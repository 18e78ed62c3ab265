"""Soundness: lower bounds of correct mechanisms exceed the truth no more often than allowed.

For each strategy, 200 independent audits (seeds 0..199, small trial counts) of mechanisms whose
privacy is known exactly. Every bound is valid at 95%, so the number of audits whose bound
exceeds the truth is at most Binomial(200, 0.05) in distribution. The test fails when a one-sided
binomial test rejects that rate at level 1e-3: if the bounds are valid, this test fails with
probability at most 1e-3 per assertion (9 of them: at most 1% for the file).

A control shows the binomial test has power: point estimates at the best threshold of the
evaluation counts (no confidence bound, no selection split) exceed the truth far more often.
"""

from __future__ import annotations

import pytest
from scipy import stats

import dpaudit
from dpaudit.audit.lower_bounds import mu_from_errors
from dpaudit.mechanisms import Gaussian, RandomizedResponse

AUDITS = 200
LEVEL = 1e-3
#: Exact eps(1e-3) of N(0,1) vs N(1,1) (tests/reference, item 1).
EPS_GAUSSIAN_1E3 = 3.13867054858294


def exceed_rate_ok(exceed: int) -> bool:
    return stats.binomtest(exceed, AUDITS, 0.05, alternative="greater").pvalue > LEVEL


def run(mechanism, strategy, threshold=None):
    kwargs = dict(trials=2000, selection_trials=2000, strategy=strategy)
    if threshold is not None:
        kwargs["threshold"] = threshold
    return [dpaudit.audit(mechanism, seed=seed, **kwargs) for seed in range(AUDITS)]


@pytest.fixture(scope="module")
def gaussian_audits():
    mech = Gaussian(1.0)
    return {
        "holdout": run(mech, "holdout"),
        "bonferroni": run(mech, "bonferroni"),
        "fixed": run(mech, "fixed", threshold=[0.0, 1.8]),
    }


@pytest.mark.parametrize("strategy", ["holdout", "bonferroni", "fixed"])
def test_gaussian_mu_bound_is_sound(gaussian_audits, strategy):
    exceed = sum(r.mu_lower_bound() > 1.0 for r in gaussian_audits[strategy])
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} mu bounds exceed mu = 1"


@pytest.mark.parametrize("strategy", ["holdout", "bonferroni", "fixed"])
def test_gaussian_eps_bound_is_sound(gaussian_audits, strategy):
    exceed = sum(r.epsilon_lower_bound(1e-3) > EPS_GAUSSIAN_1E3 for r in gaussian_audits[strategy])
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} eps bounds exceed {EPS_GAUSSIAN_1E3}"


@pytest.mark.parametrize("strategy", ["holdout", "bonferroni", "fixed"])
def test_randomized_response_eps_bound_is_sound(strategy):
    mech = RandomizedResponse(1.0)
    results = run(mech, strategy, threshold=0.0 if strategy == "fixed" else None)
    exceed = sum(r.epsilon_lower_bound(0.0) > 1.0 for r in results)
    assert exceed_rate_ok(exceed), f"{exceed} of {AUDITS} eps bounds exceed eps = 1"


def test_the_soundness_test_has_power(gaussian_audits):
    # Point estimates at the best threshold of the evaluation counts are not bounds at all;
    # the binomial test must reject them.
    exceed = 0
    for r in gaussian_audits["holdout"]:
        t = r.tradeoff
        exceed += float(mu_from_errors(t.alpha, t.beta).max()) > 1.0
    assert not exceed_rate_ok(exceed), f"only {exceed} of {AUDITS} point estimates exceed mu = 1"
