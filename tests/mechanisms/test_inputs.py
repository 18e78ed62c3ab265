"""Input spaces, settings and candidates, and the generators that turn a space into candidates:
settings enumerated with the default first and every axis value early, pins, costs, special
records, and the rounding search that finds where a floating-point sum moves by its ulp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.inputs import (
    SPECIALS,
    Candidate,
    InputSpace,
    Setting,
    powers_of_two,
    shown_number,
)
from dpaudit.mechanisms.pairs import rounding_pairs, space_candidates, special_pairs

SPACE = InputSpace(
    default=Setting((0.0, 1.0), 10),
    offsets=powers_of_two((30, 62, 1000), signed=True),
    widths=(1.0,),
    width_ulps=(4,),
    sizes=(1, 1000),
    dtypes=("float64", "int64"),
    epsilons=(0.5, 2.0),
    specials=SPECIALS,
    generators=("boundary", "rounding", "overflow", "special", "random"),
    accumulate=np.sum,
    records_per_output=100.0,
)


def test_settings_are_each_once_the_default_first_and_every_axis_value_early():
    settings = SPACE.settings(seed=0)
    assert settings[0] == SPACE.default
    assert len(set(settings)) == len(settings)
    early = settings[:30]
    assert {s.size for s in early} >= {1, 10, 1000}
    assert {s.epsilon for s in early} >= {0.5, 1.0, 2.0}
    assert {s.dtype for s in early} == {"float64", "int64"}
    lowers = {s.bounds[0] for s in settings}
    assert {2.0**30, -(2.0**30), 2.0**1000, -(2.0**1000)} <= lowers
    # 4 ulps of 2**30 as a width; no integer setting far beyond int64 or with fractional bounds
    assert any(s.bounds == (2.0**30, 2.0**30 + 4 * 2.0**-22) for s in settings)
    assert all(s.bounds[1] <= 2**63 - 1 for s in settings if s.integer)
    assert settings == SPACE.settings(seed=0) and settings != SPACE.settings(seed=1)


def test_a_setting_is_checked_and_described_exactly():
    s = Setting((2.0**30, 2.0**30 + 4 * 2.0**-22), 1000, "float64", 0.5)
    assert s.describe() == "bounds [2^30, 2^30 + 4 ulp], 1,000 float64 records, eps = 0.5"
    assert Setting((0, 2**61), 4, "int64").describe().startswith("bounds [0, 2^61], 4 int64")
    assert Setting((2**62, 2**62 + 1), 1, "int64").bounds == (2**62, 2**62 + 1)  # exact
    assert shown_number(1024.0000000000002) == "1024.0000000000002"
    assert shown_number(0.5) == "0.5"
    for bad, match in [
        ({"bounds": (1.0, 1.0)}, "lower < upper"),
        ({"bounds": (0.5, 2.0), "dtype": "int64"}, "whole numbers"),
        ({"bounds": (0, 2**40), "dtype": "int32"}, "int32 bounds need"),
        ({"size": 0}, "size"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"dtype": "float16"}, "dtype"),
        ({"bounds": (0.0, math.inf)}, "upper bound must be finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            Setting(**bad)


def test_a_space_refuses_unknown_axis_values_naming_them():
    with pytest.raises(ValueError, match="specials"):
        InputSpace(specials=("nan", "huge"))
    with pytest.raises(ValueError, match="generators"):
        InputSpace(generators=("boundary", "guess"))
    with pytest.raises(ValueError, match="rounding generator needs accumulate"):
        InputSpace(generators=("rounding",))
    with pytest.raises(ValueError, match="sizes"):
        InputSpace(sizes=(0,))


def test_pins_replace_an_axis_and_its_default_value():
    pinned = SPACE.pinned(bounds=[(2.0**30, 2.0**30 + 1.0)], sizes=[100], epsilons=[3.0])
    assert pinned.default == Setting((2.0**30, 2.0**30 + 1.0), 100, "float64", 3.0)
    settings = pinned.settings()
    assert {s.size for s in settings} == {100} and {s.epsilon for s in settings} == {3.0}
    assert {s.dtype for s in settings} == {"float64", "int64"}
    assert {s.bounds for s in settings} == {(2.0**30, 2.0**30 + 1.0), (2**30, 2**30 + 1)}
    assert InputSpace(default=Setting((0, 10), 5, "int64")).pinned(bounds=[(0.5, 1.5)]) is None
    assert SPACE.pinned(relations=["add_remove"]).relations == ("add_remove",)


def test_candidates_cover_each_generator_over_the_settings_and_are_made_on_demand():
    found = space_candidates(SPACE, "replace_one")
    assert set(found) == {"boundary", "rounding", "overflow", "special", "random"}
    for generator, candidates in found.items():
        for c in candidates[:5]:
            pair = c.pair()
            assert isinstance(pair, NeighbouringPair) and pair.relation == "replace_one"
            assert c.generator == generator and c.relation == "replace_one"
            assert c.weight == max(1.0, c.setting.size / 100.0)
            assert pair.d.shape == pair.d_prime.shape
            if c.setting.integer:
                assert pair.d.dtype.kind == "i"
            assert c.describe(pair).startswith(f"{generator} at bounds [")
    assert all(not c.setting.integer for c in found["rounding"])
    assert all(c.setting.integer for c in found["overflow"])
    # an overflow pair's size is what its bounds need, whatever the size axis says
    (first, *_) = found["overflow"]
    assert first.pair().d.size == first.setting.size
    # the same call gives the same candidates
    again = space_candidates(SPACE, "replace_one")
    a, b = found["random"][3].pair(), again["random"][3].pair()
    assert np.array_equal(a.d, b.d) and np.array_equal(a.d_prime, b.d_prime)
    adds = space_candidates(SPACE, "add_remove")["boundary"][0].pair()
    assert adds.d_prime.size == adds.d.size + 1
    assert space_candidates(InputSpace(relations=("replace_one",)), "add_remove") == {}


def test_a_given_pair_is_a_candidate_without_a_setting():
    pair = NeighbouringPair(np.zeros(2), np.ones(2), "replace_one", "given")
    c = Candidate.given(pair, "boundary")
    assert c.pair() is pair and c.setting is None and c.weight == 1.0
    assert c.describe(pair) == "boundary: given"


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_special_records_stand_against_what_clipping_makes_of_them(relation):
    pairs = special_pairs(3, 2.0, 5.0, relation=relation)
    assert len(pairs) == 7  # NaN, inf, -inf, -0, subnormal, above, below
    if relation == "replace_one":
        firsts = [(p.d[0], p.d_prime[0]) for p in pairs]
        assert math.isnan(firsts[0][0]) and firsts[0][1] == 5.0  # the bound farther from 0
        assert firsts[1] == (math.inf, 5.0) and firsts[2] == (-math.inf, 2.0)
        assert firsts[3][1] == 2.0 and firsts[4] == (5e-324, 2.0)  # 0 clipped to the bounds
        assert firsts[5] == (10.0, 5.0) and firsts[6][1] == 2.0 and firsts[6][0] < 2.0
        assert all((p.d[1:] == 2.0).all() for p in pairs)
    else:
        assert all(p.d_prime.size == 4 and (p.d == 2.0).all() for p in pairs)
    integers = special_pairs(3, 0, 10, relation=relation, dtype="int64")
    assert len(integers) == 2 and all(p.d_prime.dtype.kind == "i" for p in integers)


def test_the_rounding_search_finds_a_step_of_the_sums_own_ulp():
    # Far from zero and narrow, the bounds' width (4 ulps of 2**30) is far below the ulp of a
    # sum of 1,000 records (2**-13, 128 times the width): a float sum of such records moves in
    # steps of at least that ulp, and the staircase bisection finds one without luck.
    lo = 2.0**30
    width = 4 * float(np.spacing(lo))
    (pair,) = rounding_pairs(1000, lo, lo + width, budget=4)
    moved = abs(float(np.sum(pair.d_prime)) - float(np.sum(pair.d)))
    ulp_of_sum = float(np.spacing(np.sum(pair.d)))
    assert moved >= ulp_of_sum >= 128 * width
    assert np.count_nonzero(pair.d != pair.d_prime) == 1
    assert pair.d.min() >= lo and pair.d_prime.max() <= lo + width
    # near zero the sum is exact to within its rounding: no step beyond the width's order
    (near,) = rounding_pairs(1000, 0.0, 1.0, budget=4)
    assert abs(float(np.sum(near.d_prime)) - float(np.sum(near.d))) <= 1.0 + 1e-9
