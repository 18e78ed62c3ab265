"""Empirical trade-off curves: counts against brute force, pointwise bounds, the band's coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.audit.confidence import clopper_pearson_lower, clopper_pearson_upper
from dpaudit.audit.empirical import EmpiricalTradeoff, cumulative_errors


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    return rng.normal(-0.5, 1.0, 3000), rng.normal(0.5, 1.0, 2500)


def test_errors_match_brute_force(scores):
    s0, s1 = scores
    t = np.linspace(-3, 3, 41)
    emp = EmpiricalTradeoff.from_scores(s0, s1, t)
    alpha = np.array([(s0 >= x).mean() for x in t])
    beta = np.array([(s1 < x).mean() for x in t])
    np.testing.assert_allclose(emp.alpha, alpha, rtol=0, atol=1e-15)
    np.testing.assert_allclose(emp.beta, beta, rtol=0, atol=1e-15)
    assert (emp.n_d, emp.n_d_prime) == (3000, 2500)
    a, b = emp.points()
    np.testing.assert_array_equal(a, emp.alpha)
    np.testing.assert_array_equal(b, emp.beta)


def test_cumulative_errors_small_case():
    fp, fn = cumulative_errors(np.array([1, 2, 3]), np.array([4, 0, 6]))
    assert fp.tolist() == [5, 3] and fn.tolist() == [4, 4]


def test_default_thresholds_are_the_distinct_scores():
    emp = EmpiricalTradeoff.from_scores(np.array([0.0, 1.0, 1.0]), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(emp.thresholds, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(emp.alpha, [1.0, 2 / 3, 0.0])
    np.testing.assert_allclose(emp.beta, [0.0, 0.0, 0.5])


def test_pointwise_bounds_are_clopper_pearson_at_half_gamma(scores):
    emp = EmpiricalTradeoff.from_scores(*scores, np.linspace(-2, 2, 9), confidence=0.9)
    np.testing.assert_allclose(emp.alpha_upper, clopper_pearson_upper(emp.fp, 3000, 0.05))
    np.testing.assert_allclose(emp.beta_upper, clopper_pearson_upper(emp.fn, 2500, 0.05))
    np.testing.assert_allclose(emp.alpha_lower, clopper_pearson_lower(emp.fp, 3000, 0.05))
    np.testing.assert_allclose(emp.beta_lower, clopper_pearson_lower(emp.fn, 2500, 0.05))


def test_band_contains_the_pointwise_bounds_and_names_its_method(scores):
    emp = EmpiricalTradeoff.from_scores(*scores, np.linspace(-4, 4, 201))
    assert np.all(emp.band_alpha_upper >= emp.alpha_upper)
    assert np.all(emp.band_beta_upper >= emp.beta_upper)
    assert np.all(emp.band_alpha_lower <= emp.alpha_lower)
    assert np.all(emp.band_beta_lower <= emp.beta_lower)
    methods = emp.band_method
    assert set(methods) == {"alpha_upper", "alpha_lower", "beta_upper", "beta_lower"}
    # DKW wins in the middle, Bonferroni-Clopper-Pearson in the tails.
    assert set(np.unique(methods["alpha_upper"])) == {"dkw", "bonferroni"}
    assert emp.band_gamma_bonferroni == pytest.approx(0.05 / (8 * 201))


def _cp_upper(k: np.ndarray, n: int, g: float) -> np.ndarray:
    """Clopper-Pearson upper bound straight from scipy's beta quantile (1 at k = n)."""
    k = np.asarray(k)
    return np.where(k >= n, 1.0, stats.beta.ppf(1 - g, k + 1, np.maximum(n - k, 1)))


def _cp_lower(k: np.ndarray, n: int, g: float) -> np.ndarray:
    """Clopper-Pearson lower bound straight from scipy's beta quantile (0 at k = 0)."""
    k = np.asarray(k)
    return np.where(k <= 0, 0.0, stats.beta.ppf(g, np.maximum(k, 1), n - k + 1))


def test_band_is_the_tighter_of_bonferroni_clopper_pearson_and_dkw_at_gamma_over_4(scores):
    """The band's levels, recomputed independently: Clopper-Pearson at gamma/(8E) per bound
    and the DKW-Massart radius sqrt(log(2/(gamma/4)) / (2n)) per distribution; at every
    threshold each side is the tighter of the two. A DKW share of gamma/2 (or a Bonferroni
    level other than gamma/(8E)) moves the band at the thresholds that construction wins."""
    s0, s1 = scores
    gamma, e = 0.1, 201
    emp = EmpiricalTradeoff.from_scores(s0, s1, np.linspace(-4, 4, e), confidence=1 - gamma)
    n0, n1 = 3000, 2500
    g = gamma / (8 * e)
    assert emp.band_gamma_bonferroni == pytest.approx(g, rel=1e-12)
    r0 = np.sqrt(np.log(8 / gamma) / (2 * n0))  # log(2 / (gamma/4))
    r1 = np.sqrt(np.log(8 / gamma) / (2 * n1))
    a, b = emp.fp / n0, emp.fn / n1
    expected = {
        "alpha_upper": np.minimum(_cp_upper(emp.fp, n0, g), np.minimum(a + r0, 1.0)),
        "alpha_lower": np.maximum(_cp_lower(emp.fp, n0, g), np.maximum(a - r0, 0.0)),
        "beta_upper": np.minimum(_cp_upper(emp.fn, n1, g), np.minimum(b + r1, 1.0)),
        "beta_lower": np.maximum(_cp_lower(emp.fn, n1, g), np.maximum(b - r1, 0.0)),
    }
    got = {
        "alpha_upper": emp.band_alpha_upper,
        "alpha_lower": emp.band_alpha_lower,
        "beta_upper": emp.band_beta_upper,
        "beta_lower": emp.band_beta_lower,
    }
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-9, atol=1e-12, err_msg=key)
        methods = emp.band_method[key]
        # Both constructions are pinned: each wins at some thresholds of every side.
        assert {"dkw", "bonferroni"} <= set(methods.tolist()), key
        dkw = methods == "dkw"
        radius = r0 if key.startswith("alpha") else r1
        point = a if key.startswith("alpha") else b
        sign = 1.0 if key.endswith("upper") else -1.0
        np.testing.assert_allclose(
            got[key][dkw], np.clip(point[dkw] + sign * radius, 0.0, 1.0), rtol=1e-12
        )


def test_band_is_simultaneous():
    # Scores on 6 atoms with known masses; the band must cover the true (alpha_j, beta_j) at
    # every threshold at once in >= 90% of repetitions. 400 repetitions, binomial test with
    # false-failure probability < 1e-4 if the miss rate were exactly 10% (it is far lower).
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.07, 0.03])
    q = p[::-1]
    t = np.arange(1, 6) - 0.5  # thresholds between atoms 0..5
    true_alpha = np.cumsum(p[::-1])[::-1][1:]
    true_beta = np.cumsum(q)[:-1]
    rng = np.random.default_rng(7)
    misses = 0
    for _ in range(400):
        c0 = rng.multinomial(200, p)
        c1 = rng.multinomial(150, q)
        emp = EmpiricalTradeoff(t, c0, c1, confidence=0.9)
        ok = (
            (emp.band_alpha_lower <= true_alpha).all()
            and (true_alpha <= emp.band_alpha_upper).all()
            and (emp.band_beta_lower <= true_beta).all()
            and (true_beta <= emp.band_beta_upper).all()
        )
        misses += not ok
    assert stats.binomtest(misses, 400, 0.1, alternative="greater").pvalue > 1e-4


def test_curves_are_ordered(scores):
    emp = EmpiricalTradeoff.from_scores(*scores, np.linspace(-4, 4, 161))
    grid = np.linspace(0, 1, 501)
    mid = emp.curve()(grid)
    up = emp.upper_band_curve()(grid)
    low = emp.lower_band_curve()(grid)
    assert emp.curve().kind == "empirical"
    assert np.all(low <= mid + 1e-12) and np.all(mid <= up + 1e-12)
    # The hull lies on or below every measured point.
    assert np.all(emp.curve()(emp.alpha) <= emp.beta + 1e-12)


def test_to_frame_has_one_row_per_threshold(scores):
    emp = EmpiricalTradeoff.from_scores(*scores, np.linspace(-1, 1, 5))
    frame = emp.to_frame()
    assert len(frame) == 5
    for column in ("threshold", "alpha", "beta", "alpha_upper", "band_beta_lower"):
        assert column in frame
    assert "EmpiricalTradeoff" in repr(emp)


@pytest.mark.parametrize(
    "thresholds, c0, c1, message",
    [
        ([0.0], [1, 2, 3], [1, 2], "bins"),
        ([0.0], [1, -2], [1, 2], ">= 0"),
        ([0.0], [0, 0], [1, 2], "at least one score"),
        ([], [], [], "at least one threshold"),
    ],
)
def test_refuses_bad_counts(thresholds, c0, c1, message):
    with pytest.raises(ValueError, match=message):
        EmpiricalTradeoff(np.array(thresholds), np.array(c0), np.array(c1))


def test_refuses_bad_confidence_and_nan_scores():
    with pytest.raises(ValueError, match="confidence"):
        EmpiricalTradeoff(np.array([0.0]), np.array([1, 1]), np.array([1, 1]), confidence=1.0)
    with pytest.raises(ValueError, match="NaN"):
        EmpiricalTradeoff.from_scores(np.array([np.nan]), np.array([0.0]))
