"""Composition of mechanisms: output layout, product densities, worst-case pairs, input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.mechanisms import (
    Composed,
    FixedSizeSubsampled,
    Gaussian,
    Laplace,
    NeighbouringPair,
    PoissonSubsampled,
    RandomizedResponse,
)


def test_homogeneous_layout_and_density():
    mech = Composed(Gaussian(sigma=2.0), times=3)
    out = mech.sample([1.0, 0.5], 1000, np.random.default_rng(31))
    assert out.shape == (1000, 3) and out.dtype == np.float64
    assert mech.output_shape([1.0]) == (3,)
    np.testing.assert_allclose(
        mech.log_density([1.0, 0.5], out), stats.norm(1.5, 2.0).logpdf(out).sum(axis=1), rtol=1e-13
    )
    # the runs are independent: correlations of 1000 pairs stay below 5/sqrt(1000)
    # (false-failure probability < 1e-5 over the 3 pairs)
    corr = np.corrcoef(out.T)
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 5 / math.sqrt(1000))


def test_homogeneous_vector_and_categorical_outputs():
    vec = Composed(Laplace(scale=1.0), times=4)
    assert vec.sample(np.ones((2, 3)), 5, np.random.default_rng(0)).shape == (5, 4, 3)
    rr = Composed(RandomizedResponse(eps=1.0, k=3), times=2)
    out = rr.sample([0, 2, 1], 6, np.random.default_rng(0))
    assert out.shape == (6, 2, 3) and np.issubdtype(out.dtype, np.integer)
    base = RandomizedResponse(eps=1.0, k=3)
    expected = base.log_density([0, 2, 1], out[:, 0]) + base.log_density([0, 2, 1], out[:, 1])
    np.testing.assert_allclose(rr.log_density([0, 2, 1], out), expected, rtol=1e-13)


def test_list_layout_and_density():
    g, lap = Gaussian(sigma=1.0), Laplace(scale=0.5, sensitivity=2.0)
    sub = PoissonSubsampled(Gaussian(sigma=0.8), rate=0.3)
    mech = Composed([g, lap, sub])
    data = np.array([[0.5, 0.5], [3.0, 0.0]])
    out = mech.sample(data, 200, np.random.default_rng(32))
    assert out.shape == (200, 6) and out.dtype == np.float64
    assert mech.output_shape(data) == (6,)
    expected = (
        g.log_density(data, out[:, 0:2])
        + lap.log_density(data, out[:, 2:4])
        + sub.log_density(data, out[:, 4:6])
    )
    np.testing.assert_allclose(mech.log_density(data, out), expected, rtol=1e-13)


def test_list_mixing_integer_and_float_outputs():
    rr, g = RandomizedResponse(eps=1.0), Gaussian(sigma=1.0)
    with pytest.raises(ValueError, match="same neighbouring relation"):
        Composed([rr, g])
    mech = Composed([rr, Composed(rr, times=2)])
    out = mech.sample([1, 0], 4, np.random.default_rng(0))
    assert out.shape == (4, 6) and out.dtype == np.float64
    expected = sum(rr.log_density([1, 0], out[:, 2 * i : 2 * i + 2]) for i in range(3))
    np.testing.assert_allclose(mech.log_density([1, 0], out), expected)


def test_sampling_is_reproducible():
    mech = Composed(PoissonSubsampled(Gaussian(sigma=1.0), rate=0.1), times=5)
    a = mech.sample([1.0], 7, np.random.default_rng(3))
    b = mech.sample([1.0], 7, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_privacy_loss_mean_is_kl_of_the_composition():
    # T-fold Gaussian: the loss is N(T eta, 2 T eta) under P, eta = 1/(2 sigma^2); 5 sd of the
    # mean -> false-failure probability 5.7e-7 per order
    mech = Composed(Gaussian(sigma=1.5), times=10)
    pair = mech.worst_case_pair()
    eta = 10 / (2 * 1.5**2)
    n = 100_000
    rng = np.random.default_rng(33)
    for d, d_prime in [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]:
        y = mech.sample(d, n, rng)
        loss = mech.log_density(d, y) - mech.log_density(d_prime, y)
        assert abs(loss.mean() - eta) < 5 * math.sqrt(2 * eta / n)


def test_worst_case_pairs():
    g = Gaussian(sigma=1.0, sensitivity=0.5)
    assert Composed(g, times=3).worst_case_pair().d_prime.tolist() == [0.5]
    same = Composed([g, Gaussian(sigma=3.0, sensitivity=0.5)]).worst_case_pair()
    assert same.d_prime.tolist() == [0.5]
    mixed = Composed(
        [g, Laplace(scale=1.0, sensitivity=2.0), PoissonSubsampled(Gaussian(1.0, 1.5), rate=0.1)]
    ).worst_case_pair()
    assert mixed.relation == "add_remove"
    assert mixed.d.shape == (0,) and mixed.d_prime.tolist() == [2.0]
    rr = Composed([RandomizedResponse(eps=1.0), RandomizedResponse(eps=2.0, k=3)])
    assert rr.worst_case_pair().d_prime.tolist() == [1]
    fixed = Composed(
        [
            FixedSizeSubsampled(Gaussian(1.0), size=1, population=3),
            FixedSizeSubsampled(Gaussian(1.0), size=1, population=4),
        ]
    )
    with pytest.raises(ValueError, match="explicit NeighbouringPair"):
        fixed.worst_case_pair()


def test_atoms_flatten_and_group():
    g, lap = Gaussian(sigma=1.0), Laplace(scale=1.0)
    mech = Composed([Composed(g, times=3), lap, Gaussian(sigma=1.0), Composed([lap, lap])])
    atoms = {m.name: n for m, n in mech.atoms()}
    assert atoms == {g.name: 4, lap.name: 3}


def test_params_and_name():
    mech = Composed(Gaussian(sigma=1.0), times=3)
    assert mech.params() == {
        "base": {"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0},
        "times": 3,
    }
    assert mech.name == "Composed(Gaussian(sigma=1.0, sensitivity=1.0), times=3)"
    lst = Composed([Gaussian(sigma=1.0), Laplace(scale=2.0)])
    assert lst.params()["components"][1] == {"kind": "laplace", "scale": 2.0, "sensitivity": 1.0}
    assert lst.name.startswith("Composed([Gaussian(")
    assert lst.relation == "add_remove"
    assert Composed(RandomizedResponse(eps=1.0), times=2).relation == "replace_one"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((Gaussian(1.0),), {}, "times"),
        ((Gaussian(1.0),), {"times": 0}, "times"),
        ((Gaussian(1.0),), {"times": 2.5}, "times"),
        (([Gaussian(1.0)],), {"times": 2}, "times"),
        (([],), {}, "at least one"),
        (([Gaussian(1.0), "laplace"],), {}, r"mechanisms\[1\]"),
        (("gaussian",), {}, "sequence"),
        ((3,), {}, "sequence"),
    ],
)
def test_constructor_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Composed(*args, **kwargs)


def test_bad_outputs():
    mech = Composed(Gaussian(1.0), times=3)
    with pytest.raises(ValueError, match=r"shape \(size, 3\)"):
        mech.log_density([1.0], np.zeros((4, 2)))
    lst = Composed([Gaussian(1.0), Gaussian(2.0)])
    with pytest.raises(ValueError, match=r"shape \(size, 2\)"):
        lst.log_density([1.0], np.zeros(4))


def test_explicit_pair_still_samples():
    pair = NeighbouringPair(np.array([0.0]), np.array([1.0]), "replace_one")
    mech = Composed(FixedSizeSubsampled(Gaussian(1.0), size=1, population=1), times=2)
    assert mech.sample(pair.d, 3, np.random.default_rng(0)).shape == (3, 2)


@pytest.mark.parametrize(
    ("mech", "data"),
    [
        (Gaussian(1.0), [1.0]),
        (Gaussian(1.0), np.ones((2, 3))),
        (Laplace(1.0), [1.0]),
        (RandomizedResponse(1.0), [0, 1]),
        (PoissonSubsampled(Gaussian(1.0), 0.3), [1.0]),
        (FixedSizeSubsampled(Laplace(1.0), 1, 2), [1.0, 0.0]),
        (Composed(Gaussian(1.0), 3), [1.0]),
        (Composed([Gaussian(1.0), Laplace(1.0)]), np.ones((1, 2))),
    ],
    ids=lambda x: x.name if hasattr(x, "name") else "",
)
def test_zero_outputs(mech, data):
    y = mech.sample(data, 0, np.random.default_rng(0))
    assert y.shape == (0, *mech.output_shape(data))
    assert mech.log_density(data, y).shape == (0,)
