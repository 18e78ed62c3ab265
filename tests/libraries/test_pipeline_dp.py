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
