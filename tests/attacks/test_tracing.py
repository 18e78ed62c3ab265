"""The tracing attack on the noisy mean: score, analytic law, audits in both games, violations.

Monte Carlo checks use fixed seeds. Moment checks allow 5 standard errors (false-failure
probability below 1e-6 each); KS tests assert p > 1e-4. Every audit's counts are read twice:
validity ("the lower bound is at most the truth") at confidence 0.999, so it fails with
probability at most 1e-3; power ("the bound reaches 0.9 of the prediction") at the default
confidence 0.95, where the expected bound clears the asserted fraction by at least 4 standard
deviations of the estimate (false failure below 1e-4).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

import dpaudit as dpa
from dpaudit import specs
from dpaudit.attacks import Tracing
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.mechanisms import Gaussian, NeighbouringPair, NoisyMean

VALIDITY = 0.999


def _bounds(result) -> tuple[float, float]:
    """``mu`` lower bounds from the same counts at confidence 0.95 (power) and 0.999 (validity)."""
    strict = dataclasses.replace(result, confidence=VALIDITY)
    return result.mu_lower_bound(), strict.mu_lower_bound()


def _moments_check(scores: np.ndarray, mean: float, var: float) -> None:
    """Sample mean and variance within 5 standard errors of the exact ones."""
    n = scores.size
    assert abs(scores.mean() - mean) < 5 * math.sqrt(var / n)
    m4 = np.mean((scores - scores.mean()) ** 4)
    assert abs(scores.var() - var) < 5 * math.sqrt(max(m4 - var**2, 0.0) / n)


# --------------------------------------------------------------------------- the score
def test_score_is_the_inner_product_with_the_target():
    rng = np.random.default_rng(0)
    z = np.array([1.0, -1.0, 1.0, 1.0])
    p = np.array([0.2, -0.5, 0.0, 0.9])
    y = rng.normal(size=(7, 4))
    attack = Tracing(z, p)
    expected = [sum((y[i, j] - p[j]) * (z[j] - p[j]) for j in range(4)) for i in range(7)]
    np.testing.assert_allclose(attack.score(y), expected, rtol=1e-12)
    assert not attack.learns
    np.testing.assert_allclose(attack.direction, z - p)


def test_reference_variant_uses_the_reference_mean():
    z = np.array([1.0, -1.0, 1.0])
    refs = np.array([[1.0, 1.0, -1.0], [-1.0, 1.0, -1.0]])
    r_bar = refs.mean(axis=0)
    y = np.random.default_rng(1).normal(size=(5, 3))
    alone = Tracing(z, reference=refs)
    np.testing.assert_allclose(alone.direction, z - r_bar)
    np.testing.assert_allclose(alone.score(y), (y - r_bar) @ (z - r_bar), rtol=1e-12)
    p = np.array([0.1, 0.2, 0.3])
    both = Tracing(z, p, reference=refs)
    np.testing.assert_allclose(both.score(y), (y - p) @ (z - r_bar), rtol=1e-12)
    assert both.params()["variant"] == "reference" and both.params()["references"] == 2


def test_learned_center_is_the_mean_of_selection_outputs():
    z = np.array([1.0, -1.0])
    attack = Tracing(z)
    assert attack.learns and attack.params()["center"] == "learned"
    with pytest.raises(ValueError, match="call fit"):
        attack.score(np.zeros((3, 2)))
    rng = np.random.default_rng(2)
    y0, y1 = rng.normal(size=(10, 2)), rng.normal(1.0, size=(6, 2))
    assert attack.fit(y0, y1) is attack
    np.testing.assert_allclose(attack.center, np.vstack([y0, y1]).mean(axis=0), rtol=1e-14)
    given = Tracing(z, [0.0, 0.0])
    given.fit(y0, y1)
    np.testing.assert_array_equal(given.center, [0.0, 0.0])


# --------------------------------------------------------------------------- analytic law
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("game", ["fixed", "fresh"])
def test_score_moments_match_monte_carlo(noise, game):
    kw = {"mu": 1.0} if noise == "gaussian" else {"eps": 2.0}
    mech = NoisyMean(40, 30, noise, seed=5, **kw)
    attack = Tracing.for_game(mech, game)
    rng = np.random.default_rng(3)
    for dataset in (attack.pair.d, attack.pair.d_prime):
        scores = attack.score(mech.sample(dataset, 40_000, rng))
        _moments_check(scores, *attack.score_moments(mech, dataset))


def test_fixed_game_scores_are_exactly_normal():
    mech = NoisyMean(30, 20, mu=1.0, seed=6)
    attack = Tracing.for_game(mech, "fixed")
    rng = np.random.default_rng(4)
    for dataset in (attack.pair.d, attack.pair.d_prime):
        mean, var = attack.score_moments(mech, dataset)
        scores = attack.score(mech.sample(dataset, 20_000, rng))
        assert stats.kstest(scores, stats.norm(mean, math.sqrt(var)).cdf).pvalue > 1e-4


def test_fixed_game_prediction_is_the_closed_form_and_below_neyman_pearson():
    mech = NoisyMean(50, 40, mu=1.0, seed=7)
    attack = Tracing.for_game(mech, "fixed")
    z, z_prime, p = mech.target.astype(float), mech.replacement.astype(float), mech.population
    v = z - p
    closed = (z - z_prime) @ v / (40 * mech.sigma * np.linalg.norm(v))
    pair = attack.pair
    assert attack.predicted_mu(mech, pair) == pytest.approx(closed, rel=1e-12)
    assert attack.predicted_mu(mech, pair.swapped()) == pytest.approx(-closed, rel=1e-12)
    assert closed < mech.pair_mu(pair) < mech.mu
    # equality in Cauchy-Schwarz: centring at z' makes v parallel to z - z'
    aligned = Tracing(z, z_prime)
    assert aligned.predicted_mu(mech, pair) == pytest.approx(mech.pair_mu(pair), rel=1e-12)


def test_fresh_game_adds_the_sampling_variance_of_the_other_records():
    mech = NoisyMean(60, 25, mu=1.0, seed=8)
    attack = Tracing.for_game(mech, "fresh")
    v, p, n = attack.direction, mech.population, 25
    for dataset, fresh in ((attack.pair.d, n), (attack.pair.d_prime, n - 1)):
        _, var = attack.score_moments(mech, dataset)
        expected = np.sum(v**2 * (fresh * (1 - p**2) / n**2 + mech.sigma**2))
        assert var == pytest.approx(expected, rel=1e-12)
    m0, _ = attack.score_moments(mech, attack.pair.d)
    m1, _ = attack.score_moments(mech, attack.pair.d_prime)
    assert m1 - m0 == pytest.approx((mech.target - p) @ v / n, rel=1e-12)


# --------------------------------------------------------------------------- audits
@pytest.mark.parametrize("d", [10, 100, pytest.param(1000, marks=pytest.mark.slow)])
def test_fixed_game_audit_reaches_the_prediction(d):
    mech = NoisyMean(d, 100, mu=1.0)
    attack = Tracing.for_game(mech, "fixed")
    result = dpa.audit_mechanism(mech, attack.pair, attack, trials=100_000, seed=1)
    predicted = attack.predicted_mu(mech, attack.pair)
    power, valid = _bounds(result)
    # the score's exact curve is G_predicted; at 1e5 trials the estimate's standard deviation is
    # about 0.006 and the 0.95 margins cost about 0.011, against a slack of 0.1 * predicted
    assert valid <= predicted
    assert power >= 0.9 * predicted
    assert predicted < mech.pair_mu(attack.pair) < mech.mu == pytest.approx(1.0)
    assert result.violates(gdp(1.0)) is None


def test_fresh_game_audit_is_weaker_and_follows_the_normal_approximation():
    mech = NoisyMean(50, 100, mu=1.0)
    fixed = Tracing.for_game(mech, "fixed")
    fresh = Tracing.for_game(mech, "fresh")
    result = dpa.audit_mechanism(mech, fresh.pair, fresh, trials=40_000, seed=2)
    predicted = fresh.predicted_mu(mech, fresh.pair)
    power, valid = _bounds(result)
    # the prediction is the normal approximation of a sum of 50 independent bounded terms
    # plus Gaussian noise, hence the 5% allowance on validity
    assert valid <= 1.05 * predicted
    assert power >= 0.85 * predicted
    assert predicted < fixed.predicted_mu(mech, fixed.pair)
    assert result.violates(gdp(1.0)) is None


@pytest.mark.parametrize("center", ["learned", "reference"])
def test_learned_and_reference_centres_in_an_audit(center):
    mech = NoisyMean(100, 100, mu=1.0)
    attack = Tracing.for_game(mech, "fixed", center=center, references=50)
    result = dpa.audit_mechanism(mech, attack.pair, attack, trials=50_000, seed=3)
    assert result.fit_trials > 0 if center == "learned" else result.fit_trials == 0
    predicted = result.attack.predicted_mu(mech, attack.pair)
    power, valid = _bounds(result)
    assert 0.85 * predicted <= power and valid <= predicted


def test_swapped_order_with_the_replacement_as_target():
    mech = NoisyMean(100, 100, mu=1.0)
    pair = mech.tracing_pair("fixed").swapped()
    attack = Tracing(mech.replacement, mech.population)
    result = dpa.audit_mechanism(mech, pair, attack, trials=50_000, seed=4)
    predicted = attack.predicted_mu(mech, pair)
    power, valid = _bounds(result)
    assert predicted > 0
    assert 0.85 * predicted <= power and valid <= predicted


def test_under_noised_release_is_flagged():
    claim = gdp(1.0)
    bad = NoisyMean(100, 100, mu=1.0, calibration="coordinate")
    attack = Tracing.for_game(bad, "fixed")
    result = dpa.audit_mechanism(bad, attack.pair, attack, trials=20_000, seed=5)
    for strictness in (result, dataclasses.replace(result, confidence=VALIDITY)):
        witness = strictness.violates(claim)
        assert witness is not None and witness["beta_upper"] < witness["claimed_beta"]
    # predicted about 4.1 on this pair, the worst case is sqrt(d) = 10 against the claimed 1
    assert _bounds(result)[1] > 3.0


def test_tracing_on_a_one_dimensional_gaussian_release():
    # the statistic is linear in y: on Gaussian(sigma) with one record it is the optimal test
    mech = Gaussian(sigma=1.0)
    attack = Tracing([1.0], [0.0])
    result = dpa.audit_mechanism(mech, None, attack, trials=50_000, seed=6)
    power, valid = _bounds(result)
    assert power >= 0.9 and valid <= 1.0


# --------------------------------------------------------------------------- input checks
def test_wrong_input_is_refused():
    with pytest.raises(ValueError, match="target must contain only finite"):
        Tracing([1.0, np.nan])
    with pytest.raises(ValueError, match=r"target must have shape \(d,\)"):
        Tracing(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"population_mean must have shape \(2,\)"):
        Tracing([1.0, -1.0], [0.0])
    with pytest.raises(ValueError, match=r"reference must have shape \(m, 2\)"):
        Tracing([1.0, -1.0], reference=np.ones((3, 3)))
    with pytest.raises(ValueError, match="game must be one of"):
        Tracing([1.0], game="random")
    attack = Tracing([1.0, -1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match=r"outputs must have shape \(size, 2\)"):
        attack.score(np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"outputs_d must have shape \(size, 2\)"):
        Tracing([1.0, -1.0]).fit(np.zeros((3, 5)), np.zeros((3, 2)))
    mech = NoisyMean(3, 4, mu=1.0)
    with pytest.raises(ValueError, match="needs a NoisyMean"):
        Tracing.for_game(Gaussian(1.0))
    with pytest.raises(ValueError, match="center must be one of"):
        Tracing.for_game(mech, center="median")
    with pytest.raises(ValueError, match="references must be an integer"):
        Tracing.for_game(mech, center="reference", references=0)
    with pytest.raises(ValueError, match="mechanism releases 3 coordinates"):
        Tracing([1.0, 1.0], [0.0, 0.0]).score_moments(mech, mech.worst_case_pair().d)


def test_for_game_sets_the_pair_and_params():
    mech = NoisyMean(8, 6, mu=1.0, seed=3)
    for game in ("fixed", "fresh"):
        attack = Tracing.for_game(mech, game)
        expected = mech.tracing_pair(game)
        assert isinstance(attack.pair, NeighbouringPair)
        np.testing.assert_array_equal(attack.pair.d, expected.d)
        np.testing.assert_array_equal(attack.pair.d_prime, expected.d_prime)
        np.testing.assert_array_equal(attack.target, mech.target)
        assert attack.params()["game"] == game and attack.name == f"Tracing(game={game})"


# --------------------------------------------------------------------------- specs
SPEC = """
[[audit]]
name = "tracing-noisy-mean"
mechanism = {{ kind = "noisy_mean", d = 100, n = 100, noise = "gaussian", mu = 1.0 }}
attack = {{ kind = "tracing", game = "{game}" }}
claim = {{ kind = "gdp", mu = 1.0 }}
trials = 100_000
"""


@pytest.mark.parametrize("game", ["fixed", "fresh"])
def test_spec_plays_the_game_on_its_own_pair(game):
    (spec,) = specs.loads(SPEC.format(game=game))
    mech, attack = spec.mechanism, spec.attack
    assert isinstance(mech, NoisyMean) and mech.sigma == pytest.approx(0.2)
    assert isinstance(attack, Tracing) and attack.game == game and not attack.learns
    expected = mech.tracing_pair(game)
    np.testing.assert_array_equal(attack.pair.d, expected.d)
    np.testing.assert_array_equal(attack.pair.d_prime, expected.d_prime)
    # a spec without `pair` audits the pair of the attack's game, not the worst case
    same = np.array_equal(spec.pair.d, expected.d) and np.array_equal(
        spec.pair.d_prime, expected.d_prime
    )
    assert same, "a spec without `pair` must audit attack.pair when the attack defines one"
    assert spec.claim.mu == 1.0


def test_spec_options_and_errors():
    text = SPEC.format(game="fixed").replace(
        'game = "fixed"', 'game = "fixed", center = "reference", references = 7'
    )
    (spec,) = specs.loads(text)
    assert spec.attack.reference.shape == (7, 100)
    with pytest.raises(specs.SpecError, match="game must be one of"):
        specs.loads(SPEC.format(game="random"))
    with pytest.raises(specs.SpecError, match="mu does not apply to noise 'laplace'"):
        specs.loads(SPEC.format(game="fixed").replace('"gaussian"', '"laplace"'))
    gaussian = SPEC.format(game="fixed").replace(
        '{ kind = "noisy_mean", d = 100, n = 100, noise = "gaussian", mu = 1.0 }',
        '{ kind = "gaussian", sigma = 1.0 }',
    )
    with pytest.raises(specs.SpecError, match="needs a NoisyMean"):
        specs.loads(gaussian)
