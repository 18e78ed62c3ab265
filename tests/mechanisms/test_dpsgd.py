"""DP-SGD: datasets, canaries, per-example gradients, vectorised training, batch sampling, the
exact law of the white-box observations and the delegated theory.

Independent references: finite differences of the loss, a plain Python training loop, exact
decoding of which records a batch held (Dirac records with coefficients 2^-(i+1)), closed-form
mixture densities, quadrature, and the third-party reference values of item 5.
"""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.attacks import LikelihoodRatio, MembershipInference
from dpaudit.mechanisms import Composed, FixedSizeSubsampled, Gaussian, PoissonSubsampled
from dpaudit.mechanisms import datasets as ds
from dpaudit.mechanisms.dpsgd import DPSGD
from tests.reference import rows

TINY = 1e-13  # noise multiplier small enough to read the noiseless sums off the updates


def _normal_logpdf(z, sigma):
    return -0.5 * (z / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)


# ----------------------------------------------------------------------------- datasets
def test_synthetic_is_reproducible_and_binary():
    a, b, c = ds.synthetic(seed=3), ds.synthetic(seed=3), ds.synthetic(seed=4)
    assert a.features.shape == (1000, 20) and a.labels.shape == (1000,)
    assert np.array_equal(a.features, b.features) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.features, c.features)
    assert set(np.unique(a.labels)) == {0.0, 1.0}
    records = a.records()
    assert records.shape == (1000, 22)
    assert np.array_equal(records[:, -1], np.zeros(1000))


def test_goog_features_recomputed_from_raw_prices():
    from matplotlib import cbook

    data = ds.goog()
    assert (data.n, data.dim) == (1041, 20)
    with cbook.get_sample_data("goog.npz") as f:
        p = f["price_data"]
    # example i is day t = 5 + i; the first feature is the log return of day t, the fourth the
    # log volume change of day t, feature 4j + 1 the log range of day t - j
    raw = np.array(
        [
            [
                math.log(p["close"][t] / p["close"][t - 1]),
                math.log(p["volume"][t] / p["volume"][t - 1]),
                math.log(p["high"][t - 2] / p["low"][t - 2]),
            ]
            for t in range(5, 1046)
        ]
    )
    for column, feature in zip(raw.T, (0, 3, 9), strict=True):
        expected = (column - column.mean()) / column.std()
        assert np.allclose(data.features[:, feature], expected, atol=1e-12)
    up = np.array([p["close"][t + 1] > p["close"][t] for t in range(5, 1046)], dtype=float)
    assert np.array_equal(data.labels, up)


def test_load_and_dataset_validation():
    assert ds.load("synthetic", n=5, dim=2).n == 5
    with pytest.raises(ValueError, match="dataset must be one of"):
        ds.load("mnist")
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        ds.Dataset("x", np.zeros((2, 1)), [0.0, 2.0])
    with pytest.raises(ValueError, match="features must have shape"):
        ds.Dataset("x", np.zeros(3), [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="n >= 1"):
        ds.Dataset("x", np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match="n must be an integer"):
        ds.synthetic(n=0)


def test_input_canary_is_an_outlier_along_the_least_used_direction_and_mislabelled():
    data = ds.synthetic(n=300, dim=6, seed=2)
    canary = ds.input_canary(data)
    x, label, coef = canary[:6], canary[6], canary[7]
    assert coef == 0.0
    centred = data.features - data.features.mean(axis=0)
    offset = x - data.features.mean(axis=0)
    assert np.linalg.norm(offset) == pytest.approx(
        3.0 * np.linalg.norm(centred, axis=1).max(), rel=1e-12
    )
    # the offset's direction attains the smallest variance of the data
    u = offset / np.linalg.norm(offset)
    smallest = np.linalg.eigvalsh(centred.T @ centred)[0]
    assert u @ centred.T @ centred @ u == pytest.approx(smallest, rel=1e-9)
    # least squares through the normal equations, independently of the module's lstsq
    design = np.column_stack([data.features, np.ones(data.n)])
    beta = np.linalg.solve(design.T @ design, design.T @ data.labels)
    assert label == (0.0 if np.append(x, 1.0) @ beta >= 0.5 else 1.0)


def test_dirac_canary_record_and_record_validation():
    rec = ds.dirac_canary(3, -0.5)
    assert np.array_equal(rec, [0, 0, 0, 0, -0.5])
    for bad in (0.0, 1.5, -2.0):
        with pytest.raises(ValueError, match="sign must be in"):
            ds.dirac_canary(3, bad)
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        ds.split_records(np.zeros((4, 4)), 3)
    with pytest.raises(ValueError, match="labels"):
        ds.split_records([[0, 0, 0, 0.5, 0]], 3)
    with pytest.raises(ValueError, match=r"canary coefficients .* \[-1, 1\]"):
        ds.split_records([[0, 0, 0, 1, 1.5]], 3)
    with pytest.raises(ValueError, match="finite"):
        ds.split_records([[0, 0, np.nan, 1, 0]], 3)


# ----------------------------------------------------------------------------- gradients
SMALL = ds.synthetic(n=7, dim=3, seed=4)


def _mech(model="logistic", **kw):
    args = dict(sigma=TINY, rate=1.0, steps=4, clip=0.7, hidden=3, learning_rate=0.9)
    args.update(kw)
    return DPSGD(model, SMALL, **args)


def _finite_difference(mech, theta, record, h=1e-6):
    grad = np.empty_like(theta)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        grad[j] = (mech.loss(theta + e, record)[0] - mech.loss(theta - e, record)[0]) / (2 * h)
    return grad


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_per_example_gradients_match_finite_differences(model):
    mech = _mech(model)
    theta = np.random.default_rng(1).normal(size=mech.n_params)
    records = np.vstack([SMALL.records(), ds.dirac_canary(3, -0.4)])
    grads = mech.gradients(theta, records, clipped=False)
    fd = np.array([_finite_difference(mech, theta, r) for r in records])
    assert np.allclose(grads, fd, rtol=1e-6, atol=1e-8)
    # ordinary examples never touch the canary coordinate; the Dirac record only touches it
    assert np.array_equal(grads[:-1, -1], np.zeros(7))
    assert np.array_equal(grads[-1], np.eye(mech.n_params)[-1] * (-0.4 * 0.7))


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_clipping_scales_to_norm_at_most_c_and_keeps_direction(model):
    mech = _mech(model)
    theta = np.random.default_rng(2).normal(scale=2.0, size=mech.n_params)
    raw = mech.gradients(theta, SMALL.records(), clipped=False)
    clipped = mech.gradients(theta, SMALL.records())
    norms = np.linalg.norm(raw, axis=1)
    assert (norms > 0.7).any() and (norms < 0.7).any()
    assert np.allclose(np.linalg.norm(clipped, axis=1), np.minimum(norms, 0.7), rtol=1e-12)
    assert np.allclose(clipped, raw * np.minimum(1.0, 0.7 / norms)[:, None], rtol=1e-12)


def test_loss_values():
    mech = _mech("logistic")
    theta = np.array([[0.3, -1.0, 2.0, 0.5, 7.0], [0.0, 0.0, 0.0, 0.0, -1.0]])
    record = np.array([1.0, 2.0, -1.0, 1.0, 0.0])
    z = np.array([0.3 - 2.0 - 2.0 + 0.5, 0.0])
    assert np.allclose(mech.loss(theta, record), np.log1p(np.exp(-z)), rtol=1e-12)
    assert np.allclose(mech.loss(theta, ds.dirac_canary(3, 0.5)), 0.5 * 0.7 * theta[:, -1])
    with pytest.raises(ValueError, match=r"params must have shape \(size, 5\)"):
        mech.loss(np.zeros((2, 4)), record)


# ----------------------------------------------------------------------------- training
def _loop_training(mech, records, steps):
    """Full-batch NoisySGD without noise, one step at a time."""
    theta = mech.initial_params()
    updates = []
    for _ in range(steps):
        total = mech.gradients(theta, records).sum(axis=0)
        updates.append(total[-1] / mech.clip)
        theta = theta - mech.learning_rate / mech.batch_scale * total
    return theta, np.array(updates)


@pytest.mark.parametrize("model", ["logistic", "mlp"])
@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_vectorised_training_matches_a_plain_loop(model, sampling):
    # rate 1 / batch size n: every record is in every batch, so the runs are deterministic
    args = dict(sigma=TINY, steps=4, clip=0.7, hidden=3, learning_rate=0.9, sampling=sampling)
    args.update({"rate": 1.0} if sampling == "poisson" else {"batch_size": 7})
    mech = DPSGD(model, SMALL, **args)
    white = DPSGD(model, SMALL, observe="updates", **args)
    records = SMALL.records()
    records[2] = ds.dirac_canary(3, 0.6)
    expected, expected_updates = _loop_training(mech, records, 4)
    out = mech.sample(records, 3, np.random.default_rng(0))
    assert out.shape == (3, mech.n_params)
    assert np.allclose(out, expected, rtol=0, atol=1e-10)
    updates = white.sample(records, 3, np.random.default_rng(0))
    assert np.allclose(updates, expected_updates, rtol=0, atol=1e-10)
    assert np.allclose(updates, 0.6, atol=1e-10)


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_final_canary_coordinate_is_the_sum_of_the_updates(sampling):
    # same training randomness: theta_c(T) = -(lr C / B) * sum_t y_t, whatever else happens
    batch = {"rate": 0.05} if sampling == "poisson" else {"batch_size": 50}
    args = dict(sigma=0.8, steps=12, clip=0.3, learning_rate=0.7, sampling=sampling, **batch)
    final = DPSGD(**args)
    updates = DPSGD(observe="updates", **args)
    pair = final.worst_case_pair()
    theta = final.sample(pair.d_prime, 40, np.random.default_rng(8))
    y = updates.sample(pair.d_prime, 40, np.random.default_rng(8))
    expected = -0.7 * 0.3 / final.batch_scale * y.sum(axis=1)
    assert np.allclose(theta[:, final.canary_index], expected, rtol=1e-12, atol=1e-15)


def test_noise_scale_on_an_empty_dataset():
    # with no record the final parameters are -lr/B * sigma C * (sum of T standard normals)
    mech = DPSGD(sigma=1.7, rate=0.02, steps=9, clip=0.5, learning_rate=0.3, canary="dirac")
    empty = np.zeros((0, 22))
    out = mech.sample(empty, 4000, np.random.default_rng(5))
    sd = 0.3 / mech.batch_scale * 1.7 * 0.5 * 3.0
    z = out / sd
    # sum of squares of 4000 * 22 standard normals: chi-square, 6 standard deviations
    # (false failure < 1e-8)
    n = z.size
    assert abs(np.sum(z * z) - n) < 6 * math.sqrt(2 * n)
    assert abs(z.mean()) < 6 / math.sqrt(n)


def test_reproducible_and_sizes():
    mech = DPSGD(sigma=1.0, rate=0.05, steps=7, canary="input")
    pair = mech.worst_case_pair()
    a = mech.sample(pair.d_prime, 10, np.random.default_rng(9))
    b = mech.sample(pair.d_prime, 10, np.random.default_rng(9))
    assert np.array_equal(a, b)
    assert mech.sample(pair.d, 0, np.random.default_rng(0)).shape == (0, 22)
    assert mech.output_shape(pair.d) == (22,)
    white = DPSGD(sigma=1.0, rate=0.05, steps=7, observe="updates")
    assert white.sample(pair.d, 0, np.random.default_rng(0)).shape == (0, 7)
    assert white.output_shape(pair.d) == (7,)
    assert np.isfinite(a).all()


# ----------------------------------------------------------------------------- batch sampling
def _decode(updates, n):
    """Which of n Dirac records with coefficients 2^-(i+1) each batch held: (draws, n) bools."""
    code = np.rint(updates.ravel() * 2**n).astype(np.int64)
    assert np.allclose(updates.ravel() * 2**n, code, atol=1e-6)
    return ((code[:, None] >> (n - 1 - np.arange(n))) & 1).astype(bool)


def _coded_records(n, dim=2):
    records = np.zeros((n, dim + 2))
    records[:, -1] = 2.0 ** -(np.arange(n) + 1)
    return records


def assert_independent_bernoulli_batches(held: np.ndarray, q: float) -> None:
    """``held`` (draws x records, 0/1) holds independent Bernoulli(``q``) memberships: each
    frequency and each pair's joint frequency within 5.5 standard errors, and a chi-square test
    of the batch sizes at 1e-6 (false failure below 1e-5 over the 56 checks for 10 records)."""
    n = held.shape[1]
    draws = held.shape[0]
    freq = held.mean(axis=0)
    assert np.all(np.abs(freq - q) < 5.5 * math.sqrt(q * (1 - q) / draws))
    joint = (held[:, :, None] & held[:, None, :]).mean(axis=0)[np.triu_indices(n, 1)]
    assert np.all(np.abs(joint - q * q) < 5.5 * math.sqrt(q * q * (1 - q * q) / draws))
    sizes = np.bincount(held.sum(axis=1), minlength=n + 1)
    expected = stats.binom.pmf(np.arange(n + 1), n, q) * draws
    keep = expected > 5
    chi2 = np.sum((sizes[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-6


def test_poisson_batches_are_independent_bernoulli():
    n, q = 10, 0.3
    mech = DPSGD(sigma=TINY, rate=q, steps=20, observe="updates")
    held = _decode(mech.sample(_coded_records(n, 20), 2000, np.random.default_rng(3)), n)
    assert_independent_bernoulli_batches(held, q)


@pytest.mark.parametrize("m", [3, 7])  # Floyd's algorithm (m^2 <= 4n) and random keys
def test_fixed_batches_are_uniform_subsets(m):
    n = 10
    mech = DPSGD(
        "logistic",
        ds.synthetic(n=n, dim=2),
        sigma=TINY,
        batch_size=m,
        steps=20,
        sampling="fixed",
        observe="updates",
    )
    held = _decode(mech.sample(_coded_records(n), 2000, np.random.default_rng(4)), n)
    assert np.all(held.sum(axis=1) == m)
    draws = held.shape[0]
    subsets = {s: i for i, s in enumerate(combinations(range(n), m))}
    index = [subsets[tuple(np.flatnonzero(row))] for row in held]
    counts = np.bincount(index, minlength=len(subsets))
    chi2 = np.sum((counts - draws / len(subsets)) ** 2 / (draws / len(subsets)))
    # every m-subset equally likely (false failure 1e-6)
    assert stats.chi2.sf(chi2, len(subsets) - 1) > 1e-6


def test_fixed_size_needs_the_full_dataset():
    mech = DPSGD(sigma=1.0, batch_size=10, steps=3, sampling="fixed", canary="input")
    with pytest.raises(ValueError, match="exactly n=1000 records"):
        mech.sample(np.zeros((999, 22)), 2, np.random.default_rng(0))


# ----------------------------------------------------------------------------- the white-box law
def test_updates_density_closed_form_poisson():
    sigma, q = 0.8, 0.1
    mech = DPSGD(sigma=sigma, rate=q, steps=3, observe="updates")
    pair = mech.worst_case_pair()
    y = np.random.default_rng(0).normal(0.3, 1.5, size=(50, 3))
    lp = mech.log_density(pair.d, y)
    lq = mech.log_density(pair.d_prime, y)
    assert np.allclose(lp, _normal_logpdf(y, sigma).sum(axis=1), rtol=1e-12)
    mix = np.logaddexp(
        math.log1p(-q) + _normal_logpdf(y, sigma), math.log(q) + _normal_logpdf(y - 1, sigma)
    )
    assert np.allclose(lq, mix.sum(axis=1), rtol=1e-12)
    # the Neyman-Pearson score of docs/theory.md#dpsgd
    score = LikelihoodRatio(mech, pair).score(y)
    expected = np.log(1 - q + q * np.exp((2 * y - 1) / (2 * sigma**2))).sum(axis=1)
    assert np.allclose(score, expected, rtol=1e-10)
    # both orders: the swapped pair scores the negative
    assert np.allclose(LikelihoodRatio(mech, pair.swapped()).score(y), -expected, rtol=1e-10)


def test_updates_density_closed_form_fixed_worst_case():
    sigma, m = 1.3, 10
    mech = DPSGD(sigma=sigma, batch_size=m, steps=2, sampling="fixed", observe="updates")
    pair = mech.worst_case_pair()
    assert pair.relation == "replace_one"
    p = m / 1000
    y = np.random.default_rng(1).normal(-m + 0.5, 2.0, size=(40, 2))
    assert np.allclose(
        mech.log_density(pair.d, y), _normal_logpdf(y + m, sigma).sum(axis=1), rtol=1e-12
    )
    mix = np.logaddexp(
        math.log1p(-p) + _normal_logpdf(y + m, sigma),
        math.log(p) + _normal_logpdf(y + m - 2, sigma),
    )
    assert np.allclose(mech.log_density(pair.d_prime, y), mix.sum(axis=1), rtol=1e-12)


def test_updates_density_integrates_to_one():
    mech = DPSGD(sigma=0.6, rate=0.3, steps=1, observe="updates")
    pair = mech.worst_case_pair()
    for d in (pair.d, pair.d_prime):
        total = integrate.quad(
            lambda t, d=d: math.exp(mech.log_density(d, np.array([[t]]))[0]),
            -8,
            9,
            points=[0.0, 1.0],
        )[0]
        assert total == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("model", ["logistic", "mlp"])
@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_sampled_updates_follow_the_density(sampling, model):
    kw = {"rate": 0.2} if sampling == "poisson" else {"batch_size": 200}
    mech = DPSGD(model, sigma=0.7, steps=10, sampling=sampling, observe="updates", **kw)
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 1000, np.random.default_rng(6)).ravel()
    shift = 0.0 if sampling == "poisson" else -200.0
    jump = 1.0 if sampling == "poisson" else 2.0

    def cdf(t):
        return 0.8 * stats.norm.cdf((t - shift) / 0.7) + 0.2 * stats.norm.cdf(
            (t - shift - jump) / 0.7
        )

    # Kolmogorov-Smirnov against the mixture (false failure 1e-4)
    assert stats.kstest(y, cdf).pvalue > 1e-4


def test_log_density_needs_a_known_law_and_the_right_shape():
    black = DPSGD(sigma=1.0, rate=0.1, steps=3, canary="input")
    with pytest.raises(NotImplementedError, match="unknown for the input canary"):
        black.log_density(black.worst_case_pair().d, np.zeros((2, 22)))
    white = DPSGD(sigma=1.0, rate=0.1, steps=3, observe="updates")
    with pytest.raises(ValueError, match=r"outputs must have shape \(size, 3\)"):
        white.log_density(white.worst_case_pair().d, np.zeros((2, 4)))


# ----------------------------------------------------------------------------- theory
def test_theory_is_the_composed_subsampled_gaussian():
    mech = DPSGD(sigma=1.3, rate=0.05, steps=40, clip=3.0, learning_rate=2.0)
    ref = Composed(PoissonSubsampled(Gaussian(1.3, 1.0), 0.05), 40)
    assert mech.theory_methods == ("pld", "rdp", "berry_esseen", "gdp_clt", "last_iterate")
    for method in ref.theory_methods:
        assert mech.epsilon(1e-5, method) == pytest.approx(ref.epsilon(1e-5, method), rel=1e-12)
    assert mech.tradeoff("gdp_clt").mu == pytest.approx(0.05 * math.sqrt(40 * math.expm1(1 / 1.69)))
    fixed = DPSGD(sigma=1.3, batch_size=50, steps=40, sampling="fixed")
    ref = Composed(FixedSizeSubsampled(Gaussian(1.3, 1.0), 50, 1000), 40)
    for method in ref.theory_methods:
        assert fixed.epsilon(1e-5, method) == pytest.approx(ref.epsilon(1e-5, method), rel=1e-12)
    assert "exact" in DPSGD(sigma=1.0, rate=0.1, steps=1).theory_methods


def test_compositions_of_dpsgd_runs_compose_the_accountant():
    # Composed asks each atom for pld() and rdp(); DP-SGD used to list them without having them.
    mech = DPSGD(sigma=1.0, rate=0.1, steps=2)
    twice, ref = Composed(mech, 2), Composed(mech.accountant, 2)
    assert twice.theory_methods == ("pld", "rdp")
    for method in twice.theory_methods:  # PLD grids differ with the grouping of runs
        assert twice.epsilon(1e-5, method) == pytest.approx(ref.epsilon(1e-5, method), rel=1e-4)
    mixed = Composed([mech, Gaussian(1.0)])
    assert mixed.epsilon(1e-5, "rdp") == pytest.approx(
        Composed([mech.accountant, Gaussian(1.0)]).epsilon(1e-5, "rdp"), rel=1e-12
    )


def test_theory_does_not_depend_on_model_data_or_clip():
    a = DPSGD("logistic", "synthetic", sigma=0.9, rate=0.02, steps=30, clip=0.1)
    b = DPSGD("mlp", "goog", sigma=0.9, rate=0.02, steps=30, clip=10.0, canary="input")
    for method in ("pld", "rdp", "gdp_clt"):
        assert a.epsilon(1e-5, method) == b.epsilon(1e-5, method)


@pytest.mark.parametrize(
    "row",
    [r for r in rows(item="5", quantity="eps", kind="tight_upper") if r["params"]["steps"] == 235],
    ids=lambda r: r["setting"],
)
def test_pld_epsilon_against_reference(row):
    p = row["params"]
    mech = DPSGD(sigma=p["sigma"], rate=p["q"], steps=p["steps"])
    assert mech.epsilon(1e-5, method="pld") == pytest.approx(row["value"], rel=1e-3)


@pytest.mark.parametrize(
    "row",
    [r for r in rows(item="5", quantity="mu") if r["method"].startswith("GDP CLT")],
    ids=lambda r: r["setting"],
)
def test_gdp_clt_mu_against_reference(row):
    p = row["params"]
    mech = DPSGD(sigma=p["sigma"], rate=p["q"], steps=p["steps"])
    assert mech.tradeoff("gdp_clt").mu == pytest.approx(row["value"], rel=1e-9)


# ----------------------------------------------------------------------------- pairs, canaries
def test_worst_case_pairs():
    pois = DPSGD(sigma=1.0, rate=0.01, steps=5).worst_case_pair()
    assert pois.relation == "add_remove"
    assert pois.d.shape == (1000, 22) and pois.d_prime.shape == (1001, 22)
    assert np.array_equal(pois.d_prime[:-1], pois.d)
    assert np.array_equal(pois.d_prime[-1], ds.dirac_canary(20))
    fixed = DPSGD(sigma=1.0, batch_size=10, steps=5, sampling="fixed").worst_case_pair()
    assert fixed.relation == "replace_one"
    assert np.array_equal(fixed.d[:, -1], -np.ones(1000))
    assert np.array_equal(fixed.d_prime[:, -1], np.append(-np.ones(999), 1.0))
    mech = DPSGD(sigma=1.0, batch_size=10, steps=5, sampling="fixed", canary="input")
    inp = mech.worst_case_pair()
    assert np.array_equal(inp.d[:-1], inp.d_prime[:-1])
    assert np.array_equal(inp.d_prime[-1], mech.canary_record())


def test_membership_loss_of_the_target_in_both_orders():
    mech = DPSGD(sigma=1.0, rate=0.05, steps=20, canary="input")
    pair = mech.worst_case_pair()
    theta = np.random.default_rng(0).normal(size=(6, mech.n_params))
    target = mech.canary_record()
    forward = mech.membership_loss(pair)
    assert np.allclose(forward(theta), mech.loss(theta, target))
    assert np.allclose(mech.membership_loss(pair.swapped())(theta), -mech.loss(theta, target))
    attack = MembershipInference.for_mechanism(mech, pair)
    assert np.allclose(attack.score(theta), -mech.loss(theta, target))
    with pytest.raises(ValueError, match="observe='final'"):
        DPSGD(sigma=1.0, rate=0.05, steps=3, observe="updates").membership_loss(pair)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "cnn"}, "model must be one of 'logistic', 'mlp'"),
        ({"sigma": 0.0}, r"sigma must be in \(0, inf\)"),
        ({"sigma": math.nan}, "sigma must be a real number"),
        ({"rate": 1.5}, r"rate must be in \(0, 1\]"),
        ({"rate": 0.0}, r"rate must be in \(0, 1\]"),
        ({"rate": None}, "needs rate"),
        ({"batch_size": 5}, "batch_size is for sampling='fixed'"),
        ({"steps": 0}, r"steps must be an integer in \[1, 9007199254740992\]"),
        ({"clip": -1.0}, r"clip must be in \(0, inf\)"),
        ({"learning_rate": 0.0}, r"learning_rate must be in \(0, inf\)"),
        ({"sampling": "shuffle"}, "sampling must be one of"),
        ({"canary": "none"}, "canary must be one of"),
        ({"observe": "loss"}, "observe must be one of"),
        ({"observe": "updates", "canary": "input"}, "needs canary='dirac'"),
        ({"hidden": 0}, r"hidden must be an integer in \[1, inf\)"),
        ({"dataset": "cifar"}, "dataset must be one of"),
        ({"sampling": "fixed", "rate": None}, "exactly one of batch_size"),
        ({"sampling": "fixed", "batch_size": 1001, "rate": None}, r"\[1, 1000\]"),
    ],
)
def test_invalid_arguments(kwargs, message):
    args = {"sigma": 1.0, "rate": 0.01, "steps": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        DPSGD(**args)


def test_fixed_rate_gives_the_batch_size():
    mech = DPSGD(sigma=1.0, rate=0.0123, steps=3, sampling="fixed", dataset="goog")
    assert mech.batch_size == round(0.0123 * 1041) and mech.rate == mech.batch_size / 1041


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma": 1e-6, "rate": 1.0},
        {"sigma": 1e6, "rate": 1e-6},
        {"sigma": 1.0, "rate": 0.5, "clip": 1e-9, "learning_rate": 1e6},
        {"sigma": 1.0, "rate": 0.5, "clip": 1e9},
    ],
)
@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_extreme_parameters_stay_finite(kwargs, model):
    mech = DPSGD(model, ds.synthetic(n=50, dim=4), steps=5, canary="input", **kwargs)
    pair = mech.worst_case_pair()
    out = mech.sample(pair.d_prime, 20, np.random.default_rng(0))
    assert np.isfinite(out).all()
    assert np.isfinite(mech.membership_loss(pair)(out)).all()


def test_params_are_json_and_name_is_short():
    mech = DPSGD("mlp", sigma=1.0, batch_size=10, steps=3, sampling="fixed", hidden=4)
    params = json.loads(json.dumps(mech.params()))
    assert params["hidden"] == 4 and params["batch_size"] == 10 and "rate" not in params
    assert mech.name == "DPSGD(mlp, synthetic, sigma=1, m=10, T=3, C=1, fixed, dirac, final)"


def test_spec_kind_builds_the_mechanism():
    from dpaudit import specs

    mech = specs.build_mechanism(
        {
            "kind": "dpsgd",
            "model": "logistic",
            "dataset": "synthetic",
            "sigma": 1.0,
            "rate": 0.01,
            "steps": 1000,
            "clip": 1.0,
            "canary": "dirac",
            "observe": "updates",
        }
    )
    assert isinstance(mech, DPSGD) and mech.observe == "updates" and mech.steps == 1000
    with pytest.raises(specs.SpecError, match="sigma"):
        specs.build_mechanism({"kind": "dpsgd", "sigma": -1.0, "rate": 0.1, "steps": 2})
