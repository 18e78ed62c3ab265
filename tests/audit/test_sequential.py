"""The anytime-valid test of a claim (dpaudit.audit.sequential) and the engine's sequential audit.

Every number is checked against an independent computation: the expected factor of a bet by
enumeration of the four outcomes of a trial pair, a batch's factor against the product of its
trials' factors, the Kullback-Leibler projection against a numerical minimisation, the supporting
lines against the claimed curve on a grid. Monte Carlo tests use fixed seeds and state their
false-failure probability.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import dpaudit as dpa
from dpaudit.audit import engine, sequential
from dpaudit.audit.engine import audit_sequential, look_chunks, phase_trials
from dpaudit.audit.sequential import (
    E_SHARE,
    LADDER_SHARE,
    Bet,
    BettingProcess,
    Candidates,
    SequentialTest,
    claim_delta,
    kl_projection,
    ladder,
    supporting_lines,
)
from dpaudit.bounds import approx_dp, gdp
from dpaudit.bounds.rdp import ZCDP
from dpaudit.bounds.tradeoff import from_points

#: Claims of every shape the lines are read from: pure and approximate DP, GDP, a zCDP
#: conversion (numerical dual) and an asymmetric piecewise-linear curve.
CLAIMS = {
    "pure": approx_dp(1.0, 0.0),
    "approx": approx_dp(0.5, 1e-3),
    "gdp": gdp(1.0),
    "zcdp": ZCDP(0.5).tradeoff(),
    "asymmetric": from_points(np.array([0.0, 0.1, 0.5, 1.0]), np.array([0.8, 0.5, 0.1, 0.0])),
}


def _in_null(claim, alpha, beta):
    """Whether the errors lie in the claim's null set, both orders of the pair."""
    return beta >= float(claim(alpha)) - 1e-12 and alpha >= float(claim.inverse()(beta)) - 1e-12


@pytest.mark.parametrize("name", list(CLAIMS))
def test_every_supporting_line_contains_the_claimed_curve_and_touches_it(name):
    claim = CLAIMS[name]
    lines = supporting_lines(claim)
    alpha = np.unique(np.concatenate([np.linspace(0, 1, 1001), np.geomspace(1e-12, 1e-2, 200)]))
    for beta_of, a_first in ((claim(alpha), True), (claim.inverse()(alpha), False)):
        a, b = (alpha, beta_of) if a_first else (beta_of, alpha)
        value = lines.weight[:, None] * a[None, :] + (1 - lines.weight[:, None]) * b[None, :]
        gap = value - lines.offset[:, None]
        # contains: no point of the curve is outside any half-plane (up to the rounding of
        # this sum of two products, 1e-16)
        assert gap.min() >= -1e-16
    # touches: each line of the order it belongs to comes within 1e-4 of the curve
    forward = np.array([o == "d_d_prime" for o in lines.order])
    for mask, a, b in (
        (forward, alpha, claim(alpha)),
        (~forward, claim.inverse()(alpha), alpha),
    ):
        w, c = lines.weight[mask, None], lines.offset[mask, None]
        assert (w * a[None, :] + (1 - w) * b[None, :] - c).min(axis=1).max() < 1e-4


def test_a_rungs_lines_in_closed_form_are_those_of_its_curve():
    closed = sequential._rung_lines(0.7, 1e-4)
    numeric = supporting_lines(approx_dp(0.7, 1e-4), 0.7 + sequential._RUNG_SLOPES)
    np.testing.assert_allclose(closed.weight, numeric.weight, rtol=1e-15)
    np.testing.assert_allclose(closed.offset, numeric.offset, rtol=1e-12, atol=1e-18)
    assert closed.order == numeric.order


def test_lines_of_an_approximate_dp_claim_are_its_two_pieces_at_its_own_eps():
    lines = supporting_lines(approx_dp(1.0, 0.01), [1.0])
    w = math.e / (1 + math.e)
    np.testing.assert_allclose(lines.weight, [w, 1 - w], rtol=1e-14)
    np.testing.assert_allclose(lines.offset, (0.99 - 1e-9) / (1 + math.e), rtol=1e-12)
    assert lines.order == ("d_d_prime", "d_prime_d")


def test_the_kl_projection_is_the_minimiser_on_the_line():
    for alpha, beta, weight, offset in [
        (0.05, 0.5, 0.7, 0.5),
        (0.001, 0.3, 0.95, 0.2),
        (0.4, 0.01, 0.2, 0.3),
        (0.2, 0.2, 0.5, 0.45),
    ]:
        a, b, m = kl_projection(alpha, beta, weight, offset)

        def kl(p, q):
            return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))

        def along(x, alpha=alpha, beta=beta, weight=weight, offset=offset):
            return kl(alpha, x) + kl(beta, (offset - weight * x) / (1 - weight))

        lo = max(1e-12, (offset - (1 - weight) * (1 - 1e-12)) / weight)
        hi = min(1 - 1e-12, offset / weight - 1e-12)
        best = optimize.minimize_scalar(
            along, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
        )
        assert a == pytest.approx(best.x, abs=1e-6)
        assert weight * a + (1 - weight) * b <= offset
        assert weight * a + (1 - weight) * b == pytest.approx(offset, abs=1e-12)
        # the stationarity conditions with one multiplier
        assert a - alpha == pytest.approx(m * weight * a * (1 - a), rel=1e-6)
        assert b - beta == pytest.approx(m * (1 - weight) * b * (1 - b), rel=1e-6)
    assert kl_projection(0.6, 0.6, 0.5, 0.3) == (0.6, 0.6, 0.0)  # above the line: no bet


def _expected_factor(bet: Bet, alpha: float, beta: float) -> float:
    """E[factor] of one trial pair by enumerating its four outcomes."""
    total = 0.0
    for x in (0, 1):
        for y in (0, 1):
            p = (alpha if x else 1 - alpha) * (beta if y else 1 - beta)
            fx = 1 - bet.stake_alpha * (x - bet.a)
            fy = 1 - bet.stake_beta * (y - bet.b)
            total += p * fx * fy
    return total


@pytest.mark.parametrize("name", list(CLAIMS))
def test_no_bet_the_bettor_places_earns_in_expectation_against_the_null(name):
    """The lemma of the module docstring, checked by enumeration: for bets chosen on violating
    counts and for errors on (and inside) the claim's null set, the expected factor is <= 1."""
    claim = CLAIMS[name]
    process = BettingProcess(supporting_lines(claim), stake=1.0)
    rng = np.random.default_rng(0)
    grid = np.linspace(0.0, 1.0, 101)
    points = [(a, float(claim(a))) for a in grid] + [(float(claim.inverse()(b)), b) for b in grid]
    points += [(1 - a, 1 - b) for a, b in points]  # the complements' errors
    points = [(a, b) for a, b in points if _in_null(claim, a, b) or _in_null(claim, 1 - a, 1 - b)]
    bets = 0
    for _ in range(300):
        counts = rng.integers(0, 50, size=(2, 12))
        counts[0, -1] += rng.integers(0, 5)
        process.choose(Candidates.from_counts(counts))
        if process.bet is None:
            continue
        bets += 1
        bet = process.bet
        assert 1 - bet.stake_alpha * (1 - bet.a) >= 0 and 1 - bet.stake_beta * (1 - bet.b) >= 0
        for a, b in points:
            if bet.complement:
                a, b = 1 - a, 1 - b
            assert _expected_factor(bet, a, b) <= 1 + 1e-12
    assert bets > 20


def test_a_batch_pays_the_product_of_its_trials_factors():
    rng = np.random.default_rng(1)
    bet = Bet(
        edge=3,
        complement=False,
        line=0,
        a=0.3,
        b=0.4,
        stake_alpha=0.8,
        stake_beta=0.6,
        estimate=(0.1, 0.2),
    )
    s0, s1 = rng.integers(0, 8, 300), rng.integers(0, 8, 300)
    counts = np.stack([np.bincount(s0, minlength=8), np.bincount(s1, minlength=8)])
    x = (s0 >= 4).astype(float)  # bins above edge 3: "score >= t_3" under D
    y = (s1 <= 3).astype(float)  # false negatives under D_prime
    direct = np.sum(np.log(1 - 0.8 * (x - 0.3))) + np.sum(np.log(1 - 0.6 * (y - 0.4)))
    assert bet.log_factor(counts) == pytest.approx(direct, rel=1e-12)
    flipped = Bet(3, True, 0, 0.3, 0.4, 0.8, 0.6, (0.1, 0.2))
    direct = np.sum(np.log(1 - 0.8 * ((1 - x) - 0.3))) + np.sum(np.log(1 - 0.6 * ((1 - y) - 0.4)))
    assert flipped.log_factor(counts) == pytest.approx(direct, rel=1e-12)


def test_the_bet_on_a_batch_is_fixed_before_its_counts():
    """Predictability: changing a batch's counts changes the wealth it earns, never the bet it is
    scored with; that bet depends on the earlier batches only."""
    rng = np.random.default_rng(2)
    first = rng.integers(0, 40, size=(2, 16))
    first[1, -1] += 30  # a violation: many D_prime scores in the top bin
    one, two = (BettingProcess(supporting_lines(approx_dp(1.0, 0.0))) for _ in range(2))
    one.update(first)
    two.update(first)
    assert one.bet == two.bet and one.bet is not None
    one.update(rng.integers(0, 40, size=(2, 16)))
    two.update(rng.integers(0, 40, size=(2, 16)))
    assert one.settled == two.settled
    assert one.log_wealth != two.log_wealth


def test_the_candidates_are_the_hull_vertices_and_depend_on_the_counts_only():
    counts = np.array([[5, 0, 10, 10, 0, 20, 5], [1, 0, 3, 12, 0, 30, 40]])
    cands = Candidates.from_counts(counts)
    # edges 0 and 1 have the same counts (bin 1 is empty): only the first one is a candidate
    assert 1 not in cands.edge[~cands.complement].tolist()
    n0, n1 = counts.sum(axis=1)
    from dpaudit.audit.empirical import cumulative_errors

    fp, fn = cumulative_errors(*counts)
    alpha, beta = (fp + 0.5) / (n0 + 1), (fn + 0.5) / (n1 + 1)
    kept = ~cands.complement
    # every point of the tests lies on or above the hull through the kept vertices
    hx, hy = cands.alpha[kept], cands.beta[kept]
    order = np.argsort(hx)
    assert np.all(np.interp(alpha, hx[order], hy[order]) <= beta + 1e-12)


def test_under_the_null_the_mean_wealth_stays_at_most_one():
    """Monte Carlo check of the supermartingale: 1000 runs of 6 batches of 200 trial pairs at the
    corner of (1, 0)-DP (the test with alpha = 0.2, beta = 1 - e * 0.2) and at a point inside,
    scored on two bins (one threshold), betting on the lines of slopes e^0.5, e and e^2. The mean
    wealth is at most 1 up to 4 standard errors (false-failure probability below 1e-4); its twin
    with bets chosen after seeing each batch earns more than 1 on average, its wealth capped at
    20, by 4 standard errors (the twin is no supermartingale)."""
    lines = supporting_lines(approx_dp(1.0, 0.0), [0.5, 1.0, 2.0])
    rng = np.random.default_rng(3)
    for alpha, beta in ((0.2, 1 - math.e * 0.2), (0.3, 0.5)):
        finals, peeked = [], []
        for _ in range(1000):
            honest = BettingProcess(lines)
            cheat = BettingProcess(lines)
            total = np.zeros((2, 2), dtype=np.int64)
            for _ in range(6):
                fp, fn = rng.binomial(200, alpha), rng.binomial(200, beta)
                batch = np.array([[200 - fp, fp], [fn, 200 - fn]])
                honest.update(batch)
                total += batch
                cheat.choose(Candidates.from_counts(total))  # hindsight: sees this batch
                cheat.settle(batch)
            finals.append(math.exp(honest.log_wealth))
            peeked.append(math.exp(min(cheat.log_wealth, 50.0)))
        finals, peeked = np.array(finals), np.array(peeked)
        assert finals.mean() <= 1 + 4 * finals.std() / math.sqrt(finals.size)
        if beta == 1 - math.e * alpha:
            capped = np.minimum(peeked, 20.0)  # E min(W, 20) <= E W <= 1 for a supermartingale
            assert capped.mean() > 1 + 4 * capped.std() / math.sqrt(capped.size)


def test_a_violation_makes_the_wealth_grow():
    claim = approx_dp(1.0, 0.0)
    rng = np.random.default_rng(4)
    process = BettingProcess(supporting_lines(claim))
    for _ in range(8):
        fp, fn = rng.binomial(500, 0.1), rng.binomial(500, 0.5)  # e * 0.1 + 0.5 < 1
        process.update(np.array([[500 - fp, fp], [fn, 500 - fn]]))
    assert process.log_wealth > math.log(1e6)


def test_the_ladder_and_the_claims_delta():
    assert claim_delta(approx_dp(1.0, 0.0)) == 0.0
    assert claim_delta(approx_dp(1.0, 1e-6)) == pytest.approx(1e-6, rel=1e-12)
    assert claim_delta(gdp(1.0)) == 1e-5  # eps is infinite at delta = 0
    rungs = ladder(0.1)
    assert rungs[0] > 0.1 and np.all(np.diff(rungs) > 0) and rungs[-1] <= sequential.LADDER_TOP
    assert ladder(math.inf).size == 0


def test_the_level_is_spent_once_over_every_look_and_pair():
    test = SequentialTest(approx_dp(1.0, 0.0), 0.01, pairs=3, looks=45)
    # every look and pair at look_gamma, and the cap's extra share once per pair
    spent = E_SHARE * 0.01 + LADDER_SHARE * 0.01 + 45 * 3 * test.look_gamma
    spent += 3 * (test.final_look_gamma - test.look_gamma)
    assert spent == pytest.approx(0.01, rel=1e-12)
    assert test.final_look_gamma > 20 * test.look_gamma
    assert test.e_threshold == pytest.approx(1 / (E_SHARE * 0.01))
    assert test.ladder_threshold == pytest.approx(1 / (LADDER_SHARE * 0.01))


def test_the_ladder_certifies_only_consecutive_rungs():
    test = SequentialTest(approx_dp(1.0, 0.0), 0.05)
    state = test._pairs[0]
    top = math.log(test.ladder_threshold) + 1
    state.rungs[0].log_wealth = state.rungs[1].log_wealth = state.rungs[3].log_wealth = top
    assert test.certified_epsilon == pytest.approx(float(test.rungs[1]))
    assert test.decided_by == "ladder"


def test_the_e_value_of_several_pairs_is_their_mean():
    test = SequentialTest(approx_dp(1.0, 0.0), 0.05, pairs=4)
    for state, value in zip(test._pairs, [5.0, 0.0, -3.0, 1.0], strict=True):
        state.claim.log_wealth = value
    expected = math.log(np.mean(np.exp([5.0, 0.0, -3.0, 1.0])))
    assert test.claim_log_e_value == pytest.approx(expected, rel=1e-12)
    assert test.leading_pair() == 0


def test_phases_and_looks():
    assert phase_trials(4096, 4, 2**16) == [4096, 16384, 65536]
    assert phase_trials(4096, 4, 100_000) == [4096, 16384, 65536, 100_000]
    assert look_chunks(16) == [1, 2, 3, 4, 6, 8, 12, 16]
    assert look_chunks(1) == [1]
    assert len(look_chunks(1000)) <= engine.LOOKS_PER_PHASE


def test_a_sequential_audit_stops_early_on_a_clear_violation_and_is_reproducible():
    mech = dpa.mechanisms.Laplace(0.5)  # 2-DP
    one = audit_sequential(mech, approx_dp(1.0, 0.0), seed=5, max_trials=2**16)
    two = audit_sequential(mech, approx_dp(1.0, 0.0), seed=5, max_trials=2**16)
    assert one.stopped == "refuted" and one.phases == 1 and one.verdict == "violated"
    assert one.outputs_per_dataset == two.outputs_per_dataset
    assert one.record()["history"] == two.record()["history"]
    record = one.results[0].metadata["sequential"]
    assert record["stopped"] == "refuted" and record["reason"]
    # the result at the stop is read at the per-look level its record states
    assert one.results[0].gamma == pytest.approx(record["look_gamma"], rel=1e-12)
    assert record["family_gamma"] == one.results[0].gamma
    # the certified eps is a valid lower bound on the true eps = 2
    assert 1.0 < one.epsilon_lower_bound(0.0) <= 2.0


def test_a_correct_mechanism_runs_to_its_cap_and_reports_why():
    audit = audit_sequential(
        dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), seed=1, trials=1024, max_trials=4096
    )
    assert audit.stopped == "max_trials" and audit.verdict == "consistent"
    assert audit.phases == 2 and audit.looks == 16
    assert "cap" in audit.reason
    # at the cap the family is read at the cap's larger level
    assert audit.results[0].gamma == pytest.approx(audit.test.final_look_gamma, rel=1e-12)
    assert audit.epsilon_lower_bound(0.0) <= 1.0


def test_a_time_budget_stops_after_the_first_look():
    audit = audit_sequential(
        dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), max_seconds=1e-9, max_trials=2**16
    )
    assert audit.stopped == "max_seconds" and audit.looks == 1


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"level": 0.0}, "level"),
        ({"trials": 1}, "trials"),
        ({"growth": 1}, "growth"),
        ({"max_trials": 100}, "max_trials"),
        ({"max_seconds": 0.0}, "max_seconds"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"pairs": []}, "pairs"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        audit_sequential(dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), **kwargs)


@pytest.mark.slow
def test_false_refutations_of_correct_mechanisms_stay_below_the_level():
    """Coverage under optional stopping: a Laplace mechanism claimed (1, 0)-DP and a Gaussian
    claimed 1-GDP (both exact, the tightest true claims) are audited sequentially on 200 seeds
    each at level 0.05, looking after every batch (24 looks: phases of 1024, 4096 and 16384
    trials). The Clopper-Pearson lower bound (99.9%) on the rate of refutations must not exceed
    0.05: the test fails falsely with probability at most 1e-3 when the test is valid.

    Its twins show the test has teeth. The point estimate: at each look, refuting as soon as the
    bettor's plug-in estimate of some test lies below a supporting line (the bound replaced by
    the estimate) refutes the true claims on most seeds. The hindsight bet: the same betting test
    at full stake, but with each bet chosen after seeing the batch it is scored on (no longer
    predictable, so no longer a supermartingale), crosses the same threshold on more than 5% of
    the seeds (Clopper-Pearson lower bound above 0.05)."""
    runs, level = 200, 0.05
    cases = [
        (dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0)),
        (dpa.mechanisms.Gaussian(1.0), gdp(1.0)),
    ]

    class PointEstimate(SequentialTest):
        def update(self, pair, counts):
            super().update(pair, counts)
            state = self._pairs[pair]
            if state.claim.bet is not None:  # an estimate below a line
                state.claim.log_wealth = math.inf

    class Hindsight(SequentialTest):
        def update(self, pair, counts):
            state = self._pairs[pair]
            counts = np.asarray(counts, dtype=np.int64)
            state.counts = counts if state.counts is None else state.counts + counts
            state.claim.stake = 1.0
            state.claim.choose(Candidates.from_counts(state.counts))
            state.claim.settle(counts)

    def cp_lower(k: int) -> float:
        return float(stats.beta.ppf(1e-3, k, runs - k + 1)) if k else 0.0

    original = engine.SequentialTest
    try:
        for twin, must_fail in ((original, False), (PointEstimate, True), (Hindsight, True)):
            engine.SequentialTest = twin
            for mechanism, claim in cases:
                refuted = sum(
                    audit_sequential(
                        mechanism, claim, level=level, trials=1024, max_trials=16384, seed=seed
                    ).stopped
                    == "refuted"
                    for seed in range(runs)
                )
                assert (cp_lower(refuted) > level) == must_fail, (twin.__name__, refuted)
    finally:
        engine.SequentialTest = original
