"""Membership inference from the target's loss: plain and calibrated (likelihood-ratio) scores.

Monte Carlo checks use fixed seeds. Each audit's counts are read twice: validity at confidence
0.999 (a valid bound is wrong with probability at most 1e-3) and power at the default 0.95, where
the expected bound clears the asserted value by at least 4 standard deviations of the estimate
(false failure below 1e-4). Exact error rates come from closed forms (normal and noncentral
chi-square laws), independently of the engine.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import dpaudit as dpa
from dpaudit import specs
from dpaudit.attacks import MembershipInference
from dpaudit.mechanisms import Gaussian, Mechanism, NeighbouringPair, NoisyMean

VALIDITY = 0.999


def _strict(result):
    return dataclasses.replace(result, confidence=VALIDITY)


def _quadratic_score(attack: MembershipInference) -> tuple[float, float, float]:
    """The calibrated score as ``A x^2 + B x + C`` in the statistic ``x``."""
    f = attack.fitted
    a_in, a_out = 1 / f["sd_in"] ** 2, 1 / f["sd_out"] ** 2
    big_a = 0.5 * (a_out - a_in)
    big_b = f["mean_in"] * a_in - f["mean_out"] * a_out
    big_c = 0.5 * (f["mean_out"] ** 2 * a_out - f["mean_in"] ** 2 * a_in) - math.log(
        f["sd_in"] / f["sd_out"]
    )
    return big_a, big_b, big_c


def _probability_at_least(coef: tuple[float, float, float], t: float, cdf) -> float:
    """``P(A x^2 + B x + C >= t)`` for ``x`` with the given cdf (``A != 0``)."""
    a, b, c = coef
    disc = b * b - 4 * a * (c - t)
    if disc <= 0:
        return 1.0 if a > 0 else 0.0
    r1, r2 = sorted(np.roots([a, b, c - t]).real)
    inside = cdf(r2) - cdf(r1)
    return 1.0 - inside if a > 0 else inside


class _TwoVariances(Mechanism):
    """Outputs ``N(0, 1)`` on dataset ``[0]`` and ``N(0, 4)`` on ``[1]``: one mean, two spreads."""

    relation = "replace_one"

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, 1.0 + float(np.asarray(dataset)[0]), size=size)

    def worst_case_pair(self) -> NeighbouringPair:
        return NeighbouringPair([0.0], [1.0], "replace_one")


# --------------------------------------------------------------------------- scores
def test_plain_scores_follow_the_kind():
    y = np.array([[0.5, 1.0], [2.0, -1.0], [0.0, 0.0]])

    def first(outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs)[:, 0]

    loss = MembershipInference(first)
    confidence = MembershipInference(first, kind="confidence")
    np.testing.assert_array_equal(loss.score(y), [-0.5, -2.0, -0.0])
    np.testing.assert_array_equal(confidence.score(y), [0.5, 2.0, 0.0])
    assert not loss.learns and loss.fit(y, y) is loss and loss.fitted is None


def test_calibrated_fit_and_score_match_scipy():
    rng = np.random.default_rng(0)
    y_out, y_in = rng.normal(0.0, 1.0, size=(500, 3)), rng.normal(1.0, 2.0, size=(400, 3))

    def row_sum(outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs).sum(axis=1)

    attack = MembershipInference(row_sum, calibrated=True)
    assert attack.learns
    with pytest.raises(ValueError, match="call fit"):
        attack.score(y_in)
    assert attack.fit(y_out, y_in) is attack
    x_out, x_in = y_out.sum(axis=1), y_in.sum(axis=1)
    f = attack.fitted
    assert f["mean_out"] == pytest.approx(x_out.mean(), rel=1e-13)
    assert f["sd_out"] == pytest.approx(x_out.std(ddof=1), rel=1e-13)
    assert f["mean_in"] == pytest.approx(x_in.mean(), rel=1e-13)
    assert f["sd_in"] == pytest.approx(x_in.std(ddof=1), rel=1e-13)
    y = rng.normal(size=(20, 3))
    x = y.sum(axis=1)
    expected = stats.norm(f["mean_in"], f["sd_in"]).logpdf(x) - stats.norm(
        f["mean_out"], f["sd_out"]
    ).logpdf(x)
    np.testing.assert_allclose(attack.score(y), expected, rtol=1e-12, atol=1e-12)
    # the sign of the statistic does not matter once calibrated
    flipped = MembershipInference(lambda o: -row_sum(o), kind="confidence", calibrated=True)
    np.testing.assert_allclose(flipped.fit(y_out, y_in).score(y), expected, rtol=1e-12)


# --------------------------------------------------------------------------- audits
@pytest.mark.parametrize("calibrated", [False, True])
def test_decreasing_loss_on_the_gaussian_mechanism_is_optimal(calibrated):
    # N(0,1) vs N(1,1): a loss decreasing in the output orders outputs like the likelihood
    # ratio, and the fitted normals share their variance, so both variants reach mu = 1
    mech = Gaussian(sigma=1.0)
    attack = MembershipInference(lambda y: -np.asarray(y), calibrated=calibrated)
    result = dpa.audit_mechanism(mech, None, attack, trials=50_000, seed=1)
    assert result.mu_lower_bound() >= 0.9
    assert _strict(result).mu_lower_bound() <= 1.0


def test_calibration_separates_laws_that_share_a_mean():
    mech = _TwoVariances()
    pair = mech.worst_case_pair()

    def identity(y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=float)

    plain = dpa.audit_mechanism(mech, pair, MembershipInference(identity), trials=50_000, seed=2)
    calibrated = dpa.audit_mechanism(
        mech, pair, MembershipInference(identity, calibrated=True), trials=50_000, seed=2
    )
    # Same mean, spreads 1 and 2: the plain score -y only sees the lower tail, the calibrated one
    # is quadratic (the Neyman-Pearson test |y| > t) and sees both, doubling the largest
    # advantage 1 - alpha - beta: exactly max_t Phi(-t/2) - Phi(-t) = 0.1614 (t^2 = 8 log(2)/3)
    # against twice that. Empirical maxima over the grid, 50k trials: standard error about
    # 0.003, bias of the maximum below 0.005; tolerance 0.02.
    t = math.sqrt(8 * math.log(2) / 3)
    exact = stats.norm.cdf(-t / 2) - stats.norm.cdf(-t)
    for result, factor in ((plain, 1), (calibrated, 2)):
        ev = result.tradeoff
        assert np.max(1 - ev.alpha - ev.beta) == pytest.approx(factor * exact, abs=0.02)
    # the witness rates are covered: exact rates of {A y^2 + B y + C >= t} under N(0,1), N(0,4)
    w = _strict(calibrated).mu_witness()
    coef = _quadratic_score(calibrated.attack)
    alpha = _probability_at_least(coef, w["threshold"], stats.norm(0, 1).cdf)
    beta = 1.0 - _probability_at_least(coef, w["threshold"], stats.norm(0, 2).cdf)
    assert alpha <= w["alpha_upper"] and beta <= w["beta_upper"]


@pytest.mark.parametrize("calibrated", [False, True])
def test_noisy_mean_loss_follows_the_noncentral_chi_square(calibrated):
    # ||y - z||^2 / sigma^2 is noncentral chi-square with d degrees of freedom and
    # noncentrality ||S/n - z||^2 / sigma^2 on each fixed dataset
    mech = NoisyMean(20, 40, mu=1.0, seed=3)
    pair = mech.worst_case_pair()
    z = mech.target
    sigma2 = mech.sigma**2
    laws = [
        stats.ncx2(20, np.sum((np.asarray(ds).mean(axis=0) - z) ** 2) / sigma2, scale=sigma2 / 20)
        for ds in (pair.d, pair.d_prime)
    ]
    attack = MembershipInference.for_mechanism(mech, pair, calibrated=calibrated)
    result = dpa.audit_mechanism(mech, pair, attack, trials=50_000, seed=4)
    w = _strict(result).mu_witness()
    if calibrated:
        coef = _quadratic_score(result.attack)
        alpha = _probability_at_least(coef, w["threshold"], laws[0].cdf)
        beta = 1.0 - _probability_at_least(coef, w["threshold"], laws[1].cdf)
    else:
        # D_prime iff -loss >= t, i.e. loss <= -t
        alpha = laws[0].cdf(-w["threshold"])
        beta = laws[1].sf(-w["threshold"])
    assert alpha <= w["alpha_upper"] and beta <= w["beta_upper"]
    # power: the exact mu of the plain threshold test at equal error rates
    t = np.linspace(laws[1].ppf(1e-4), laws[0].ppf(1 - 1e-4), 20_001)
    mu_exact = stats.norm.ppf(1 - laws[0].cdf(t)) - stats.norm.ppf(laws[1].sf(t))
    best = float(mu_exact[np.argmin(np.abs(laws[0].cdf(t) - laws[1].sf(t)))])
    assert result.mu_lower_bound() >= best - 0.08
    assert _strict(result).mu_lower_bound() <= mech.pair_mu(pair)


# --------------------------------------------------------------------------- construction
def test_for_mechanism_needs_a_membership_loss():
    with pytest.raises(ValueError, match="offers no membership_loss"):
        MembershipInference.for_mechanism(Gaussian(1.0), Gaussian(1.0).worst_case_pair())
    mech = NoisyMean(5, 4, mu=1.0)
    attack = MembershipInference.for_mechanism(mech, mech.worst_case_pair(), calibrated=True)
    assert attack.kind == "loss" and attack.calibrated and attack.learns


def test_params_are_json_ready():
    attack = MembershipInference(lambda y: np.asarray(y)[:, 0], calibrated=True)
    attack.fit(np.arange(6.0).reshape(3, 2), np.arange(6.0, 12.0).reshape(3, 2))
    params: dict[str, Any] = attack.params()
    assert json.loads(json.dumps(params)) == params
    assert params["calibrated"] is True and set(params["fitted"]) == {
        "mean_in",
        "sd_in",
        "mean_out",
        "sd_out",
    }
    assert attack.name == "MembershipInference(loss, calibrated)"


def test_wrong_input_is_refused():
    def first(y: np.ndarray) -> np.ndarray:
        return np.asarray(y)[:, 0]

    with pytest.raises(ValueError, match="statistic must be a function"):
        MembershipInference(3.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        MembershipInference(first, kind="probability")
    with pytest.raises(ValueError, match="calibrated must be True or False"):
        MembershipInference(first, calibrated=1)
    with pytest.raises(ValueError, match=r"one value per trial, shape \(3,\)"):
        MembershipInference(lambda y: np.zeros(2)).score(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        MembershipInference(lambda y: np.full(3, np.nan)).score(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="trial axis"):
        MembershipInference(first).score(np.float64(1.0))
    calibrated = MembershipInference(first, calibrated=True)
    with pytest.raises(ValueError, match="constant under one dataset"):
        calibrated.fit(np.ones((5, 2)), np.random.default_rng(0).normal(size=(5, 2)))
    with pytest.raises(ValueError, match="at least 2 selection outputs"):
        calibrated.fit(np.ones((1, 2)), np.ones((5, 2)))


def test_spec_kind_uses_the_mechanisms_loss():
    (spec,) = specs.loads(
        """
[[audit]]
name = "membership"
mechanism = { kind = "noisy_mean", d = 10, n = 20, mu = 1.0 }
attack = { kind = "membership_inference", calibrated = true }
trials = 1000
"""
    )
    attack = spec.attack
    assert isinstance(attack, MembershipInference) and attack.calibrated and attack.kind == "loss"
    y = spec.mechanism.sample(spec.pair.d, 4, np.random.default_rng(0))
    expected = np.mean((y - spec.mechanism.target) ** 2, axis=1)
    np.testing.assert_allclose(attack.statistic(y), expected, rtol=1e-14)
    with pytest.raises(specs.SpecError, match="offers no membership_loss"):
        specs.loads(
            """
[[audit]]
name = "membership"
mechanism = { kind = "gaussian", sigma = 1.0 }
attack = { kind = "membership_inference" }
trials = 1000
"""
        )
