"""delta(eps) from binned privacy-loss statistics: exact sample means, intervals, both orders."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.audit.grid import ScoreGrid
from dpaudit.audit.privacy_loss import PrivacyLossStatistics


def statistics(grid: ScoreGrid, s0: np.ndarray, s1: np.ndarray) -> PrivacyLossStatistics:
    """Bin raw scores the way the engine does (D against upper edges, D_prime lower edges)."""
    n = grid.n_bins
    i0, w0 = grid.locate(s0, "upper")
    i1, w1 = grid.locate(s1, "lower")
    sums = [
        np.bincount(i0, minlength=n),
        np.bincount(i0, weights=w0, minlength=n),
        np.bincount(i0, weights=w0 * w0, minlength=n),
        np.bincount(i1, minlength=n),
        np.bincount(i1, weights=w1, minlength=n),
        np.bincount(i1, weights=w1 * w1, minlength=n),
    ]
    for k in (1, 2):
        sums[k][-1] = 0.0
        sums[3 + k][0] = 0.0
    return PrivacyLossStatistics(grid.edges, *sums)


def direct(s0: np.ndarray, s1: np.ndarray, eps: float) -> tuple[float, float]:
    """Sample means of (1 - e^{eps - L})_+ in both orders, straight from the scores."""
    pq = np.maximum(1 - np.exp(eps + s0), 0.0).mean()  # L_{P||Q} = -s under D
    qp = np.maximum(1 - np.exp(eps - s1), 0.0).mean()  # L_{Q||P} = +s under D_prime
    return float(pq), float(qp)


@pytest.fixture(scope="module")
def gaussian_scores():
    rng = np.random.default_rng(0)
    return rng.normal(-0.5, 1.0, 20000), rng.normal(0.5, 1.0, 20000)


def test_exact_at_grid_edges(gaussian_scores):
    s0, s1 = gaussian_scores
    grid = ScoreGrid.from_scores(np.concatenate([s0[:2000], s1[:2000]]), bins=512)
    stats_ = statistics(grid, s0, s1)
    for eps in np.abs(grid.edges[::37]):
        out = stats_.delta(eps)
        pq, qp = direct(s0, s1, eps)
        assert out["delta_d_d_prime"] == pytest.approx(pq, rel=1e-9, abs=1e-13)
        assert out["delta_d_prime_d"] == pytest.approx(qp, rel=1e-9, abs=1e-13)
        assert out["delta"] == pytest.approx(max(pq, qp), rel=1e-9, abs=1e-13)


def test_between_edges_the_bounds_bracket_the_sample_mean(gaussian_scores):
    s0, s1 = gaussian_scores
    grid = ScoreGrid.from_scores(np.concatenate([s0[:2000], s1[:2000]]), bins=64)
    stats_ = statistics(grid, s0, s1)
    eps = np.array([0.013, 0.41, 0.977, 1.5, 2.2])
    out = stats_.delta(eps)
    for i, e in enumerate(eps):
        pq, qp = direct(s0, s1, e)
        assert out["lower_d_d_prime"][i] <= pq <= out["upper_d_d_prime"][i]
        assert out["lower_d_prime_d"][i] <= qp <= out["upper_d_prime_d"][i]
        assert out["lower"][i] <= max(pq, qp) <= out["upper"][i]


def test_single_valued_bins_are_exact_at_every_eps():
    # Randomized-response-like scores: a few atoms, each alone in its lattice bin.
    rng = np.random.default_rng(1)
    atoms = np.array([-3.0, -1.0, 1.0, 3.0]) * 0.4
    s0 = rng.choice(atoms, 5000, p=[0.4, 0.3, 0.2, 0.1])
    s1 = rng.choice(atoms, 5000, p=[0.1, 0.2, 0.3, 0.4])
    grid = ScoreGrid.from_scores(np.concatenate([s0, s1]))
    assert grid.kind == "lattice"
    stats_ = statistics(grid, s0, s1)
    for eps in [0.0, 0.1, 0.35, 0.8, 1.19, 2.0]:
        out = stats_.delta(eps)
        pq, qp = direct(s0, s1, eps)
        assert out["delta_d_d_prime"] == pytest.approx(pq, rel=1e-9, abs=1e-13)
        assert out["delta_d_prime_d"] == pytest.approx(qp, rel=1e-9, abs=1e-13)


def test_interval_is_empirical_bernstein_with_gamma_over_four(gaussian_scores):
    s0, s1 = gaussian_scores
    grid = ScoreGrid.from_scores(np.concatenate([s0, s1]), bins=256)
    edge = float(-grid.edges[np.searchsorted(grid.edges, -1.0)])  # an exact eps for P||Q
    out = statistics(grid, s0, s1).delta(edge, confidence=0.9)
    x = np.maximum(1 - np.exp(edge + s0), 0.0)
    n = x.size
    log_term = np.log(2 / 0.025)
    radius = np.sqrt(2 * x.var(ddof=1) * log_term / n) + 7 * log_term / (3 * (n - 1))
    assert out["upper_d_d_prime"] == pytest.approx(x.mean() + radius, rel=1e-8)
    assert out["lower_d_d_prime"] == pytest.approx(x.mean() - radius, rel=1e-8)


def test_shapes_and_errors(gaussian_scores):
    s0, s1 = gaussian_scores
    grid = ScoreGrid.from_scores(np.concatenate([s0, s1]), bins=64)
    stats_ = statistics(grid, s0, s1)
    assert isinstance(stats_.delta(0.5)["delta"], float)
    assert stats_.delta(np.array([[0.1, 0.2]]))["upper"].shape == (1, 2)
    with pytest.raises(ValueError, match="eps"):
        stats_.delta(-1.0)
    with pytest.raises(ValueError, match="confidence"):
        stats_.delta(0.5, confidence=1.0)
    with pytest.raises(ValueError, match="bins"):
        PrivacyLossStatistics(grid.edges, *([np.zeros(3)] * 6))
    data = stats_.to_dict()
    again = PrivacyLossStatistics(grid.edges, *data.values())
    assert again.delta(0.7) == stats_.delta(0.7)
