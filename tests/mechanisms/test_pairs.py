"""The pair generators of dpaudit.mechanisms.pairs: relation-aware, seeded, checked input."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.mechanisms.pairs import (
    boundary_pairs,
    overflow_pairs,
    random_pairs,
    rounding_pairs,
    subsample,
)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_boundary_pairs_move_the_sum_by_the_full_width(relation):
    pairs = boundary_pairs(5, -1.0, 2.0, relation=relation)
    assert len(pairs) == (2 if relation == "replace_one" else 4)
    for pair in pairs:
        assert pair.relation == relation
        assert np.isin(pair.d, [-1.0, 2.0]).all() and np.isin(pair.d_prime, [-1.0, 2.0]).all()
    moved = max(abs(p.d_prime.sum() - p.d.sum()) for p in pairs)
    assert moved == (3.0 if relation == "replace_one" else 2.0)


def test_boundary_pairs_of_integers_are_integers():
    (pair, _) = boundary_pairs(3, 0, 10, integer=True)
    assert pair.d.dtype.kind == "i" and pair.d_prime.dtype.kind == "i"


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_rounding_pairs_rank_the_float_sum_excess(relation):
    pairs = rounding_pairs(30, -1e8, 1e8, relation=relation, budget=200, keep=3, seed=1)
    assert len(pairs) == 3 and all(p.relation == relation for p in pairs)
    assert all((np.abs(p.d) <= 1e8).all() for p in pairs)
    assert "rounding search" in pairs[0].description
    again = rounding_pairs(30, -1e8, 1e8, relation=relation, budget=200, keep=3, seed=1)
    assert all(np.array_equal(a.d, b.d) for a, b in zip(pairs, again, strict=True))


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_overflow_pairs_wrap_the_accumulator_in_d_prime_only(relation):
    (pair,) = overflow_pairs(0, 2**61, relation=relation)
    with np.errstate(over="ignore"):
        assert pair.d.sum(dtype=np.int64) > 0
        assert pair.d_prime.sum(dtype=np.int64) < 0
    assert overflow_pairs(0, 10, relation=relation) == []
    (neg,) = overflow_pairs(-(2**30), 1, relation=relation, dtype=np.int32)
    assert neg.d.sum(dtype=np.int64) >= np.iinfo(np.int32).min
    assert neg.d_prime.sum(dtype=np.int64) < np.iinfo(np.int32).min


def test_random_pairs_and_subsample_are_seeded():
    a = random_pairs(4, 0, 5, relation="add_remove", budget=6, integer=True, seed=2)
    b = random_pairs(4, 0, 5, relation="add_remove", budget=6, integer=True, seed=2)
    assert len(a) == 6 and all(
        np.array_equal(x.d_prime, y.d_prime) for x, y in zip(a, b, strict=True)
    )
    assert all(len(p.d_prime) == len(p.d) + 1 for p in a)
    kept = subsample(a, 3, seed=0)
    assert len(kept) == 3 and all(any(p is q for q in a) for p in kept)
    assert all(p is q for p, q in zip(subsample(a, 10), a, strict=True))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: boundary_pairs(0, 0, 1), "n must be"),
        (lambda: boundary_pairs(3, 1, 0), "low must be below high"),
        (lambda: boundary_pairs(3, 0, 1, relation="swap"), "relation"),
        (lambda: boundary_pairs(3, 0, 1.5, integer=True), "integer bounds"),
        (lambda: rounding_pairs(3, 0, 1, accumulate=3), "accumulate must be callable"),
        (lambda: rounding_pairs(3, 0, 1, budget=2, keep=5), "keep"),
        (lambda: overflow_pairs(0.0, 1.0), "integers"),
        (lambda: overflow_pairs(0, 1, dtype=float), "dtype must be an integer type"),
        (lambda: overflow_pairs(0, 2**40, dtype=np.int32), "need"),
        (lambda: random_pairs(3, 0, 1, budget=0), "budget"),
        (lambda: subsample([], 0), "budget"),
    ],
)
def test_generators_refuse_bad_input_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_the_suites_pair_descriptions_are_plain_words_for_the_reports():
    # Reports show a pair's description in table cells as text: markup such as backticks was
    # shown literally in every neighbouring-pair cell.
    from dpaudit import specs

    for spec in specs.suite():
        description = spec.pair.description
        assert description and not set(description) & set("`*_<>|"), description
