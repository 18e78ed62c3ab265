"""PipelineDP's battery: the accountant's claim, the budget the engine spends under it, the
noise it adds, and a small battery run with no false alarm."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.libraries import run_battery

pytest.importorskip("pipeline_dp")
from dpaudit.libraries import pipeline_dp as battery  # noqa: E402


def test_the_claim_is_the_accountants_and_stated_for_adding_a_privacy_unit():
    function = battery.aggregate("MEAN", epsilon=0.8)
    assert set(function.claims) == {"add_remove"} and function.stated
    assert function.claims["add_remove"].table == {"kind": "approx_dp", "eps": 0.8, "delta": 0.0}
    gaussian = battery.aggregate("SUM", noise="GAUSSIAN", delta=1e-6)
    assert gaussian.claims["add_remove"].table["delta"] == 1e-6


def test_one_call_releases_independent_draws_with_the_documented_laplace_scale():
    # COUNT at epsilon 1 with one privacy unit per record: Laplace noise of scale 1 (standard
    # deviation sqrt 2). 4,000 draws estimate it within 5% (more than 4 standard errors).
    out = battery.aggregate("COUNT").release()(np.zeros(10), 4000, np.random.default_rng(0))
    assert out.shape == (4000,)
    assert abs(out.mean() - 10.0) < 0.15
    assert out.std() == pytest.approx(np.sqrt(2.0), rel=0.05)
    assert abs(np.corrcoef(out[:-1], out[1:])[0, 1]) < 0.1  # draws are independent


def test_a_small_battery_raises_no_false_alarm():
    names = [
        "aggregate.COUNT(epsilon=1, delta=0, noise=LAPLACE, bounds=(0, 1))",
        "select_partitions.TRUNCATED_GEOMETRIC(epsilon=1, delta=1e-05)",
    ]
    # Correct functions at a family-wise level of 0.05: a false alarm has probability <= 0.05.
    result = run_battery("pipeline-dp", trials=400, quick=True, functions=names)
    assert not result.refuted
    assert result.provenance["seeded"] is False


SUM = "aggregate.SUM(epsilon=1, delta=0, noise=LAPLACE, bounds=(0, 1))"


def test_the_sums_means_and_variance_declare_their_input_spaces():
    spaces = {f.name: f.space for f in battery.functions() if f.space is not None}
    assert sorted(spaces) == sorted(
        [
            *(
                f"aggregate.{m}(epsilon=1, delta=0, noise=LAPLACE, bounds=(0, 1))"
                for m in battery.SEARCHED
            ),
            "aggregate.SUM(epsilon=1, delta=1e-05, noise=GAUSSIAN, bounds=(0, 1))",
        ]
    )
    space = spaces[SUM]
    assert space.relations == ("add_remove",)  # the relation PipelineDP states
    assert max(space.offsets) == 2.0**1000 and 4 in space.width_ulps
    assert 1_000 in space.sizes and space.dtypes == ()
    assert set(space.specials) == {"nan", "inf", "-inf", "-0", "subnormal", "outside"}
    assert "rounding" in space.generators
    variance = spaces["aggregate.VARIANCE(epsilon=1, delta=0, noise=LAPLACE, bounds=(0, 1))"]
    assert max(variance.offsets) == 2.0**100 and "rounding" not in variance.generators


def test_the_variance_space_leaves_out_the_bounds_the_library_fails_on():
    # The reason its offsets stop below 2**1000: the squares of such records overflow.
    big = battery.aggregate("VARIANCE", bounds=(2.0**1000, 2.0**1001))
    with pytest.raises(OverflowError):
        big.release()(np.full(10, 2.0**1000), 2, np.random.default_rng(0))


def test_a_setting_of_the_space_builds_a_working_release_with_its_claim():
    from dpaudit.mechanisms.inputs import Setting

    function = battery.aggregate("MEAN", searched=True)
    at = function.at(Setting((-(2.0**62), -(2.0**62) + 4096.0), 100, "float64", 5.0))
    assert at.claims["add_remove"].table["eps"] == 5.0
    out = at.release()(np.full(100, -(2.0**62)), 3, np.random.default_rng(0))
    assert out.shape == (3,) and np.all(np.isfinite(out))


def test_bad_pins_and_a_metric_without_a_space_are_refused():
    from dpaudit.libraries import plan_battery

    with pytest.raises(ValueError, match="bounds need lower < upper"):
        plan_battery("pipeline-dp", functions=[SUM], bounds=[(2.0, 2.0)])
    with pytest.raises(ValueError, match="epsilons"):
        plan_battery("pipeline-dp", functions=[SUM], epsilons=[-1.0])
    with pytest.raises(ValueError, match="searched needs"):
        battery.aggregate("COUNT", searched=True)
    pinned = plan_battery("pipeline-dp", functions=[SUM], sizes=[1000], quick=True)
    assert {c.setting.size for r in pinned.rows for c in r.candidates} == {1000}


def test_a_nan_record_makes_the_sum_mean_and_variance_nan():
    # Why the special pairs refute them under add/remove: the combiners clip with numpy.clip,
    # which keeps NaN, so one privacy unit with a NaN value makes the partition's output NaN.
    gaussian = battery.aggregate("SUM", noise="GAUSSIAN", delta=1e-5)
    for function in [*(battery.aggregate(m) for m in battery.SEARCHED), gaussian]:
        release = function.release()
        with np.errstate(invalid="ignore"):
            out = release(np.array([0.0] * 10 + [np.nan]), 50, np.random.default_rng(0))
        assert np.all(np.isnan(out))
        assert not np.any(np.isnan(release(np.zeros(10), 50, np.random.default_rng(0))))


def test_the_sum_at_bounds_a_few_ulps_of_zero_wide_is_released_without_noise():
    # Why the sum is refuted at bounds [0, 2**-1072]: its noise is python-dp's
    # LaplaceMechanism at sensitivity max(|min_value|, |max_value|) = 2**-1072, whose
    # granularity underflows to 0, so the release is the exact sum. Deterministic.
    upper = 2.0**-1072
    release = battery.aggregate("SUM", bounds=(0.0, upper)).release()
    rng = np.random.default_rng(0)
    assert set(release(np.zeros(10), 100, rng).tolist()) == {0.0}
    assert set(release(np.array([0.0] * 10 + [upper]), 100, rng).tolist()) == {upper}


def test_the_gaussian_sum_refuses_bounds_of_a_subnormal_sensitivity():
    # python-dp's GaussianMechanism does not return at such a sensitivity: the battery's search
    # counts the setting as refused instead of waiting on it.
    with pytest.raises(ValueError, match="subnormal sensitivity"):
        battery.aggregate("SUM", noise="GAUSSIAN", delta=1e-5, bounds=(0.0, 2.0**-1072))
    laplace = battery.aggregate("SUM", bounds=(0.0, 2.0**-1072))  # Laplace noise is built
    assert laplace.claims["add_remove"].table["eps"] == 1.0
