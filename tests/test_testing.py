"""dpaudit.testing: the privacy oracle assert_private, its sequential design and the pytest plugin.

Every test has a fixed seed and a trial cap instead of a time budget, so its outcome does not
depend on the machine.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

import dpaudit as dpa
from dpaudit.audit.lower_bounds import epsilon_from_errors
from dpaudit.bounds import ZCDP, approx_dp
from dpaudit.mechanisms import NeighbouringPair
from dpaudit.mechanisms.inputs import InputSpace, Setting, powers_of_two
from dpaudit.pytest_plugin import effective_options
from dpaudit.testing import PrivacyViolation, assert_private, input_space, replay_path

pytest_plugins = ["pytester"]

#: A design that stops on its trial cap: phases of 4096 and 16384 trials per dataset.
CAPPED = {"trials": 4096, "max_trials": 16384, "max_seconds": None}


def laplace_release(scale: float):
    """A library's release function: the sum of the records plus Laplace noise of ``scale``."""

    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, scale, size)

    return release


def test_a_correct_laplace_passes_and_reports_what_it_certified():
    check = assert_private(
        laplace_release(1.0), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])], **CAPPED
    )
    assert check.stopped == "max_trials" and check.trials == 16384
    record = check.audit.record()
    assert record["phases"] == 2 and not record["refuted"]
    # the certified eps is a lower bound on the true eps = 1, and informative
    assert 0.5 < check.epsilon_lower_bound(0.0) <= 1.0


def test_a_laplace_with_half_the_claimed_scale_fails_early_with_its_evidence():
    with pytest.raises(PrivacyViolation) as caught:
        assert_private(laplace_release(0.5), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])], **CAPPED)
    error = caught.value
    assert isinstance(error, AssertionError)
    assert error.audit.phases == 1 and error.trials < 8192  # a clear refutation stops early
    assert error.claim == "(1, 0)-DP" and error.false_alarm == 1e-6
    np.testing.assert_array_equal(error.pair.d_prime, [1.0])
    # the certified eps at the claim's delta lies above the claim and below the truth (2)
    assert error.delta == 0.0 and error.claimed_epsilon == 1.0
    assert 1.0 < error.epsilon <= 2.0
    assert error.evidence["test"] in ("e-value", "ladder", "family")
    text = str(error)
    assert "(1, 0)-DP" in text and "refuted" in text and "1e-06" in text
    assert f"eps >= {error.epsilon:.3g}"[:9] in text


def test_a_zcdp_claim_passes_a_correct_gaussian_and_fails_an_under_noised_one():
    claim = ZCDP(0.5)  # what a library calibrating sigma = 1 states
    check = assert_private(dpa.mechanisms.Gaussian(1.0), claim, **CAPPED)
    assert check.stopped == "max_trials"
    with pytest.raises(PrivacyViolation):
        assert_private(dpa.mechanisms.Gaussian(0.5), claim, **CAPPED)


def test_every_phase_and_pair_draws_its_own_seed_and_reruns_reproduce():
    pairs = [([0.0], [1.0]), ([1.0], [0.0])]
    kwargs = {"pairs": pairs, "seed": 3, **CAPPED}
    one = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **kwargs)
    two = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **kwargs)
    seeds = [r.seed for r in one.audit.results]
    assert len(set(seeds)) == 2 and seeds == [r.seed for r in two.audit.results]
    assert one.audit.record()["history"] == two.audit.record()["history"]
    other = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), **{**kwargs, "seed": 4})
    assert not set(seeds) & {r.seed for r in other.audit.results}


def test_several_pairs_share_the_level_and_each_result_spends_what_its_record_states():
    """With K pairs, each pair's fixed-sample family is read at the per-look level the record
    states (the level split over the looks and the K pairs), these levels and the two shares of
    the betting tests add up to the false-alarm rate, and the claim's e-value is the mean of the
    pairs' e-values (so no pair spends the whole level on its own)."""
    pairs = [([0.0], [1.0]), ([1.0], [0.0]), ([0.0], [0.0])]
    check = assert_private(laplace_release(1.0), approx_dp(1.0, 0.0), pairs=pairs, **CAPPED)
    record = check.audit.record()
    assert record["pairs"] == 3
    assert check.stopped == "max_trials"  # at the cap: the families at the cap's level
    for result in check.audit.results:
        assert result.gamma == pytest.approx(record["final_look_gamma"], rel=1e-12)
    spent = (record["e_share"] + record["ladder_share"]) * 1e-6
    spent += record["looks_at_most"] * record["pairs"] * record["look_gamma"]
    spent += record["pairs"] * (record["final_look_gamma"] - record["look_gamma"])
    assert spent == pytest.approx(1e-6, rel=1e-12)
    assert record["e_value"] == pytest.approx(np.mean(record["pair_e_values"]), rel=1e-12)
    assert len(set(record["pair_e_values"])) == 3  # the pairs' evidence differs


def test_a_violation_on_one_pair_of_several_is_caught_and_named():
    release = laplace_release(0.5)  # violates (1, 0)-DP on pairs one record apart
    pairs = [([0.0], [0.0]), ([0.0], [1.0]), ([5.0], [5.0])]
    with pytest.raises(PrivacyViolation) as caught:
        assert_private(release, approx_dp(1.0, 0.0), pairs=pairs, **CAPPED)
    error = caught.value
    np.testing.assert_array_equal(error.pair.d_prime, [1.0])
    record = error.audit.record()
    if record["decided_by"] == "e-value":
        assert record["e_value"] >= record["e_threshold"]
        assert record["e_value"] == pytest.approx(np.mean(record["pair_e_values"]), rel=1e-12)


def test_a_time_budget_ends_the_design_after_the_first_look():
    check = assert_private(
        dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), max_seconds=1e-9, trials=2048
    )
    assert check.stopped == "max_seconds" and check.audit.looks == 1


@pytest.mark.slow
def test_false_alarm_rate_of_a_tight_true_claim_is_at_most_nominal():
    """Coverage: Laplace with scale 1 is exactly (1, 0)-DP, the tightest true claim. Over 200
    seeds at ``false_alarm = 0.05`` (phases of 1024, 4096 and 16384 trials, 24 looks), the
    Clopper-Pearson lower bound (99.9%) on the observed rate of false failures must not exceed
    0.05: the test fails falsely with probability at most 1e-3 when the design is valid.

    Its twin shows the check has teeth: the counts at the stop read off point estimates (the
    ``eps`` of the estimated errors at the bound's own threshold) refute the true claim at
    about half of the seeds, so replacing the bounds by estimates would fail this test."""
    runs, rate = 200, 0.05
    failures = estimated = 0
    for seed in range(runs):
        try:
            check = assert_private(
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
            continue
        w = check.audit.results[0].epsilon_witness(0.0)
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
        ({"n_jobs": 0}, "n_jobs"),
        ({"pairs": []}, "pairs"),
        ({"pairs": [([0.0],)]}, "pairs"),
        ({"deltas": None}, "deltas"),
        ({"deltas": "a"}, "deltas"),
        ({"deltas": []}, "deltas"),
        ({"deltas": [1e-5, 1.5]}, r"deltas\[1\]"),
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

        @pytest.mark.dp_audit(trials=2048, max_trials=8192, max_seconds=None)
        def test_half_scale(dp_audit):
            dp_audit(release(0.5), approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])])
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--dp-audit-false-alarm=0.001")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*PrivacyViolation*refuted*"])


# ------------------------------------------------------------------ searching the input space
#: Bounds far from zero (offsets 2^20 to 2^60) and as narrow as one ulp, 10 or 1,000 records:
#: where a float sum's rounding moves it further than the bounds allow.
SPACE = InputSpace(
    default=Setting(bounds=(0.0, 1.0), size=10),
    offsets=powers_of_two(range(20, 61, 8)),
    widths=(1.0,),
    width_ulps=(1, 16),
    sizes=(10, 1000),
    relations=("replace_one",),
    generators=("boundary", "rounding"),
    accumulate=np.sum,
)


@input_space(SPACE)
def float_sum(dataset, size, rng, *, setting):
    """A bounded sum as libraries write it: clip, ``numpy.sum``, Laplace noise scaled to the
    width of the bounds; its float sum can move by more than the width."""
    lo, hi = setting.bounds
    total = float(np.sum(np.clip(np.asarray(dataset, dtype=float), lo, hi)))
    return total + rng.laplace(0.0, (hi - lo) / setting.epsilon, size)


@input_space(SPACE)
def exact_sum(dataset, size, rng, *, setting):
    """The same sum computed exactly (``math.fsum``, one rounding at the end) with noise scaled
    to the width plus that rounding's ulp: (eps, 0)-DP."""
    lo, hi = setting.bounds
    x = np.clip(np.asarray(dataset, dtype=float), lo, hi)
    slack = float(np.spacing(x.size * max(abs(lo), abs(hi))))
    return math.fsum(x) + rng.laplace(0.0, (hi - lo + slack) / setting.epsilon, size)


def test_a_float_sum_that_rounds_past_its_bounds_fails_a_search_and_writes_its_replay(tmp_path):
    with pytest.raises(PrivacyViolation) as caught:
        assert_private(float_sum, approx_dp(1.0, 0.0), max_seconds=60, replay=tmp_path)
    error = caught.value
    assert error.setting is not None and error.setting.magnitude >= 2**20
    assert error.search is not None and error.audit is None
    assert error.delta == 0.0 and error.claimed_epsilon == 1.0 and error.epsilon > 1.0
    assert "rounding" in error.pair.description
    assert error.replay == replay_path(tmp_path, float_sum, "(1, 0)-DP")
    assert error.replay.is_file()
    text = str(error)
    assert error.setting.describe() in text and "certifies eps >=" in text
    assert str(error.replay) in text
    # the next check tests the replayed pair first, sequentially, and fails on it
    with pytest.raises(PrivacyViolation) as again:
        assert_private(float_sum, approx_dp(1.0, 0.0), max_seconds=60, replay=tmp_path)
    replayed = again.value
    assert replayed.replay == error.replay and replayed.audit is not None
    assert replayed.search is None and replayed.setting == error.setting
    np.testing.assert_array_equal(replayed.pair.d_prime, error.pair.d_prime)
    assert str(replayed).startswith(f"Replayed from {error.replay}")


def test_the_same_sum_computed_exactly_passes_the_search(tmp_path):
    check = assert_private(exact_sum, approx_dp(1.0, 0.0), max_seconds=60, replay=tmp_path)
    assert check.stopped == "searched" and check.search is not None
    assert len(check.search.candidates) > 50
    assert check.epsilon_lower_bound(0.0) <= 1.0
    assert not list(tmp_path.iterdir())  # nothing to replay


def test_a_damaged_replay_file_is_ignored_and_a_claim_may_depend_on_the_setting(tmp_path):
    replay_path(tmp_path, exact_sum, "(0.5, 0)-DP").write_bytes(b"not a replay file")
    space = replace(SPACE, offsets=(), width_ulps=(), sizes=(), epsilons=(0.5,))
    check = assert_private(
        exact_sum,
        lambda setting: approx_dp(setting.epsilon, 0.0),
        space=replace(space, default=replace(space.default, epsilon=0.5)),
        max_seconds=30,
        replay=tmp_path,
    )
    assert check.search is not None and check.claim == "(0.5, 0)-DP"


def test_the_command_line_budget_raises_a_markers_and_never_lowers_it():
    cli = {"max_seconds": 60.0, "seed": 7, "replay": "r"}
    assert effective_options(cli, [{"max_seconds": 10.0}], {})["max_seconds"] == 60.0
    assert effective_options(cli, [{"max_seconds": 600.0}], {})["max_seconds"] == 600.0
    assert effective_options(cli, [], {"max_seconds": 5.0})["max_seconds"] == 60.0
    assert effective_options(cli, [{"max_seconds": None}], {})["max_seconds"] is None
    # other options: the call over the markers (the closest last) over the command line
    options = effective_options(cli, [{"seed": 1}, {"seed": 2}], {"trials": 1024})
    assert options["seed"] == 2 and options["trials"] == 1024 and options["replay"] == "r"
    assert effective_options({}, [{"max_seconds": 10.0}], {})["max_seconds"] == 10.0


def test_an_input_space_needs_a_release_function():
    with pytest.raises(ValueError, match="space"):
        input_space(42)
    with pytest.raises(ValueError, match="space"):
        assert_private(dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), space=42)
    with pytest.raises(ValueError, match="release function"):
        assert_private(dpa.mechanisms.Laplace(1.0), approx_dp(1.0, 0.0), space=SPACE)
    with pytest.raises(ValueError, match="replay"):
        assert_private(exact_sum, approx_dp(1.0, 0.0), replay=3)
