"""audit_scores: the engine's bounds on given scores, coverage, small samples."""

import numpy as np
import pytest
from scipy.stats import beta, norm

import dpaudit as dpa
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.lower_bounds import epsilon_from_errors
from dpaudit.audit.scores import audit_scores, split_scores
from dpaudit.audit.strategies import (
    FEW_VALUES,
    FEW_VALUES_BAND_SHARE,
    MIDDLE_REST,
    crossed_tests,
    crossed_upper,
    crossed_weights,
    exact_band_upper,
)
from tests.audit.laws import true_eps


@pytest.mark.parametrize("strategy", ["bonferroni", "holdout", "holdout+band", "holdout+exact"])
def test_counts_are_the_split_scores_on_a_grid_of_their_values(strategy):
    """Every score of both samples is an edge; the selection and evaluation counts are the two
    halves of the seeded split counted there, and a result rebuilt from its JSON reads the same
    bounds."""
    rng = np.random.default_rng(5)
    s0, s1 = rng.standard_normal(3000), rng.standard_normal(3000) + 1.0
    s0[::97], s1[::89] = -np.inf, np.inf  # the infinite scores have bins of their own
    s1[::7] = s0[::7]  # ties across the samples
    result = audit_scores(s0, s1, strategy=strategy, seed=3, selection_fraction=0.5)
    split = np.random.default_rng(np.random.SeedSequence(3))
    sel0, ev0 = split_scores(s0, 0.5, split)
    sel1, ev1 = split_scores(s1, 0.5, split)
    finite = np.unique(np.r_[s0, s1][np.isfinite(np.r_[s0, s1])])
    above = np.nextafter(finite[-1], np.inf)
    np.testing.assert_array_equal(result.grid.edges, np.r_[finite, above])
    edges = result.grid.edges
    for counts, (a, b) in ((result.counts, (ev0, ev1)), (result.selection_counts, (sel0, sel1))):
        for side, scores in enumerate((a, b)):
            expected = np.bincount(
                np.searchsorted(edges, scores, side="right"), minlength=edges.size + 1
            )
            np.testing.assert_array_equal(counts[side], expected)
    again = dpa.AuditResult.from_json(result.to_json())
    for delta in (0.0, 1e-5, 1e-2):
        assert again.epsilon_lower_bound(delta) == result.epsilon_lower_bound(delta)
    assert again.mu_lower_bound() == result.mu_lower_bound() > 0


def test_certifies_mu_06_at_1000_per_side():
    rng = np.random.default_rng(0)
    result = audit_scores(rng.standard_normal(1000), rng.standard_normal(1000) + 1.0)
    assert result.mu_lower_bound() >= 0.6
    assert result.mu_ceiling() > result.mu_lower_bound()
    assert result.epsilon_ceiling(1e-5) > result.epsilon_lower_bound(1e-5)
    dpa.AuditResult.from_json(result.to_json())


def _point_estimate(result):
    """The best mu of the evaluation counts' point estimates, without any confidence bound."""
    t = result.tradeoff
    a = np.clip(t.fp / t.n_d, 1e-12, 1 - 1e-12)
    b = np.clip(t.fn / t.n_d_prime, 1e-12, 1 - 1e-12)
    return float(np.max(norm.ppf(1 - a) - norm.ppf(b)))


def test_coverage_never_exceeds_truth_and_point_estimate_does():
    """100 seeds, n = 1000 per side, mu = 1. Each bound exceeds 1 with probability <= 5%; we
    allow 12 exceedances (P[Binomial(100, 0.05) > 12] ~ 0.2%: the false-failure probability).
    The point estimate at the best threshold exceeds 1 in most seeds, so the test can fail."""
    bounds, points = [], []
    for seed in range(100):
        rng = np.random.default_rng(1000 + seed)
        r = audit_scores(rng.standard_normal(1000), rng.standard_normal(1000) + 1.0, seed=seed)
        bounds.append(r.mu_lower_bound())
        points.append(_point_estimate(r))
    assert sum(b > 1.0 for b in bounds) <= 12
    assert sum(p > 1.0 for p in points) > 12


def test_small_samples_do_not_collapse():
    """n = 100 per side, mu = 1: the default's mu bound is positive in most of 20 seeds."""
    positive = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        r = audit_scores(rng.standard_normal(100), rng.standard_normal(100) + 1.0)
        assert r.metadata["threshold_choice"] == "crossed"
        assert r.mu_lower_bound() <= 1.5
        positive += r.mu_lower_bound() > 0
    assert positive >= 12


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"scores_d": [0.0, np.nan, 1.0, 2.0]}, "scores_d"),
        ({"scores_d_prime": [1.0, 2.0]}, "scores_d_prime"),
        ({"strategy": "fixed"}, "strategy"),
        ({"confidence": 1.0}, "confidence"),
        ({"scores_d": np.arange(10.0) + 1j}, "scores_d holds complex numbers"),
        ({"scores_d_prime": ["a"] * 10}, "scores_d_prime must be an array of numbers"),
    ],
)
def test_bad_input(kwargs, word):
    args = {"scores_d": np.arange(10.0), "scores_d_prime": np.arange(10.0)} | kwargs
    with pytest.raises(ValueError, match=word):
        audit_scores(args.pop("scores_d"), args.pop("scores_d_prime"), **args)


def test_complex_scores_with_no_imaginary_part_are_their_real_part():
    real = np.arange(10.0)
    expected = audit_scores(real, real + 3).epsilon_lower_bound(1e-5)
    assert audit_scores(real + 0j, real + 3).epsilon_lower_bound(1e-5) == expected


@pytest.mark.parametrize("law", ["randomized_response", "geometric"])
def test_the_default_tests_each_error_at_the_other_sides_few_values_on_every_score(law):
    """Few-valued scores: alpha is tested on every D score at "score >= w" for each value w of
    the D_prime scores but the lowest, beta on every D_prime score at "score >= v" for each
    value v of the D scores but the lowest, at (1 - FEW_VALUES_BAND_SHARE) gamma / (2K) each,
    beside an exact band at FEW_VALUES_BAND_SHARE gamma / 2; no score is spent on choosing.
    The K tests of one error share (1 - FEW_VALUES_BAND_SHARE) gamma / 2 in proportion to their
    weights, from the other side's errors at their rules (equal under a "tail" band). Moving the
    D scores changes alpha's counts, never the thresholds alpha is tested at nor their weights."""
    s0, s1 = _draw(law, 1000, np.random.default_rng(2))
    result = audit_scores(s0, s1, seed=4)
    assert result.metadata["threshold_choice"] == "crossed" and result.strategy == "crossed"
    assert result.trials == 1000 and result.selection_trials == 0
    tests0, tests1 = result._crossed_tests
    edges = result.grid.edges
    np.testing.assert_array_equal(edges[tests0], np.unique(s1)[1:])
    np.testing.assert_array_equal(edges[tests1], np.unique(s0)[1:])
    assert 1 <= tests0.size < FEW_VALUES
    w = result.epsilon_witness(1e-5)
    assert w["gamma_per_bound"] == pytest.approx(0.05 / 2)
    # alpha+ at the chosen rule "score >= e_j": the smaller of the Clopper-Pearson bound of the
    # nearest test at or below it and the band; beta+ the same with the nearest test above.
    j = int(np.flatnonzero(edges == w["threshold"])[0])
    fp, fn = result.tradeoff.fp, result.tradeoff.fn
    at0, at1 = tests0[tests0 <= j].max(), tests1[tests1 >= j].min()
    tested = (1 - FEW_VALUES_BAND_SHARE) * 0.025
    band = FEW_VALUES_BAND_SHARE * 0.025
    shape0, shape1 = result._band_shapes
    w0 = crossed_weights(fn[tests0], 1000, shape0)
    w1 = crossed_weights(fp[tests1], 1000, shape1)
    share0 = w0[tests0 == at0][0] / w0.sum()
    share1 = w1[tests1 == at1][0] / w1.sum()
    assert w["alpha_upper"] == pytest.approx(
        min(
            clopper_pearson_upper(fp[at0], 1000, tested * share0),
            exact_band_upper(fp[j], 1000, band, shape0),
        ),
        rel=1e-12,
    )
    assert w["beta_upper"] == pytest.approx(
        min(
            clopper_pearson_upper(fn[at1], 1000, tested * share1),
            exact_band_upper(fn[j], 1000, band, shape1),
        ),
        rel=1e-12,
    )
    loaded = type(result).from_dict(result.to_dict())
    assert loaded.epsilon_lower_bound(1e-5) == result.epsilon_lower_bound(1e-5)
    moved = np.where(s0 == s0.max(), s0.min(), s0)  # D's largest value is moved to its smallest
    again = audit_scores(moved, s1, seed=4)
    tests_again = again._crossed_tests[0]
    np.testing.assert_array_equal(again.grid.edges[tests_again], edges[tests0])
    assert not np.array_equal(again.tradeoff.fp, result.tradeoff.fp)
    assert again._band_shapes[0] == shape0
    np.testing.assert_array_equal(crossed_weights(again.tradeoff.fn[tests_again], 1000, shape0), w0)


def test_the_tests_of_one_error_are_the_values_of_the_other_side_but_its_lowest():
    assert crossed_tests(np.array([0, 5, 0, 7, 1])).tolist() == [2, 3]
    assert crossed_tests(np.array([3, 4])).tolist() == [0]
    assert crossed_tests(np.array([0, 9, 0])) is None  # a single value: the band
    assert crossed_tests(np.array([1, 1, 1, 0])) is None  # more values than half the scores
    assert crossed_tests(np.ones(FEW_VALUES + 1) * 5) is None  # too many values
    assert crossed_tests(np.ones(FEW_VALUES) * 5).size == FEW_VALUES - 1


def test_the_tests_weights_follow_the_other_sides_errors_under_a_middle_band():
    """Equal weights under a "tail" band; under a "middle" band, the middle band's weight at the
    other side's error count at each rule: 1 where it errs on more than a tenth and at most
    half of its trials, MIDDLE_REST elsewhere."""
    other = np.array([0, 50, 101, 300, 500, 501, 1000])
    np.testing.assert_array_equal(crossed_weights(other, 1000, "tail"), np.ones(7))
    np.testing.assert_array_equal(
        crossed_weights(other, 1000, "middle"),
        [MIDDLE_REST, MIDDLE_REST, 1, 1, 1, MIDDLE_REST, MIDDLE_REST],
    )
    with pytest.raises(ValueError, match="shape must be one of"):
        crossed_weights(other, 1000, "both")


@pytest.mark.parametrize(
    ("law", "shape"),
    [("geometric", "middle"), ("rounded_normal", "tail"), ("binomial", "tail")],
)
def test_few_valued_scores_are_shaped_by_their_mid_distribution_quartiles(law, shape):
    """A two-sided geometric law (bounded privacy loss, exponential tails) asks for the middle
    band, a rounded normal and a binomial law for the tail band, at every size: the ordinary
    quartiles of scores with few values jump between values and called the geometric law
    light-tailed at 10^4 scores and the rounded normal law of scale 2 heavy-tailed at all."""
    for n, seed in ((1000, 0), (10_000, 1), (100_000, 2)):
        rng = np.random.default_rng(seed)
        if law == "geometric":
            d, d_prime = _draw("geometric", n, rng)
        elif law == "rounded_normal":
            d, d_prime = np.round(rng.normal(0, 2, n)), np.round(rng.normal(1, 2, n))
        else:
            d, d_prime = rng.binomial(20, 0.2, n) * 1.0, rng.binomial(20, 0.3, n) * 1.0
        assert audit_scores(d, d_prime)._band_shapes == (shape, shape)


def test_the_geometric_law_weights_its_tests_where_both_sides_err_in_the_middle():
    """Two-sided geometric scores, 1,000 a side: alpha's tests are weighted by a middle band on
    most seeds (the tail share of a law clipped to nine values is near the line at this size),
    and there the rule ">= 1", where D_prime errs on about 27% of its scores and the bound is
    read, is among the heaviest; so weighted, the tests certify more than with equal weights,
    and no more than the ceiling."""
    middle = 0
    for seed in range(10):
        s0, s1 = _draw("geometric", 1000, np.random.default_rng(seed))
        result = audit_scores(s0, s1)
        shape0, shape1 = result._band_shapes
        if shape0 != "middle":
            continue
        middle += 1
        tests0, tests1 = result._crossed_tests
        fp, fn = result.tradeoff.fp, result.tradeoff.fn
        w0 = crossed_weights(fn[tests0], 1000, shape0)
        assert w0[result.grid.edges[tests0] == 1.0] == w0.max()
        mirrored = fp.size - 1 - tests1[::-1]
        equal_a = crossed_upper(fp, 1000, 0.025, tests0, shape0)
        equal_b = crossed_upper(fn[::-1], 1000, 0.025, mirrored, shape1)[::-1]
        equal = float(epsilon_from_errors(equal_a, equal_b, 1e-5).max())
        assert equal < result.epsilon_lower_bound(1e-5) <= result.epsilon_ceiling(1e-5)
        assert result.mu_lower_bound() <= result.mu_ceiling()
    assert middle >= 8


@pytest.mark.parametrize("error", ["alpha", "beta"])
def test_the_levels_of_one_errors_tests_are_fixed_by_the_other_side_alone(error):
    """alpha: D_prime two-sided geometric (a middle band, so weighted tests), D the same law
    moved down by one, then D again with its scores 0 (about 17%) moved to -3: D's counts change
    at the rules "score >= -2" to "score >= 0" and stay at "score >= 4", where alpha's bound must
    stay too. Weights drawn from D's own counts would move it: the rule ">= 0", where D errs on
    27% of its scores, would leave the middle band's range. beta: the mirror image (D_prime
    moved up by one, its scores 2 moved to 4; beta stays at the rule ">= -3")."""
    d, d_prime = _draw("geometric", 1000, np.random.default_rng(7))
    if error == "alpha":
        own, other = np.clip(d - 1.0, -4.0, 4.0), d_prime
        moved, kept, changed = np.where(own == 0.0, -3.0, own), 4.0, 0.0
    else:
        own, other = np.clip(d_prime + 1.0, -4.0, 5.0), d
        moved, kept, changed = np.where(own == 2.0, 4.0, own), -3.0, 3.0
    side = 0 if error == "alpha" else 1

    def bound(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pair = (scores, other) if error == "alpha" else (other, scores)
        result = audit_scores(*pair)
        assert result._band_shapes[side] == "middle"
        result.epsilon_lower_bound(1e-5)
        read = [v for k, v in result._choice_memo.items() if k[0] == "crossed"]
        return read[0][side], result.grid.edges

    (b, edges), (b_moved, edges_moved) = bound(own), bound(moved)
    np.testing.assert_array_equal(edges, edges_moved)
    at_kept = np.flatnonzero(edges == kept)[0]
    at_changed = np.flatnonzero(edges == changed)[0]
    assert b_moved[at_kept] == b[at_kept]
    assert b_moved[at_changed] != b[at_changed]


def test_both_errors_are_bounded_at_the_same_rule_where_the_sides_share_a_value():
    """Every pair (alpha+, beta+) the default reads bounds the two errors of one rule "score >=
    e_j": D on {0, 1, 2} and D_prime on {1, 2, 3} share the values 1 and 2, where both errors
    are tested; at the rule ">= 3" alpha reads its test there and beta its band (no test of
    beta is at or above it), and below the first test alpha reads only its band."""
    s0 = np.repeat([0.0, 1.0, 2.0], 40)
    s1 = np.repeat([1.0, 2.0, 3.0], 40)
    result = audit_scores(s0, s1)
    tests0, tests1 = result._crossed_tests
    edges = result.grid.edges
    assert edges[tests0].tolist() == [2.0, 3.0] and edges[tests1].tolist() == [1.0, 2.0]
    fp, fn = result.tradeoff.fp, result.tradeoff.fn
    band = FEW_VALUES_BAND_SHARE * 0.025
    tested = (1 - FEW_VALUES_BAND_SHARE) * 0.025 / 2
    shape0, shape1 = result._band_shapes
    alpha = crossed_upper(fp, 120, 0.025, tests0, shape0)
    beta = crossed_upper(fn[::-1], 120, 0.025, edges.size - 1 - tests1[::-1], shape1)[::-1]
    j3 = int(np.flatnonzero(edges == 3.0)[0])
    assert alpha[j3] == min(
        clopper_pearson_upper(fp[j3], 120, tested), exact_band_upper(fp[j3], 120, band, shape0)
    )
    assert beta[j3] == exact_band_upper(fn[j3], 120, band, shape1)
    assert alpha[0] == exact_band_upper(fp[0], 120, band, shape0)


def test_a_perfect_few_valued_attack_certifies_near_its_ceiling():
    """D on {0, 1}, D_prime on {2, 3}: the rule "score >= 2" separates them. alpha is tested
    there (a value of D_prime), but no test of beta (at the values of D) is at or above it:
    the band beside the tests reads it. eps far above 0, within the ceiling of these sizes;
    without the band the tests alone certified nothing."""
    s0, s1 = np.repeat([0.0, 1.0], 50), np.repeat([2.0, 3.0], 50)
    result = audit_scores(s0, s1)
    assert 2.0 < result.epsilon_lower_bound(1e-5) <= result.epsilon_ceiling(1e-5)
    assert result.epsilon_witness(1e-5)["threshold"] == 2.0


def test_constant_scores_a_side_read_the_tail_band_at_no_errors():
    """D all 0, D_prime all 1: each side has one value, so no tests and no tails; each error is
    read at no errors from the tail band at gamma / 2, whose count 0 carries full weight."""
    result = audit_scores(np.zeros(1000), np.ones(1000))
    assert result._band_shapes == ("tail", "tail") and result._crossed_tests == (None, None)
    zero = exact_band_upper(np.array(0), 1000, 0.025, "tail")
    expected = float(epsilon_from_errors(zero, zero, 1e-5))
    assert result.epsilon_lower_bound(1e-5) == pytest.approx(expected, rel=1e-12)
    assert expected > 5.0


def test_infinite_scores_shape_the_other_sides_band_by_themselves():
    """Each error's band shape is a function of the other side's scores alone, +inf scores
    included: moving one D score far out leaves alpha's shape (from D_prime) where it was."""
    rng = np.random.default_rng(0)
    d, d_prime = rng.uniform(-1, 1, 100), rng.uniform(-1, 1, 100)
    d_prime[:6] = np.inf
    before = audit_scores(d, d_prime)._band_shapes
    d[0] = 50.0
    after = audit_scores(d, d_prime)._band_shapes
    assert before[0] == after[0] == "middle"


@pytest.mark.parametrize(
    ("laws", "shapes"),
    [
        (("gaussian", "gaussian"), ("tail", "tail")),
        (("laplace", "laplace"), ("middle", "middle")),
        (("laplace", "gaussian"), ("tail", "middle")),
    ],
)
def test_continuous_scores_get_a_band_shaped_by_the_other_sides_tails(laws, shapes):
    """Each error's band takes its shape from the other side's scores: a normal law's light
    tails ask for the band of the tail counts, a Laplace law's for the band of the middle. D
    Laplace and D_prime normal: alpha's band (on the D scores) is shaped by D_prime's tails.
    The bounds read are those bands at gamma / 2 each, on every score."""
    rng = np.random.default_rng(6)
    draw = {"gaussian": rng.standard_normal, "laplace": lambda n: rng.laplace(0.0, 1.0, n)}
    s0, s1 = draw[laws[0]](2000), draw[laws[1]](3000) + 1.0
    result = audit_scores(s0, s1, seed=1)
    assert result._crossed_tests == (None, None)
    assert result._band_shapes == shapes
    w = result.epsilon_witness(1e-5)
    fp = int(round(w["alpha"] * 2000))
    fn = int(round(w["beta"] * 3000))
    assert w["alpha_upper"] == exact_band_upper(fp, 2000, 0.025, shapes[0])
    assert w["beta_upper"] == exact_band_upper(fn, 3000, 0.025, shapes[1])
    # Moving the D scores leaves beta's band alone and alpha's shape alone.
    again = audit_scores(s0 * 3.0, s1, seed=1)
    assert again._band_shapes[0] == shapes[0]


def test_the_other_strategies_split_each_side_at_its_selection_fraction():
    s0, s1 = _draw("gaussian", 1000, np.random.default_rng(2))
    result = audit_scores(s0, s1, seed=4, strategy="holdout+exact")
    assert result.metadata["threshold_choice"] == "holdout+exact"
    assert result.trials == 700 and result.selection_trials == 300


def test_median_threshold_is_chosen_on_the_selection_scores_only():
    """The median strategy's threshold is the median of the pooled *selection* scores: moving only
    the evaluation scores (far, in the direction that would move an evaluation median) leaves it
    where it was, while the evaluation counts change."""
    rng = np.random.default_rng(0)
    s0, s1 = rng.standard_normal(200), rng.standard_normal(200) + 1.0
    a = audit_scores(s0, s1, strategy="median", seed=7)
    split = np.random.default_rng(np.random.SeedSequence(7))
    sel0, ev0 = split_scores(np.arange(200), 0.3, split)
    sel1, ev1 = split_scores(np.arange(200), 0.3, split)
    expected = np.median(np.concatenate([s0[sel0], s1[sel1]]))
    assert a.fixed_thresholds.tolist() == [expected]
    t0, t1 = s0.copy(), s1.copy()
    t0[ev0] += 5.0
    t1[ev1] += 5.0
    b = audit_scores(t0, t1, strategy="median", seed=7)
    assert b.fixed_thresholds.tolist() == [expected]
    assert not np.array_equal(a.fixed_counts, b.fixed_counts)


def test_declared_thresholds_use_every_score_at_gamma_over_2k():
    """With thresholds fixed in advance nothing is split: the counts are those of all scores,
    the best of K thresholds is read at gamma/(2K) per error, and the bound reads the
    Clopper-Pearson bounds of those counts (reading it at gamma/2 fails here)."""
    rng = np.random.default_rng(0)
    p = np.e / (1 + np.e)
    s0, s1 = (rng.random(300) > p).astype(float), (rng.random(300) < p).astype(float)
    thresholds = [0.5, -1.0]
    r = audit_scores(s0, s1, thresholds=thresholds)
    assert r.strategy == "fixed" and r.metadata["threshold_choice"] == "declared"
    assert r.trials == 300 and r.selection_trials == 0
    np.testing.assert_array_equal(r.fixed_thresholds, [-1.0, 0.5])
    fp, fn = int((s0 > 0.5).sum()), int((s1 <= 0.5).sum())
    np.testing.assert_array_equal(r.fixed_counts[:, 1], [fp, fn])
    w = r.epsilon_witness(1e-5)
    g = 0.05 / 4
    assert w["threshold"] == 0.5 and w["gamma_per_bound"] == pytest.approx(g, rel=1e-12)
    a, b = (beta.ppf(1 - g, k + 1, 300 - k) for k in (fp, fn))
    assert w["alpha_upper"] == pytest.approx(a, rel=1e-9)
    assert w["beta_upper"] == pytest.approx(b, rel=1e-9)
    again = dpa.AuditResult.from_json(r.to_json())
    assert again.epsilon_lower_bound(1e-5) == r.epsilon_lower_bound(1e-5) > 0


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"thresholds": [], "strategy": "auto"}, "thresholds"),
        ({"thresholds": [np.inf]}, "thresholds"),
        ({"thresholds": [0.5], "strategy": "holdout"}, "strategy"),
    ],
)
def test_declared_thresholds_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        audit_scores(np.arange(10.0), np.arange(10.0), **kwargs)


def _draw(law: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores of ``n`` models per side; for the subsampled Gaussian (noise 0.5, rate 0.2), the
    member enters a model's run with probability 0.2 and then shifts its score by 1 / 0.5."""
    if law == "gaussian":
        return rng.standard_normal(n), rng.standard_normal(n) + 1.0
    if law == "laplace":
        return rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)
    if law == "subsampled_gaussian":
        used = rng.random(n) < 0.2
        return rng.standard_normal(n), rng.standard_normal(n) + 2.0 * used
    if law == "geometric":  # two-sided geometric noise of eps = 1 on 0 and 1, clipped to +-4
        q = 1.0 - np.exp(-1.0)
        out = [rng.geometric(q, n) - rng.geometric(q, n) + shift for shift in (0, 1)]
        return tuple(np.clip(o, -4, 4).astype(float) for o in out)
    p = np.e / (1 + np.e)
    return (rng.random(n) > p).astype(float), (rng.random(n) < p).astype(float)


@pytest.mark.slow
@pytest.mark.parametrize(
    "law", ["gaussian", "laplace", "randomized_response", "geometric", "subsampled_gaussian"]
)
@pytest.mark.parametrize("n", [100, 1000, 10_000, 100_000])
def test_default_eps_coverage_and_its_point_estimate_twin(law, n):
    """200 seeds a cell; the default's eps(1e-5) bound (and, on the Gaussian, its mu bound)
    exceeds the truth in at most 5% of the seeds with 95% confidence: the Clopper-Pearson upper
    bound (at 99%) of the exceedance rate must not be far above 5%; we assert at most 15 of 200
    exceedances (P[Binomial(200, 0.05) > 15] = 0.04 is the false-failure probability at a true
    rate of 5%, far less at the conservative rates these bounds have). Twins: the same witness
    read at its point estimates (alpha, beta) instead of its upper bounds exceeds the truth far
    more often for the three laws whose bound is tight enough (Laplace, randomized response and
    the clipped geometric, where the best threshold's ratio is the truth itself: 114 to 140 of
    200 seeds); for the Gaussian and the subsampled Gaussian, whose true eps(1e-5) no estimate
    read at one threshold of these samples reaches, the uncorrected sweep does: the point
    estimate at the best of every threshold of the evaluation counts (195 to 200 of 200)."""
    truth = true_eps(law)
    bounds, points, sweeps, mus = [], [], [], []
    for seed in range(200):
        s0, s1 = _draw(law, n, np.random.default_rng(10_000 + seed))
        result = audit_scores(s0, s1, seed=seed)
        w = result.epsilon_witness(1e-5)
        bounds.append(w["epsilon"])
        points.append(float(epsilon_from_errors(w["alpha"], w["beta"], 1e-5)))
        ev = result.tradeoff
        sweep = epsilon_from_errors(ev.fp / ev.n_d, ev.fn / ev.n_d_prime, 1e-5)
        sweeps.append(float(np.max(sweep)))
        if law == "gaussian":
            mus.append(result.mu_lower_bound())
    assert sum(b > truth + 1e-9 for b in bounds) <= 15
    assert sum(m > 1.0 + 1e-9 for m in mus) <= 15
    twin = points if law in ("laplace", "randomized_response", "geometric") else sweeps
    assert sum(t > truth + 1e-9 for t in twin) > 15


@pytest.mark.parametrize("law", ["gaussian", "laplace", "randomized_response", "geometric"])
def test_the_default_reads_the_same_bounds_whatever_the_order_of_the_scores(law):
    """The default reads every score, and its choices (tests, band shapes) read the other
    side's values only: the same scores sorted, reversed or shuffled give the same eps, mu and
    witness, whatever the seed."""
    s0, s1 = _draw(law, 600, np.random.default_rng(8))
    reference = audit_scores(s0, s1, seed=0)
    rng = np.random.default_rng(9)
    layouts = [
        (np.sort(s0), np.sort(s1)),
        (np.sort(s0)[::-1], np.sort(s1)[::-1]),
        (rng.permutation(s0), rng.permutation(s1)),
    ]
    for seed, (a, b) in enumerate(layouts, start=1):
        again = audit_scores(a, b, seed=seed)
        assert again.epsilon_lower_bound(1e-5) == reference.epsilon_lower_bound(1e-5)
        assert again.mu_lower_bound() == reference.mu_lower_bound()
        assert (
            again.epsilon_witness(1e-5)["threshold"] == reference.epsilon_witness(1e-5)["threshold"]
        )
