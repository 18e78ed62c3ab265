"""Subsampled noisy sums: sampling laws and exact mixture densities against brute force.

Brute force here enumerates every subset of the records explicitly (itertools), independently
of the grouped enumeration in the mechanisms. KS tests assert p > 1e-4 (a correct sampler fails
with probability 1e-4 for a random seed; seeds are fixed).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpaudit
from dpaudit.mechanisms import (
    FixedSizeSubsampled,
    Gaussian,
    Laplace,
    PoissonSubsampled,
    RandomizedResponse,
)
from dpaudit.mechanisms.subsampled import MAX_MIXTURE_TERMS

KS_LEVEL = 1e-4
DATA = np.array([1.0, 1.0, -0.4, 0.0, 0.7, 3.0])  # 3.0 is clipped to the sensitivity


def _noise_law(base, loc):
    if isinstance(base, Gaussian):
        return stats.norm(loc=loc, scale=base.sigma)
    return stats.laplace(loc=loc, scale=base.scale)


def _poisson_components(mech, data):
    """(weight, mean) over all 2^n subsets."""
    clipped = np.clip(data, -mech.sensitivity, mech.sensitivity)
    q = mech.rate
    for subset in itertools.product([0, 1], repeat=len(clipped)):
        w = math.prod(q if s else 1 - q for s in subset)
        yield w, float(np.dot(subset, clipped))


def _fixed_components(mech, data):
    """(weight, mean) over all C(n, m) subsets of size m."""
    clipped = np.clip(data, -mech.sensitivity, mech.sensitivity)
    subsets = list(itertools.combinations(range(len(clipped)), mech.subsample_size))
    for subset in subsets:
        yield 1 / len(subsets), float(clipped[list(subset)].sum())


def _brute_log_density(mech, data, y, components):
    dens = np.zeros_like(y)
    for w, mean in components(mech, data):
        dens += w * _noise_law(mech.base, mean).pdf(y)
    return np.log(dens)


def _brute_cdf(mech, data, components):
    comps = list(components(mech, data))
    return lambda t: sum(w * _noise_law(mech.base, mean).cdf(t) for w, mean in comps)


CASES = [
    (PoissonSubsampled(Gaussian(sigma=0.9, sensitivity=2.0), rate=0.3), _poisson_components),
    (PoissonSubsampled(Laplace(scale=0.5, sensitivity=0.8), rate=0.65), _poisson_components),
    (
        FixedSizeSubsampled(Gaussian(sigma=0.6, sensitivity=1.5), size=2, population=6),
        _fixed_components,
    ),
    (
        FixedSizeSubsampled(Laplace(scale=0.4, sensitivity=1.0), size=4, population=6),
        _fixed_components,
    ),
]
IDS = [c[0].name for c in CASES]


@pytest.mark.parametrize(("mech", "components"), CASES, ids=IDS)
def test_log_density_equals_brute_force_mixture(mech, components):
    y = np.linspace(-6, 8, 57)
    np.testing.assert_allclose(
        mech.log_density(DATA, y), _brute_log_density(mech, DATA, y, components), rtol=1e-11
    )


@pytest.mark.parametrize(("mech", "components"), CASES, ids=IDS)
def test_log_density_normalises(mech, components):
    total, _ = integrate.quad(
        lambda t: math.exp(mech.log_density(DATA, np.array([t]))[0]), -np.inf, np.inf, limit=200
    )
    assert total == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize(("mech", "components"), CASES, ids=IDS)
def test_samples_follow_the_mixture(mech, components):
    out = mech.sample(DATA, 20_000, np.random.default_rng(21))
    assert out.shape == (20_000,) and out.dtype == np.float64
    assert stats.kstest(out, _brute_cdf(mech, DATA, components)).pvalue > KS_LEVEL


def test_vector_records():
    mech = PoissonSubsampled(Gaussian(sigma=0.7, sensitivity=1.0), rate=0.4)
    data = np.array([[3.0, 4.0], [0.0, 0.0], [0.3, 0.1]])
    out = mech.sample(data, 4000, np.random.default_rng(22))
    assert out.shape == (4000, 2)
    y = out[:25]
    clipped = np.array([[0.6, 0.8], [0.0, 0.0], [0.3, 0.1]])
    dens = np.zeros(len(y))
    for subset in itertools.product([0, 1], repeat=3):
        w = math.prod(0.4 if s else 0.6 for s in subset)
        mean = np.asarray(subset, dtype=float) @ clipped
        dens += w * stats.multivariate_normal(mean, 0.49 * np.eye(2)).pdf(y)
    np.testing.assert_allclose(mech.log_density(data, y), np.log(dens), rtol=1e-11)
    # E[output] = q * sum of clipped records; 5 sd of the mean -> false failure < 1e-6 per axis
    sd = np.sqrt(0.49 + 0.4 * 0.6 * (clipped**2).sum(axis=0)) / math.sqrt(len(out))
    assert np.all(np.abs(out.mean(axis=0) - 0.4 * clipped.sum(axis=0)) < 5 * sd)


def test_log_density_far_in_the_tails():
    # q N(1, 1) + (1 - q) N(0, 1) at y = 60 and -60: a naive log(sum(exp)) underflows to -inf
    mech = PoissonSubsampled(Gaussian(sigma=1.0), rate=1e-3)
    y = np.array([60.0, -60.0, 1e4])
    expected = np.logaddexp(
        math.log(1e-3) + stats.norm(1, 1).logpdf(y), math.log1p(-1e-3) + stats.norm.logpdf(y)
    )
    got = mech.log_density([1.0], y)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_identical_records_are_grouped():
    # 2000 identical records: 2001 mixture terms rather than 2^2000 subsets
    mech = PoissonSubsampled(Gaussian(sigma=2.0), rate=0.01)
    data = np.full(2000, 0.5)
    y = np.array([0.0, 10.0, 25.0])
    k = np.arange(2001)
    log_w = stats.binom(2000, 0.01).logpmf(k)
    expected = [np.logaddexp.reduce(log_w + stats.norm(0.5 * k, 2.0).logpdf(t)) for t in y]
    np.testing.assert_allclose(mech.log_density(data, y), expected, rtol=1e-11)


def test_too_many_distinct_records_raise():
    mech = PoissonSubsampled(Gaussian(sigma=1.0), rate=0.5)
    data = np.linspace(0.01, 0.99, 17)  # 2^17 > MAX_MIXTURE_TERMS
    assert 2**17 > MAX_MIXTURE_TERMS
    with pytest.raises(ValueError, match="mixture terms"):
        mech.log_density(data, np.zeros(2))
    # sampling has no such limit
    assert mech.sample(data, 3, np.random.default_rng(0)).shape == (3,)


def test_rate_one_is_the_base_mechanism():
    base = Laplace(scale=0.5)
    mech = PoissonSubsampled(base, rate=1.0)
    y = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(mech.log_density([0.3, 0.5], y), base.log_density([0.3, 0.5], y))


def test_fixed_size_with_large_population_is_fast_and_exact():
    # the worst-case pair of DP-SGD sizes: only two distinct values, so the mixture has 2 terms
    mech = FixedSizeSubsampled(Gaussian(sigma=1.0), size=256, population=60_000)
    pair = mech.worst_case_pair()
    p = 256 / 60_000
    y = np.array([-256.0, -254.0, -250.0])
    expected_d = stats.norm(-256, 1).logpdf(y)
    expected_dp = np.logaddexp(
        math.log1p(-p) + stats.norm(-256, 1).logpdf(y), math.log(p) + stats.norm(-254, 1).logpdf(y)
    )
    # the weights are ratios of binomial coefficients near exp(1649): 1e-9 absolute in log
    np.testing.assert_allclose(mech.log_density(pair.d, y), expected_d, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mech.log_density(pair.d_prime, y), expected_dp, rtol=0, atol=1e-9)
    out = mech.sample(pair.d_prime, 100_000, np.random.default_rng(23))
    # mean -256 + 2p, sd sqrt(1 + 4p(1-p)) / sqrt(n): 5 sd -> false failure < 1e-6
    sd = math.sqrt(1 + 4 * p * (1 - p)) / math.sqrt(len(out))
    assert abs(out.mean() - (-256 + 2 * p)) < 5 * sd


def test_fixed_size_worst_pair_dominates_the_zero_pair():
    # Replacing -Delta by +Delta among records at -Delta gives P = N(c, s^2) against
    # (1-p) N(c, s^2) + p N(c + 2 Delta, s^2). The pair "target 0 vs Delta among zeros" only
    # shifts by Delta: its hockey-stick divergence is smaller for every eps.
    base = Gaussian(sigma=1.0)
    mech = FixedSizeSubsampled(base, size=1, population=2)
    worst = mech.worst_case_pair()
    zero = (np.array([0.0, 0.0]), np.array([0.0, 1.0]))

    def hockey(d, d_prime, eps):
        def integrand(t):
            lp = mech.log_density(d_prime, np.array([t]))[0]
            lq = mech.log_density(d, np.array([t]))[0]
            return max(math.exp(lp) - math.exp(eps + lq), 0.0)

        return integrate.quad(integrand, -12, 12, limit=200)[0]

    for eps in (0.0, 0.5, 1.0):
        assert hockey(worst.d, worst.d_prime, eps) > hockey(*zero, eps) + 1e-3


def test_worst_case_pairs_and_params():
    pois = PoissonSubsampled(Gaussian(sigma=1.1, sensitivity=2.0), rate=0.25)
    pair = pois.worst_case_pair()
    assert pair.relation == "add_remove" == pois.relation
    assert pair.d.shape == (0,) and pair.d_prime.tolist() == [2.0]
    assert pois.params() == {
        "base": {"kind": "gaussian", "sigma": 1.1, "sensitivity": 2.0},
        "rate": 0.25,
    }
    assert pois.name == "PoissonSubsampled(Gaussian(sigma=1.1, sensitivity=2.0), rate=0.25)"
    fixed = FixedSizeSubsampled(Laplace(scale=1.0), size=3, population=10)
    pair = fixed.worst_case_pair()
    assert pair.relation == "replace_one" == fixed.relation
    assert pair.d.tolist() == [-1.0] * 10 and pair.d_prime.tolist() == [-1.0] * 9 + [1.0]
    assert fixed.rate == 0.3
    assert fixed.params()["base"] == {"kind": "laplace", "scale": 1.0, "sensitivity": 1.0}
    assert fixed.params()["size"] == 3 and fixed.params()["population"] == 10


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: PoissonSubsampled(Gaussian(1.0), rate=0.0), "rate"),
        (lambda: PoissonSubsampled(Gaussian(1.0), rate=1.5), "rate"),
        (lambda: PoissonSubsampled(Gaussian(1.0), rate=float("nan")), "rate"),
        (lambda: PoissonSubsampled("gaussian", rate=0.1), "base"),
        (lambda: FixedSizeSubsampled(Gaussian(1.0), size=0, population=10), "size"),
        (lambda: FixedSizeSubsampled(Gaussian(1.0), size=11, population=10), "size"),
        (lambda: FixedSizeSubsampled(Gaussian(1.0), size=1, population=0), "population"),
    ],
)
def test_constructor_errors(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_fixed_size_dataset_must_hold_the_population():
    mech = FixedSizeSubsampled(Gaussian(1.0), size=2, population=5)
    with pytest.raises(ValueError, match="population=5"):
        mech.sample(np.zeros(4), 3, np.random.default_rng(0))


@pytest.mark.parametrize(
    "mech",
    [
        PoissonSubsampled(Gaussian(sigma=0.8), rate=0.3),
        PoissonSubsampled(Laplace(scale=0.5), rate=0.3),
        FixedSizeSubsampled(Gaussian(sigma=1.0), size=2, population=5),
    ],
    ids=lambda m: m.name,
)
def test_privacy_loss_mean_is_kl_both_orders(mech):
    # KL(P||Q) and KL(Q||P) of the worst pair by quadrature of the exact mixture densities,
    # against the Monte Carlo mean of log p - log q.
    pair = mech.worst_case_pair()
    center = -2.0 if mech.relation == "replace_one" else 0.0
    lo, hi = center - 40, center + 40
    n = 100_000
    rng = np.random.default_rng(24)
    for d, d_prime in [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]:

        def integrand(t, d=d, d_prime=d_prime):
            lp = mech.log_density(d, np.array([t]))[0]
            lq = mech.log_density(d_prime, np.array([t]))[0]
            return math.exp(lp) * (lp - lq)

        kl = integrate.quad(integrand, lo, hi, limit=400, points=[center])[0]
        assert kl > 0
        y = mech.sample(d, n, rng)
        loss = mech.log_density(d, y) - mech.log_density(d_prime, y)
        if isinstance(mech.base, Laplace):
            # |L| <= eps0 = 2: Hoeffding, false-failure probability 1e-6
            tol = 2 * 2.0 * math.sqrt(math.log(2 / 1e-6) / (2 * n))
        else:
            # sub-Gaussian loss: 6 sample sd of the mean (normal approximation, ~2e-9)
            tol = 6 * loss.std() / math.sqrt(n)
        assert abs(loss.mean() - kl) < tol


# ------------------------------------------------------------- subsampling any mechanism


def _exact_rr_deltas(eps0, rate, steps, eps):
    """Brute force: ``steps`` runs of Poisson-subsampled binary randomized response. The
    privacy loss depends only on the number ``N`` of reports equal to 1, which is
    ``Binomial(steps, a)`` under ``P`` (the reference record 0, ``a = 1/(1 + e^eps0)``) and
    ``Binomial(steps, b)`` under ``Q = (1 - q) P + q P'`` (``b = a + q (1 - 2a)``).
    Returns ``(delta_{P||Q}(eps), delta_{Q||P}(eps))``, both ``sum_n [p_n - e^eps q_n]_+``."""
    from scipy.stats import binom

    a = 1.0 / (1.0 + np.exp(eps0))
    b = a + rate * (1.0 - 2.0 * a)
    n = np.arange(steps + 1)
    lp, lq = binom.logpmf(n, steps, a), binom.logpmf(n, steps, b)
    cap = 700.0  # e^eps q_n above e^700 only means "no excess"
    pq = np.clip(np.exp(lp) - np.exp(np.minimum(eps + lq, cap)), 0.0, None).sum()
    qp = np.clip(np.exp(lq) - np.exp(np.minimum(eps + lp, cap)), 0.0, None).sum()
    return pq, qp


def _exact_rr_epsilon(eps0, rate, steps, delta, order):
    from scipy.optimize import brentq

    def gap(e):
        return _exact_rr_deltas(eps0, rate, steps, e)[order] - delta

    if gap(0.0) <= 0:
        return 0.0
    return brentq(gap, 0.0, steps * eps0 + 1.0, xtol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.2, 0.5])
@pytest.mark.parametrize("steps", [1, 10, 100, 1000])
def test_subsampled_randomized_response_pld_matches_the_exact_binomial_computation(rate, steps):
    """PLD ``epsilon(delta)`` and ``delta(eps)`` of each order within 1% of the brute-force
    binomial values (deterministic; no randomness)."""
    eps0, delta = 2.0, 1e-5
    mech = PoissonSubsampled(RandomizedResponse(eps0), rate)
    composed = mech.pld().self_compose(steps)
    for order, part in enumerate((composed.pq, composed.qp)):
        exact = _exact_rr_epsilon(eps0, rate, steps, delta, order)
        assert part.epsilon(delta) == pytest.approx(exact, rel=0.01, abs=1e-6)
        eps = 0.5 * exact
        exact_delta = _exact_rr_deltas(eps0, rate, steps, eps)[order]
        assert part.delta(eps) == pytest.approx(exact_delta, rel=0.01, abs=1e-12)
    both = max(_exact_rr_epsilon(eps0, rate, steps, delta, o) for o in (0, 1))
    assert composed.epsilon(delta) == pytest.approx(both, rel=0.01)


def test_subsampled_randomized_response_samples_and_densities_are_the_mixture():
    """Report frequencies agree with ``(1 - q) P + q P'`` to within 5 standard errors (false
    failure below 1e-6) and the density is exactly that mixture, in both pair orders."""
    mech = PoissonSubsampled(RandomizedResponse(2.0, k=3), 0.2)
    pair = mech.worst_case_pair()
    assert pair.d.tolist() == [0] and pair.d_prime.tolist() == [1]
    keep = np.exp(2.0) / (np.exp(2.0) + 2.0)
    p = np.array([keep, (1 - keep) / 2, (1 - keep) / 2])
    p_prime = np.array([(1 - keep) / 2, keep, (1 - keep) / 2])
    for dataset, law in ((pair.d, p), (pair.d_prime, 0.8 * p + 0.2 * p_prime)):
        y = mech.sample(dataset, 200_000, np.random.default_rng(3))
        freq = np.bincount(y.ravel(), minlength=3) / y.size
        assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / y.size))
        dens = np.exp(mech.log_density(dataset, np.arange(3)[:, None]))
        np.testing.assert_allclose(dens, law, rtol=1e-12)


def test_fixed_size_subsampled_randomized_response_density_sums_to_one_and_matches_sampling():
    mech = FixedSizeSubsampled(RandomizedResponse(1.0), 2, 5)
    pair = mech.worst_case_pair()
    outputs = ((np.arange(32)[:, None] >> np.arange(5)) & 1).astype(np.int64)
    total = np.exp(mech.log_density(pair.d_prime, outputs)).sum()
    assert total == pytest.approx(1.0, rel=1e-12)
    # the target is in the sample with probability 2/5: its report is 1 w.p. 0.4 keep + 0.6 flip
    y = mech.sample(pair.d_prime, 100_000, np.random.default_rng(0))
    keep = np.exp(1.0) / (1 + np.exp(1.0))
    expected = 0.4 * keep + 0.6 * (1 - keep)
    assert abs(y[:, -1].mean() - expected) <= 5 * np.sqrt(expected * (1 - expected) / 1e5)
    assert mech.epsilon(1e-6, method="pld") <= 1.0


def test_subsampled_randomized_response_audit_band_contains_the_exact_curve():
    """The audit's Monte Carlo delta interval (95%, empirical Bernstein) contains the exact
    delta in both orders, and its certified eps is below the exact one (each fails with
    probability at most 5%; fixed seed)."""
    eps0, rate = 2.0, 0.1
    mech = PoissonSubsampled(RandomizedResponse(eps0), rate)
    result = dpaudit.audit_mechanism(mech, trials=200_000, seed=0, privacy_loss=True)
    for eps in (0.1, 0.3):
        pq, qp = _exact_rr_deltas(eps0, rate, 1, eps)
        est = result.delta_estimate(eps)
        assert est["lower_d_d_prime"] <= pq <= est["upper_d_d_prime"]
        assert est["lower_d_prime_d"] <= qp <= est["upper_d_prime_d"]
    a = 1.0 / (1.0 + np.exp(eps0))
    b = a + rate * (1.0 - 2.0 * a)
    exact = max(np.log(b / a), np.log((1 - a) / (1 - b)))  # the largest privacy loss
    assert result.epsilon_lower_bound(0.0) <= exact
    assert mech.epsilon(0.0, method="exact") == pytest.approx(exact, rel=1e-9)


def test_subsampled_composition_samples_and_has_a_density():
    from dpaudit.mechanisms.composed import Composed

    mech = PoissonSubsampled(Composed(RandomizedResponse(1.0), 3), 0.3)
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 1000, np.random.default_rng(0))
    assert y.shape[0] == 1000
    assert np.isfinite(mech.log_density(pair.d_prime, y)).all()
    assert dpaudit.audit_mechanism(mech, trials=5000, seed=0).epsilon_lower_bound(0.0) >= 0.0


def test_substitution_is_refused_where_it_cannot_work():
    with pytest.raises(ValueError, match="base"):
        PoissonSubsampled("rr", 0.1)
    with pytest.raises(ValueError, match="reference"):
        PoissonSubsampled(Gaussian(1.0), 0.1, reference=0.0)
    mech = PoissonSubsampled(RandomizedResponse(1.0), 0.1)
    with pytest.raises(ValueError, match="at most 16"):
        mech.log_density(np.ones(17, dtype=int), np.ones((1, 17), dtype=int))
