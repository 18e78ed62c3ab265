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
