"""dpaudit.testing: the privacy oracle assert_private, its sequential design and the pytest plugin.

Every test has a fixed seed and a trial cap instead of a time budget, so its outcome does not
depend on the machine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpaudit as dpa
from dpaudit.audit.lower_bounds import epsilon_from_errors
from dpaudit.bounds import ZCDP, approx_dp
from dpaudit.mechanisms import NeighbouringPair
from dpaudit.testing import PrivacyViolation, assert_private, look_level

pytest_plugins = ["pytester"]

#: A design that stops on its trial cap: looks of 4096, 16384 and 65536 trials per dataset.
CAPPED = {"trials": 4096, "max_trials": 65536, "max_seconds": None}


def laplace_release(scale: float):
    """A library's release function: the sum of the records plus Laplace noise of ``scale``."""

    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, scale, size)

    return release


def test_a_correct_laplace_passes_and_reports_what_it_certified():
    check = assert_private(
        laplace_release(1.0), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])], **CAPPED
    )
    assert check.stopped == "max_trials" and check.trials == 65536
    assert [look.trials for look in check.looks] == [4096, 16384, 65536]
    assert all(look.verdict == "consistent" for look in check.looks)
    # the certified eps is a lower bound on the true eps = 1, and informative
    assert 0.5 < check.epsilon_lower_bound(0.0) <= 1.0


def test_a_laplace_with_half_the_claimed_scale_fails_with_its_witness():
    with pytest.raises(PrivacyViolation) as caught:
        assert_private(laplace_release(0.5), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])], **CAPPED)
    error = caught.value
    assert isinstance(error, AssertionError)
    assert error.look.look == 1 and error.trials == 4096  # a clear refutation stops early
    assert error.claim == "(1, 0)-DP" and error.false_alarm == 1e-6
    np.testing.assert_array_equal(error.pair.d_prime, [1.0])
    w = error.witness
    # the certified point lies below the claimed curve in the order the witness names
    f = approx_dp(1.0, 0.0)
    first, second = (
        (w.alpha_upper, w.beta_upper) if w.order == "d_d_prime" else (w.beta_upper, w.alpha_upper)
    )
    assert second < float(f(first)) == pytest.approx(w.claimed_beta)
    text = str(error)
    assert "(1, 0)-DP" in text and "refuted" in text and "1e-06" in text and "4096" in text


def test_a_zcdp_claim_passes_a_correct_gaussian_and_fails_an_under_noised_one():
    claim = ZCDP(0.5)  # what a library calibrating sigma = 1 states
    capped = {"trials": 4096, "max_trials": 16384, "max_seconds": None}
    check = assert_private(dpa.mechanisms.Gaussian(1.0), claim, **capped)
    assert check.stopped == "max_trials"
    with pytest.raises(PrivacyViolation):
        assert_private(dpa.mechanisms.Gaussian(0.5), claim, **capped)


def test_look_levels_spend_the_false_alarm_rate_once():
    """``sum_k 6/(pi^2 k^2) = 1``: the first 10^6 levels stay below the rate and miss it only by
    the tail ``sum_{k > K} 1/k^2 < 1/K`` times ``6/pi^2``."""
    k = np.arange(1, 10**6 + 1)
    total = float(np.sum(6.0 / (math.pi**2 * k.astype(float) ** 2))) * 1e-3
    assert sum(look_level(1e-3, i) for i in (1, 2, 3)) == pytest.approx(
        1e-3 * 6 / math.pi**2 * (1 + 1 / 4 + 1 / 9), rel=1e-14
    )
    assert total <= 1e-3 and 1e-3 - total < 1e-3 * 6 / math.pi**2 / 10**6


def test_every_look_and_pair_draws_its_own_seed_and_reruns_reproduce():
    pairs = [([0.0], [1.0]), ([1.0], [0.0])]
    kwargs = {"pairs": pairs, "seed": 3, **CAPPED, "max_trials": 16384}
    one = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **kwargs)
    two = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **kwargs)
    seeds = [look.seed for look in one.looks]
    assert len(set(seeds)) == len(seeds) == 4
    assert seeds == [look.seed for look in two.looks]
    assert [look.epsilon_lower_bounds for look in one.looks] == [
        look.epsilon_lower_bounds for look in two.looks
    ]
    # two pairs: each look's level is split between them
    assert one.looks[0].level == pytest.approx(look_level(1e-6, 1) / 2, rel=1e-15)
    other = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **{**kwargs, "seed": 4})
    assert not set(seeds) & {look.seed for look in other.looks}


def test_a_time_budget_ends_the_design_after_the_first_look():
    check = assert_private(
        dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), max_seconds=1e-9, trials=2048
    )
    assert check.stopped == "max_seconds" and len(check.looks) == 1


@pytest.mark.slow
def test_false_alarm_rate_of_a_tight_true_claim_is_at_most_nominal():
    """Coverage: Laplace with scale 1 is exactly (1, 0)-DP, the tightest true claim. Over 200
    seeds at ``false_alarm = 0.05`` (looks of 1024, 4096 and 16384 trials), the Clopper-Pearson
    lower bound (99.9%) on the observed rate of false failures must not exceed 0.05: the test
    fails falsely with probability at most 1e-3 when the design is valid.

    Its twin shows the check has teeth: the same first look read off point estimates (the
    ``eps`` of the estimated errors at the bound's own threshold) refutes the true claim at
    about half of the seeds, so replacing the bounds by estimates would fail this test."""
    runs, rate = 200, 0.05
    failures = estimated = 0
    for seed in range(runs):
        try:
            assert_private(
                dpa.mechanisms.Laplace(1.0),
                approx_dp(1.0, 0.0),
                false_alarm=rate,
                seed=seed,
                trials=1024,
                max_trials=16384,
                max_seconds=None,
            )
        except PrivacyViolation:
            failures += 1
        w = dpa.audit_mechanism(
            dpa.mechanisms.Laplace(1.0), trials=1024, seed=seed
        ).epsilon_witness(0.0)
        estimated += float(np.max(epsilon_from_errors(w["alpha"], w["beta"], 0.0))) > 1.0

    def cp_lower(k: int) -> float:
        return float(stats.beta.ppf(1e-3, k, runs - k + 1)) if k else 0.0

    assert cp_lower(failures) <= rate
    assert cp_lower(estimated) > rate


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"false_alarm": 0.0}, "false_alarm"),
        ({"false_alarm": 1.0}, "false_alarm"),
        ({"max_seconds": -1.0}, "max_seconds"),
        ({"seed": -1}, "seed"),
        ({"trials": 0}, "trials"),
        ({"growth": 1}, "growth"),
        ({"max_trials": 100}, "max_trials"),
        ({"pairs": []}, "pairs"),
        ({"pairs": [([0.0],)]}, "pairs"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **{"pairs": [(0, 1)], **kwargs})


def test_bad_mechanism_and_claim_are_refused():
    with pytest.raises(ValueError, match="mechanism"):
        assert_private(42, approx_dp(1.0, 0.0), pairs=[(0, 1)])
    with pytest.raises(ValueError, match="claim"):
        assert_private(laplace_release(1.0), "1-DP", pairs=[(0, 1)])
    with pytest.raises(ValueError, match="pairs must be given"):
        assert_private(laplace_release(1.0), approx_dp(1.0, 0.0))
    check = assert_private(dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), max_seconds=1e-9)
    with pytest.raises(ValueError, match="delta"):
        check.epsilon_lower_bound(0.5)


def test_pairs_may_be_given_as_neighbouring_pairs():
    pair = NeighbouringPair([0.0], [1.0], "replace_one", description="sum 0 against sum 1")
    with pytest.raises(PrivacyViolation, match="sum 0 against sum 1"):
        assert_private(laplace_release(0.25), approx_dp(1.0, 0.0), pairs=[pair], **CAPPED)


def test_the_pytest_plugin_runs_checks_with_marker_and_command_line_options(pytester):
    pytester.makepyfile(
        """
        import numpy as np
        import pytest
        from dpaudit.bounds import approx_dp

        def release(scale):
            def fn(dataset, size, rng):
                return float(np.sum(dataset)) + rng.laplace(0.0, scale, size)
            return fn

        @pytest.mark.dp_audit(trials=2048, max_trials=2048, max_seconds=None)
        def test_correct(dp_audit):
            check = dp_audit(release(1.0), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])])
            assert check.false_alarm == 0.001 and check.trials == 2048

        @pytest.mark.dp_audit(trials=2048, max_trials=2048, max_seconds=None)
        def test_half_scale(dp_audit):
            dp_audit(release(0.5), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])])
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--dp-audit-false-alarm=0.001")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*PrivacyViolation*refuted*"])
