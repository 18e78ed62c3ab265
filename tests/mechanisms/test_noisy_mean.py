"""The noisy mean of population records: calibration, theory, sampling law, density, pairs.

Monte Carlo tests use fixed seeds. KS and chi-square tests assert p > 1e-4 (a correct sampler
fails with probability 1e-4 for a random seed); moment checks allow 5 standard errors
(false-failure probability below 1e-6 each); audit validity is checked at confidence 0.999, so a
valid bound exceeds the truth with probability at most 1e-3.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpaudit as dpa
from dpaudit.attacks import LikelihoodRatio
from dpaudit.mechanisms import NoisyMean
from tests.reference import rows

P_LEVEL = 1e-4


# --------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("d, n, mu", [(1, 10, 1.0), (100, 100, 1.0), (1000, 50, 0.3)])
def test_mu_calibration_covers_the_whole_release(d, n, mu):
    mech = NoisyMean(d, n, mu=mu)
    # replace-one: a record moves the mean by at most 2/n per coordinate, 2 sqrt(d)/n in l2
    assert mech.sigma == pytest.approx(2 * math.sqrt(d) / (n * mu), rel=1e-14)
    assert mech.mu == pytest.approx(mu, rel=1e-14)
    assert mech.l2_sensitivity == pytest.approx(2 * math.sqrt(d) / n, rel=1e-14)
    assert mech.l1_sensitivity == pytest.approx(2 * d / n, rel=1e-14)


def test_coordinate_calibration_forgets_composition():
    good = NoisyMean(100, 100, mu=1.0)
    bad = NoisyMean(100, 100, mu=1.0, calibration="coordinate")
    assert bad.sigma == pytest.approx(2 / 100, rel=1e-14)
    assert bad.mu == pytest.approx(10.0, rel=1e-14)  # sqrt(d) times the claim
    assert good.sigma / bad.sigma == pytest.approx(10.0, rel=1e-14)
    lap = NoisyMean(20, 10, "laplace", eps=0.5, calibration="coordinate")
    assert lap.pure_epsilon == pytest.approx(20 * 0.5, rel=1e-14)


def test_gaussian_eps_delta_calibration_is_exact():
    mech = NoisyMean(50, 200, eps=1.0, delta=1e-5)
    assert mech.epsilon(1e-5, method="exact") == pytest.approx(1.0, rel=1e-9)
    assert mech.delta(1.0, method="exact") == pytest.approx(1e-5, rel=1e-7)


def test_laplace_calibration_is_pure_dp():
    mech = NoisyMean(3, 10, "laplace", eps=1.5)
    assert mech.scale == pytest.approx(2 * 3 / (10 * 1.5), rel=1e-14)
    assert mech.pure_epsilon == pytest.approx(1.5, rel=1e-14)
    # Kairouz-Oh-Viswanath with i = 0: k-fold eps0-DP is (k eps0, 0)-DP, and nothing better
    assert mech.epsilon(0.0, method="kov") == pytest.approx(1.5, rel=1e-12)
    # the pessimistic PLD is an upper bound within its grid error
    assert 1.5 - 1e-12 <= mech.epsilon(0.0, method="pld") <= 1.5 * 1.01


def test_theory_methods():
    assert NoisyMean(10, 10, mu=1.0).theory_methods == ("exact", "pld", "rdp")
    assert NoisyMean(10, 10, "laplace", eps=1.0).theory_methods == (
        "pld",
        "rdp",
        "kov",
        "advanced",
    )
    assert NoisyMean(1, 10, "laplace", eps=1.0).theory_methods == ("exact", "pld", "rdp")


# --------------------------------------------------------------------------- theory vs reference
@pytest.mark.parametrize("row", rows(item="4"), ids=lambda r: f"k={r['params']['k']}")
def test_composed_gaussian_theory_matches_reference(row):
    # d coordinates with per-coordinate shift 2/n = 0.2 and sigma = 1: the reference's k-fold
    # Gaussian with sigma 5 and sensitivity 1 (only shift/sigma matters)
    k = int(row["params"]["k"])
    mech = NoisyMean(k, 10, sigma=1.0)
    assert mech.mu == pytest.approx(math.sqrt(k) / 5.0, rel=1e-14)
    assert mech.epsilon(row["query"], method="exact") == pytest.approx(row["value"], rel=1e-9)
    if k <= 100:
        pld_eps = mech.epsilon(row["query"], method="pld")
        assert row["value"] * (1 - 1e-9) <= pld_eps <= row["value"] * 1.01


LAPLACE_ROWS = [r for r in rows(item="2") if r["quantity"] == "delta" and r["kind"] == "exact"]


@pytest.mark.parametrize("row", LAPLACE_ROWS, ids=lambda r: f"b={r['params']['b']}-{r['query']}")
def test_one_coordinate_laplace_matches_reference(row):
    # n = 2: a replaced record moves the single coordinate by 2/n = 1, the reference sensitivity
    mech = NoisyMean(1, 2, "laplace", scale=row["params"]["b"])
    assert mech.delta(row["query"], method="exact") == pytest.approx(row["value"], abs=1e-12)


# --------------------------------------------------------------------------- sampling law
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_fixed_dataset_release_is_mean_plus_noise(noise):
    mech = NoisyMean(4, 30, noise, **({"sigma": 0.1} if noise == "gaussian" else {"scale": 0.1}))
    data = mech.worst_case_pair().d_prime
    mean = data.mean(axis=0)
    out = mech.sample(data, 20_000, np.random.default_rng(1))
    assert out.shape == (20_000, 4) and out.dtype == np.float64
    law = stats.norm(scale=0.1) if noise == "gaussian" else stats.laplace(scale=0.1)
    for j in range(4):
        assert stats.kstest(out[:, j] - mean[j], law.cdf).pvalue > P_LEVEL
    # independent coordinates: |correlation| < 5/sqrt(N) (false failure < 1e-6)
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < 5 / math.sqrt(20_000)


def test_fresh_entries_are_binomial_draws_from_the_population():
    p = np.array([0.6, -0.2, 0.0])
    mech = NoisyMean(3, 5, sigma=1e-9, population=p)
    # two given records: coordinate 1 of the second one is fresh; 3 records missing
    data = np.array([[1, 1, -1], [1, 0, 1]])
    np.testing.assert_array_equal(mech.fresh_counts(data), [3, 4, 3])
    out = mech.sample(data, 40_000, np.random.default_rng(2))
    sums = np.rint(out * 5).astype(int)  # the noise is 1e-9: the sum of the 5 records
    fixed = np.array([2, 1, 0])
    for j, m in enumerate([3, 4, 3]):
        ones = (sums[:, j] - fixed[j] + m) // 2
        observed = np.bincount(ones, minlength=m + 1)
        expected = stats.binom.pmf(np.arange(m + 1), m, (1 + p[j]) / 2) * out.shape[0]
        assert stats.chisquare(observed, expected).pvalue > P_LEVEL


def test_release_moments_match_monte_carlo():
    mech = NoisyMean(6, 40, mu=1.0, seed=3)
    for dataset in (mech.tracing_pair("fresh").d, mech.tracing_pair("fresh").d_prime):
        mean, var = mech.release_moments(dataset)
        out = mech.sample(dataset, 50_000, np.random.default_rng(4))
        se = np.sqrt(var / out.shape[0])
        assert np.all(np.abs(out.mean(axis=0) - mean) < 5 * se)
        # variance of a sample variance of near-normal data: 2 var^2 / N
        assert np.all(np.abs(out.var(axis=0) - var) < 5 * var * math.sqrt(2 / out.shape[0]))


def test_sample_shapes_and_reproducibility():
    mech = NoisyMean(5, 8, mu=1.0)
    pair = mech.tracing_pair("fixed")
    assert mech.sample(pair.d, 0, np.random.default_rng(0)).shape == (0, 5)
    assert mech.output_shape(pair.d) == (5,)
    a = mech.sample(pair.d, 10, np.random.default_rng(7))
    b = mech.sample(pair.d, 10, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    # the empty dataset: n fresh records
    assert mech.sample([], 3, np.random.default_rng(0)).shape == (3, 5)


# --------------------------------------------------------------------------- density
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_log_density_of_fixed_dataset_matches_scipy(noise):
    kw = {"sigma": 0.3} if noise == "gaussian" else {"scale": 0.3}
    mech = NoisyMean(3, 4, noise, **kw)
    data = mech.worst_case_pair().d
    y = np.random.default_rng(5).normal(size=(40, 3))
    law = stats.norm(scale=0.3) if noise == "gaussian" else stats.laplace(scale=0.3)
    expected = law.logpdf(y - data.mean(axis=0)).sum(axis=1)
    np.testing.assert_allclose(mech.log_density(data, y), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_log_density_with_fresh_entries_matches_enumeration(noise):
    kw = {"sigma": 0.4} if noise == "gaussian" else {"scale": 0.4}
    p = np.array([0.3, -0.7])
    mech = NoisyMean(2, 3, noise, population=p, **kw)
    data = np.array([[1, 0]])  # coordinate 0: 2 fresh entries; coordinate 1: 3 fresh entries
    law = stats.norm(scale=0.4) if noise == "gaussian" else stats.laplace(scale=0.4)
    y = np.random.default_rng(6).normal(size=(25, 2))
    expected = np.zeros(25)
    for j, (given, m) in enumerate([(1, 2), (0, 3)]):
        dens = np.zeros(25)
        # enumerate all 2^m fresh configurations with their probabilities
        for draw in itertools.product([-1, 1], repeat=m):
            prob = np.prod([(1 + p[j]) / 2 if x == 1 else (1 - p[j]) / 2 for x in draw])
            dens += prob * law.pdf(y[:, j] - (given + sum(draw)) / 3)
        expected += np.log(dens)
    np.testing.assert_allclose(mech.log_density(data, y), expected, rtol=1e-12)


def test_log_density_with_fresh_records_integrates_to_one():
    mech = NoisyMean(1, 4, sigma=0.2, population=[0.25])
    for data in (np.zeros((0, 1)), np.array([[1]]), np.array([[0], [-1]])):
        total, _ = integrate.quad(
            lambda t, data=data: math.exp(mech.log_density(data, np.array([[t]]))[0]),
            -3,
            3,
            points=[-1, -0.5, 0, 0.5, 1],
            limit=200,
        )
        assert total == pytest.approx(1.0, abs=1e-8)


# --------------------------------------------------------------------------- pairs
def test_worst_case_pair_negates_the_target():
    mech = NoisyMean(30, 20, mu=1.0, seed=9)
    pair = mech.worst_case_pair()
    assert pair.relation == "replace_one"
    assert pair.d.shape == pair.d_prime.shape == (20, 30)
    np.testing.assert_array_equal(pair.d[0], -pair.d_prime[0])
    np.testing.assert_array_equal(pair.d[1:], pair.d_prime[1:])
    np.testing.assert_array_equal(pair.d_prime[0], mech.target)
    assert set(np.unique(pair.d_prime)) <= {-1, 1}
    assert mech.pair_mu(pair) == pytest.approx(1.0, rel=1e-12)
    assert mech.pair_mu(pair.swapped()) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("swap", [False, True])
def test_privacy_loss_on_worst_case_pair_is_gaussian(swap):
    # Steinke 2022, Prop. 3: log q/p under P is N(-mu^2/2, mu^2) for G_mu, in both orders
    mech = NoisyMean(25, 50, mu=1.5)
    pair = mech.worst_case_pair()
    pair = pair.swapped() if swap else pair
    y = mech.sample(pair.d, 40_000, np.random.default_rng(10))
    loss = LikelihoodRatio(mech, pair).score(y)
    assert abs(loss.mean() + 1.5**2 / 2) < 5 * 1.5 / math.sqrt(40_000)
    assert stats.kstest(loss, stats.norm(-(1.5**2) / 2, 1.5).cdf).pvalue > P_LEVEL


def test_tracing_pairs():
    mech = NoisyMean(12, 7, mu=1.0, seed=4)
    fixed = mech.tracing_pair("fixed")
    assert fixed.relation == "replace_one" and fixed.d.shape == (7, 12)
    np.testing.assert_array_equal(fixed.d_prime[0], mech.target)
    np.testing.assert_array_equal(fixed.d[0], mech.replacement)
    np.testing.assert_array_equal(fixed.d[1:], fixed.d_prime[1:])
    np.testing.assert_array_equal(fixed.d_prime, mech.worst_case_pair().d_prime)
    fresh = mech.tracing_pair("fresh")
    np.testing.assert_array_equal(fresh.d, np.zeros((1, 12)))
    np.testing.assert_array_equal(fresh.d_prime, mech.target[None, :])
    assert (mech.game_of(fixed), mech.game_of(fresh)) == ("fixed", "fresh")
    for pair in (fixed, fresh, mech.worst_case_pair()):
        np.testing.assert_array_equal(mech.target_of(pair), mech.target)
    with pytest.raises(ValueError, match="pair_mu needs two fixed datasets"):
        mech.pair_mu(fresh)
    with pytest.raises(ValueError, match="exactly one record"):
        mech.target_of(dpa.mechanisms.NeighbouringPair(fixed.d, fixed.d, "replace_one"))


def test_pair_mu_is_the_neyman_pearson_optimum():
    mech = NoisyMean(40, 25, mu=1.0, seed=2)
    pair = mech.tracing_pair("fixed")
    z, z_prime = mech.target, mech.replacement
    expected = np.linalg.norm(z - z_prime.astype(float)) / (25 * mech.sigma)
    assert mech.pair_mu(pair) == pytest.approx(expected, rel=1e-12)


def test_likelihood_ratio_audit_reaches_the_worst_case_mu():
    mech = NoisyMean(20, 50, mu=1.0, seed=1)
    result = dpa.audit_mechanism(mech, trials=50_000, seed=3)
    # valid: at most the true mu = 1 at confidence 0.999 (false failure <= 1e-3); tight: at
    # 5e4 trials and confidence 0.95 the estimate's standard deviation is about 0.01 and the
    # margins cost about 0.03, far inside the 0.1 allowed
    assert dataclasses.replace(result, confidence=0.999).mu_lower_bound() <= 1.0
    assert result.mu_lower_bound() >= 0.9


def test_membership_loss_is_mean_squared_error_to_target():
    mech = NoisyMean(4, 3, mu=1.0)
    pair = mech.tracing_pair("fresh")
    y = np.random.default_rng(0).normal(size=(6, 4))
    expected = [np.mean((row - mech.target) ** 2) for row in y]
    np.testing.assert_allclose(mech.membership_loss(pair)(y), expected, rtol=1e-14)


def test_params_and_name():
    mech = NoisyMean(3, 5, mu=1.0, population=[0.1, 0.2, -0.3], seed=4)
    params = mech.params()
    assert json.loads(json.dumps(params)) == params
    assert params["population"] == [0.1, 0.2, -0.3] and params["mu"] == 1.0
    assert "sigma" not in params
    assert mech.name == f"NoisyMean(d=3, n=5, gaussian, sigma={2 * math.sqrt(3) / 5:.6g})"
    again = NoisyMean(**params)
    assert again.sigma == mech.sigma
    np.testing.assert_array_equal(again.worst_case_pair().d, mech.worst_case_pair().d)
    np.testing.assert_array_equal(again.population, mech.population)


# --------------------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0, "n": 5, "mu": 1.0}, "d must be an integer in"),
        ({"d": 2, "n": 0, "mu": 1.0}, "n must be an integer in"),
        ({"d": 2.5, "n": 5, "mu": 1.0}, "d must be an integer"),
        ({"d": 2, "n": 5, "noise": "cauchy", "mu": 1.0}, "noise must be one of"),
        ({"d": 2, "n": 5}, "exactly one of sigma, mu, eps"),
        ({"d": 2, "n": 5, "sigma": 1.0, "mu": 1.0}, "exactly one of"),
        ({"d": 2, "n": 5, "sigma": 0.0}, r"sigma must be in \(0, inf\)"),
        ({"d": 2, "n": 5, "mu": -1.0}, r"mu must be in \(0, inf\)"),
        ({"d": 2, "n": 5, "mu": float("nan")}, "mu must be a real number"),
        ({"d": 2, "n": 5, "eps": 1.0}, "needs delta"),
        ({"d": 2, "n": 5, "eps": 1.0, "delta": 1.0}, r"delta must be in \(0, 1\)"),
        ({"d": 2, "n": 5, "noise": "laplace", "mu": 1.0}, "mu does not apply"),
        ({"d": 2, "n": 5, "noise": "laplace", "sigma": 1.0}, "sigma does not apply"),
        ({"d": 2, "n": 5, "scale": 1.0}, "scale does not apply"),
        ({"d": 2, "n": 5, "noise": "laplace", "eps": 1.0, "delta": 1e-5}, "delta is only"),
        ({"d": 2, "n": 5, "sigma": 1.0, "calibration": "coordinate"}, "calibration"),
        ({"d": 2, "n": 5, "mu": 1.0, "calibration": "global"}, "calibration must be one of"),
        ({"d": 2, "n": 5, "mu": 1.0, "population": [0.1]}, r"population must have shape \(2,\)"),
        ({"d": 2, "n": 5, "mu": 1.0, "population": [0.1, 1.5]}, r"population must lie in"),
        ({"d": 2, "n": 5, "mu": 1.0, "population": [0.1, np.nan]}, r"population must lie in"),
        ({"d": 2, "n": 5, "mu": 1.0, "seed": -1}, "seed must be an integer in"),
    ],
)
def test_constructor_refuses_wrong_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoisyMean(**kwargs)


@pytest.mark.parametrize(
    "dataset, match",
    [
        (np.ones((3, 2)), r"shape \(k, 3\)"),
        (np.ones(3), r"shape \(k, 3\)"),
        (np.ones((6, 3)), "at most n = 5 records"),
        (np.full((1, 3), 2.0), "entries must be -1 or \\+1"),
        (np.full((1, 3), 0.5), "entries must be -1 or \\+1"),
        (np.full((1, 3), np.nan), "entries must be -1 or \\+1"),
        ("abc", "dataset must be an array of records"),
    ],
)
def test_datasets_are_validated(dataset, match):
    mech = NoisyMean(3, 5, mu=1.0)
    with pytest.raises(ValueError, match=match):
        mech.sample(dataset, 2, np.random.default_rng(0))


def test_sampling_and_density_arguments_are_validated():
    mech = NoisyMean(3, 5, mu=1.0)
    data = mech.worst_case_pair().d
    with pytest.raises(ValueError, match="size must be an integer"):
        mech.sample(data, -1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        mech.sample(data, 2, 0)
    with pytest.raises(ValueError, match=r"outputs must have shape \(size, 3\)"):
        mech.log_density(data, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="pair_mu needs noise 'gaussian'"):
        NoisyMean(3, 5, "laplace", eps=1.0).pair_mu(mech.worst_case_pair())
    with pytest.raises(ValueError, match="game must be one of"):
        mech.tracing_pair("random")


@pytest.mark.parametrize("mu", [1e-8, 1e3])
@pytest.mark.parametrize("fresh", [False, True])
def test_extreme_parameters_stay_finite(mu, fresh):
    mech = NoisyMean(4, 1, mu=mu, population=[1.0, -1.0, 0.0, 0.999])
    pair = mech.tracing_pair("fresh" if fresh else "fixed")
    y = mech.sample(pair.d_prime, 50, np.random.default_rng(0))
    assert np.isfinite(y).all()
    ld = mech.log_density(pair.d, y)
    assert ld.shape == (50,) and not np.isnan(ld).any()
    assert np.isfinite(mech.log_density(pair.d_prime, y)).all()
