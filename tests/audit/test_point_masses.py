"""Point masses of the privacy loss must not turn rounding noise into a certified leak.

The Laplace likelihood ratio has point masses at +-eps0. Computed as a difference of two log
densities they scatter over neighbouring floats whose low bits differ between D and D_prime, and a
grid edge among them certified eps >= 4.78 for a mechanism whose eps is 1. The closed form keeps
them single values. Seeds are fixed, so each assertion is deterministic; for a fresh seed each
bound would exceed eps0 with probability at most 5%.
"""

import pytest

import dpaudit as dpa


@pytest.mark.parametrize("strategy", ["holdout", "bonferroni"])
@pytest.mark.parametrize("swapped", [False, True])
def test_laplace_bound_stays_below_eps0(strategy, swapped):
    mech = dpa.mechanisms.Laplace(1.0)
    pair = mech.worst_case_pair()
    pair = pair.swapped() if swapped else pair
    attack = dpa.attacks.LikelihoodRatio(mech, pair)
    result = dpa.audit_mechanism(
        mech, pair, attack, trials=400_000, seed=0, strategy=strategy, progress=False
    )
    assert 0.9 <= result.epsilon_lower_bound(0.0) <= 1.0
