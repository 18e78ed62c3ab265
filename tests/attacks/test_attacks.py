"""Attacks: the likelihood-ratio score against closed forms, the threshold statistic, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.attacks import Attack, LikelihoodRatio, Threshold
from dpaudit.mechanisms import Gaussian, Laplace, NeighbouringPair, RandomizedResponse

Y = np.array([-3.0, -1.0, -0.25, 0.0, 0.4, 0.5, 1.0, 2.5, 7.0])


@pytest.mark.parametrize("sigma, sensitivity", [(1.0, 1.0), (0.5, 2.0), (3.7, 1.0)])
def test_likelihood_ratio_gaussian_is_the_linear_privacy_loss(sigma, sensitivity):
    # N(0, s^2) vs N(D, s^2): log q/p = (D y - D^2 / 2) / s^2 (Steinke Prop. 3).
    mech = Gaussian(sigma, sensitivity)
    attack = LikelihoodRatio(mech)
    expected = (sensitivity * Y - sensitivity**2 / 2) / sigma**2
    np.testing.assert_allclose(attack.score(Y), expected, rtol=1e-12, atol=1e-12)
    assert attack.exact_privacy_loss and not attack.learns


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_likelihood_ratio_laplace_is_clipped_linear(scale):
    # Lap(0, b) vs Lap(1, b): log q/p = (|y| - |y - 1|) / b, in [-1/b, 1/b].
    attack = LikelihoodRatio(Laplace(scale))
    expected = (np.abs(Y) - np.abs(Y - 1.0)) / scale
    np.testing.assert_allclose(attack.score(Y), expected, rtol=1e-12, atol=1e-12)


def test_likelihood_ratio_randomized_response_is_plus_minus_eps():
    mech = RandomizedResponse(1.3)
    attack = LikelihoodRatio(mech)  # D = [0], D_prime = [1]
    scores = attack.score(np.array([[0], [1], [1], [0]]))
    np.testing.assert_allclose(scores, [-1.3, 1.3, 1.3, -1.3], rtol=1e-12)


def test_likelihood_ratio_both_orders_negate():
    mech = Gaussian(1.0)
    pair = mech.worst_case_pair()
    forward = LikelihoodRatio(mech, pair).score(Y)
    backward = LikelihoodRatio(mech, pair.swapped()).score(Y)
    np.testing.assert_allclose(forward, -backward, rtol=1e-12, atol=1e-12)


def test_likelihood_ratio_refuses_outputs_impossible_under_both():
    attack = LikelihoodRatio(RandomizedResponse(1.0))
    with pytest.raises(ValueError, match="density zero under both"):
        attack.score(np.array([[5]]))


def test_likelihood_ratio_needs_a_density_and_a_pair():
    class NoDensity:
        pass

    with pytest.raises(ValueError, match="log_density"):
        LikelihoodRatio(NoDensity())
    with pytest.raises(ValueError, match="pair must be a NeighbouringPair"):
        LikelihoodRatio(Gaussian(1.0), pair=(0, 1))


def test_likelihood_ratio_params_are_json_ready():
    params = LikelihoodRatio(Gaussian(2.0)).params()
    assert params["mechanism"] == "Gaussian(sigma=2.0, sensitivity=1.0)"
    assert params["pair"]["relation"] == "add_remove"


def test_threshold_scalar_coordinate_and_projection():
    y = np.array([[1.0, 2.0], [3.0, -4.0]])
    assert isinstance(Threshold(), Attack)
    np.testing.assert_array_equal(Threshold().score(np.array([0.5, -1.0])), [0.5, -1.0])
    np.testing.assert_array_equal(Threshold().score(np.array([[0.5], [-1.0]])), [0.5, -1.0])
    np.testing.assert_array_equal(Threshold(1).score(y), [2.0, -4.0])
    np.testing.assert_array_equal(Threshold(-2).score(y), [1.0, 3.0])
    np.testing.assert_allclose(Threshold([0.5, -1.0]).score(y), [-1.5, 5.5])
    np.testing.assert_array_equal(Threshold([-1.0]).score(np.array([2.0, 3.0])), [-2.0, -3.0])
    assert Threshold(1).name == "Threshold(projection=1)"
    assert Threshold([0.5, -1.0]).params() == {"projection": [0.5, -1.0]}


@pytest.mark.parametrize(
    "projection, outputs, message",
    [
        (None, np.zeros((3, 2)), "scalar outputs"),
        (2, np.zeros((3, 2)), r"projection \(coordinate\) must be in \[-2, 1\]"),
        ([1.0, 2.0, 3.0], np.zeros((3, 2)), "one weight per output value"),
    ],
)
def test_threshold_refuses_mismatched_outputs(projection, outputs, message):
    with pytest.raises(ValueError, match=message):
        Threshold(projection).score(outputs)


@pytest.mark.parametrize("projection", [[], [[1.0]], [math.nan], "abc"])
def test_threshold_refuses_bad_projection(projection):
    with pytest.raises(ValueError, match="projection must be"):
        Threshold(projection)


def test_threshold_on_gaussian_orders_like_the_likelihood_ratio():
    # For the Gaussian pair the output itself is a monotone transform of log q/p.
    mech = Gaussian(1.5)
    order_lr = np.argsort(LikelihoodRatio(mech).score(Y))
    order_threshold = np.argsort(Threshold().score(Y))
    np.testing.assert_array_equal(order_lr, order_threshold)


def test_pair_swapped_is_checked_in_both_orders_for_laplace():
    mech = Laplace(1.0)
    pair = NeighbouringPair(np.zeros(0), np.array([1.0]))
    s = LikelihoodRatio(mech, pair).score(Y)
    s_swapped = LikelihoodRatio(mech, pair.swapped()).score(Y)
    np.testing.assert_allclose(s, -s_swapped, rtol=1e-12, atol=1e-12)
