"""AuditResult: witnesses, strategies, violations, theory comparison, estimates, JSON round trip."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import dpaudit
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors
from dpaudit.audit.result import AuditResult
from dpaudit.audit.strategies import (
    CANDIDATES_PER_SIDE,
    HOLDOUT_PESSIMISM,
    bonferroni_candidates,
    holdout_choice,
    predicted_upper,
)
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.mechanisms import Gaussian, Laplace, RandomizedResponse


@pytest.fixture(scope="module")
def gaussian_result():
    return dpaudit.audit_mechanism(Gaussian(1.0), trials=200_000, seed=0, privacy_loss=True)


def test_witness_numbers_are_consistent(gaussian_result):
    r = gaussian_result
    w = r.epsilon_witness(1e-5)
    j = int(np.flatnonzero(r.edges == w["threshold"])[0])
    n = r.trials
    assert w["alpha"] == r.tradeoff.fp[j] / n and w["beta"] == r.tradeoff.fn[j] / n
    # One holdout threshold: gamma/2 per bound; two (one per pessimism): gamma/4.
    assert w["gamma_per_bound"] == pytest.approx(0.05 / (2 * w["candidates"]))
    assert w["candidates"] in (1, 2)
    assert w["alpha_upper"] == pytest.approx(
        float(clopper_pearson_upper(r.tradeoff.fp[j], n, w["gamma_per_bound"]))
    )
    assert w["epsilon"] == pytest.approx(
        float(epsilon_from_errors(w["alpha_upper"], w["beta_upper"], 1e-5))
    )
    assert w["order"] in ("d_d_prime", "d_prime_d")
    assert r.epsilon_lower_bound(1e-5) == w["epsilon"]
    m = r.mu_witness()
    assert m["mu"] == pytest.approx(float(mu_from_errors(m["alpha_upper"], m["beta_upper"])))
    assert m["strategy"] == "holdout"
    assert m["gamma_per_bound"] == pytest.approx(0.05 / (2 * m["candidates"]))


def test_gaussian_bounds_are_below_the_truth_and_close(gaussian_result):
    # Truth: mu = 1, eps(1e-5) = 4.3772 (tests/reference item 1). At 2e5 trials the bounds are
    # within a few percent of mu; a failure of "below the truth" has probability <= 5%.
    r = gaussian_result
    assert 0.97 < r.mu_lower_bound() <= 1.0
    assert 2.5 < r.epsilon_lower_bound(1e-5) <= 4.3772
    assert r.epsilon_lower_bound(0.0) >= r.epsilon_lower_bound(1e-3)


def test_gdp_estimate_is_labelled_and_close_to_mu(gaussian_result):
    est = gaussian_result.gdp_estimate()
    assert est["label"] == "estimate"
    # Standard error about 0.004 at 2e5 trials; 0.02 is five of them.
    assert est["mu"] == pytest.approx(1.0, abs=0.02)


def test_delta_estimate_covers_the_exact_gaussian_delta(gaussian_result):
    # Exact delta(eps) of N(0,1) vs N(1,1) from the reference values (item 1, sigma = 1).
    from tests.reference import rows

    refs = [r for r in rows(item="1", setting="sigma=1.0", quantity="delta") if r["query"] <= 3.0]
    assert len(refs) >= 3
    eps = np.array([r["query"] for r in refs])
    out = gaussian_result.delta_estimate(eps)
    truth = np.array([r["value"] for r in refs])
    # Each interval holds with probability >= 95%; over these few eps values a miss would be a
    # genuine error far more often than chance (the intervals are conservative).
    assert np.all(out["lower"] <= truth) and np.all(truth <= out["upper"])
    assert np.all(np.abs(out["delta"] - truth) < 0.01)


def test_violation_of_a_false_claim_and_none_for_the_true_one(gaussian_result):
    w = gaussian_result.violates(gdp(0.5))
    assert w is not None
    assert w["order"] in ("d_d_prime", "d_prime_d")
    if w["order"] == "d_d_prime":
        assert w["beta_upper"] < w["claimed_beta"]
    else:
        assert w["alpha_upper"] < w["claimed_beta"]
    # The true curve G_1 is never refuted except with probability <= 5%.
    assert gaussian_result.violates(gdp(1.0)) is None
    with pytest.raises(ValueError, match="claim"):
        gaussian_result.violates(lambda a: 1 - a)


def test_theory_comparison_and_tightness(gaussian_result):
    frame = gaussian_result.theory_comparison(["exact"], deltas=(0.0, 1e-5))
    assert frame["method"].tolist() == ["exact"] * 3
    eps_row = frame[(frame.quantity == "epsilon") & (frame["query"] == "delta=1e-05")].iloc[0]
    assert eps_row["theory"] == pytest.approx(4.37717809568122, rel=1e-6)
    zero = frame[frame["query"] == "delta=0"].iloc[0]
    assert np.isinf(zero["theory"]) and zero["tightness"] == 0.0
    mu_row = frame[frame.quantity == "mu"].iloc[0]
    assert mu_row["theory"] == pytest.approx(1.0, rel=1e-6)
    tight = gaussian_result.tightness()
    assert set(tight) == {"epsilon@delta=1e-05", "mu"}
    assert 0.97 < tight["mu"] <= 1.0


def test_summary_frame(gaussian_result):
    frame = gaussian_result.to_frame()
    assert frame["quantity"].tolist() == ["epsilon", "epsilon", "mu", "mu"]
    assert frame["kind"].tolist() == ["lower bound"] * 3 + ["estimate"]
    assert set(frame["strategy"]) == {"holdout"}


def test_json_round_trip_keeps_every_number(gaussian_result, tmp_path):
    r = gaussian_result
    text = r.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    again = AuditResult.from_json(text)
    np.testing.assert_array_equal(again.counts, r.counts)
    np.testing.assert_array_equal(again.edges, r.edges)
    assert again.epsilon_lower_bound(1e-5) == r.epsilon_lower_bound(1e-5)
    assert again.mu_lower_bound() == r.mu_lower_bound()
    assert again.delta_estimate(1.0) == r.delta_estimate(1.0)
    assert again.to_dict() == r.to_dict()
    assert again.mechanism is None and again.attack is None
    assert again.pair.relation == "add_remove"
    assert again.metadata["mechanism"]["params"] == {"sigma": 1.0, "sensitivity": 1.0}
    assert again.metadata["versions"]["numpy"] == np.__version__
    path = tmp_path / "result.json"
    r.to_json(str(path))
    assert AuditResult.from_json(str(path)).seed == 0
    with pytest.raises(ValueError, match="mechanism object"):
        again.theory_comparison()
    with pytest.raises(ValueError, match="record"):
        AuditResult.from_dict({"format": "other"})


def _same_result(again: AuditResult, r: AuditResult) -> None:
    """Every count array and every bound of ``again`` equals that of ``r``."""
    for name in ("counts", "selection_counts", "fixed_thresholds", "fixed_counts", "edges"):
        got, want = getattr(again, name), getattr(r, name)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    for name in ("counts_d", "sum_d", "sum_sq_d", "counts_d_prime", "sum_d_prime"):
        np.testing.assert_array_equal(
            getattr(again.privacy_loss, name), getattr(r.privacy_loss, name)
        )
    np.testing.assert_array_equal(again.privacy_loss.sum_sq_d_prime, r.privacy_loss.sum_sq_d_prime)
    for delta in (0.0, 1e-5):
        assert dict(again.epsilon_witness(delta)) == dict(r.epsilon_witness(delta))
    assert dict(again.mu_witness()) == dict(r.mu_witness())
    assert again.to_dict() == r.to_dict()


def test_json_round_trip_keeps_every_count_array_of_a_fixed_audit():
    """A fixed-strategy result keeps FP and FN apart through JSON. Its bounds are symmetric in
    the two errors, so with equal sample sizes and FP = FN a load that swaps them went unseen:
    here FP != FN at every threshold, and a second record has 2x the trials under D_prime."""
    thresholds = [0.3, -0.2, 1.5]
    r = dpaudit.audit_mechanism(
        Gaussian(1.0),
        trials=20_000,
        seed=1,
        strategy="fixed",
        threshold=thresholds,
        privacy_loss=True,
    )
    fp, fn = r.fixed_counts
    assert np.all(fp != fn)
    record = r.to_dict()
    assert record["fixed"] == {"thresholds": thresholds, "fp": fp.tolist(), "fn": fn.tolist()}
    _same_result(AuditResult.from_json(r.to_json()), r)
    # Unequal sample sizes: D_prime's counts (all of them) doubled.
    counts = r.counts * np.array([[1], [2]])
    fixed = r.fixed_counts * np.array([[1], [2]])
    uneven = replace(r, counts=counts, fixed_counts=fixed)
    assert uneven.tradeoff.n_d_prime == 2 * uneven.tradeoff.n_d
    again = AuditResult.from_json(uneven.to_json())
    _same_result(again, uneven)
    assert again.mu_lower_bound() == uneven.mu_lower_bound()


def _holdout_thresholds(result: AuditResult, objective) -> set[float]:
    """The holdout's thresholds by the documented rule, from the selection counts alone (at
    ``gamma/4`` per bound, the largest objective predicted at each pessimism)."""
    sel, n = result.selection_tradeoff, result.trials
    g = result.gamma / 2 / len(HOLDOUT_PESSIMISM)
    chosen = set()
    for p in HOLDOUT_PESSIMISM:
        a = predicted_upper(sel.fp, sel.n_d, n, g, p)
        b = predicted_upper(sel.fn, sel.n_d_prime, n, g, p)
        chosen.add(holdout_choice(objective(a, b)))
    assert None not in chosen
    return {float(result.edges[j]) for j in chosen}


@pytest.mark.parametrize("loc", [-3.0, 2.0])
def test_witness_thresholds_do_not_move_when_only_the_evaluation_counts_change(
    gaussian_result, loc
):
    """Evaluation counts replaced by those of scores shifted far from the audited ones (N(loc,
    1) against N(loc + 1, 1), on the same grid) leave the selection step where it was: the
    candidates, the holdout's thresholds and the Bonferroni set are those of the selection
    counts. Test of the test: the best threshold of the new evaluation counts is in none of
    these sets, so a choice made on them would move."""
    r = gaussian_result
    rng = np.random.default_rng(1)
    scores = (rng.normal(loc, 1.0, r.trials), rng.normal(loc + 1.0, 1.0, r.trials))
    counts = np.stack(
        [
            np.bincount(np.searchsorted(r.edges, s, side="right"), minlength=r.grid.n_bins)
            for s in scores
        ]
    )
    moved = replace(r, counts=counts)
    sel = r.selection_tradeoff
    np.testing.assert_array_equal(moved.selection_tradeoff.fp, sel.fp)
    candidates = bonferroni_candidates(sel.fp, sel.fn, sel.n_d, sel.n_d_prime)
    np.testing.assert_array_equal(moved.candidates, candidates)
    np.testing.assert_array_equal(r.candidates, candidates)

    def eps(a, b):
        return epsilon_from_errors(a, b, 1e-5)

    witnesses = {
        "mu": (mu_from_errors, lambda result: result.mu_witness()),
        "eps": (eps, lambda result: result.epsilon_witness(1e-5)),
    }
    ev = moved.tradeoff
    for name, (objective, witness) in witnesses.items():
        allowed = _holdout_thresholds(r, objective)
        w = witness(moved)
        assert w["strategy"] == "holdout" and w["candidates"] == len(allowed), name
        assert w["threshold"] in allowed, name
        # Bonferroni: the best of the selection's candidates on the evaluation counts.
        bonf = witness(replace(moved, strategy="bonferroni"))
        assert bonf["candidates"] == candidates.size
        assert bonf["threshold"] in set(r.edges[candidates].tolist()), name
        g = r.gamma / (2 * candidates.size)
        upper = [clopper_pearson_upper(k, r.trials, g) for k in (ev.fp, ev.fn)]
        best = float(r.edges[int(np.argmax(objective(*upper)))])
        assert best not in allowed and best not in set(r.edges[candidates].tolist()), name


def test_bonferroni_and_fixed_strategies():
    mech = RandomizedResponse(1.0)  # exact eps = 1; integer outputs
    bonf = dpaudit.audit_mechanism(mech, trials=100_000, seed=1, strategy="bonferroni")
    w = bonf.epsilon_witness(0.0)
    assert w["strategy"] == "bonferroni"
    assert w["candidates"] == bonf.candidates.size <= 2 * CANDIDATES_PER_SIDE
    assert w["gamma_per_bound"] == pytest.approx(0.05 / (2 * w["candidates"]))
    assert 0.9 < w["epsilon"] <= 1.0
    fixed = dpaudit.audit_mechanism(mech, trials=100_000, seed=1, strategy="fixed", threshold=0.0)
    w = fixed.epsilon_witness(0.0)
    assert w["threshold"] == 0.0 and w["candidates"] == 1
    assert 0.9 < w["epsilon"] <= 1.0
    again = AuditResult.from_json(fixed.to_json())
    assert again.epsilon_lower_bound(0.0) == fixed.epsilon_lower_bound(0.0)
    # Continuous scores: Bonferroni over the candidates of a Laplace audit.
    laplace = dpaudit.audit_mechanism(Laplace(1.0), trials=100_000, seed=1, strategy="bonferroni")
    assert laplace.epsilon_lower_bound(0.0) > 0.9


def test_bad_queries_raise(gaussian_result):
    with pytest.raises(ValueError, match="delta"):
        gaussian_result.epsilon_lower_bound(1.0)
    with pytest.raises(ValueError, match="eps"):
        gaussian_result.delta_estimate(-0.5)


@pytest.mark.parametrize("mechanism", [Gaussian(1.0), Laplace(1.0)])
def test_both_orders_of_the_pair(mechanism):
    # Swapping D and D_prime swaps the roles of the two errors; both orders certify nearly the
    # true privacy (mu = 1, eps = 1 for Laplace, whose mu at the witness is about 1.03), and the
    # delta intervals of matching orders overlap. Only lower sides are asserted: on the swapped
    # Laplace pair the audit also finds the floating-point leak of the implementation (outputs
    # 1 + z and z differ in their last bits), which legitimately pushes eps far above 1.
    pair = mechanism.worst_case_pair()
    forward = dpaudit.audit_mechanism(mechanism, pair, trials=200_000, seed=4, privacy_loss=True)
    backward = dpaudit.audit_mechanism(
        mechanism, pair.swapped(), trials=200_000, seed=5, privacy_loss=True
    )
    for result in (forward, backward):
        assert result.mu_lower_bound() > 0.95
        assert result.epsilon_lower_bound(1e-5) > (0.95 if isinstance(mechanism, Laplace) else 2.5)
    f, b = forward.delta_estimate(0.5), backward.delta_estimate(0.5)
    assert f["lower_d_d_prime"] <= b["upper_d_prime_d"]
    assert b["lower_d_prime_d"] <= f["upper_d_d_prime"]


def test_numpy_parameters_are_written_as_plain_json():
    class NumpyParams(Gaussian):
        def params(self):
            return {"sigma": np.float64(self.sigma), "copies": np.int64(2), "w": np.ones(2)}

    result = dpaudit.audit_mechanism(NumpyParams(1.0), trials=1000, seed=0)
    again = AuditResult.from_json(result.to_json())
    assert again.metadata["mechanism"]["params"] == {"sigma": 1.0, "copies": 2, "w": [1.0, 1.0]}
