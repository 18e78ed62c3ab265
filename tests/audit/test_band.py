"""The full-sample band of ``strategy="holdout+band"``: simultaneous validity, its share of gamma,
and the thresholds it may read on a grid of both samples' values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors
from dpaudit.audit.scores import audit_scores, split_scores
from dpaudit.audit.strategies import (
    BAND_EXACT_COUNTS,
    BAND_SHARE,
    band_counts,
    band_upper,
    bonferroni_candidates,
    choose_threshold,
    predicted_upper,
)


@pytest.mark.parametrize("n", [1, 5, 9, 100, 12_345, 100_000])
def test_band_counts_are_fixed_by_n_and_cover_both_tails(n):
    c = band_counts(n)
    assert c[0] == 0 and c[-1] == n
    assert np.all(np.diff(c) > 0)
    assert set(range(min(n, BAND_EXACT_COUNTS) + 1)) <= set(c.tolist())
    np.testing.assert_array_equal(np.sort(n - c), c)
    assert c.size <= 300  # a few hundred tests, not n: the point of the geometric spacing
    np.testing.assert_array_equal(band_counts(n), c)


def test_band_upper_rounds_up_to_the_next_index_at_gamma_over_k():
    n, gamma = 1000, 0.01
    c = band_counts(n)
    k = np.array([0, 3, 9, 10, 500, 999, 1000])
    nxt = np.array([c[np.searchsorted(c, x)] for x in k])
    assert np.all(nxt >= k)
    expected = clopper_pearson_upper(nxt, n, gamma / c.size)
    np.testing.assert_allclose(band_upper(k, n, gamma), expected, rtol=1e-12)


def test_bounds_at_every_threshold_of_a_large_sample_are_computed_once_per_value(monkeypatch):
    # A scores file of 10^5 scores per side has a threshold at every score; computing a
    # Clopper-Pearson inverse at each of them, again for every delta of a report, took minutes.
    import dpaudit.audit.strategies as strategies

    evaluated: list[int] = []

    def counting(k, n, gamma):
        evaluated.append(np.size(k))
        return clopper_pearson_upper(k, n, gamma)

    monkeypatch.setattr(strategies, "clopper_pearson_upper", counting)
    n, c = 50_000, band_counts(50_000)
    k = np.arange(n + 1)
    band = band_upper(k, n, 0.01)
    assert max(evaluated) <= c.size
    expected = clopper_pearson_upper(c[np.searchsorted(c, k)], n, 0.01 / c.size)
    np.testing.assert_array_equal(band, expected)
    evaluated.clear()
    for _ in range(3):  # as for three deltas of one result
        strategies.predicted_upper(k, n, 2 * n, 0.01, 0.5)
    # two inverses per exact point, at most PREDICTION_POINTS of them per call
    assert sum(evaluated) <= 3 * 2 * strategies.PREDICTION_POINTS


def _uniform_tails(rng: np.random.Generator, reps: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``reps`` samples of ``n`` uniforms, at every threshold just below each sample point
    and at -inf: the count of points at or above it and the true rate ``P(U >= t)``."""
    u = np.sort(rng.random((reps, n)), axis=1)
    counts = n - np.arange(n + 1)  # threshold at u_(j) (j = 0: -inf) has n - j points >= it
    rates = np.concatenate([np.ones((reps, 1)), 1.0 - u], axis=1)
    return np.broadcast_to(counts, rates.shape), rates


def test_band_holds_simultaneously_over_all_thresholds_and_pointwise_bounds_do_not():
    """2,000 samples of 200 uniforms, gamma = 0.2: the band fails somewhere in at most
    ``0.2 * 2000 = 400`` samples (its failure probability is at most gamma by the union bound;
    measured about 0.03, so ``P(Binomial(2000, 0.05) > 400) < 1e-100`` is a generous bound on
    the false-failure probability). Test of the test: Clopper-Pearson bounds at gamma for each
    threshold on its own, the bound without the band, fail somewhere in most samples."""
    reps, n, gamma = 2000, 200, 0.2
    counts, rates = _uniform_tails(np.random.default_rng(0), reps, n)
    band = band_upper(np.arange(n + 1), n, gamma)[counts]
    pointwise = clopper_pearson_upper(np.arange(n + 1), n, gamma)[counts]
    band_fails = int((rates > band).any(axis=1).sum())
    pointwise_fails = int((rates > pointwise).any(axis=1).sum())
    assert band_fails <= gamma * reps
    assert pointwise_fails > 0.5 * reps


def test_band_holds_on_a_law_with_atoms():
    """Scores with three atoms (0, 1, 2 with probabilities 0.7, 0.2, 0.1): thresholds at each
    atom; 4,000 samples of 50, gamma = 0.2; at most 800 failures allowed (false-failure
    probability below 1e-6 if the true rate is at most 0.16; the union bound makes it far
    smaller than gamma)."""
    reps, n, gamma = 4000, 50, 0.2
    rng = np.random.default_rng(1)
    s = rng.choice(3, size=(reps, n), p=[0.7, 0.2, 0.1])
    rates = np.array([1.0, 0.3, 0.1])  # P(S >= a) for the atoms a = 0, 1, 2
    counts = np.stack([(s >= a).sum(axis=1) for a in range(3)], axis=1)
    fails = int((rates > band_upper(counts, n, gamma)).any(axis=1).sum())
    assert fails <= gamma * reps
    assert stats.binom.sf(gamma * reps, reps, 0.16) < 1e-6


def _errors(seed: int, n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s0, s1 = np.sort(rng.normal(0.0, 1.0, n)), np.sort(rng.normal(1.0, 1.0, n))
    return n - np.searchsorted(s0, edges, side="left"), np.searchsorted(s1, edges, side="left")


def _eps(a, b):
    return epsilon_from_errors(a, b, 1e-5)


@pytest.mark.parametrize(("quantity", "n"), [("epsilon", 60), ("mu", 20_000)])
def test_holdout_and_band_are_read_at_their_shares_of_gamma(quantity, n):
    """The band reads the pooled counts at BAND_SHARE * gamma / 2 per error, spread over its
    count indices; the holdout the evaluation counts at (1 - BAND_SHARE) * gamma / 2 per error.
    The eps bound in the tail with 60 trials per side comes from the band (the holdout's split
    halves tiny samples); the mu bound with 20,000, in the middle where the band's few hundred
    indices cost more than the holdout's one or two thresholds, from the holdout. Reading either
    part at the full gamma fails here."""
    gamma = 0.05
    edges = np.linspace(-5.0, 6.0, 1101)
    selection = (*_errors(0, n, edges), n, n)
    evaluation = (*_errors(1, n, edges), n, n)
    objective = _eps if quantity == "epsilon" else mu_from_errors
    choice = choose_threshold("holdout+band", objective, selection, evaluation, gamma)
    j = choice["index"]
    if quantity == "epsilon":
        assert choice["strategy"] == "band"
        fp, fn, n_all = (
            selection[0][j] + evaluation[0][j],
            selection[1][j] + evaluation[1][j],
            2 * n,
        )
        half = BAND_SHARE * gamma / 2
        assert choice["alpha_upper"] == pytest.approx(band_upper(fp, n_all, half), rel=1e-12)
        assert choice["beta_upper"] == pytest.approx(band_upper(fn, n_all, half), rel=1e-12)
        assert (choice["fp"], choice["fn"], choice["n_d"]) == (fp, fn, n_all)
    else:
        assert choice["strategy"] == "holdout"
        g = (1 - BAND_SHARE) * gamma / (2 * choice["candidates"])
        assert choice["gamma_per_bound"] == pytest.approx(g, rel=1e-12)
        assert choice["alpha_upper"] == pytest.approx(
            clopper_pearson_upper(evaluation[0][j], n, g), rel=1e-12
        )
        assert choice["beta_upper"] == pytest.approx(
            clopper_pearson_upper(evaluation[1][j], n, g), rel=1e-12
        )


def _split_indices(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The selection and evaluation positions ``audit_scores`` draws for two sides of ``n`` (its
    default selection fraction, 0.3)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    sel0, ev0 = split_scores(np.arange(n), 0.3, rng)
    sel1, ev1 = split_scores(np.arange(n), 0.3, rng)
    return sel0, ev0, sel1, ev1


def _candidate_values(result) -> np.ndarray:
    """The Bonferroni candidates' threshold values, from the selection counts at named edges."""
    named = result._named()
    sel = result.selection_tradeoff
    idx = bonferroni_candidates(sel.fp[named], sel.fn[named], sel.n_d, sel.n_d_prime)
    return result.grid.edges[named][idx]


def test_scores_grid_names_only_selection_values_for_the_choice():
    """audit_scores puts an edge at every score of both samples; the edges the selection names
    are exactly the selection scores, and the strategies choose among them only: moving every
    evaluation score leaves the Bonferroni candidate set where it was (the threshold read is
    always one of them), while the evaluation counts change."""
    n, seed = 400, 3
    rng = np.random.default_rng(0)
    s0, s1 = rng.standard_normal(n), rng.standard_normal(n) + 1.0
    sel0, ev0, sel1, ev1 = _split_indices(seed, n)
    a = audit_scores(s0, s1, seed=seed, strategy="bonferroni")
    assert a.grid.kind == "values"
    named = a.grid.edges[a._named()]
    np.testing.assert_array_equal(named, np.unique(np.concatenate([s0[sel0], s1[sel1]])))
    t0, t1 = s0.copy(), s1.copy()
    t0[ev0] += 0.7
    t1[ev1] -= 0.7
    b = audit_scores(t0, t1, seed=seed, strategy="bonferroni")
    candidates = _candidate_values(a)
    np.testing.assert_array_equal(_candidate_values(b), candidates)
    for r in (a, b):
        for w in (r.mu_witness(), r.epsilon_witness(1e-5)):
            assert w["threshold"] in candidates
            assert w["candidates"] == candidates.size
    assert a.mu_witness()["alpha"] != b.mu_witness()["alpha"]


def test_default_scores_strategy_is_crossed_on_every_score():
    rng = np.random.default_rng(0)
    r = audit_scores(rng.standard_normal(50), rng.standard_normal(50) + 3.0)
    assert r.strategy == "crossed" and r.metadata["threshold_choice"] == "crossed"
    assert r.trials == 50 and r.selection_trials == 0
    w = r.epsilon_witness(1e-5)
    assert w["strategy"] == "crossed" and w["epsilon"] > 0


def test_the_holdout_inside_holdout_exact_chooses_among_the_selections_values_only():
    """On a grid of both samples' values the holdout inside "holdout+exact" reads a selection
    score, never an evaluation score (whose test would depend on evaluation data)."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        s0, s1 = rng.standard_normal(20_000), rng.standard_normal(20_000) + 1.0
        r = audit_scores(s0, s1, seed=seed, strategy="holdout+exact", selection_fraction=0.6)
        named = set(r.grid.edges[r._named()].tolist())
        for w in (r.mu_witness(), r.epsilon_witness(1e-5)):
            if w["strategy"] != "exact":
                assert w["threshold"] in named, (seed, w["strategy"])


def test_infinite_selection_scores_name_no_evaluation_value():
    """A +inf score of the selection names the test "score = inf" (an edge above every finite
    score), not the largest finite score, which may lie in the evaluation sample."""
    rng = np.random.default_rng(0)
    s0 = rng.standard_normal(60)
    s1 = np.r_[rng.standard_normal(40) + 1.0, np.full(20, np.inf)]
    r = audit_scores(s0, s1, seed=1, strategy="holdout")
    finite_max = float(np.max(np.r_[s0, s1[np.isfinite(s1)]]))
    assert r.grid.edges[-1] > finite_max and r.grid.edges[-2] == finite_max
    sel0, _, sel1, _ = _split_indices(1, 60)
    selection = np.r_[s0[sel0], s1[sel1]]
    named = r.grid.edges[r._named()]
    for edge in named:
        assert edge in selection or (edge > finite_max and np.isinf(selection).any())


@pytest.mark.parametrize("confidence", [0.95, 0.99, 0.999])
@pytest.mark.parametrize("n", [20, 200, 2000])
def test_bounds_never_exceed_the_ceilings_of_the_default(n, confidence):
    """The ceilings state what a perfect attack could certify with these sizes; with the band
    reading the pooled trials they include its reading, so no bound exceeds them (perfectly
    separated scores attain them)."""
    s0, s1 = np.zeros(n), np.ones(n)
    r = audit_scores(s0, s1, confidence=confidence)
    assert r.epsilon_lower_bound(1e-5) <= r.epsilon_ceiling(1e-5) + 1e-12
    assert r.mu_lower_bound() <= r.mu_ceiling() + 1e-12


def test_band_ceiling_is_the_closed_form_at_the_bands_level():
    """A perfect attack's count is 0: the band's bound is 1 - level^(1/n) (Clopper-Pearson at
    zero), at level BAND_SHARE * gamma / 2 over the band's K indices."""
    from dpaudit.audit.strategies import band_ceiling_errors

    gamma = 0.05
    a, b = band_ceiling_errors(300, 7000, gamma)
    for bound, n in ((a, 300), (b, 7000)):
        level = BAND_SHARE * gamma / 2 / band_counts(n).size
        assert bound == pytest.approx(1 - level ** (1 / n), rel=1e-9)


def test_the_prediction_of_monotone_counts_skips_the_sort_and_agrees_with_any_order():
    # Counts along the thresholds are monotone, and their distinct values are then read without
    # a sort; a shuffled copy takes numpy's unique. Both must predict the same at every index.
    rng = np.random.default_rng(4)
    counts = np.sort(rng.integers(0, 5000, 20_000))
    order = rng.permutation(counts.size)
    for k in (counts, counts[::-1]):
        direct = predicted_upper(k, 5000, 8000, 1e-3)
        shuffled = np.empty_like(direct)
        shuffled[order] = predicted_upper(k[order], 5000, 8000, 1e-3)
        assert np.array_equal(direct, shuffled)
