"""Score grids: kinds chosen from a pilot, arithmetic binning against a binary search, weights."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpaudit.audit.grid import MARGIN, ScoreGrid


def brute_index(grid: ScoreGrid, scores: np.ndarray) -> np.ndarray:
    """Bin k holds [e_{k-1}, e_k): the number of edges <= score."""
    return np.searchsorted(grid.edges, scores, side="right")


def test_continuous_pilot_gives_uniform_grid_with_margins_and_zero_edge():
    rng = np.random.default_rng(0)
    pilot = rng.normal(0.3, 1.0, 5000)
    grid = ScoreGrid.from_scores(pilot, bins=1024)
    lo, hi = pilot.min(), pilot.max()
    span = hi - lo
    assert grid.kind == "uniform"
    assert grid.edges[0] <= lo - MARGIN * span + 1e-12
    assert grid.edges[-1] >= hi + MARGIN * span - 1e-12
    assert 1024 <= grid.edges.size - 1 <= 1026
    assert 0.0 in grid.edges
    np.testing.assert_allclose(np.diff(grid.edges), grid.width, rtol=1e-9)


def test_lattice_pilot_centres_bins_on_the_lattice():
    values = np.array([-3.0, -1.0, 1.0, 3.0]) * 0.7  # k-fold randomized response style
    grid = ScoreGrid.from_scores(np.repeat(values, 10) + 1e-15, bins=1024)
    assert grid.kind == "lattice"
    assert grid.width == pytest.approx(1.4)
    # Every lattice point, seen or unseen within the margin, sits mid-bin.
    points = np.arange(-9, 10, 2) * 0.7
    index, _ = grid.locate(points)
    assert np.unique(index).size == points.size
    lower = np.insert(grid.edges, 0, -np.inf)[index]
    np.testing.assert_allclose(points - lower, 0.7, rtol=1e-9)


def test_irregular_atoms_give_midpoint_edges():
    grid = ScoreGrid.from_scores(np.array([0.0, 1.0, 1.0, 3.5, 0.0]))
    assert grid.kind == "discrete"
    np.testing.assert_allclose(grid.edges, [0.5, 2.25])


def test_degenerate_pilots():
    assert ScoreGrid.from_scores(np.array([np.inf, -np.inf])).edges.tolist() == [0.0]
    single = ScoreGrid.from_scores(np.full(10, 2.0))
    assert single.kind == "discrete" and single.edges.tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match="NaN"):
        ScoreGrid.from_scores(np.array([0.0, np.nan]))


@pytest.mark.parametrize("kind", ["uniform", "lattice", "discrete"])
def test_locate_agrees_with_binary_search(kind):
    rng = np.random.default_rng(1)
    if kind == "uniform":
        grid = ScoreGrid.from_scores(rng.normal(size=2000), bins=256)
        scores = np.concatenate([rng.normal(0, 3, 5000), grid.edges[::7]])
    elif kind == "lattice":
        grid = ScoreGrid.from_scores(np.array([-1.0, 1.0]))
        scores = rng.choice([-5.0, -3.0, -1.0, 1.0, 3.0, 5.0, 11.0], 500)
    else:
        grid = ScoreGrid.from_scores(np.array([0.0, 1.0, 3.5]))
        scores = rng.uniform(-2, 6, 500)
    scores = np.concatenate([scores, [-np.inf, np.inf, -1e300, 1e300]])
    index, _ = grid.locate(scores)
    expected = brute_index(grid, scores)
    # Arithmetic binning may put a score lying exactly on an edge (to rounding) either side.
    mismatch = index != expected
    if mismatch.any():
        near = np.min(np.abs(scores[mismatch, None] - grid.edges[None, :]), axis=1)
        assert np.all(near <= 1e-9 * max(1.0, np.abs(grid.edges).max()))
    assert index.min() >= 0 and index.max() <= grid.edges.size


@pytest.mark.parametrize("kind", ["uniform", "discrete"])
def test_weights_are_exponentials_of_the_distance_to_the_edges(kind):
    rng = np.random.default_rng(2)
    if kind == "uniform":
        grid = ScoreGrid.from_scores(rng.normal(size=1000), bins=128)
    else:
        grid = ScoreGrid.from_scores(np.array([-2.0, 0.0, 0.5, 3.0]))
    scores = rng.uniform(grid.edges[0] + 1e-6, grid.edges[-1] - 1e-6, 3000)
    index, upper_w = grid.locate(scores, "upper")
    _, lower_w = grid.locate(scores, "lower")
    upper = np.append(grid.edges, np.inf)[index]
    lower = np.insert(grid.edges, 0, -np.inf)[index]
    np.testing.assert_allclose(upper_w, np.exp(scores - upper), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lower_w, np.exp(lower - scores), rtol=1e-9, atol=1e-12)
    assert np.all(upper_w <= 1 + 1e-12) and np.all(lower_w <= 1 + 1e-12)


def test_weights_at_infinite_scores():
    grid = ScoreGrid.from_scores(np.random.default_rng(3).normal(size=100), bins=64)
    s = np.array([-np.inf, np.inf])
    index, upper_w = grid.locate(s, "upper")
    _, lower_w = grid.locate(s, "lower")
    assert index.tolist() == [0, grid.edges.size]
    assert upper_w[0] == 0.0  # -inf is infinitely far below e_0
    assert lower_w[1] == 0.0  # +inf is infinitely far above the top edge


def test_grid_round_trips_through_dict_and_pickle():
    grid = ScoreGrid.from_scores(np.random.default_rng(4).normal(size=500), bins=300)
    for copy in (ScoreGrid.from_dict(grid.to_dict()), pickle.loads(pickle.dumps(grid))):
        assert copy.kind == grid.kind
        np.testing.assert_array_equal(copy.edges, grid.edges)
    discrete = ScoreGrid.from_scores(np.array([0.0, 1.0, 3.5]))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(discrete)).edges, discrete.edges)
    np.testing.assert_array_equal(ScoreGrid.from_dict(discrete.to_dict()).edges, discrete.edges)


def test_grid_refuses_bad_input():
    with pytest.raises(ValueError, match="kind"):
        ScoreGrid("fancy", np.array([0.0]))
    with pytest.raises(ValueError, match="strictly increasing"):
        ScoreGrid("discrete", np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="bins"):
        ScoreGrid.from_scores(np.array([0.0, 1.0]), bins=1)
    with pytest.raises(ValueError, match="weight"):
        ScoreGrid("discrete", np.array([0.0])).locate(np.zeros(2), "middle")
