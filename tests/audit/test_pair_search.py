"""Neighbouring-pair search: candidate families, the choice, the confidence accounting, validity.

The validity test uses confidence 0.999, so a correct implementation fails it with probability
at most 1e-3 per seed; the seed is fixed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks import Learned
from dpaudit.audit.pair_search import (
    PairSearchResult,
    _pilot_seed,
    answer_pairs,
    record_pairs,
    search_pairs,
)
from dpaudit.mechanisms import Laplace, NeighbouringPair
from dpaudit.mechanisms.flawed import flawed


def test_answer_pairs_cover_the_patterns_and_stay_neighbours():
    pairs = answer_pairs(4, base=1.0)
    # all up, all down, two halves, and per position: up, down, up-others-down
    assert len(pairs) == 2 + 2 + 3 * 4
    for p in pairs:
        assert p.relation == "replace_one"
        np.testing.assert_array_equal(p.d, np.ones(4))
        assert np.abs(p.d_prime - p.d).max() == 1.0
    descriptions = [p.description for p in pairs]
    assert len(set(descriptions)) == len(descriptions)
    assert len(answer_pairs(1)) == 4  # up, down, answer 0 up, answer 0 down
    with pytest.raises(ValueError, match="k must be"):
        answer_pairs(0)


def test_record_pairs_replace_and_add_remove():
    replace = record_pairs([0.0, 1.0, 1.0, 0.0], [0.0, 1.0])
    assert len(replace) == 4  # each record moved to the other boundary value
    for p in replace:
        assert p.relation == "replace_one" and np.sum(p.d != p.d_prime) == 1
    add_remove = record_pairs([0.0, 1.0], [5.0], relation="add_remove")
    assert [p.d.size for p in add_remove] == [1, 1, 2]
    assert [p.d_prime.size for p in add_remove] == [2, 2, 3]
    rand = record_pairs([0.0, 1.0], [], random_pairs=5, low=-1.0, high=1.0, seed=3)
    assert len(rand) == 5
    assert all(-1.0 <= p.d_prime[p.d != p.d_prime][0] <= 1.0 for p in rand)
    vectors = record_pairs(np.zeros((2, 3)), [np.ones(3)])
    assert len(vectors) == 2 and vectors[0].d_prime.shape == (2, 3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dataset": [0.0], "values": [1.0], "relation": "swap"}, "relation"),
        ({"dataset": [[[0.0]]], "values": []}, "dataset"),
        ({"dataset": [0.0], "values": [[1.0, 2.0]]}, "values"),
        ({"dataset": [0.0], "values": [], "random_pairs": 2}, "low < high"),
    ],
)
def test_record_pairs_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        record_pairs(**kwargs)


def test_pilot_seeds_never_collide_with_final_seeds():
    seeds = {_pilot_seed(7, i) for i in range(1000)}
    assert len(seeds) == 1000 and 7 not in seeds


def test_search_picks_the_leaking_pair_and_accounts_for_finalists():
    # report-noisy-max returning the value leaks most when every answer moves the same way
    mech = flawed("report_noisy_max_value")
    candidates = answer_pairs(5, base=0.0)
    result = search_pairs(
        mech,
        candidates,
        lambda p: Learned(mechanism=mech, pair=p, train_trials=2**13),
        trials=200_000,
        pilot_trials=20_000,
        finalists=2,
        seed=1,
    )
    assert isinstance(result, PairSearchResult)
    assert result.pilot_epsilon.shape == (len(candidates),)
    assert result.candidates[result.chosen[0]].description in ("all up", "all down")
    assert [r.confidence for r in result.finals] == pytest.approx([0.975, 0.975])
    assert [r.seed for r in result.finals] == [1, 2]
    assert 0.1 < result.epsilon_lower_bound <= 0.25
    frame = result.to_frame()
    assert frame["chosen"].sum() == 2 and frame["final_epsilon"].notna().sum() == 2
    record = result.to_dict()
    assert record["finalists"] == 2 and len(record["finals"]) == 2


def test_search_never_certifies_more_than_the_true_epsilon():
    # Every candidate moves the Laplace query by at most the sensitivity: true eps <= 1.
    mech = Laplace(scale=1.0)
    candidates = [
        NeighbouringPair(np.zeros(0), np.array([x]), "add_remove", f"add {x}")
        for x in (0.25, 0.5, 1.0)
    ]
    result = search_pairs(mech, candidates, trials=100_000, pilot_trials=10_000, confidence=0.999)
    assert result.pair.description == "add 1.0"
    assert result.epsilon_lower_bound <= 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"candidates": []}, "at least one"),
        ({"candidates": [3]}, "NeighbouringPair"),
        ({"finalists": 5}, "finalists"),
        ({"pilot_confidence": 1.0}, "pilot_confidence"),
        ({"delta": 1.0}, "delta"),
    ],
)
def test_search_refuses_bad_arguments(kwargs, match):
    mech = Laplace(scale=1.0)
    args = {"candidates": [mech.worst_case_pair()], "trials": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        search_pairs(mech, **args)


def test_default_attack_looks_both_ways_for_black_boxes():
    """A pair that moves the output down gets a positive pilot bound: the default attack of a
    black box learns the direction on its own fit sample (no cost to the bounds)."""
    from dpaudit.audit.pair_search import search_pairs
    from dpaudit.mechanisms.base import NeighbouringPair
    from dpaudit.mechanisms.blackbox import BlackBox

    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, 1.0, size)

    box = BlackBox(release)
    down = NeighbouringPair(np.array([1.0]), np.array([0.0]), "replace_one")
    still = NeighbouringPair(np.array([1.0]), np.array([1.0]), "replace_one")
    result = search_pairs(box, [down, still], trials=20_000, pilot_trials=5000, seed=0)
    assert result.pilot_epsilon[0] > 0.5
    assert result.chosen[0] == 0
    assert result.finals[0].epsilon_lower_bound(0.0) > 0.5
