"""DP-SGD as deployed: shuffled batches, a canary inserted every k-th step, the worst-case
initialisation, and the exact law of the final canary coordinate (:mod:`dpaudit.mechanisms.dirac`).

Independent references: the noiseless sums read off the updates of real trainings (TINY noise),
brute-force sums over every mixture atom and every placement of the canary, quadrature, and
two-sample tests against trained models. Monte Carlo checks use fixed seeds; each states its
false-failure probability (for a fresh seed) in its docstring.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from dpaudit.mechanisms import datasets as ds
from dpaudit.mechanisms.dirac import FinalLaw, Schedule, final_law
from dpaudit.mechanisms.dpsgd import DPSGD

TINY = 1e-13
SMALL = ds.synthetic(n=40, dim=3, seed=5)
P_LEVEL = 1e-4  # per two-sample test


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _mechanism(sampling: str, **kwargs) -> DPSGD:
    batch = {"rate": 0.1} if sampling == "poisson" else {"batch_size": 4}
    return DPSGD(
        "logistic", SMALL, sigma=kwargs.pop("sigma", 0.8), sampling=sampling, **batch, **kwargs
    )


# ----------------------------------------------------------------------------- shuffled batches
def test_shuffled_batches_use_every_record_once_per_epoch_and_leave_the_rest_out():
    """Records with coefficients 2^-(i+1) make every noiseless update decode to its batch."""
    data = ds.synthetic(n=10, dim=2)
    mech = DPSGD(
        "logistic", data, sigma=TINY, batch_size=3, steps=7, sampling="shuffled", observe="updates"
    )
    assert (mech.batches, mech.relation) == (3, "add_remove")
    records = data.records()
    records[:, -1] = 2.0 ** -(np.arange(10) + 1.0)
    y = mech.sample(records, 200, _rng(1))
    for run in y:
        bits = [
            np.flatnonzero([(round(v * 2**11) >> (10 - i)) & 1 for i in range(10)]) for v in run
        ]
        for epoch in (bits[0:3], bits[3:6]):
            used = np.concatenate(epoch)
            assert all(len(b) == 3 for b in epoch) and len(set(used)) == 9
        assert len(bits[6]) == 3


def test_shuffled_added_record_lands_in_each_batch_with_probability_m_over_n():
    """Binomial tests of how often the +1 record's batch is each of the epoch's (false failure
    below 1e-4 for each of the b + 1 cells)."""
    mech = DPSGD(
        "logistic",
        ds.synthetic(n=12, dim=2),
        sigma=TINY,
        batch_size=5,
        steps=2,
        sampling="shuffled",
        observe="updates",
        canary="dirac",
    )
    pair = mech.worst_case_pair()
    runs = 20_000
    y = mech.sample(pair.d_prime, runs, _rng(2))
    np.testing.assert_allclose(np.sort(np.unique(np.round(y, 6))), [-5.0, -3.0])
    shifted = np.isclose(y, -3.0)
    assert shifted.sum(axis=1).max() <= 1
    for cell, count in enumerate([*shifted.sum(axis=0), (~shifted.any(axis=1)).sum()]):
        p = 5 / 13 if cell < 2 else 3 / 13
        assert stats.binomtest(int(count), runs, p).pvalue > 1e-4


def test_shuffled_theory_is_the_gaussian_bound_over_epochs():
    mech = DPSGD(sigma=1.0, batch_size=10, steps=250, sampling="shuffled")
    assert mech.theory_methods == ("pld", "rdp", "last_iterate")
    from dpaudit.bounds.gaussian_dp import gdp_epsilon

    mu = 2.0 * math.sqrt(3) / 1.0  # ceil(250 / 100) epochs, sensitivity 2
    assert mech.epsilon(1e-5, "pld") == pytest.approx(gdp_epsilon(1e-5, mu), rel=5e-3)


# ----------------------------------------------------------------------------- canary every k steps
@pytest.mark.parametrize("sampling", ["poisson", "fixed", "shuffled"])
def test_canary_every_k_steps_adds_dirac_gradients_only_at_those_steps(sampling):
    mech = _mechanism(sampling, sigma=TINY, steps=9, canary_every=3, observe="updates")
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 500, _rng(3))
    off = np.arange(9) % 3 != 0
    assert np.abs(y[:, off]).max() < 1e-9
    assert np.abs(y[:, ~off]).max() > 0.5


# ----------------------------------------------------------------------------- worst-case init
def test_worst_case_initialisation_fits_the_data_and_keeps_the_canary_coordinate_at_zero():
    default = DPSGD("logistic", SMALL, sigma=1.0, rate=0.1, steps=3)
    worst = DPSGD("logistic", SMALL, sigma=1.0, rate=0.1, steps=3, init="worst_case")
    records = SMALL.records()
    losses = [
        np.mean([m.loss(m.initial_params(), r)[0] for r in records]) for m in (default, worst)
    ]
    assert losses[1] < 0.8 * losses[0]
    grad = [
        np.linalg.norm(m.gradients(m.initial_params(), records).sum(axis=0))
        for m in (default, worst)
    ]
    assert grad[1] < 0.1 * grad[0]
    assert worst.initial_params()[-1] == 0.0
    assert worst.params()["init"] == "worst_case" and "init" not in default.params()
    run = worst.sample(worst.worst_case_pair().d, 2, _rng())
    assert run.shape == (2, worst.n_params)


# ----------------------------------------------------------------------------- the final law
def _brute_log_density(law: FinalLaw, u: np.ndarray) -> np.ndarray:
    atoms, w = law.pmf()
    terms = np.log(w) - 0.5 * ((u[:, None] - atoms) / law.noise) ** 2
    return special.logsumexp(terms, axis=1) - 0.5 * math.log(2 * math.pi) - math.log(law.noise)


@pytest.mark.parametrize(
    "law",
    [
        FinalLaw(0.0, 1.0, math.sqrt(1000), 1000, 0.01),
        FinalLaw(-30.0, 2.0, 3.0, 40, 0.3),
        FinalLaw(0.0, 1.0, 0.2, 12, 0.5),  # atoms far apart: the window must widen
        FinalLaw(5.0, -1.0, 2.0, bernoullis=(0.2, 0.5, 0.9, 0.1)),
    ],
)
def test_final_density_is_the_full_mixture_far_into_the_tails(law):
    atoms, _ = law.pmf()
    spread = law.noise * 60.0
    u = np.linspace(atoms.min() - spread, atoms.max() + spread, 4001)
    np.testing.assert_allclose(
        law.log_density(u), _brute_log_density(law, u), rtol=1e-12, atol=1e-9
    )
    total = integrate.quad(
        lambda x: math.exp(law.log_density(np.array([x]))[0]),
        atoms.min() - 12 * law.noise,
        atoms.max() + 12 * law.noise,
        points=list(atoms[:50]),
        limit=500,
    )[0]
    assert total == pytest.approx(1.0, abs=1e-8)


def test_final_law_of_each_sampling_on_the_worst_case_pairs():
    poisson = Schedule(steps=10, every=2, sampling="poisson", rate=0.1, batch_size=0, batches=0)
    law = final_law(np.array([0.0, 0.0, 1.0]), poisson, 1.5)
    assert (law.offset, law.step, law.trials, law.prob) == (0.0, 1.0, 5, 0.1)
    assert law.noise == pytest.approx(1.5 * math.sqrt(10))
    assert final_law(np.array([0.5, 0.5]), poisson, 1.0).trials == 10
    fixed = Schedule(steps=6, every=1, sampling="fixed", rate=0.25, batch_size=2, batches=0)
    law = final_law(np.array([-1.0, -1.0, -1.0, 1.0]), fixed, 1.0)
    assert (law.offset, law.step, law.trials, law.prob) == (-12.0, 2.0, 6, 0.5)
    shuffled = Schedule(steps=5, every=2, sampling="shuffled", rate=0.4, batch_size=2, batches=2)
    law = final_law(-np.ones(5), shuffled, 1.0)  # all alike: no mixture
    assert (law.offset, law.step) == (-1.0 * 2 * 3, 0.0)  # c_0 m I
    law = final_law(np.array([-1.0, -1.0, -1.0, -1.0, 1.0]), shuffled, 1.0)
    # epochs {0, 1}, {2, 3}, {4}: insertion steps 0, 2, 4, one in each epoch
    assert law.bernoullis == pytest.approx((2 / 5, 2 / 5, 2 / 5))
    with pytest.raises(NotImplementedError, match="every record but at most one"):
        final_law(np.array([-1.0, -1.0, 1.0, 1.0]), fixed, 1.0)
    with pytest.raises(NotImplementedError, match="share one coefficient"):
        final_law(np.array([0.5, 1.0]), poisson, 1.0)


@pytest.mark.parametrize(
    "sampling, every",
    [("poisson", 1), ("poisson", 3), ("fixed", 1), ("shuffled", 1), ("shuffled", 2)],
)
def test_direct_final_canary_draws_have_the_trained_coordinate_law(sampling, every):
    """Two-sample Kolmogorov-Smirnov tests of the final canary coordinate of real trainings
    (observe="final") against the direct draws (observe="final_canary"), on both datasets of
    the worst-case pair: false failure at most 2e-4 per case (1e-3 over the five cases)."""
    trained = _mechanism(sampling, steps=12, canary_every=every, learning_rate=0.7)
    direct = _mechanism(
        sampling, steps=12, canary_every=every, learning_rate=0.7, observe="final_canary"
    )
    pair = trained.worst_case_pair()
    for i, dataset in enumerate((pair.d, pair.d_prime)):
        a = trained.sample(dataset, 6000, _rng(10 + i))[:, -1]
        b = direct.sample(dataset, 6000, _rng(20 + i))[:, 0]
        assert stats.ks_2samp(a, b).pvalue > P_LEVEL
    # and the density of the final model is that of its canary coordinate
    models = trained.sample(pair.d_prime, 3, _rng(5))
    np.testing.assert_allclose(
        trained.log_density(pair.d_prime, models),
        direct.log_density(pair.d_prime, models[:, -1:]),
        rtol=1e-12,
    )


def test_direct_draws_follow_the_density_they_are_scored_with():
    """KS test of 20,000 direct draws against the CDF integrated from the density (false
    failure 1e-4)."""
    mech = DPSGD(sigma=0.7, rate=0.2, steps=30, observe="final_canary", learning_rate=0.3)
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 20_000, _rng(7))[:, 0]
    grid = np.linspace(y.min() - 1.0, y.max() + 1.0, 20_001)
    density = np.exp(mech.log_density(pair.d_prime, grid[:, None]))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    assert cdf[-1] == pytest.approx(1.0, abs=1e-6)
    assert stats.kstest(y, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-4


# ----------------------------------------------------------------------------- updates densities
def _brute_shuffled_log_density(c, y, mech):
    """Sum over every placement of the odd record in every epoch (or none) of the product of
    normal densities: an independent path through the law of shuffled updates."""
    values, counts = np.unique(c, return_counts=True)
    common = values[np.argmax(counts)]
    special_ = values[np.argmin(counts)]
    m, n, b, sigma = mech.batch_size, c.size, mech.batches, mech.sigma
    ins = np.arange(mech.steps) % mech.canary_every == 0
    epochs = [range(s, min(s + b, mech.steps)) for s in range(0, mech.steps, b)]
    options = [[None, *range(b)] for _ in epochs]
    out = np.full(len(y), -np.inf)
    for placement in itertools.product(*options):
        prob, mean = 1.0, np.where(ins, common * m, 0.0)
        for epoch, j in zip(epochs, placement, strict=True):
            if j is None:
                prob *= 1.0 - b * m / n
                continue
            prob *= m / n
            step = epoch.start + j
            if step < mech.steps and ins[step]:
                mean[step] += special_ - common
        if prob <= 0:
            continue
        logp = stats.norm.logpdf(y, mean, sigma).sum(axis=1) + math.log(prob)
        out = np.logaddexp(out, logp)
    return out


@pytest.mark.parametrize("every", [1, 2])
def test_shuffled_updates_density_matches_brute_force(every):
    mech = DPSGD(
        "logistic",
        ds.synthetic(n=7, dim=2),
        sigma=0.9,
        batch_size=2,
        steps=5,
        sampling="shuffled",
        observe="updates",
        canary_every=every,
    )
    pair = mech.worst_case_pair()
    y = mech.sample(pair.d_prime, 50, _rng(4)) + _rng(5).normal(0, 2, (50, 5))
    for dataset in (pair.d, pair.d_prime):
        c = dataset[:, -1]
        np.testing.assert_allclose(
            mech.log_density(dataset, y), _brute_shuffled_log_density(c, y, mech), rtol=1e-10
        )


def test_updates_density_with_the_canary_every_k_steps_is_noise_elsewhere():
    every = DPSGD(sigma=0.8, rate=0.2, steps=6, observe="updates", canary_every=3)
    full = DPSGD(sigma=0.8, rate=0.2, steps=2, observe="updates")
    pair = every.worst_case_pair()
    y = _rng(6).normal(0.3, 1.0, (40, 6))
    expected = full.log_density(pair.d_prime, y[:, [0, 3]]) + stats.norm.logpdf(
        y[:, [1, 2, 4, 5]], 0.0, 0.8
    ).sum(axis=1)
    np.testing.assert_allclose(every.log_density(pair.d_prime, y), expected, rtol=1e-12)


# ----------------------------------------------------------------------------- theory
def test_last_iterate_of_each_sampling_is_its_worst_case_final_law():
    fixed = DPSGD(sigma=1.0, batch_size=10, steps=50, sampling="fixed")
    from dpaudit.bounds import pld

    reference = pld.last_iterate(1.0, 50, rate=0.01, sensitivity=2.0)
    assert fixed.epsilon(1e-5, "last_iterate") == pytest.approx(reference.epsilon(1e-5), rel=1e-9)
    every = DPSGD(sigma=1.0, rate=0.05, steps=40, canary_every=4)
    reference = pld.last_iterate(1.0, 40, rate=0.05, insertions=10)
    assert every.epsilon(1e-5, "last_iterate") == pytest.approx(reference.epsilon(1e-5), rel=1e-9)
    shuffled = DPSGD(sigma=1.0, batch_size=10, steps=250, sampling="shuffled")
    # epochs of 100, 100 and 50 steps: the +1 record is used (shift 2) with probability
    # 1000/1001, 1000/1001 and 500/1001
    p = np.array([1000, 1000, 500]) / 1001
    weights = [
        np.prod(np.where(np.array(used, dtype=bool), p, 1.0 - p))
        for used in itertools.product((0, 1), repeat=3)
    ]
    shifts = [2.0 * sum(used) for used in itertools.product((0, 1), repeat=3)]
    reference = pld.gaussian_mixture(shifts, weights, sigma=math.sqrt(250))
    assert shuffled.epsilon(1e-5, "last_iterate") == pytest.approx(
        reference.epsilon(1e-5), rel=1e-6
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"observe": "final_canary", "canary": "input"}, "needs canary='dirac'"),
        ({"canary_every": 0}, "canary_every"),
        ({"init": "pretrained"}, "init must be one of"),
        ({"sampling": "shuffled"}, "needs exactly one of batch_size"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    args = {"sigma": 1.0, "steps": 3}
    if kwargs.get("sampling") != "shuffled":
        args["rate"] = 0.1
    with pytest.raises(ValueError, match=match):
        DPSGD(**args, **kwargs)


def test_shuffled_needs_enough_records_to_fill_the_batches():
    mech = DPSGD(sigma=1.0, batch_size=10, steps=3, sampling="shuffled")
    with pytest.raises(ValueError, match="at least 1000 records"):
        mech.sample(mech.worst_case_pair().d[:-1], 2, _rng())
