"""The exact boundary-crossing probability of uniform order statistics, against a published
table, a closed form, Steck's determinant and brute-force simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dpaudit.audit.crossing import noncrossing_probability


def _ks_minus_tail(n: int, d: float) -> float:
    """``P(D_n^- >= d)`` for ``D_n^- = max_i (U_(i) - (i - 1) / n)``: one minus the probability
    that every ``U_(i)`` stays at or below ``(i - 1) / n + d``. ``D_n^-`` has the law of the
    one-sided Kolmogorov-Smirnov statistic ``D_n^+``."""
    i = np.arange(1, n + 1)
    return 1.0 - noncrossing_probability(i, (i - 1) / n + d, n)


@pytest.mark.parametrize(
    ("d", "published"), [(0.3230, 0.0994), (0.3690, 0.0497), (0.4090, 0.0251), (0.4570, 0.0099)]
)
def test_one_sided_kolmogorov_smirnov_tail_matches_the_published_values(d, published):
    """NAG Library Manual, Mark 29.1, G01EYF example program results (one-sided upper-tail
    probabilities of the one-sample Kolmogorov-Smirnov statistic, exact for n <= 100):
    https://support.nag.com/numeric/nl/nagdoc_29.1/examples/baseresults/g01eyfe.r.html,
    n = 10, printed to four decimals."""
    assert _ks_minus_tail(10, d) == pytest.approx(published, abs=5e-5)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 30, 100, 400])
@pytest.mark.parametrize("q", [0.5, 0.95, 0.999999])
def test_one_sided_kolmogorov_smirnov_tail_matches_the_closed_form(n, q):
    """Every rank a checkpoint: the one-sided Kolmogorov-Smirnov tail, whose closed form is
    Birnbaum and Tingey 1951 (``scipy.special.smirnov``), to 1e-10 at every level."""
    d = float(stats.ksone.ppf(q, n))
    assert _ks_minus_tail(n, d) == pytest.approx(special.smirnov(n, d), abs=1e-10)


def _steck(bounds: np.ndarray) -> float:
    """``P(U_(i) <= b_i, i = 1..n)`` by Steck's determinant (Steck 1971, Annals of Mathematical
    Statistics 42, 1-11, Theorem 1 with lower boundary 0): ``n! det(m)``,
    ``m_ij = b_i^(j-i+1) / (j-i+1)!`` for ``j >= i - 1`` and 0 below; ``b`` non-decreasing."""
    n = bounds.size
    m = np.zeros((n, n))
    for i in range(n):
        for j in range(max(i - 1, 0), n):
            m[i, j] = bounds[i] ** (j - i + 1) / math.factorial(j - i + 1)
    return math.factorial(n) * float(np.linalg.det(m))


@pytest.mark.parametrize("seed", range(6))
def test_sparse_checkpoints_match_stecks_determinant(seed):
    """Random increasing bounds at a random subset of the ranks of ``n <= 9`` uniforms (the other
    ranks unconstrained, bound 1), to 1e-10."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    size = int(rng.integers(1, n + 1))
    ranks = np.sort(rng.choice(np.arange(1, n + 1), size=size, replace=False))
    bounds = np.sort(rng.uniform(0.05, 1.0, ranks.size))
    full = np.ones(n)
    full[ranks - 1] = bounds
    full = np.minimum.accumulate(full[::-1])[::-1]
    assert noncrossing_probability(ranks, bounds, n) == pytest.approx(_steck(full), abs=1e-10)


def test_a_band_at_small_n_matches_simulation():
    """20 uniforms, the checkpoints 1, 2, 3, 5, 8, 13 and 20, bounds at the 0.9 quantile of each
    order statistic: 400,000 simulated samples, the frequency within 5 standard errors of the
    computed probability (false-failure probability below 1e-6)."""
    n, ranks = 20, np.array([1, 2, 3, 5, 8, 13, 20])
    bounds = special.betaincinv(ranks, n - ranks + 1.0, 0.9)
    exact = noncrossing_probability(ranks, bounds, n)
    reps = 400_000
    u = np.sort(np.random.default_rng(3).random((reps, n)), axis=1)
    held = float((u[:, ranks - 1] <= bounds).all(axis=1).mean())
    assert abs(held - exact) <= 5 * math.sqrt(exact * (1 - exact) / reps)
    # The union bound would claim only 1 - 7 * 0.1 = 0.3; the dependence is what the exact
    # computation keeps.
    assert exact > 0.6


def test_the_probability_is_no_more_than_the_least_likely_single_event_and_monotone():
    n = 500
    ranks = np.array([1, 5, 50, 250, 499])
    bounds = special.betaincinv(ranks, n - ranks + 1.0, 0.99)
    p = noncrossing_probability(ranks, bounds, n)
    assert p <= 0.99 + 1e-12
    assert p >= 1 - 5 * 0.01 - 1e-12
    assert noncrossing_probability(ranks, bounds * 1.01, n) > p


def test_degenerate_boundaries():
    assert noncrossing_probability(np.array([], dtype=int), np.array([]), 5) == 1.0
    assert noncrossing_probability([1, 3], [0.0, 0.5], 4) == 0.0
    # A bound of 1 constrains nothing; a later, smaller bound binds the earlier ranks.
    assert noncrossing_probability([2], [1.0], 3) == 1.0
    assert noncrossing_probability([1, 2], [0.9, 0.4], 2) == pytest.approx(0.4**2)
    # U_(n) <= b for all n draws: b^n.
    assert noncrossing_probability([7], [0.8], 7) == pytest.approx(0.8**7)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"ranks": [2, 1], "bounds": [0.5, 0.6], "n": 3}, "ranks"),
        ({"ranks": [0, 1], "bounds": [0.5, 0.6], "n": 3}, "ranks"),
        ({"ranks": [1, 4], "bounds": [0.5, 0.6], "n": 3}, "ranks"),
        ({"ranks": [1], "bounds": [0.5, 0.6], "n": 3}, "same length"),
        ({"ranks": [1], "bounds": [float("nan")], "n": 3}, "NaN"),
        ({"ranks": [1], "bounds": [0.5], "n": 0}, "n"),
    ],
)
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        noncrossing_probability(**kwargs)
