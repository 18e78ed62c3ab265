"""The exact band of ``"holdout+exact"`` and ``"crossed"``: its joint coverage computed, not
union-bounded, its checkpoints and shapes, its share of gamma beside the holdout, and its coverage
by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.crossing import noncrossing_probability
from dpaudit.audit.lower_bounds import epsilon_from_errors
from dpaudit.audit.strategies import (
    BAND_SHAPES,
    EXACT_HOLDOUT_SELECTION,
    EXACT_LINEAR_COUNTS,
    EXACT_SHARE,
    EXACT_SPACING,
    band_shape,
    band_weights,
    ceiling_errors,
    choose_threshold,
    crossed_upper,
    exact_band_counts,
    exact_band_levels,
    exact_band_upper,
    exact_share,
)


def _crossing(n: int, gamma: float, shape: str = "tail") -> float:
    """The probability that some checkpoint's order statistic exceeds its bound, recomputed."""
    c, levels = exact_band_levels(n, gamma, shape)
    bounds = special.betaincinv(c + 1.0, n - c, 1.0 - levels)
    return 1.0 - noncrossing_probability(c + 1, bounds, n)


@pytest.mark.parametrize("n", [1, 2, 7, 60, 1000, 20_000])
def test_exact_band_counts_are_fixed_by_n_and_cover_both_tails(n):
    c = exact_band_counts(n)
    assert c[0] == 0 and c[-1] == n and np.all(np.diff(c) > 0)
    assert set(range(min(n, EXACT_LINEAR_COUNTS) + 1)) <= set(c.tolist())
    np.testing.assert_array_equal(np.sort(n - c), c)
    np.testing.assert_array_equal(exact_band_counts(n), c)
    # Below n / 2 (and its mirror images) consecutive checkpoints are at most EXACT_SPACING
    # deviations apart, rounded up to a count.
    low = c[c <= n / 2 - 2 * EXACT_SPACING * np.sqrt(n)]
    assert np.all(np.diff(low) <= np.maximum(1, np.ceil(EXACT_SPACING * np.sqrt(low[:-1]))))


def test_every_count_up_to_the_linear_part_is_a_checkpoint_and_larger_ones_are_spaced():
    c = exact_band_counts(100_000)
    assert set(range(EXACT_LINEAR_COUNTS + 1)) <= set(c.tolist())
    above = c[(c >= EXACT_LINEAR_COUNTS) & (c <= 49_000)]
    gaps = np.diff(above)
    np.testing.assert_array_equal(gaps, np.ceil(EXACT_SPACING * np.sqrt(above[:-1])))


@pytest.mark.parametrize("shape", ["tail", "middle"])
@pytest.mark.parametrize("n", [1, 2, 7, 60, 1000, 20_000])
@pytest.mark.parametrize("gamma", [0.01, 0.2])
def test_the_exact_band_fails_with_probability_just_below_its_gamma(n, gamma, shape):
    """The exact computation puts the band's failure probability between 0.97 and 0.999 of its
    gamma: a band calibrated to another target (gamma / 2) or to another sample size fails this
    test. Its levels never fall below the union bound's, and follow the weights of its shape."""
    crossing = _crossing(n, gamma, shape)
    assert 0.97 * (1 - 1e-3) * gamma <= crossing <= (1 - 1e-3) * gamma + 1e-12
    c, levels = exact_band_levels(n, gamma, shape)
    weight = band_weights(c, n, shape)
    np.testing.assert_allclose(levels / weight, levels[0] / weight[0], rtol=1e-12)
    assert levels[0] / weight[0] * weight.sum() >= (1 - 1e-3) * gamma


def test_the_shapes_spend_their_error_where_they_say():
    """ "tail": every count up to 32 at full weight, the rest at a tenth; "middle": the counts
    above n / 10 up to n / 2 at full weight, the rest at a fiftieth. A band of one shape is
    tighter than the other's where it puts its weight (here, at 0 and at n / 4 false positives)."""
    n = 1000
    c = np.array([0, 32, 33, 100, 101, 500, 501, 999])
    np.testing.assert_array_equal(band_weights(c, n, "tail"), [1, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    np.testing.assert_array_equal(
        band_weights(c, n, "middle"), [0.02, 0.02, 0.02, 0.02, 1, 1, 0.02, 0.02]
    )
    with pytest.raises(ValueError, match="shape"):
        band_weights(c, n, "both")
    tail, middle = (exact_band_upper(np.array([0, 250]), n, 0.025, s) for s in ("tail", "middle"))
    assert tail[0] < middle[0] and middle[1] < tail[1]


def test_the_shape_of_few_values_is_read_from_their_mid_distribution():
    """The exact laws, as counts of 10^6 scores: a two-sided geometric law of eps = 1 clipped to
    [-4, 4] puts 2.8% on each side beyond 2.5 robust deviations of the mid-distribution's
    quartiles (about -0.79 and 0.79), so "middle"; a normal law of scale 2 rounded to integers
    puts about 1.2%, so "tail". The ordinary quartiles (-1 and 1, a robust deviation of 1.48)
    put the geometric law's cut beyond its value 3, and its share at 2.7%."""
    k = np.arange(-4, 5)
    p = np.exp(-np.abs(k)) * (1 - np.exp(-1.0)) / (1 + np.exp(-1.0))
    p[[0, -1]] = np.exp(-4.0) / (1 + np.exp(-1.0))  # the clipped tails, P(|X| >= 4) each side
    assert p.sum() == pytest.approx(1.0)
    assert band_shape(k, np.round(p * 1e6)) == "middle"
    j = np.arange(-12, 13)
    rounded = stats.norm.cdf((j + 0.5) / 2) - stats.norm.cdf((j - 0.5) / 2)
    assert band_shape(j, np.round(rounded * 1e6)) == "tail"
    # A single value has no spread and no tails; bins of no scores are ignored; infinite
    # values count in the share and never in the scale.
    assert band_shape(np.array([3.0]), np.array([100])) == "tail"
    assert band_shape(np.array([-1.0, 3.0, 7.0]), np.array([0, 100, 0])) == "tail"
    assert band_shape(np.r_[k, 9, 10], np.r_[np.round(p * 1e6), 0, 0]) == "middle"
    assert band_shape(np.r_[-np.inf, j], np.r_[50_000, np.round(rounded * 1e6)]) == "middle"


def test_a_few_thousand_dependent_checkpoints_cost_a_few_dozen_tests():
    """The point of the exact computation: at n = 10,000 the band's thousands of checkpoints hold
    together at a level per checkpoint more than fifteen times the union bound's (20.8: the
    figure docs/theory.md states)."""
    n, gamma = 10_000, 0.025
    c, levels = exact_band_levels(n, gamma)
    weight = band_weights(c, n, "tail")
    union = gamma / weight.sum()
    assert c.size > 2000
    assert levels[0] > 15.0 * union


@pytest.mark.parametrize("shape", ["tail", "middle"])
def test_the_band_reads_the_smallest_bound_at_or_above_each_count(shape):
    n, gamma = 5000, 0.05
    c, levels = exact_band_levels(n, gamma, shape)
    bounds = special.betaincinv(c + 1.0, n - c, 1.0 - levels)
    k = np.array([0, 5, 33, 34, 100, 499, 500, 501, 1024, 1025, 1030, 2500, 4000, 4999, 5000])
    expected = [min(bounds[c >= x], default=1.0) for x in k]
    np.testing.assert_allclose(exact_band_upper(k, n, gamma, shape), expected, rtol=1e-12)


def _uniform_tails(rng: np.random.Generator, reps: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``reps`` samples of ``n`` uniforms, at the threshold just below each sample point and
    at -inf: the count of points at or above it and the true rate ``P(U >= t)``."""
    u = np.sort(rng.random((reps, n)), axis=1)
    counts = n - np.arange(n + 1)
    rates = np.concatenate([np.ones((reps, 1)), 1.0 - u], axis=1)
    return np.broadcast_to(counts, rates.shape), rates


def test_the_exact_band_covers_every_threshold_at_its_computed_rate():
    """20,000 samples of 40 uniforms, gamma = 0.2: the band fails somewhere in a fraction of the
    samples within 5 standard errors of its computed failure probability (false-failure
    probability below 1e-6): the coverage is exact, neither below 1 - gamma nor far above.
    Test of the test: Clopper-Pearson bounds at gamma for each threshold on its own fail
    somewhere in most samples."""
    reps, n, gamma = 20_000, 40, 0.2
    counts, rates = _uniform_tails(np.random.default_rng(0), reps, n)
    band = exact_band_upper(np.arange(n + 1), n, gamma)[counts]
    fails = (rates > band).any(axis=1).mean()
    p = _crossing(n, gamma)
    assert abs(fails - p) <= 5 * math.sqrt(p * (1 - p) / reps)
    assert fails <= gamma
    pointwise = clopper_pearson_upper(np.arange(n + 1), n, gamma)[counts]
    assert (rates > pointwise).any(axis=1).mean() > 0.5


def test_the_exact_band_holds_on_a_law_with_atoms():
    """Three atoms (0, 1, 2 with probabilities 0.7, 0.2, 0.1), thresholds at each; 4,000 samples
    of 50, gamma = 0.2: at most 800 failures (a law with atoms fails less often than uniforms,
    by the randomisation argument of band_upper; false-failure probability below 1e-6)."""
    reps, n, gamma = 4000, 50, 0.2
    s = np.random.default_rng(1).choice(3, size=(reps, n), p=[0.7, 0.2, 0.1])
    rates = np.array([1.0, 0.3, 0.1])
    counts = np.stack([(s >= a).sum(axis=1) for a in range(3)], axis=1)
    assert int((rates > exact_band_upper(counts, n, gamma)).any(axis=1).sum()) <= gamma * reps


def _errors(seed: int, n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s0, s1 = np.sort(rng.normal(0.0, 1.0, n)), np.sort(rng.normal(1.0, 1.0, n))
    return n - np.searchsorted(s0, edges, side="left"), np.searchsorted(s1, edges, side="left")


@pytest.mark.parametrize(("n_selection", "n_evaluation"), [(400, 900), (12_000, 30_000)])
def test_holdout_and_exact_band_are_read_at_their_shares_of_gamma(n_selection, n_evaluation):
    """Below EXACT_HOLDOUT_SELECTION selection trials the exact band spends all of gamma,
    gamma / 2 per error on the pooled counts of each error's own sample; above, it spends
    EXACT_SHARE and the holdout the rest. Unequal sample sizes per side: a band read at the
    other side's n, or at the evaluation sample's, fails here."""
    gamma = 0.05
    edges = np.linspace(-5.0, 6.0, 1101)
    sizes = (n_selection, n_selection + 7), (n_evaluation, n_evaluation - 11)
    fp_s, _ = _errors(0, sizes[0][0], edges)
    _, fn_s = _errors(1, sizes[0][1], edges)
    fp_e, _ = _errors(2, sizes[1][0], edges)
    _, fn_e = _errors(3, sizes[1][1], edges)
    selection = (fp_s, fn_s, *sizes[0])
    evaluation = (fp_e, fn_e, *sizes[1])
    share = exact_share(*sizes[0])
    assert share == (EXACT_SHARE if n_selection >= EXACT_HOLDOUT_SELECTION else 1.0)
    each = share * gamma / 2
    n0, n1 = sizes[0][0] + sizes[1][0], sizes[0][1] + sizes[1][1]
    for objective in (lambda a, b: epsilon_from_errors(a, b, 1e-5), lambda a, b: -a - b):
        choice = choose_threshold("holdout+exact", objective, selection, evaluation, gamma)
        j = choice["index"]
        if choice["strategy"] == "exact":
            assert (choice["n_d"], choice["n_d_prime"]) == (n0, n1)
            assert choice["gamma_per_bound"] == pytest.approx(each, rel=1e-12)
            fp, fn = fp_s[j] + fp_e[j], fn_s[j] + fn_e[j]
            assert choice["alpha_upper"] == pytest.approx(exact_band_upper(fp, n0, each), rel=1e-9)
            assert choice["beta_upper"] == pytest.approx(exact_band_upper(fn, n1, each), rel=1e-9)
            # The first threshold of the best run: no threshold reads a better objective.
            a = exact_band_upper(fp_s + fp_e, n0, each)
            b = exact_band_upper(fn_s + fn_e, n1, each)
            assert j == int(np.argmax(objective(a, b)))
        else:
            assert share < 1.0
            g = choice["gamma_per_bound"]
            assert g * 2 * choice["candidates"] == pytest.approx((1 - share) * gamma, rel=1e-12)


def test_the_band_share_depends_on_the_selection_sizes_only():
    assert exact_share(EXACT_HOLDOUT_SELECTION - 1, 10**9) == 1.0
    assert exact_share(EXACT_HOLDOUT_SELECTION, EXACT_HOLDOUT_SELECTION) == EXACT_SHARE


@pytest.mark.parametrize("mechanism", ["laplace", "randomized_response"])
def test_the_engine_reads_crossed_on_both_samples_pooled(mechanism):
    """strategy="crossed" on the engine's counts: each error bounded on its dataset's selection
    and evaluation trials pooled, by a band whose shape the other dataset's pooled counts give
    (the Laplace mechanism's likelihood-ratio scores) or at the threshold between the other
    dataset's two values, beside the band (randomized response); the bound stays below
    the true eps = 1 and is positive (seed 0; each such audit exceeds the truth with probability
    at most 5%)."""
    import dpaudit
    from dpaudit.mechanisms import Laplace, RandomizedResponse

    mech = Laplace(1.0) if mechanism == "laplace" else RandomizedResponse(1.0)
    result = dpaudit.audit_mechanism(mech, trials=20_000, seed=0, strategy="crossed")
    w = result.epsilon_witness(1e-5)
    assert w["strategy"] == "crossed" and w["gamma_per_bound"] == pytest.approx(0.025)
    pooled = result.counts + result.selection_counts
    n0 = int(pooled[0].sum())
    if mechanism == "laplace":
        values = np.concatenate([[-np.inf], result.grid.edges])
        assert result._band_shapes[0] == band_shape(values, pooled[1])
        assert result._crossed_tests == (None, None)
        j = int(np.flatnonzero(result.grid.edges == w["threshold"])[0])
        fp = int(pooled[0][j + 1 :].sum())
        assert w["alpha_upper"] == exact_band_upper(fp, n0, 0.025, result._band_shapes[0])
    else:
        # Two values a side: one test, at the rule between them.
        assert all(t is not None and t.size == 1 for t in result._crossed_tests)
    assert 0.5 < w["epsilon"] <= 1.0


def test_a_crossed_engine_audit_stays_below_its_ceiling_with_weighted_tests():
    """D: a constant output; D_prime: 1 (11%), 2 (45%), 3 to 14 (36%), 60 (8%), through the
    engine with strategy="crossed". alpha's 14 tests are weighted by D_prime's errors (a middle
    band: 60 is far out), and the rule ">= 2", where D_prime errs on 11%, gets 1 / 1.26 of
    their level: the bound, 8.79, is more than equal weights would let a perfect attack
    certify (8.60), and stays below the ceiling, a single threshold at gamma / 2 per error on
    the pooled trials, which no test or band of crossed can pass."""
    import dpaudit
    from dpaudit.attacks import Threshold
    from dpaudit.mechanisms.blackbox import BlackBox

    def release(dataset, size, rng):
        if len(dataset) == 0:
            return np.zeros(size)
        u = rng.random(size)
        middle = rng.integers(3, 15, size).astype(float)
        return np.where(u < 0.11, 1.0, np.where(u < 0.56, 2.0, np.where(u < 0.92, middle, 60.0)))

    mech = BlackBox(release, dataset=np.zeros(0), neighbour=np.ones(1))
    result = dpaudit.audit_mechanism(
        mech, attack=Threshold(), trials=20_000, seed=0, strategy="crossed", progress=False
    )
    tests0, tests1 = result._crossed_tests
    assert tests0.size == 14 and tests1 is None
    assert result._band_shapes[0] == "middle"
    n0, n1 = (result.counts + result.selection_counts).sum(axis=1)
    # A perfect attack's bounds with the tests at equal weights (each band shape's best) on the
    # pooled trials, and at a single threshold at gamma / 2 per error on the evaluation trials:
    # the ceiling equal weights would give.
    alpha = min(crossed_upper(np.zeros(14), n0, 0.025, np.arange(14), s)[0] for s in BAND_SHAPES)
    beta = min(exact_band_upper(np.array(0), n1, 0.025, s) for s in BAND_SHAPES)
    single = ceiling_errors(result.trials, result.trials, 0.05)
    equal = max(
        float(epsilon_from_errors(alpha, beta, 1e-5)),
        float(epsilon_from_errors(*single, 1e-5)),
    )
    eps = result.epsilon_lower_bound(1e-5)
    assert equal < eps <= result.epsilon_ceiling(1e-5)
    assert result.mu_lower_bound() <= result.mu_ceiling()
