"""The delta-leak attack, the default attack of black boxes, and the foreign-call budget."""

import numpy as np
import pytest

import dpaudit
from dpaudit.attacks import DeltaLeak, Learned, Threshold
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.mechanisms.blackbox import BlackBox
from dpaudit.mechanisms.flawed import flawed

LEAKS = [
    "laplace_rare_exact_answer",
    "laplace_pair_exact_coordinate",
    "noisy_hist_zero_bin_unnoised",
]


def _as_blackbox(mechanism, claim):
    """A catalogue mechanism seen only through a release function (no density, no theory)."""
    pair = mechanism.worst_case_pair()

    def release(dataset, size, rng):
        return mechanism.sample(dataset, size, rng)

    return BlackBox(release, claim, dataset=pair.d, neighbour=pair.d_prime, name=mechanism.name)


@pytest.mark.parametrize("name", LEAKS)
def test_delta_leaks_are_flagged_by_the_default_blackbox_attack(name):
    """Each leak refutes its (1, 1e-6) claim with certified eps >= 1.5 at delta = 1e-6 from
    2e6 trials. The smallest leak (1e-4) gives about 200 events under D_prime and none under D;
    the bound's failure probability is 5% per audit, and the margin (3.8 vs 1.5) makes a false
    failure of this fixed-seed test far less likely than that."""
    claim = approx_dp(1.0, 1e-6)
    box = _as_blackbox(flawed(name, eps=1.0), claim)
    result = dpaudit.audit_mechanism(box, trials=2 * 10**6, seed=0)
    assert result.metadata["attack"]["default"] is True
    assert result.attack.name.startswith("DeltaLeak(")
    assert result.epsilon_lower_bound(1e-6) >= 1.5
    assert result.violates(claim) is not None


def test_without_events_the_smooth_score_alone_misses_the_rare_leak():
    """The learned score without events certifies about eps = 1 on the 1e-4 leak (what the
    events add): the event test is what pushes the bound above 1.5."""
    mechanism = flawed("laplace_rare_exact_answer", eps=1.0)
    box = _as_blackbox(mechanism, approx_dp(1.0, 1e-6))
    result = dpaudit.audit_mechanism(box, attack=Learned(), trials=2 * 10**6, seed=0)
    assert result.epsilon_lower_bound(1e-6) < 1.5


def _laplace(dataset, size, rng):
    return float(np.sum(dataset)) + rng.laplace(0.0, 1.0, size)


def _clipped_laplace(dataset, size, rng):
    # correct 1-DP (post-processing), with atoms at the clipping bounds under both datasets
    return np.clip(float(np.sum(dataset)) + rng.laplace(0.0, 1.0, size), -1.0, 2.0)


def _randomized_response(dataset, size, rng):
    x = int(np.sum(dataset))
    keep = rng.random(size) < np.e / (np.e + 3.0)
    return np.where(keep, x, (x + rng.integers(1, 4, size)) % 4)


def _gaussian_vector(dataset, size, rng):
    return np.asarray(dataset, dtype=float) + rng.normal(0.0, 1.0, (size, 3))


CORRECT = [
    (_laplace, approx_dp(1.0, 0.0), [0.0], [1.0]),
    (_clipped_laplace, approx_dp(1.0, 0.0), [0.0], [1.0]),
    (_randomized_response, approx_dp(1.0, 0.0), [0.0], [1.0]),
    (_gaussian_vector, gdp(1.0), [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
]


def test_correct_mechanisms_are_never_flagged_over_100_seeds():
    """Coverage: 100 audits (25 seeds on each of a continuous, a clipped (atoms under both
    datasets), a discrete and a vector mechanism), each against its exact curve, at confidence
    1 - 1e-4. Every audit is wrong with probability at most 1e-4, so a correct attack fails this
    test with probability at most 100 * 1e-4 = 1%; the seeds are fixed, so it either passes
    always or never."""
    flagged = []
    for seed in range(100):
        fn, claim, d, d_prime = CORRECT[seed % len(CORRECT)]
        box = BlackBox(fn, claim, dataset=d, neighbour=d_prime)
        result = dpaudit.audit_mechanism(
            box, trials=2000, selection_trials=2000, seed=seed, confidence=1 - 1e-4
        )
        assert result.attack.name.startswith("DeltaLeak(")
        if result.violates(claim) is not None:
            flagged.append((fn.__name__, seed))
    assert flagged == []


def test_the_coverage_test_can_fail():
    """The coverage audits are not too weak to flag anything: the same audits (same trials,
    same confidence 1 - 1e-4) refute claims 40% below the truth on every one of 20 seeds, so a
    broken attack or bound that flagged correct mechanisms would fail the coverage test."""
    flagged = 0
    for seed in range(20):
        fn, claim, d, d_prime = CORRECT[seed % len(CORRECT)]
        low = gdp(0.6) if fn is _gaussian_vector else approx_dp(0.6, 0.0)
        box = BlackBox(fn, low, dataset=d, neighbour=d_prime)
        result = dpaudit.audit_mechanism(
            box, trials=2000, selection_trials=2000, seed=seed, confidence=1 - 1e-4
        )
        flagged += result.violates(low) is not None
    assert flagged == 20


def test_events_are_exact_one_sided_repeats_and_score_infinite():
    y0 = np.concatenate([np.linspace(0, 1, 50), [7.0, 7.0, 7.0]])
    y1 = np.concatenate([np.linspace(0.01, 1.01, 50), [5.0, 5.0, 3.0]])
    attack = DeltaLeak(max_categories=10).fit(y0, y1)  # 104 distinct rows: not "few"
    s = attack.score(np.array([5.0, 7.0, 3.0, 0.5]))
    assert s[0] == np.inf and s[1] == -np.inf
    assert np.isfinite(s[2:]).all()  # 3.0 was seen once only: not an event
    assert attack.params()["training"]["events_d_prime"] == 1


def test_vector_events_use_single_coordinates():
    rng = np.random.default_rng(0)
    y0 = rng.normal(size=(2000, 2))
    y1 = rng.normal(size=(2000, 2))
    y1[:5, 1] = 1.0  # exact value in coordinate 1, rows otherwise distinct
    attack = DeltaLeak().fit(y0, y1)
    s = attack.score(np.array([[0.3, 1.0], [0.3, 0.7]]))
    assert s[0] == np.inf and np.isfinite(s[1])


def test_discrete_outputs_keep_the_count_ratio():
    rng = np.random.default_rng(1)
    y0, y1 = rng.integers(0, 3, 1000), rng.integers(0, 4, 1000)
    attack = DeltaLeak().fit(y0, y1)
    assert np.isfinite(attack.score(np.arange(4))).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(base="x"), "base"),
        (dict(min_count=1), "min_count"),
        (dict(mechanism=object()), "together"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DeltaLeak(**kwargs)


def test_score_before_fit_is_refused():
    with pytest.raises(ValueError, match="fitted"):
        DeltaLeak().score(np.zeros(3))


class _Counting:
    """A per-trial release function that counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, dataset, rng):
        self.calls += 1
        return float(np.sum(dataset)) + rng.laplace()


@pytest.mark.parametrize("selection", [500, None])
@pytest.mark.parametrize(
    "attack",
    ["default", "learned", "threshold", "delta_leak"],
)
def test_foreign_calls_are_at_most_one_and_a_half_times_the_trials(attack, selection):
    """Calls <= 1.5 * 2 * (trials + selection_trials) + 2 (the shape probe), for every
    attack, including learning attacks that ask for many more training outputs than the budget,
    with the default and with a small selection sample."""
    fn = _Counting()
    box = BlackBox(fn, dataset=[0.0], neighbour=[1.0])
    pair = box.worst_case_pair()
    chosen = {
        "default": None,
        "learned": Learned(mechanism=box, pair=pair, train_trials=2**17),
        "threshold": Threshold(),
        "delta_leak": DeltaLeak(mechanism=box, pair=pair, train_trials=2**17),
    }[attack]
    trials = 1000
    result = dpaudit.audit_mechanism(
        box, attack=chosen, trials=trials, selection_trials=selection, seed=0
    )
    outputs = result.metadata["random"]["outputs_per_dataset"]
    assert fn.calls <= 1.5 * 2 * (trials + result.selection_trials) + 2
    per_dataset = sum(v for k, v in outputs.items() if k != "probe")
    assert fn.calls == 2 * per_dataset + outputs["probe"]


def test_batching_is_detected_from_a_size_parameter():
    calls = []

    def release(dataset, size, rng):
        calls.append(size)
        return rng.laplace(size=size) + float(np.sum(dataset))

    box = BlackBox(release, dataset=[0.0], neighbour=[1.0])
    assert box.vectorised is True
    dpaudit.audit_mechanism(box, trials=1000, seed=0)
    assert len(calls) < 40
    assert BlackBox(lambda d, rng: 0.0).vectorised is False
    assert BlackBox(release, vectorised=False).vectorised is False
