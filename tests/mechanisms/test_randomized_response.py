"""k-ary randomized response: sampling law, exact log mass, privacy loss, input checks.

Chi-square tests assert p > 1e-4 (a correct sampler fails with probability 1e-4 for a random
seed; the seeds are fixed).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.mechanisms import RandomizedResponse

LEVEL = 1e-4


def _pmf(eps: float, k: int, truth: int) -> np.ndarray:
    """Report probabilities written from the definition: keep w.p. e^eps / (e^eps + k - 1)."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    pmf = np.full(k, (1 - keep) / (k - 1))
    pmf[truth] = keep
    return pmf


@pytest.mark.parametrize(("eps", "k"), [(1.0, 2), (0.4, 3), (2.0, 5)])
def test_joint_report_frequencies(eps, k):
    mech = RandomizedResponse(eps=eps, k=k)
    data = np.array([0, k - 1])
    n = 50_000
    out = mech.sample(data, n, np.random.default_rng(11))
    assert out.shape == (n, 2) and np.issubdtype(out.dtype, np.integer)
    cells = out[:, 0] * k + out[:, 1]
    observed = np.bincount(cells, minlength=k * k)
    expected = np.outer(_pmf(eps, k, 0), _pmf(eps, k, k - 1)).ravel() * n
    assert stats.chisquare(observed, expected).pvalue > LEVEL


@pytest.mark.parametrize(("eps", "k"), [(1.0, 2), (0.7, 4)])
def test_log_density_is_exact_and_sums_to_one(eps, k):
    mech = RandomizedResponse(eps=eps, k=k)
    data = np.array([1, 0, 1])
    outputs = np.array(list(itertools.product(range(k), repeat=3)))
    got = mech.log_density(data, outputs)
    expected = np.array(
        [
            sum(math.log(_pmf(eps, k, x)[y]) for x, y in zip(data, row, strict=True))
            for row in outputs
        ]
    )
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert np.exp(got).sum() == pytest.approx(1.0, rel=1e-13)


def test_log_density_outside_the_support_is_minus_infinity():
    mech = RandomizedResponse(eps=1.0, k=3)
    got = mech.log_density([0, 1], np.array([[0, 3], [-1, 0], [0.5, 1], [2, 2]]))
    assert got[:3].tolist() == [-np.inf] * 3 and np.isfinite(got[3])
    # float outputs (as produced by a composition of mechanisms) are accepted
    np.testing.assert_allclose(
        mech.log_density([0, 1], np.array([[0.0, 1.0]])),
        mech.log_density([0, 1], np.array([[0, 1]])),
    )


def test_large_eps_is_stable():
    mech = RandomizedResponse(eps=800.0, k=3)
    got = mech.log_density([0], np.array([[0], [1]]))
    assert got[0] == pytest.approx(-2 * math.exp(-800.0), abs=1e-300)
    assert got[1] == pytest.approx(-800.0)
    assert (mech.sample([2], 1000, np.random.default_rng(0)) == 2).all()


@pytest.mark.parametrize(("eps", "k"), [(1.0, 2), (1.5, 4)])
def test_privacy_loss_mean_is_kl_both_orders(eps, k):
    # On [0] vs [1] the loss is +eps, -eps or 0; KL(P||Q) = (p_keep - p_other) * eps in both
    # orders. |L| <= eps, so Hoeffding bounds the error of the mean by
    # 2 eps sqrt(log(2/1e-6) / (2n)) except with probability 1e-6.
    mech = RandomizedResponse(eps=eps, k=k)
    pmf = _pmf(eps, k, 0)
    kl = (pmf[0] - pmf[1]) * eps
    pair = mech.worst_case_pair()
    n = 100_000
    rng = np.random.default_rng(12)
    tol = 2 * eps * math.sqrt(math.log(2 / 1e-6) / (2 * n))
    for d, d_prime in [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]:
        y = mech.sample(d, n, rng)
        loss = mech.log_density(d, y) - mech.log_density(d_prime, y)
        assert set(np.round(np.unique(loss), 12)) <= {-eps, 0.0, eps}
        assert abs(loss.mean() - kl) < tol


def test_worst_case_pair_params_and_name():
    mech = RandomizedResponse(eps=0.5, k=3)
    pair = mech.worst_case_pair()
    assert pair.relation == "replace_one" == mech.relation
    assert pair.d.tolist() == [0] and pair.d_prime.tolist() == [1]
    assert mech.params() == {"eps": 0.5, "k": 3}
    assert mech.name == "RandomizedResponse(eps=0.5, k=3)"
    assert mech.output_shape([0, 1, 2]) == (3,)
    assert mech.sample(np.zeros(0, dtype=int), 4, np.random.default_rng(0)).shape == (4, 0)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"eps": 0.0}, "eps"),
        ({"eps": -1.0}, "eps"),
        ({"eps": 1.0, "k": 1}, "k"),
        ({"eps": 1.0, "k": 2.5}, "k"),
        ({"eps": float("inf")}, "eps"),
    ],
)
def test_constructor_errors(kwargs, param):
    with pytest.raises(ValueError, match=param):
        RandomizedResponse(**kwargs)


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ([0, 2], r"\[0, 1\]"),
        ([0.5], "integer"),
        ([[0, 1]], "shape"),
        (["x"], "categories"),
        ([-1], "integer"),
    ],
)
def test_bad_datasets(dataset, message):
    mech = RandomizedResponse(eps=1.0)
    with pytest.raises(ValueError, match=message):
        mech.sample(dataset, 2, np.random.default_rng(0))


def test_bad_outputs():
    mech = RandomizedResponse(eps=1.0)
    with pytest.raises(ValueError, match=r"shape \(size, 2\)"):
        mech.log_density([0, 1], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        mech.log_density([0], np.array([[np.nan]]))
