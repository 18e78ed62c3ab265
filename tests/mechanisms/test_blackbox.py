"""BlackBox: output conversion and validation, spec form, claims, and the library adapters.

Adapter tests skip when diffprivlib / OpenDP are not installed. Moment checks use tolerances of
at least six standard errors (false-failure probability below 1e-8 each).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import textwrap

import numpy as np
import pytest

import dpaudit
from dpaudit import specs
from dpaudit.attacks import Learned
from dpaudit.audit.engine import most_outputs, selection_trials_for
from dpaudit.audit.pair_search import search_pairs
from dpaudit.audit.strategies import default_selection_trials
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.mechanisms import Gaussian, NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox, load_callable


def _rng(seed=0):
    return np.random.default_rng(seed)


def noisy_sum(dataset, rng):
    """A release function at module level (importable as tests.mechanisms.test_blackbox:...)."""
    return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)


def noisy_sum_factory(scale):
    """A factory: ``noisy_sum_factory(scale=...)`` returns a vectorised release function."""

    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, scale, size)

    return release


# ------------------------------------------------------------------------------ conversion


@pytest.mark.parametrize(
    "fn, width",
    [
        (lambda d, rng: 1.5, 1),
        (lambda d, rng: 3, 1),
        (lambda d, rng: True, 1),
        (lambda d, rng: (1, 2.5, 3), 3),
        (lambda d, rng: np.array([[1.0, 2.0], [3.0, 4.0]]), 4),
    ],
)
def test_outputs_become_float_rows(fn, width):
    box = BlackBox(fn)
    out = box.sample(np.zeros(2), 5, _rng())
    assert out.shape == (5, width) and out.dtype == np.float64
    assert box.output_shape(np.zeros(2)) == (width,)
    assert box.sample(np.zeros(2), 0, _rng()).shape == (0, width)


def test_per_trial_and_vectorised_paths_draw_from_the_engine_generator():
    box = BlackBox(noisy_sum)
    a = box.sample(np.array([1.0, 2.0]), 50, _rng(3))
    b = box.sample(np.array([1.0, 2.0]), 50, _rng(3))
    np.testing.assert_array_equal(a, b)
    vec = BlackBox(noisy_sum_factory(1.0), vectorised=True)
    expected = 3.0 + _rng(3).laplace(0.0, 1.0, 50)
    np.testing.assert_array_equal(vec.sample(np.array([1.0, 2.0]), 50, _rng(3))[:, 0], expected)


def test_vectorised_numpy_gaussian_equals_the_reference_gaussian():
    def release(dataset, size, rng):
        return float(np.sum(dataset)) + rng.normal(0.0, 1.3, size)

    box = BlackBox(release, vectorised=True)
    ref = Gaussian(1.3)
    np.testing.assert_array_equal(
        box.sample(np.array([1.0]), 1000, _rng(5))[:, 0], ref.sample(np.array([1.0]), 1000, _rng(5))
    )


@pytest.mark.parametrize(
    "fn, vectorised, match",
    [
        (lambda d, rng: float("nan"), False, "NaN"),
        (lambda d, rng: float("inf"), False, "infinite"),
        (lambda d, rng: "abc", False, "not numbers"),
        # A number written as a string is refused, never read as the number.
        (lambda d, rng: "1.5", False, "not numbers .*got the string '1.5'"),
        (lambda d, rng: (1.0, "1.5"), False, "got the string '1.5'"),
        (lambda d, size, rng: np.array(["1.5"] * size), True, "got the string '1.5'"),
        (lambda d, rng: None, False, "got NoneType"),
        (lambda d, rng: np.array([]), False, "empty outputs"),
        (lambda d, size, rng: np.zeros((size, 0)), True, "empty outputs"),
        (lambda d, size, rng: np.zeros(size + 1), True, "must return 4 outputs"),
        (lambda d, size, rng: 1.0, True, "got a scalar"),
    ],
)
def test_bad_outputs_are_refused_with_the_mechanism_name(fn, vectorised, match):
    box = BlackBox(fn, vectorised=vectorised, name="my-release")
    with pytest.raises(ValueError, match=match) as info:
        box.sample(np.zeros(1), 4, _rng())
    assert "my-release" in str(info.value)


def test_changing_output_width_is_refused():
    calls = iter([(1.0, 2.0), 3.0])
    box = BlackBox(lambda d, size, rng: np.array([next(calls)] * size), vectorised=True, name="w")
    box.sample(np.zeros(1), 2, _rng())
    with pytest.raises(ValueError, match="same number of values"):
        box.sample(np.zeros(1), 2, _rng())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"fn": 3}, "fn must be callable"),
        ({"fn": noisy_sum, "vectorised": 1}, "vectorised"),
        ({"fn": noisy_sum, "claim": 1.0}, "claim"),
        ({"fn": noisy_sum, "dataset": [0.0]}, "together"),
        ({"fn": noisy_sum, "relation": "swap"}, "relation"),
        ({"fn": noisy_sum, "name": " "}, "name"),
        ({"fn": noisy_sum, "dataset": [0.0], "neighbour": [1.0, 2.0, 3.0]}, "add_remove|replace"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BlackBox(**kwargs)


def test_pair_relation_and_missing_pair():
    assert BlackBox(noisy_sum, dataset=[0.0], neighbour=[1.0]).relation == "replace_one"
    box = BlackBox(noisy_sum, dataset=[0.0], neighbour=[0.0, 1.0])
    assert box.worst_case_pair().relation == "add_remove"
    assert box.has_pair and not BlackBox(noisy_sum).has_pair
    with pytest.raises(ValueError, match="no neighbouring pair"):
        BlackBox(noisy_sum).worst_case_pair()


@pytest.mark.parametrize(
    "given, missing", [({"dataset": [0.0]}, "neighbour"), ({"neighbour": [0.0]}, "dataset")]
)
def test_half_a_pair_names_the_missing_half(given, missing):
    with pytest.raises(ValueError, match=f"^{missing} is missing: .*together") as info:
        BlackBox(noisy_sum, **given)
    assert "\n" not in str(info.value)


def test_a_box_without_a_pair_is_audited_on_the_pair_the_audit_gives():
    """The pair may come from the audit call or from the candidates of a pair search; only an
    audit with no pair anywhere is refused, in one line naming both places."""
    box = BlackBox(noisy_sum, approx_dp(1.0, 0.0))
    pair = NeighbouringPair(np.array([0.0]), np.array([1.0]), "replace_one")
    direct = dpaudit.audit_mechanism(box, pair, trials=300, seed=0, n_jobs=1)
    assert direct.pair == pair
    search = search_pairs(box, [pair], trials=300, pilot_trials=300, n_jobs=1)
    assert search.pair == pair
    with pytest.raises(ValueError, match="pass dataset= and neighbour= to BlackBox, or pair="):
        dpaudit.audit_mechanism(box, trials=300)


def counting_release():
    """A one-output release function that counts its calls in ``release.calls``."""

    def release(dataset, rng):
        release.calls += 1
        return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)

    release.calls = 0
    return release


@pytest.mark.parametrize(
    "trials, selection", [(1, 2), (300, 300), (4_000, 4_000), (20_000, 10_000)]
)
def test_calls_into_a_box_grow_with_the_trials_and_are_stated_and_recorded(trials, selection):
    """A black box's default selection sample is at most ``trials`` (the plain default's floor
    of 10,000 made 30,902 calls for 300 trials); the calls are at most what
    ``most_outputs`` states beforehand, and the result records how many were made."""
    release = counting_release()
    box = BlackBox(release, approx_dp(1.0, 0.0), dataset=[0.0], neighbour=[1.0])
    assert selection_trials_for(box, trials) == selection
    assert default_selection_trials(trials, foreign_code=True) == selection
    result = dpaudit.audit_mechanism(box, trials=trials, seed=0, n_jobs=1)
    assert result.selection_trials == selection
    assert release.calls == result.metadata["random"]["outputs_drawn"]
    assert release.calls <= most_outputs(trials, selection)
    if trials >= 4:
        assert release.calls <= 6 * trials + 2
    assert box.cost(most_outputs(trials, selection)).startswith("at most ")
    if trials == 300:
        assert release.calls == 1_802
        # Still an audit worth its calls: Laplace of scale 1 is exactly 1-DP (seeded result).
        assert 0.3 < result.epsilon_lower_bound(0.0) <= 1.0


def test_mechanisms_of_dpaudit_keep_the_selection_floor():
    assert selection_trials_for(Gaussian(1.0), 300) == 10_000 == default_selection_trials(300)
    assert selection_trials_for(Gaussian(1.0), 10**6) == 250_000


def test_cost_says_calls_for_one_output_per_call_and_outputs_otherwise():
    assert BlackBox(noisy_sum).cost(1802) == (
        "at most 1,802 calls into tests.mechanisms.test_blackbox:noisy_sum (one per output)"
    )
    vectorised = BlackBox(noisy_sum_factory(1.0), name="v")
    assert vectorised.cost(10) == (
        f"at most 10 outputs from {vectorised.callable_name} (one call per chunk of outputs)"
    )
    looped = BlackBox(noisy_sum_factory(1.0), calls_per_output=True)
    assert looped.cost(10).endswith("(one per output)")
    with pytest.raises(ValueError, match="calls_per_output"):
        BlackBox(noisy_sum, calls_per_output=1)


def test_claim_becomes_the_theory():
    box = BlackBox(noisy_sum, approx_dp(1.0, 1e-6))
    assert box.theory_methods == ("claim",)
    assert box.epsilon(1e-6, method="claim") == pytest.approx(1.0, abs=1e-9)
    assert box.delta(1.0, method="claim") == pytest.approx(1e-6)
    assert BlackBox(noisy_sum).theory_methods == ()


# ------------------------------------------------------------------------------ spec form


def test_load_callable():
    assert load_callable("math:sqrt") is math.sqrt
    assert load_callable("numpy.random:Generator.normal") is np.random.Generator.normal
    for bad, match in [
        ("math.sqrt", "package.module:function"),
        ("no_such_module_x:f", "cannot import"),
        ("math:nope", "no attribute"),
        ("math:pi", "not a callable"),
    ]:
        with pytest.raises(ValueError, match=match):
            load_callable(bad)


def test_from_spec_with_a_factory():
    box = BlackBox.from_spec(
        "tests.mechanisms.test_blackbox:noisy_sum_factory",
        params={"scale": 2.0},
        vectorised=True,
        dataset=[0.0],
        neighbour=[1.0],
    )
    out = box.sample(np.array([0.0]), 200_000, _rng(2))[:, 0]
    # Var Lap(2) = 8; standard error of the sample variance about 0.07
    assert out.var() == pytest.approx(8.0, abs=0.5)
    with pytest.raises(ValueError, match="rejected params"):
        BlackBox.from_spec("tests.mechanisms.test_blackbox:noisy_sum_factory", params={"x": 1})


BRIEF_SPEC = (
    "[[audit]]\n"
    'name = "my-implementation"\n'
    'mechanism = { kind = "blackbox", callable = "mypackage.module:release", '
    "dataset = [0, 1, 1, 0], neighbour = [0, 1, 1, 1] }\n"
    'attack = { kind = "learned" }\n'
    'claim = { kind = "approx_dp", eps = 1.0, delta = 1e-6 }\n'
    "trials = 1_000_000\n"
)


def test_the_documented_blackbox_spec_runs(tmp_path, monkeypatch):
    package = tmp_path / "mypackage"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "module.py").write_text(
        textwrap.dedent(
            """
            import numpy as np

            def release(dataset, rng):
                return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)
            """
        )
    )
    # The spec lies beside its package, as the guide shows: the module is imported from there
    # and its function travels to worker processes by value, whatever the number of workers.
    (tmp_path / "spec.toml").write_text(BRIEF_SPEC)
    monkeypatch.delitem(sys.modules, "mypackage", raising=False)
    (audit,) = specs.load(tmp_path / "spec.toml")
    assert isinstance(audit.mechanism, BlackBox) and isinstance(audit.attack, Learned)
    fast = Learned.for_mechanism(audit.mechanism, audit.pair, train_trials=4096)
    audit = dataclasses.replace(audit.with_overrides(trials=20_000, n_jobs=2), attack=fast)
    result = audit.run(progress=False)
    # Laplace noise of scale 1 on a sum of sensitivity 1 is (1, 0)-DP: the claim holds.
    assert result.violates(audit.claim) is None
    assert 0.3 < result.epsilon_lower_bound(0.0) <= 1.0


def test_flawed_and_learned_spec_kinds():
    (audit,) = specs.loads(
        """
        [[audit]]
        name = "x"
        mechanism = { kind = "flawed", name = "laplace_skipped_noise", eps = 0.5, leak = 0.01 }
        attack = { kind = "learned", train_trials = 1024, model = "histogram" }
        trials = 1000
        """
    )
    assert audit.mechanism.params() == {
        "name": "laplace_skipped_noise",
        "eps": 0.5,
        "k": 1,
        "leak": 0.01,
    }
    assert audit.attack.model == "histogram" and audit.attack.train_trials == 1024
    with pytest.raises(specs.SpecError, match="name must be one of"):
        specs.loads(
            '[[audit]]\nname = "y"\nmechanism = { kind = "flawed", name = "nope" }\ntrials = 10'
        )


# ------------------------------------------------------------------------------ adapters


def test_diffprivlib_laplace_adapter():
    pytest.importorskip("diffprivlib")
    from dpaudit.mechanisms.adapters import diffprivlib_mechanism

    box = diffprivlib_mechanism("laplace", epsilon=0.5)
    # Vectorised in form, but every output is one call of diffprivlib's randomise.
    assert box.vectorised and box.calls_per_output
    a = box.sample(np.array([2.0, 1.0]), 40_000, _rng(1))[:, 0]
    b = box.sample(np.array([2.0, 1.0]), 40_000, _rng(1))[:, 0]
    np.testing.assert_array_equal(a, b)  # seeded from the engine's generator
    # Lap(2): mean 3 +- 6 * 2.83/200, variance 8 +- 6 * sqrt(Var)/200 (Var of (X-m)^2 = 5 * 64 - 64)
    assert a.mean() == pytest.approx(3.0, abs=0.09)
    assert a.var() == pytest.approx(8.0, abs=0.5)
    assert box.epsilon(0.0, method="claim") == pytest.approx(0.5, abs=1e-9)
    with pytest.raises(ValueError, match="epsilon"):
        diffprivlib_mechanism("laplace", epsilon=-1.0)


def test_opendp_adapters_and_their_claims():
    pytest.importorskip("opendp")
    from dpaudit.mechanisms.adapters import opendp_mechanism

    lap = opendp_mechanism("laplace", scale=2.0)
    out = lap.sample(np.array([1.0]), 40_000, _rng())[:, 0]
    assert out.mean() == pytest.approx(1.0, abs=0.09)
    assert out.var() == pytest.approx(8.0, abs=0.5)
    assert lap.epsilon(0.0, method="claim") == pytest.approx(0.5, abs=1e-9)
    gauss = opendp_mechanism("gaussian", scale=2.0)
    # OpenDP states rho = 1/(2 * 4)-zCDP; the claim's delta(1) is the zCDP conversion (Canonne,
    # Kamath & Steinke 2020, Prop. 12), here minimised over a fine grid of orders
    rho, lam = 0.125, 1 + np.geomspace(1e-6, 1e4, 400_001)
    expected = np.exp(((lam - 1) * (lam * rho - 1.0 + np.log1p(-1 / lam)) - np.log(lam)).min())
    assert gauss.delta(1.0, method="claim") == pytest.approx(expected, rel=1e-6)


def test_adapter_spec_kinds_run_with_verdicts():
    pytest.importorskip("opendp")
    (audit,) = specs.loads(
        """
        [[audit]]
        name = "opendp-laplace"
        mechanism = { kind = "opendp", mechanism = "laplace", scale = 1.0 }
        attack = { kind = "learned", train_trials = 4096 }
        claim = { kind = "approx_dp", eps = 0.5 }
        trials = 60_000
        """
    )
    result = audit.run(progress=False)
    # The claim (0.5, 0)-DP is false (the mechanism is 1-DP); 60k trials refute it with room.
    assert result.violates(audit.claim) is not None
    assert dpaudit.AuditResult.from_json(result.to_json()).trials == 60_000
