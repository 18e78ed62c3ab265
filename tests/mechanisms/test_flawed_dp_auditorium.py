"""The mechanisms re-implemented from DP-Auditorium's test material, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.mechanisms.flawed import DP_AUDITORIUM, FLAWED, PUBLISHED, flawed


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_registered_with_source_and_flaw():
    for cls in DP_AUDITORIUM:
        assert FLAWED[cls.registry_name] is cls
        assert cls.registry_name in PUBLISHED
        assert "dp_auditorium" in cls.citation
        assert "Flaw" in cls.__doc__ or "Correct" in cls.__doc__


def test_mean_releases_the_exact_mean_when_the_noisy_count_is_not_positive():
    """P_D(|y - 1| <= 1e-9) = P(Lap(2/eps) <= -1) = e^(-eps/2)/2 (closed form) for D = [1];
    200,000 draws give a standard error below 1.1e-3, so a tolerance of 6e-3 fails falsely
    with probability < 1e-7. Under D' = [1, 0] that event has probability below 1e-8."""
    eps, n = 1.0, 200_000
    mech = flawed("dpa_mean_noisy_scale", eps)
    pair = mech.worst_case_pair()
    assert pair.relation == "add_remove"
    y = mech.sample(pair.d, n, _rng(1))
    y_prime = mech.sample(pair.d_prime, n, _rng(2))
    exact = 0.5 * math.exp(-eps / 2)
    assert np.mean(np.abs(y - 1.0) <= 1e-9) == pytest.approx(exact, abs=6e-3)
    assert np.mean(np.abs(y_prime - 1.0) <= 1e-9) == 0.0
    lower, upper = mech.epsilon_bounds()
    w = 1e-9
    assert lower == pytest.approx(math.log(exact * math.e * (0.5 - w) / w))
    assert upper == math.inf and not mech.correct


def test_gumbel_noisy_max_is_the_exponential_mechanism():
    """argmax(c + Gumbel(2/eps)) picks i with probability softmax(eps c / 2) (Gumbel-max);
    300,000 draws: standard error < 1e-3 per index, tolerance 5e-3 (false failure < 1e-5)."""
    eps = 1.0
    mech = flawed("dpa_noisy_max_gumbel", eps, k=4)
    counts = np.array([0.0, 1.0, 2.0, 0.0])
    out = mech.sample(counts, 300_000, _rng(3)).astype(int)
    freq = np.bincount(out, minlength=4) / out.size
    weights = np.exp(eps * counts / 2)
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=5e-3)
    assert mech.correct and mech.epsilon_bounds() == (0.0, eps / 2)


def test_reveal_records_sparse_vector_pair_and_bound():
    mech = flawed("dpa_svt_reveal_records", 1.0, k=6)
    pair = mech.worst_case_pair()
    np.testing.assert_array_equal(pair.d, [1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(pair.d_prime, [0, 0, 0, 0, 0, 1])
    assert mech.epsilon_bounds() == (0.0, 1.75)
    assert not mech.correct
    codes = mech.sample(pair.d, 1000, _rng(4))
    # Binary answers then aborted (-1) after the first "above" (cutoff c = 1).
    assert set(np.unique(codes)) <= {-1.0, 0.0, 1.0}
    above = codes == 1
    assert (above.sum(axis=1) <= 1).all()
