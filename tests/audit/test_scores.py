"""audit_scores: the engine's bounds on given scores, coverage, small samples."""

import numpy as np
import pytest
from scipy.stats import norm

import dpaudit as dpa
from dpaudit.attacks import Threshold
from dpaudit.audit.scores import audit_scores, split_scores
from dpaudit.mechanisms.base import NeighbouringPair


class _Replay:
    """A mechanism that returns given scores in order: probe, pilot, selection, evaluation."""

    name = "replay"

    def __init__(self, d_stream, d_prime_stream):
        self.queues = {0: list(d_stream), 1: list(d_prime_stream)}

    def sample(self, dataset, size, rng):
        side = int(np.asarray(dataset).size)
        if size == 2:
            return np.zeros(2)
        out, self.queues[side] = self.queues[side][:size], self.queues[side][size:]
        return np.asarray(out, dtype=float)


@pytest.mark.parametrize("strategy", ["bonferroni", "holdout"])
def test_bounds_equal_engine_on_same_scores(strategy):
    rng = np.random.default_rng(5)
    s0, s1 = rng.standard_normal(3000), rng.standard_normal(3000) + 1.0
    result = audit_scores(s0, s1, strategy=strategy, seed=3)
    # The same split, replayed through the engine: pilot = selection scores, then selection,
    # then evaluation.
    split = np.random.default_rng(np.random.SeedSequence(3))
    sel0, ev0 = split_scores(s0, 0.5, split)
    sel1, ev1 = split_scores(s1, 0.5, split)
    mech = _Replay(np.r_[sel0, sel0, ev0], np.r_[sel1, sel1, ev1])
    pair = NeighbouringPair(np.zeros(0), np.zeros(1))
    engine = dpa.audit(
        mech,
        pair,
        Threshold(),
        trials=ev0.size,
        selection_trials=sel0.size,
        strategy=strategy,
        chunk_size=2**15,
    )
    assert np.array_equal(engine.counts, result.counts)
    for delta in (0.0, 1e-5, 1e-2):
        assert engine.epsilon_lower_bound(delta) == result.epsilon_lower_bound(delta)
    assert engine.mu_lower_bound() == result.mu_lower_bound()
    assert result.mu_lower_bound() > 0


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
    """n = 100 per side, mu = 1: the default (median threshold) is positive in most of 20 seeds."""
    positive = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        r = audit_scores(rng.standard_normal(100), rng.standard_normal(100) + 1.0)
        assert r.metadata["threshold_choice"] == "median"
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
    ],
)
def test_bad_input(kwargs, word):
    args = {"scores_d": np.arange(10.0), "scores_d_prime": np.arange(10.0)} | kwargs
    with pytest.raises(ValueError, match=word):
        audit_scores(args.pop("scores_d"), args.pop("scores_d_prime"), **args)


def test_median_threshold_is_chosen_on_the_selection_scores_only():
    """The median strategy's threshold is the median of the pooled *selection* scores: moving only
    the evaluation scores (far, in the direction that would move an evaluation median) leaves it
    where it was, while the evaluation counts change."""
    rng = np.random.default_rng(0)
    s0, s1 = rng.standard_normal(200), rng.standard_normal(200) + 1.0
    a = audit_scores(s0, s1, strategy="median", seed=7)
    split = np.random.default_rng(np.random.SeedSequence(7))
    sel0, ev0 = split_scores(np.arange(200), 0.5, split)
    sel1, ev1 = split_scores(np.arange(200), 0.5, split)
    expected = np.median(np.concatenate([s0[sel0], s1[sel1]]))
    assert a.fixed_thresholds.tolist() == [expected]
    t0, t1 = s0.copy(), s1.copy()
    t0[ev0] += 5.0
    t1[ev1] += 5.0
    b = audit_scores(t0, t1, strategy="median", seed=7)
    assert b.fixed_thresholds.tolist() == [expected]
    assert not np.array_equal(a.fixed_counts, b.fixed_counts)
