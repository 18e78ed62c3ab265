"""python-dp's battery: its claims read back from the library and pinned against the documented
formulas, computed here independently, and a small battery run with no false alarm."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpaudit.libraries import NOT_REPRODUCIBLE, library, run_battery

pydp = pytest.importorskip("pydp")
from dpaudit.libraries import pydp as battery  # noqa: E402


def _analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest Gaussian sigma that is (epsilon, delta)-DP (Balle and Wang 2018, Theorem 8):
    delta = Phi(s/(2 sigma) - eps sigma/s) - e^eps Phi(-s/(2 sigma) - eps sigma/s)."""

    def excess(sigma: float) -> float:
        a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
        return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b) - delta

    return optimize.brentq(excess, 1e-3, 1e3, xtol=1e-12)


def test_the_mechanisms_claims_and_noise_are_the_documented_ones():
    laplace = battery.mechanism("LaplaceMechanism", epsilon=0.5, sensitivity=2.0)
    assert laplace.claims["replace_one"].table == {"kind": "approx_dp", "eps": 0.5, "delta": 0.0}
    from pydp.algorithms.numerical_mechanisms import GaussianMechanism, LaplaceMechanism

    assert LaplaceMechanism(epsilon=0.5, sensitivity=2.0).diversity == pytest.approx(4.0)
    gaussian = battery.mechanism("GaussianMechanism", epsilon=1.0, delta=1e-5)
    assert gaussian.claims["replace_one"].table == {"kind": "approx_dp", "eps": 1.0, "delta": 1e-5}
    # The library's sigma is the analytic Gaussian's, rounded up by less than 0.1%.
    std = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0).std
    sigma = _analytic_sigma(1.0, 1e-5, 1.0)
    assert sigma <= std <= sigma * 1.001


def test_the_aggregations_are_silent_and_claim_their_epsilon():
    function = battery.aggregation("BoundedSum", epsilon=0.7, bounds=(-1.0, 2.0))
    assert not function.stated
    assert {r: c.table["eps"] for r, c in function.claims.items()} == {
        "replace_one": 0.7,
        "add_remove": 0.7,
    }
    assert function.name == "laplacian.BoundedSum(epsilon=0.7, bounds=(-1, 2), dtype=float)"
    with pytest.raises(ValueError, match="dtype must be"):
        battery.aggregation("BoundedSum", dtype="complex")


@pytest.mark.parametrize("strategy", battery.STRATEGIES)
def test_partition_selection_keeps_its_claim_exactly(strategy):
    # The library's own probability of keeping a partition of k units is (epsilon, delta)-DP
    # between k and k + 1 units, in both directions, for the claim the battery reads.
    function = battery.partition_selection(strategy, epsilon=1.0, delta=1e-5)
    claim = function.claims["add_remove"].table
    from pydp.algorithms.partition_selection import create_partition_strategy

    keep = np.array(
        [
            create_partition_strategy(strategy, 1.0, 1e-5, 1).probability_of_keep(k)
            for k in range(80)
        ]
    )
    e, d = math.exp(claim["eps"]), claim["delta"]
    for p, q in ((keep[:-1], keep[1:]), (1 - keep[:-1], 1 - keep[1:])):
        assert np.all(q <= e * p + d + 1e-12) and np.all(p <= e * q + d + 1e-12)


def test_a_small_battery_raises_no_false_alarm_and_is_not_reproducible_by_seed():
    names = [
        "laplacian.Count(epsilon=1, dtype=float)",
        "laplacian.BoundedSum(epsilon=1, bounds=(0, 1), dtype=float)",
        "partition_selection.laplace(epsilon=1, delta=1e-05, max_partitions_contributed=1)",
    ]
    # Correct functions at a family-wise level of 0.05: a false alarm has probability <= 0.05.
    result = run_battery("python-dp", trials=400, quick=True, functions=names)
    assert not result.refuted
    assert library("python-dp").seeded is False
    document = result.document()
    assert document["battery"]["seed"] == NOT_REPRODUCIBLE
    assert {a["seed"] for a in document["audits"]} == {NOT_REPRODUCIBLE}


SUM = "laplacian.BoundedSum(epsilon=1, bounds=(0, 1), dtype=float)"
VARIANCE = "laplacian.BoundedVariance(epsilon=1, bounds=(0, 1), dtype=float)"


def test_the_bounded_aggregations_declare_their_input_spaces():
    spaces = {f.name: f.space for f in battery.functions() if f.space is not None}
    assert sorted(spaces) == sorted(
        f"laplacian.{name}(epsilon=1, bounds=(0, 1), dtype=float)" for name in battery.SEARCHED
    )
    space = spaces[SUM]
    assert space.default.bounds == (0.0, 1.0) and space.default.size == 10
    assert max(space.offsets) == 2.0**1000 and min(space.offsets) == -(2.0**1000)
    assert 4 in space.width_ulps and 10_000 in space.sizes
    assert set(space.dtypes) == {"float64", "int32", "int64"}
    assert set(space.specials) == {"nan", "inf", "-inf", "-0", "subnormal", "outside"}
    assert set(space.relations) == {"replace_one", "add_remove"}
    assert "rounding" in space.generators and "overflow" in space.generators
    assert max(spaces[VARIANCE].offsets) == 2.0**100
    assert spaces[VARIANCE].dtypes == ("float64",)


def test_the_variance_space_leaves_out_the_bounds_the_library_refuses():
    # The reason the variance's offsets stop below 2**1000: the library refuses such bounds.
    from pydp.algorithms.laplacian import BoundedVariance

    with pytest.raises(RuntimeError, match="LInf sensitivity"):
        BoundedVariance(epsilon=1.0, lower_bound=2.0**1000, upper_bound=2.0**1001, dtype="float")
    for lower, upper in {
        s.bounds for s in battery.aggregation("BoundedVariance", searched=True).space.settings()
    }:
        assert abs(lower) <= 2.0**101 and abs(upper) <= 2.0**101


def test_a_setting_of_the_space_builds_a_working_release_with_its_claim():
    from dpaudit.mechanisms.inputs import Setting

    function = battery.aggregation("BoundedSum", searched=True)
    setting = Setting((2.0**30, 2.0**30 + 4 * 2.0**-22), 1000, "float64", 0.1)
    at = function.at(setting)
    assert {c.table["eps"] for c in at.claims.values()} == {0.1}
    out = at.release()(np.full(1000, 2.0**30), 3, np.random.default_rng(0))
    assert out.shape == (3,) and np.all(np.isfinite(out))
    integer = function.at(Setting((0, 10), 10, "int64", 1.0))
    assert integer.name.endswith("dtype=int64)")
    assert integer.release()(np.full(10, 5), 2, np.random.default_rng(0)).shape == (2,)


def test_bad_pins_and_a_space_the_library_has_not_are_refused():
    from dpaudit.libraries import plan_battery

    with pytest.raises(ValueError, match="bounds need lower < upper"):
        plan_battery("python-dp", functions=[SUM], bounds=[(1.0, 0.0)])
    with pytest.raises(ValueError, match="sizes"):
        plan_battery("python-dp", functions=[SUM], sizes=[0])
    with pytest.raises(ValueError, match="searched needs"):
        battery.aggregation("Median", searched=True)
    pinned = plan_battery(
        "python-dp", functions=[SUM], bounds=[(2.0**52, 2.0**52 + 4)], sizes=[100], quick=True
    )
    assert {c.setting.bounds for r in pinned.rows for c in r.candidates} == {(2.0**52, 2.0**52 + 4)}


def test_a_laplace_noise_whose_granularity_underflows_is_zero():
    # Why the sums are refuted at bounds a few ulps of zero wide: the library's Laplace noise is
    # a geometric sample times a granularity, the power of two above (sensitivity / epsilon) /
    # 2**40; below 2**-1074 that is 0, and so is the noise. Deterministic: no tolerance.
    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

    tiny = LaplaceMechanism(epsilon=1.0, sensitivity=2.0**-1072)
    assert {tiny.add_noise(0.0) for _ in range(1000)} == {0.0}
    # Above the underflow the noise is there (a zero draw has probability below 1e-3 each).
    normal = LaplaceMechanism(epsilon=1.0, sensitivity=2.0**-1000)
    assert sum(normal.add_noise(0.0) != 0.0 for _ in range(1000)) > 900
    # BoundedSum at bounds [0, 2**-1072] releases the exact sum: replacing one record moves it.
    upper = 2.0**-1072
    from pydp.algorithms.laplacian import BoundedSum

    algorithm = BoundedSum(epsilon=1.0, lower_bound=0.0, upper_bound=upper, dtype="float")
    assert {algorithm.quick_result([0.0] * 10) for _ in range(200)} == {0.0}
    assert {algorithm.quick_result([0.0] * 9 + [upper]) for _ in range(200)} == {upper}


def test_the_integer_mean_wraps_its_32_bit_sum():
    # Why BoundedMean(dtype="int") is refuted by the overflow pairs: its running sum is a
    # 32-bit integer. 2,047 records at 2**20 and one at 0 sum to 2**31 - 2**20; with the last
    # record at 2**20 too the sum 2**31 wraps to -2**31 and the mean is clamped to the lower
    # bound 0. The noise of the sum has scale 2**19 / 0.05: a draw crossing that gap (about 1e9)
    # has probability below 1e-40.
    from pydp.algorithms.laplacian import BoundedMean

    algorithm = BoundedMean(epsilon=0.1, lower_bound=0, upper_bound=2**20, dtype="int")
    below = [algorithm.quick_result([2**20] * 2047 + [0]) for _ in range(300)]
    wrapped = [algorithm.quick_result([2**20] * 2048) for _ in range(300)]
    assert min(below) > 2**19 and set(wrapped) == {0.0}
