"""Threshold strategies on small selection samples, ceilings, and the automatic worker count.

Coverage: 200 independent audits (seeds 0..199) of mechanisms whose privacy is known exactly, in
the two small-sample regimes of the holdout (the reserve of a few Bonferroni candidates with 250
selection trials; with 25, the choice at the selection medians and the Bonferroni fallback).
Each bound is valid at 95%, so at most 5% of the audits may exceed the truth; the tests assert
at most ``0.05 * 200 = 10`` exceedances. Their false-failure probability: if the true exceedance
rate is at most 2% (Clopper-Pearson bounds are conservative; rates near 1% are typical),
``P(Binomial(200, 0.02) > 10) < 0.005`` per test. Each coverage test is paired with a test of
the test: the same audits with the bound replaced by the point estimate at the same threshold
exceed the truth in far more than 10 audits. The audits that chose at the selection medians are
also tested on their own (their false-failure probability is in ``_median_path_allowed``).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats

import dpaudit
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.engine import auto_n_jobs
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors
from dpaudit.audit.strategies import (
    HOLDOUT_PESSIMISM,
    HOLDOUT_RESERVE,
    PREDICTION_ENDS,
    PREDICTION_POINTS,
    RESERVE_SELECTION,
    SMALL_CANDIDATES_PER_SIDE,
    bonferroni_candidates,
    ceiling_errors,
    choose_threshold,
    holdout_choice,
    oracle_errors,
    predicted_upper,
)
from dpaudit.mechanisms import Gaussian, RandomizedResponse

AUDITS = 200
ALLOWED = int(0.05 * AUDITS)


def _audits(mechanism, trials: int, selection: int) -> list:
    return [
        dpaudit.audit_mechanism(mechanism, trials=trials, selection_trials=selection, seed=seed)
        for seed in range(AUDITS)
    ]


@pytest.fixture(scope="module")
def rr_reserve():
    assert RESERVE_SELECTION[0] <= 250 < RESERVE_SELECTION[1]
    return _audits(RandomizedResponse(1.0), 1000, 250)


@pytest.fixture(scope="module")
def rr_fallback():
    return _audits(RandomizedResponse(1.0), 100, 25)


@pytest.fixture(scope="module")
def gaussian_reserve():
    return _audits(Gaussian(1.0), 1000, 250)


def _eps_exceed(results, point: bool) -> tuple[int, set]:
    exceed, used = 0, set()
    for r in results:
        w = r.epsilon_witness(0.0)
        used.add(w["strategy"])
        value = float(epsilon_from_errors(w["alpha"], w["beta"], 0.0)) if point else w["epsilon"]
        exceed += value > 1.0 + 1e-9
    return exceed, used


@pytest.mark.parametrize("regime", ["rr_reserve", "rr_fallback"])
def test_randomized_response_eps_coverage(regime, request):
    exceed, used = _eps_exceed(request.getfixturevalue(regime), point=False)
    assert exceed <= ALLOWED
    assert "holdout" in used
    if regime == "rr_fallback":  # both fallbacks were exercised
        assert {"holdout+median", "bonferroni"} <= used


@pytest.mark.parametrize("regime", ["rr_reserve", "rr_fallback"])
def test_randomized_response_coverage_test_has_power(regime, request):
    exceed, _ = _eps_exceed(request.getfixturevalue(regime), point=True)
    assert exceed > ALLOWED


def _median_path(results, point: bool) -> tuple[int, int]:
    """(audits that chose at the selection medians, how many of them exceed the truth)."""
    audits = exceed = 0
    for r in results:
        w = r.epsilon_witness(0.0)
        if w["strategy"] != "holdout+median":
            continue
        audits += 1
        value = float(epsilon_from_errors(w["alpha"], w["beta"], 0.0)) if point else w["epsilon"]
        exceed += value > 1.0 + 1e-9
    return audits, exceed


def _median_path_allowed(audits: int) -> int:
    """99% quantile of ``Binomial(audits, 0.05)``: the bound is valid conditionally on the path
    (a function of the selection sample only), so even at the nominal rate of 5% more
    exceedances than this occur with probability below 1% (the false-failure probability)."""
    return int(stats.binom.ppf(0.99, audits, 0.05))


def test_median_fallback_coverage(rr_fallback):
    audits, exceed = _median_path(rr_fallback, point=False)
    assert audits >= 50  # the path is common with 25 selection trials
    assert exceed <= _median_path_allowed(audits)


def test_median_fallback_coverage_test_has_power(rr_fallback):
    audits, exceed = _median_path(rr_fallback, point=True)
    assert exceed > _median_path_allowed(audits)


def test_gaussian_mu_coverage_with_reserve(gaussian_reserve):
    witnesses = [r.mu_witness() for r in gaussian_reserve]
    assert sum(w["mu"] > 1.0 for w in witnesses) <= ALLOWED
    assert "holdout+reserve" in {w["strategy"] for w in witnesses}  # the reserve was exercised


def test_gaussian_mu_coverage_test_has_power(gaussian_reserve):
    exceed = 0
    for r in gaussian_reserve:
        w = r.mu_witness()
        exceed += float(mu_from_errors(w["alpha"], w["beta"])) > 1.0
    assert exceed > ALLOWED


def _cp_upper(k, n: int, g: float) -> float:
    """Clopper-Pearson upper bound straight from scipy's beta quantile (1 at k = n)."""
    return 1.0 if k >= n else float(stats.beta.ppf(1 - g, k + 1, n - k))


def _check_witness_level(result, witness, g: float) -> None:
    """The witness's bounds are Clopper-Pearson bounds of its evaluation counts at ``g``."""
    assert witness["gamma_per_bound"] == pytest.approx(g, rel=1e-12)
    ev = result.tradeoff
    j = int(np.flatnonzero(result.edges == witness["threshold"])[0])
    assert witness["alpha_upper"] == pytest.approx(_cp_upper(ev.fp[j], ev.n_d, g), rel=1e-9)
    assert witness["beta_upper"] == pytest.approx(_cp_upper(ev.fn[j], ev.n_d_prime, g), rel=1e-9)


def test_reserve_and_holdout_are_read_at_their_shares_of_gamma():
    """With 250 selection trials the holdout keeps HOLDOUT_RESERVE of gamma for the small
    Bonferroni set: the holdout's J thresholds at (1 - r) gamma / (2J) per bound, the reserve's
    K candidates at r gamma / (2K). Seed 3 exercises both (deterministic): the eps bound comes
    from the reserve, the mu bound from the holdout. Reading either at the full gamma passes
    the coverage tests but fails here."""
    gamma = 1 - 0.95
    r = dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, selection_trials=250, seed=3)
    sel = r.selection_tradeoff
    k = bonferroni_candidates(sel.fp, sel.fn, 250, 250, SMALL_CANDIDATES_PER_SIDE).size
    eps = r.epsilon_witness(0.0)
    assert eps["strategy"] == "holdout+reserve" and eps["candidates"] == k
    _check_witness_level(r, eps, HOLDOUT_RESERVE * gamma / (2 * k))
    assert eps["epsilon"] == float(epsilon_from_errors(eps["alpha_upper"], eps["beta_upper"], 0))
    mu = r.mu_witness()
    assert mu["strategy"] == "holdout"
    _check_witness_level(r, mu, (1 - HOLDOUT_RESERVE) * gamma / (2 * mu["candidates"]))
    assert mu["mu"] == float(mu_from_errors(mu["alpha_upper"], mu["beta_upper"]))


def _errors(seed: int, n: int, loc: float, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FP, FN) at ``edges`` of ``n`` scores N(loc, 1) under D and N(loc + 1, 1) under D'."""
    rng = np.random.default_rng(seed)
    s0, s1 = np.sort(rng.normal(loc, 1.0, n)), np.sort(rng.normal(loc + 1.0, 1.0, n))
    return n - np.searchsorted(s0, edges, side="left"), np.searchsorted(s1, edges, side="left")


def _holdout_set(objective, selection, sizes, share: float) -> set[int]:
    """The holdout's thresholds by the module docstring: at each pessimism, the largest
    objective predicted from the selection counts alone, at ``share / 2`` per bound."""
    fp, fn, s0, s1 = selection
    g = share / len(HOLDOUT_PESSIMISM)
    chosen = {
        holdout_choice(
            objective(
                predicted_upper(fp, s0, sizes[0], g, p), predicted_upper(fn, s1, sizes[1], g, p)
            )
        )
        for p in HOLDOUT_PESSIMISM
    }
    assert None not in chosen  # these selections predict a usable threshold
    return chosen


@pytest.mark.parametrize(
    ("strategy", "n_selection"), [("holdout", 20_000), ("holdout", 250), ("bonferroni", 20_000)]
)
@pytest.mark.parametrize("quantity", ["mu", "epsilon"])
def test_choice_is_made_on_the_selection_counts_only(strategy, n_selection, quantity):
    """The selection step (which thresholds compete) is a function of the selection counts:
    with the selection fixed and evaluations whose best thresholds lie far apart (scores
    shifted by -3, 0, +3), the chosen index always lies in the set the selection defines and
    the number of candidates never moves. Test of the test: on the shifted evaluations the
    best threshold of the evaluation counts lies outside that set, so a choice made on them
    would leave it."""
    gamma, n = 0.05, 20_000
    edges = np.linspace(-7.0, 8.0, 3001)
    if quantity == "mu":
        objective = mu_from_errors
    else:

        def objective(a, b):
            return epsilon_from_errors(a, b, 1e-5)

    selection = (*_errors(0, n_selection, 0.0, edges), n_selection, n_selection)
    reserve = RESERVE_SELECTION[0] <= n_selection < RESERVE_SELECTION[1]
    if strategy == "bonferroni":
        allowed = {"bonferroni": set(bonferroni_candidates(*selection).tolist())}
    else:
        share = (1 - HOLDOUT_RESERVE * reserve) * gamma / 2
        allowed = {"holdout": _holdout_set(objective, selection, (n, n), share)}
        if reserve:
            small = bonferroni_candidates(*selection, SMALL_CANDIDATES_PER_SIDE)
            allowed["holdout+reserve"] = set(small.tolist())
    union = set().union(*allowed.values())
    for loc in (-3.0, 0.0, 3.0):
        evaluation = (*_errors(1, n, loc, edges), n, n)
        choice = choose_threshold(strategy, objective, selection, evaluation, gamma)
        assert choice["index"] in allowed[choice["strategy"]], (loc, choice)
        assert choice["candidates"] == len(allowed[choice["strategy"]])
        if loc != 0.0:
            g = gamma / (2 * len(union))
            ev_best = int(
                np.argmax(objective(*(clopper_pearson_upper(k, n, g) for k in evaluation[:2])))
            )
            assert ev_best not in union


def test_holdout_choice_falls_back_when_nothing_is_predicted_positive():
    assert holdout_choice(np.array([0.0, -1.0, 0.0])) is None
    assert holdout_choice(np.array([])) is None
    assert holdout_choice(np.array([0.0, 0.3, 0.2])) == 1


def test_choose_threshold_rejects_an_unknown_strategy():
    z = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="strategy"):
        choose_threshold("oracle", epsilon_from_errors, (z, z, 10, 10), (z, z, 10, 10), 0.05)


def test_fixed_choice_is_the_best_user_threshold_at_gamma_over_2k():
    """Brute force: the objective at every user threshold with gamma/(2K) per bound."""
    fp = np.array([90, 40, 5, 1], dtype=np.int64)
    fn = np.array([2, 10, 30, 80], dtype=np.int64)
    n0, n1, gamma = 100, 100, 0.05
    choice = choose_threshold("fixed", mu_from_errors, None, (fp, fn, n0, n1), gamma)
    g = gamma / (2 * fp.size)
    values = [
        mu_from_errors(clopper_pearson_upper(a, n0, g), clopper_pearson_upper(b, n1, g))
        for a, b in zip(fp, fn, strict=True)
    ]
    j = int(np.argmax(values))
    assert choice == {
        "index": j,
        "gamma_per_bound": g,
        "candidates": 4,
        "strategy": "fixed",
        "fp": int(fp[j]),
        "fn": int(fn[j]),
        "n_d": n0,
        "n_d_prime": n1,
        "alpha_upper": float(clopper_pearson_upper(fp[j], n0, g)),
        "beta_upper": float(clopper_pearson_upper(fn[j], n1, g)),
    }


@pytest.mark.parametrize("n0, n1", [(1, 1), (100, 250), (10**6, 10**5)])
def test_ceiling_errors_is_clopper_pearson_at_zero_counts(n0, n1):
    """Closed form against scipy's beta quantile (the Clopper-Pearson upper bound at k = 0)."""
    a, b = ceiling_errors(n0, n1, 0.05)
    assert a == pytest.approx(stats.beta.ppf(1 - 0.025, 1, n0), rel=1e-10)
    assert b == pytest.approx(stats.beta.ppf(1 - 0.025, 1, n1), rel=1e-10)


def test_perfect_attack_attains_the_ceiling():
    """Outputs that never overlap: zero errors at the chosen threshold, so bound = ceiling."""
    r = dpaudit.audit_mechanism(Gaussian(1e-3), trials=2000, seed=0)
    for delta in (0.0, 1e-5):
        assert r.epsilon_lower_bound(delta) == pytest.approx(r.epsilon_ceiling(delta), rel=1e-12)
    assert r.mu_lower_bound() == pytest.approx(r.mu_ceiling(), rel=1e-12)
    a, b = ceiling_errors(2000, 2000, 0.05)
    assert r.epsilon_ceiling(0.0) == pytest.approx(np.log((1 - b) / a), rel=1e-12)


def test_bounds_never_exceed_the_ceilings():
    r = dpaudit.audit_mechanism(Gaussian(1.0), trials=10**4, seed=3)
    assert r.epsilon_lower_bound(1e-5) <= r.epsilon_ceiling(1e-5)
    assert r.mu_lower_bound() <= r.mu_ceiling()
    assert r.mu_ceiling("oracle") <= r.mu_ceiling()


def test_oracle_ceiling_matches_brute_force_on_the_gaussian():
    """The oracle for N(0,1) vs N(1,1) against a direct scan of thresholds with scipy's normal."""
    n, gamma = 10**5, 0.05
    t = np.linspace(-6.0, 7.0, 20001)
    alpha, beta = stats.norm.sf(t), stats.norm.cdf(t - 1.0)
    au = stats.beta.ppf(1 - gamma / 2, alpha * n + 1, n - alpha * n)
    bu = stats.beta.ppf(1 - gamma / 2, beta * n + 1, n - beta * n)
    brute = float(np.nanmax(mu_from_errors(au, bu)))
    a, b = oracle_errors(Gaussian(1.0).tradeoff(), n, n, gamma)
    assert float(np.max(mu_from_errors(a, b))) == pytest.approx(brute, abs=2e-3)


def test_oracle_ceiling_needs_a_trade_off_curve():
    r = dpaudit.AuditResult.from_json(dpaudit.audit_mechanism(Gaussian(1.0), trials=1000).to_json())
    with pytest.raises(ValueError, match="trade-off curve"):
        r.epsilon_ceiling(0.0, kind="oracle")
    with pytest.raises(ValueError, match="kind"):
        r.mu_ceiling(kind="best")


def test_auto_n_jobs():
    assert auto_n_jobs(0.1, cores=2) == 1
    assert auto_n_jobs(100.0, cores=2) == 2
    assert auto_n_jobs(100.0, cores=1) == 1


def test_default_n_jobs_gives_identical_counts(monkeypatch):
    results = [
        dpaudit.audit_mechanism(Gaussian(1.0), trials=50_000, seed=4, n_jobs=n_jobs)
        for n_jobs in (None, 1, 2)
    ]
    # The automatic choice on its parallel branch (every audit predicted long enough).
    engine = sys.modules["dpaudit.audit.engine"]
    monkeypatch.setattr(engine, "AUTO_PARALLEL_SECONDS", 0.0)
    results.append(dpaudit.audit_mechanism(Gaussian(1.0), trials=50_000, seed=4))
    for r in results[1:]:
        assert np.array_equal(r.counts, results[0].counts)
        assert np.array_equal(r.selection_counts, results[0].selection_counts)


def test_prediction_is_exact_at_few_counts_and_interpolated_between_many():
    """predicted_upper: with at most PREDICTION_POINTS distinct counts, the Clopper-Pearson bound
    of the pessimistic rate scaled to the evaluation size, exactly; with more, exact at every
    one of the PREDICTION_ENDS smallest and largest counts (where eps thresholds live),
    non-decreasing, and within
    1e-3 (relative) of the exact value elsewhere, which only ranks thresholds."""
    n_sel, n_eval, g, p = 50_000, 150_000, 0.01, 1e-3

    def exact(k):
        rate = clopper_pearson_upper(k, n_sel, p)
        return clopper_pearson_upper(np.minimum(rate * n_eval, n_eval), n_eval, g)

    few = np.array([0, 3, 3, 70, 49_999])
    np.testing.assert_array_equal(predicted_upper(few, n_sel, n_eval, g, p), exact(few))
    every = np.arange(n_sel + 1)
    assert every.size > PREDICTION_POINTS
    got, want = predicted_upper(every, n_sel, n_eval, g, p), exact(every)
    ends = np.r_[0:PREDICTION_ENDS, n_sel + 1 - PREDICTION_ENDS : n_sel + 1]
    np.testing.assert_array_equal(got[ends], want[ends])
    assert (np.diff(got) >= 0).all()
    np.testing.assert_allclose(got, want, rtol=1e-3)


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_the_interpolated_prediction_chooses_what_an_exact_one_chooses(law, monkeypatch):
    """The holdout's thresholds, eps at 1e-5 and mu, on 30,000 scores a side (over a thousand
    distinct selection counts): the same with predictions exact at every count."""
    import dpaudit.audit.strategies as strategies
    from dpaudit.audit.scores import audit_scores

    rng = np.random.default_rng(7)
    if law == "gaussian":
        s0, s1 = rng.standard_normal(30_000), rng.standard_normal(30_000) + 1.0
    else:
        s0, s1 = rng.laplace(0.0, 1.0, 30_000), rng.laplace(1.0, 1.0, 30_000)
    for seed in range(3):
        read = audit_scores(s0, s1, seed=seed, strategy="holdout")
        chosen = [read.epsilon_witness(1e-5)["threshold"], read.mu_witness()["threshold"]]
        with monkeypatch.context() as patch:
            patch.setattr(strategies, "PREDICTION_POINTS", 10**9)
            exact = audit_scores(s0, s1, seed=seed, strategy="holdout")
            assert chosen == [
                exact.epsilon_witness(1e-5)["threshold"],
                exact.mu_witness()["threshold"],
            ]
