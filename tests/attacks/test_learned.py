"""Learned attacks: estimators against closed forms, model choice, engine integration.

Monte Carlo tolerances are several standard errors wide; each assertion states its false-failure
probability (below 1e-6 unless said otherwise). Seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

import dpaudit
from dpaudit.attacks import Learned, LikelihoodRatio
from dpaudit.attacks.learned import few_values, fit_logistic
from dpaudit.mechanisms import Gaussian, RandomizedResponse
from dpaudit.mechanisms.blackbox import BlackBox


def _normal_pair(n, mu=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0, n), rng.normal(mu, 1.0, n)


# ----------------------------------------------------------------------------- estimators


def test_discrete_scores_are_the_smoothed_count_ratio():
    # 3 categories; counts under D: a=6, b=3, c=1; under D_prime: a=1, b=3, c=6 (N0 = N1 = 10)
    y0 = np.array([0] * 6 + [1] * 3 + [2] * 1, dtype=float)
    y1 = np.array([0] * 1 + [1] * 3 + [2] * 6, dtype=float)
    attack = Learned(smoothing=0.5).fit(y0, y1)
    assert attack.params()["fitted"] == {"model": "discrete", "categories": 3}
    k, cats = 0.5, 3

    def expected(n0, n1):
        return math.log((n1 + k) / (10 + k * cats)) - math.log((n0 + k) / (10 + k * cats))

    got = attack.score(np.array([0.0, 1.0, 2.0, 7.0]))
    want = [expected(6, 1), expected(3, 3), expected(1, 6), 0.0]  # 7: unseen, equal sizes
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_discrete_rows_of_tuples_are_categories():
    y0 = np.array([[0, 1], [0, 1], [1, 1], [0, 0]], dtype=float)
    y1 = np.array([[1, 1], [1, 1], [1, 1], [0, 0]], dtype=float)
    attack = Learned("discrete").fit(y0, y1)
    s = attack.score(np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]))
    assert s[0] > s[2] > s[1]
    assert s[2] == pytest.approx(0.0, abs=1e-12)  # [0, 0]: one count under each dataset


def test_fit_logistic_matches_a_generic_optimiser():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 2))
    label = (x @ [1.5, -0.7] + rng.logistic(size=400) > 0).astype(np.int8)
    weight = rng.integers(1, 4, size=400).astype(float)
    l2 = 1e-2
    theta = fit_logistic(x, label, weight, l2=l2)
    design = np.hstack([np.ones((400, 1)), x])
    sign = np.where(label > 0, 1.0, -1.0)

    def objective(t):
        return weight @ np.logaddexp(0, -sign * (design @ t)) / weight.sum() + 0.5 * l2 * (
            t[1:] @ t[1:]
        )

    reference = optimize.minimize(objective, np.zeros(3), method="BFGS", tol=1e-12).x
    np.testing.assert_allclose(theta, reference, atol=1e-5)


def test_scalar_gaussian_shift_learns_the_linear_log_ratio():
    # log q/p = mu y - mu^2/2 for N(0,1) vs N(mu,1); logistic slope error ~ 0.02 at n = 2^15.
    y0, y1 = _normal_pair(2**15, mu=1.0)
    attack = Learned().fit(y0, y1)
    assert attack.params()["fitted"]["continuous"] == "linear"
    grid = np.linspace(-2.0, 3.0, 11)
    np.testing.assert_allclose(attack.score(grid), grid - 0.5, atol=0.15)
    # far outside the training range the score keeps increasing (tails stay usable)
    assert np.all(np.diff(attack.score(np.array([5.0, 8.0, 20.0]))) > 0)


def test_scalar_scale_change_selects_the_histogram():
    # N(0,1) vs N(0,2^2): log q/p = -log 2 + 3 y^2 / 8 is not monotone; the linear model cannot
    # represent it, the histogram can (cross-validated log loss differs by many standard errors).
    rng = np.random.default_rng(5)
    y0, y1 = rng.normal(0, 1, 2**15), rng.normal(0, 2, 2**15)
    attack = Learned().fit(y0, y1)
    assert attack.params()["fitted"]["continuous"] == "histogram"
    grid = np.linspace(-2.5, 2.5, 11)
    truth = -math.log(2.0) + 3.0 * grid**2 / 8.0
    np.testing.assert_allclose(attack.score(grid), truth, atol=0.35)


def test_a_small_sample_of_a_continuous_output_is_not_a_few_values():
    """A few hundred continuous outputs have as many distinct values: counting them as
    categories scored every unseen output alike (a score with three values, useless to the
    audit of a black box with a few hundred trials)."""
    y0, y1 = _normal_pair(150, mu=1.0, seed=2)
    assert not few_values(np.concatenate([y0, y1])[:, None], max_categories=1024)
    attack = Learned().fit(y0, y1)
    assert attack.params()["fitted"]["model"] != "discrete"
    fresh = np.linspace(-2.0, 3.0, 51)
    assert np.all(np.diff(attack.score(fresh)) > 0)  # ordered like the true ratio, mu y - mu^2/2
    assert few_values(np.repeat([[0.0], [1.0], [2.0]], 2, axis=0), max_categories=3)
    assert not few_values(np.array([[0.0], [1.0], [2.0]]), max_categories=3)


def test_atoms_get_their_own_counts():
    # 1% of the outputs under D are exactly 0 (noise skipped), none under D_prime
    rng = np.random.default_rng(7)
    y0 = np.where(rng.random(2**15) < 0.01, 0.0, rng.laplace(0.0, 1.0, 2**15))
    y1 = 1.0 + rng.laplace(0.0, 1.0, 2**15)
    attack = Learned().fit(y0, y1)
    assert attack.params()["fitted"]["atoms"] == 1
    score = attack.score(np.array([0.0, 1e-9, -1e-9]))
    assert score[0] < -4.0  # about log(0.5 / 330)
    # next to the atom the continuous estimate applies: log q/p = -1 for y <= 0
    np.testing.assert_allclose(score[1:], -1.0, atol=0.5)


def test_classifier_finds_the_informative_coordinate():
    rng = np.random.default_rng(11)
    n = 2**14
    y0 = rng.normal(0.0, 1.0, (n, 5))
    y1 = rng.normal(0.0, 1.0, (n, 5))
    y1[:, 2] += 1.0
    attack = Learned().fit(y0, y1)
    assert attack.params()["fitted"]["model"] == "classifier"
    probe = np.zeros((3, 5))
    probe[1, 2] = 1.0
    probe[2, 0] = 1.0
    s = attack.score(probe)
    assert s[1] - s[0] == pytest.approx(1.0, abs=0.1)  # slope mu = 1 along coordinate 2
    assert abs(s[2] - s[0]) < 0.1


def test_mixed_outputs_get_a_conditional_model_per_category():
    # a code (0 or 1) and a value released only when the code is 1; the value's law shifts.
    rng = np.random.default_rng(13)
    n = 2**15
    code0, code1 = rng.random(n) < 0.5, rng.random(n) < 0.5
    v0 = np.where(code0, rng.normal(0.0, 1.0, n), 0.0)
    v1 = np.where(code1, rng.normal(1.0, 1.0, n), 0.0)
    y0, y1 = np.stack([code0, v0], axis=1), np.stack([code1, v1], axis=1)
    attack = Learned("mixed").fit(y0, y1)
    assert attack.params()["fitted"]["conditional_models"] == 1
    s = attack.score(np.array([[1.0, -1.0], [1.0, 2.0], [0.0, 0.0]]))
    np.testing.assert_allclose(s, [-1.5, 1.5, 0.0], atol=0.15)


def test_features_map_is_applied_to_fit_and_score():
    y0, y1 = _normal_pair(2**12, mu=2.0, seed=2)
    attack = Learned(features=lambda y: np.abs(np.asarray(y) - 1.0)[:, None]).fit(y0, y1)
    assert attack.score(np.array([1.0]))[0] == pytest.approx(attack.score(np.array([1.0]))[0])
    assert attack.score(np.array([0.0]))[0] == pytest.approx(attack.score(np.array([2.0]))[0])


# ----------------------------------------------------------------------------- input checks


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": "magic"}, "model"),
        ({"max_categories": 0}, "max_categories"),
        ({"smoothing": 0.0}, "smoothing"),
        ({"l2": -1.0}, "l2"),
        ({"train_trials": -1}, "train_trials"),
        ({"features": 3}, "features"),
        ({"mechanism": Gaussian(1.0)}, "together"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Learned(**kwargs)


def test_fit_and_score_refuse_bad_data():
    with pytest.raises(ValueError, match="fitted first"):
        Learned().score(np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        Learned().fit(np.array([0.0, np.nan, 1.0]), np.zeros(3))
    with pytest.raises(ValueError, match="same number of values"):
        Learned().fit(np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="histogram"):
        Learned("histogram").fit(np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="features"):
        Learned(features=lambda y: np.zeros((2, 2))).fit(np.zeros(5), np.zeros(5))
    fitted = Learned().fit(np.arange(8.0).reshape(4, 2), np.arange(8.0).reshape(4, 2))
    with pytest.raises(ValueError, match="2 values each"):
        fitted.score(np.zeros((3, 3)))


# ----------------------------------------------------------------------------- in the engine


def test_extra_training_outputs_are_reproducible_and_recorded():
    mech = Gaussian(1.0)
    pair = mech.worst_case_pair()
    a = Learned(mechanism=mech, pair=pair, train_trials=4096, seed=3)
    b = Learned(mechanism=mech, pair=pair, train_trials=4096, seed=3)
    y0, y1 = _normal_pair(1024)
    a.fit(y0, y1)
    b.fit(y0, y1)
    probe = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(a.score(probe), b.score(probe))
    assert a.params()["training"] == {"outputs_per_dataset": [5120, 5120], "extra": 4096}


def test_learned_equals_likelihood_ratio_on_randomized_response():
    # Discrete outputs: the learned ranking of the two reports is the exact one, so the audits
    # count the same events and report identical bounds.
    mech = RandomizedResponse(eps=1.0)
    exact = dpaudit.audit_mechanism(mech, attack=LikelihoodRatio(mech), trials=100_000, seed=4)
    learned = dpaudit.audit_mechanism(mech, attack=Learned(), trials=100_000, seed=4)
    assert learned.epsilon_lower_bound(0.0) == pytest.approx(exact.epsilon_lower_bound(0.0))
    assert learned.mu_lower_bound() == pytest.approx(exact.mu_lower_bound())


def test_blackbox_gaussian_matches_reference_gaussian_with_the_learned_attack():
    # numpy's normal drawn the way the reference mechanism draws it: identical outputs, identical
    # learned score, identical bounds.
    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.normal(0.0, 1.0, size)

    box = BlackBox(release, vectorised=True, dataset=[0.0], neighbour=[1.0])
    ref = Gaussian(1.0)
    r_box = dpaudit.audit_mechanism(box, attack=Learned(), trials=200_000, seed=8)
    r_ref = dpaudit.audit_mechanism(ref, ref.worst_case_pair(), Learned(), trials=200_000, seed=8)
    for delta in (0.0, 1e-5):
        assert r_box.epsilon_lower_bound(delta) == pytest.approx(r_ref.epsilon_lower_bound(delta))
    assert r_box.mu_lower_bound() == pytest.approx(r_ref.mu_lower_bound())


def test_learned_attack_is_close_to_the_exact_likelihood_ratio_on_gaussian():
    # Same trials, two scores: the linear learned score induces the same tests as log q/p, so the
    # bounds differ only by the score grid and the holdout choice (observed gap < 0.02 in mu).
    ref = Gaussian(1.0)
    exact = dpaudit.audit_mechanism(ref, attack=LikelihoodRatio(ref), trials=400_000, seed=9)
    learned = dpaudit.audit_mechanism(ref, ref.worst_case_pair(), Learned(), trials=400_000, seed=9)
    assert learned.mu_lower_bound() == pytest.approx(exact.mu_lower_bound(), abs=0.02)
    assert learned.epsilon_lower_bound(1e-5) == pytest.approx(
        exact.epsilon_lower_bound(1e-5), abs=0.15
    )
