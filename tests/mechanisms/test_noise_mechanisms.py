"""Gaussian and Laplace mechanisms: sampling laws, exact densities, privacy loss, input checks.

Monte Carlo tests use fixed seeds. Each KS test asserts p > 1e-4 (a correct sampler fails with
probability 1e-4 for a random seed); moment checks use tolerances with a stated false-failure
probability below 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.mechanisms import Composed, Gaussian, Laplace

KS_LEVEL = 1e-4


def _laws(mech, loc):
    """The frozen scipy law of one output coordinate around ``loc``."""
    if isinstance(mech, Gaussian):
        return stats.norm(loc=loc, scale=mech.sigma)
    return stats.laplace(loc=loc, scale=mech.scale)


MECHANISMS = [Gaussian(sigma=1.3, sensitivity=2.0), Laplace(scale=0.7, sensitivity=1.5)]


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_scalar_samples_follow_noise_law_around_clipped_sum(mech):
    # records 0.5, 10 (clipped to the sensitivity) and -0.25: the sum is 0.25 + sensitivity
    data = np.array([0.5, 10.0, -0.25])
    loc = 0.25 + mech.sensitivity
    out = mech.sample(data, 20_000, np.random.default_rng(1))
    assert out.shape == (20_000,) and out.dtype == np.float64
    assert stats.kstest(out, _laws(mech, loc).cdf).pvalue > KS_LEVEL


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_vector_records_are_clipped_in_the_mechanism_norm(mech):
    data = np.array([[3.0, 4.0], [0.1, -0.2], [0.0, 0.0]])
    order = mech.norm_order
    norm = np.linalg.norm(data[0], ord=order)
    expected = data[0] * mech.sensitivity / norm + data[1] * min(
        1.0, mech.sensitivity / np.linalg.norm(data[1], ord=order)
    )
    np.testing.assert_allclose(mech.query(data), expected, rtol=1e-14)
    clipped = mech.clip(data)
    assert np.all(np.linalg.norm(clipped, ord=order, axis=1) <= mech.sensitivity * (1 + 1e-12))
    out = mech.sample(data, 5000, np.random.default_rng(2))
    assert out.shape == (5000, 2) and out.dtype == np.float64
    for j in range(2):
        assert stats.kstest(out[:, j], _laws(mech, expected[j]).cdf).pvalue > KS_LEVEL
    # coordinates are independent: the correlation of 5000 pairs is within 5 / sqrt(n)
    # (false-failure probability < 1e-6)
    assert abs(np.corrcoef(out.T)[0, 1]) < 5 / math.sqrt(5000)


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_empty_dataset_and_size_zero(mech):
    assert mech.sample(np.zeros(0), 3, np.random.default_rng(0)).shape == (3,)
    assert mech.sample(np.zeros((0, 4)), 3, np.random.default_rng(0)).shape == (3, 4)
    assert mech.sample([1.0], 0, np.random.default_rng(0)).shape == (0,)
    assert mech.output_shape(np.zeros((0, 4))) == (4,)


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_log_density_matches_scipy(mech):
    data = np.array([[0.3, -2.0], [1.0, 1.0]])
    loc = mech.query(data)
    y = np.random.default_rng(3).normal(size=(50, 2)) * 4
    expected = _laws(mech, loc).logpdf(y).sum(axis=1)
    np.testing.assert_allclose(mech.log_density(data, y), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_log_density_normalises(mech):
    data = np.array([0.4])
    total, err = integrate.quad(
        lambda t: math.exp(mech.log_density(data, np.array([t]))[0]), -np.inf, np.inf
    )
    assert total == pytest.approx(1.0, abs=1e-8)


def test_log_density_far_in_the_tails():
    # closed forms written out (scipy's Laplace logpdf underflows to -inf at 1e8)
    y = np.array([1e8, -1e150, 0.0])
    gauss, lap = Gaussian(sigma=1.3), Laplace(scale=0.7)
    expected_gauss = -0.5 * (y / 1.3) ** 2 - math.log(1.3 * math.sqrt(2 * math.pi))
    expected_lap = -np.abs(y) / 0.7 - math.log(1.4)
    np.testing.assert_allclose(gauss.log_density(np.zeros(0), y), expected_gauss, rtol=1e-14)
    np.testing.assert_allclose(lap.log_density(np.zeros(0), y), expected_lap, rtol=1e-14)
    assert np.isfinite(lap.log_density(np.zeros(0), y)).all()


def test_privacy_loss_mean_is_kl_gaussian_both_orders():
    # L = log p - log q on the worst pair is N(eta, 2 eta) under P, eta = Delta^2 / (2 sigma^2)
    # (Steinke 2022, Prop. 3); its mean is KL(P||Q) = eta, and KL(Q||P) = eta too. The sample
    # mean of n normals is normal: |error| < 5 sd fails with probability 5.7e-7.
    mech = Gaussian(sigma=0.8, sensitivity=1.2)
    pair = mech.worst_case_pair()
    eta = 1.2**2 / (2 * 0.8**2)
    n = 200_000
    rng = np.random.default_rng(4)
    for d, d_prime in [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]:
        y = mech.sample(d, n, rng)
        loss = mech.log_density(d, y) - mech.log_density(d_prime, y)
        assert abs(loss.mean() - eta) < 5 * math.sqrt(2 * eta / n)
        assert abs(loss.var() / (2 * eta) - 1) < 0.02  # sd of the ratio ~ sqrt(2/n) = 0.003


def test_privacy_loss_mean_is_kl_laplace_both_orders():
    # KL(Lap(0,b) || Lap(Delta,b)) = eps0 + exp(-eps0) - 1, eps0 = Delta / b, in both orders.
    # |L| <= eps0, so Hoeffding gives |mean - KL| < 2 eps0 sqrt(log(2/1e-6) / (2n)) with
    # false-failure probability 1e-6.
    mech = Laplace(scale=0.5, sensitivity=0.8)
    eps0 = 0.8 / 0.5
    kl = eps0 + math.exp(-eps0) - 1
    pair = mech.worst_case_pair()
    n = 200_000
    rng = np.random.default_rng(5)
    tol = 2 * eps0 * math.sqrt(math.log(2 / 1e-6) / (2 * n))
    for d, d_prime in [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]:
        y = mech.sample(d, n, rng)
        loss = mech.log_density(d, y) - mech.log_density(d_prime, y)
        assert np.all(np.abs(loss) <= eps0 * (1 + 1e-12))
        assert abs(loss.mean() - kl) < tol


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_worst_case_pair(mech):
    pair = mech.worst_case_pair()
    assert pair.relation == "add_remove"
    assert pair.d.shape == (0,) and pair.d_prime.tolist() == [mech.sensitivity]
    assert mech.query(pair.d_prime) - mech.query(pair.d) == mech.sensitivity


def test_sampling_uses_only_the_given_generator():
    mech = Gaussian(sigma=1.0)
    # the legacy global generator must be left untouched
    np.random.seed(0)  # noqa: NPY002
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    a = mech.sample([1.0], 10, np.random.default_rng(7))
    b = mech.sample([1.0], 10, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_extreme_parameters_stay_finite():
    tiny, huge = Gaussian(sigma=1e-150), Gaussian(sigma=1e150)
    assert np.isfinite(tiny.log_density([0.0], np.array([0.0])))[0]
    assert np.isfinite(huge.log_density([0.0], np.array([1e10])))[0]
    assert tiny.log_density([0.0], np.array([1.0]))[0] < -1e299
    assert Gaussian(sigma=1e-300).log_density([0.0], np.array([1.0]))[0] == -np.inf
    lap = Laplace(scale=1e-300)
    assert lap.log_density([0.0], np.array([1.0]))[0] < -1e299
    assert np.isfinite(Laplace(scale=1e300).log_density([0.0], np.array([0.0])))[0]


@pytest.mark.parametrize(
    ("factory", "param"),
    [
        (lambda: Gaussian(sigma=0.0), "sigma"),
        (lambda: Gaussian(sigma=-1.0), "sigma"),
        (lambda: Gaussian(sigma=float("nan")), "sigma"),
        (lambda: Gaussian(sigma=1.0, sensitivity=0.0), "sensitivity"),
        (lambda: Gaussian(sigma="1"), "sigma"),
        (lambda: Laplace(scale=0.0), "scale"),
        (lambda: Laplace(scale=float("inf")), "scale"),
        (lambda: Laplace(scale=1.0, sensitivity=-2.0), "sensitivity"),
    ],
)
def test_constructor_errors_name_the_parameter(factory, param):
    with pytest.raises(ValueError, match=param):
        factory()


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        (np.zeros((2, 2, 2)), "shape"),
        (np.array(3.0), "shape"),
        (np.array([1.0, np.nan]), "finite"),
        (np.array([1.0, np.inf]), "finite"),
        (["a", "b"], "numbers"),
        ({"x": 1}, "dataset"),
    ],
)
def test_bad_datasets(dataset, message):
    mech = Gaussian(sigma=1.0)
    with pytest.raises(ValueError, match=message):
        mech.sample(dataset, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match=message):
        mech.log_density(dataset, np.zeros(3))


def test_bad_sample_arguments():
    mech = Laplace(scale=1.0)
    with pytest.raises(ValueError, match="size"):
        mech.sample([1.0], -1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="size"):
        mech.sample([1.0], 2.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        mech.sample([1.0], 2, np.random.RandomState(0))
    with pytest.raises(ValueError, match="rng"):
        mech.sample([1.0], 2, 0)


def test_bad_outputs_for_log_density():
    mech = Gaussian(sigma=1.0)
    with pytest.raises(ValueError, match=r"shape \(size,\)"):
        mech.log_density([1.0], np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"shape \(size, 2\)"):
        mech.log_density(np.zeros((1, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        mech.log_density([1.0], np.array([np.nan]))


def test_params_and_name():
    assert Gaussian(sigma=2.0, sensitivity=0.5).params() == {"sigma": 2.0, "sensitivity": 0.5}
    assert Gaussian(sigma=2.0).name == "Gaussian(sigma=2.0, sensitivity=1.0)"
    assert Laplace(scale=1.0).params() == {"scale": 1.0, "sensitivity": 1.0}
    assert Gaussian(sigma=2.0, sensitivity=0.5).mu == 0.25
    assert Laplace(scale=0.5, sensitivity=2.0).pure_epsilon == 4.0


@pytest.mark.parametrize("scale, sensitivity", [(1.0, 1.0), (0.5, 2.0), (3.0, 0.25)])
def test_laplace_log_density_ratio_is_exact_at_the_point_masses(scale, sensitivity):
    # The privacy loss of Lap(0, b) vs Lap(Delta, b) has point masses at +-Delta/b; the closed
    # form must put every clipped output exactly on them, in both orders, and agree with the
    # difference of log densities elsewhere (up to rounding).
    mech = Laplace(scale, sensitivity)
    pair = mech.worst_case_pair()
    eps0 = sensitivity / scale
    for d, d_prime in ((pair.d, pair.d_prime), (pair.d_prime, pair.d)):
        y = mech.sample(d_prime, 200_000, np.random.default_rng(7))
        ratio = mech.log_density_ratio(d, d_prime, y)
        diff = mech.log_density(d_prime, y) - mech.log_density(d, y)
        np.testing.assert_allclose(ratio, diff, rtol=0, atol=1e-12)
        near_atoms = np.abs(np.abs(ratio) - eps0) < 1e-9
        assert near_atoms.mean() > 0.2
        assert set(np.unique(ratio[near_atoms])) <= {-eps0, eps0}


def test_composed_log_density_ratio_sums_the_runs():
    mech = Composed(Laplace(1.0), 4)
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 1000, np.random.default_rng(3))
    ratio = mech.log_density_ratio(pair.d, pair.d_prime, y)
    diff = mech.log_density(pair.d_prime, y) - mech.log_density(pair.d, y)
    np.testing.assert_allclose(ratio, diff, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dim", [None, 4])
def test_gaussian_log_density_ratio_matches_scipy(dim):
    """The linear closed form against scipy's normal log densities, both orders of the pair."""
    rng = np.random.default_rng(11)
    mech = Gaussian(0.8, 1.5)
    if dim is None:
        d, d_prime = np.array([0.4, -2.0]), np.array([0.4, -2.0, 3.0])
    else:
        d = rng.normal(size=(3, dim))
        d_prime = np.vstack([d, 2.0 * rng.normal(size=(1, dim))])
    for p, q in ((d, d_prime), (d_prime, d)):
        y = mech.sample(q, 5000, rng)
        expected = stats.norm.logpdf(y, mech.query(q), mech.sigma) - stats.norm.logpdf(
            y, mech.query(p), mech.sigma
        )
        if dim is not None:
            expected = expected.sum(axis=1)
        np.testing.assert_allclose(mech.log_density_ratio(p, q, y), expected, rtol=0, atol=1e-11)
